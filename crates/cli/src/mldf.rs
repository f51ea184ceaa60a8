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
    let bar = progress::units("validate", as_json);
    let result = r.validate_with(&mut progress::report(&bar));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
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
