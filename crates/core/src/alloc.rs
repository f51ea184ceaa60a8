//! A global allocator that sends each block to one of two allocators by its
//! size.
//!
//! The Python module uses it to take large blocks (decoded tables) from an
//! allocator that keeps freed memory for the next read, and small ones from
//! the C library's malloc (`crates/python/src/alloc.rs` says why).

use std::alloc::{GlobalAlloc, Layout};

/// Asks the C library's allocator (glibc on Linux; elsewhere nothing is
/// done) to keep freed blocks of up to [`KEPT_BLOCK`] bytes for the next
/// allocation: such blocks come from its heaps instead of being mapped
/// afresh and unmapped when freed, and at most [`KEPT_FREE`] bytes free
/// at a heap's top stay with the process.
///
/// By default glibc maps each block above a threshold that it raises as
/// such blocks are freed, and gives the top of a heap back when more than
/// twice that is free; threads that fill and free buffers of a megabyte
/// or more (Parquet's column writers, a page each) then fault them in from
/// the kernel again and again. Converting 386 MB of MLDF to Parquet on two threads
/// spent 0.45 to 0.6 s in the kernel that way, 0.15 to 0.2 s with this
/// (docs/performance.md, 2026-12-06, night). A program calls it once,
/// before it starts threads; the `dataformats` command line does.
pub fn keep_freed_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let (block, free) = (
            libc::c_int::try_from(KEPT_BLOCK).unwrap_or(libc::c_int::MAX),
            libc::c_int::try_from(KEPT_FREE).unwrap_or(libc::c_int::MAX),
        );
        // SAFETY: mallopt only sets two of the allocator's parameters; it
        // is called before the program starts threads.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, block);
            libc::mallopt(libc::M_TRIM_THRESHOLD, free);
        }
    }
}

/// The largest block [`keep_freed_blocks`] has the allocator keep.
pub const KEPT_BLOCK: usize = 32 << 20;

/// The free memory at a heap's top that [`keep_freed_blocks`] lets the
/// allocator keep.
pub const KEPT_FREE: usize = 16 << 20;

/// Blocks of fewer than `threshold` bytes from `small`, the others from
/// `large`.
///
/// `dealloc` and `realloc` are given the layout the block was allocated
/// with, so each block is always freed or resized by the allocator that
/// made it; a resize across the threshold allocates in the other one,
/// copies the bytes both sizes hold and frees the old block.
///
/// ```
/// use dataformats_core::alloc::BySize;
/// use std::alloc::System;
/// // As a program's allocator: `#[global_allocator] static A: BySize<System, System> = ...;`
/// static A: BySize<System, System> = BySize::new(System, System, 256 << 10);
/// assert_eq!(A.threshold(), 256 << 10);
/// ```
#[derive(Debug)]
pub struct BySize<S, L> {
    small: S,
    large: L,
    threshold: usize,
}

impl<S, L> BySize<S, L> {
    /// Blocks under `threshold` bytes from `small`, the rest from `large`.
    pub const fn new(small: S, large: L, threshold: usize) -> Self {
        BySize {
            small,
            large,
            threshold,
        }
    }

    /// The size from which blocks come from the large allocator.
    pub const fn threshold(&self) -> usize {
        self.threshold
    }
}

