//! Writers of the typed view (feature `export`): Parquet, Arrow IPC file
//! and stream, CSV and JSON lines. Each streams batch by batch (memory
//! does not grow with the data), and a file target appears only when the
//! whole export succeeded.
//!
//! ```no_run
//! use dataformats::export::{ExportFormat, export};
//! let d = dataformats::open("train.idv").unwrap();
//! let rows = export(d.as_ref(), &Default::default(), "train.parquet".as_ref(), ExportFormat::Parquet).unwrap();
//! println!("{rows} rows");
//! ```

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use crate::dataset::{BatchStream, Dataset, Error, ReadOptions};

mod row_groups;

/// The Parquet key of the record count of a table without columns (which
/// Parquet itself does not keep).
pub const NUM_ROWS_KEY: &str = "dataformats.num_rows";

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Apache Parquet, zstd-compressed (level 3), one row group per
    /// 1,048,576 rows at most.
    Parquet,
    /// The Arrow IPC file format (`.arrow`, `.feather`).
    ArrowFile,
    /// The Arrow IPC stream format (`.arrows`).
    ArrowStream,
    /// CSV with a header line; nested values, bytes and dictionaries are
    /// written as JSON text (bytes as base64).
    Csv,
    /// One JSON object per record, lossless (see [`write_json_lines`]).
    JsonLines,
}

impl ExportFormat {
    /// The format a file name asks for by its extension.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "parquet" | "pq" => ExportFormat::Parquet,
            "arrow" | "feather" | "ipc" => ExportFormat::ArrowFile,
            "arrows" => ExportFormat::ArrowStream,
            "csv" => ExportFormat::Csv,
            "jsonl" | "ndjson" => ExportFormat::JsonLines,
            _ => return None,
        })
    }

    /// Its usual name.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Parquet => "parquet",
            ExportFormat::ArrowFile => "arrow",
            ExportFormat::ArrowStream => "arrows",
            ExportFormat::Csv => "csv",
            ExportFormat::JsonLines => "jsonl",
        }
    }
}

fn io(path: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_string(),
        source,
    }
}

/// Writes the records `opts` selects of `d` to `path` as `format`; the file
/// appears only when everything was written. Returns the records written.
pub fn export(
    d: &dyn Dataset,
    opts: &ReadOptions,
    path: &Path,
    format: ExportFormat,
) -> Result<u64, Error> {
    let name = path.display().to_string();
    let mut reader = d.reader(opts)?;
    let mut out = crate::core::AtomicFile::create(path).map_err(io(&name))?;
    let rows = write(&mut reader, format, &mut out, &mut |_| {})?;
    out.finish().map_err(io(&name))?;
    Ok(rows)
}

/// Writes every batch of `reader` to `out` as `format`, calling `progress`
/// with the records written so far after each batch; on every core
/// ([`write_with_threads`]).
pub fn write<W: Write + Send>(
    reader: &mut dyn BatchStream,
    format: ExportFormat,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    write_with_threads(reader, format, out, 0, progress)
}

