//! Zstandard through the C libzstd (zstd crate).

use std::cell::RefCell;
use std::io;

use ::zstd::bulk::{Compressor, Decompressor};

use super::{CodecError, DecodedSize, check_full};

const ZSTD: &str = "zstd";

pub(super) fn decompress_into(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    // A single frame that declares its size tells us a mismatch before decoding.
    if let Ok(Some(n)) = ::zstd::zstd_safe::get_frame_content_size(src) {
        let frame_len = ::zstd::zstd_safe::find_frame_compressed_size(src).ok();
        if frame_len == Some(src.len()) && n != dst.len() as u64 {
            let found = if n > dst.len() as u64 {
                DecodedSize::MoreThan(dst.len() as u64)
            } else {
                DecodedSize::Exactly(n)
            };
            return Err(CodecError::size(ZSTD, dst.len(), found));
        }
    }
    let n = with_decompressor(|d| d.decompress_to_buffer(src, dst)).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("too small") {
            CodecError::size(ZSTD, dst.len(), DecodedSize::MoreThan(dst.len() as u64))
        } else {
            CodecError::corrupt(ZSTD, msg)
        }
    })?;
    check_full(ZSTD, n, dst)
}

pub(super) fn compress(src: &[u8], level: Option<i32>) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    compress_append(src, level, &mut out)?;
    Ok(out)
}

/// Compresses `src` at `level` onto the end of `out` (one frame with its
/// content size, no checksum: what `zstd::bulk::compress` writes, byte for
/// byte) and returns the frame's length; on an error `out` is as it was.
/// Inputs up to [`KEEP_FOR`] use the thread's kept context.
pub(super) fn compress_append(
    src: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    let level = level.unwrap_or(::zstd::DEFAULT_COMPRESSION_LEVEL);
    if !::zstd::compression_level_range().contains(&level) {
        return Err(CodecError::arg(
            ZSTD,
            format!("level {level} is out of range"),
        ));
    }
    let start = out.len();
    out.resize(start + ::zstd::zstd_safe::compress_bound(src.len()), 0);
    let room = out.get_mut(start..).unwrap_or_default();
    let compressed = if src.len() <= KEEP_FOR {
        with_compressor(level, |c| c.compress_to_buffer(src, room))
    } else {
        Compressor::new(level).and_then(|mut c| c.compress_to_buffer(src, room))
    };
    match compressed {
        Ok(n) => {
            out.truncate(start + n);
            Ok(n)
        }
        Err(e) => {
            out.truncate(start);
            Err(CodecError::arg(ZSTD, e.to_string()))
        }
    }
}

/// Inputs up to this size are compressed with the thread's kept context.
/// Making a context costs about as much as compressing a few kilobytes, so
/// a larger input gains little from a kept one, and a context keeps the
/// tables it grew for the largest input it saw (tens of MB at high levels
/// for inputs of megabytes): small inputs keep it small.
const KEEP_FOR: usize = 128 << 10;

thread_local! {
    /// One compression context per thread (with the level it was last set
    /// to): making one costs far more than compressing a small value.
    static COMPRESSOR: RefCell<Option<(i32, Compressor<'static>)>> = const { RefCell::new(None) };
    /// One decompression context per thread, for the same reason.
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's compressor set to `level` (a new one when
/// the thread's is in use by a caller further up).
fn with_compressor<R>(
    level: i32,
    f: impl FnOnce(&mut Compressor<'static>) -> io::Result<R>,
) -> io::Result<R> {
    COMPRESSOR.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return f(&mut Compressor::new(level)?);
        };
        let c = match slot.as_mut() {
            Some((l, c)) => {
                if *l != level {
                    c.set_compression_level(level)?;
                    *l = level;
                }
                c
            }
            None => &mut slot.insert((level, Compressor::new(level)?)).1,
        };
        f(c)
    })
}

/// Runs `f` with this thread's decompressor (a new one when the thread's
/// is in use by a caller further up).
fn with_decompressor<R>(
    f: impl FnOnce(&mut Decompressor<'static>) -> io::Result<R>,
) -> io::Result<R> {
    DECOMPRESSOR.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return f(&mut Decompressor::new()?);
        };
        let d = match slot.as_mut() {
            Some(d) => d,
            None => slot.insert(Decompressor::new()?),
        };
        f(d)
    })
}

pub(super) fn frame_size(src: &[u8]) -> Result<usize, CodecError> {
    ::zstd::zstd_safe::find_frame_compressed_size(src).map_err(|code| {
        CodecError::corrupt(ZSTD, ::zstd::zstd_safe::get_error_name(code).to_string())
    })
}

/// The decoded size the frame at the start of `src` declares, when its
/// header records one.
pub(super) fn content_size(src: &[u8]) -> Option<u64> {
    match ::zstd::zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u32) -> Vec<u8> {
        (0..n as u32)
            .map(|i| ((i.wrapping_mul(seed) >> 3) % 17) as u8)
            .collect()
    }

    /// The thread's context, whatever it compressed before and at whatever
    /// level, writes the frame a fresh context writes, and reads it back.
    #[test]
    fn reused_contexts_give_the_frames_of_fresh_ones() {
        let mut out = b"kept".to_vec();
        for (k, level) in [3, 3, 19, 1, -5, 3, 22, 3].into_iter().enumerate() {
            for n in [0, 1, 256, 70_000, KEEP_FOR + 1] {
                let src = data(n, k as u32 * 7 + 1);
                let fresh = ::zstd::bulk::compress(&src, level).unwrap();
                assert_eq!(
                    compress(&src, Some(level)).unwrap(),
                    fresh,
                    "level {level}, {n} bytes"
                );
                let at = out.len();
                assert_eq!(
                    compress_append(&src, Some(level), &mut out).unwrap(),
                    fresh.len()
                );
                assert_eq!(out.get(at..).unwrap(), &fresh[..]);
                assert_eq!(out.get(..4).unwrap(), b"kept");
                let mut back = vec![0u8; n];
                decompress_into(&fresh, &mut back).unwrap();
                assert_eq!(back, src);
            }
        }
    }

    /// A refused level leaves the output as it was and the thread's
    /// context usable.
    #[test]
    fn a_refused_level_changes_nothing() {
        let mut out = vec![1, 2, 3];
        assert!(compress_append(b"abc", Some(1000), &mut out).is_err());
        assert_eq!(out, [1, 2, 3]);
        let src = data(5000, 3);
        assert_eq!(
            compress(&src, Some(3)).unwrap(),
            ::zstd::bulk::compress(&src, 3).unwrap()
        );
    }

    /// A damaged frame is an error, and the context decodes the next
    /// frame correctly after it.
    #[test]
    fn a_damaged_frame_leaves_the_context_usable() {
        let src = data(40_000, 5);
        let good = compress(&src, Some(3)).unwrap();
        let mut bad = good.clone();
        let mid = bad.len() / 2;
        bad.truncate(mid);
        let mut out = vec![0u8; src.len()];
        assert!(decompress_into(&bad, &mut out).is_err());
        decompress_into(&good, &mut out).unwrap();
        assert_eq!(out, src);
    }
}
