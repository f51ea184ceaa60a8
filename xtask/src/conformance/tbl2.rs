//! The TBL v2 checker: `tbl2.md` §7 sidecars against our strict reader.

use dataformats::core::{ChecksumKind, Source};
use dataformats::tbl2::{ReadOptions, Reader};
use serde_json::{Value, json};

use super::{Checker, Outcome, Vector, compare};

pub(crate) struct Tbl2;

/// Drives the reader in the conformance order: open, every sample, metadata.
fn run(r: &Reader) -> Result<(), dataformats::tbl2::Error> {
    let mut buf = Vec::new();
    for i in 0..r.len() {
        r.read_sample_into(i, &mut buf)?;
    }
    r.metadata_blocks().map(|_| ())
}

impl Checker for Tbl2 {
    fn check(&self, v: &Vector) -> Outcome {
        let src = match Source::open(&v.path) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("cannot open: {e}")),
        };
        let result =
            Reader::with_options(src, ReadOptions::default()).and_then(|r| run(&r).map(|()| r));
        if !v.valid {
            let want_kind = v
                .sidecar
                .pointer("/expected/kind")
                .and_then(Value::as_str)
                .unwrap_or("?");
            let want_stage = v
                .sidecar
                .pointer("/expected/stage")
                .and_then(Value::as_str)
                .unwrap_or("?");
            return match result {
                Ok(_) => Outcome::Fail(format!(
                    "accepted, but it must be rejected as {want_kind} at {want_stage}"
                )),
                Err(e)
                    if e.kind().as_str() == want_kind
                        && e.stage().map(|s| s.to_string()).as_deref() == Some(want_stage) =>
                {
                    Outcome::Pass
                }
                Err(e) => Outcome::Fail(format!(
                    "rejected as {} at {} ({e}), sidecar expects {want_kind} at {want_stage}",
                    e.kind().as_str(),
                    e.stage()
                        .map_or_else(|| "no stage".to_string(), |s| s.to_string())
                )),
            };
        }
        let r = match result {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        let mut diffs = Vec::new();
        match summary(&r) {
            Ok(s) => {
                if let Some(want) = v.sidecar.get("summary") {
                    compare("summary", &s, want, &mut diffs, &[]);
                }
            }
            Err(e) => diffs.push(format!("summary: {e}")),
        }
        match samples(&r) {
            Ok(s) => {
                if let Some(want) = v.sidecar.pointer("/content/samples") {
                    // `name` is a label of the generator's, not stored in the file.
                    let mut want = want.clone();
                    if let Some(a) = want.as_array_mut() {
                        for x in a.iter_mut().filter_map(Value::as_object_mut) {
                            x.remove("name");
                        }
                    }
                    compare("content.samples", &s, &want, &mut diffs, &[]);
                }
            }
            Err(e) => diffs.push(format!("content: {e}")),
        }
        super::verdict(diffs)
    }
}

fn summary(r: &Reader) -> Result<Value, dataformats::tbl2::Error> {
    let h = r.header();
    let blocks = r.metadata_blocks()?;
    let mut list = Vec::new();
    for b in blocks {
        let data = r.block_data(b)?;
        let mut m = json!({
            "sample_index": b.sample_index, "type": b.kind.name(), "type_code": b.kind.0,
            "size": b.size, "hex": dataformats::core::error::HexBytes(&data).to_string(),
        });
        if b.kind.0 == 1
            && let (Some(obj), Ok(j)) = (m.as_object_mut(), serde_json::from_slice::<Value>(&data))
        {
            obj.insert("json".into(), j);
        }
        list.push(m);
    }
    let kinds: std::collections::BTreeSet<u16> = blocks.iter().map(|b| b.kind.0).collect();
    let metadata_format = match kinds.len() {
        0 => Value::Null,
        1 => json!(blocks.first().map(|b| b.kind.name())),
        _ => json!("mixed"),
    };
    Ok(json!({
        "version": h.version,
        "num_samples": h.num_samples,
        "compression": if h.flags & 1 != 0 { "lz4" } else { "none" },
        "metadata_format": metadata_format,
        "metadata": if list.is_empty() { Value::Null } else { Value::Array(list) },
        "header_flags": h.flags,
        "header_size_field": h.header_size,
        "metadata_offset": h.metadata_offset,
        "metadata_size": h.metadata_size,
        "header_crc32": h.checksum,
        "file_size": r.source().len(),
    }))
}

fn samples(r: &Reader) -> Result<Value, dataformats::tbl2::Error> {
    let mut out = Vec::new();
    for i in 0..r.len() {
        let e = r.entry(i)?;
        let data = r.read_sample(i)?;
        out.push(json!({
            "format": e.format.name(), "width": e.width, "height": e.height, "size": data.len(),
            "sha256": ChecksumKind::Sha256.digest(&data).to_hex(), "format_code": e.format.0,
            "stored_size": e.size, "compressed": e.is_compressed(), "has_metadata": e.has_metadata(),
            "offset": e.offset, "crc16": e.checksum,
        }));
    }
    Ok(Value::Array(out))
}
