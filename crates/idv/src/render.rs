//! Text forms of values (`idv.md` §13.3) and the canonical serialization
//! behind the content hashes (§13.2).

use std::fmt::Write as _;

use crate::types::{ColumnType, ItemType, KeyWidth};
use crate::values::{DateTimeOffset, Values, wtf8_to_str_lossy};

const TICKS_PER_DAY: u64 = 864_000_000_000;

/// A TimeSpan as `[-][d.]hh:mm:ss[.fffffff]`.
pub fn timespan_string(ticks: i64) -> String {
    let neg = ticks < 0;
    let t = ticks.unsigned_abs();
    let days = t / TICKS_PER_DAY;
    let rem = t % TICKS_PER_DAY;
    let (h, m, s, f) = (
        rem / 36_000_000_000,
        rem / 600_000_000 % 60,
        rem / 10_000_000 % 60,
        rem % 10_000_000,
    );
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if days > 0 {
        let _ = write!(out, "{days}.");
    }
    let _ = write!(out, "{h:02}:{m:02}:{s:02}");
    if f > 0 {
        let _ = write!(out, ".{f:07}");
    }
    out
}

/// A DateTime (ticks since 0001-01-01) as `yyyy-MM-ddTHH:mm:ss.fffffff`.
pub fn datetime_string(ticks: i64) -> String {
    let t = ticks.max(0) as u64;
    let days = (t / TICKS_PER_DAY) as i64;
    let rem = t % TICKS_PER_DAY;
    // Days since 0001-01-01 to a civil date (proleptic Gregorian), via
    // days since 0000-03-01.
    let z = days + 306;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:07}",
        rem / 36_000_000_000,
        rem / 600_000_000 % 60,
        rem / 10_000_000 % 60,
        rem % 10_000_000
    )
}

/// A DateTimeOffset as its clock time and `+hh:mm` / `-hh:mm`.
pub fn datetimeoffset_string(v: DateTimeOffset) -> String {
    let o = i32::from(v.offset_minutes);
    let sign = if o < 0 { '-' } else { '+' };
    let a = o.unsigned_abs();
    format!(
        "{}{sign}{:02}:{:02}",
        datetime_string(v.ticks),
        a / 60,
        a % 60
    )
}

use dataformats_core::text::push_json_string as json_str;

fn json_f32(out: &mut String, x: f32) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        dataformats_core::text::push_f32_display(out, x);
    }
}

fn json_f64(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        dataformats_core::text::push_f64_display(out, x);
    }
}

