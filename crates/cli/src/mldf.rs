//! `dataformats` commands on MLDF 1.0 files.

use std::io::Write;
use std::path::Path;

use dataformats::core::{Limits, Source};
use dataformats::mldf::format::{FLAG_CHECKSUMMED, FLAG_COMPRESSED};
use dataformats::mldf::{Reader, render};
use serde_json::{Value, json};

use crate::output::say;
use crate::{Failure, progress};

pub(crate) fn fail(path: &Path, e: &dataformats::mldf::Error) -> Failure {
    Failure::new(1, e.kind().as_str(), Some(path), e.to_string())
}

/// Opens an MLDF file (memory mapped), printing its warnings.
pub(crate) fn open(path: &Path) -> Result<Reader, Failure> {
    // SAFETY: the CLI only reads the file and documents that it must not be
    // modified while the command runs.
    let src = unsafe { Source::map(path) }
        .map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    let r = Reader::with_limits(src, Limits::default()).map_err(|e| fail(path, &e))?;
    for w in r.warnings() {
        eprintln!("warning: {}: {w}", path.display());
    }
    Ok(r)
}

fn flags(f: u32) -> Vec<&'static str> {
    let mut out = vec!["LITTLE_ENDIAN"];
    if f & FLAG_COMPRESSED != 0 {
        out.push("COMPRESSED");
    }
    if f & FLAG_CHECKSUMMED != 0 {
        out.push("CHECKSUMMED");
    }
    out
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let h = r.header();
    let layout = if h.metadata_ptr < h.data_ptr {
        "A (metadata before data)"
    } else {
        "B (streaming: data before metadata)"
    };
    if as_json {
        let fields: Vec<Value> = r
            .fields()
            .iter()
            .map(|f| json!({"name": f.name, "type": f.ty.name(), "type_id": f.ty.type_id(), "nullable": f.nullable,
                "metadata_size": f.metadata_size,
                "arguments": serde_json::from_str::<Value>(&render::arguments_json(&f.ty)).unwrap_or(Value::Null)}))
            .collect();
        say!(
            "{}",
            json!({"format": "mldf", "version": format!("{}.{}", h.version_major, h.version_minor),
                "flags": flags(h.flags), "samples": h.num_samples, "page_size": h.page_size, "fields": fields,
                "layout": {"field_desc_ptr": h.field_desc_ptr, "metadata_ptr": h.metadata_ptr, "data_ptr": h.data_ptr,
                    "data_end": r.data_end(), "alloc_table_ptr": h.alloc_table_ptr, "allocations": r.num_allocations(),
                    "row_size": r.row_size(), "file_size": r.source().len()},
                "warnings": r.warnings()})
        );
        return Ok(());
    }
    say!(
        "{}: MLDF {}.{}, {} samples, {} field(s), flags {}, page size {}, {} bytes",
        path.display(),
        h.version_major,
        h.version_minor,
        h.num_samples,
        h.num_fields,
        flags(h.flags).join("|"),
        h.page_size,
        r.source().len()
    );
    say!(
        "layout {layout}: descriptors at {}, metadata at {} ({} bytes a row), data [{}, {}), {} allocation(s) at {}",
        h.field_desc_ptr,
        h.metadata_ptr,
        r.row_size(),
        h.data_ptr,
        r.data_end(),
        r.num_allocations(),
        h.alloc_table_ptr
    );
    for f in r.fields() {
        say!(
            "field {:<24} {:<18} {}{}",
            format!("{:?}", f.name),
            f.ty.name(),
            render::arguments_json(&f.ty),
            if f.nullable { " nullable" } else { "" }
        );
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let bar = progress::bytes(r.source().len(), "validate", as_json);
    r.validate().map_err(|e| fail(path, &e))?;
    bar.finish_and_clear();
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "mldf", "samples": r.num_samples(), "allocations": r.num_allocations(), "warnings": r.warnings()})
        );
    } else {
        say!(
            "{}: ok: {} sample(s), {} allocation(s), every value{} checked",
            path.display(),
            r.num_samples(),
            r.num_allocations(),
            if r.header().flags & FLAG_CHECKSUMMED != 0 {
                " and the CRC-32"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// `dump x.mldf [--range A..B]`: one JSON object per sample.
pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>) -> Result<(), Failure> {
    let r = open(path)?;
    let (start, end) = range.unwrap_or((0, r.num_samples()));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    write_jsonl(&r, path, start, end.min(r.num_samples()), &mut out)?;
    out.flush()
        .map_err(|e| Failure::new(1, "io", None, e.to_string()))
}

/// `diff a.mldf b.mldf [--content]`: exit 0 when equal, 1 when different.
pub(crate) fn diff(a: &Path, b: &Path, content: bool, as_json: bool) -> Result<(), Failure> {
    let (ra, rb) = (open(a)?, open(b)?);
    let d = dataformats::mldf::diff::diff(&ra, &rb, content, 50).map_err(|e| fail(a, &e))?;
    if as_json {
        let list: Vec<String> = d.iter().map(ToString::to_string).collect();
        say!(
            "{}",
            json!({"same": d.is_empty(), "content_compared": content, "differences": list})
        );
    } else if d.is_empty() {
        say!(
            "{} and {}: same header, schema{}",
            a.display(),
            b.display(),
            if content {
                " and values"
            } else {
                " (values not compared; --content compares them)"
            }
        );
    } else {
        for x in &d {
            say!("{x}");
        }
    }
    if d.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(
            1,
            "different",
            None,
            format!("{} difference(s)", d.len()),
        ))
    }
}

