//! JSON lines into MLDF with an MLDF schema: the fields (and writer
//! settings) come from a schema document instead of being inferred, so every
//! MLDF field type can be written, blobs included (`docs/formats/mldf.md`,
//! "JSON lines"). One sample per non-blank line, streamed.

use std::path::Path;

use serde_json::Value;

mod fast;

use crate::dataset::Error;
use crate::mldf::{Dtype, Field, FieldType, FieldValue, WriterOptions};

/// The schema of a JSON lines → MLDF conversion: `{"fields": [{"name",
/// "type", "nullable", ...}], "page_size", "compressed", "checksummed",
/// "page_packing"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSchema {
    /// The MLDF fields, in order; each line's member of the same name
    /// gives the value (absent or `null`: missing).
    pub fields: Vec<Field>,
    /// The writer's settings.
    pub writer: WriterOptions,
}

impl JsonSchema {
    /// Reads a schema document.
    pub fn from_json(text: &str) -> Result<JsonSchema, Error> {
        let bad = |m: String| Error::invalid(format!("MLDF schema: {m}"));
        let sv: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let fields = sv
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("the schema needs a \"fields\" list".into()))?
            .iter()
            .map(parse_field)
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let writer = writer_options(&sv).map_err(bad)?;
        Ok(JsonSchema { fields, writer })
    }
}

fn num<T: TryFrom<u64>>(v: &Value, key: &str) -> Result<T, String> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|x| T::try_from(x).ok())
        .ok_or_else(|| format!("{key:?} missing or out of range"))
}

fn parse_field(f: &Value) -> Result<Field, String> {
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
    Ok(Field::new(name, ty).with_nullable(nullable))
}

fn writer_options(schema: &Value) -> Result<WriterOptions, String> {
    let mut o = WriterOptions::default();
    if let Some(p) = schema.get("page_size").and_then(Value::as_u64) {
        o.page_size = u32::try_from(p).map_err(|_| "page_size")?;
    }
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool).unwrap_or(false);
    o.compressed = flag("compressed");
    o.checksummed = flag("checksummed");
    o.page_packing = flag("page_packing");
    Ok(o)
}

/// A blob from `{"base64": ...}` or `{"path": ...}` (relative to `base`).
fn blob(v: &Value, base: &Path) -> Result<Vec<u8>, String> {
    use base64::Engine;
    if let Some(b) = v.get("base64").and_then(Value::as_str) {
        // Standard or URL-safe alphabet, padding optional.
        let b: String = b
            .chars()
            .filter(|c| !c.is_ascii_whitespace() && *c != '=')
            .map(|c| match c {
                '-' => '+',
                '_' => '/',
                c => c,
            })
            .collect();
        return base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(b)
            .map_err(|e| format!("invalid base64: {e}"));
    }
    if let Some(p) = v.get("path").and_then(Value::as_str) {
        return std::fs::read(base.join(p)).map_err(|e| format!("{p}: {e}"));
    }
    Err("a blob is {\"base64\": ...} or {\"path\": ...}".into())
}

/// Parts of a JSON value that a `FieldValue` borrows.
enum Cell {
    Missing,
    /// An NDARRAY's bytes, `start..end` of its block's arena.
    Span(usize, usize),
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

fn ndarray_bytes(v: &Value, dtype: Dtype, out: &mut Vec<u8>) -> Result<(), String> {
    use Dtype as D;
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
        // Rounded to nearest, ties to even, from the double itself.
        D::BF16 => out.extend(half::bf16::from_f64(f()?).to_le_bytes()),
        D::F16 => out.extend(half::f16::from_f64(f()?).to_le_bytes()),
    }
    Ok(())
}

