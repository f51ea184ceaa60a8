//! The BLZ/bcolz checker: `bloscpack-blz.md` §6.1 sidecars against our reader.

use std::path::Path;

use dataformats::bloscpack::blz::{self, BlzDir, CArray};
use dataformats::bloscpack::values::head;
use dataformats::core::{ChecksumKind, Limits};
use serde_json::{Value, json};

use super::{Checker, Outcome, Vector, compare};

pub(crate) struct Blz;

impl Checker for Blz {
    fn check(&self, v: &Vector) -> Outcome {
        let result = BlzDir::with_options(
            &v.path,
            blz::ReadOptions::default()
                .limits(Limits::default())
                .checks(blz::Checks::EveryChunk),
        );
        if !v.valid {
            let result = result
                .as_ref()
                .map_err(|e| (e.kind().as_str(), e.to_string()));
            return super::rejection(v, "error_kind", result);
        }
        let d = match result {
            Ok(d) => d,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        let mut diffs = Vec::new();
        let (summary, content) = match &d {
            BlzDir::Array(a) => (
                array_summary(a),
                content(a.read_all(), Some(a.dtype()), a.shape()),
            ),
            BlzDir::Table(t) => {
                let columns: serde_json::Map<String, Value> = t
                    .names()
                    .iter()
                    .zip(t.columns())
                    .map(|(n, c)| {
                        let cc = content(c.read_all(), Some(c.dtype()), c.shape());
                        (
                            n.clone(),
                            json!({"summary": array_summary(c), "content": cc}),
                        )
                    })
                    .collect();
                if let Some(want) = v.sidecar.get("columns") {
                    compare("columns", &Value::Object(columns), want, &mut diffs, &[]);
                }
                let row = t.row_dtype();
                let s = json!({
                    "kind": d.kind(), "layout": t.layout().name(), "rootdirs": t.rootdirs(),
                    "attrs": t.attrs(), "nrows": t.len(), "row_dtype": row.descr_json(),
                });
                (s, content(t.read_all(), Some(&row), &[t.len()]))
            }
        };
        if let Some(want) = v.sidecar.get("summary") {
            compare("summary", &summary, want, &mut diffs, &[]);
        }
        if let Some(want) = v.sidecar.get("content") {
            compare("content", &content, want, &mut diffs, &[]);
        }
        if let Some(want) = v.sidecar.get("files") {
            compare("files", &files(&v.path), want, &mut diffs, &[]);
        }
        super::verdict(diffs)
    }
}

fn array_summary(a: &CArray) -> Value {
    let leftover = a.len() % a.chunklen();
    let chunks: Vec<Value> = a
        .chunks()
        .iter()
        .map(|c| {
            let b = c.blosc;
            json!({
                "file": c.name, "file_size": c.file_size, "blosc_version": b.version, "versionlz": b.versionlz,
                "flags": b.flags, "typesize": b.typesize, "nbytes": b.nbytes, "blocksize": b.blocksize,
                "cbytes": b.cbytes, "codec_flag": b.flags >> 5,
            })
        })
        .collect();
    json!({
        "kind": a.layout().array_kind(),
        "layout": a.layout().name(),
        "dtype_storage_string": a.dtype_storage_string(),
        "shape": a.shape(),
        "chunklen": a.chunklen(),
        "atomsize": a.atomsize(),
        "nchunks_full": a.len() / a.chunklen(),
        "leftover_items": leftover,
        "leftover_file": (leftover > 0).then(|| format!("__{}.blp", a.len() / a.chunklen())),
        "stale_files_to_ignore": a.stale_files(),
        "meta_sizes": a.sizes(),
        "meta_storage": a.storage(),
        "attrs": a.attrs(),
        "chunks": chunks,
    })
}

fn content(
    payload: dataformats::bloscpack::Result<Vec<u8>>,
    dtype: Option<&dataformats::bloscpack::dtype::Dtype>,
    shape: &[u64],
) -> Value {
    let rendered = payload.and_then(|p| Ok((head(dtype, &p, 8)?, p)));
    match rendered {
        Err(e) => json!({"error": e.to_string()}),
        Ok((head, p)) => json!({
            "nbytes": p.len(),
            "sha256": ChecksumKind::Sha256.digest(&p).to_hex(),
            "dtype": dtype.map(|d| d.descr_json()),
            "shape": shape,
            "head": head,
        }),
    }
}

/// Every regular file under `root`, as sidecars list them.
fn files(root: &Path) -> Value {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, u64)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if let Ok(m) = p.metadata() {
                let rel = p
                    .strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, m.len()));
            }
        }
    }
    let mut v = Vec::new();
    walk(root, root, &mut v);
    v.sort();
    Value::Array(
        v.into_iter()
            .map(|(p, s)| json!({"path": p, "size": s}))
            .collect(),
    )
}
