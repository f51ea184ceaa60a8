//! LZ4 blocks and frames through the C liblz4 (lz4 crate).

use std::io::{Read, Write};

use super::{CodecError, DecodedSize, check_full};

const BLOCK: &str = "lz4-block";
const FRAME: &str = "lz4-frame";

pub(super) fn block_decompress_into(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    if i32::try_from(src.len()).is_err() {
        return Err(CodecError::arg(BLOCK, "compressed block larger than 2 GiB"));
    }
    let Ok(cap) = i32::try_from(dst.len()) else {
        return Err(CodecError::arg(BLOCK, "decoded block larger than 2 GiB"));
    };
    let n = ::lz4::block::decompress_to_buffer(src, Some(cap), dst).map_err(|_| {
        CodecError::corrupt(
            BLOCK,
            format!("malformed block, or it decodes to more than {cap} byte(s)"),
        )
    })?;
    check_full(BLOCK, n, dst)
}

pub(super) fn block_compress(src: &[u8], level: Option<i32>) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    block_compress_append(src, level, &mut out)?;
    Ok(out)
}

pub(super) fn block_compress_append(
    src: &[u8],
    level: Option<i32>,
    out: &mut Vec<u8>,
) -> Result<usize, CodecError> {
    use ::lz4::block::CompressionMode;
    let mode = match level {
        None | Some(1) => None,
        Some(l @ 2..=12) => Some(CompressionMode::HIGHCOMPRESSION(l)),
        Some(l) => {
            return Err(CodecError::arg(
                BLOCK,
                format!("level {l} is not in 1..=12"),
            ));
        }
    };
    let bound = ::lz4::block::compress_bound(src.len())
        .map_err(|e| CodecError::arg(BLOCK, e.to_string()))?;
    let start = out.len();
    out.resize(start + bound, 0);
    let n = ::lz4::block::compress_to_buffer(
        src,
        mode,
        false,
        out.get_mut(start..).unwrap_or_default(),
    );
    let n = n.map_err(|e| CodecError::arg(BLOCK, e.to_string()));
    out.truncate(start + *n.as_ref().unwrap_or(&0));
    n
}

pub(super) fn frame_decompress_into(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    let io = |e: std::io::Error| CodecError::corrupt(FRAME, e.to_string());
    let mut dec = ::lz4::Decoder::new(src).map_err(io)?;
    let mut filled = 0;
    while filled < dst.len() {
        let buf = dst.get_mut(filled..).unwrap_or_default();
        match dec.read(buf) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    check_full(FRAME, filled, dst)?;
    let mut probe = [0u8; 1];
    match dec.read(&mut probe) {
        Ok(0) => {}
        Ok(_) => {
            return Err(CodecError::size(
                FRAME,
                dst.len(),
                DecodedSize::MoreThan(dst.len() as u64),
            ));
        }
        Err(e) => return Err(io(e)),
    }
    let (rest, result) = dec.finish();
    result.map_err(io)?;
    if !rest.is_empty() {
        return Err(CodecError::corrupt(
            FRAME,
            format!("{} byte(s) after the frame", rest.len()),
        ));
    }
    Ok(())
}

pub(super) fn frame_compress(src: &[u8], level: Option<i32>) -> Result<Vec<u8>, CodecError> {
    let level = match level {
        None => 0,
        Some(l @ 0..=16) => l.unsigned_abs(),
        Some(l) => {
            return Err(CodecError::arg(
                FRAME,
                format!("level {l} is not in 0..=16"),
            ));
        }
    };
    let io = |e: std::io::Error| CodecError::arg(FRAME, e.to_string());
    let mut enc = ::lz4::EncoderBuilder::new()
        .level(level)
        .build(Vec::new())
        .map_err(io)?;
    enc.write_all(src).map_err(io)?;
    let (out, result) = enc.finish();
    result.map_err(io)?;
    Ok(out)
}