/// Standard base64 (padding optional), for blobs in JSON lines.
fn base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// A blob from `{"base64": ...}` or `{"path": ...}` (relative to `base`).
fn blob(v: &Value, base: &Path) -> Result<Vec<u8>, String> {
    if let Some(b) = v.get("base64").and_then(Value::as_str) {
        return base64(b).ok_or_else(|| "invalid base64".to_string());
    }
    if let Some(p) = v.get("path").and_then(Value::as_str) {
        return std::fs::read(base.join(p)).map_err(|e| format!("{p}: {e}"));
    }
    Err("a blob is {\"base64\": ...} or {\"path\": ...}".into())
}

fn num<T: TryFrom<u64>>(v: &Value, key: &str) -> Result<T, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|x| T::try_from(x).ok())
        .ok_or_else(|| format!("{key:?} missing or out of range"))
}

fn parse_field(f: &Value) -> Result<dataformats::mldf::Field, String> {
    use dataformats::mldf::{Dtype, Field, FieldType};
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a field needs a \"name\"")?;
    let ty = f
        .get("type")
        .and_then(Value::as_str)
        .ok_or("a field needs a \"type\"")?;
    let nullable = f.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    let ty = match ty {
        "INT" => FieldType::Int,
        "FLOAT" => FieldType::Float,
        "BYTES" => FieldType::Bytes,
        "NDARRAY" => {
            let dt = f.get("dtype").and_then(Value::as_str).unwrap_or("float32");
            let dtype = (1..=13)
                .filter_map(Dtype::from_code)
                .find(|d| d.name() == dt)
                .ok_or_else(|| format!("dtype {dt:?}"))?;
            let shape = f
                .get("shape")
                .and_then(Value::as_array)
                .ok_or("NDARRAY needs a \"shape\"")?
                .iter()
                .map(|d| d.as_u64().ok_or("shape entries are integers"))
                .collect::<Result<Vec<_>, _>>()?;
            FieldType::NdArray { dtype, shape }
        }
        "JSON" => FieldType::Json,
        "IMAGE_RAW" => FieldType::ImageRaw,
        "IMAGE_JPEG" => FieldType::ImageJpeg {
            quality: num(f, "quality").unwrap_or(0),
        },
        "IMAGE_PNG" => FieldType::ImagePng,
        "AUDIO_WAVEFORM" => FieldType::AudioWaveform {
            float: f.get("sample_format").and_then(Value::as_str) == Some("float"),
        },
        "AUDIO_COMPRESSED" => FieldType::AudioCompressed,
        "TEXT_RAW" => FieldType::TextRaw,
        "TEXT_TOKENIZED" => FieldType::TextTokenized {
            vocab_size: num(f, "vocab_size").unwrap_or(0),
        },
        other => return Err(format!("type {other:?} is not one MLDF 1.0 writes")),
    };
    Ok(Field::new(name, ty, nullable))
}

