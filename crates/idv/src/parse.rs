//! IDV's structures parsed with nom. The fixed ones ([`crate::format`]:
//! header, tail, block lookup entries) have a parser each that borrows its
//! input, allocates nothing, and stops with `Truncated` on short input. The
//! variable-length tables (column table of contents, annotation tables,
//! codec descriptions) are read here too, one nom parser per field through
//! the crate's field cursor, because idv.md §10.1 wants each field checked as
//! soon as it is read and before anything is read through it.

use dataformats_core::parse::{PResult, le_i32, le_i64, le_u64};
use nom::Parser;

use crate::cursor::Cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{RawBlockEntry, RawHeader};
use crate::read::{Annotation, Column, Compression, HEADER_SIZE, Header, bad, block_count};
use crate::types::{Codec, ColumnType, ItemType, KeyWidth, simple};

/// The header's fields.
pub fn header(i: &[u8]) -> PResult<'_, RawHeader> {
    let (i, (signature, version, compatible_version, toc_offset, tail_offset, row_count)) =
        (le_u64, le_u64, le_u64, le_i64, le_i64, le_i64).parse(i)?;
    let (i, column_count) = le_i32(i)?;
    Ok((
        i,
        RawHeader {
            signature,
            version,
            compatible_version,
            toc_offset,
            tail_offset,
            row_count,
            column_count,
        },
    ))
}

/// The tail signature.
pub fn tail(i: &[u8]) -> PResult<'_, u64> {
    le_u64(i)
}

/// One block lookup entry.
pub fn block_entry(i: &[u8]) -> PResult<'_, RawBlockEntry> {
    let (i, (offset, compressed_len, decompressed_len)) = (le_i64, le_i32, le_i32).parse(i)?;
    Ok((
        i,
        RawBlockEntry {
            offset,
            compressed_len,
            decompressed_len,
        },
    ))
}

/// The column table of contents (§5) at file offset `start`: each entry's
/// fields read and checked one at a time, in the order of §10.1.
pub(crate) fn toc(bytes: &[u8], start: u64, h: &Header) -> Result<Vec<Column>> {
    let mut c = Cursor::new(bytes, start);
    let mut cols: Vec<Column> = Vec::new();
    let mut rpb0: Option<u32> = None;
    for _ in 0..h.column_count {
        let name_at = c.offset();
        let name = c.string("column name").map_err(|e| e.at(name_at))?;
        let loc = |e: Error| e.in_column(&name);
        let codec = read_codec(&mut c, true).map_err(loc)?;
        let compression = Compression::from_byte(c.u8("compression kind").map_err(loc)?);
        let rpb_at = c.offset();
        let rpb_raw = c.leb128("rows per block").map_err(loc)?;
        let rpb = rpb_raw as u32 as i32;
        if rpb < 0 || (rpb == 0 && h.row_count > 0) {
            return Err(loc(bad(
                ErrorKind::RowsPerBlock,
                format!("rows per block {rpb}"),
                rpb_at,
            )));
        }
        let rpb = rpb as u32;
        match rpb0 {
            None => rpb0 = Some(rpb),
            Some(r0) if r0 != rpb => {
                return Err(loc(bad(
                    ErrorKind::RowsPerBlock,
                    format!("rows per block {rpb}, column 0 has {r0} (differing is not supported)"),
                    rpb_at,
                )));
            }
            _ => {}
        }
        let nblocks = block_count(h.row_count, rpb);
        if nblocks > i32::MAX as u64 {
            return Err(loc(bad(
                ErrorKind::RowsPerBlock,
                format!("{nblocks} blocks per column"),
                rpb_at,
            )));
        }
        let lk_at = c.offset();
        let lookup = c.i64("lookup table offset").map_err(loc)?;
        if h.row_count > 0 {
            let hi = h.tail_offset as i128 - 16 * nblocks as i128;
            if (lookup as i128) < HEADER_SIZE as i128 || lookup as i128 > hi {
                return Err(loc(bad(
                    ErrorKind::OffsetOutOfRange,
                    format!("lookup table offset {lookup} outside 256..={hi}"),
                    lk_at,
                )));
            }
        }
        let an_at = c.offset();
        let ann = c.i64("annotation table offset").map_err(loc)?;
        if ann != 0 && (ann < HEADER_SIZE as i64 || ann as u64 > h.tail_offset) {
            return Err(loc(bad(
                ErrorKind::OffsetOutOfRange,
                format!(
                    "annotation table offset {ann} outside 256..={}",
                    h.tail_offset
                ),
                an_at,
            )));
        }
        cols.push(Column {
            name,
            codec,
            compression,
            rows_per_block: rpb,
            lookup_offset: lookup.max(0) as u64,
            annotation_offset: ann as u64,
            annotations: Vec::new(),
        });
    }
    Ok(cols)
}

