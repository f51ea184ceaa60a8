//! Value codecs: reading one block of n values (`idv.md` §7.3–§7.9).

use dataformats_core::plain;

use crate::cursor::Cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::types::{ColumnType, ItemType, KeyWidth};
use crate::values::{DateTimeOffset, TextValues, Values, VectorValues, utf16_to_wtf8};

/// `DateTime.MaxValue.Ticks`.
pub const MAX_TICKS: i64 = 3_155_378_975_999_999_999;

/// Decodes `n` values of `ty` from the front of `c`.
pub(crate) fn decode(
    ty: &ColumnType,
    dvbool: bool,
    c: &mut Cursor<'_>,
    n: usize,
) -> Result<Values> {
    match ty {
        ColumnType::Scalar(t) => decode_items(*t, dvbool, c, n),
        ColumnType::Vector { item, .. } => {
            let size = ty.vector_size().unwrap_or(0);
            decode_vbuffer(*item, size, dvbool, c, n).map(Values::Vector)
        }
    }
}

fn plain_vec<T: plain::Plain>(c: &mut Cursor<'_>, n: usize, what: &str) -> Result<Vec<T>> {
    let bytes = c.bytes(n as u64 * T::SIZE as u64, what)?;
    let mut out = vec![T::default(); n];
    plain::copy_into(bytes, &mut out)
        .map_err(|e| Error::new(ErrorKind::Truncated, e.to_string()))?;
    Ok(out)
}

fn ticks_vec(c: &mut Cursor<'_>, n: usize, datetime: bool) -> Result<Vec<i64>> {
    let at = c.offset();
    let mut v: Vec<i64> = plain_vec(c, n, "ticks")?;
    for (i, t) in v.iter_mut().enumerate() {
        if *t == i64::MIN {
            *t = 0;
        } else if datetime && !(0..=MAX_TICKS).contains(t) {
            return Err(Error::new(
                ErrorKind::ValueOutOfRange,
                format!("DateTime ticks {t} outside 0..={MAX_TICKS} (value {i})"),
            )
            .at(at + 8 * i as u64));
        }
    }
    Ok(v)
}

