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

fn element(out: &mut String, dt: Dtype, b: &[u8]) {
    let u = |n: usize| -> u64 {
        let mut a = [0u8; 8];
        for (d, s) in a.iter_mut().zip(b.iter().take(n)) {
            *d = *s;
        }
        u64::from_le_bytes(a)
    };
    let _ = match dt {
        Dtype::Bool => write!(out, "{}", u(1) != 0),
        Dtype::U8 => write!(out, "{}", u(1)),
        Dtype::I8 => write!(out, "{}", u(1) as u8 as i8),
        Dtype::U16 => write!(out, "{}", u(2)),
        Dtype::I16 => write!(out, "{}", u(2) as u16 as i16),
        Dtype::U32 => write!(out, "{}", u(4)),
        Dtype::I32 => write!(out, "{}", u(4) as u32 as i32),
        Dtype::U64 => write!(out, "{}", u(8)),
        Dtype::I64 => write!(out, "{}", u(8) as i64),
        Dtype::F16 => {
            finite_or(out, f16_to_f64(u(2) as u16), u(2), 4);
            Ok(())
        }
        Dtype::BF16 => {
            finite_or(out, f64::from(f32::from_bits((u(2) as u32) << 16)), u(2), 4);
            Ok(())
        }
        Dtype::F32 => {
            finite_or(out, f64::from(f32::from_bits(u(4) as u32)), u(4), 8);
            Ok(())
        }
        Dtype::F64 => {
            finite_or(out, f64::from_bits(u(8)), u(8), 16);
            Ok(())
        }
    };
}

fn nested(out: &mut String, dt: Dtype, shape: &[u64], b: &[u8]) {
    match shape.split_first() {
        None => element(out, dt, b),
        Some((&d, rest)) => {
            let inner = rest.iter().product::<u64>() * dt.size();
            out.push('[');
            for k in 0..d {
                if k > 0 {
                    out.push_str(", ");
                }
                let s = (k * inner) as usize;
                nested(
                    out,
                    dt,
                    rest,
                    b.get(s..s + inner as usize).unwrap_or_default(),
                );
            }
            out.push(']');
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
                out.push_str(", \"values\": ");
                nested(&mut out, *dtype, shape, b);
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
