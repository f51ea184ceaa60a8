//! The module's allocator: large blocks from mimalloc, the rest from the C
//! library's malloc.
//!
//! Tables are decoded on worker threads and freed later by Python. glibc
//! gives each worker thread an arena of its own and unmaps an arena's heap
//! as soon as everything in it is freed, so with glibc alone every
//! `to_arrow()` after the first faulted its whole table in afresh: for a
//! 160 MB column on two threads about 38,000 page faults and 78 ms of
//! kernel time a call, 67 ms against 28 ms on one thread. mimalloc keeps
//! freed blocks for the next call: 23 ms on two threads. All of mimalloc
//! was tried first and made MLDF's `to_arrow` 25 to 30% slower (the cause
//! was not found); with small blocks left to glibc nothing was lost there.
//! So only blocks of [`LARGE`] bytes or more (Arrow buffers, the decoders'
//! chunk and block buffers) go to mimalloc (docs/performance.md,
//! 2026-11-28, late evening).
//!
//! mimalloc is built with local-dynamic TLS, as a library loaded by
//! `dlopen` must be, and without its own huge-page advice (the buffers of
//! 4 MiB or more are advised by `dataformats_core::buffers` as before).
//! Memory handed to C (c-blosc, zlib, zstd, lz4, libdeflate) is allocated
//! and freed by C itself, and Arrow buffers come back here to be freed
//! through their release callbacks, so no block crosses allocators.

use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

/// Blocks of at least this many bytes come from mimalloc: the values of a
/// `to_arrow` batch of 65,536 float32 and anything larger.
pub(crate) const LARGE: usize = 256 << 10;

/// Large blocks from mimalloc, the rest from the C library's malloc.
pub(crate) struct Hybrid;

#[global_allocator]
static ALLOC: Hybrid = Hybrid;

// SAFETY: each call is passed on to one of two allocators that uphold
// `GlobalAlloc`'s contract, chosen by the block's size. `dealloc` and
// `realloc` are given the same layout as the `alloc` that made the block,
// so a block is always freed or resized by the allocator that made it; a
// resize across `LARGE` allocates in the other, copies the bytes both
// sizes hold, and frees the old block in its own.
unsafe impl GlobalAlloc for Hybrid {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are passed on.
        unsafe {
            if layout.size() >= LARGE {
                MiMalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if layout.size() >= LARGE {
                MiMalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was made by `alloc` with `layout`, so by the
        // allocator this size picks.
        unsafe {
            if layout.size() >= LARGE {
                MiMalloc.dealloc(ptr, layout)
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was made with `layout` by the allocator its size
        // picks; within one allocator the call is passed on. Across the
        // threshold the new block is made with `new_size` and `layout`'s
        // alignment (a valid layout: the caller guarantees that size
        // rounded up to the alignment does not overflow `isize`), the
        // bytes both blocks hold are copied, and the old block is freed
        // by its own allocator.
        unsafe {
            match (layout.size() >= LARGE, new_size >= LARGE) {
                (true, true) => MiMalloc.realloc(ptr, layout, new_size),
                (false, false) => System.realloc(ptr, layout, new_size),
                _ => {
                    let new = Layout::from_size_align_unchecked(new_size, layout.align());
                    let moved = self.alloc(new);
                    if !moved.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    moved
                }
            }
        }
    }
}
