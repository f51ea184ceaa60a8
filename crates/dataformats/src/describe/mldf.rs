//! MLDF 1.0 files.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Description, DumpOptions, io, put};
use crate::core::Progress;
use crate::dataset::Error;
use crate::mldf::format::{FLAG_CHECKSUMMED, FLAG_COMPRESSED};
use crate::mldf::{Reader, render};

fn open(path: &Path) -> Result<Reader, Error> {
    Reader::with_options(
        crate::dataset::map_file(path)?,
        crate::core::ReadOptions::default(),
    )
    .map_err(Error::Mldf)
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

fn described(r: &Reader, json: Value, text: String) -> Description {
    let mut d = Description::new("mldf", json, text);
    d.warnings = r.warnings().to_vec();
    d
}

pub(super) fn inspect(path: &Path) -> Result<Description, Error> {
    let r = open(path)?;
    let h = r.header();
    let layout = if h.metadata_ptr < h.data_ptr {
        "A (metadata before data)"
    } else {
        "B (streaming: data before metadata)"
    };
    let fields: Vec<Value> = r
        .fields()
        .iter()
        .map(|f| json!({"name": f.name, "type": f.ty.name(), "type_id": f.ty.type_id(), "nullable": f.nullable,
            "metadata_size": f.metadata_size,
            "arguments": serde_json::from_str::<Value>(&render::arguments_json(&f.ty)).unwrap_or(Value::Null)}))
        .collect();
    let json = json!({"format": "mldf", "version": format!("{}.{}", h.version_major, h.version_minor),
        "flags": flags(h.flags), "samples": h.num_samples, "page_size": h.page_size, "fields": fields,
        "layout": {"field_desc_ptr": h.field_desc_ptr, "metadata_ptr": h.metadata_ptr, "data_ptr": h.data_ptr,
            "data_end": r.data_end(), "alloc_table_ptr": h.alloc_table_ptr, "allocations": r.num_allocations(),
            "row_size": r.row_size(), "file_size": r.source().len()},
        "warnings": r.warnings()});
    let mut t = String::new();
    put!(
        t,
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
    put!(
        t,
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
        put!(
            t,
            "field {:<24} {:<18} {}{}",
            format!("{:?}", f.name),
            f.ty.name(),
            render::arguments_json(&f.ty),
            if f.nullable { " nullable" } else { "" }
        );
    }
    Ok(described(&r, json, t))
}

pub(super) fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let r = open(path)?;
    r.validate_with(progress).map_err(Error::Mldf)?;
    let json = json!({"valid": true, "format": "mldf", "samples": r.len(), "allocations": r.num_allocations(), "warnings": r.warnings()});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} sample(s), {} allocation(s), every value{} checked",
        path.display(),
        r.len(),
        r.num_allocations(),
        if r.header().flags & FLAG_CHECKSUMMED != 0 {
            " and the CRC-32"
        } else {
            ""
        }
    );
    Ok(described(&r, json, t))
}

/// One JSON object per sample, every value in MLDF's own JSON form
/// (`{"values": ...}` for arrays, `{"hex": ...}` for bytes, ...).
pub(super) fn dump(path: &Path, opts: &DumpOptions, out: &mut dyn Write) -> Result<(), Error> {
    let r = open(path)?;
    let range = opts.clamp(r.len());
    let mut out = std::io::BufWriter::new(out);
    let mut line = String::new();
    for i in range {
        line.clear();
        line.push('{');
        for (j, f) in r.fields().iter().enumerate() {
            let v = r.value(i, j).map_err(Error::Mldf)?;
            if j > 0 {
                line.push_str(", ");
            }
            crate::core::text::push_json_string(&mut line, &f.name);
            line.push_str(": ");
            line.push_str(&render::value_json(&f.ty, &v));
        }
        line.push_str("}\n");
        out.write_all(line.as_bytes()).map_err(io)?;
    }
    out.flush().map_err(io)
}
