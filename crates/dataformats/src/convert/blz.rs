//! Typed batches into a BLZ/bcolz directory: a single column named `value`
//! becomes a carray, anything else a ctable with one array per column.
//! Columns take numpy dtypes as for Bloscpack ([`super::bloscpack`]); the
//! schema's `dataformats.attrs` (JSON) become the `__attrs__`. The layout is
//! bcolz 1.x, or blz 0.6 for an output ending in `.blz`. The directory
//! appears only when everything was written.

use arrow_array::RecordBatch;

use super::bloscpack::{Col, plan, unholdable_null, value};
use super::{ChangeKind, Report};
use crate::bloscpack::blz::{ArrayOptions, CArrayWriter, Layout, TableWriter};
use crate::dataset::{BatchStream, Error};

/// BLZ/bcolz target settings (`layout` is chosen by the output's extension
/// when `None`: `.blz` for blz 0.6, else bcolz).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlzOptions {
    /// Array settings (layout, chunk length, codec, level, shuffle).
    pub array: Option<ArrayOptions>,
}

fn data_err(message: String) -> Error {
    Error::Data {
        format: Some(crate::Format::Blz),
        message,
    }
}

enum Sink {
    Array(Box<CArrayWriter>),
    Table(TableWriter),
}

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
    let mut cols: Vec<Col> = Vec::new();
    let mut idx = Vec::new();
    for (k, f) in schema.fields().iter().enumerate() {
        match plan(f) {
            Some(c) => {
                cols.push(c);
                idx.push(k);
            }
            None => report.change(
                ChangeKind::Dropped,
                f.name(),
                0,
                "numpy has no dtype for this column",
            ),
        }
    }
    report.check(lossy)?;
    if cols.is_empty() {
        return Err(Error::invalid("no column can become a BLZ/bcolz array"));
    }
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
        [c] if c.name == "value" => {
            let mut w = CArrayWriter::create(output, &c.dtype, &c.shape, &aopts).map_err(blz)?;
            w.set_attrs(attrs);
            Sink::Array(Box::new(w))
        }
        _ => {
            let spec: Vec<(&str, &crate::bloscpack::dtype::Dtype, &[u64])> = cols
                .iter()
                .map(|c| (c.name.as_str(), &c.dtype, c.shape.as_slice()))
                .collect();
            Sink::Table(TableWriter::create(output, &spec, &attrs, &aopts).map_err(blz)?)
        }
    };
    let mut written = 0u64;
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); cols.len()];
    let mut filled: Option<(u64, u64, String)> = None;
    while let Some(b) = input.next_batch() {
        let b: RecordBatch = b?;
        for buf in &mut bufs {
            buf.clear();
        }
        for ((c, &k), buf) in cols.iter().zip(&idx).zip(bufs.iter_mut()) {
            let a = b.column(k);
            for i in 0..b.num_rows() {
                let record = written + i as u64;
                if unholdable_null(a.as_ref(), i) {
                    if !lossy {
                        return Err(Error::Lossy {
                            message: format!(
                                "record {record}, column {:?}: a missing value (numpy has none); \
                                 pass --lossy to write zero",
                                c.name
                            ),
                        });
                    }
                    filled.get_or_insert((record, 0, c.name.clone())).1 += 1;
                }
                value(a.as_ref(), i, c, buf)
                    .map_err(|m| data_err(format!("record {record}, column {:?}: {m}", c.name)))?;
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
    if let Some((first, count, field)) = filled {
        report.change(
            ChangeKind::NullFilled,
            &field,
            first,
            "a missing value written as zero",
        );
        if let Some(c) = report.changes.last_mut() {
            c.count = count;
        }
    }
    match sink {
        Sink::Array(w) => w.finish().map(|_| ()),
        Sink::Table(w) => w.finish().map(|_| ()),
    }
    .map_err(blz)?;
    report.records = written;
    Ok(())
}
