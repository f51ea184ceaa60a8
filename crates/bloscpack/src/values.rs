//! numpy-typed bytes as JSON values (what `dataformats dump` prints and the
//! conformance sidecars use for `content.head`): ints as ints, bools as bools, floats widened to double
//! (NaN as "nan", infinities as "inf"/"-inf"), complex as [re, im], byte
//! strings as latin-1 and UCS-4 text as strings without trailing NULs,
//! datetimes as their int64, records as lists of field values.

use crate::dtype::{ByteOrder, Dtype, Scalar, ScalarKind};
use crate::error::{Error, ErrorKind};
use serde_json::{Value, json};

/// `b` as an `N`-byte array in little-endian order; `None` unless `b` is
/// exactly `N` bytes long.
fn exact<const N: usize>(b: &[u8], big: bool) -> Option<[u8; N]> {
    let mut a: [u8; N] = b.try_into().ok()?;
    if big {
        a.reverse();
    }
    Some(a)
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

/// One scalar from exactly `s.itemsize` bytes (`None` for any other length).
fn scalar(s: &Scalar, b: &[u8]) -> Option<Value> {
    if b.len() != s.itemsize {
        return None;
    }
    let big = s.order == ByteOrder::Big;
    Some(match (s.kind, s.itemsize) {
        (ScalarKind::Bool, _) => json!(b.iter().any(|&x| x != 0)),
        (ScalarKind::Int, 1) => json!(i8::from_le_bytes(exact(b, big)?)),
        (ScalarKind::Int, 2) => json!(i16::from_le_bytes(exact(b, big)?)),
        (ScalarKind::Int, 4) => json!(i32::from_le_bytes(exact(b, big)?)),
        (ScalarKind::Int | ScalarKind::Datetime | ScalarKind::Timedelta, 8) => {
            json!(i64::from_le_bytes(exact(b, big)?))
        }
        (ScalarKind::UInt, 1) => json!(u8::from_le_bytes(exact(b, big)?)),
        (ScalarKind::UInt, 2) => json!(u16::from_le_bytes(exact(b, big)?)),
        (ScalarKind::UInt, 4) => json!(u32::from_le_bytes(exact(b, big)?)),
        (ScalarKind::UInt, 8) => json!(u64::from_le_bytes(exact(b, big)?)),
        (ScalarKind::Float, 2) => float(f16_to_f64(u16::from_le_bytes(exact(b, big)?))),
        (ScalarKind::Float, 4) => float(f64::from(f32::from_le_bytes(exact(b, big)?))),
        (ScalarKind::Float, 8) => float(f64::from_le_bytes(exact(b, big)?)),
        (ScalarKind::Complex, 8) => {
            let (re, im) = b.split_at(4);
            json!([
                float(f64::from(f32::from_le_bytes(exact(re, big)?))),
                float(f64::from(f32::from_le_bytes(exact(im, big)?)))
            ])
        }
        (ScalarKind::Complex, 16) => {
            let (re, im) = b.split_at(8);
            json!([
                float(f64::from_le_bytes(exact(re, big)?)),
                float(f64::from_le_bytes(exact(im, big)?))
            ])
        }
        (ScalarKind::Bytes, _) => {
            let end = b.iter().rposition(|&c| c != 0).map_or(0, |p| p + 1);
            json!(
                b.iter()
                    .take(end)
                    .map(|&c| char::from(c))
                    .collect::<String>()
            )
        }
        (ScalarKind::Unicode, _) => {
            let chars = b.chunks_exact(4);
            if !chars.remainder().is_empty() {
                return None;
            }
            let mut text = String::with_capacity(b.len() / 4);
            for c in chars {
                let unit = u32::from_le_bytes(exact(c, big)?);
                text.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
            }
            while text.ends_with('\0') {
                text.pop();
            }
            json!(text)
        }
        // Sizes numpy does not give these kinds (and kinds with no number
        // form): the raw bytes.
        _ => json!(b.to_vec()),
    })
}

/// One element from exactly `dtype.itemsize()` bytes (`None` otherwise).
fn render(dtype: &Dtype, b: &[u8]) -> Option<Value> {
    match dtype {
        Dtype::Scalar(s) => scalar(s, b),
        Dtype::Record(fields) => {
            if b.len() != dtype.itemsize() {
                return None;
            }
            let mut rest = b;
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                let size = f.dtype.itemsize();
                if f.shape.is_empty() {
                    let (field, tail) = rest.split_at_checked(size)?;
                    out.push(render(&f.dtype, field)?);
                    rest = tail;
                } else {
                    let n = usize::try_from(f.shape.iter().product::<u64>()).ok()?;
                    let (field, tail) = rest.split_at_checked(size.checked_mul(n)?)?;
                    let vals = if size == 0 {
                        let zero = render(&f.dtype, &[])?;
                        vec![zero; n]
                    } else {
                        field
                            .chunks_exact(size)
                            .map(|e| render(&f.dtype, e))
                            .collect::<Option<Vec<_>>>()?
                    };
                    out.push(Value::Array(vals));
                    rest = tail;
                }
            }
            Some(Value::Array(out))
        }
    }
}

