//! CNTK binary format (CBF) files.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Description, DumpOptions, Listing, io, put};
use crate::cntk::{Reader, Record, StreamKind};
use crate::core::Progress;
use crate::dataset::Error;

fn open(path: &Path) -> Result<Reader, Error> {
    Reader::with_options(
        crate::dataset::map_file(path)?,
        crate::core::ReadOptions::default(),
    )
    .map_err(Error::Cntk)
}

fn kind(k: StreamKind) -> &'static str {
    if k == StreamKind::Dense {
        "dense"
    } else {
        "sparse"
    }
}

pub(super) fn inspect(path: &Path) -> Result<Description, Error> {
    let r = open(path)?;
    let streams: Vec<Value> = r
        .streams()
        .iter()
        .map(|s| json!({"name": s.name, "kind": kind(s.kind), "elem": s.elem.name(), "dim": s.dim}))
        .collect();
    let chunks: Vec<Value> = r.chunks().iter().map(|c| json!({"offset": c.offset, "bytes": c.end - c.offset, "sequences": c.num_sequences, "samples": c.num_samples})).collect();
    let json = json!({"format": "cntk", "version": 1, "file_size": r.source().len(), "header_offset": r.header_offset(), "streams": streams, "chunks": chunks});
    let mut t = String::new();
    put!(
        t,
        "{}: CNTK binary format v1, {} bytes, header at {}",
        path.display(),
        r.source().len(),
        r.header_offset()
    );
    for s in r.streams() {
        put!(
            t,
            "stream {:<16} {:<6} {} dim {}",
            s.name,
            kind(s.kind),
            s.elem.name(),
            s.dim
        );
    }
    put!(t);
    put!(
        t,
        "{:>6} {:>12} {:>10} {:>10} {:>10}",
        "chunk",
        "offset",
        "bytes",
        "sequences",
        "samples"
    );
    for (i, c) in r.chunks().iter().enumerate() {
        put!(
            t,
            "{:>6} {:>12} {:>10} {:>10} {:>10}",
            i,
            c.offset,
            c.end - c.offset,
            c.num_sequences,
            c.num_samples
        );
    }
    Ok(Description::new("cntk", json, t))
}

pub(super) fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let r = open(path)?;
    r.validate_with(progress).map_err(Error::Cntk)?;
    let seqs: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    let json =
        json!({"valid": true, "format": "cntk", "chunks": r.chunks().len(), "sequences": seqs});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} chunk(s), {seqs} sequence(s), every count, size and sparse index checked",
        path.display(),
        r.chunks().len()
    );
    Ok(Description::new("cntk", json, t))
}

/// One sequence in CTF text: `id |name values...` per sample row.
fn ctf_lines(r: &Reader, id: u64, records: &[&Record], out: &mut String) {
    let rows = records.iter().map(|x| x.samples()).max().unwrap_or(0);
    for j in 0..rows {
        let _ = write!(out, "{id}");
        for (s, rec) in r.streams().iter().zip(records) {
            if j >= rec.samples() {
                continue;
            }
            let _ = write!(out, " |{}", s.name);
            match rec {
                Record::Dense { values, .. } => {
                    let dim = s.dim as usize;
                    let part = values
                        .get(j as usize * dim..(j as usize + 1) * dim)
                        .unwrap_or_default();
                    for &v in part {
                        out.push(' ');
                        dataformats_core::text::push_f64_display(out, v);
                    }
                }
                Record::Sparse {
                    values,
                    indices,
                    sizes,
                    ..
                } => {
                    let start: usize = sizes.iter().take(j as usize).map(|&n| n as usize).sum();
                    let n = sizes.get(j as usize).copied().unwrap_or(0) as usize;
                    for (i, &v) in indices.iter().zip(values).skip(start).take(n) {
                        let _ = write!(out, " {i}:");
                        dataformats_core::text::push_f64_display(out, v);
                    }
                }
            }
        }
        out.push('\n');
    }
}

/// Sequences of `opts.rows` (numbered across chunks) as CTF text, or with
/// `as_json` as one JSON array of `{"sequence", "streams"}` objects.
pub(super) fn dump(
    path: &Path,
    opts: &DumpOptions,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let r = open(path)?;
    let total: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    let range = opts.clamp(total);
    let mut list = Listing::new(out, as_json)?;
    let mut id = 0u64;
    let mut text = String::new();
    for (i, c) in r.chunks().iter().enumerate() {
        let n = u64::from(c.num_sequences);
        if id + n <= range.start {
            id += n;
            continue;
        }
        if id >= range.end {
            break;
        }
        let ch = r.read_chunk(i).map_err(Error::Cntk)?;
        for q in 0..n as usize {
            if range.contains(&id) {
                let recs: Vec<&Record> = ch.records.iter().filter_map(|p| p.get(q)).collect();
                if as_json {
                    let mut m = serde_json::Map::new();
                    for (s, rec) in r.streams().iter().zip(&recs) {
                        let v = match rec {
                            Record::Dense { values, .. } => json!(values),
                            Record::Sparse {
                                values,
                                indices,
                                sizes,
                                ..
                            } => json!({"values": values, "indices": indices, "sizes": sizes}),
                        };
                        m.insert(s.name.clone(), v);
                    }
                    list.item(id, &json!({"sequence": id, "streams": m}))?;
                } else {
                    text.clear();
                    ctf_lines(&r, id, &recs, &mut text);
                    list.text().write_all(text.as_bytes()).map_err(io)?;
                }
            }
            id += 1;
        }
    }
    list.finish()
}