/// Decodes `n` scalar values of `t`.
pub(crate) fn decode_items(
    t: ItemType,
    dvbool: bool,
    c: &mut Cursor<'_>,
    n: usize,
) -> Result<Values> {
    Ok(match t {
        ItemType::I8 => Values::I8(plain_vec(c, n, "SByte values")?),
        ItemType::U8 => Values::U8(plain_vec(c, n, "Byte values")?),
        ItemType::I16 => Values::I16(plain_vec(c, n, "Int16 values")?),
        ItemType::U16 => Values::U16(plain_vec(c, n, "UInt16 values")?),
        ItemType::I32 => Values::I32(plain_vec(c, n, "Int32 values")?),
        ItemType::U32 => Values::U32(plain_vec(c, n, "UInt32 values")?),
        ItemType::I64 => Values::I64(plain_vec(c, n, "Int64 values")?),
        ItemType::U64 => Values::U64(plain_vec(c, n, "UInt64 values")?),
        ItemType::F32 => Values::F32(plain_vec(c, n, "Single values")?),
        ItemType::F64 => Values::F64(plain_vec(c, n, "Double values")?),
        ItemType::TimeSpan => Values::TimeSpan(ticks_vec(c, n, false)?),
        ItemType::DateTime => Values::DateTime(ticks_vec(c, n, true)?),
        ItemType::DateTimeOffset => {
            let off_at = c.offset();
            let offsets: Vec<i16> = plain_vec(c, n, "DateTimeOffset offsets")?;
            let ticks_at = c.offset();
            let ticks: Vec<i64> = plain_vec(c, n, "DateTimeOffset ticks")?;
            let mut out = Vec::with_capacity(n);
            for (i, (&o, &t)) in offsets.iter().zip(&ticks).enumerate() {
                let t = if t == i64::MIN { 0 } else { t };
                let o = if o == i16::MIN { 0 } else { o };
                let bad = |m: String, at: u64| {
                    Err(Error::new(ErrorKind::ValueOutOfRange, format!("{m} (value {i})")).at(at))
                };
                if !(0..=MAX_TICKS).contains(&t) {
                    return bad(
                        format!("DateTimeOffset ticks {t} out of range"),
                        ticks_at + 8 * i as u64,
                    );
                }
                if !(-840..=840).contains(&o) {
                    return bad(
                        format!("offset {o} minutes beyond ±14 hours"),
                        off_at + 2 * i as u64,
                    );
                }
                let utc = i128::from(t) - i128::from(o) * 600_000_000;
                if !(0..=i128::from(MAX_TICKS)).contains(&utc) {
                    return bad(
                        format!("UTC instant {utc} out of range"),
                        ticks_at + 8 * i as u64,
                    );
                }
                out.push(DateTimeOffset {
                    ticks: t,
                    offset_minutes: o,
                });
            }
            Values::DateTimeOffset(out)
        }
        ItemType::RowId => {
            // Low 8 bytes then high 8 bytes: one little-endian u128.
            Values::RowId(plain_vec::<u128>(c, n, "row ids")?)
        }
        ItemType::Key { width, .. } => Values::Key(match width {
            KeyWidth::U8 => plain_vec::<u8>(c, n, "keys")?
                .into_iter()
                .map(u64::from)
                .collect(),
            KeyWidth::U16 => plain_vec::<u16>(c, n, "keys")?
                .into_iter()
                .map(u64::from)
                .collect(),
            KeyWidth::U32 => plain_vec::<u32>(c, n, "keys")?
                .into_iter()
                .map(u64::from)
                .collect(),
            KeyWidth::U64 => plain_vec::<u64>(c, n, "keys")?,
        }),
        ItemType::Bool if dvbool => {
            let words = n.div_ceil(16);
            let at = c.offset();
            let b = c.bytes(words as u64 * 4, "DvBool words")?;
            let mut out = Vec::with_capacity(n);
            let mut words = plain::values::<u32>(b);
            let mut w = 0;
            for i in 0..n {
                if i % 16 == 0 {
                    w = words.next().ok_or_else(|| {
                        Error::new(ErrorKind::Truncated, "DvBool words end early").at(at)
                    })?;
                }
                match (w >> (2 * (i % 16))) & 3 {
                    0 | 2 => out.push(false),
                    1 => out.push(true),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::ValueOutOfRange,
                            format!("DvBool bit pattern 11 (value {i})"),
                        )
                        .at(at + (i / 16 * 4) as u64));
                    }
                }
            }
            Values::Bool(out)
        }
        ItemType::Bool => {
            let b = c.bytes(n.div_ceil(8) as u64, "Boolean bits")?;
            Values::Bool(
                (0..n)
                    .map(|i| b.get(i / 8).is_some_and(|x| x >> (i % 8) & 1 == 1))
                    .collect(),
            )
        }
        ItemType::Text => Values::Text(decode_text(c, n)?),
    })
}

fn text_err(m: String, at: u64) -> Error {
    Error::new(ErrorKind::BadText, m).at(at)
}

/// A `TextSpan` block of `n` values (§7.7).
fn decode_text(c: &mut Cursor<'_>, n: usize) -> Result<TextValues> {
    let at = c.offset();
    let count = c.i32("text value count")?;
    if usize::try_from(count).ok() != Some(n) {
        return Err(text_err(
            format!("text block holds {count} values, {n} expected"),
            at,
        ));
    }
    let b_at = c.offset();
    let raw = c.bytes(n as u64 * 4, "text boundaries")?;
    let mut prev: i32 = 0;
    let mut bounds = Vec::with_capacity(n);
    for (i, b) in plain::values::<i32>(raw).enumerate() {
        let pm = prev & 0x7FFF_FFFF;
        if !(b >= pm || (b & 0x7FFF_FFFF) == pm) {
            return Err(text_err(
                format!("text boundary {i} ({b}) below the previous one ({pm})"),
                b_at + 4 * i as u64,
            ));
        }
        bounds.push(b);
        prev = b;
    }
    let s_at = c.offset();
    let bytes = c.string_bytes("text characters")?;
    let last = (prev & 0x7FFF_FFFF) as usize;
    let mut out = TextValues::default();
    out.bytes.reserve(bytes.len());
    if bytes.is_ascii() {
        if bytes.len() != last {
            return Err(text_err(
                format!(
                    "text holds {} UTF-16 units, the last boundary says {last}",
                    bytes.len()
                ),
                s_at,
            ));
        }
        let mut start = 0usize;
        for &b in &bounds {
            let end = (b & 0x7FFF_FFFF) as usize;
            if b < 0 {
                out.push_wtf8(b"");
            } else {
                out.push_wtf8(bytes.get(start..end).unwrap_or_default());
            }
            start = end;
        }
        return Ok(out);
    }
    let s = String::from_utf8_lossy(bytes);
    let units: Vec<u16> = s.encode_utf16().collect();
    if units.len() != last {
        return Err(text_err(
            format!(
                "text holds {} UTF-16 units, the last boundary says {last}",
                units.len()
            ),
            s_at,
        ));
    }
    let mut start = 0usize;
    for &b in &bounds {
        let end = (b & 0x7FFF_FFFF) as usize;
        if b >= 0 {
            utf16_to_wtf8(units.get(start..end).unwrap_or_default(), &mut out.bytes);
        }
        out.ends.push(out.bytes.len());
        start = end;
    }
    Ok(out)
}