/// [`write()`] on `threads` threads (0: every core). Parquet is encoded a
/// part of the records per thread, row groups written in order, and the
/// file is the same on any number of threads: a stream whose records can
/// be read in parts ([`BatchStream::parts`], a dataset's) is read a part
/// per thread too; any other is read on the calling thread and cut into
/// parts of whole batches. CSV and JSON lines are rendered on `threads`
/// threads too, pieces of a few hundred records each, written in order.
pub fn write_with_threads<W: Write + Send>(
    reader: &mut dyn BatchStream,
    format: ExportFormat,
    out: W,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    let schema = reader.schema();
    let mut rows = 0u64;
    let io_err = |e: std::io::Error| Error::Io {
        path: "output".into(),
        source: e,
    };
    match format {
        ExportFormat::Parquet => {
            // arrow-rs's Parquet writer panics on zero-width fixed-size
            // values (an MLDF NDARRAY of shape [0] is one): refuse them.
            if let Some(f) = schema.fields().iter().find(|f| zero_width(f.data_type())) {
                return Err(Error::Unsupported {
                    format: None,
                    message: format!(
                        "column {:?} ({}): Parquet cannot hold fixed-size values of size 0",
                        f.name(),
                        f.data_type()
                    ),
                });
            }
            let mut w = parquet_writer(out, &schema)?;
            if !schema.fields().is_empty() {
                let threads = crate::core::parallel::threads(threads);
                // A stream read in parts: the first batch fits the
                // others' length; then the rest in parts, read and encoded
                // side by side.
                let first = match reader.parts() {
                    Some(_) => reader.next_batch().transpose()?,
                    None => None,
                };
                return match reader.parts() {
                    Some(parts) => row_groups::write(first, parts, &schema, w, threads, progress),
                    None => row_groups::write_stream(first, reader, &schema, w, threads, progress),
                };
            }
            // Parquet keeps no rows without columns: say how many there were.
            while let Some(b) = reader.next_batch() {
                rows += b?.num_rows() as u64;
                progress(rows);
            }
            w.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
                NUM_ROWS_KEY.to_string(),
                rows.to_string(),
            ));
            w.close()?;
        }
        ExportFormat::ArrowFile | ExportFormat::ArrowStream => {
            // The IPC file and stream writers share their calls, not a trait.
            macro_rules! ipc {
                ($w:ty) => {{
                    let mut w = <$w>::try_new(out, &schema)?;
                    while let Some(b) = reader.next_batch() {
                        let b = b?;
                        rows += b.num_rows() as u64;
                        w.write(&b)?;
                        progress(rows);
                    }
                    w.finish()?;
                }};
            }
            if format == ExportFormat::ArrowFile {
                ipc!(arrow_ipc::writer::FileWriter<W>)
            } else {
                ipc!(arrow_ipc::writer::StreamWriter<W>)
            }
        }
        ExportFormat::Csv | ExportFormat::JsonLines => {
            let csv = format == ExportFormat::Csv;
            let mut out = std::io::BufWriter::with_capacity(1 << 18, out);
            rows = write_text(reader, csv, &mut out, threads, progress)?;
            if csv && rows == 0 {
                // arrow-csv writes the header with the first batch.
                let empty = RecordBatch::new_empty(Arc::new(flat_schema(&schema)));
                out.write_all(&render_text(&empty, true, true)?)
                    .map_err(io_err)?;
            }
            out.flush().map_err(io_err)?;
        }
    }
    Ok(rows)
}

