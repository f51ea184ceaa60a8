//! Conversions through the facade's common view (`dataformats::open`):
//! any format to JSON lines, and any format to MLDF.

use std::io::Write;
use std::path::Path;

use dataformats::dataset::{Dataset, Value};
use dataformats::mldf::{Dtype, Field, FieldType, FieldValue, Writer, WriterOptions};
use serde_json::json;

use crate::output::say;
use crate::{Failure, progress};

/// The failure of a facade error, its exit code taken from the error's
/// variant: 3 for input this build cannot read, 2 for a bad request (an
/// unknown column, a range), 1 for a damaged file or a failed operation.
pub(crate) fn fail(path: &Path, e: &dataformats::dataset::Error) -> Failure {
    use dataformats::dataset::Error as E;
    let (code, kind) = match e {
        E::Unsupported { .. } => (3, "unsupported"),
        E::Unrecognized { .. } => (3, "unrecognized"),
        E::InvalidArgument { .. } => (2, "usage"),
        E::Io { .. } => (1, "io"),
        E::Lossy { .. } => (1, "lossy"),
        _ => (1, "invalid"),
    };
    Failure::new(code, kind, Some(path), e.to_string())
}

pub(crate) fn open(path: &Path) -> Result<Box<dyn Dataset>, Failure> {
    dataformats::open(path).map_err(|e| fail(path, &e))
}

/// Records to read at a time: each batch decodes a compressed block once.
const BATCH: u64 = 4096;

/// Calls `f(i, record)` for records `range` of `d`, read in batches.
fn each_record(
    d: &dyn Dataset,
    path: &Path,
    range: std::ops::Range<u64>,
    mut f: impl FnMut(u64, &[Value]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let end = range.end.min(d.len());
    let mut i = range.start.min(end);
    while i < end {
        let stop = end.min(i.saturating_add(BATCH));
        for (k, r) in d
            .records(i..stop)
            .map_err(|e| fail(path, &e))?
            .iter()
            .enumerate()
        {
            f(i + k as u64, r)?;
        }
        i = stop;
    }
    Ok(())
}

/// `inspect` through the common view (formats without a dedicated
/// inspector, such as FFCV): format, version, records and columns.
pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    if as_json {
        say!("{}", d.summary_json());
        return Ok(());
    }
    say!(
        "{}: {} version {}, {} record(s)",
        path.display(),
        d.format().description(),
        d.version(),
        d.len()
    );
    for c in d.columns() {
        let dims: Vec<String> = c
            .shape
            .iter()
            .map(|&x| if x == 0 { "*".into() } else { x.to_string() })
            .collect();
        say!(
            "  {:<20} {:<16} {}",
            c.name,
            c.ty,
            if dims.is_empty() {
                "scalar".to_string()
            } else {
                format!("[{}]", dims.join(", "))
            }
        );
    }
    Ok(())
}

/// `validate` through the common view.
pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    d.validate().map_err(|e| fail(path, &e))?;
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": d.format().name(), "records": d.len()})
        );
    } else {
        say!(
            "{}: ok: {} record(s) of {}, every value checked",
            path.display(),
            d.len(),
            d.format().description()
        );
    }
    Ok(())
}

/// `dump` through the common view: one JSON object per record.
pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>) -> Result<(), Failure> {
    let d = open(path)?;
    let cols = d.columns();
    let (start, end) = range.unwrap_or((0, d.len()));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| Failure::new(1, "io", None, e.to_string());
    each_record(d.as_ref(), path, start..end, |_, r| {
        writeln!(out, "{}", record_json(&cols, r)).map_err(io)
    })?;
    out.flush().map_err(io)
}

/// One record as a JSON object keyed by column name.
fn record_json(cols: &[dataformats::dataset::Column], r: &[Value]) -> String {
    let mut line = String::from("{");
    for (k, (c, v)) in cols.iter().zip(r).enumerate() {
        if k > 0 {
            line.push_str(", ");
        }
        dataformats::core::text::push_json_string(&mut line, &c.name);
        line.push_str(": ");
        line.push_str(&v.to_json());
    }
    line.push('}');
    line
}

