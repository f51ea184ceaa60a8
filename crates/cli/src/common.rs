//! Conversions through the facade's common view (`dataformats::open`):
//! any format to JSON lines, and any format to MLDF.

use std::io::Write;
use std::path::Path;

use dataformats::dataset::{Dataset, Value};
use dataformats::mldf::{Dtype, FieldType};
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
