//! numpy-typed bytes as JSON values (what `dataformats dump` prints and the
//! conformance sidecars use for `content.head`): ints as ints, bools as bools, floats widened to double
//! (NaN as "nan", infinities as "inf"/"-inf"), complex as [re, im], byte
//! strings as latin-1 and UCS-4 text as strings without trailing NULs,
//! datetimes as their int64, records as lists of field values.

use crate::dtype::{ByteOrder, Dtype, Scalar, ScalarKind};
use serde_json::{Value, json};

fn take<const N: usize>(b: &[u8], big: bool) -> [u8; N] {
    let mut a = [0u8; N];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    if big {
        a.reverse();
    }
    a
}

fn float(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

fn scalar(s: &Scalar, b: &[u8]) -> Value {
    let big = s.order == ByteOrder::Big;
    match (s.kind, s.itemsize) {
        (ScalarKind::Bool, _) => json!(b.first().is_some_and(|&x| x != 0)),
        (ScalarKind::Int, 1) => json!(i8::from_le_bytes(take(b, big))),
        (ScalarKind::Int, 2) => json!(i16::from_le_bytes(take(b, big))),
        (ScalarKind::Int, 4) => json!(i32::from_le_bytes(take(b, big))),
        (ScalarKind::Int, 8) | (ScalarKind::Datetime, _) | (ScalarKind::Timedelta, _) => {
            json!(i64::from_le_bytes(take(b, big)))
        }
        (ScalarKind::UInt, 1) => json!(u8::from_le_bytes(take(b, big))),
        (ScalarKind::UInt, 2) => json!(u16::from_le_bytes(take(b, big))),
        (ScalarKind::UInt, 4) => json!(u32::from_le_bytes(take(b, big))),
        (ScalarKind::UInt, 8) => json!(u64::from_le_bytes(take(b, big))),
        (ScalarKind::Float, 2) => float(f16_to_f64(u16::from_le_bytes(take(b, big)))),
        (ScalarKind::Float, 4) => float(f64::from(f32::from_le_bytes(take(b, big)))),
        (ScalarKind::Float, 8) => float(f64::from_le_bytes(take(b, big))),
        (ScalarKind::Complex, n) => {
            let half = n / 2;
            let part = |p: &[u8]| match half {
                4 => float(f64::from(f32::from_le_bytes(take(p, big)))),
                _ => float(f64::from_le_bytes(take(p, big))),
            };
            json!([
                part(b.get(..half).unwrap_or_default()),
                part(b.get(half..).unwrap_or_default())
            ])
        }
        (ScalarKind::Bytes, _) => {
            let end = b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
            json!(
                b.get(..end)
                    .unwrap_or_default()
                    .iter()
                    .map(|&c| char::from(c))
                    .collect::<String>()
            )
        }
        (ScalarKind::Unicode, _) => {
            let mut s: String = b
                .chunks_exact(4)
                .map(|c| char::from_u32(u32::from_le_bytes(take(c, big))).unwrap_or('\u{fffd}'))
                .collect();
            while s.ends_with('\0') {
                s.pop();
            }
            json!(s)
        }
        _ => json!(b.to_vec()),
    }
}

/// One element of `dtype` read from the start of `b` (missing bytes read as 0).
pub fn element(dtype: &Dtype, b: &[u8]) -> Value {
    match dtype {
        Dtype::Scalar(s) => scalar(s, b),
        Dtype::Record(fields) => {
            let mut off = 0usize;
            let mut out = Vec::new();
            for f in fields {
                let size = f.dtype.itemsize();
                let n: u64 = f.shape.iter().product();
                let part = |o: usize| b.get(o..o + size).unwrap_or_default();
                if f.shape.is_empty() {
                    out.push(element(&f.dtype, part(off)));
                    off += size;
                } else {
                    let vals: Vec<Value> = (0..n as usize)
                        .map(|k| element(&f.dtype, part(off + k * size)))
                        .collect();
                    out.push(Value::Array(vals));
                    off += size * n as usize;
                }
            }
            Value::Array(out)
        }
    }
}

/// The first `max` elements of `payload` read as `dtype` (byte values when
/// `dtype` is `None`).
pub fn head(dtype: Option<&Dtype>, payload: &[u8], max: usize) -> Value {
    match dtype {
        None => json!(payload.iter().take(max).copied().collect::<Vec<u8>>()),
        Some(d) => {
            let size = d.itemsize().max(1);
            Value::Array(
                payload
                    .chunks_exact(size)
                    .take(max)
                    .map(|e| element(d, e))
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_kind() {
        let d = |s: &str| Dtype::parse_python_literal(s).unwrap();
        assert_eq!(element(&d("'<i2'"), &(-5i16).to_le_bytes()), json!(-5));
        assert_eq!(element(&d("'>i4'"), &7i32.to_be_bytes()), json!(7));
        assert_eq!(element(&d("'|b1'"), &[1]), json!(true));
        assert_eq!(element(&d("'<f4'"), &1.5f32.to_le_bytes()), json!(1.5));
        assert_eq!(element(&d("'<f8'"), &f64::NAN.to_le_bytes()), json!("nan"));
        assert_eq!(
            element(&d("'<f8'"), &f64::NEG_INFINITY.to_le_bytes()),
            json!("-inf")
        );
        assert_eq!(element(&d("'<f2'"), &0x3c00u16.to_le_bytes()), json!(1.0));
        assert_eq!(element(&d("'<f2'"), &0xc000u16.to_le_bytes()), json!(-2.0));
        assert_eq!(
            element(
                &d("'<c8'"),
                &[1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat()
            ),
            json!([1.0, 2.0])
        );
        assert_eq!(element(&d("'|S4'"), b"ab\0\0"), json!("ab"));
        assert_eq!(
            element(&d("'<U2'"), &[0x41u8, 0, 0, 0, 0, 0, 0, 0]),
            json!("A")
        );
        assert_eq!(element(&d("'<M8[s]'"), &99i64.to_le_bytes()), json!(99));
        let rec = d("[('x', '<f4'), ('v', '<i2', (2,))]");
        let mut b = 0.5f32.to_le_bytes().to_vec();
        b.extend_from_slice(&3i16.to_le_bytes());
        b.extend_from_slice(&4i16.to_le_bytes());
        assert_eq!(element(&rec, &b), json!([0.5, [3, 4]]));
        assert_eq!(head(None, &[1, 2, 3], 2), json!([1, 2]));
        assert_eq!(head(Some(&d("'<u2'")), &[1, 0, 2, 0, 3], 8), json!([1, 2]));
    }
}
