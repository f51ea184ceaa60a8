//! Raw deflate and zlib: inflated through flate2 (C zlib backend), blocks
//! whose decoded size is known tried first with libdeflate (whole-buffer
//! inflate, typically two to three times zlib's speed); deflated whole by
//! libdeflate.

use std::cell::RefCell;

use flate2::{Decompress, FlushDecompress, Status};

use super::{CodecError, DecodedSize, check_full};

fn name(zlib: bool) -> &'static str {
    if zlib { "zlib" } else { "deflate" }
}

pub(super) fn inflate_into(src: &[u8], dst: &mut [u8], zlib: bool) -> Result<usize, CodecError> {
    let codec = name(zlib);
    let mut d = Decompress::new(zlib);
    loop {
        let (in_pos, out_pos) = (total(d.total_in()), total(d.total_out()));
        let input = src.get(in_pos..).unwrap_or_default();
        let output = dst.get_mut(out_pos..).unwrap_or_default();
        let status = d
            .decompress(input, output, FlushDecompress::Finish)
            .map_err(|e| CodecError::corrupt(codec, e.to_string()))?;
        let (new_in, new_out) = (total(d.total_in()), total(d.total_out()));
        match status {
            Status::StreamEnd => {
                check_full(codec, new_out, dst)?;
                return Ok(new_in);
            }
            Status::Ok | Status::BufError => {
                if new_out == dst.len() {
                    // The buffer is full but the stream has not ended: see
                    // whether it would produce more.
                    let mut probe = [0u8; 1];
                    let rest = src.get(new_in..).unwrap_or_default();
                    let st = d
                        .decompress(rest, &mut probe, FlushDecompress::Finish)
                        .map_err(|e| CodecError::corrupt(codec, e.to_string()))?;
                    if d.total_out() > new_out as u64 {
                        return Err(CodecError::size(
                            codec,
                            dst.len(),
                            DecodedSize::MoreThan(dst.len() as u64),
                        ));
                    }
                    if st == Status::StreamEnd {
                        return Ok(total(d.total_in()));
                    }
                    if total(d.total_in()) == new_in {
                        return Err(CodecError::corrupt(codec, "compressed stream ends early"));
                    }
                    continue;
                }
                if new_in == in_pos && new_out == out_pos {
                    // No progress: the input is used up before the stream ends.
                    return Err(CodecError::corrupt(
                        codec,
                        format!("compressed stream ends early, after {new_out} decoded byte(s)"),
                    ));
                }
            }
        }
    }
}

/// libdeflate's inflate of the raw deflate stream `src` into `dst`: true
/// when the stream decodes to exactly `dst.len()` bytes (then `dst` holds
/// them). Any other outcome (longer or shorter output, damage) is false and
/// leaves the answer to zlib, whose results and messages define ours, save
/// for the rare damaged Huffman table libdeflate accepts and zlib refuses.
fn inflate_whole(src: &[u8], dst: &mut [u8]) -> bool {
    super::with_libdeflate(|d| d.deflate_decompress(src, dst).is_ok_and(|n| n == dst.len()))
        .unwrap_or(false)
}

/// Inflates raw deflate `src` into `dst` until `dst` is full or the stream
/// ends; returns how many bytes were written. Bytes the stream could still
/// produce and input after its end are ignored.
pub(super) fn inflate_prefix(src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    if !dst.is_empty() && inflate_whole(src, dst) {
        return Ok(dst.len());
    }
    inflate_prefix_zlib(src, dst)
}

/// [`inflate_prefix`] by zlib alone.
pub(super) fn inflate_prefix_zlib(src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    let mut d = Decompress::new(false);
    loop {
        let (in_pos, out_pos) = (total(d.total_in()), total(d.total_out()));
        if out_pos == dst.len() {
            return Ok(out_pos);
        }
        let input = src.get(in_pos..).unwrap_or_default();
        let output = dst.get_mut(out_pos..).unwrap_or_default();
        let status = d
            .decompress(input, output, FlushDecompress::Finish)
            .map_err(|e| CodecError::corrupt("deflate", e.to_string()))?;
        let (new_in, new_out) = (total(d.total_in()), total(d.total_out()));
        if status == Status::StreamEnd || (new_in == in_pos && new_out == out_pos) {
            return Ok(new_out);
        }
    }
}

/// Inflates raw deflate `src` to its end or to `max` bytes, whichever comes
/// first. Returns what was produced and, if the data turned out corrupt,
/// the error (what came before the damage is kept).
pub(super) fn inflate_lenient(src: &[u8], max: usize) -> (Vec<u8>, Option<CodecError>) {
    let mut d = Decompress::new(false);
    let mut out: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let in_pos = total(d.total_in());
        let before = total(d.total_out());
        let room = max.saturating_sub(out.len()).min(buf.len());
        if room == 0 {
            return (out, None);
        }
        let input = src.get(in_pos..).unwrap_or_default();
        let status = match d.decompress(
            input,
            buf.get_mut(..room).unwrap_or_default(),
            FlushDecompress::Finish,
        ) {
            Ok(s) => s,
            Err(e) => return (out, Some(CodecError::corrupt("deflate", e.to_string()))),
        };
        let produced = total(d.total_out()) - before;
        out.extend_from_slice(buf.get(..produced).unwrap_or_default());
        if status == Status::StreamEnd || (total(d.total_in()) == in_pos && produced == 0) {
            return (out, None);
        }
    }
}