/// Parts of a JSON value that a `FieldValue` borrows.
enum Cell {
    Missing,
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
    Text(String),
    Image(u16, u16, u8, Vec<u8>),
    Audio(u32, u32, u16, u8, u8, Vec<u8>),
    Tokens(u8, Vec<i32>),
}

fn float_of(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| match v.as_str()? {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    })
}

fn ndarray_bytes(
    v: &Value,
    dtype: dataformats::mldf::Dtype,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    use dataformats::mldf::Dtype as D;
    if let Some(a) = v.as_array() {
        for x in a {
            ndarray_bytes(x, dtype, out)?;
        }
        return Ok(());
    }
    let bad = || format!("{v} is not a {}", dtype.name());
    let i = || v.as_i64().ok_or_else(bad);
    let u = || v.as_u64().ok_or_else(bad);
    let f = || float_of(v).ok_or_else(bad);
    match dtype {
        D::Bool => out.push(u8::from(v.as_bool().ok_or_else(bad)?)),
        D::U8 => out.push(u8::try_from(u()?).map_err(|_| bad())?),
        D::I8 => out.extend(i8::try_from(i()?).map_err(|_| bad())?.to_le_bytes()),
        D::U16 => out.extend(u16::try_from(u()?).map_err(|_| bad())?.to_le_bytes()),
        D::I16 => out.extend(i16::try_from(i()?).map_err(|_| bad())?.to_le_bytes()),
        D::U32 => out.extend(u32::try_from(u()?).map_err(|_| bad())?.to_le_bytes()),
        D::I32 => out.extend(i32::try_from(i()?).map_err(|_| bad())?.to_le_bytes()),
        D::U64 => out.extend(u()?.to_le_bytes()),
        D::I64 => out.extend(i()?.to_le_bytes()),
        D::F32 => out.extend((f()? as f32).to_le_bytes()),
        D::F64 => out.extend(f()?.to_le_bytes()),
        D::BF16 => out.extend((((f()? as f32).to_bits() >> 16) as u16).to_le_bytes()),
        D::F16 => return Err("float16 values come as a blob".into()),
    }
    Ok(())
}