/// A column's annotation table of contents (§9) at file offset `offset`,
/// every entry checked field by field (dead entries included).
pub(crate) fn annotation_toc(bytes: &[u8], offset: u64, h: &Header) -> Result<Vec<Annotation>> {
    let mut c = Cursor::new(bytes, offset);
    let count = c.leb128("annotation count")?;
    if count == 0 || count >= i32::MAX as u64 {
        return Err(bad(
            ErrorKind::BadAnnotation,
            format!("{count} annotation entries"),
            offset,
        ));
    }
    let mut out: Vec<Annotation> = Vec::new();
    for _ in 0..count {
        let k_at = c.offset();
        let kind = c.string("annotation kind")?;
        if kind.is_empty() {
            return Err(bad(
                ErrorKind::BadAnnotation,
                "empty annotation kind".into(),
                k_at,
            ));
        }
        if out.iter().any(|a| a.kind == kind) {
            return Err(bad(
                ErrorKind::BadAnnotation,
                format!("annotation kind {kind:?} twice"),
                k_at,
            ));
        }
        let loc = |e: Error| e.in_annotation(&kind);
        let codec = read_codec(&mut c, true).map_err(loc)?;
        let compression = Compression::from_byte(c.u8("annotation compression").map_err(loc)?);
        let o_at = c.offset();
        let boff = c.i64("annotation block offset").map_err(loc)?;
        if boff < HEADER_SIZE as i64 || boff as u64 > h.tail_offset {
            return Err(loc(bad(
                ErrorKind::OffsetOutOfRange,
                format!(
                    "annotation block offset {boff} outside 256..={}",
                    h.tail_offset
                ),
                o_at,
            )));
        }
        let s_at = c.offset();
        let size = c.leb128("annotation block size").map_err(loc)?;
        if size == 0 || size > i64::MAX as u64 || size > h.tail_offset - boff as u64 {
            return Err(loc(bad(
                ErrorKind::BadAnnotation,
                format!(
                    "annotation block size {size} (block at {boff}, tail at {})",
                    h.tail_offset
                ),
                s_at,
            )));
        }
        out.push(Annotation {
            kind,
            codec,
            compression,
            offset: boff as u64,
            size,
            value: None,
        });
    }
    Ok(out)
}

fn params_err(msg: impl Into<std::borrow::Cow<'static, str>>, at: u64) -> Error {
    Error::new(ErrorKind::BadCodecParams, msg).at(at)
}

/// Reads a codec description at the cursor (§7.1). `top` allows unknown
/// names (the owner becomes dead); nested descriptions must be known.
pub(crate) fn read_codec(c: &mut Cursor<'_>, top: bool) -> Result<Codec> {
    let at = c.offset();
    let name = c.string("codec name")?;
    if name.is_empty() {
        return Err(params_err("empty codec load name", at));
    }
    let len_at = c.offset();
    let len = c.leb128("codec parameter length")?;
    if len > i64::MAX as u64 {
        return Err(params_err(
            format!("codec {name:?}: parameter length {len} above 2^63-1"),
            len_at,
        ));
    }
    let params_at = c.offset();
    let params = c.bytes(len, "codec parameters")?;
    let mut p = Cursor::new(params, params_at).short_is(ErrorKind::BadCodecParams);
    let parsed = parse_params(&name, &mut p)?;
    let Some((ty, dvbool)) = parsed else {
        if top {
            return Ok(Codec {
                name,
                ty: None,
                dvbool: false,
            });
        }
        return Err(params_err(format!("unknown nested codec {name:?}"), at));
    };
    if p.consumed() as u64 != len {
        return Err(params_err(
            format!(
                "codec {name:?} declares {len} parameter byte(s), its parameters use {}",
                p.consumed()
            ),
            params_at,
        ));
    }
    Ok(Codec {
        name,
        ty: Some(ty),
        dvbool,
    })
}