/// `convert IN out.jsonl`: one JSON object per record, keyed by column.
pub(crate) fn to_jsonl(input: &Path, output: &Path, as_json: bool) -> Result<(), Failure> {
    let d = open(input)?;
    let cols = d.columns();
    let io = |e: std::io::Error| Failure::new(1, "io", Some(output), e.to_string());
    let mut f = std::io::BufWriter::new(dataformats::core::AtomicFile::create(output).map_err(io)?);
    let bar = progress::bytes(d.len(), "-> jsonl", as_json);
    each_record(d.as_ref(), input, 0..d.len(), |_, r| {
        bar.inc(1);
        writeln!(f, "{}", record_json(&cols, r)).map_err(io)
    })?;
    f.into_inner()
        .map_err(|e| io(e.into_error()))?
        .finish()
        .map_err(io)?;
    bar.finish_and_clear();
    if as_json {
        say!(
            "{}",
            json!({"records": d.len(), "format": d.format().name()})
        );
    } else {
        say!(
            "{} -> {}: {} record(s) of {}",
            input.display(),
            output.display(),
            d.len(),
            d.format().name()
        );
    }
    Ok(())
}

/// How a column's values become an MLDF field.
#[derive(Debug, Clone)]
enum Plan {
    Int,
    /// Unsigned integers stored as INT (refused above i64::MAX).
    UInt,
    Float,
    /// Booleans as INT 0/1 (a representation change: reported).
    Bool,
    Text,
    Bytes,
    /// Fixed-shape tensors of an MLDF dtype.
    Tensor(Dtype, Vec<u64>),
    /// Lists and other tensors as JSON text (a representation change: reported).
    Json,
    /// Big-endian tensors of an MLDF dtype: the same values, byte-swapped
    /// to little-endian.
    TensorSwapped(Dtype, Vec<u64>),
    /// Tensors of an element type MLDF lacks (strings, records, complex,
    /// big-endian) as their bytes (the type is lost: reported).
    TensorBytes(String),
}

fn dtype_of(name: &str) -> Option<Dtype> {
    (1..=13)
        .filter_map(Dtype::from_code)
        .find(|d| d.name() == name)
        .or(match name {
            "<f4" | "f4" => Some(Dtype::F32),
            "<f8" | "f8" => Some(Dtype::F64),
            "<i4" | "i4" => Some(Dtype::I32),
            "<i8" | "i8" => Some(Dtype::I64),
            "<u4" | "u4" => Some(Dtype::U32),
            "<u8" | "u8" => Some(Dtype::U64),
            "<i2" | "i2" => Some(Dtype::I16),
            "<u2" | "u2" => Some(Dtype::U16),
            "|i1" | "i1" => Some(Dtype::I8),
            "|u1" | "u1" => Some(Dtype::U8),
            "|b1" | "b1" | "bool" => Some(Dtype::Bool),
            _ => None,
        })
}

fn plan_for(v: &Value) -> Option<Plan> {
    Some(match v {
        Value::Null => return None,
        Value::Int(_) => Plan::Int,
        Value::UInt(_) => Plan::UInt,
        Value::Float(_) => Plan::Float,
        Value::Bool(_) => Plan::Bool,
        Value::Text(_) => Plan::Text,
        Value::Bytes(_) => Plan::Bytes,
        // A single int64/float64 (a numpy scalar column) is MLDF's INT/FLOAT.
        Value::Tensor { dtype, shape, .. }
            if shape.is_empty() && dtype_of(dtype) == Some(Dtype::I64) =>
        {
            Plan::Int
        }
        Value::Tensor { dtype, shape, .. }
            if shape.is_empty() && dtype_of(dtype) == Some(Dtype::F64) =>
        {
            Plan::Float
        }
        Value::Tensor { dtype, shape, .. } => match dtype_of(dtype) {
            Some(d) => Plan::Tensor(d, shape.clone()),
            None => match dtype
                .strip_prefix('>')
                .and_then(|t| dtype_of(&format!("<{t}")))
            {
                Some(d) => Plan::TensorSwapped(d, shape.clone()),
                None => Plan::TensorBytes(dtype.clone()),
            },
        },
        Value::List(_) => Plan::Json,
    })
}

fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => json!(b),
        Value::Int(x) => json!(x),
        Value::UInt(x) => json!(x),
        Value::Float(x) if x.is_finite() => json!(x),
        Value::Float(x) => json!(if x.is_nan() {
            "NaN"
        } else if *x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }),
        Value::Text(s) => json!(s),
        Value::Bytes(b) => json!({"hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>()}),
        Value::List(l) => serde_json::Value::Array(l.iter().map(value_json).collect()),
        other => serde_json::from_str(&other.to_json()).unwrap_or(serde_json::Value::Null),
    }
}

