//! Compression codecs: decode into a buffer of the size the file declares.
//!
//! Every decoder here takes the compressed bytes and a destination slice whose
//! length is the size the file declares for the decoded data. It fills the
//! slice and fails unless the payload decodes to exactly that many bytes: a
//! payload that stops short and one that would go on past the end are both
//! [`CodecError::SizeMismatch`]. Since the caller sizes the buffer (after
//! checking the declared size against its [`Limits`](crate::Limits)), a
//! decompression bomb cannot make us allocate anything.
//!
//! ```
//! use dataformats_core::codec::{self, Codec};
//! let data = b"hello hello hello hello hello hello".repeat(10);
//! for c in Codec::ALL {
//!     let packed = codec::compress(c, &data, None).unwrap();
//!     let mut out = vec![0u8; data.len()];
//!     codec::decompress_into(c, &packed, &mut out).unwrap();
//!     assert_eq!(out, data);
//!     // A declared size that lies is an error, never a short or long read.
//!     let mut short = vec![0u8; data.len() - 1];
//!     assert!(codec::decompress_into(c, &packed, &mut short).is_err());
//! }
//! ```

#[cfg(feature = "blosc")]
pub mod blosc;
#[cfg(feature = "deflate")]
mod deflate;
#[cfg(feature = "lz4")]
mod lz4;
#[cfg(feature = "zstd")]
mod zstd;

use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "blosc")]
pub use self::blosc::{BloscCompressor, BloscHeader, BloscParams, Shuffle};

/// How many bytes a payload decoded to, when that differs from the declared size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodedSize {
    /// Exactly this many bytes.
    Exactly(u64),
    /// More than this many bytes (decoding stopped when the buffer was full).
    MoreThan(u64),
}

impl fmt::Display for DecodedSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodedSize::Exactly(n) => write!(f, "{n}"),
            DecodedSize::MoreThan(n) => write!(f, "more than {n}"),
        }
    }
}

/// A codec failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The payload decoded to a different size than declared.
    #[error("{codec}: payload decodes to {found} byte(s), but {expected} are declared")]
    SizeMismatch {
        /// The codec's name.
        codec: &'static str,
        /// The declared decoded size.
        expected: u64,
        /// What it actually decodes to.
        found: DecodedSize,
    },
    /// A container header (for example a Blosc chunk header) breaks its rules.
    #[error("{codec}: invalid header: {why}")]
    InvalidHeader {
        /// The codec's name.
        codec: &'static str,
        /// Which rule is broken.
        why: Cow<'static, str>,
    },
    /// The compressed bytes are malformed.
    #[error("{codec}: corrupt payload: {why}")]
    Corrupt {
        /// The codec's name.
        codec: &'static str,
        /// What the codec reported.
        why: Cow<'static, str>,
    },
    /// The payload uses a codec or feature that is not built in.
    #[error("{codec}: unsupported: {why}")]
    Unsupported {
        /// The codec's name.
        codec: &'static str,
        /// What is missing.
        why: Cow<'static, str>,
    },
    /// The caller's arguments cannot work (buffer too small, level out of range...).
    #[error("{codec}: invalid argument: {why}")]
    InvalidArgument {
        /// The codec's name.
        codec: &'static str,
        /// What is wrong.
        why: Cow<'static, str>,
    },
}

impl CodecError {
    #[allow(dead_code)]
    pub(crate) fn corrupt(codec: &'static str, why: impl Into<Cow<'static, str>>) -> Self {
        CodecError::Corrupt {
            codec,
            why: why.into(),
        }
    }

    #[allow(dead_code)]
    pub(crate) fn arg(codec: &'static str, why: impl Into<Cow<'static, str>>) -> Self {
        CodecError::InvalidArgument {
            codec,
            why: why.into(),
        }
    }

    #[allow(dead_code)]
    pub(crate) fn size(codec: &'static str, expected: usize, found: DecodedSize) -> Self {
        CodecError::SizeMismatch {
            codec,
            expected: expected as u64,
            found,
        }
    }
}

/// A stream codec (Blosc, which has its own chunk container, is in [`blosc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// Raw deflate (RFC 1951), no header or trailer.
    Deflate,
    /// zlib (RFC 1950): deflate with a 2-byte header and an Adler-32 trailer.
    Zlib,
    /// An LZ4 block (no frame, no size prefix).
    Lz4Block,
    /// An LZ4 frame (the `04 22 4D 18` format).
    Lz4Frame,
    /// One or more Zstandard frames.
    Zstd,
}

