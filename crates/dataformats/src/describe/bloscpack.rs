//! Bloscpack files, BLZ/bcolz directories and numpy `.npy` files.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Description, DumpOptions, Listing, io, put};
use crate::bloscpack::blz::{BlzDir, CArray};
use crate::bloscpack::format::checksum_name;
use crate::bloscpack::{Order, ReadOptions, Reader, npy, values};
use crate::core::{Limits, Progress, Source};
use crate::dataset::Error;

fn open(path: &Path) -> Result<Reader, Error> {
    Reader::with_options(crate::dataset::map_file(path)?, ReadOptions::default())
        .map_err(Error::Bloscpack)
}

fn shuffle_name(b: &crate::core::codec::blosc::BloscHeader) -> &'static str {
    if b.is_memcpyed() {
        "memcpyed"
    } else {
        b.shuffle().name()
    }
}

pub(super) fn inspect(path: &Path) -> Result<Description, Error> {
    let r = open(path)?;
    let h = r.header();
    let chunks: Vec<Value> = r
        .chunks()
        .iter()
        .map(|c| {
            let b = c.blosc;
            json!({
                "offset": c.offset, "cbytes": b.cbytes, "nbytes": b.nbytes, "typesize": b.typesize,
                "blocksize": b.blocksize, "codec": b.compressor().map_or("unknown", |c| c.name()),
                "shuffle": shuffle_name(&b),
            })
        })
        .collect();
    let json = json!({
        "format": "bloscpack",
        "format_version": h.format_version,
        "file_size": r.source().len(),
        "payload_bytes": r.payload_len(),
        "nchunks": h.nchunks,
        "chunk_size": h.chunk_size,
        "last_chunk": h.last_chunk,
        "typesize": h.typesize,
        "checksum": checksum_name(h.checksum),
        "offsets": h.has_offsets(),
        "max_app_chunks": h.max_app_chunks,
        "trailing_bytes": r.trailing_bytes(),
        "metadata": r.metadata().map(|m| json!({
            "codec": m.header.meta_codec.name(),
            "checksum": checksum_name(m.header.meta_checksum),
            "meta_size": m.header.meta_size,
            "max_meta_size": m.header.max_meta_size,
            "value": m.value,
        })),
        "array": r.numpy().map(|n| json!({"dtype": n.dtype.descr_json(), "shape": n.shape, "order": n.order.as_str()})),
        "chunks": chunks,
    });
    let mut t = String::new();
    put!(
        t,
        "{}: Bloscpack format {}, {} bytes",
        path.display(),
        h.format_version,
        r.source().len()
    );
    put!(
        t,
        "payload   {} bytes in {} chunk(s) of {} (last {}), typesize {}",
        r.payload_len(),
        h.nchunks,
        h.chunk_size,
        h.last_chunk,
        h.typesize
    );
    let free = if h.has_offsets() {
        format!("yes, {} slot(s) free for appends", h.max_app_chunks)
    } else {
        "no".to_string()
    };
    put!(
        t,
        "checksum  {}; offsets table: {free}",
        checksum_name(h.checksum)
    );
    if let Some(m) = r.metadata() {
        put!(
            t,
            "metadata  {} bytes ({}, {} digest, {} reserved): {}",
            m.header.meta_size,
            m.header.meta_codec.name(),
            checksum_name(m.header.meta_checksum),
            m.header.max_meta_size,
            m.json_text
        );
    }
    if let Some(n) = r.numpy() {
        put!(
            t,
            "array     dtype {} shape {:?} order {}",
            n.dtype,
            n.shape,
            n.order.as_str()
        );
    }
    if r.trailing_bytes() > 0 {
        put!(
            t,
            "trailing  {} byte(s) after the last chunk (left by an append; ignored)",
            r.trailing_bytes()
        );
    }
    put!(t);
    put!(
        t,
        "{:>6} {:>12} {:>10} {:>10} {:>8} {:>9}  {:<8} shuffle",
        "chunk",
        "offset",
        "cbytes",
        "nbytes",
        "typesize",
        "blocksize",
        "codec"
    );
    for (i, c) in r.chunks().iter().enumerate() {
        let b = c.blosc;
        put!(
            t,
            "{:>6} {:>12} {:>10} {:>10} {:>8} {:>9}  {:<8} {}",
            i,
            c.offset,
            b.cbytes,
            b.nbytes,
            b.typesize,
            b.blocksize,
            b.compressor().map_or("unknown", |c| c.name()),
            shuffle_name(&b)
        );
    }
    Ok(Description::new("bloscpack", json, t))
}

