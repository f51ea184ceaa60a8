//! Typed batches into a BLZ/bcolz directory: a single column named `value`
//! becomes a carray, anything else a ctable with one array per column.
//! Columns take numpy dtypes as for Bloscpack ([`super::bloscpack`]); the
//! schema's `dataformats.attrs` (JSON) become the `__attrs__`. The layout is
//! bcolz 1.x, or blz 0.6 for an output ending in `.blz`. The directory
//! appears only when everything was written.

use arrow_array::RecordBatch;

use super::Report;
use super::bloscpack::{numpy_columns, put_cell};
use crate::bloscpack::blz::{ArrayOptions, CArrayWriter, Layout, TableWriter};
use crate::dataset::{BatchStream, Error};

/// BLZ/bcolz target settings (`layout` is chosen by the output's extension
/// when `None`: `.blz` for blz 0.6, else bcolz).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlzOptions {
    /// Array settings (layout, chunk length, codec, level, shuffle).
    pub array: Option<ArrayOptions>,
}

enum Sink {
    Array(Box<CArrayWriter>),
    Table(TableWriter),
}

/// What a BLZ/bcolz directory holds (in errors).
pub(super) const BLZ: &str = "a BLZ/bcolz array";

/// Writes every batch of `input` to the BLZ/bcolz directory `output`.
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &BlzOptions,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let cols = numpy_columns(&schema, report, lossy, BLZ)?;
    let layout = match output.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("blz") => Layout::Blz06,
        _ => Layout::Bcolz,
    };
    let aopts = opts
        .array
        .clone()
        .unwrap_or_else(|| ArrayOptions::new(layout));
    let attrs: serde_json::Value = schema
        .metadata()
        .get("dataformats.attrs")
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or_else(|| serde_json::json!({}));
    let blz = |e| Error::Blz(e);
    let mut sink = match cols.as_slice() {
        [(_, c)] if c.name == "value" => {
            let mut w = CArrayWriter::create(output, &c.dtype, &c.shape, &aopts).map_err(blz)?;
            w.set_attrs(attrs);
            Sink::Array(Box::new(w))
        }
        _ => {
            let spec: Vec<(&str, &crate::bloscpack::dtype::Dtype, &[u64])> = cols
                .iter()
                .map(|(_, c)| (c.name.as_str(), &c.dtype, c.shape.as_slice()))
                .collect();
            Sink::Table(TableWriter::create(output, &spec, &attrs, &aopts).map_err(blz)?)
        }
    };
    let mut written = 0u64;
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); cols.len()];
    while let Some(b) = input.next_batch() {
        let b: RecordBatch = b?;
        for buf in &mut bufs {
            buf.clear();
        }
        for ((k, c), buf) in cols.iter().zip(bufs.iter_mut()) {
            let a = b.column(*k);
            for i in 0..b.num_rows() {
                put_cell(a.as_ref(), i, c, written + i as u64, lossy, report, buf)
                    .map_err(|e| e.in_format(crate::Format::Blz))?;
            }
        }
        match &mut sink {
            Sink::Array(w) => w.write(bufs.first().map(Vec::as_slice).unwrap_or_default()),
            Sink::Table(w) => {
                let parts: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
                w.append(&parts)
            }
        }
        .map_err(blz)?;
        written += b.num_rows() as u64;
        progress(written);
    }
    match sink {
        Sink::Array(w) => w.finish().map(|_| ()),
        Sink::Table(w) => w.finish().map(|_| ()),
    }
    .map_err(blz)?;
    report.records = written;
    Ok(())
}
