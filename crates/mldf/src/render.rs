//! Values as JSON text, in the vocabulary of the conformance sidecars
//! (`vectors/mldf/README.md`): blobs as `{"len", "sha256", "hex"}`,
//! non-finite floats as `{"nonfinite", "bits"}`, NDARRAY `values` as
//! nested lists, JSON values embedded as parsed.

use std::fmt::Write as _;

use dataformats_core::ChecksumKind;

use crate::format::{Dtype, FieldType};
use crate::read::Value;

use dataformats_core::text::push_json_string as json_str;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `"len": n, "sha256": "...", ["hex": "..."]` (without braces).
fn blob_members(out: &mut String, b: &[u8]) {
    let _ = write!(
        out,
        "\"len\": {}, \"sha256\": \"{}\"",
        b.len(),
        ChecksumKind::Sha256.digest(b).to_hex()
    );
    if b.len() <= 32 {
        let _ = write!(out, ", \"hex\": \"{}\"", hex(b));
    }
}

fn finite_or(out: &mut String, x: f64, bits: u64, hex_digits: usize) {
    if x.is_finite() {
        dataformats_core::text::push_f64_debug(out, x);
    } else {
        let name = if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        let _ = write!(
            out,
            "{{\"nonfinite\": \"{name}\", \"bits\": \"0x{bits:0hex_digits$x}\"}}"
        );
    }
}