/// Parses the parameters of a known codec; `None` for an unknown name.
fn parse_params(name: &str, p: &mut Cursor<'_>) -> Result<Option<(ColumnType, bool)>> {
    if let Some(item) = simple(name) {
        return Ok(Some((ColumnType::Scalar(item.ty), item.dvbool)));
    }
    match name {
        "Key2" => {
            let at = p.offset();
            let width = key_width(p)?;
            let count = p.u64("key count")?;
            if count == 0 || count > width.max() {
                return Err(params_err(
                    format!("key count {count} not in 1..={}", width.max()),
                    at,
                ));
            }
            Ok(Some((
                ColumnType::Scalar(ItemType::Key { width, count }),
                false,
            )))
        }
        "Key" => {
            let at = p.offset();
            let width = key_width(p)?;
            let contiguous = p.u8("key contiguous flag")?;
            let min = p.u64("key min")?;
            let count = p.i32("key count")?;
            if contiguous != 1 {
                return Err(params_err(
                    format!("legacy key: contiguous flag {contiguous} (only 1 is readable)"),
                    at,
                ));
            }
            if min != 0 {
                return Err(params_err(
                    format!("legacy key: min {min} (only 0 is readable)"),
                    at,
                ));
            }
            let count = u64::try_from(count)
                .ok()
                .filter(|&c| c <= width.max())
                .ok_or_else(|| {
                    params_err(
                        format!("legacy key count {count} not in 0..={}", width.max()),
                        at,
                    )
                })?;
            let count = if count == 0 { width.max() } else { count };
            Ok(Some((
                ColumnType::Scalar(ItemType::Key { width, count }),
                false,
            )))
        }
        "VBuffer" => {
            let at = p.offset();
            let inner = read_codec(p, false)?;
            let (item, dvbool) = match inner.ty {
                Some(ColumnType::Scalar(t)) => (t, inner.dvbool),
                _ => {
                    return Err(params_err(
                        format!("vector item codec {:?} is not a primitive", inner.name),
                        at,
                    ));
                }
            };
            let nd_at = p.offset();
            let ndims = p.i32("vector dimension count")?;
            let ndims = usize::try_from(ndims)
                .map_err(|_| params_err(format!("{ndims} vector dimensions"), nd_at))?;
            if ndims > p.remaining() / 4 {
                return Err(params_err(
                    format!("{ndims} vector dimensions do not fit in the parameters"),
                    nd_at,
                ));
            }
            let mut dims = Vec::with_capacity(ndims);
            let mut size: u64 = 1;
            for _ in 0..ndims {
                let d_at = p.offset();
                let d = p.i32("vector dimension")?;
                let d = u32::try_from(d)
                    .map_err(|_| params_err(format!("vector dimension {d}"), d_at))?;
                size = size.saturating_mul(u64::from(d));
                dims.push(d);
            }
            if dims.iter().all(|&d| d != 0) && size > i32::MAX as u64 {
                return Err(params_err(
                    format!("vector size {size} overflows Int32"),
                    nd_at,
                ));
            }
            Ok(Some((ColumnType::Vector { item, dims }, dvbool)))
        }
        _ => Ok(None),
    }
}

fn key_width(p: &mut Cursor<'_>) -> Result<KeyWidth> {
    let at = p.offset();
    let inner = read_codec(p, false)?;
    match inner.ty {
        Some(ColumnType::Scalar(ItemType::U8)) => Ok(KeyWidth::U8),
        Some(ColumnType::Scalar(ItemType::U16)) => Ok(KeyWidth::U16),
        Some(ColumnType::Scalar(ItemType::U32)) => Ok(KeyWidth::U32),
        Some(ColumnType::Scalar(ItemType::U64)) => Ok(KeyWidth::U64),
        _ => Err(params_err(
            format!("key item codec {:?} is not an unsigned integer", inner.name),
            at,
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::format::{BLOCK_ENTRY_SIZE, HEADER_FIELDS_SIZE};
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..64u8)
            .map(|x| x.wrapping_mul(29).wrapping_add(5))
            .collect();
        let u64_ = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let i32_ = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let h = run(&b, 0, header).unwrap();
        assert_eq!(
            (h.signature, h.version, h.compatible_version),
            (u64_(0), u64_(8), u64_(16))
        );
        assert_eq!(
            (h.toc_offset, h.tail_offset, h.row_count),
            (u64_(24) as i64, u64_(32) as i64, u64_(40) as i64)
        );
        assert_eq!(h.column_count, i32_(48));
        assert_eq!(run(&b, 0, tail).unwrap(), u64_(0));
        let e = run(&b, 0, block_entry).unwrap();
        assert_eq!(
            (e.offset, e.compressed_len, e.decompressed_len),
            (u64_(0) as i64, i32_(8), i32_(12))
        );
    }

    #[test]
    fn every_proper_prefix_is_truncated() {
        let b = [0x77u8; 64];
        assert_prefixes_truncated(&b[..HEADER_FIELDS_SIZE as usize], 256, header, "header");
        assert_prefixes_truncated(&b[..8], 256, tail, "tail");
        assert_prefixes_truncated(
            &b[..BLOCK_ENTRY_SIZE as usize],
            256,
            block_entry,
            "block_entry",
        );
    }
}
