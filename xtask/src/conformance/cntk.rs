//! The CNTK binary (CBF) checker: `cntk.md` §10 sidecars against our strict reader.

use dataformats::cntk::{Reader, Record, StreamKind};
use dataformats::core::{ChecksumKind, Source};
use serde_json::{Value, json};

use super::{Checker, Outcome, Vector, compare};

pub(crate) struct Cntk;

fn num(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(v)
    }
}

impl Checker for Cntk {
    fn check(&self, v: &Vector) -> Outcome {
        // Only the binary files are vectors; the .ctf/.streams beside them are inputs.
        let src = match Source::open(&v.path) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("cannot open: {e}")),
        };
        let opened = Reader::with_options(src, dataformats::core::ReadOptions::default());
        let decoded = opened.and_then(|r| {
            let chunks = (0..r.chunks().len())
                .map(|i| r.read_chunk(i))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((r, chunks))
        });
        if !v.valid {
            let result = decoded
                .as_ref()
                .map_err(|e| (e.kind().as_str(), e.to_string()));
            return super::rejection(v, "error", result);
        }
        let (r, chunks) = match decoded {
            Ok(x) => x,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        // Summary.
        let mut max_len = vec![0u32; r.streams().len()];
        let mut canon = ChecksumKind::Sha256.hasher();
        let mut sequences = Vec::new();
        for ch in &chunks {
            for q in 0..ch.sequence_lengths.len() {
                let mut seq = serde_json::Map::new();
                for (si, s) in r.streams().iter().enumerate() {
                    let Some(rec) = ch.records.get(si).and_then(|p| p.get(q)) else {
                        continue;
                    };
                    max_len[si] = max_len[si].max(rec.samples());
                    canon.update(&rec.samples().to_le_bytes());
                    let f = |x: f64| {
                        if x.is_nan() {
                            f64::from_bits(0x7FF8_0000_0000_0000)
                        } else {
                            x
                        }
                    };
                    let samples = match rec {
                        Record::Dense { values, .. } => {
                            for &x in values {
                                canon.update(&f(x).to_le_bytes());
                            }
                            let dim = s.dim.max(1) as usize;
                            Value::Array(
                                values
                                    .chunks(dim)
                                    .map(|c| Value::Array(c.iter().map(|&x| num(x)).collect()))
                                    .collect(),
                            )
                        }
                        Record::Sparse {
                            values,
                            indices,
                            sizes,
                            ..
                        } => {
                            let mut out = Vec::new();
                            let mut at = 0usize;
                            for &n in sizes {
                                canon.update(&n.to_le_bytes());
                                let mut entries = Vec::new();
                                for k in at..at + n as usize {
                                    let (idx, val) = (
                                        indices.get(k).copied().unwrap_or(0),
                                        values.get(k).copied().unwrap_or(0.0),
                                    );
                                    canon.update(&idx.to_le_bytes());
                                    canon.update(&f(val).to_le_bytes());
                                    entries.push(json!([idx, num(val)]));
                                }
                                at += n as usize;
                                out.push(Value::Array(entries));
                            }
                            Value::Array(out)
                        }
                    };
                    seq.insert(s.name.clone(), samples);
                }
                sequences.push(Value::Object(seq));
            }
        }
        let summary = json!({
            "version": 1,
            "num_chunks": r.chunks().len(),
            "header_offset": r.header_offset(),
            "file_size": r.source().len(),
            "streams": r.streams().iter().zip(&max_len).map(|(s, m)| json!({
                "name": s.name, "kind": if s.kind == StreamKind::Dense { "dense" } else { "sparse" },
                "elem": s.elem.name(), "sample_size": s.dim, "is_sequence": null, "max_sequence_length": m,
            })).collect::<Vec<_>>(),
            "chunks": r.chunks().iter().zip(&chunks).map(|(e, c)| json!({
                "num_sequences": e.num_sequences, "num_samples": e.num_samples, "offset": e.offset,
                "sequence_lengths": c.sequence_lengths,
            })).collect::<Vec<_>>(),
        });
        let mut diffs = Vec::new();
        if let Some(want) = v.sidecar.get("summary") {
            compare("summary", &summary, want, &mut diffs, &[]);
        }
        let hash = canon.finish().to_hex();
        if let Some(want) = v.sidecar.get("content_sha256").and_then(Value::as_str)
            && want != hash
        {
            diffs.push(format!("content_sha256: got {hash}, sidecar {want}"));
        }
        if let Some(want) = v.sidecar.get("content").filter(|c| !c.is_null()) {
            compare(
                "content",
                &json!({"sequences": sequences}),
                want,
                &mut diffs,
                &[],
            );
        }
        super::verdict(diffs)
    }
}