pub(super) fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let r = open(path)?;
    r.validate_with(progress).map_err(Error::Bloscpack)?;
    let json = json!({"valid": true, "format": "bloscpack", "nchunks": r.nchunks(), "payload_bytes": r.payload_len()});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} chunk(s), {} payload bytes, every {} digest and every chunk checked",
        path.display(),
        r.nchunks(),
        r.payload_len(),
        checksum_name(r.header().checksum)
    );
    Ok(Description::new("bloscpack", json, t))
}

/// Writes `index<TAB>value` lines (a raw payload as a hex dump), or with
/// `as_json` one JSON array of the elements (a raw payload's bytes).
pub(super) fn dump(
    path: &Path,
    opts: &DumpOptions,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let r = open(path)?;
    let dtype = r.numpy().map(|n| n.dtype.clone());
    let itemsize = dtype.as_ref().map_or(1, |d| d.itemsize().max(1)) as u64;
    let range = opts.clamp(r.payload_len() / itemsize);
    let mut list = Listing::new(out, as_json)?;
    // Decode in slices of at most 1 MiB worth of elements.
    let step = ((1u64 << 20) / itemsize).max(1);
    let mut buf = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let n = step.min(range.end - i);
        buf.resize((n * itemsize) as usize, 0);
        r.read_range_into(i * itemsize, &mut buf)
            .map_err(Error::Bloscpack)?;
        match &dtype {
            Some(d) => {
                for (k, e) in buf.chunks_exact(itemsize as usize).enumerate() {
                    let v = values::element(d, e).map_err(Error::Bloscpack)?;
                    list.item(i + k as u64, &v)?;
                }
            }
            None if as_json => {
                for (k, b) in buf.iter().enumerate() {
                    list.item(i + k as u64, b)?;
                }
            }
            None => {
                for (row, line) in buf.chunks(16).enumerate() {
                    let hex: Vec<String> = line.iter().map(|x| format!("{x:02x}")).collect();
                    let text: String = line
                        .iter()
                        .map(|&c| match c {
                            0x20..0x7f => char::from(c),
                            _ => '.',
                        })
                        .collect();
                    let at = i + row as u64 * 16;
                    writeln!(list.text(), "{at:08x}  {:<47}  {text}", hex.join(" ")).map_err(io)?;
                }
            }
        }
        i += n;
    }
    list.finish()
}

fn blz_err(e: crate::bloscpack::Error) -> Error {
    Error::Blz(e)
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

pub(super) fn inspect_blz(path: &Path) -> Result<Description, Error> {
    let d = crate::remote::open_blz(path, Limits::default(), false)?;
    let json = match &d {
        BlzDir::Array(a) => {
            json!({"format": "blz", "kind": d.kind(), "layout": a.layout().name(), "array": array_json(a)})
        }
        BlzDir::Table(t) => json!({
            "format": "blz", "kind": d.kind(), "layout": t.layout().name(), "nrows": t.len(), "attrs": t.attrs(),
            "columns": t.names().iter().zip(t.columns()).map(|(n, c)| json!({"name": n, "array": array_json(c)})).collect::<Vec<_>>(),
        }),
    };
    let mut t = String::new();
    put!(
        t,
        "{}: {} {} ({})",
        path.display(),
        d.layout().name(),
        d.kind(),
        d.dtype()
    );
    match &d {
        BlzDir::Array(a) => show_array(&mut t, "array", a),
        BlzDir::Table(table) => {
            put!(t, "{} row(s), attrs {}", table.len(), table.attrs());
            for (n, c) in table.names().iter().zip(table.columns()) {
                show_array(&mut t, n, c);
            }
        }
    }
    Ok(Description::new("blz", json, t))
}

/// One line on an array (or a table's column).
fn show_array(t: &mut String, name: &str, a: &CArray) {
    let stale = match a.stale_files().len() {
        0 => String::new(),
        n => format!(", {n} stale file(s) ignored"),
    };
    let attrs = if a.attrs().as_object().is_some_and(|o| !o.is_empty()) {
        format!(", attrs {}", a.attrs())
    } else {
        String::new()
    };
    put!(
        t,
        "{name:<12} {:<10} shape {:?}, chunklen {}, {} chunk file(s){stale}{attrs}",
        a.dtype().to_string(),
        a.shape(),
        a.chunklen(),
        a.chunks().len()
    );
}

pub(super) fn validate_blz(path: &Path) -> Result<Description, Error> {
    let d = crate::remote::open_blz(path, Limits::default(), true)?;
    let files: usize = match &d {
        BlzDir::Array(a) => a.chunks().len(),
        BlzDir::Table(t) => t.columns().iter().map(|c| c.chunks().len()).sum(),
    };
    let json = json!({"valid": true, "format": "blz", "kind": d.kind(), "chunk_files": files});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} {}, {files} chunk file(s) checked and decoded",
        path.display(),
        d.layout().name(),
        d.kind()
    );
    Ok(Description::new("blz", json, t))
}