/// A JSON line's member for field `f`: an absent member is a missing value,
/// and so is `null` except in a JSON field, where it is the JSON value null.
fn cell(f: &Field, v: Option<&Value>, base: &Path) -> Result<Cell, String> {
    use FieldType as T;
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
            _ if png => crate::core::image::png_dims(data),
            _ => crate::core::image::jpeg_dims(data),
        }
    };
    Ok(match &f.ty {
        T::Int => Cell::Int(v.as_i64().ok_or("an integer that fits i64")?),
        T::Float => Cell::Float(float_of(v).ok_or("a number")?),
        T::Bytes => Cell::Bytes(blob(v, base)?),
        T::NdArray { dtype, .. } => {
            if v.is_array() || v.is_number() {
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

/// The value the writer takes for `c` in field `f`, whose [`Cell::Span`]
/// points into `arena`.
fn field_value<'a>(f: &Field, c: &'a Cell, arena: &'a [u8]) -> FieldValue<'a> {
    use FieldValue as F;
    match c {
        Cell::Missing => F::Missing,
        Cell::Span(start, end) => F::NdArray(arena.get(*start..*end).unwrap_or_default()),
        Cell::Int(x) => F::Int(*x),
        Cell::Float(x) => F::Float(*x),
        Cell::Bytes(b) if matches!(f.ty, FieldType::NdArray { .. }) => F::NdArray(b),
        Cell::Bytes(b) => F::Bytes(b),
        Cell::Text(t) if f.ty == FieldType::Json => F::Json(t),
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

/// The cells of a line read the general way: parsed into a document, each
/// field's member converted; the message of the first error (the JSON's,
/// else the first field's in schema order).
fn general_row(line: &str, fields: &[Field], base: &Path) -> Result<Vec<Cell>, String> {
    let row: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    fields
        .iter()
        .map(|f| cell(f, row.get(&f.name), base).map_err(|m| format!("field {:?}: {m}", f.name)))
        .collect()
}

/// A block's lines as cells, in order: a row per non-blank line, each
/// `fields` cells long; an error ends the block.
struct Rows {
    bytes: u64,
    /// Each row's 0-based line number.
    lines: Vec<usize>,
    cells: Vec<Cell>,
    /// The NDARRAY bytes the cells' spans point into.
    arena: Vec<u8>,
    /// Into a compressed file: the rows as MLDF samples, numbered from 0
    /// in the block (the cells and arena then dropped).
    encoded: crate::mldf::Encoded,
    /// The first error: of a line, or (with the line and the block's
    /// sample number) of a value the writer refused.
    error: Option<Error>,
    refused: Option<(usize, crate::mldf::Error)>,
}

/// The values of row `i` of a block, whose cells are `cells` (one per
/// field, row after row) pointing into `arena`.
fn row_values<'a>(
    fields: &[Field],
    cells: &'a [Cell],
    arena: &'a [u8],
    i: usize,
    values: &mut Vec<FieldValue<'a>>,
) {
    let n = fields.len();
    let cells = cells.get(i * n..(i + 1) * n).unwrap_or_default();
    values.clear();
    values.extend(
        fields
            .iter()
            .zip(cells)
            .map(|(f, c)| field_value(f, c, arena)),
    );
}

/// Writes one MLDF sample per non-blank line of `input`; returns the
/// samples written. `progress` gets the bytes read so far.
///
/// Lines are parsed in blocks on `threads` threads (0: every core; inputs
/// from 4 MB) and the samples written in order, with the first error in
/// line order, as one line at a time would meet it.
pub(crate) fn write(
    input: &Path,
    output: &Path,
    schema: &JsonSchema,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    use super::line_blocks::{LineBlock, LineBlocks};
    use super::not_utf8;
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io {
            path: path.clone(),
            source,
        }
    };
    let fields = &schema.fields;
    let plan = fast::Plan::new(fields);
    let has_json = fields.iter().any(|f| f.ty == FieldType::Json);
    let mut w =
        crate::mldf::Writer::create(output, fields.clone(), schema.writer).map_err(Error::Mldf)?;
    let encoder = w.encoder();
    let compressed = schema.writer.compressed;
    let base = input.parent().unwrap_or(Path::new("."));
    let file = std::fs::File::open(input).map_err(io(input))?;
    let size = file.metadata().map_or(0, |m| m.len());
    let mut blocks = LineBlocks::new(std::io::BufReader::with_capacity(1 << 20, file));
    let loc = |ln: usize, m: String| Error::Data {
        format: Some(crate::Format::Mldf),
        message: format!("{}: line {}: {m}", input.display(), ln + 1),
    };
    let next = || blocks.next_block().map_err(io(input));
    let parse = |block: LineBlock| -> Rows {
        let mut rows = Rows {
            bytes: block.text.len() as u64,
            lines: Vec::new(),
            cells: Vec::new(),
            arena: Vec::new(),
            encoded: crate::mldf::Encoded::default(),
            error: None,
            refused: None,
        };
        for (ln, body) in block.lines() {
            let row = std::str::from_utf8(body)
                .map_err(|_| io(input)(not_utf8()))
                .and_then(|line| {
                    if line.trim().is_empty() {
                        return Ok(false);
                    }
                    if has_json && let Some(lit) = crate::core::json::wide_integer(line) {
                        return Err(loc(
                            ln,
                            format!(
                                "the integer {lit} does not fit 64 bits (a JSON field would keep it only as a rounded float)"
                            ),
                        ));
                    }
                    let (cells, arena) = (rows.cells.len(), rows.arena.len());
                    if let Some(p) = &plan {
                        if p.row(line, &mut rows.cells, &mut rows.arena) {
                            return Ok(true);
                        }
                        rows.cells.truncate(cells);
                        rows.arena.truncate(arena);
                    }
                    rows.cells
                        .extend(general_row(line, fields, base).map_err(|m| loc(ln, m))?);
                    Ok(true)
                });
            match row {
                Ok(false) => {}
                Ok(true) => rows.lines.push(ln),
                Err(e) => {
                    rows.error = Some(e);
                    break;
                }
            }
        }
        // Into a compressed file, the samples are encoded (checked,
        // compressed) here, on the parsing thread: the writer's thread
        // only puts them in place. Uncompressed, encoding would only add a
        // copy: the writer's thread writes the values from the block.
        if compressed {
            let mut values = Vec::with_capacity(fields.len());
            for (i, &ln) in rows.lines.iter().enumerate() {
                row_values(fields, &rows.cells, &rows.arena, i, &mut values);
                if let Err(e) = encoder.encode(i as u64, &values, &mut rows.encoded) {
                    // Before any error of a later line.
                    rows.refused = Some((ln, e));
                    break;
                }
            }
            rows.cells = Vec::new();
            rows.arena = Vec::new();
        }
        rows
    };
    let threads = crate::core::parallel::threads_for(size, threads);
    let mut read = 0u64;
    crate::core::parallel::ordered(threads, next, parse, |block| {
        read += block.bytes;
        progress(read);
        if compressed {
            let base = w.samples();
            w.add_encoded(&block.encoded).map_err(Error::Mldf)?;
            if let Some((ln, e)) = block.refused {
                return Err(loc(ln, e.after_samples(base).to_string()));
            }
        } else {
            let mut values = Vec::with_capacity(fields.len());
            for (i, &ln) in block.lines.iter().enumerate() {
                row_values(fields, &block.cells, &block.arena, i, &mut values);
                w.add_sample(&values).map_err(|e| loc(ln, e.to_string()))?;
            }
        }
        block.error.map_or(Ok(()), Err)
    })?;
    let n = w.samples();
    w.finish().map_err(Error::Mldf)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_from_json_rounds_to_nearest_even() {
        let mut out = Vec::new();
        // 1 + 2^-8 + 2^-9 is above the midpoint between two bfloat16
        // values: truncation would give 1.0, rounding 1 + 2^-7.
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-9);
        ndarray_bytes(&serde_json::json!(x), Dtype::BF16, &mut out).unwrap();
        assert_eq!(out, half::bf16::from_f32(1.0078125).to_le_bytes());
    }
}
