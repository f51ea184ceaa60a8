//! `dataformats` commands on BLZ/bcolz directories.

use std::path::Path;

use dataformats::bloscpack::blz::{BlzDir, CArray};
use dataformats::bloscpack::values;
use dataformats::core::Limits;
use serde_json::{Value, json};

use crate::bloscpack::fail;
use crate::output::say;
use crate::{Failure, progress};

fn open(path: &Path) -> Result<BlzDir, Failure> {
    BlzDir::open(path).map_err(|e| fail(path, &e))
}

fn array_json(a: &CArray) -> Value {
    json!({
        "dtype": a.dtype().descr_json(),
        "dtype_storage_string": a.dtype_storage_string(),
        "shape": a.shape(),
        "chunklen": a.chunklen(),
        "atomsize": a.atomsize(),
        "chunk_files": a.chunks().len(),
        "stale_files": a.stale_files(),
        "storage": a.storage(),
        "attrs": a.attrs(),
    })
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    if as_json {
        let v = match &d {
            BlzDir::Array(a) => {
                json!({"format": "blz", "kind": d.kind(), "layout": a.layout().name(), "array": array_json(a)})
            }
            BlzDir::Table(t) => json!({
                "format": "blz", "kind": d.kind(), "layout": t.layout().name(), "nrows": t.nrows(), "attrs": t.attrs(),
                "columns": t.names().iter().zip(t.columns()).map(|(n, c)| json!({"name": n, "array": array_json(c)})).collect::<Vec<_>>(),
            }),
        };
        say!("{v}");
        return Ok(());
    }
    say!(
        "{}: {} {} ({})",
        path.display(),
        d.layout().name(),
        d.kind(),
        d.dtype()
    );
    let show = |name: &str, a: &CArray| {
        say!(
            "{name:<12} {:<10} shape {:?}, chunklen {}, {} chunk file(s){}{}",
            a.dtype().to_string(),
            a.shape(),
            a.chunklen(),
            a.chunks().len(),
            if a.stale_files().is_empty() {
                String::new()
            } else {
                format!(", {} stale file(s) ignored", a.stale_files().len())
            },
            if a.attrs().as_object().is_some_and(|o| !o.is_empty()) {
                format!(", attrs {}", a.attrs())
            } else {
                String::new()
            }
        );
    };
    match &d {
        BlzDir::Array(a) => show("array", a),
        BlzDir::Table(t) => {
            say!("{} row(s), attrs {}", t.nrows(), t.attrs());
            for (n, c) in t.names().iter().zip(t.columns()) {
                show(n, c);
            }
        }
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let bar = progress::bytes(0, "validate", as_json);
    let d = BlzDir::open_validated(path, Limits::default()).map_err(|e| fail(path, &e))?;
    bar.finish_and_clear();
    let files: usize = match &d {
        BlzDir::Array(a) => a.chunks().len(),
        BlzDir::Table(t) => t.columns().iter().map(|c| c.chunks().len()).sum(),
    };
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "blz", "kind": d.kind(), "chunk_files": files})
        );
    } else {
        say!(
            "{}: ok: {} {}, {files} chunk file(s) checked and decoded",
            path.display(),
            d.layout().name(),
            d.kind()
        );
    }
    Ok(())
}

pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>, as_json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    let (rows, row_dtype) = match &d {
        BlzDir::Array(a) => (a.len(), a.dtype().clone()),
        BlzDir::Table(t) => (t.nrows(), t.row_dtype()),
    };
    let (a, b) = range.unwrap_or((0, rows));
    let b = b.min(rows);
    let a = a.min(b);
    let atom = match &d {
        BlzDir::Array(arr) => arr.atomsize(),
        BlzDir::Table(t) => t.columns().iter().map(CArray::atomsize).sum(),
    }
    .max(1);
    let per_atom = (atom / row_dtype.itemsize().max(1) as u64).max(1);
    let step = ((1u64 << 20) / atom).max(1);
    let mut buf = Vec::new();
    if as_json {
        crate::output::raw("[");
    }
    let mut i = a;
    while i < b {
        let n = step.min(b - i);
        buf.resize((n * atom) as usize, 0);
        match &d {
            BlzDir::Array(arr) => arr.read_atoms_into(i, &mut buf),
            BlzDir::Table(t) => t.read_rows_into(i, n, &mut buf),
        }
        .map_err(|e| fail(path, &e))?;
        for (k, atom_bytes) in buf.chunks_exact(atom as usize).enumerate() {
            let idx = i + k as u64;
            let v = if per_atom == 1 {
                values::element(&row_dtype, atom_bytes)
            } else {
                values::head(Some(&row_dtype), atom_bytes, per_atom as usize)
            };
            if as_json {
                crate::output::raw(&format!("{}{v}", if idx == a { "" } else { "," }));
            } else {
                say!("{idx}\t{v}");
            }
        }
        i += n;
    }
    if as_json {
        say!("]");
    }
    Ok(())
}