/// Writes `index<TAB>row` lines, or with `as_json` one JSON array of rows.
pub(super) fn dump_blz(
    path: &Path,
    opts: &DumpOptions,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let d = crate::remote::open_blz(path, Limits::default(), false)?;
    let (rows, row_dtype) = match &d {
        BlzDir::Array(a) => (a.len(), a.dtype().clone()),
        BlzDir::Table(t) => (t.len(), t.row_dtype()),
    };
    let range = opts.clamp(rows);
    let atom = match &d {
        BlzDir::Array(arr) => arr.atomsize(),
        BlzDir::Table(t) => t.columns().iter().map(CArray::atomsize).sum(),
    }
    .max(1);
    let per_atom = (atom / row_dtype.itemsize().max(1) as u64).max(1);
    let step = ((1u64 << 20) / atom).max(1);
    let mut list = Listing::new(out, as_json)?;
    let mut buf = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let n = step.min(range.end - i);
        buf.resize((n * atom) as usize, 0);
        match &d {
            BlzDir::Array(arr) => arr.read_atoms_into(i, &mut buf),
            BlzDir::Table(t) => t.read_rows_into(i, n, &mut buf),
        }
        .map_err(blz_err)?;
        for (k, atom_bytes) in buf.chunks_exact(atom as usize).enumerate() {
            let v = if per_atom == 1 {
                values::element(&row_dtype, atom_bytes)
            } else {
                values::head(Some(&row_dtype), atom_bytes, per_atom as usize)
            }
            .map_err(blz_err)?;
            list.item(i + k as u64, &v)?;
        }
        i += n;
    }
    list.finish()
}

/// An `.npy` file's header, and whether the array bytes it promises are
/// all there (`npy::read_header` refuses a file shorter than its array).
pub(super) fn npy(path: &Path, validated: bool) -> Result<Description, Error> {
    let src = Source::open(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    let h = npy::read_header(&src).map_err(Error::Bloscpack)?;
    let nbytes = h.array.nbytes().unwrap_or(0);
    let trailing = src.len().saturating_sub(h.data_offset + nbytes);
    let fortran = h.array.order == Order::F;
    let json = json!({"format": "npy", "valid": true, "version": [h.version.0, h.version.1],
        "dtype": h.array.dtype.to_string(), "shape": h.array.shape,
        "fortran_order": fortran, "data_offset": h.data_offset, "data_bytes": nbytes,
        "trailing_bytes": trailing});
    let mut t = String::new();
    put!(
        t,
        "{}: {}numpy .npy {}.{}: dtype {}, shape {:?}, {} order, {nbytes} bytes at {}{}",
        path.display(),
        if validated { "ok: " } else { "" },
        h.version.0,
        h.version.1,
        h.array.dtype,
        h.array.shape,
        if fortran { "Fortran" } else { "C" },
        h.data_offset,
        match trailing {
            0 => String::new(),
            n => format!(" ({n} bytes after the array)"),
        }
    );
    Ok(Description::new("npy", json, t))
}