/// IEEE binary16 to f64 (exact).
pub fn f16_to_f64(h: u16) -> f64 {
    let s = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let e = i32::from((h >> 10) & 0x1f);
    let m = f64::from(h & 0x3ff);
    match e {
        0 => s * m * 2f64.powi(-24),
        31 if m == 0.0 => s * f64::INFINITY,
        31 => f64::NAN,
        _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// `b` as a little-endian number of `N` bytes, widened to `u64`; `None`
/// unless `b` is exactly `N` bytes long.
fn le<const N: usize>(b: &[u8]) -> Option<u64> {
    let a: [u8; N] = b.try_into().ok()?;
    let mut wide = [0u8; 8];
    wide.get_mut(..N)?.copy_from_slice(&a);
    Some(u64::from_le_bytes(wide))
}

/// One element from exactly `dt.size()` bytes (`None` for any other length).
fn element(out: &mut String, dt: Dtype, b: &[u8]) -> Option<()> {
    let _ = match dt {
        Dtype::Bool => write!(out, "{}", le::<1>(b)? != 0),
        Dtype::U8 => write!(out, "{}", le::<1>(b)?),
        Dtype::I8 => write!(out, "{}", le::<1>(b)? as u8 as i8),
        Dtype::U16 => write!(out, "{}", le::<2>(b)?),
        Dtype::I16 => write!(out, "{}", le::<2>(b)? as u16 as i16),
        Dtype::U32 => write!(out, "{}", le::<4>(b)?),
        Dtype::I32 => write!(out, "{}", le::<4>(b)? as u32 as i32),
        Dtype::U64 => write!(out, "{}", le::<8>(b)?),
        Dtype::I64 => write!(out, "{}", le::<8>(b)? as i64),
        Dtype::F16 => {
            let bits = le::<2>(b)?;
            finite_or(out, f16_to_f64(bits as u16), bits, 4);
            Ok(())
        }
        Dtype::BF16 => {
            let bits = le::<2>(b)?;
            finite_or(out, f64::from(f32::from_bits((bits as u32) << 16)), bits, 4);
            Ok(())
        }
        Dtype::F32 => {
            let bits = le::<4>(b)?;
            finite_or(out, f64::from(f32::from_bits(bits as u32)), bits, 8);
            Ok(())
        }
        Dtype::F64 => {
            let bits = le::<8>(b)?;
            finite_or(out, f64::from_bits(bits), bits, 16);
            Ok(())
        }
    };
    Some(())
}

/// The array of `shape` in exactly its `b` bytes as nested lists (`None`
/// when `b` is not exactly the size the shape needs).
fn nested(out: &mut String, dt: Dtype, shape: &[u64], b: &[u8]) -> Option<()> {
    match shape.split_first() {
        None => element(out, dt, b),
        Some((&d, rest)) => {
            let inner = rest
                .iter()
                .try_fold(dt.size(), |n, &x| n.checked_mul(x))
                .and_then(|n| usize::try_from(n).ok())?;
            if u64::try_from(b.len()).ok()? != d.checked_mul(inner as u64)? {
                return None;
            }
            out.push('[');
            for k in 0..usize::try_from(d).ok()? {
                if k > 0 {
                    out.push_str(", ");
                }
                let s = k.checked_mul(inner)?;
                nested(out, dt, rest, b.get(s..s.checked_add(inner)?)?)?;
            }
            out.push(']');
            Some(())
        }
    }
}

/// One value of a field of type `ty` as JSON text.
pub fn value_json(ty: &FieldType, v: &Value<'_>) -> String {
    let mut out = String::new();
    match v {
        Value::Missing => out.push_str("null"),
        Value::Int(x) => {
            let _ = write!(out, "{x}");
        }
        Value::Float(x) => finite_or(&mut out, *x, x.to_bits(), 16),
        Value::Bytes(b) => {
            out.push('{');
            blob_members(&mut out, b);
            out.push('}');
        }
        Value::NdArray(b) => {
            out.push('{');
            blob_members(&mut out, b);
            if let FieldType::NdArray { dtype, shape } = ty
                && shape.iter().map(|&d| d.max(1)).product::<u64>() <= 256
            {
                let mut values = String::new();
                if nested(&mut values, *dtype, shape, b).is_some() {
                    out.push_str(", \"values\": ");
                    out.push_str(&values);
                }
            }
            out.push('}');
        }
        Value::Json(t) => {
            let _ = write!(out, "{{\"json\": {}}}", t.trim());
        }
        Value::Image {
            height,
            width,
            channels,
            mode,
            data,
        } => {
            out.push('{');
            blob_members(&mut out, data);
            let _ = write!(
                out,
                ", \"height\": {height}, \"width\": {width}, \"channels\": {channels}, \"mode\": {mode}}}"
            );
        }
        Value::Audio {
            num_samples,
            sample_rate,
            num_channels,
            bit_depth,
            codec,
            data,
        } => {
            out.push('{');
            blob_members(&mut out, data);
            let _ = write!(
                out,
                ", \"num_samples\": {num_samples}, \"sample_rate\": {sample_rate}, \"num_channels\": {num_channels}, \"bit_depth\": {bit_depth}, \"codec\": {codec}}}"
            );
        }
        Value::Text(t) => json_str(&mut out, t),
        Value::Tokens {
            encoding,
            num_tokens,
            data,
        } => {
            let ids = v.token_ids().unwrap_or_default();
            let _ = write!(
                out,
                "{{\"encoding\": {encoding}, \"num_tokens\": {num_tokens}, \"count\": {}",
                ids.len()
            );
            if ids.len() <= 1024 {
                let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
                let _ = write!(out, ", \"tokens\": [{}]", list.join(", "));
            } else {
                out.push_str(", ");
                blob_members(&mut out, data);
            }
            out.push('}');
        }
        Value::Opaque(rec) => {
            let _ = write!(
                out,
                "{{\"opaque\": true, \"metadata_hex\": \"{}\"}}",
                hex(rec)
            );
        }
    }
    out
}

/// A field's arguments as JSON text (`{}` when it has none).
pub fn arguments_json(ty: &FieldType) -> String {
    match ty {
        FieldType::NdArray { dtype, shape } => {
            let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
            format!(
                "{{\"dtype\": \"{}\", \"shape\": [{}]}}",
                dtype.name(),
                dims.join(", ")
            )
        }
        FieldType::ImageJpeg { quality } => format!("{{\"quality\": {quality}}}"),
        FieldType::AudioWaveform { float } => {
            format!(
                "{{\"sample_format\": \"{}\"}}",
                if *float { "float" } else { "int" }
            )
        }
        FieldType::TextTokenized { vocab_size } => format!("{{\"vocab_size\": {vocab_size}}}"),
        _ => "{}".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn nd(dtype: Dtype, shape: &[u64], b: &[u8]) -> String {
        let ty = FieldType::NdArray {
            dtype,
            shape: shape.to_vec(),
        };
        value_json(&ty, &Value::NdArray(Cow::Borrowed(b)))
    }

    #[test]
    fn ndarray_values_only_from_exact_bytes() {
        let b: Vec<u8> = [1i16, -2, 3, -4, 5, -6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let full = nd(Dtype::I16, &[2, 3], &b);
        assert!(
            full.ends_with(", \"values\": [[1, -2, 3], [-4, 5, -6]]}"),
            "{full}"
        );
        let f = nd(Dtype::F32, &[1], &f32::NAN.to_le_bytes());
        assert!(
            f.contains("\"values\": [{\"nonfinite\": \"NaN\", \"bits\": \"0x7fc00000\"}]"),
            "{f}"
        );
        // One byte short or over: the blob is described, no values are made up.
        for bytes in [&b[..11], &[b.as_slice(), &[0]].concat()[..]] {
            let s = nd(Dtype::I16, &[2, 3], bytes);
            assert!(s.starts_with(&format!("{{\"len\": {}", bytes.len())), "{s}");
            assert!(!s.contains("values"), "{s}");
        }
        assert!(nd(Dtype::U8, &[0, 4], &[]).ends_with("\"values\": []}"));
    }
}