/// A JSON line's member for field `f`: an absent member is a missing value,
/// and so is `null` except in a JSON field, where it is the JSON value null.
fn cell(f: &dataformats::mldf::Field, v: Option<&Value>, base: &Path) -> Result<Cell, String> {
    use dataformats::mldf::FieldType as T;
    let Some(v) = v else {
        return Ok(Cell::Missing);
    };
    if v.is_null() && f.ty != T::Json {
        return Ok(Cell::Missing);
    }
    let dims = |data: &[u8], png: bool| -> Result<(u16, u16, u8), String> {
        match (
            num::<u16>(v, "height"),
            num::<u16>(v, "width"),
            num::<u8>(v, "channels"),
        ) {
            (Ok(h), Ok(w), Ok(c)) => Ok((h, w, c)),
            _ if png => dataformats::mldf::image::png_dims(data),
            _ => dataformats::mldf::image::jpeg_dims(data),
        }
    };
    Ok(match &f.ty {
        T::Int => Cell::Int(v.as_i64().ok_or("an integer")?),
        T::Float => Cell::Float(float_of(v).ok_or("a number")?),
        T::Bytes => Cell::Bytes(blob(v, base)?),
        T::NdArray { dtype, .. } => {
            if v.is_array() {
                let mut b = Vec::new();
                ndarray_bytes(v, *dtype, &mut b)?;
                Cell::Bytes(b)
            } else {
                Cell::Bytes(blob(v, base)?)
            }
        }
        T::Json => Cell::Text(v.to_string()),
        T::TextRaw => Cell::Text(v.as_str().ok_or("a string")?.to_string()),
        T::ImageRaw => {
            let data = blob(v, base)?;
            Cell::Image(
                num(v, "height")?,
                num(v, "width")?,
                num(v, "channels")?,
                data,
            )
        }
        T::ImageJpeg { .. } | T::ImagePng => {
            let data = blob(v, base)?;
            let (h, w, c) = dims(&data, matches!(f.ty, T::ImagePng))?;
            Cell::Image(h, w, c, data)
        }
        T::AudioWaveform { .. } | T::AudioCompressed => {
            let data = blob(v, base)?;
            let codec = if matches!(f.ty, T::AudioWaveform { .. }) {
                0
            } else {
                num(v, "codec")?
            };
            Cell::Audio(
                num(v, "num_samples").unwrap_or(0),
                num(v, "sample_rate").unwrap_or(0),
                num(v, "num_channels").unwrap_or(0),
                num(v, "bit_depth").unwrap_or(0),
                codec,
                data,
            )
        }
        T::TextTokenized { .. } => {
            let (list, enc) = match v.as_array() {
                Some(a) => (a.clone(), 1),
                None => (
                    v.get("tokens")
                        .and_then(Value::as_array)
                        .cloned()
                        .ok_or("a list of token ids")?,
                    num(v, "encoding").unwrap_or(1),
                ),
            };
            let ids = list
                .iter()
                .map(|x| {
                    x.as_i64()
                        .and_then(|x| i32::try_from(x).ok())
                        .ok_or("token ids are i32")
                })
                .collect::<Result<Vec<_>, _>>()?;
            Cell::Tokens(enc, ids)
        }
        T::Opaque { .. } => return Err("opaque field".into()),
    })
}

fn field_value(c: &Cell) -> dataformats::mldf::FieldValue<'_> {
    use dataformats::mldf::FieldValue as F;
    match c {
        Cell::Missing => F::Missing,
        Cell::Int(x) => F::Int(*x),
        Cell::Float(x) => F::Float(*x),
        Cell::Bytes(b) => F::Bytes(b),
        Cell::Text(t) => F::Text(t),
        Cell::Image(h, w, ch, d) => F::Image {
            height: *h,
            width: *w,
            channels: *ch,
            data: d,
        },
        Cell::Audio(n, r, ch, b, c, d) => F::Audio {
            num_samples: *n,
            sample_rate: *r,
            num_channels: *ch,
            bit_depth: *b,
            codec: *c,
            data: d,
        },
        Cell::Tokens(e, ids) => F::Tokens { encoding: *e, ids },
    }
}

/// The value a writer wants for a cell of field `f` (bytes fields take
/// their own variants).
fn adapt<'a>(
    f: &dataformats::mldf::Field,
    v: dataformats::mldf::FieldValue<'a>,
) -> dataformats::mldf::FieldValue<'a> {
    use dataformats::mldf::{FieldType as T, FieldValue as F};
    match (&f.ty, v) {
        (T::NdArray { .. }, F::Bytes(b)) => F::NdArray(b),
        (T::Json, F::Text(t)) => F::Json(t),
        (_, v) => v,
    }
}

