//! Shared building blocks of the dataformats crates.
//!
//! Every format crate in the workspace reads through the same pieces:
//!
//! - [`Source`]: one read abstraction over a memory map, an owned buffer, or a
//!   file read with positioned reads; `Send + Sync`, reads by offset through
//!   `&self`, bounds-checked with the offset in the error.
//! - [`parse`]: nom helpers for little-endian integers and floats, LEB128, the
//!   .NET 7-bit Int32, length-prefixed strings and NUL-padded names, whose
//!   errors carry absolute byte offsets.
//! - [`checksum`]: Adler-32, CRC-32, CRC-16/MODBUS, MD5 and SHA-1/2 behind one
//!   enum, streaming.
//! - [`codec`]: deflate, zlib, LZ4 (block and frame), Zstandard and Blosc1, all
//!   decoding into a caller buffer of the declared size and failing unless the
//!   payload fills it exactly.
//! - [`Limits`] and the range helpers in [`limits`]: nothing read from a file is
//!   allocated or indexed before it is checked.
//! - [`plain`]: stored little-endian numbers as zero-copy slices when aligned,
//!   else decoded into caller buffers.
//! - [`AtomicFile`]: output that appears only when complete.
//! - [`parallel`]: items worked on by several threads, results taken in
//!   their order.
//! - [`Error`]: the error type, with offsets, of core's own helpers.
//! - [`LocatedError`]: the error type of every format crate, generic over the
//!   crate's own kind enum, with offset, record context and cause.
//!
//! ```
//! use dataformats_core::{parse, ChecksumKind, Source};
//! use dataformats_core::codec::{self, Codec};
//!
//! // A tiny container: u32 decoded size, u32 CRC-32 of the decoded bytes, zstd payload.
//! let payload = b"dataformats ".repeat(20);
//! let packed = codec::compress(Codec::Zstd, &payload, None).unwrap();
//! let crc = ChecksumKind::Crc32.digest(&payload).value().unwrap() as u32;
//! let mut file = Vec::new();
//! file.extend_from_slice(&(payload.len() as u32).to_le_bytes());
//! file.extend_from_slice(&crc.to_le_bytes());
//! file.extend_from_slice(&packed);
//!
//! // Read it back.
//! let src = Source::from_vec(file);
//! let head = src.bytes(0, 8).unwrap();
//! let (size, stored_crc) = parse::run(&head, 0, |i| {
//!     let (i, size) = parse::le_u32(i)?;
//!     let (i, crc) = parse::le_u32(i)?;
//!     Ok((i, (size, crc)))
//! }).unwrap();
//! let body = src.bytes(8, src.len() - 8).unwrap();
//! let mut out = vec![0u8; size as usize];
//! codec::decompress_into(Codec::Zstd, &body, &mut out).unwrap();
//! assert_eq!(ChecksumKind::Crc32.digest(&out).value(), Some(u64::from(stored_crc)));
//! assert_eq!(out, payload);
//! ```

#![deny(missing_docs)]

pub mod alloc;
pub mod atomic;
pub mod buffers;
pub mod checksum;
pub mod codec;
mod crc16;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod image;
pub mod json;
pub mod limits;
pub mod located;
pub mod panics;
pub mod parallel;
pub mod parse;
pub mod plain;
pub mod progress;
pub mod rng;
pub mod source;
#[doc(hidden)]
pub mod testing;
pub mod text;
pub mod write_behind;

pub use atomic::AtomicFile;
pub use checksum::{ChecksumKind, Digest, Hasher};
pub use codec::{Codec, CodecError};
pub use error::{Error, ErrorKind, Result};
pub use limits::{Limits, ReadOptions};
pub use located::LocatedError;
pub use progress::Progress;
pub use source::{RangeRead, SharedBytes, Source};
