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

use dataformats::core::alloc::BySize;
use mimalloc::MiMalloc;
use std::alloc::System;

/// Blocks of at least this many bytes come from mimalloc: the values of a
/// `to_arrow` batch of 65,536 float32 and anything larger.
const LARGE: usize = 256 << 10;

#[global_allocator]
static ALLOC: BySize<System, MiMalloc> = BySize::new(System, MiMalloc, LARGE);