/// One element of `dtype` read from `b`, which must hold exactly one element
/// (`dtype.itemsize()` bytes); any other length is a `SizeMismatch` error.
pub fn element(dtype: &Dtype, b: &[u8]) -> Result<Value, Error> {
    render(dtype, b).ok_or_else(|| {
        Error::new(
            ErrorKind::SizeMismatch,
            format!(
                "an element of dtype {dtype} is {} bytes, given {}",
                dtype.itemsize(),
                b.len()
            ),
        )
    })
}

/// The first `max` whole elements of `payload` read as `dtype` (byte values
/// when `dtype` is `None`). Bytes after the last whole element are not shown;
/// a zero-size dtype shows no elements.
pub fn head(dtype: Option<&Dtype>, payload: &[u8], max: usize) -> Result<Value, Error> {
    match dtype {
        None => Ok(json!(
            payload.iter().take(max).copied().collect::<Vec<u8>>()
        )),
        Some(d) if d.itemsize() == 0 => Ok(Value::Array(Vec::new())),
        Some(d) => payload
            .chunks_exact(d.itemsize())
            .take(max)
            .map(|e| element(d, e))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(d: &Dtype, b: &[u8]) -> Value {
        element(d, b).unwrap()
    }

    #[test]
    fn renders_every_kind() {
        let d = |s: &str| Dtype::parse_python_literal(s).unwrap();
        assert_eq!(el(&d("'<i2'"), &(-5i16).to_le_bytes()), json!(-5));
        assert_eq!(el(&d("'>i4'"), &7i32.to_be_bytes()), json!(7));
        assert_eq!(el(&d("'|b1'"), &[1]), json!(true));
        assert_eq!(el(&d("'<f4'"), &1.5f32.to_le_bytes()), json!(1.5));
        assert_eq!(el(&d("'<f8'"), &f64::NAN.to_le_bytes()), json!("nan"));
        assert_eq!(
            el(&d("'<f8'"), &f64::NEG_INFINITY.to_le_bytes()),
            json!("-inf")
        );
        assert_eq!(el(&d("'<f2'"), &0x3c00u16.to_le_bytes()), json!(1.0));
        assert_eq!(el(&d("'<f2'"), &0xc000u16.to_le_bytes()), json!(-2.0));
        assert_eq!(
            el(
                &d("'<c8'"),
                &[1.0f32.to_le_bytes(), 2.0f32.to_le_bytes()].concat()
            ),
            json!([1.0, 2.0])
        );
        assert_eq!(el(&d("'|S4'"), b"ab\0\0"), json!("ab"));
        assert_eq!(el(&d("'<U2'"), &[0x41u8, 0, 0, 0, 0, 0, 0, 0]), json!("A"));
        assert_eq!(el(&d("'<M8[s]'"), &99i64.to_le_bytes()), json!(99));
        let rec = d("[('x', '<f4'), ('v', '<i2', (2,))]");
        let mut b = 0.5f32.to_le_bytes().to_vec();
        b.extend_from_slice(&3i16.to_le_bytes());
        b.extend_from_slice(&4i16.to_le_bytes());
        assert_eq!(el(&rec, &b), json!([0.5, [3, 4]]));
        assert_eq!(head(None, &[1, 2, 3], 2).unwrap(), json!([1, 2]));
        assert_eq!(
            head(Some(&d("'<u2'")), &[1, 0, 2, 0, 3], 8).unwrap(),
            json!([1, 2])
        );
    }

    #[test]
    fn only_exact_elements_render() {
        let d = |s: &str| Dtype::parse_python_literal(s).unwrap();
        let cases: [(&str, usize); 6] = [
            ("'<i4'", 4),
            ("'>f8'", 8),
            ("'<c8'", 8),
            ("'<U2'", 8),
            ("'|S3'", 3),
            ("[('x', '<f4'), ('v', '<i2', (2,))]", 8),
        ];
        for (text, size) in cases {
            let dtype = d(text);
            assert_eq!(dtype.itemsize(), size, "{text}");
            let bytes = vec![1u8; size + 1];
            assert!(element(&dtype, &bytes[..size]).is_ok(), "{text}");
            for len in (0..size).chain([size + 1]) {
                let e = element(&dtype, &bytes[..len]).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::SizeMismatch, "{text} given {len}");
                assert!(
                    e.to_string()
                        .contains(&format!("is {size} bytes, given {len}")),
                    "{e}"
                );
            }
        }
        // A trailing partial element is not shown; a zero-size dtype shows none.
        assert_eq!(head(Some(&d("'<i2'")), &[1, 0, 2], 8).unwrap(), json!([1]));
        assert_eq!(head(Some(&d("'|S0'")), &[1, 2], 8).unwrap(), json!([]));
    }
}
