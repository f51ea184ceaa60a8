//! nom parsers for the fixed-size Bloscpack records; no allocation.

use dataformats_core::codec::blosc::BloscHeader;
use dataformats_core::parse::{
    self, PResult, array, le_i32, le_i64, le_u8, le_u16, le_u32, le_u32_len, tag, take,
};

use crate::error::{Error, ErrorKind, Result};

/// Size of a Blosc chunk header.
const BLOSC_HEADER: usize = 16;
use crate::format::{FORMAT_VERSION, MAGIC, MAX_CHUNK_SIZE, OPTION_METADATA, OPTION_OFFSETS};
use crate::format::{Header, MetaCodec, MetadataHeader, checksum_from_id};

/// The raw header fields, before any rule is checked.
struct RawHeader {
    version: u8,
    options: u8,
    checksum: u8,
    typesize: u8,
    chunk_size: i32,
    last_chunk: i32,
    nchunks: i64,
    max_app_chunks: i64,
}

fn raw_header(i: &[u8]) -> PResult<'_, RawHeader> {
    let (i, _) = tag(MAGIC, "\"blpk\"")(i)?;
    let (i, version) = le_u8(i)?;
    let (i, options) = le_u8(i)?;
    let (i, checksum) = le_u8(i)?;
    let (i, typesize) = le_u8(i)?;
    let (i, chunk_size) = le_i32(i)?;
    let (i, last_chunk) = le_i32(i)?;
    let (i, nchunks) = le_i64(i)?;
    let (i, max_app_chunks) = le_i64(i)?;
    Ok((
        i,
        RawHeader {
            version,
            options,
            checksum,
            typesize,
            chunk_size,
            last_chunk,
            nchunks,
            max_app_chunks,
        },
    ))
}

fn field(msg: String, at: u64) -> Error {
    Error::new(ErrorKind::BadHeaderField, msg).at(at)
}

/// Parses and checks the 32-byte header (check order of §6.3 step 1).
pub fn header(bytes: &[u8]) -> Result<Header> {
    let head = bytes.get(..32).unwrap_or(bytes);
    let r = parse::run(head, 0, raw_header).map_err(|e| {
        let kind = match e.kind() {
            dataformats_core::ErrorKind::BadMagic => ErrorKind::BadMagic,
            _ => ErrorKind::Truncated,
        };
        Error::new(kind, e.to_string()).at(e.offset().unwrap_or(0))
    })?;
    if r.version != FORMAT_VERSION {
        return Err(Error::new(
            ErrorKind::BadVersion,
            format!(
                "format version {} (only {FORMAT_VERSION} is supported)",
                r.version
            ),
        )
        .at(4));
    }
    if r.options & !(OPTION_OFFSETS | OPTION_METADATA) != 0 {
        return Err(field(
            format!("reserved option bits set (options 0x{:02x})", r.options),
            5,
        ));
    }
    let checksum = checksum_from_id(r.checksum)
        .ok_or_else(|| field(format!("unknown checksum id {}", r.checksum), 6))?;
    match r.nchunks {
        -1 => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "nchunks -1: streaming files with an unknown chunk count are not supported",
            )
            .at(16));
        }
        n if n < 1 => return Err(field(format!("nchunks {n} (must be at least 1)"), 16)),
        _ => {}
    }
    if !(-1..=MAX_CHUNK_SIZE).contains(&r.chunk_size) {
        return Err(field(
            format!("chunk_size {} out of range", r.chunk_size),
            8,
        ));
    }
    if r.last_chunk < -1 {
        return Err(field(
            format!("last_chunk {} out of range", r.last_chunk),
            12,
        ));
    }
    if r.chunk_size >= 0 && r.last_chunk > r.chunk_size {
        return Err(field(
            format!(
                "last_chunk {} is larger than chunk_size {}",
                r.last_chunk, r.chunk_size
            ),
            12,
        ));
    }
    if r.max_app_chunks < 0 {
        return Err(field(
            format!("max_app_chunks {} is negative", r.max_app_chunks),
            24,
        ));
    }
    if r.options & OPTION_OFFSETS == 0 && r.max_app_chunks != 0 {
        return Err(field(
            format!(
                "max_app_chunks {} without an offsets table",
                r.max_app_chunks
            ),
            24,
        ));
    }
    if r.nchunks.checked_add(r.max_app_chunks).is_none() {
        return Err(field("nchunks + max_app_chunks overflows".into(), 24));
    }
    Ok(Header {
        format_version: r.version,
        options: r.options,
        checksum,
        typesize: r.typesize,
        chunk_size: r.chunk_size,
        last_chunk: r.last_chunk,
        nchunks: r.nchunks,
        max_app_chunks: r.max_app_chunks,
    })
}

