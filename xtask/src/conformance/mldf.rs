//! The MLDF checker: `mldf.md` §16 sidecars (summary, layout, every value)
//! against our reader; invalid files by `error_code` and `stage`.

use dataformats::core::Source;
use dataformats::mldf::format::{FLAG_CHECKSUMMED, FLAG_COMPRESSED, FLAG_LITTLE_ENDIAN};
use dataformats::mldf::{Reader, render};
use serde_json::{Map, Value, json};

use super::{Checker, Outcome, Vector, compare};

pub(crate) struct Mldf;

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(format!("unparsable: {text}")))
}

impl Checker for Mldf {
    fn check(&self, v: &Vector) -> Outcome {
        let opened = Source::open(&v.path)
            .map_err(dataformats::mldf::Error::from)
            .and_then(|s| Reader::with_options(s, dataformats::core::ReadOptions::default()));
        if !v.valid {
            let want = v
                .sidecar
                .get("error_code")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let stage = v
                .sidecar
                .get("stage")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let result = match &opened {
                Err(e) => Err((e.kind(), "open", e.to_string())),
                Ok(r) => r
                    .validate()
                    .map_err(|e| (e.kind(), "validate", e.to_string())),
            };
            return match result {
                Ok(()) => Outcome::Fail(format!(
                    "accepted, but it must be rejected as {want} at {stage}"
                )),
                Err((k, at, msg)) => {
                    if k.as_str() != want {
                        Outcome::Fail(format!(
                            "rejected as {} at {at} ({msg}), sidecar expects {want} at {stage}",
                            k.as_str()
                        ))
                    } else if stage == "open" && at != "open" {
                        Outcome::Fail(format!(
                            "{want} only at validate, the sidecar expects it at open"
                        ))
                    } else {
                        Outcome::Pass
                    }
                }
            };
        }
        let r = match opened {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        if let Err(e) = r.validate() {
            return Outcome::Fail(format!("validate: {e}"));
        }
        let h = r.header();
        let mut flags = Vec::new();
        for (bit, name) in [
            (FLAG_LITTLE_ENDIAN, "LITTLE_ENDIAN"),
            (FLAG_COMPRESSED, "COMPRESSED"),
            (FLAG_CHECKSUMMED, "CHECKSUMMED"),
        ] {
            if h.flags & bit != 0 {
                flags.push(name);
            }
        }
        let fields: Vec<Value> = r
            .fields()
            .iter()
            .map(|f| json!({"name": f.name, "type": f.ty.name(), "type_id": f.ty.type_id(), "nullable": f.nullable, "metadata_size": f.metadata_size, "arguments": parsed(&render::arguments_json(&f.ty))}))
            .collect();
        let summary = json!({
            "version": format!("{}.{}", h.version_major, h.version_minor),
            "flags": flags,
            "num_samples": h.num_samples,
            "page_size": h.page_size,
            "fields": fields,
            "layout": {
                "field_desc_ptr": h.field_desc_ptr, "metadata_ptr": h.metadata_ptr, "data_ptr": h.data_ptr,
                "data_end": r.data_end(), "alloc_table_ptr": h.alloc_table_ptr, "num_allocations": r.num_allocations(),
                "row_size": r.row_size(), "file_size": r.source().len(),
                "data_crc32": if h.flags & FLAG_CHECKSUMMED != 0 { json!(format!("0x{:08x}", h.data_crc32)) } else { Value::Null },
            },
        });
        let mut samples = Vec::new();
        for i in 0..r.len() {
            let mut m = Map::new();
            for (j, f) in r.fields().iter().enumerate() {
                match r.value(i, j) {
                    Ok(val) => {
                        m.insert(f.name.clone(), parsed(&render::value_json(&f.ty, &val)));
                    }
                    Err(e) => return Outcome::Fail(format!("sample {i} field {}: {e}", f.name)),
                }
            }
            samples.push(Value::Object(m));
        }
        let mut diffs = Vec::new();
        let want_summary = v.sidecar.get("summary").cloned().unwrap_or(Value::Null);
        compare("summary", &summary, &want_summary, &mut diffs, &[]);
        let want_content = v.sidecar.get("content").cloned().unwrap_or(Value::Null);
        compare(
            "content",
            &json!({"samples": samples}),
            &want_content,
            &mut diffs,
            &[],
        );
        if v.sidecar
            .get("warnings")
            .and_then(Value::as_array)
            .is_some_and(|w| !w.is_empty())
            && r.warnings().is_empty()
        {
            diffs.push("the sidecar lists warnings, we emitted none".into());
        }
        super::verdict(diffs)
    }
}
