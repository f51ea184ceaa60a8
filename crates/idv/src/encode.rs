//! Value codecs, writing side: one block of values in the current
//! (1.1.1.6) layouts.

use crate::decode::MAX_TICKS;
use crate::error::{Error, ErrorKind, Result};
use crate::types::{ColumnType, ItemType, KeyWidth, put_string};
use crate::values::{Values, VectorValues};

fn arg(m: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, m)
}

/// Checks that `v` holds values of `ty` that the format can store.
pub(crate) fn check(ty: &ColumnType, v: &Values) -> Result<()> {
    match (ty, v) {
        (ColumnType::Scalar(t), flat) => check_items(*t, flat),
        (ColumnType::Vector { item, .. }, Values::Vector(vv)) => {
            let size = ty.vector_size().unwrap_or(0);
            for i in 0..vv.len() {
                let r = vv
                    .get(i)
                    .ok_or_else(|| arg(format!("vector {i} is malformed")))?;
                if size > 0 && r.length != size {
                    return Err(arg(format!(
                        "vector {i} has length {}, the type says {size}",
                        r.length
                    )));
                }
                if r.length > i32::MAX as u32 {
                    return Err(arg(format!("vector {i} is longer than 2^31-1")));
                }
            }
            check_items(*item, vv.values())
        }
        (ty, _) => Err(arg(format!("values do not match the column type {ty}"))),
    }
}

fn check_items(t: ItemType, v: &Values) -> Result<()> {
    let ok = matches!(
        (t, v),
        (ItemType::I8, Values::I8(_))
            | (ItemType::U8, Values::U8(_))
            | (ItemType::I16, Values::I16(_))
            | (ItemType::U16, Values::U16(_))
            | (ItemType::I32, Values::I32(_))
            | (ItemType::U32, Values::U32(_))
            | (ItemType::I64, Values::I64(_))
            | (ItemType::U64, Values::U64(_))
            | (ItemType::F32, Values::F32(_))
            | (ItemType::F64, Values::F64(_))
            | (ItemType::Bool, Values::Bool(_))
            | (ItemType::Text, Values::Text(_))
            | (ItemType::TimeSpan, Values::TimeSpan(_))
            | (ItemType::DateTime, Values::DateTime(_))
            | (ItemType::DateTimeOffset, Values::DateTimeOffset(_))
            | (ItemType::RowId, Values::RowId(_))
            | (ItemType::Key { .. }, Values::Key(_))
    );
    if !ok {
        return Err(arg(format!("values do not match the item type {t}")));
    }
    match (t, v) {
        // Key values are not checked against the count, as in ML.NET (§7.8).
        (ItemType::DateTime, Values::DateTime(x)) => {
            if let Some(bad) = x.iter().find(|t| !(0..=MAX_TICKS).contains(*t)) {
                return Err(arg(format!("DateTime ticks {bad} out of range")));
            }
        }
        (ItemType::DateTimeOffset, Values::DateTimeOffset(x)) => {
            for d in x {
                let utc = i128::from(d.ticks) - i128::from(d.offset_minutes) * 600_000_000;
                if !(0..=MAX_TICKS).contains(&d.ticks)
                    || !(-840..=840).contains(&d.offset_minutes)
                    || !(0..=i128::from(MAX_TICKS)).contains(&utc)
                {
                    return Err(arg(format!("DateTimeOffset {d:?} out of range")));
                }
            }
        }
        (ItemType::TimeSpan, Values::TimeSpan(x)) if x.contains(&i64::MIN) => {
            return Err(arg(
                "TimeSpan i64::MIN cannot be stored (it reads back as 0)".into(),
            ));
        }
        _ => {}
    }
    Ok(())
}

macro_rules! le {
    ($out:expr, $x:expr) => {
        for v in $x {
            $out.extend_from_slice(&v.to_le_bytes());
        }
    };
}

/// Encodes `v` (checked against `ty`) as one block.
pub(crate) fn encode(ty: &ColumnType, v: &Values, out: &mut Vec<u8>) {
    match (ty, v) {
        (ColumnType::Vector { .. }, Values::Vector(vv)) => {
            encode_vbuffer(ty.item(), ty.vector_size().unwrap_or(0), vv, out)
        }
        (_, flat) => encode_items(ty.item(), flat, out),
    }
}

