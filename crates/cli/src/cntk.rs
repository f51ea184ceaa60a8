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
    let bar = progress::bytes(r.chunks().len() as u64, "validate", as_json);
    for i in 0..r.chunks().len() {
        r.read_chunk(i).map_err(|e| fail(path, &e))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
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
    #[arg(long)]
    streams: Option<std::path::PathBuf>,
    /// A stream as NAME:dense|sparse:DIM[:ALIAS] (repeatable; instead of --streams).
    #[arg(long = "stream")]
    stream: Vec<String>,
    /// Element type of every stream: f32 (default) or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// Reproduce ctf2bin.py's output byte for byte (its chunking rule).
    #[arg(long)]
    compat: Option<String>,
}

/// `convert data.ctf data.bin` and `convert data.bin data.ctf`.
pub(crate) fn convert(
    input: &Path,
    output: &Path,
    to_binary: bool,
    args: &CtfArgs,
    chunk_size: Option<&str>,
    as_json: bool,
) -> Result<(), Failure> {
    use dataformats::cntk::ctf::{ctf_to_cbf, parse_stream_arg, parse_streams_file};
    use dataformats::cntk::{Chunking, ElemType};
    let usage = |m: String| Failure::new(2, "usage", None, m);
    if !to_binary {
        // CBF -> CTF, streamed into a file that appears when complete.
        let r = open(input)?;
        let io = |e: std::io::Error| Failure::new(1, "io", Some(output), e.to_string());
        let mut f =
            std::io::BufWriter::new(dataformats::core::AtomicFile::create(output).map_err(io)?);
        let id = dataformats::cntk::ctf::cbf_to_ctf(&r, &mut f).map_err(|e| fail(input, &e))?;
        f.into_inner()
            .map_err(|e| io(e.into_error()))?
            .finish()
            .map_err(io)?;
        say!(
            "{}",
            if as_json {
                json!({"sequences": id}).to_string()
            } else {
                format!(
                    "{} -> {}: {id} sequence(s) as CTF text",
                    input.display(),
                    output.display()
                )
            }
        );
        return Ok(());
    }
    let specs = match (&args.streams, args.stream.is_empty()) {
        (Some(p), true) => {
            let t = std::fs::read_to_string(p)
                .map_err(|e| Failure::new(1, "io", Some(p), e.to_string()))?;
            parse_streams_file(&t).map_err(|e| Failure::new(2, "usage", Some(p), e.to_string()))?
        }
        (None, false) => args
            .stream
            .iter()
            .map(|s| parse_stream_arg(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| usage(e.to_string()))?,
        _ => return Err(usage(
            "give the streams with either --streams FILE or --stream NAME:dense|sparse:DIM[:ALIAS]"
                .into(),
        )),
    };
    let precision = match args.precision.as_str() {
        "f32" | "float" => ElemType::F32,
        "f64" | "double" => ElemType::F64,
        p => return Err(usage(format!("precision {p:?} is not f32 or f64"))),
    };
    let size = match chunk_size {
        Some(s) => crate::bloscpack::parse_size(s)
            .ok_or_else(|| usage(format!("bad chunk size {s:?}")))? as u64,
        None => 32 << 20,
    };
    let chunking = match args.compat.as_deref() {
        Some("ctf2bin") => Chunking::Ctf2bin(size),
        None => Chunking::Target(size),
        Some(c) => return Err(usage(format!("--compat {c:?}: only ctf2bin is known"))),
    };
    let size = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let file = std::fs::File::open(input)
        .map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
    let bar = progress::bytes(size, "ctf->cbf", as_json);
    let reader = std::io::BufReader::with_capacity(1 << 20, file);
    let report = ctf_to_cbf(reader, &specs, precision, chunking, output, |n| {
        bar.inc(n as u64)
    })
    .map_err(|e| Failure::new(1, "bad_ctf", Some(input), e.to_string()))?;
    bar.finish_and_clear();
    if report.negative_indices > 0 {
        eprintln!(
            "warning: {} negative sparse index(es) written as is (--compat ctf2bin); {} is not a valid CBF file",
            report.negative_indices,
            output.display()
        );
    }
    if as_json {
        say!(
            "{}",
            json!({"sequences": report.sequences, "samples": report.samples, "negative_indices": report.negative_indices})
        );
    } else {
        say!(
            "{} -> {}: {} sequence(s), {} sample(s)",
            input.display(),
            output.display(),
            report.sequences,
            report.samples
        );
    }
    Ok(())
}

/// The name of the MLDF field that numbers CNTK sequences.
const SEQUENCE_FIELD: &str = "_sequence";

/// A sparse CNTK sample as MLDF JSON: `{"dim", "dtype", "indices",
/// "values"}`; non-finite values as the strings `NaN`, `Infinity`,
/// `-Infinity`. Values print as the shortest text that reads back to the
/// same f64, so the conversion is exact.
fn sparse_json(dim: u32, elem: dataformats::cntk::ElemType, entries: &[(u32, f64)]) -> String {
    let values: Vec<Value> = entries
        .iter()
        .map(|&(_, v)| {
            if v.is_finite() {
                json!(v)
            } else if v.is_nan() {
                json!("NaN")
            } else if v > 0.0 {
                json!("Infinity")
            } else {
                json!("-Infinity")
            }
        })
        .collect();
    let indices: Vec<u32> = entries.iter().map(|&(k, _)| k).collect();
    json!({"dim": dim, "dtype": elem.name(), "indices": indices, "values": values}).to_string()
}

/// `convert x.bin y.mldf`: one MLDF sample per CNTK *sample*, so every
/// stream keeps a fixed shape. Field `_sequence` (INT) numbers the
/// sequences; a dense stream becomes a NULLABLE NDARRAY `[dim]` of its
/// element type, a sparse stream a NULLABLE JSON field (see
/// [`sparse_json`]). A sequence spans as many rows as its longest stream;
/// shorter streams are missing in the rows after their last sample, and a
/// sequence without samples keeps one row with every stream missing.
pub(crate) fn to_mldf(input: &Path, output: &Path, as_json: bool) -> Result<(), Failure> {
    use dataformats::cntk::{ElemType, RecordView};
    use dataformats::mldf::{Dtype, Field, FieldType, FieldValue, Writer, WriterOptions};
    let r = open(input)?;
    let mut fields = vec![Field::new(SEQUENCE_FIELD, FieldType::Int, false)];
    for s in r.streams() {
        if s.name == SEQUENCE_FIELD {
            return Err(Failure::new(
                1,
                "unsupported",
                Some(input),
                format!(
                    "a stream is called {SEQUENCE_FIELD:?}, the name MLDF files made from CNTK use to number sequences"
                ),
            ));
        }
        let ty = match s.kind {
            StreamKind::Dense => FieldType::NdArray {
                dtype: if s.elem == ElemType::F32 {
                    Dtype::F32
                } else {
                    Dtype::F64
                },
                shape: vec![u64::from(s.dim)],
            },
            StreamKind::Sparse => FieldType::Json,
        };
        fields.push(Field::new(&s.name, ty, true));
    }
    let mf = |e: dataformats::mldf::Error| {
        Failure::new(1, e.kind().as_str(), Some(output), e.to_string())
    };
    let mut w = Writer::create(output, fields, WriterOptions::default()).map_err(mf)?;
    let total: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    let bar = progress::bytes(total, "cbf->mldf", as_json);
    let (mut seq, mut rows) = (0i64, 0u64);
    for c in 0..r.chunks().len() {
        let view = r.chunk_view(c).map_err(|e| fail(input, &e))?;
        for q in 0..view.num_sequences() {
            let recs: Vec<Option<RecordView<'_>>> =
                (0..r.streams().len()).map(|s| view.record(s, q)).collect();
            let sparse: Vec<Option<SparseSamples>> = recs
                .iter()
                .map(|x| match x {
                    Some(RecordView::Sparse(sp)) => Some(sp.samples_entries()),
                    _ => None,
                })
                .collect();
            let len = recs
                .iter()
                .map(|x| x.as_ref().map_or(0, RecordView::samples))
                .max()
                .unwrap_or(0)
                .max(1);
            for k in 0..len {
                let mut texts: Vec<Option<String>> = Vec::with_capacity(recs.len());
                for (s, x) in recs.iter().enumerate() {
                    let stream = r.streams().get(s);
                    texts.push(match (x, sparse.get(s).and_then(Option::as_ref), stream) {
                        (Some(RecordView::Sparse(_)), Some(samples), Some(st)) => samples
                            .get(k as usize)
                            .map(|e| sparse_json(st.dim, st.elem, e)),
                        _ => None,
                    });
                }
                let mut values = vec![FieldValue::Int(seq)];
                for (s, x) in recs.iter().enumerate() {
                    values.push(match x {
                        Some(RecordView::Dense(d)) if k < d.samples => {
                            let n = (d.dim as usize) * d.elem.size() as usize;
                            d.raw()
                                .get(k as usize * n..(k as usize + 1) * n)
                                .map_or(FieldValue::Missing, FieldValue::NdArray)
                        }
                        _ => texts
                            .get(s)
                            .and_then(Option::as_deref)
                            .map_or(FieldValue::Missing, FieldValue::Json),
                    });
                }
                w.add_sample(&values).map_err(mf)?;
                rows += 1;
            }
            seq += 1;
            bar.inc(1);
        }
    }
    w.finish().map_err(mf)?;
    bar.finish_and_clear();
    if as_json {
        say!("{}", json!({"sequences": seq, "samples": rows}));
    } else {
        say!(
            "{} -> {}: {seq} sequence(s) as {rows} MLDF sample(s)",
            input.display(),
            output.display()
        );
    }
    Ok(())
}

/// A sparse record: per sample, its (index, value) entries.
type SparseSamples = Vec<Vec<(u32, f64)>>;

/// How one MLDF field becomes a CNTK stream.
enum StreamPlan {
    /// A 1-d NDARRAY of the stream's element type: its bytes as they are.
    DenseRaw,
    /// NDARRAY (any numeric dtype, flattened) or INT/FLOAT as a dense sample.
    Dense,
    /// The sparse JSON of [`to_mldf`].
    Sparse,
}

/// `convert x.mldf y.bin`: the inverse of [`to_mldf`]. Rows with equal
/// consecutive `_sequence` values form one sequence (without that field
/// each row is a sequence of one sample). 1-d float32/float64 NDARRAYs
/// become dense streams and sparse JSON fields sparse streams; other
/// numeric NDARRAYs (flattened, as f64 or f32) and INT/FLOAT fields (dense,
/// dimension 1, f64) change representation and need `lossy`; fields CNTK
/// cannot hold (bytes, text, images, audio) are refused, or dropped with
/// `lossy`.
pub(crate) fn from_mldf(
    input: &Path,
    output: &Path,
    lossy: bool,
    chunk_size: Option<&str>,
    as_json: bool,
) -> Result<(), Failure> {
    use dataformats::cntk::{Chunking, ElemType, RecordData, StreamDesc, Writer};
    use dataformats::mldf::{Dtype, FieldType as T, Value as V};
    let m = crate::mldf::open(input)?;
    let mfail = |e: dataformats::mldf::Error| crate::mldf::fail(input, &e);
    let seq_j = m
        .field_index(SEQUENCE_FIELD)
        .filter(|&j| m.fields().get(j).is_some_and(|f| f.ty == T::Int));
    let n = m.num_samples();
    // The first present value of a JSON field says whether it is sparse.
    let sparse_shape = |j: usize| -> Result<Option<(u32, ElemType)>, Failure> {
        for i in 0..n {
            match m.value(i, j).map_err(mfail)? {
                V::Missing => continue,
                V::Json(t) => {
                    let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                    let dim = v.get("dim").and_then(Value::as_u64);
                    let elem = match v.get("dtype").and_then(Value::as_str) {
                        Some("f32") => Some(ElemType::F32),
                        Some("f64") => Some(ElemType::F64),
                        _ => None,
                    };
                    return Ok(match (dim, elem, v.get("indices"), v.get("values")) {
                        (Some(d), Some(e), Some(_), Some(_)) => {
                            u32::try_from(d).ok().map(|d| (d, e))
                        }
                        _ => None,
                    });
                }
                _ => return Ok(None),
            }
        }
        Ok(None)
    };
    let mut streams = Vec::new();
    let mut plans = Vec::new();
    let (mut changed, mut refused) = (Vec::new(), Vec::new());
    for (j, f) in m.fields().iter().enumerate() {
        if Some(j) == seq_j {
            continue;
        }
        let dense = |elem: ElemType, dim: u64| -> Option<StreamDesc> {
            Some(StreamDesc {
                name: f.name.clone(),
                kind: StreamKind::Dense,
                elem,
                dim: u32::try_from(dim).ok().filter(|&d| d > 0)?,
            })
        };
        let (desc, exact) = match &f.ty {
            T::NdArray { dtype, shape } if !matches!(dtype, Dtype::F16 | Dtype::BF16) => {
                let count: u64 = shape.iter().product();
                let elem = if *dtype == Dtype::F32 {
                    ElemType::F32
                } else {
                    ElemType::F64
                };
                let exact = shape.len() == 1 && matches!(dtype, Dtype::F32 | Dtype::F64);
                (dense(elem, count), exact)
            }
            T::Int | T::Float => (dense(ElemType::F64, 1), false),
            T::Json => match sparse_shape(j)? {
                Some((dim, elem)) => (
                    Some(StreamDesc {
                        name: f.name.clone(),
                        kind: StreamKind::Sparse,
                        elem,
                        dim,
                    }),
                    true,
                ),
                None => (None, false),
            },
            _ => (None, false),
        };
        match desc {
            Some(d) => {
                if !exact {
                    changed.push(format!("{:?} ({})", f.name, f.ty.name()));
                }
                plans.push((
                    j,
                    if d.kind == StreamKind::Sparse {
                        StreamPlan::Sparse
                    } else if exact {
                        StreamPlan::DenseRaw
                    } else {
                        StreamPlan::Dense
                    },
                    d.dim,
                ));
                streams.push(d);
            }
            None => refused.push(format!("{:?} ({})", f.name, f.ty.name())),
        }
    }
    if (!changed.is_empty() || !refused.is_empty()) && !lossy {
        let mut why = Vec::new();
        if !changed.is_empty() {
            why.push(format!(
                "these become dense float streams: {}",
                changed.join(", ")
            ));
        }
        if !refused.is_empty() {
            why.push(format!(
                "CNTK holds numbers only, these would be dropped: {}",
                refused.join(", ")
            ));
        }
        return Err(Failure::new(
            1,
            "lossy",
            Some(input),
            format!("{}; pass --lossy to convert anyway", why.join("; ")),
        ));
    }
    if streams.is_empty() {
        return Err(Failure::new(
            1,
            "unsupported",
            Some(input),
            "no field can become a CNTK stream",
        ));
    }
    let size = match chunk_size {
        Some(s) => crate::bloscpack::parse_size(s)
            .ok_or_else(|| Failure::new(2, "usage", None, format!("bad chunk size {s:?}")))?
            as u64,
        None => 32 << 20,
    };
    let cf = |e: dataformats::cntk::Error| fail(output, &e);
    let mut w = Writer::create(output, &streams, Chunking::Target(size)).map_err(cf)?;
    let bar = progress::bytes(n, "mldf->cbf", as_json);
    let bad = |i: u64, name: &str, m: String| {
        Failure::new(
            1,
            "invalid",
            Some(input),
            format!("sample {i}, field {name:?}: {m}"),
        )
    };
    // One sequence at a time: per stream, dense values or sparse samples.
    let mut dense: Vec<(u32, Vec<f64>)> = vec![(0, Vec::new()); plans.len()];
    let mut raw: Vec<Vec<u8>> = vec![Vec::new(); plans.len()];
    let mut sparse: Vec<SparseSamples> = vec![Vec::new(); plans.len()];
    let mut sequences = 0u64;
    let flush = |w: &mut Writer,
                 dense: &mut Vec<(u32, Vec<f64>)>,
                 raw: &mut Vec<Vec<u8>>,
                 sparse: &mut Vec<SparseSamples>|
     -> Result<(), Failure> {
        let data: Vec<RecordData<'_>> = plans
            .iter()
            .zip(dense.iter())
            .zip(raw.iter())
            .zip(sparse.iter())
            .map(|((((_, p, _), (k, v)), b), sp)| match p {
                StreamPlan::Dense => RecordData::Dense {
                    samples: *k,
                    values: v,
                },
                StreamPlan::DenseRaw => RecordData::DenseBytes {
                    samples: *k,
                    bytes: b,
                },
                StreamPlan::Sparse => RecordData::Sparse(sp),
            })
            .collect();
        w.add_sequence(&data).map_err(cf)?;
        dense.iter_mut().for_each(|(k, v)| {
            *k = 0;
            v.clear();
        });
        raw.iter_mut().for_each(Vec::clear);
        sparse.iter_mut().for_each(Vec::clear);
        Ok(())
    };
    let mut current: Option<i64> = None;
    for i in 0..n {
        let id = match seq_j {
            Some(j) => match m.value(i, j).map_err(mfail)? {
                V::Int(x) => Some(x),
                _ => None,
            },
            None => None,
        };
        if i > 0 && (id.is_none() || id != current) {
            flush(&mut w, &mut dense, &mut raw, &mut sparse)?;
            sequences += 1;
        }
        current = id;
        for (s, (j, plan, dim)) in plans.iter().enumerate() {
            let name = m.fields().get(*j).map_or("", |f| f.name.as_str());
            let v = m.value(i, *j).map_err(mfail)?;
            match (plan, v) {
                (_, V::Missing) => {}
                (StreamPlan::DenseRaw, V::NdArray(b)) => {
                    let (k, _) = dense
                        .get_mut(s)
                        .ok_or_else(|| bad(i, name, "stream".into()))?;
                    *k += 1;
                    raw.get_mut(s)
                        .ok_or_else(|| bad(i, name, "stream".into()))?
                        .extend_from_slice(&b);
                }
                (StreamPlan::Dense | StreamPlan::DenseRaw, v) => {
                    let (k, out) = dense
                        .get_mut(s)
                        .ok_or_else(|| bad(i, name, "stream".into()))?;
                    match v {
                        V::Int(x) => out.push(x as f64),
                        V::Float(x) => out.push(x),
                        V::NdArray(b) => {
                            let dtype = match m.fields().get(*j).map(|f| &f.ty) {
                                Some(T::NdArray { dtype, .. }) => *dtype,
                                _ => Dtype::F64,
                            };
                            push_elements(dtype, &b, out).map_err(|e| bad(i, name, e))?;
                        }
                        other => return Err(bad(i, name, format!("{other:?} is not numeric"))),
                    }
                    *k += 1;
                }
                (StreamPlan::Sparse, V::Json(t)) => {
                    let entries = parse_sparse(&t, *dim).map_err(|e| bad(i, name, e))?;
                    sparse
                        .get_mut(s)
                        .ok_or_else(|| bad(i, name, "stream".into()))?
                        .push(entries);
                }
                (StreamPlan::Sparse, other) => {
                    return Err(bad(i, name, format!("{other:?} is not a sparse sample")));
                }
            }
        }
        bar.inc(1);
    }
    if n > 0 {
        flush(&mut w, &mut dense, &mut raw, &mut sparse)?;
        sequences += 1;
    }
    w.finish().map_err(cf)?;
    bar.finish_and_clear();
    if as_json {
        say!(
            "{}",
            json!({"sequences": sequences, "streams": streams.len(), "changed": changed, "dropped": refused})
        );
    } else {
        say!(
            "{} -> {}: {n} sample(s) as {sequences} sequence(s) in {} stream(s){}",
            input.display(),
            output.display(),
            streams.len(),
            if refused.is_empty() {
                String::new()
            } else {
                format!(" (dropped: {})", refused.join(", "))
            }
        );
    }
    Ok(())
}

/// Appends an NDARRAY's elements as f64.
fn push_elements(
    dtype: dataformats::mldf::Dtype,
    b: &[u8],
    out: &mut Vec<f64>,
) -> Result<(), String> {
    use dataformats::mldf::Dtype as D;
    fn each<const N: usize>(b: &[u8], out: &mut Vec<f64>, f: impl Fn([u8; N]) -> f64) {
        out.extend(b.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))));
    }
    match dtype {
        D::F32 => each(b, out, |x| f64::from(f32::from_le_bytes(x))),
        D::F64 => each(b, out, f64::from_le_bytes),
        D::I8 => each(b, out, |x: [u8; 1]| f64::from(x[0] as i8)),
        D::U8 | D::Bool => each(b, out, |x: [u8; 1]| f64::from(x[0])),
        D::I16 => each(b, out, |x| f64::from(i16::from_le_bytes(x))),
        D::U16 => each(b, out, |x| f64::from(u16::from_le_bytes(x))),
        D::I32 => each(b, out, |x| f64::from(i32::from_le_bytes(x))),
        D::U32 => each(b, out, |x| f64::from(u32::from_le_bytes(x))),
        D::I64 => each(b, out, |x| i64::from_le_bytes(x) as f64),
        D::U64 => each(b, out, |x| u64::from_le_bytes(x) as f64),
        other => {
            return Err(format!(
                "NDARRAY of {} is not read as numbers here",
                other.name()
            ));
        }
    }
    Ok(())
}

/// Reads a sparse sample written by [`sparse_json`].
fn parse_sparse(text: &str, dim: u32) -> Result<Vec<(u32, f64)>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let idx = v
        .get("indices")
        .and_then(Value::as_array)
        .ok_or("no \"indices\" list")?;
    let vals = v
        .get("values")
        .and_then(Value::as_array)
        .ok_or("no \"values\" list")?;
    if idx.len() != vals.len() {
        return Err(format!("{} indices but {} values", idx.len(), vals.len()));
    }
    if v.get("dim").and_then(Value::as_u64) != Some(u64::from(dim)) {
        return Err(format!("\"dim\" differs from the stream's {dim}"));
    }
    idx.iter()
        .zip(vals)
        .map(|(k, x)| {
            let k = k
                .as_u64()
                .and_then(|k| u32::try_from(k).ok())
                .filter(|&k| k < dim)
                .ok_or_else(|| format!("index {k} is not below {dim}"))?;
            let x = match x {
                Value::String(s) if s == "NaN" => f64::NAN,
                Value::String(s) if s == "Infinity" => f64::INFINITY,
                Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
                other => other
                    .as_f64()
                    .ok_or_else(|| format!("value {other} is not a number"))?,
            };
            Ok((k, x))
        })
        .collect()
}