impl Codec {
    /// Every codec.
    pub const ALL: [Codec; 5] = [
        Codec::Deflate,
        Codec::Zlib,
        Codec::Lz4Block,
        Codec::Lz4Frame,
        Codec::Zstd,
    ];

    /// The codec's name as used in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Deflate => "deflate",
            Codec::Zlib => "zlib",
            Codec::Lz4Block => "lz4-block",
            Codec::Lz4Frame => "lz4-frame",
            Codec::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Decodes `src` into `dst`, which must come out exactly full.
///
/// Returns how many bytes of `src` the compressed stream used (for deflate and
/// zlib, bytes after the end of the stream are left alone; the other codecs use
/// all of `src`).
pub fn decompress_into(codec: Codec, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    match codec {
        #[cfg(feature = "deflate")]
        Codec::Deflate => deflate::inflate_into(src, dst, false),
        #[cfg(feature = "deflate")]
        Codec::Zlib => deflate::inflate_into(src, dst, true),
        #[cfg(feature = "lz4")]
        Codec::Lz4Block => lz4::block_decompress_into(src, dst).map(|()| src.len()),
        #[cfg(feature = "lz4")]
        Codec::Lz4Frame => lz4::frame_decompress_into(src, dst).map(|()| src.len()),
        #[cfg(feature = "zstd")]
        Codec::Zstd => zstd::decompress_into(src, dst).map(|()| src.len()),
        #[allow(unreachable_patterns)]
        other => {
            let _ = (src, dst);
            Err(not_built(other))
        }
    }
}

/// The most bytes `stored` compressed bytes can decode to, where the codec
/// bounds it: an LZ4 block expands at most 255 times (plus a few bytes), a
/// deflate or zlib stream at most 1032 times. `None` for codecs with no such
/// bound (LZ4 frames and Zstandard can describe long runs in a few bytes).
/// Readers check a declared decoded size against this before allocating, so
/// a tiny hostile file cannot ask for gigabytes.
pub fn max_decoded_len(codec: Codec, stored: u64) -> Option<u64> {
    match codec {
        Codec::Lz4Block => Some(stored.saturating_mul(255).saturating_add(255)),
        Codec::Deflate | Codec::Zlib => Some(stored.saturating_mul(1032).saturating_add(1032)),
        _ => None,
    }
}

/// The error for a codec whose feature is off in this build.
#[allow(dead_code)]
fn not_built(codec: Codec) -> CodecError {
    CodecError::Unsupported {
        codec: codec.name(),
        why: "this build of dataformats-core leaves this codec out (enable its feature)".into(),
    }
}

/// Inflates raw deflate (RFC 1951) `src` into `dst` until `dst` is full or
/// the stream ends, and returns how many bytes were written. Unlike
/// [`decompress_into`], a stream that could produce more is not an error
/// (ML.NET's IDV blocks are read that way); a short count is for the caller
/// to judge.
#[cfg(feature = "deflate")]
pub fn inflate_prefix(src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    deflate::inflate_prefix(src, dst)
}

/// Inflates raw deflate `src` up to its end or `max` bytes. Returns the bytes
/// produced and, when the data is corrupt, the error met after them.
#[cfg(feature = "deflate")]
pub fn inflate_lenient(src: &[u8], max: usize) -> (Vec<u8>, Option<CodecError>) {
    deflate::inflate_lenient(src, max)
}

/// The length of the first Zstandard frame of `src` (an error when no
/// complete frame starts there); lets a format demand exactly one frame.
#[cfg(feature = "zstd")]
pub fn zstd_frame_size(src: &[u8]) -> Result<usize, CodecError> {
    zstd::frame_size(src)
}

/// The decoded size the Zstandard frame at the start of `src` declares in
/// its header (`None` when the header has no content size or is not a
/// frame header); lets a reader compare it with its own record before
/// allocating.
#[cfg(feature = "zstd")]
pub fn zstd_content_size(src: &[u8]) -> Option<u64> {
    zstd::content_size(src)
}

/// [`compress`], appending the compressed bytes to `out` (an LZ4 block
/// or a Zstandard frame goes straight into `out`'s room, so a caller
/// compressing many small pieces reuses one buffer); returns how many
/// bytes were appended. On an error `out` is as it was. Zstandard keeps
/// one compression context per thread for inputs up to 128 KiB (and one
/// decompression context per thread for every frame).
pub fn compress_append(
    codec: Codec,
    src: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    match codec {
        #[cfg(feature = "lz4")]
        Codec::Lz4Block => lz4::block_compress_append(src, level, out),
        #[cfg(feature = "zstd")]
        Codec::Zstd => zstd::compress_append(src, level, out),
        _ => {
            let c = compress(codec, src, level)?;
            out.extend_from_slice(&c);
            Ok(c.len())
        }
    }
}

/// Compresses `src` with `codec` at `level` (the codec's default when `None`).
///
/// Levels: deflate/zlib 0–9, LZ4 block 1–12 (above 1 uses LZ4-HC; 1 and the
/// default use the fast compressor, like `LZ4_compress_default`), LZ4 frame
/// 0–16, zstd 1–22 (negative levels allowed).
pub fn compress(codec: Codec, src: &[u8], level: Option<i32>) -> Result<Vec<u8>, CodecError> {
    match codec {
        #[cfg(feature = "deflate")]
        Codec::Deflate => deflate::deflate(src, level, false),
        #[cfg(feature = "deflate")]
        Codec::Zlib => deflate::deflate(src, level, true),
        #[cfg(feature = "lz4")]
        Codec::Lz4Block => lz4::block_compress(src, level),
        #[cfg(feature = "lz4")]
        Codec::Lz4Frame => lz4::frame_compress(src, level),
        #[cfg(feature = "zstd")]
        Codec::Zstd => zstd::compress(src, level),
        #[allow(unreachable_patterns)]
        other => {
            let _ = (src, level);
            Err(not_built(other))
        }
    }
}

/// Checks that `dst` is exactly full after a decoder wrote `written` bytes.
#[allow(dead_code)]
fn check_full(codec: &'static str, written: usize, dst: &[u8]) -> Result<(), CodecError> {
    if written == dst.len() {
        Ok(())
    } else {
        Err(CodecError::size(
            codec,
            dst.len(),
            DecodedSize::Exactly(written as u64),
        ))
    }
}

#[cfg(any(feature = "deflate", feature = "blosc"))]
thread_local! {
    /// One libdeflate decompressor per thread, made on first use.
    static LIBDEFLATE: std::cell::RefCell<Option<libdeflater::Decompressor>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's libdeflate decompressor; `None` when the
/// decompressor is already in use on this thread (a nested call).
#[cfg(any(feature = "deflate", feature = "blosc"))]
pub(crate) fn with_libdeflate<R>(f: impl FnOnce(&mut libdeflater::Decompressor) -> R) -> Option<R> {
    LIBDEFLATE.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        Some(f(slot.get_or_insert_with(libdeflater::Decompressor::new)))
    })
}