/// `convert IN out.mldf [--lossy]`: every column becomes a field, typed from
/// the records (a column that is empty in every record is missing
/// everywhere). Representation changes (booleans as 0/1 integers, lists as
/// JSON text, tensors of a dtype MLDF lacks as bytes) are listed, and the
/// conversion refuses them unless `lossy` is set.
pub(crate) fn to_mldf(
    input: &Path,
    output: &Path,
    lossy: bool,
    as_json: bool,
) -> Result<(), Failure> {
    let d = open(input)?;
    let cols = d.columns();
    // Types from the first record where each column has a value.
    let mut plans: Vec<Option<Plan>> = vec![None; cols.len()];
    let mut nullable = vec![false; cols.len()];
    // Every record: a missing value anywhere makes its field NULLABLE.
    each_record(d.as_ref(), input, 0..d.len(), |_, r| {
        for ((slot, null), v) in plans.iter_mut().zip(nullable.iter_mut()).zip(r) {
            match (slot.clone(), plan_for(v)) {
                (_, None) => *null = true,
                (None, Some(p)) => *slot = Some(p),
                (Some(Plan::Tensor(a, s)), Some(Plan::Tensor(b, t))) if a != b || s != t => {
                    *slot = Some(Plan::Json)
                }
                _ => {}
            }
        }
        Ok(())
    })?;
    let mut changes = Vec::new();
    let mut fields = Vec::new();
    for ((c, p), &null) in cols.iter().zip(&plans).zip(&nullable) {
        let from_schema = dtype_of(&c.ty).map(|dtype| match dtype {
            Dtype::I64 if c.shape.is_empty() => FieldType::Int,
            Dtype::F64 if c.shape.is_empty() => FieldType::Float,
            _ => FieldType::NdArray {
                dtype,
                shape: c.shape.clone(),
            },
        });
        let has_schema_type = from_schema.is_some();
        let ty = match p {
            None if d.is_empty() && has_schema_type => from_schema.unwrap_or(FieldType::Int),
            None => FieldType::Int,
            Some(Plan::Int | Plan::UInt) => FieldType::Int,
            Some(Plan::Float) => FieldType::Float,
            Some(Plan::Bool) => {
                changes.push(format!("{:?}: booleans become integers 0/1", c.name));
                FieldType::Int
            }
            Some(Plan::Text) => FieldType::TextRaw,
            Some(Plan::Bytes) => FieldType::Bytes,
            Some(Plan::Tensor(dt, shape) | Plan::TensorSwapped(dt, shape)) => FieldType::NdArray {
                dtype: *dt,
                shape: shape.clone(),
            },
            Some(Plan::Json) => {
                changes.push(format!("{:?} ({}): lists become JSON text", c.name, c.ty));
                FieldType::Json
            }
            Some(Plan::TensorBytes(dtype)) => {
                changes.push(format!(
                    "{:?}: elements of type {dtype}, which MLDF's NDARRAY lacks, become BYTES",
                    c.name
                ));
                FieldType::Bytes
            }
        };
        let no_values = p.is_none() && !has_schema_type;
        fields.push(Field::new(c.name.clone(), ty, null || no_values));
    }
    if !changes.is_empty() && !lossy {
        return Err(Failure::new(
            1,
            "lossy",
            Some(input),
            format!(
                "MLDF cannot hold these as they are: {}; pass --lossy to convert anyway",
                changes.join("; ")
            ),
        ));
    }
    for c in &changes {
        eprintln!("note: {c}");
    }
    let mut w = Writer::create(output, fields.clone(), WriterOptions::default())
        .map_err(|e| Failure::new(1, e.kind().as_str(), Some(output), e.to_string()))?;
    let bar = progress::bytes(d.len(), "-> mldf", as_json);
    each_record(d.as_ref(), input, 0..d.len(), |i, r| {
        let texts: Vec<String> = r
            .iter()
            .zip(&fields)
            .map(|(v, f)| match (&f.ty, v) {
                (FieldType::Json, v) => value_json(v).to_string(),
                (_, Value::Text(s)) => s.clone(),
                _ => String::new(),
            })
            .collect();
        // Big-endian tensors, byte-swapped to little-endian.
        let swapped: Vec<Option<Vec<u8>>> = r
            .iter()
            .zip(&fields)
            .map(|(v, f)| match (&f.ty, v) {
                (FieldType::NdArray { dtype: d, .. }, Value::Tensor { data, dtype, .. })
                    if dtype.starts_with('>') =>
                {
                    let n = usize::try_from(d.size()).unwrap_or(1).max(1);
                    Some(
                        data.chunks_exact(n)
                            .flat_map(|c| c.iter().rev().copied())
                            .collect(),
                    )
                }
                _ => None,
            })
            .collect();
        let mut vals = Vec::with_capacity(r.len());
        for (((v, f), t), sw) in r.iter().zip(&fields).zip(&texts).zip(&swapped) {
            let uint_err = |x: u64| {
                Failure::new(
                    1,
                    "lossy",
                    Some(input),
                    format!("record {i}: {x} does not fit MLDF's i64 INT"),
                )
            };
            vals.push(match (&f.ty, v) {
                (_, Value::Null) => FieldValue::Missing,
                (FieldType::Json, _) => FieldValue::Json(t),
                (_, Value::Int(x)) => FieldValue::Int(*x),
                (_, Value::UInt(x)) if lossy => FieldValue::Int(*x as i64),
                (_, Value::UInt(x)) => {
                    FieldValue::Int(i64::try_from(*x).map_err(|_| uint_err(*x))?)
                }
                (_, Value::Bool(b)) => FieldValue::Int(i64::from(*b)),
                (_, Value::Float(x)) => FieldValue::Float(*x),
                (FieldType::Int, Value::Tensor { data, .. }) => FieldValue::Int(
                    i64::from_le_bytes(data.as_slice().try_into().unwrap_or([0; 8])),
                ),
                (FieldType::Float, Value::Tensor { data, .. }) => FieldValue::Float(
                    f64::from_le_bytes(data.as_slice().try_into().unwrap_or([0; 8])),
                ),
                (_, Value::Text(_)) => FieldValue::Text(t),
                (FieldType::NdArray { .. }, Value::Tensor { data, .. }) => {
                    FieldValue::NdArray(sw.as_deref().unwrap_or(data))
                }
                (_, Value::Bytes(b)) | (_, Value::Tensor { data: b, .. }) => FieldValue::Bytes(b),
                (_, Value::List(_)) => FieldValue::Missing,
            });
        }
        w.add_sample(&vals).map_err(|e| {
            Failure::new(
                1,
                e.kind().as_str(),
                Some(input),
                format!("record {i}: {e}"),
            )
        })?;
        bar.inc(1);
        Ok(())
    })?;
    w.finish()
        .map_err(|e| Failure::new(1, e.kind().as_str(), Some(output), e.to_string()))?;
    bar.finish_and_clear();
    if as_json {
        say!(
            "{}",
            json!({"records": d.len(), "from": d.format().name(), "changes": changes})
        );
    } else {
        say!(
            "{} -> {}: {} record(s) from {}",
            input.display(),
            output.display(),
            d.len(),
            d.format().name()
        );
    }
    Ok(())
}

