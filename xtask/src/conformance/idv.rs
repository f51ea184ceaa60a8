//! The IDV checker: `idv.md` §13 sidecars (summary, canonical hashes, head
//! values and annotations) against our reader.

use dataformats::core::{ChecksumKind, Source};
use dataformats::idv::{Reader, Values, render, version_string};
use serde_json::{Map, Value, json};

use super::{Checker, Outcome, Vector, compare};

pub(crate) struct Idv;

fn sha256(ty: &dataformats::idv::ColumnType, v: &Values) -> String {
    let mut h = ChecksumKind::Sha256.hasher();
    render::canonical_bytes(ty, v, &mut |b| h.update(b));
    h.finish()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(format!("unparsable: {text}")))
}

/// Rounds every number of `v` to f32 (Single values are compared that way, §13.3).
fn as_f32(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            json!(f64::from(n.as_f64().unwrap_or(0.0) as f32))
        }
        Value::Array(a) => Value::Array(a.iter().map(as_f32).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), as_f32(x))).collect()),
        other => other.clone(),
    }
}

fn decode(v: &Vector) -> Result<(Reader, Vec<Option<Values>>), dataformats::idv::Error> {
    let src = Source::open(&v.path)?;
    let r = Reader::with_options(src, dataformats::core::ReadOptions::default())?;
    let mut cols = Vec::new();
    for (i, c) in r.columns().iter().enumerate() {
        cols.push(if c.is_dead() {
            None
        } else {
            Some(r.read_column(i)?)
        });
    }
    Ok((r, cols))
}

impl Checker for Idv {
    fn check(&self, v: &Vector) -> Outcome {
        let decoded = decode(v);
        if !v.valid {
            let result = decoded
                .as_ref()
                .map_err(|e| (e.kind().as_str(), e.to_string()));
            return super::rejection(v, "error_kind", result);
        }
        let (r, values) = match decoded {
            Ok(x) => x,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        let h = r.header();
        let file_size = std::fs::metadata(&v.path).map(|m| m.len()).unwrap_or(0);
        let columns: Vec<Value> = r
            .columns()
            .iter()
            .map(|c| {
                let mut o = json!({
                    "name": c.name,
                    "codec": c.codec.name,
                    "type": c.codec.ty.as_ref().map(ToString::to_string),
                    "compression": c.compression.name(),
                    "rows_per_block": c.rows_per_block,
                    "blocks": r.block_count(),
                    "annotations": c.annotations.iter().map(|a| a.kind.clone()).collect::<Vec<_>>(),
                });
                if c.is_dead() {
                    o["dead"] = json!(true);
                }
                o
            })
            .collect();
        let summary = json!({
            "version": version_string(h.version),
            "compatible_version": version_string(h.compatible_version),
            "row_count": h.row_count,
            "column_count": h.column_count,
            "file_size": file_size,
            "idv_size": h.tail_offset + 8,
            "columns": columns,
        });
        let mut content = Map::new();
        for (i, c) in r.columns().iter().enumerate() {
            let (Some(ty), Some(Some(vals))) = (c.ty(), values.get(i)) else {
                continue;
            };
            let single = ty.item() == dataformats::idv::ItemType::F32;
            let dup = r.columns().iter().filter(|o| o.name == c.name).count() > 1;
            let key = if dup {
                format!("{}#{i}", c.name)
            } else {
                c.name.clone()
            };
            let head: Vec<Value> = (0..vals.len().min(5))
                .map(|k| parsed(&render::json_value(vals, k)))
                .collect();
            let mut o = json!({"sha256": sha256(ty, vals), "head": head});
            if single {
                o["head"] = as_f32(&o["head"]);
            }
            if c.annotation_offset != 0 {
                let mut ann = Map::new();
                for a in &c.annotations {
                    let entry = match (&a.codec.ty, &a.value) {
                        (Some(aty), Some(val)) => {
                            let mut e = json!({
                                "codec": a.codec.name,
                                "type": aty.to_string(),
                                "compression": a.compression.name(),
                                "sha256": sha256(aty, val),
                                "value": parsed(&render::json_value(val, 0)),
                            });
                            if aty.item() == dataformats::idv::ItemType::F32 {
                                e["value"] = as_f32(&e["value"]);
                            }
                            e
                        }
                        _ => json!({"dead": true}),
                    };
                    ann.insert(a.kind.clone(), entry);
                }
                o["annotations"] = Value::Object(ann);
            }
            content.insert(key, o);
        }
        let mut diffs = Vec::new();
        let want_summary = v.sidecar.get("summary").cloned().unwrap_or(Value::Null);
        compare("summary", &summary, &want_summary, &mut diffs, &[]);
        let mut want_content = v.sidecar.get("content").cloned().unwrap_or(Value::Null);
        // Single values compare after rounding to f32 on both sides.
        if let Value::Object(wc) = &mut want_content {
            for (k, x) in wc.iter_mut() {
                let single = r.columns().iter().enumerate().any(|(i, c)| {
                    let dup = r.columns().iter().filter(|o| o.name == c.name).count() > 1;
                    let key = if dup {
                        format!("{}#{i}", c.name)
                    } else {
                        c.name.clone()
                    };
                    &key == k
                        && c.ty()
                            .is_some_and(|t| t.item() == dataformats::idv::ItemType::F32)
                });
                if single {
                    x["head"] = as_f32(&x["head"]);
                }
                if let Some(Value::Object(anns)) = x.get_mut("annotations") {
                    for a in anns.values_mut() {
                        if a.get("type")
                            .and_then(Value::as_str)
                            .is_some_and(|t| t.contains("Single"))
                        {
                            a["value"] = as_f32(&a["value"]);
                        }
                    }
                }
            }
            if let Some(extra) = content.keys().find(|k| !wc.contains_key(*k)) {
                diffs.push(format!("content.{extra}: produced, not in the sidecar"));
            }
        }
        compare(
            "content",
            &Value::Object(content),
            &want_content,
            &mut diffs,
            &[],
        );
        super::verdict(diffs)
    }
}
