//! Conversions through the facade's common view (`dataformats::open`):
//! any format to JSON lines, and any format to MLDF.

use std::io::Write;
use std::path::Path;

use dataformats::dataset::{Dataset, Value};
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
    let bar = progress::units("validate", as_json);
    let result = d.validate_with(&mut progress::report(&bar));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
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