/// `convert IN.mldf OUT.idv [--lossy]`: INT → Int64, FLOAT → Double,
/// TEXT_RAW → text, 1-d numeric NDARRAY → a fixed-size vector of its type.
/// Fields IDV cannot hold (bytes, images, audio, JSON, tokens) and missing
/// values (IDV has no missing numbers) are refused unless `lossy`, which
/// skips such fields and writes missing values as 0 / NaN / empty text.
pub(crate) fn mldf_to_idv(
    input: &Path,
    output: &Path,
    lossy: bool,
    as_json: bool,
) -> Result<(), Failure> {
    use dataformats::idv::{ColumnSpec, ColumnType, ItemType, Values, WriterOptions as IdvOptions};
    use dataformats::mldf::{Dtype as D, FieldType as T, Reader, Value as M};
    let e = |x: dataformats::mldf::Error| {
        Failure::new(1, x.kind().as_str(), Some(input), x.to_string())
    };
    let r = Reader::open(input).map_err(e)?;
    let item_of = |d: D| -> Option<ItemType> {
        Some(match d {
            D::Bool => ItemType::Bool,
            D::U8 => ItemType::U8,
            D::I8 => ItemType::I8,
            D::U16 => ItemType::U16,
            D::I16 => ItemType::I16,
            D::U32 => ItemType::U32,
            D::I32 => ItemType::I32,
            D::U64 => ItemType::U64,
            D::I64 => ItemType::I64,
            D::F32 => ItemType::F32,
            D::F64 => ItemType::F64,
            D::F16 | D::BF16 => return None,
        })
    };
    let mut keep = Vec::new();
    let mut problems = Vec::new();
    for (j, f) in r.fields().iter().enumerate() {
        let ty = match &f.ty {
            T::Int => Some(ColumnType::Scalar(ItemType::I64)),
            T::Float => Some(ColumnType::Scalar(ItemType::F64)),
            T::TextRaw => Some(ColumnType::Scalar(ItemType::Text)),
            T::NdArray { dtype, shape } if shape.len() == 1 => item_of(*dtype).and_then(|it| {
                shape
                    .first()
                    .and_then(|&d| u32::try_from(d).ok())
                    .filter(|&n| n > 0)
                    .map(|n| ColumnType::vector(it, n))
            }),
            _ => None,
        };
        match ty {
            Some(t) => {
                if f.nullable {
                    problems.push(format!(
                        "{:?}: missing values become 0 / NaN / empty text",
                        f.name
                    ));
                }
                keep.push((j, t));
            }
            None => problems.push(format!(
                "{:?} ({}): IDV has no column type for it; skipped",
                f.name,
                f.ty.name()
            )),
        }
    }
    if !problems.is_empty() && !lossy {
        return Err(Failure::new(
            1,
            "lossy",
            Some(input),
            format!(
                "IDV cannot hold these as they are: {}; pass --lossy to convert anyway",
                problems.join("; ")
            ),
        ));
    }
    for p in &problems {
        eprintln!("note: {p}");
    }
    let specs: Vec<ColumnSpec> = keep
        .iter()
        .filter_map(|(j, t)| {
            r.fields()
                .get(*j)
                .map(|f| ColumnSpec::new(f.name.clone(), t.clone()))
        })
        .collect();
    let mut w = dataformats::idv::Writer::create(output, specs, IdvOptions::default())
        .map_err(|x| Failure::new(1, x.kind().as_str(), Some(output), x.to_string()))?;
    let batch = w.rows_per_block().max(1) as u64;
    let bar = progress::bytes(r.num_samples(), "mldf->idv", as_json);
    let mut at = 0u64;
    while at < r.num_samples() {
        let end = (at + batch).min(r.num_samples());
        let mut cols: Vec<Values> = keep.iter().map(|(_, t)| Values::empty_of(t)).collect();
        for i in at..end {
            for ((j, t), col) in keep.iter().zip(cols.iter_mut()) {
                let v = r.value(i, *j).map_err(e)?;
                match (col, v) {
                    (Values::I64(c), M::Int(x)) => c.push(x),
                    (Values::I64(c), _) => c.push(0),
                    (Values::F64(c), M::Float(x)) => c.push(x),
                    (Values::F64(c), _) => c.push(f64::NAN),
                    (Values::Text(c), M::Text(s)) => c.push(&s),
                    (Values::Text(c), _) => c.push(""),
                    (Values::Vector(vv), val) => {
                        let n = match t {
                            ColumnType::Vector { dims, .. } => {
                                dims.first().copied().unwrap_or(0) as usize
                            }
                            _ => 0,
                        };
                        let item = t.item();
                        let bytes: Vec<u8> = match val {
                            M::NdArray(b) => b.into_owned(),
                            _ => vec![0u8; n * item.fixed_size().unwrap_or(1)],
                        };
                        vv.push_dense(&decode_items(item, &bytes));
                    }
                    _ => {}
                }
            }
        }
        w.write_batch(&cols)
            .map_err(|x| Failure::new(1, x.kind().as_str(), Some(output), x.to_string()))?;
        bar.inc(end - at);
        at = end;
    }
    w.finish()
        .map_err(|x| Failure::new(1, x.kind().as_str(), Some(output), x.to_string()))?;
    bar.finish_and_clear();
    if as_json {
        say!(
            "{}",
            json!({"records": r.num_samples(), "columns": keep.len(), "changes": problems})
        );
    } else {
        say!(
            "{} -> {}: {} record(s), {} column(s)",
            input.display(),
            output.display(),
            r.num_samples(),
            keep.len()
        );
    }
    Ok(())
}

