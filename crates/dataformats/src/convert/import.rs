//! Inputs that are not dataset formats but carry typed tables: Parquet,
//! Arrow IPC (file and stream) and CSV. Their batches go through the same
//! writers as any dataset's.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};

use super::{ConvertOptions, Input};
use crate::dataset::{BatchStream, Error};

/// The kinds of table file [`open`] reads, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Parquet,
    ArrowFile,
    ArrowStream,
    Csv,
}

impl Table {
    pub(crate) fn from_path(path: &Path) -> Option<Table> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "parquet" | "pq" => Table::Parquet,
            "arrow" | "feather" | "ipc" => Table::ArrowFile,
            "arrows" => Table::ArrowStream,
            "csv" => Table::Csv,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Table::Parquet => "parquet",
            Table::ArrowFile => "arrow",
            Table::ArrowStream => "arrows",
            Table::Csv => "csv",
        }
    }
}

/// Batches of an Arrow reader, with the columns, records and limit of the
/// conversion applied.
struct Sliced<I> {
    inner: I,
    schema: SchemaRef,
    columns: Vec<usize>,
    /// Records still to skip, then still to give.
    skip: u64,
    left: u64,
    failed: bool,
}

impl<I: Iterator<Item = Result<RecordBatch, ArrowError>>> BatchStream for Sliced<I> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        loop {
            if self.failed || self.left == 0 {
                return None;
            }
            let b = match self.inner.next()? {
                Ok(b) => b,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e.into()));
                }
            };
            let n = b.num_rows() as u64;
            if self.skip >= n {
                self.skip -= n;
                continue;
            }
            let start = self.skip;
            self.skip = 0;
            let take = (n - start).min(self.left);
            self.left -= take;
            let b = b.slice(start as usize, take as usize);
            return Some(
                b.project(&self.columns)
                    .and_then(|b| b.with_schema(self.schema.clone()))
                    .map_err(Error::from),
            );
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Opens the table file `path` as typed batches.
pub(crate) fn open(path: &Path, kind: Table, opts: &ConvertOptions) -> Result<Input, Error> {
    let file = File::open(path).map_err(io(path))?;
    let (schema, records, iter): (SchemaRef, Option<u64>, Box<dyn Iterator<Item = _>>) = match kind
    {
        Table::Parquet => {
            use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
            let b = ParquetRecordBatchReaderBuilder::try_new(file)?;
            let meta = b.metadata().file_metadata();
            let mut rows = u64::try_from(meta.num_rows()).unwrap_or(0);
            let mut schema = b.schema().clone();
            if schema.metadata().contains_key(crate::export::NUM_ROWS_KEY) {
                let mut s = schema.as_ref().clone();
                s.metadata.remove(crate::export::NUM_ROWS_KEY);
                schema = Arc::new(s);
            }
            if schema.fields().is_empty() {
                rows = meta
                    .key_value_metadata()
                    .and_then(|kv| kv.iter().find(|k| k.key == crate::export::NUM_ROWS_KEY))
                    .and_then(|k| k.value.as_deref()?.parse().ok())
                    .unwrap_or(rows);
                // A file's number, bounded by the caller's limits.
                opts.open
                    .limits
                    .check_count("records of a table without columns", rows)
                    .map_err(Error::limit)?;
                // Records without columns: only the row count says they exist.
                let batch = opts.batch_size.max(1) as u64;
                let s = schema.clone();
                let r = (0..rows.div_ceil(batch)).map(move |k| {
                    let n = (rows - k * batch).min(batch) as usize;
                    RecordBatch::try_new_with_options(
                        s.clone(),
                        vec![],
                        &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
                    )
                });
                (schema, Some(rows), Box::new(r))
            } else {
                let r = b.with_batch_size(opts.batch_size.max(1)).build()?;
                (schema, Some(rows), Box::new(r))
            }
        }
        Table::ArrowFile => {
            let r = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)?;
            (r.schema(), None, Box::new(r))
        }
        Table::ArrowStream => {
            let r = arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None)?;
            (r.schema(), None, Box::new(r))
        }
        Table::Csv => {
            let format = arrow_csv::reader::Format::default().with_header(true);
            let (schema, _) = format.infer_schema(
                BufReader::new(File::open(path).map_err(io(path))?),
                Some(10_000),
            )?;
            let schema = Arc::new(schema);
            let r = arrow_csv::ReaderBuilder::new(schema.clone())
                .with_format(format)
                .with_batch_size(opts.batch_size.max(1))
                .build(BufReader::new(file))?;
            (schema, None, Box::new(r))
        }
    };
    let columns: Vec<usize> = match &opts.columns {
        Some(names) => names
            .iter()
            .map(|n| {
                schema.index_of(n).map_err(|_| Error::InvalidArgument {
                    format: None,
                    message: format!("no column {n:?} in {}", path.display()),
                })
            })
            .collect::<Result<_, _>>()?,
        None => (0..schema.fields().len()).collect(),
    };
    let projected = Arc::new(schema.project(&columns)?);
    let range = opts.rows.clone().unwrap_or(0..u64::MAX);
    let skip = range.start;
    let mut left = range.end.saturating_sub(range.start);
    if let Some(l) = opts.limit {
        left = left.min(l);
    }
    let total = records
        .map(|r| r.saturating_sub(skip).min(left))
        .unwrap_or(0);
    Ok(Input {
        from: kind.name().to_string(),
        records: total,
        stream: Box::new(Sliced {
            inner: iter,
            schema: projected,
            columns,
            skip,
            left,
            failed: false,
        }),
    })
}