/// The value of an `Option`; when there is none (an index past the end of
/// the values), writes `absent` to `out` (if given) and returns from the
/// function.
macro_rules! present {
    ($out:expr, $absent:expr, $e:expr) => {
        match $e {
            Some(v) => v,
            None => {
                $out.push_str($absent);
                return;
            }
        }
    };
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

/// Writes scalar `i` of flat `v` as JSON (`null` past the end of `v`).
fn json_scalar(out: &mut String, v: &Values, i: usize) {
    let _ = match v {
        Values::I8(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::U8(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::I16(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::U16(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::I32(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::U32(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::I64(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::U64(x) | Values::Key(x) => {
            write!(out, "{}", present!(out, "null", x.get(i).copied()))
        }
        Values::F32(x) => {
            json_f32(out, present!(out, "null", x.get(i).copied()));
            Ok(())
        }
        Values::F64(x) => {
            json_f64(out, present!(out, "null", x.get(i).copied()));
            Ok(())
        }
        Values::Bool(x) => write!(out, "{}", present!(out, "null", x.get(i).copied())),
        Values::Text(t) => {
            json_str(out, &wtf8_to_str_lossy(present!(out, "null", t.wtf8(i))));
            Ok(())
        }
        Values::TimeSpan(x) => {
            json_str(
                out,
                &timespan_string(present!(out, "null", x.get(i).copied())),
            );
            Ok(())
        }
        Values::DateTime(x) => {
            json_str(
                out,
                &datetime_string(present!(out, "null", x.get(i).copied())),
            );
            Ok(())
        }
        Values::DateTimeOffset(x) => {
            json_str(
                out,
                &datetimeoffset_string(present!(out, "null", x.get(i).copied())),
            );
            Ok(())
        }
        Values::RowId(x) => write!(out, "\"{:032x}\"", present!(out, "null", x.get(i).copied())),
        Values::Vector(_) => write!(out, "null"),
    };
}

/// Row `i` of `v` as JSON text, as the sidecars' `head` renders it: scalars
/// as numbers, strings or booleans; a stored-dense vector of at most 64
/// values as a list, a longer one as `{"length", "dense_head"}`, a sparse
/// one as `{"length", "indices", "values"}` (first 64 entries).
pub fn json_value(v: &Values, i: usize) -> String {
    let mut out = String::new();
    push_json_value(&mut out, v, i);
    out
}

/// [`json_value`], appended to `out` (no allocation of its own for a
/// scalar).
pub fn push_json_value(out: &mut String, v: &Values, i: usize) {
    match v {
        Values::Vector(vv) => {
            let Some(r) = vv.get(i) else {
                out.push_str("null");
                return;
            };
            let items = vv.values();
            match r.indices {
                None if r.length <= 64 => {
                    out.push('[');
                    for (k, j) in r.values.clone().enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        json_scalar(out, items, j);
                    }
                    out.push(']');
                }
                None => {
                    let _ = write!(out, "{{\"length\": {}, \"dense_head\": [", r.length);
                    for (k, j) in r.values.clone().take(16).enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        json_scalar(out, items, j);
                    }
                    out.push_str("]}");
                }
                Some(ix) => {
                    let _ = write!(out, "{{\"length\": {}, \"indices\": [", r.length);
                    for (k, x) in ix.iter().take(64).enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        let _ = write!(out, "{x}");
                    }
                    out.push_str("], \"values\": [");
                    for (k, j) in r.values.clone().take(64).enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        json_scalar(out, items, j);
                    }
                    out.push_str("]}");
                }
            }
        }
        flat => json_scalar(out, flat, i),
    }
}

/// Scalar `i` of flat `v` as plain text (for CSV): numbers as in JSON,
/// text as is, times in their string forms, `NaN`/`Infinity` bare; empty
/// past the end of `v`.
pub fn text_scalar(v: &Values, i: usize) -> String {
    let mut out = String::new();
    push_text_scalar(&mut out, v, i);
    out
}

/// [`text_scalar`], appended to `out` (no allocation of its own for a
/// number or a text).
pub fn push_text_scalar(out: &mut String, v: &Values, i: usize) {
    if i >= v.len() {
        return;
    }
    match v {
        Values::Text(t) => out.push_str(&wtf8_to_str_lossy(present!(out, "", t.wtf8(i)))),
        Values::TimeSpan(x) => out.push_str(&timespan_string(present!(out, "", x.get(i).copied()))),
        Values::DateTime(x) => out.push_str(&datetime_string(present!(out, "", x.get(i).copied()))),
        Values::DateTimeOffset(x) => {
            out.push_str(&datetimeoffset_string(present!(out, "", x.get(i).copied())));
        }
        other => {
            let start = out.len();
            push_json_value(out, other, i);
            let piece = out.get(start..).unwrap_or_default();
            let trimmed = piece.trim_matches('"');
            if trimmed.len() != piece.len() {
                let kept = trimmed.to_string();
                out.truncate(start);
                out.push_str(&kept);
            }
        }
    }
}

fn key_width(ty: &ColumnType) -> KeyWidth {
    match ty.item() {
        ItemType::Key { width, .. } => width,
        _ => KeyWidth::U64,
    }
}

/// Feeds the canonical bytes (§13.2) of flat value `i` to `out` (nothing
/// past the end of `v`).
fn canon_scalar(v: &Values, i: usize, width: KeyWidth, out: &mut dyn FnMut(&[u8])) {
    match v {
        Values::I8(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::U8(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::I16(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::U16(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::I32(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::U32(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::I64(x) | Values::TimeSpan(x) | Values::DateTime(x) => {
            out(&present!(x.get(i).copied()).to_le_bytes())
        }
        Values::U64(x) => out(&present!(x.get(i).copied()).to_le_bytes()),
        Values::F32(x) => out(&present!(x.get(i).copied()).to_bits().to_le_bytes()),
        Values::F64(x) => out(&present!(x.get(i).copied()).to_bits().to_le_bytes()),
        Values::Bool(x) => out(&[u8::from(present!(x.get(i).copied()))]),
        Values::Text(t) => {
            let b = present!(t.wtf8(i));
            out(&(b.len() as u32).to_le_bytes());
            out(b);
        }
        Values::DateTimeOffset(x) => {
            let d = present!(x.get(i).copied());
            out(&d.ticks.to_le_bytes());
            out(&d.offset_minutes.to_le_bytes());
        }
        Values::RowId(x) => {
            let r = present!(x.get(i).copied());
            out(&(r as u64).to_le_bytes());
            out(&((r >> 64) as u64).to_le_bytes());
        }
        Values::Key(x) => {
            let k = present!(x.get(i).copied()).to_le_bytes();
            out(present!(k.get(..width.size())));
        }
        Values::Vector(_) => {}
    }
}

/// The canonical bytes of an item type's default value.
fn canon_default(t: ItemType, out: &mut dyn FnMut(&[u8])) {
    match t {
        ItemType::Text => out(&[0, 0, 0, 0]),
        ItemType::Bool => out(&[0]),
        ItemType::Key { width, .. } => out([0u8; 8].get(..width.size()).unwrap_or_default()),
        other => {
            let n = other.fixed_size().unwrap_or(0);
            out([0u8; 16].get(..n).unwrap_or_default());
        }
    }
}

/// Feeds the canonical bytes (§13.2) of every row of `v` (of type `ty`) to
/// `out`: vectors as their length then every slot, sparse ones densified.
pub fn canonical_bytes(ty: &ColumnType, v: &Values, out: &mut dyn FnMut(&[u8])) {
    let width = key_width(ty);
    match v {
        Values::Vector(vv) => {
            let item = ty.item();
            for i in 0..vv.len() {
                let Some(r) = vv.get(i) else { continue };
                out(&r.length.to_le_bytes());
                match r.indices {
                    None => {
                        for j in r.values.clone() {
                            canon_scalar(vv.values(), j, width, out);
                        }
                    }
                    Some(ix) => {
                        let mut next = 0u32;
                        for (k, &slot) in ix.iter().enumerate() {
                            for _ in next..slot {
                                canon_default(item, out);
                            }
                            canon_scalar(vv.values(), r.values.start + k, width, out);
                            next = slot + 1;
                        }
                        for _ in next..r.length {
                            canon_default(item, out);
                        }
                    }
                }
            }
        }
        flat => {
            for i in 0..flat.len() {
                canon_scalar(flat, i, width, out);
            }
        }
    }
}

fn digits(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `hh:mm:ss[.f…]` (fraction of up to 7 digits) to ticks within a day.
fn clock_ticks(s: &str) -> Option<u64> {
    let (hms, frac) = match s.split_once('.') {
        Some((a, f)) if !f.is_empty() && f.len() <= 7 => (a, Some(f)),
        Some(_) => return None,
        None => (s, None),
    };
    let mut it = hms.split(':');
    let (h, m, sec) = (
        digits(it.next()?)?,
        digits(it.next()?)?,
        digits(it.next()?)?,
    );
    if it.next().is_some() || h > 23 || m > 59 || sec > 59 {
        return None;
    }
    let f = match frac {
        Some(f) => digits(f)? * 10u64.pow(7 - f.len() as u32),
        None => 0,
    };
    Some(h * 36_000_000_000 + m * 600_000_000 + sec * 10_000_000 + f)
}

/// Parses the [`timespan_string`] form (`[-][d.]hh:mm:ss[.fffffff]`).
pub fn parse_timespan(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    // A day count is the part before a '.' that comes before the first ':'.
    let colon = body.find(':')?;
    let (days, clock) = match body.get(..colon).and_then(|h| h.find('.')) {
        Some(dot) => (digits(body.get(..dot)?)?, body.get(dot + 1..)?),
        None => (0, body),
    };
    let t = i128::from(days) * i128::from(TICKS_PER_DAY) + i128::from(clock_ticks(clock)?);
    let t = if neg { -t } else { t };
    i64::try_from(t).ok()
}

/// Days since 0001-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u64, d: u64) -> Option<i64> {
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || d == 0 {
        return None;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mdays = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if d > *mdays.get(m as usize - 1)? {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp as i64 + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 306)
}

/// Parses `yyyy-MM-ddTHH:mm:ss[.f…]` (a space may replace the `T`; the
/// time may be left out) to DateTime ticks.
pub fn parse_datetime(s: &str) -> Option<i64> {
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut it = date.split('-');
    let (y, m, d) = (
        digits(it.next()?)?,
        digits(it.next()?)?,
        digits(it.next()?)?,
    );
    if it.next().is_some() {
        return None;
    }
    let days = days_from_civil(y as i64, m, d)?;
    let clock = match time {
        Some(t) => clock_ticks(t)?,
        None => 0,
    };
    Some(days * TICKS_PER_DAY as i64 + clock as i64)
}

/// Parses the [`datetimeoffset_string`] form.
pub fn parse_datetimeoffset(s: &str) -> Option<DateTimeOffset> {
    let cut = s.len().checked_sub(6)?;
    let (dt, off) = (s.get(..cut)?, s.get(cut..)?);
    let sign = match off.get(..1)? {
        "+" => 1,
        "-" => -1,
        _ => return None,
    };
    let (h, m) = off.get(1..)?.split_once(':')?;
    let minutes = (digits(h)? * 60 + digits(m)?) as i64 * sign;
    Some(DateTimeOffset {
        ticks: parse_datetime(dt)?,
        offset_minutes: i16::try_from(minutes).ok()?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An index past the end renders as absent, never as a made-up 0.
    #[test]
    fn past_the_end_is_absent() {
        let v = Values::I32(vec![7, -3]);
        assert_eq!(json_value(&v, 1), "-3");
        assert_eq!(json_value(&v, 2), "null");
        assert_eq!(text_scalar(&v, 1), "-3");
        assert_eq!(text_scalar(&v, 2), "");
        let t = Values::TimeSpan(vec![0]);
        assert_eq!(json_value(&t, 1), "null");
        assert_eq!(text_scalar(&t, 1), "");
    }

    #[test]
    fn time_strings_round_trip() {
        for t in [
            0i64,
            1,
            -1,
            864_000_000_000,
            -864_000_000_000,
            1_234_567_891_234,
            i64::MAX,
            i64::MIN + 1,
        ] {
            assert_eq!(
                parse_timespan(&timespan_string(t)),
                Some(t),
                "{}",
                timespan_string(t)
            );
        }
        assert_eq!(timespan_string(-1), "-00:00:00.0000001");
        assert_eq!(timespan_string(-864_000_000_000), "-1.00:00:00");
        for t in [
            0i64,
            1,
            crate::MAX_TICKS,
            633_979_008_000_000_000,
            636_503_616_001_234_567,
        ] {
            assert_eq!(
                parse_datetime(&datetime_string(t)),
                Some(t),
                "{}",
                datetime_string(t)
            );
        }
        assert_eq!(
            datetime_string(crate::MAX_TICKS),
            "9999-12-31T23:59:59.9999999"
        );
        assert_eq!(
            datetime_string(633_979_008_000_000_000),
            "2010-01-01T00:00:00.0000000"
        );
        let d = DateTimeOffset {
            ticks: 633_979_008_000_000_000,
            offset_minutes: -330,
        };
        assert_eq!(
            datetimeoffset_string(d),
            "2010-01-01T00:00:00.0000000-05:30"
        );
        assert_eq!(parse_datetimeoffset(&datetimeoffset_string(d)), Some(d));
        assert_eq!(parse_datetime("2010-02-30"), None);
        assert_eq!(parse_timespan("1:2"), None);
    }
}
