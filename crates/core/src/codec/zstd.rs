//! Zstandard through the C libzstd (zstd crate).

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
    let n = ::zstd::bulk::decompress_to_buffer(src, dst).map_err(|e| {
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
    let level = level.unwrap_or(::zstd::DEFAULT_COMPRESSION_LEVEL);
    if !::zstd::compression_level_range().contains(&level) {
        return Err(CodecError::arg(
            ZSTD,
            format!("level {level} is out of range"),
        ));
    }
    ::zstd::bulk::compress(src, level).map_err(|e| CodecError::arg(ZSTD, e.to_string()))
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