fn total(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

thread_local! {
    /// One libdeflate compressor per thread and its level (raw deflate),
    /// made on first use (a compressor of the higher levels holds several hundred KB of
    /// tables, so it is kept rather than made per block).
    static COMPRESSOR: RefCell<Option<(i32, libdeflater::Compressor)>> = const { RefCell::new(None) };
}

/// Deflates all of `src` at `level` (0–9; `None`: 6, zlib's default).
///
/// zlib-wrapped streams come from zlib itself, so that they are the bytes
/// python's `zlib.compress` writes (Bloscpack metadata is compared byte for
/// byte with python-bloscpack's). Raw deflate (IDV blocks) comes from one
/// call to libdeflate, which at the same level compresses about as well as
/// zlib and two to five times faster; its streams are standard deflate,
/// which zlib (and every reader of the format) inflates.
pub(super) fn deflate(src: &[u8], level: Option<i32>, zlib: bool) -> Result<Vec<u8>, CodecError> {
    let codec = name(zlib);
    let level = match level {
        None => 6,
        Some(l @ 0..=9) => l,
        Some(l) => return Err(CodecError::arg(codec, format!("level {l} is not in 0..=9"))),
    };
    if zlib {
        let io = |e: std::io::Error| CodecError::corrupt(codec, e.to_string());
        let mut e = flate2::write::ZlibEncoder::new(
            Vec::new(),
            flate2::Compression::new(level.unsigned_abs()),
        );
        std::io::Write::write_all(&mut e, src).map_err(io)?;
        return e.finish().map_err(io);
    }
    let run = |c: &mut libdeflater::Compressor| {
        let mut out = vec![0u8; c.deflate_compress_bound(src.len())];
        let n = c
            .deflate_compress(src, &mut out)
            .map_err(|e| CodecError::corrupt(codec, format!("libdeflate: {e:?}")))?;
        out.truncate(n);
        Ok(out)
    };
    let make = || {
        libdeflater::CompressionLvl::new(level)
            .map(libdeflater::Compressor::new)
            .map_err(|e| CodecError::arg(codec, format!("level {level}: {e:?}")))
    };
    COMPRESSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            if slot.as_ref().is_none_or(|(l, _)| *l != level) {
                *slot = Some((level, make()?));
            }
            match slot.as_mut() {
                Some((_, c)) => run(c),
                None => run(&mut make()?),
            }
        }
        // Only if a compression ran inside another on this thread.
        Err(_) => run(&mut make()?),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read;

    use super::deflate;

    /// What `deflate` writes at every level, raw (libdeflate) and
    /// zlib-wrapped (zlib), zlib itself (flate2's streaming decoder, not
    /// libdeflate) inflates back to the input; levels change the size,
    /// never the content; zlib-wrapped streams are zlib's own bytes. A level
    /// out of range is refused.
    #[test]
    fn deflated_by_libdeflate_inflates_with_zlib_at_every_level() {
        let mut x = 7u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let floats: Vec<u8> = (0..50_000)
            .flat_map(|i| (i as f32).sin().to_le_bytes())
            .collect();
        let runs: Vec<u8> = (0..300_000u32).map(|i| (i / 1000) as u8).collect();
        for data in [&b""[..], b"a", &noise, &floats, &runs] {
            let mut sizes = Vec::new();
            for level in (0..=9).map(Some).chain([None]) {
                for zlib in [false, true] {
                    let packed = deflate(data, level, zlib).unwrap();
                    let mut back = Vec::new();
                    if zlib {
                        flate2::read::ZlibDecoder::new(&packed[..])
                            .read_to_end(&mut back)
                            .unwrap();
                    } else {
                        flate2::read::DeflateDecoder::new(&packed[..])
                            .read_to_end(&mut back)
                            .unwrap();
                    }
                    assert!(back == data, "level {level:?} zlib {zlib}");
                    if zlib {
                        let mut e = flate2::write::ZlibEncoder::new(
                            Vec::new(),
                            flate2::Compression::new(level.unwrap_or(6).unsigned_abs()),
                        );
                        std::io::Write::write_all(&mut e, data).unwrap();
                        assert!(e.finish().unwrap() == packed, "zlib's own bytes");
                    }
                    sizes.push(packed.len());
                }
            }
            if data.len() == runs.len() {
                // Level 0 stores; 9 compresses runs to a small part of that.
                assert!(sizes[19] * 20 < sizes[0], "{sizes:?}");
            }
        }
        for bad in [-1, 10, 12] {
            assert!(deflate(b"x", Some(bad), false).is_err());
        }
    }
}