// SAFETY: each call is passed on to one of two allocators that uphold
// `GlobalAlloc`'s contract, chosen by the block's size. `dealloc` and
// `realloc` are given the same layout as the `alloc` that made the block
// (the contract's requirement on callers), so a block is always freed or
// resized by the allocator that made it; a resize across the threshold
// allocates in the other, copies the bytes both sizes hold, and frees the
// old block in its own.
unsafe impl<S: GlobalAlloc, L: GlobalAlloc> GlobalAlloc for BySize<S, L> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are passed on.
        unsafe {
            if layout.size() >= self.threshold {
                self.large.alloc(layout)
            } else {
                self.small.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if layout.size() >= self.threshold {
                self.large.alloc_zeroed(layout)
            } else {
                self.small.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was made by `alloc` with `layout`, so by the
        // allocator this size picks.
        unsafe {
            if layout.size() >= self.threshold {
                self.large.dealloc(ptr, layout)
            } else {
                self.small.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was_large, is_large) = (layout.size() >= self.threshold, new_size >= self.threshold);
        // SAFETY: `ptr` was made with `layout` by the allocator its size
        // picks; within one allocator the call is passed on. Across the
        // threshold the new block is made with `new_size` and `layout`'s
        // alignment (a valid layout: the caller guarantees that size,
        // rounded up to the alignment, does not overflow `isize`), the
        // bytes both blocks hold are copied (two distinct live blocks do
        // not overlap), and the old block is freed by its own allocator.
        unsafe {
            match (was_large, is_large) {
                (true, true) => self.large.realloc(ptr, layout, new_size),
                (false, false) => self.small.realloc(ptr, layout, new_size),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The system allocator, counting what it is asked to do.
    #[derive(Default)]
    struct Counting {
        allocs: AtomicUsize,
        frees: AtomicUsize,
        reallocs: AtomicUsize,
    }

    impl Counting {
        fn counts(&self) -> (usize, usize, usize) {
            (
                self.allocs.load(Ordering::Relaxed),
                self.frees.load(Ordering::Relaxed),
                self.reallocs.load(Ordering::Relaxed),
            )
        }
    }

    // SAFETY: every call is passed on to `System` unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.allocs.fetch_add(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            self.allocs.fetch_add(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            self.frees.fetch_add(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            self.reallocs.fetch_add(1, Ordering::Relaxed);
            // SAFETY: passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    fn fill(p: *mut u8, n: usize) {
        for i in 0..n {
            // SAFETY: `p` is a live block of at least `n` bytes.
            unsafe { p.add(i).write((i % 251) as u8) };
        }
    }

    fn holds_fill(p: *const u8, n: usize) -> bool {
        // SAFETY: `p` is a live block of at least `n` initialized bytes.
        (0..n).all(|i| unsafe { p.add(i).read() } == (i % 251) as u8)
    }

    #[test]
    fn each_block_goes_to_the_allocator_its_size_picks_and_comes_back_to_it() {
        let a = BySize::new(Counting::default(), Counting::default(), 1024);
        let small = Layout::from_size_align(1023, 8).unwrap();
        let large = Layout::from_size_align(1024, 8).unwrap();
        // SAFETY: non-zero layouts; each block is freed once with its layout.
        unsafe {
            let p = a.alloc(small);
            let q = a.alloc_zeroed(large);
            assert!(!p.is_null() && !q.is_null());
            assert!((0..1024).all(|i| q.add(i).read() == 0));
            assert_eq!(a.small.counts(), (1, 0, 0));
            assert_eq!(a.large.counts(), (1, 0, 0));
            a.dealloc(p, small);
            a.dealloc(q, large);
        }
        assert_eq!(a.small.counts(), (1, 1, 0));
        assert_eq!(a.large.counts(), (1, 1, 0));
    }

    #[test]
    fn a_resize_across_the_threshold_moves_the_block_with_its_bytes() {
        let a = BySize::new(Counting::default(), Counting::default(), 4096);
        // Alignments above what malloc gives by itself are kept.
        let start = Layout::from_size_align(3000, 64).unwrap();
        // SAFETY: each block is used within its size and freed once with
        // the layout it has at that point.
        unsafe {
            let p = a.alloc(start);
            fill(p, 3000);
            // Small to small: the small allocator resizes it.
            let p = a.realloc(p, start, 4000);
            assert!(holds_fill(p, 3000));
            assert_eq!(a.small.counts(), (1, 0, 1));
            // Small to large: moved, the old block freed where it was made.
            let mid = Layout::from_size_align(4000, 64).unwrap();
            fill(p, 4000);
            let p = a.realloc(p, mid, 100_000);
            assert_eq!(p as usize % 64, 0);
            assert!(holds_fill(p, 4000));
            assert_eq!(a.small.counts(), (1, 1, 1));
            assert_eq!(a.large.counts(), (1, 0, 0));
            // Large to large: the large allocator resizes it.
            let big = Layout::from_size_align(100_000, 64).unwrap();
            fill(p, 100_000);
            let p = a.realloc(p, big, 200_000);
            assert!(holds_fill(p, 100_000));
            assert_eq!(a.large.counts(), (1, 0, 1));
            // Large to small: moved back, only what fits is kept.
            let bigger = Layout::from_size_align(200_000, 64).unwrap();
            let p = a.realloc(p, bigger, 10);
            assert_eq!(p as usize % 64, 0);
            assert!(holds_fill(p, 10));
            assert_eq!(a.large.counts(), (1, 1, 1));
            assert_eq!(a.small.counts(), (2, 1, 1));
            a.dealloc(p, Layout::from_size_align(10, 64).unwrap());
        }
        assert_eq!(a.small.counts(), (2, 2, 1));
        assert_eq!(a.large.counts(), (1, 1, 1));
    }
}