#[cfg(all(test, feature = "deflate", feature = "lz4", feature = "zstd"))]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..50_000u32)
            .map(|i| ((i / 7) % 13) as u8 ^ (i % 3) as u8)
            .collect()
    }

    #[test]
    fn round_trip_every_codec_and_level() {
        let data = sample();
        for c in Codec::ALL {
            for level in [None, Some(1), Some(6)] {
                let packed = compress(c, &data, level).unwrap();
                assert!(packed.len() < data.len(), "{c} did not compress");
                let mut out = vec![0u8; data.len()];
                let used = decompress_into(c, &packed, &mut out).unwrap();
                assert_eq!(used, packed.len(), "{c}");
                assert_eq!(out, data, "{c} level {level:?}");
            }
        }
    }

    #[test]
    fn empty_payloads_round_trip() {
        for c in Codec::ALL {
            let packed = compress(c, b"", None).unwrap();
            let mut out = [0u8; 0];
            decompress_into(c, &packed, &mut out).unwrap();
            let mut one = [0u8; 1];
            let e = decompress_into(c, &packed, &mut one).unwrap_err();
            assert!(
                matches!(
                    e,
                    CodecError::SizeMismatch {
                        expected: 1,
                        found: DecodedSize::Exactly(0),
                        ..
                    }
                ),
                "{c}: {e}"
            );
        }
    }

    #[test]
    fn declared_size_must_be_exact() {
        let data = sample();
        for c in Codec::ALL {
            let packed = compress(c, &data, None).unwrap();
            // Declared too large: the payload stops short.
            let mut big = vec![0u8; data.len() + 10];
            let e = decompress_into(c, &packed, &mut big).unwrap_err();
            assert!(
                matches!(e, CodecError::SizeMismatch { found: DecodedSize::Exactly(n), expected, .. }
                    if n == data.len() as u64 && expected == data.len() as u64 + 10),
                "{c} too-large: {e}"
            );
            // Declared too small: the payload would go on.
            let mut small = vec![0u8; data.len() - 10];
            let e = decompress_into(c, &packed, &mut small).unwrap_err();
            match c {
                // An LZ4 block cannot tell "more output" from "malformed".
                Codec::Lz4Block => assert!(matches!(e, CodecError::Corrupt { .. }), "{c}: {e}"),
                _ => assert!(
                    matches!(
                        e,
                        CodecError::SizeMismatch {
                            found: DecodedSize::MoreThan(_),
                            ..
                        }
                    ),
                    "{c} too-small: {e}"
                ),
            }
        }
    }

    #[test]
    fn corrupt_and_truncated_input_is_an_error() {
        let data = sample();
        for c in Codec::ALL {
            let packed = compress(c, &data, None).unwrap();
            let mut out = vec![0u8; data.len()];
            // Truncated payload.
            let cut = &packed[..packed.len() / 2];
            assert!(decompress_into(c, cut, &mut out).is_err(), "{c} truncated");
            // Garbage.
            let junk: Vec<u8> = (0..200u32)
                .map(|i| (i * 97 + 13).to_le_bytes()[0])
                .collect();
            assert!(decompress_into(c, &junk, &mut out).is_err(), "{c} junk");
            // Flipped bytes in the middle: an error or a different result, never a panic.
            let mut flipped = packed.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0xff;
            flipped[mid + 1] ^= 0x55;
            if decompress_into(c, &flipped, &mut out).is_ok() {
                assert_ne!(out, data, "{c}: corruption went unnoticed");
            }
        }
    }

    #[test]
    fn deflate_leaves_trailing_bytes() {
        let data = sample();
        let mut packed = compress(Codec::Deflate, &data, None).unwrap();
        let n = packed.len();
        packed.extend_from_slice(b"trailing");
        let mut out = vec![0u8; data.len()];
        assert_eq!(
            decompress_into(Codec::Deflate, &packed, &mut out).unwrap(),
            n
        );
        assert_eq!(out, data);
    }

    #[test]
    #[cfg(feature = "deflate")]
    fn inflate_prefix_is_zlibs_whichever_decoder_answers() {
        // libdeflate answers only when the stream fills the buffer exactly;
        // every other case is zlib's: a longer stream gives its prefix, a
        // shorter one its length, damage an error. Trailing input is ignored.
        let data = sample();
        let packed = compress(Codec::Deflate, &data, None).unwrap();
        let mut trailing = packed.clone();
        trailing.extend_from_slice(b"trailing bytes");
        for src in [&packed, &trailing] {
            let mut out = vec![0u8; data.len()];
            assert_eq!(inflate_prefix(src, &mut out).unwrap(), data.len());
            assert_eq!(out, data);
            let mut short = vec![0u8; data.len() - 7];
            assert_eq!(inflate_prefix(src, &mut short).unwrap(), short.len());
            assert_eq!(short[..], data[..data.len() - 7]);
            let mut long = vec![0u8; data.len() + 7];
            assert_eq!(inflate_prefix(src, &mut long).unwrap(), data.len());
            assert_eq!(long[..data.len()], data[..]);
        }
        // Cut short: what there is, then the stream ends.
        let mut out = vec![0u8; data.len()];
        let n = inflate_prefix(&packed[..packed.len() / 2], &mut out).unwrap_or(0);
        assert!(n < data.len());
        // Damaged anywhere: the same answer (bytes or error) as zlib's.
        let mut rng = crate::rng::SplitMix64::new(7);
        for _ in 0..300 {
            let mut damaged = packed.clone();
            let at = rng.below(damaged.len() as u64) as usize;
            damaged[at] ^= rng.below(256) as u8 | 1;
            let (mut a, mut b) = (vec![0u8; data.len()], vec![0u8; data.len()]);
            let ra = inflate_prefix(&damaged, &mut a).map_err(|e| e.to_string());
            let rb = deflate::inflate_prefix_zlib(&damaged, &mut b).map_err(|e| e.to_string());
            assert_eq!(ra, rb, "byte {at}");
            if let Ok(n) = ra {
                assert_eq!(a[..n], b[..n], "byte {at}");
            }
        }
        let mut empty: [u8; 0] = [];
        assert_eq!(inflate_prefix(&packed, &mut empty).unwrap(), 0);
    }
}