struct RawMeta {
    magic: [u8; 8],
    options: u8,
    checksum: u8,
    codec: u8,
    level: u8,
    size: u32,
    max_size: u32,
    comp_size: u32,
    user_codec: [u8; 8],
}

fn raw_meta(i: &[u8]) -> PResult<'_, RawMeta> {
    let (i, magic) = array::<8>(i)?;
    let (i, options) = le_u8(i)?;
    let (i, checksum) = le_u8(i)?;
    let (i, codec) = le_u8(i)?;
    let (i, level) = le_u8(i)?;
    let (i, size) = le_u32(i)?;
    let (i, max_size) = le_u32(i)?;
    let (i, comp_size) = le_u32(i)?;
    let (i, user_codec) = array::<8>(i)?;
    Ok((
        i,
        RawMeta {
            magic,
            options,
            checksum,
            codec,
            level,
            size,
            max_size,
            comp_size,
            user_codec,
        },
    ))
}

/// Parses and checks the metadata section header found at file offset `base`.
pub fn metadata_header(bytes: &[u8], base: u64) -> Result<MetadataHeader> {
    let r = parse::run(bytes, base, raw_meta)
        .map_err(|e| Error::new(ErrorKind::Truncated, format!("metadata header: {e}")).at(base))?;
    let bad = |msg: String, off: u64| Error::new(ErrorKind::BadMetadata, msg).at(base + off);
    if &r.magic != crate::format::META_MAGIC {
        return Err(bad(
            format!(
                "metadata serializer {:?} is not JSON",
                String::from_utf8_lossy(&r.magic).trim_end_matches('\0')
            ),
            0,
        ));
    }
    let meta_checksum = checksum_from_id(r.checksum)
        .ok_or_else(|| bad(format!("unknown metadata checksum id {}", r.checksum), 9))?;
    let meta_codec = match r.codec {
        0 => MetaCodec::None,
        1 => MetaCodec::Zlib,
        c => return Err(bad(format!("unknown metadata codec id {c}"), 10)),
    };
    if r.comp_size > r.max_size {
        return Err(bad(
            format!(
                "meta_comp_size {} is larger than max_meta_size {}",
                r.comp_size, r.max_size
            ),
            20,
        ));
    }
    Ok(MetadataHeader {
        magic_format: r.magic,
        meta_options: r.options,
        meta_checksum,
        meta_codec,
        meta_level: r.level,
        meta_size: r.size,
        max_meta_size: r.max_size,
        meta_comp_size: r.comp_size,
        user_codec: r.user_codec,
    })
}

/// The raw fields of a BLZ/bcolz chunk file's own 16-byte header.
struct RawChunkFile<'a> {
    version: u8,
    reserved: [u8; 3],
    nchunks: i64,
    blosc: &'a [u8],
}

fn raw_chunk_file(i: &[u8]) -> PResult<'_, RawChunkFile<'_>> {
    let (i, _) = tag(MAGIC, "\"blpk\"")(i)?;
    let (i, version) = le_u8(i)?;
    let (i, reserved) = array::<3>(i)?;
    let (i, nchunks) = le_i64(i)?;
    let (i, blosc) = take(BLOSC_HEADER)(i)?;
    Ok((
        i,
        RawChunkFile {
            version,
            reserved,
            nchunks,
            blosc,
        },
    ))
}