/// The Parquet writer of every export: zstd level 3, row groups of at
/// most [`row_groups::GROUP_ROWS`] records, floating-point columns
/// without a dictionary.
fn parquet_writer<W: Write + Send>(
    out: W,
    schema: &arrow_schema::SchemaRef,
) -> Result<parquet::arrow::ArrowWriter<W>, Error> {
    use parquet::basic::{Compression, Type, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_max_row_group_row_count(Some(row_groups::GROUP_ROWS));
    // Floating-point columns are written plain (then compressed): measured
    // values rarely repeat, and a dictionary is kept until it outgrows its
    // page, every value hashed until then. Row groups of a few hundred
    // thousand records came out larger and slower with one
    // (docs/performance.md, 2026-12-06, night).
    let leaves = parquet::arrow::ArrowSchemaConverter::new().convert(schema)?;
    for c in leaves.columns() {
        if matches!(c.physical_type(), Type::FLOAT | Type::DOUBLE) {
            props = props.set_column_dictionary_enabled(c.path().clone(), false);
        }
    }
    Ok(parquet::arrow::ArrowWriter::try_new(
        out,
        schema.clone(),
        Some(props.build()),
    )?)
}

/// Records rendered to text as one piece of work.
const TEXT_PIECE: usize = 256;

/// Writes the batches of `reader` as CSV (`csv`) or JSON lines: rendered
/// on `threads` threads (0: every core) once there is more than one
/// piece, written in order. The number of records.
fn write_text(
    reader: &mut dyn BatchStream,
    csv: bool,
    out: &mut dyn Write,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    // Batches are rendered in pieces of a few hundred records (a record
    // of some formats holds thousands of values). Read ahead one piece: a
    // single piece is rendered here, without starting threads.
    let mut ahead = std::collections::VecDeque::new();
    let refill =
        |ahead: &mut std::collections::VecDeque<_>, reader: &mut dyn BatchStream| match reader
            .next_batch()
        {
            Some(Ok(b)) => {
                let mut at = 0;
                while at < b.num_rows() {
                    let n = TEXT_PIECE.min(b.num_rows() - at);
                    ahead.push_back(Ok(b.slice(at, n)));
                    at += n;
                }
                if b.num_rows() == 0 {
                    ahead.push_back(Ok(b));
                }
                true
            }
            Some(Err(e)) => {
                ahead.push_back(Err(e));
                true
            }
            None => false,
        };
    while ahead.len() < 2 && refill(&mut ahead, reader) {}
    let threads = if ahead.len() > 1 {
        crate::core::parallel::threads(threads)
    } else {
        1
    };
    let (mut index, mut rows) = (0usize, 0u64);
    crate::core::parallel::ordered(
        threads,
        || {
            while ahead.is_empty() && refill(&mut ahead, reader) {}
            let Some(b) = ahead.pop_front() else {
                return Ok(None);
            };
            index += 1;
            Ok(Some((index == 1, b?)))
        },
        |(first, b)| Ok::<_, Error>((b.num_rows(), render_text(&b, csv, first)?)),
        |r| {
            let (n, text) = r?;
            out.write_all(&text).map_err(|e| Error::Io {
                path: "output".into(),
                source: e,
            })?;
            rows += n as u64;
            progress(rows);
            Ok::<_, Error>(())
        },
    )?;
    Ok(rows)
}

/// One batch as CSV (with the header line when `header`) or JSON lines.
fn render_text(b: &RecordBatch, csv: bool, header: bool) -> Result<Vec<u8>, Error> {
    let mut text = Vec::new();
    if csv {
        let b = flat_for_csv(b)?;
        let mut w = arrow_csv::WriterBuilder::new()
            .with_header(header)
            .build(&mut text);
        w.write(&b)?;
    } else {
        write_json_lines(b, &mut text).map_err(|e| Error::Io {
            path: "output".into(),
            source: e,
        })?;
    }
    Ok(text)
}

/// Whether `dt` has a fixed-size list or binary of size 0 anywhere in it.
fn zero_width(dt: &DataType) -> bool {
    match dt {
        DataType::FixedSizeBinary(0) | DataType::FixedSizeList(_, 0) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => zero_width(f.data_type()),
        DataType::Struct(fs) => fs.iter().any(|f| zero_width(f.data_type())),
        DataType::Dictionary(_, v) => zero_width(v),
        _ => false,
    }
}

/// Whether CSV takes the type as it is.
fn csv_native(dt: &DataType) -> bool {
    dt.is_primitive() || matches!(dt, DataType::Boolean | DataType::Utf8 | DataType::Null)
}

fn flat_schema(schema: &Schema) -> Schema {
    Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                if csv_native(f.data_type()) {
                    f.as_ref().clone()
                } else {
                    Field::new(f.name(), DataType::Utf8, f.is_nullable())
                }
            })
            .collect::<Vec<_>>(),
    )
}

/// The batch with every column CSV cannot hold as JSON text.
fn flat_for_csv(b: &RecordBatch) -> Result<RecordBatch, Error> {
    let schema = b.schema();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(b.num_columns());
    for (c, f) in b.columns().iter().zip(schema.fields()) {
        if csv_native(f.data_type()) {
            cols.push(c.clone());
            continue;
        }
        // One text buffer for every cell, copied into one column buffer.
        let mut texts = StringBuilder::with_capacity(c.len(), 0);
        let mut s = String::new();
        for i in 0..c.len() {
            if c.is_null(i) {
                texts.append_null();
                continue;
            }
            s.clear();
            json_value(c.as_ref(), i, &mut s);
            // A dictionary of text gives its text, not a JSON string.
            if let DataType::Dictionary(..) = f.data_type()
                && let Ok(serde_json::Value::String(t)) = serde_json::from_str(&s)
            {
                s = t;
            }
            texts.append_value(&s);
        }
        cols.push(Arc::new(texts.finish()));
    }
    Ok(RecordBatch::try_new(Arc::new(flat_schema(&schema)), cols)?)
}