/// Little-endian elements as IDV values of `item`.
fn decode_items(item: dataformats::idv::ItemType, b: &[u8]) -> dataformats::idv::Values {
    use dataformats::idv::{ItemType as I, Values as V};
    fn each<T, const N: usize>(b: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
        b.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    match item {
        I::Bool => V::Bool(b.iter().map(|&x| x != 0).collect()),
        I::U8 => V::U8(b.to_vec()),
        I::I8 => V::I8(each(b, i8::from_le_bytes)),
        I::U16 => V::U16(each(b, u16::from_le_bytes)),
        I::I16 => V::I16(each(b, i16::from_le_bytes)),
        I::U32 => V::U32(each(b, u32::from_le_bytes)),
        I::I32 => V::I32(each(b, i32::from_le_bytes)),
        I::U64 => V::U64(each(b, u64::from_le_bytes)),
        I::I64 => V::I64(each(b, i64::from_le_bytes)),
        I::F32 => V::F32(each(b, f32::from_le_bytes)),
        _ => V::F64(each(b, f64::from_le_bytes)),
    }
}

/// One MLDF field as a numpy column: field index, name, numpy type string
/// and the shape of one value.
pub(crate) struct NumpyColumn {
    pub(crate) field: usize,
    pub(crate) name: String,
    pub(crate) typestr: &'static str,
    pub(crate) shape: Vec<u64>,
}

/// The numpy type string of an MLDF dtype (bfloat16 has none).
fn numpy_typestr(d: Dtype) -> Option<&'static str> {
    Some(match d {
        Dtype::Bool => "|b1",
        Dtype::I8 => "|i1",
        Dtype::U8 => "|u1",
        Dtype::I16 => "<i2",
        Dtype::U16 => "<u2",
        Dtype::I32 => "<i4",
        Dtype::U32 => "<u4",
        Dtype::I64 => "<i8",
        Dtype::U64 => "<u8",
        Dtype::F16 => "<f2",
        Dtype::F32 => "<f4",
        Dtype::F64 => "<f8",
        _ => return None,
    })
}

