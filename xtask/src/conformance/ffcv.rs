//! The FFCV checker: `ffcv-beton.md` sidecars (summary with layout, every
//! value) against `dataformats_ffcv`.

use dataformats::core::ChecksumKind;
use dataformats::ffcv::{FieldType, ImageMode, Reader, Value as F};
use serde_json::{Map, Value, json};

use super::{Checker, Outcome, Vector, compare, rejection};

pub(crate) struct Ffcv;

/// `{"len", "sha256"}` plus `hex` for values of at most 32 bytes.
fn blob(b: &[u8]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("len".into(), json!(b.len()));
    m.insert(
        "sha256".into(),
        json!(ChecksumKind::Sha256.digest(b).to_hex()),
    );
    if b.len() <= 32 {
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        m.insert("hex".into(), json!(hex));
    }
    m
}

/// The elements of a little-endian numeric array as JSON numbers (the
/// facade's decoding of tensor elements).
fn elements(dtype: &str, b: &[u8]) -> Option<Vec<Value>> {
    dataformats::dataset::elements(dtype, b).map(|vals| {
        vals.iter()
            .map(|v| serde_json::from_str(&v.to_json()).unwrap_or(Value::Null))
            .collect()
    })
}

/// Nests flat values by `shape` (C order).
fn nest(flat: &[Value], shape: &[u64]) -> Value {
    match shape.split_first() {
        None => flat.first().cloned().unwrap_or(Value::Null),
        Some((&d, rest)) => {
            let step: usize = rest.iter().map(|&x| x as usize).product();
            Value::Array(
                (0..d as usize)
                    .map(|k| nest(flat.get(k * step..).unwrap_or_default(), rest))
                    .collect(),
            )
        }
    }
}

impl Checker for Ffcv {
    fn check(&self, v: &Vector) -> Outcome {
        let opened = Reader::open(&v.path);
        if !v.valid {
            return rejection(
                v,
                "error_kind",
                opened
                    .and_then(|r| r.validate())
                    .map_err(|e| (e.kind().as_str(), e.to_string())),
            );
        }
        let r = match opened {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        if let Err(e) = r.validate() {
            return Outcome::Fail(format!("validate: {e}"));
        }
        let l = r.layout();
        let fields: Vec<Value> = r
            .fields()
            .iter()
            .map(|f| {
                let mut args = Map::new();
                if let Some((_, _, shape)) = f.ty.array() {
                    args.insert("shape".into(), json!(shape));
                }
                if let Some(d) = &f.dtype_descr_json {
                    args.insert("dtype_descr_json".into(), json!(d));
                }
                json!({"name": f.name, "type": f.ty.name(), "type_id": f.ty.type_id(), "arguments": args})
            })
            .collect();
        let summary = json!({
            "version": l.version,
            "num_samples": l.num_samples,
            "num_fields": l.num_fields,
            "page_size": l.page_size,
            "fields": fields,
            "layout": {
                "header_size": 24, "field_desc_size": 1041,
                "metadata_ptr": l.metadata_ptr, "row_size": l.row_size,
                "column_offsets": r.fields().iter().map(|f| f.column_offset).collect::<Vec<_>>(),
                "data_ptr": l.data_ptr, "alloc_table_ptr": l.alloc_table_ptr,
                "num_allocations": l.num_allocations, "file_size": l.file_size,
                "alloc_table_sorted_by_ptr": r.alloc_table_sorted(),
            },
        });
        let mut samples = Vec::new();
        for i in 0..r.len() {
            let mut m = Map::new();
            for (j, f) in r.fields().iter().enumerate() {
                let val = match r.value(i, j) {
                    Ok(x) => x,
                    Err(e) => return Outcome::Fail(format!("sample {i} field {}: {e}", f.name)),
                };
                let out = match val {
                    F::Int(x) => json!(x),
                    F::Float(x) => json!(x),
                    F::Bytes(b) => Value::Object(blob(&b)),
                    F::Array(b) => {
                        let mut o = blob(&b);
                        if let Some((dtype, _, shape)) = f.ty.array()
                            && let Some(flat) = elements(dtype, &b)
                        {
                            o.insert("values".into(), nest(&flat, shape));
                        }
                        Value::Object(o)
                    }
                    F::Json(t) => {
                        let mut stored = t.as_bytes().to_vec();
                        stored.push(0);
                        let mut o = blob(&stored);
                        o.insert(
                            "json".into(),
                            serde_json::from_str(&t).unwrap_or(Value::Null),
                        );
                        Value::Object(o)
                    }
                    F::Image {
                        mode,
                        width,
                        height,
                        data,
                    } => {
                        let mut o = blob(&data);
                        let (name, byte) = match mode {
                            ImageMode::Jpeg => ("jpg", 0),
                            ImageMode::Raw => ("raw", 1),
                        };
                        o.insert("mode".into(), json!(name));
                        o.insert("mode_byte".into(), json!(byte));
                        o.insert("height".into(), json!(height));
                        o.insert("width".into(), json!(width));
                        if mode == ImageMode::Raw {
                            // Raw samples store the source pixels as they are.
                            o.insert(
                                "source_pixels_sha256".into(),
                                json!(ChecksumKind::Sha256.digest(&data).to_hex()),
                            );
                        }
                        Value::Object(o)
                    }
                };
                m.insert(f.name.clone(), out);
            }
            samples.push(Value::Object(m));
        }
        // JPEG samples: we do not decode pixels, so their source hash is
        // not ours to check (the stored bytes' hash is).
        let mut want_content = v.sidecar.get("content").cloned().unwrap_or(Value::Null);
        if let Some(ws) = want_content
            .get_mut("samples")
            .and_then(Value::as_array_mut)
        {
            for s in ws.iter_mut().filter_map(Value::as_object_mut) {
                for (name, x) in s.iter_mut() {
                    let is_image = r
                        .fields()
                        .iter()
                        .any(|f| &f.name == name && f.ty == FieldType::RgbImage);
                    if let Some(o) = x.as_object_mut()
                        && is_image
                        && o.get("mode").and_then(Value::as_str) == Some("jpg")
                    {
                        o.remove("source_pixels_sha256");
                    }
                }
            }
        }
        let mut diffs = Vec::new();
        let want_summary = v.sidecar.get("summary").cloned().unwrap_or(Value::Null);
        compare("summary", &summary, &want_summary, &mut diffs, &[]);
        compare(
            "content",
            &json!({"samples": samples}),
            &want_content,
            &mut diffs,
            &[],
        );
        super::verdict(diffs)
    }
}