pub(crate) fn encode_items(t: ItemType, v: &Values, out: &mut Vec<u8>) {
    match v {
        Values::I8(x) => le!(out, x),
        Values::U8(x) => out.extend_from_slice(x),
        Values::I16(x) => le!(out, x),
        Values::U16(x) => le!(out, x),
        Values::I32(x) => le!(out, x),
        Values::U32(x) => le!(out, x),
        Values::I64(x) | Values::TimeSpan(x) | Values::DateTime(x) => le!(out, x),
        Values::U64(x) => le!(out, x),
        Values::F32(x) => le!(out, x),
        Values::F64(x) => le!(out, x),
        Values::Bool(x) => {
            let start = out.len();
            out.resize(start + x.len().div_ceil(8), 0);
            for (i, &b) in x.iter().enumerate() {
                if b && let Some(byte) = out.get_mut(start + i / 8) {
                    *byte |= 1 << (i % 8);
                }
            }
        }
        Values::Text(t) => {
            out.extend_from_slice(&(t.len() as i32).to_le_bytes());
            if let Ok(all) = std::str::from_utf8(&t.bytes) {
                // Plain UTF-8: boundaries count UTF-16 units value by value.
                let mut units = 0i64;
                let mut start = 0usize;
                for &end in &t.ends {
                    let s = all.get(start..end).unwrap_or_default();
                    units += if s.is_ascii() {
                        s.len()
                    } else {
                        s.encode_utf16().count()
                    } as i64;
                    out.extend_from_slice(&(units as i32).to_le_bytes());
                    start = end;
                }
                put_string(out, all);
            } else {
                // Values holding halves of surrogate pairs: join the UTF-16
                // units, so halves that meet pair up again (a value split
                // inside a pair is written back as it was read).
                let mut units: Vec<u16> = Vec::new();
                for i in 0..t.len() {
                    units.extend(t.utf16(i).unwrap_or_default());
                    out.extend_from_slice(&(units.len() as i32).to_le_bytes());
                }
                put_string(out, &String::from_utf16_lossy(&units));
            }
        }
        Values::DateTimeOffset(x) => {
            le!(out, x.iter().map(|d| d.offset_minutes));
            le!(out, x.iter().map(|d| d.ticks));
        }
        Values::RowId(x) => {
            for r in x {
                out.extend_from_slice(&(*r as u64).to_le_bytes());
                out.extend_from_slice(&((*r >> 64) as u64).to_le_bytes());
            }
        }
        Values::Key(x) => {
            let width = match t {
                ItemType::Key { width, .. } => width,
                _ => KeyWidth::U64,
            };
            for k in x {
                let b = k.to_le_bytes();
                out.extend_from_slice(b.get(..width.size()).unwrap_or_default());
            }
        }
        Values::Vector(_) => {}
    }
}

fn encode_vbuffer(item: ItemType, size: u32, vv: &VectorValues, out: &mut Vec<u8>) {
    let n = vv.len();
    out.extend_from_slice(&(n as i32).to_le_bytes());
    // Fixed size: the type's; variable: the common length when every vector
    // has the same non-zero one (then no lengths array), else 0 and lengths.
    let common = if size > 0 {
        size
    } else {
        let first = vv.get(0).map_or(0, |r| r.length);
        if first > 0 && (0..n).all(|i| vv.get(i).is_some_and(|r| r.length == first)) {
            first
        } else {
            0
        }
    };
    out.extend_from_slice(&(common as i32).to_le_bytes());
    if common == 0 {
        for i in 0..n {
            out.extend_from_slice(&(vv.get(i).map_or(0, |r| r.length) as i32).to_le_bytes());
        }
    }
    // A sparse vector with every slot stored is dense.
    let dense = |i: usize| {
        vv.get(i)
            .is_none_or(|r| r.indices.is_none_or(|ix| ix.len() as u32 >= r.length))
    };
    for i in 0..n {
        let c = match vv.get(i) {
            Some(r) if !dense(i) => r.indices.map_or(-1, |ix| ix.len() as i32),
            _ => -1,
        };
        out.extend_from_slice(&c.to_le_bytes());
    }
    let nidx: usize = (0..n)
        .filter(|&i| !dense(i))
        .filter_map(|i| vv.get(i).and_then(|r| r.indices.map(<[u32]>::len)))
        .sum();
    out.extend_from_slice(&(nidx as i32).to_le_bytes());
    for i in (0..n).filter(|&i| !dense(i)) {
        if let Some(ix) = vv.get(i).and_then(|r| r.indices) {
            for x in ix {
                out.extend_from_slice(&(*x as i32).to_le_bytes());
            }
        }
    }
    // The explicit values, in vector order, as one block of the item codec.
    encode_items(item, vv.values(), out);
}