fn writer_options(schema: &Value) -> Result<dataformats::mldf::WriterOptions, String> {
    let mut o = dataformats::mldf::WriterOptions::default();
    if let Some(p) = schema.get("page_size").and_then(Value::as_u64) {
        o.page_size = u32::try_from(p).map_err(|_| "page_size")?;
    }
    o.compressed = schema
        .get("compressed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    o.checksummed = schema
        .get("checksummed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    o.page_packing = schema
        .get("page_packing")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(o)
}

/// `convert data.jsonl data.mldf --schema schema.json` (streaming writer).
pub(crate) fn convert_jsonl(
    input: &Path,
    output: &Path,
    schema: &Path,
    as_json: bool,
) -> Result<(), Failure> {
    use std::io::BufRead;
    let usage = |m: String| Failure::new(2, "usage", Some(schema), m);
    let text = std::fs::read_to_string(schema)
        .map_err(|e| Failure::new(1, "io", Some(schema), e.to_string()))?;
    let sv: Value = serde_json::from_str(&text).map_err(|e| usage(format!("schema: {e}")))?;
    let fields = sv
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| usage("the schema needs a \"fields\" list".into()))?
        .iter()
        .map(parse_field)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(format!("schema: {e}")))?;
    let opts = writer_options(&sv).map_err(|e| usage(format!("schema: {e}")))?;
    let mut w = dataformats::mldf::Writer::create(output, fields.clone(), opts)
        .map_err(|e| fail(output, &e))?;
    let base = input.parent().unwrap_or(Path::new("."));
    let size = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let file = std::fs::File::open(input)
        .map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
    let bar = progress::bytes(size, "jsonl->mldf", as_json);
    for (ln, line) in std::io::BufReader::with_capacity(1 << 20, file)
        .lines()
        .enumerate()
    {
        let line = line.map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
        bar.inc(line.len() as u64 + 1);
        if line.trim().is_empty() {
            continue;
        }
        let loc =
            |m: String| Failure::new(1, "bad_jsonl", Some(input), format!("line {}: {m}", ln + 1));
        let row: Value = serde_json::from_str(&line).map_err(|e| loc(e.to_string()))?;
        let cells = fields
            .iter()
            .map(|f| {
                cell(f, row.get(&f.name), base).map_err(|m| loc(format!("field {:?}: {m}", f.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let values: Vec<_> = fields
            .iter()
            .zip(&cells)
            .map(|(f, c)| adapt(f, field_value(c)))
            .collect();
        w.add_sample(&values).map_err(|e| loc(e.to_string()))?;
    }
    let n = w.samples();
    w.finish().map_err(|e| fail(output, &e))?;
    bar.finish_and_clear();
    if as_json {
        say!("{}", json!({"samples": n}));
    } else {
        say!("{} -> {}: {n} sample(s)", input.display(), output.display());
    }
    Ok(())
}

/// `convert x.mldf x.jsonl`: `dump` into a file that appears when complete.
pub(crate) fn to_jsonl(input: &Path, output: &Path) -> Result<(), Failure> {
    let r = open(input)?;
    let io = |e: std::io::Error| Failure::new(1, "io", Some(output), e.to_string());
    let mut f = std::io::BufWriter::new(dataformats::core::AtomicFile::create(output).map_err(io)?);
    write_jsonl(&r, input, 0, r.num_samples(), &mut f)?;
    f.into_inner()
        .map_err(|e| io(e.into_error()))?
        .finish()
        .map_err(io)?;
    say!(
        "{} -> {}: {} sample(s)",
        input.display(),
        output.display(),
        r.num_samples()
    );
    Ok(())
}

fn write_jsonl(
    r: &Reader,
    path: &Path,
    start: u64,
    end: u64,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::new(1, "io", None, e.to_string());
    for i in start.min(end)..end {
        let mut line = String::from("{");
        for (j, f) in r.fields().iter().enumerate() {
            let v = r.value(i, j).map_err(|e| fail(path, &e))?;
            if j > 0 {
                line.push_str(", ");
            }
            line.push_str(&Value::String(f.name.clone()).to_string());
            line.push_str(": ");
            line.push_str(&render::value_json(&f.ty, &v));
        }
        line.push('}');
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(())
}