/// Writes each record of `b` as one JSON object on its own line, without
/// losing anything: integers (u64 and i64 included) are written exactly,
/// floats in the shortest form that parses back to the same bits (NaN and
/// infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`), bytes as
/// base64 strings, lists and tensors as arrays, structs as objects,
/// dictionary entries as their value, timestamps and durations as their
/// integer count of the field's unit.
pub fn write_json_lines(b: &RecordBatch, out: &mut dyn Write) -> std::io::Result<()> {
    let schema = b.schema();
    let mut line = String::new();
    for i in 0..b.num_rows() {
        line.clear();
        line.push('{');
        for (k, (c, f)) in b.columns().iter().zip(schema.fields()).enumerate() {
            if k > 0 {
                line.push(',');
            }
            crate::core::text::push_json_string(&mut line, f.name());
            line.push(':');
            json_value(c.as_ref(), i, &mut line);
        }
        line.push_str("}\n");
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

pub use crate::typed::{json_value, json_value_exact};

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float32Array, Int64Array, ListArray, types::Float64Type};

    /// Batch `k` of `n` rows: an int, a float and a list column (CSV
    /// holds the list as JSON text).
    fn batch(k: usize, n: usize) -> RecordBatch {
        let ids: Vec<i64> = (0..n).map(|i| (k * 1000 + i) as i64).collect();
        let xs: Vec<f32> = (0..n).map(|i| (k * n + i) as f32 / 7.0).collect();
        let lists = ListArray::from_iter_primitive::<Float64Type, _, _>(
            (0..n).map(|i| Some(vec![Some(i as f64 * 0.1), None, Some(-1e-7)])),
        );
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("x", Arc::new(Float32Array::from(xs)) as ArrayRef),
            ("v", Arc::new(lists) as ArrayRef),
        ])
        .unwrap()
    }

    /// Many batches (some longer than a piece), rendered on one thread,
    /// three or every core, give the text of all their records rendered at once (one
    /// CSV header); an error in a batch comes after every batch before it
    /// was written, none after it.
    #[test]
    fn text_of_many_batches_is_the_text_of_their_records_in_order() {
        let batches: Vec<RecordBatch> = (0..9).map(|k| batch(k, 100 + 97 * k)).collect();
        let schema = batches[0].schema();
        let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        for format in [ExportFormat::Csv, ExportFormat::JsonLines] {
            let csv = format == ExportFormat::Csv;
            let want = render_text(&all, csv, true).unwrap();
            for threads in [1, 3, 0] {
                let mut got = Vec::new();
                let mut seen = Vec::new();
                let items: Vec<_> = batches.iter().cloned().map(Ok).collect();
                let mut s = crate::BatchIter::new(schema.clone(), items.into_iter());
                let rows =
                    write_with_threads(&mut s, format, &mut got, threads, &mut |r| seen.push(r))
                        .unwrap();
                assert_eq!(rows, all.num_rows() as u64);
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(want.clone()).unwrap()
                );
                // Progress after each piece of at most TEXT_PIECE records.
                let mut at = 0;
                let mut want_seen = Vec::new();
                for b in &batches {
                    let end = at + b.num_rows() as u64;
                    while at < end {
                        at = end.min(at + TEXT_PIECE as u64);
                        want_seen.push(at);
                    }
                }
                assert_eq!(seen, want_seen, "{format:?}, {threads} threads");
            }

            let mut items: Vec<_> = batches.iter().cloned().map(Ok).collect();
            items[5] = Err(Error::invalid("batch 5 is broken"));
            let mut s = crate::BatchIter::new(schema.clone(), items.into_iter());
            let mut got = Vec::new();
            let e = write(&mut s, format, &mut got, &mut |_| {}).unwrap_err();
            assert!(e.to_string().contains("batch 5 is broken"), "{e}");
            let five = arrow_select::concat::concat_batches(&schema, &batches[..5]).unwrap();
            assert_eq!(got, render_text(&five, csv, true).unwrap(), "{format:?}");
        }
    }
}