/// The fields of an MLDF file that numpy arrays can hold (NDARRAY of a
/// numpy dtype, INT as int64, FLOAT as float64), for writing Bloscpack and
/// BLZ. Other fields, and NULLABLE ones (numpy arrays have no missing
/// values), are refused unless `lossy`, which leaves them out; the second
/// value lists them.
pub(crate) fn numpy_columns(
    r: &dataformats::mldf::Reader,
    input: &Path,
    lossy: bool,
    target: &str,
) -> Result<(Vec<NumpyColumn>, Vec<String>), Failure> {
    let mut cols = Vec::new();
    let mut left_out = Vec::new();
    for (j, f) in r.fields().iter().enumerate() {
        let col = match &f.ty {
            _ if f.nullable => None,
            FieldType::Int => Some(("<i8", Vec::new())),
            FieldType::Float => Some(("<f8", Vec::new())),
            FieldType::NdArray { dtype, shape } => {
                numpy_typestr(*dtype).map(|t| (t, shape.clone()))
            }
            _ => None,
        };
        match col {
            Some((typestr, shape)) => cols.push(NumpyColumn {
                field: j,
                name: f.name.clone(),
                typestr,
                shape,
            }),
            None => left_out.push(format!(
                "{:?} ({}{})",
                f.name,
                f.ty.name(),
                if f.nullable { ", NULLABLE" } else { "" }
            )),
        }
    }
    if !left_out.is_empty() && !lossy {
        return Err(Failure::new(
            1,
            "lossy",
            Some(input),
            format!(
                "{target} holds numeric arrays without missing values; these fields cannot go there: {}; pass --lossy to leave them out",
                left_out.join(", ")
            ),
        ));
    }
    if cols.is_empty() {
        return Err(Failure::new(
            1,
            "unsupported",
            Some(input),
            format!("no field of this file can become a {target} array"),
        ));
    }
    Ok((cols, left_out))
}

/// The bytes of field `c` in sample `i`, as numpy stores them.
pub(crate) fn numpy_value(
    r: &dataformats::mldf::Reader,
    input: &Path,
    i: u64,
    c: &NumpyColumn,
    out: &mut Vec<u8>,
) -> Result<(), Failure> {
    use dataformats::mldf::Value as V;
    let v = r
        .value(i, c.field)
        .map_err(|e| Failure::new(1, e.kind().as_str(), Some(input), e.to_string()))?;
    match v {
        V::Int(x) => out.extend_from_slice(&x.to_le_bytes()),
        V::Float(x) => out.extend_from_slice(&x.to_le_bytes()),
        V::NdArray(b) => out.extend_from_slice(&b),
        other => {
            return Err(Failure::new(
                1,
                "invalid",
                Some(input),
                format!("sample {i}, field {:?}: {other:?} is not numeric", c.name),
            ));
        }
    }
    Ok(())
}
