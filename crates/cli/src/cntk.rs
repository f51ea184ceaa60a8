//! `dataformats` commands on CNTK binary (CBF) files.

use std::path::Path;

use dataformats::cntk::{Reader, Record, StreamKind};
use dataformats::core::{Limits, Source};
use serde_json::{Value, json};

use crate::output::say;
use crate::{Failure, progress};

fn fail(path: &Path, e: &dataformats::cntk::Error) -> Failure {
    Failure::new(1, e.kind().as_str(), Some(path), e.to_string())
}

fn open(path: &Path) -> Result<Reader, Failure> {
    // SAFETY: the CLI only reads the file and documents that it must not be
    // modified while the command runs.
    let src = unsafe { Source::map(path) }
        .map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    Reader::with_limits(src, Limits::default()).map_err(|e| fail(path, &e))
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let streams: Vec<Value> = r
        .streams()
        .iter()
        .map(|s| json!({"name": s.name, "kind": if s.kind == StreamKind::Dense { "dense" } else { "sparse" }, "elem": s.elem.name(), "dim": s.dim}))
        .collect();
    if as_json {
        let chunks: Vec<Value> = r.chunks().iter().map(|c| json!({"offset": c.offset, "bytes": c.end - c.offset, "sequences": c.num_sequences, "samples": c.num_samples})).collect();
        say!(
            "{}",
            json!({"format": "cntk", "version": 1, "file_size": r.source().len(), "header_offset": r.header_offset(), "streams": streams, "chunks": chunks})
        );
        return Ok(());
    }
    say!(
        "{}: CNTK binary format v1, {} bytes, header at {}",
        path.display(),
        r.source().len(),
        r.header_offset()
    );
    for s in r.streams() {
        say!(
            "stream {:<16} {:<6} {} dim {}",
            s.name,
            if s.kind == StreamKind::Dense {
                "dense"
            } else {
                "sparse"
            },
            s.elem.name(),
            s.dim
        );
    }
    say!();
    say!(
        "{:>6} {:>12} {:>10} {:>10} {:>10}",
        "chunk",
        "offset",
        "bytes",
        "sequences",
        "samples"
    );
    for (i, c) in r.chunks().iter().enumerate() {
        say!(
            "{:>6} {:>12} {:>10} {:>10} {:>10}",
            i,
            c.offset,
            c.end - c.offset,
            c.num_sequences,
            c.num_samples
        );
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let bar = progress::units("validate", as_json);
    let result = r.validate_with(&mut progress::report(&bar));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
    let seqs: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "cntk", "chunks": r.chunks().len(), "sequences": seqs})
        );
    } else {
        say!(
            "{}: ok: {} chunk(s), {seqs} sequence(s), every count, size and sparse index checked",
            path.display(),
            r.chunks().len()
        );
    }
    Ok(())
}

/// One sequence in CTF text: `id |name values...` per sample row.
fn ctf_lines(r: &Reader, id: u64, records: &[&Record]) -> Vec<String> {
    let rows = records.iter().map(|x| x.samples()).max().unwrap_or(0);
    let mut lines = Vec::new();
    for j in 0..rows {
        let mut line = id.to_string();
        for (s, rec) in r.streams().iter().zip(records) {
            if j >= rec.samples() {
                continue;
            }
            match rec {
                Record::Dense { values, .. } => {
                    let dim = s.dim as usize;
                    let part = values
                        .get(j as usize * dim..(j as usize + 1) * dim)
                        .unwrap_or_default();
                    line.push_str(&format!(" |{}", s.name));
                    for v in part {
                        line.push_str(&format!(" {v}"));
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
                    line.push_str(&format!(" |{}", s.name));
                    for k in start..start + n {
                        line.push_str(&format!(
                            " {}:{}",
                            indices.get(k).copied().unwrap_or(0),
                            values.get(k).copied().unwrap_or(0.0)
                        ));
                    }
                }
            }
        }
        lines.push(line);
    }
    lines
}

/// `dump FILE [--range A..B]`: sequences A..B (global numbering) as CTF
/// text, or as JSON with `--json`.
pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let total: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    let (a, b) = range.unwrap_or((0, total));
    let mut id = 0u64;
    let mut out = Vec::new();
    for i in 0..r.chunks().len() {
        let n = u64::from(r.chunks().get(i).map_or(0, |c| c.num_sequences));
        if id + n <= a {
            id += n;
            continue;
        }
        if id >= b {
            break;
        }
        let ch = r.read_chunk(i).map_err(|e| fail(path, &e))?;
        for q in 0..n as usize {
            if id >= a && id < b {
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
                    out.push(json!({"sequence": id, "streams": m}));
                } else {
                    for line in ctf_lines(&r, id, &recs) {
                        say!("{line}");
                    }
                }
            }
            id += 1;
        }
    }
    if as_json {
        say!("{}", Value::Array(out));
    }
    Ok(())
}

/// Settings for CTF → CBF conversion.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct CtfArgs {
    /// A ctf2bin stream file (`name alias dense|sparse dim` per line).
    #[arg(long, help_heading = "CNTK text input")]
    streams: Option<std::path::PathBuf>,
    /// A stream as NAME:dense|sparse:DIM[:ALIAS] (repeatable; instead of --streams).
    #[arg(long = "stream", help_heading = "CNTK text input")]
    stream: Vec<String>,
    /// Element type of every stream.
    #[arg(
        long,
        value_enum,
        default_value = "f32",
        help_heading = "CNTK text input"
    )]
    precision: crate::args::Precision,
    /// Reproduce a reference tool's output byte for byte (its chunking rule).
    #[arg(long, value_enum, help_heading = "CNTK text input")]
    compat: Option<crate::args::Compat>,
}

impl CtfArgs {
    /// Puts the CTF input settings (and `--compat`'s chunking, with the
    /// chunk size `chunk`) into `opts`.
    pub(crate) fn apply(
        &self,
        opts: &mut dataformats::convert::ConvertOptions,
        chunk: Option<u64>,
    ) -> Result<(), Failure> {
        use dataformats::cntk::ctf::{parse_stream_arg, parse_streams_file};
        use dataformats::cntk::{Chunking, ElemType};
        let usage = |m: String| Failure::new(2, "usage", None, m);
        opts.ctf.streams = match (&self.streams, self.stream.is_empty()) {
            (Some(p), true) => {
                let t = std::fs::read_to_string(p)
                    .map_err(|e| Failure::new(1, "io", Some(p), e.to_string()))?;
                parse_streams_file(&t)
                    .map_err(|e| Failure::new(2, "usage", Some(p), e.to_string()))?
            }
            (None, _) => self
                .stream
                .iter()
                .map(|s| parse_stream_arg(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| usage(e.to_string()))?,
            (Some(_), false) => {
                return Err(usage(
                    "give the streams with either --streams FILE or --stream NAME:dense|sparse:DIM[:ALIAS]"
                        .into(),
                ));
            }
        };
        opts.ctf.precision = match self.precision {
            crate::args::Precision::F32 => ElemType::F32,
            crate::args::Precision::F64 => ElemType::F64,
        };
        let size = chunk.unwrap_or(32 << 20);
        opts.cntk.chunking = match self.compat {
            Some(crate::args::Compat::Ctf2bin) => Chunking::Ctf2bin(size),
            None => Chunking::Target(size),
        };
        Ok(())
    }
}