fn vb_err(m: String, at: u64) -> Error {
    Error::new(ErrorKind::BadVbuffer, m).at(at)
}

fn i32s(b: &[u8]) -> impl Iterator<Item = i32> + '_ {
    plain::values::<i32>(b)
}

/// A `VBuffer` block of `n` vectors (§7.9); `size` is the type's fixed size
/// (0 = variable).
fn decode_vbuffer(
    item: ItemType,
    size: u32,
    dvbool: bool,
    c: &mut Cursor<'_>,
    n: usize,
) -> Result<VectorValues> {
    let at = c.offset();
    let nvec = c.i32("vector count")?;
    if usize::try_from(nvec).ok() != Some(n) {
        return Err(vb_err(
            format!("vector block holds {nvec} vectors, {n} expected"),
            at,
        ));
    }
    let s_at = c.offset();
    let block_size = c.i32("vector size")?;
    if (size > 0 && block_size != size as i32) || block_size < 0 {
        return Err(vb_err(
            format!("block vector size {block_size}, the column type says {size}"),
            s_at,
        ));
    }
    let lengths_raw = if block_size == 0 {
        Some((c.offset(), c.bytes(n as u64 * 4, "vector lengths")?))
    } else {
        None
    };
    let counts_at = c.offset();
    let counts = c.bytes(n as u64 * 4, "vector entry counts")?;
    let nidx_at = c.offset();
    let nidx = c.i32("index count")?;
    if nidx < 0 {
        return Err(vb_err(format!("index count {nidx}"), nidx_at));
    }
    let idx_at = c.offset();
    let idx = c.bytes(nidx as u64 * 4, "vector indices")?;
    let mut out = VectorValues {
        lengths: Vec::with_capacity(n),
        sparse: Vec::with_capacity(n),
        value_ends: Vec::with_capacity(n),
        ..Default::default()
    };
    let mut lens = lengths_raw.map(|(a, b)| (a, i32s(b)));
    let mut idx_iter = i32s(idx).enumerate();
    let mut total: u64 = 0;
    for (v, count) in i32s(counts).enumerate() {
        let length = match &mut lens {
            Some((a, it)) => {
                let l = it.next().unwrap_or(0);
                if l < 0 {
                    return Err(vb_err(format!("vector {v}: length {l}"), *a + 4 * v as u64));
                }
                l as u32
            }
            None => block_size as u32,
        };
        if count == -1 {
            out.sparse.push(None);
            total += u64::from(length);
        } else if count >= 0 && (count as u32) < length {
            out.sparse.push(Some(out.indices.len()));
            let mut last: i64 = -1;
            for _ in 0..count {
                let Some((k, x)) = idx_iter.next() else {
                    return Err(vb_err(
                        format!(
                            "vector {v}: fewer stored indices ({nidx}) than the sparse counts need"
                        ),
                        idx_at,
                    ));
                };
                if i64::from(x) <= last || x < 0 || x as u32 >= length {
                    return Err(vb_err(
                        format!("vector {v}: index {x} not increasing or outside 0..{length}"),
                        idx_at + 4 * k as u64,
                    ));
                }
                last = i64::from(x);
                out.indices.push(x as u32);
            }
            total += count as u64;
        } else {
            return Err(vb_err(
                format!("vector {v}: entry count {count} for length {length}"),
                counts_at + 4 * v as u64,
            ));
        }
        out.lengths.push(length);
        out.value_ends.push(total as usize);
    }
    let total = usize::try_from(total)
        .map_err(|_| vb_err(format!("{total} explicit values"), c.offset()))?;
    out.values = Box::new(decode_items(item, dvbool, c, total)?);
    Ok(out)
}