/// Parses and checks the start of BLZ/bcolz chunk file `chunk`: its 16-byte
/// header (magic `blpk`, version 1, three zero bytes, nchunks 1), then the
/// Blosc header of the one chunk it holds (bloscpack-blz.md, BLZ step 5).
/// The caller checks the chunk's sizes against the file and its atoms.
pub fn blz_chunk_file(bytes: &[u8], chunk: u64) -> Result<BloscHeader> {
    let e = |k: ErrorKind, m: String, at: u64| Error::new(k, m).in_chunk(chunk).at(at);
    let size = bytes.len();
    if size < 16 + BLOSC_HEADER {
        return Err(e(
            ErrorKind::Truncated,
            format!("chunk file of {size} byte(s) is shorter than 32"),
            0,
        ));
    }
    let r = parse::run(bytes, 0, raw_chunk_file).map_err(|x| {
        let kind = match x.kind() {
            dataformats_core::ErrorKind::BadMagic => ErrorKind::BadMagic,
            _ => ErrorKind::Truncated,
        };
        let msg = match kind {
            ErrorKind::BadMagic => "chunk file does not start with blpk".to_string(),
            _ => x.to_string(),
        };
        e(kind, msg, x.offset().unwrap_or(0))
    })?;
    if r.version != 1 {
        return Err(e(
            ErrorKind::BadVersion,
            format!("chunk file version [{}] (must be 1)", r.version),
            4,
        ));
    }
    if r.reserved != [0, 0, 0] || r.nchunks != 1 {
        return Err(e(
            ErrorKind::BadHeaderField,
            "chunk file reserved bytes must be 0 and nchunks 1".into(),
            5,
        ));
    }
    BloscHeader::parse(r.blosc).map_err(|x| crate::error::codec(x, chunk, 16))
}

/// Parses little-endian i64 offsets (all whole ones in `bytes`).
pub fn offsets(bytes: &[u8], out: &mut Vec<i64>) {
    out.extend(dataformats_core::plain::values::<i64>(bytes));
}

/// The start of a `.npy` file: its 6 magic bytes (the caller compares
/// them), then the format version's major and minor bytes.
pub fn npy_preamble(i: &[u8]) -> PResult<'_, ([u8; 6], u8, u8)> {
    let (i, magic) = array::<6>(i)?;
    let (i, major) = le_u8(i)?;
    let (i, minor) = le_u8(i)?;
    Ok((i, (magic, major, minor)))
}

/// A `.npy` header's byte length, after the preamble: a `u16` in format
/// version 1, a `u32` in versions 2 and 3.
pub fn npy_header_len<'a>(major: u8) -> impl Fn(&'a [u8]) -> PResult<'a, u64> {
    move |i: &'a [u8]| {
        if major == 1 {
            let (i, n) = le_u16(i)?;
            Ok((i, u64::from(n)))
        } else {
            le_u32_len(i)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    /// The `.npy` preamble's fields, and its header length in each version.
    #[test]
    fn npy_preamble_and_header_length() {
        let b = *b"\x93NUMPY\x02\x01\x34\x12\x00\x00";
        let (magic, major, minor) = assert_prefixes_truncated(&b[..8], 0, npy_preamble, "pre");
        assert_eq!((&magic, major, minor), (b"\x93NUMPY", 2, 1));
        let v1 = assert_prefixes_truncated(&b[8..10], 8, npy_header_len(1), "v1 length");
        assert_eq!(v1, 0x1234);
        let v2 = assert_prefixes_truncated(&b[8..12], 8, npy_header_len(2), "v2 length");
        assert_eq!(v2, 0x1234);
        let mut offs = Vec::new();
        let stored: Vec<u8> = [7i64, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
        offsets(&stored, &mut offs);
        assert_eq!(offs, vec![7, -1]);
        assert!(run(&b[..7], 0, npy_preamble).is_err());
    }
}
