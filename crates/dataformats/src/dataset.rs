//! One view over every format: [`open`] a file, get a [`Dataset`] with a
//! schema, a record count, records as dynamic [`Value`]s, validation and a
//! JSON summary. The format crates stay reachable for everything this view
//! cannot express.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;

use crate::{Format, detect};

/// A value of any format, as the common view sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Missing.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (keys, ids, large counts).
    UInt(u64),
    /// A float (f32 values widened exactly).
    Float(f64),
    /// Text.
    Text(String),
    /// Opaque bytes (an image file, a blob).
    Bytes(Vec<u8>),
    /// A list of values (a variable or sparse structure).
    List(Vec<Value>),
    /// A dense array: element type name, shape, little-endian C-order bytes.
    Tensor {
        /// Element type (`float16`, `float32`, `int64`, `uint8`, ...).
        dtype: String,
        /// Dimensions.
        shape: Vec<u64>,
        /// The elements' bytes.
        data: Vec<u8>,
    },
}

impl Value {
    /// JSON text: bytes as `{"len", "hex"}` (hex of the first 32 bytes),
    /// tensors as `{"dtype", "shape", "len"}`, non-finite floats as strings.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(x) => {
                let _ = write!(out, "{x}");
            }
            Value::UInt(x) => {
                let _ = write!(out, "{x}");
            }
            Value::Float(x) if x.is_finite() => dataformats_core::text::push_f64_debug(out, *x),
            Value::Float(x) => out.push_str(if x.is_nan() {
                "\"NaN\""
            } else if *x > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            }),
            Value::Text(s) => crate::core::text::push_json_string(out, s),
            Value::Bytes(b) => {
                let hex: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
                let _ = write!(out, "{{\"len\": {}, \"hex\": \"{hex}\"}}", b.len());
            }
            Value::List(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write_json(out);
                }
                out.push(']');
            }
            Value::Tensor { dtype, shape, data } => {
                let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
                let _ = write!(
                    out,
                    "{{\"dtype\": \"{dtype}\", \"shape\": [{}], ",
                    dims.join(", ")
                );
                match elements(dtype, data) {
                    Some(vals) => {
                        out.push_str("\"values\": [");
                        for (i, v) in vals.iter().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            v.write_json(out);
                        }
                        out.push_str("]}");
                    }
                    None => {
                        let hex: String = data.iter().map(|x| format!("{x:02x}")).collect();
                        let _ = write!(out, "\"hex\": \"{hex}\"}}");
                    }
                }
            }
        }
    }
}

/// A tensor's elements as flat values (C order), for the numeric dtypes.
pub fn elements(dtype: &str, data: &[u8]) -> Option<Vec<Value>> {
    fn each<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> Value) -> Vec<Value> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    Some(match dtype {
        "float32" | "<f4" | "f4" => each(data, |b| Value::Float(f64::from(f32::from_le_bytes(b)))),
        "float64" | "<f8" | "f8" => each(data, |b| Value::Float(f64::from_le_bytes(b))),
        "int8" | "|i1" | "i1" => each(data, |b: [u8; 1]| Value::Int(i64::from(b[0] as i8))),
        "uint8" | "|u1" | "u1" => each(data, |b: [u8; 1]| Value::UInt(u64::from(b[0]))),
        "bool" | "|b1" | "b1" => each(data, |b: [u8; 1]| Value::Bool(b[0] != 0)),
        "int16" | "<i2" | "i2" => each(data, |b| Value::Int(i64::from(i16::from_le_bytes(b)))),
        "uint16" | "<u2" | "u2" => each(data, |b| Value::UInt(u64::from(u16::from_le_bytes(b)))),
        "int32" | "<i4" | "i4" => each(data, |b| Value::Int(i64::from(i32::from_le_bytes(b)))),
        "uint32" | "<u4" | "u4" => each(data, |b| Value::UInt(u64::from(u32::from_le_bytes(b)))),
        "int64" | "<i8" | "i8" => each(data, |b| Value::Int(i64::from_le_bytes(b))),
        "uint64" | "<u8" | "u8" => each(data, |b| Value::UInt(u64::from_le_bytes(b))),
        _ => return None,
    })
}

/// The common name (`float32`, `uint8`, `bool`, ...) of a little-endian
/// numpy type string (`<f4`, `|u1`, `|b1`, ...); other strings unchanged.
pub fn numpy_dtype_name(descr: &str) -> String {
    let kind = descr.strip_prefix(['<', '|', '=']).unwrap_or(descr);
    match kind {
        "b1" => "bool",
        "i1" => "int8",
        "u1" => "uint8",
        "i2" => "int16",
        "u2" => "uint16",
        "i4" => "int32",
        "u4" => "uint32",
        "i8" => "int64",
        "u8" => "uint64",
        "f2" => "float16",
        "f4" => "float32",
        "f8" => "float64",
        _ => return descr.to_string(),
    }
    .to_string()
}

/// One column (field, stream) of a dataset's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Name.
    pub name: String,
    /// The format's own type name (`Single`, `NDARRAY`, `dense f32`, ...).
    pub ty: String,
    /// Shape of one value: empty for a scalar, a 0 for a variable dimension.
    pub shape: Vec<u64>,
}

pub use crate::error::Error;
use crate::error::FormatError;

/// An error of `format` with the kind word the old string errors used
/// (`invalid_argument`, `limit_exceeded`, `unsupported`, anything else:
/// a data error).
pub(crate) fn err(format: Format, kind: &str, message: impl std::fmt::Display) -> Error {
    let message = message.to_string();
    let format = Some(format);
    match kind {
        "invalid_argument" => Error::InvalidArgument { format, message },
        "unsupported" => Error::Unsupported { format, message },
        "limit_exceeded" => Error::Limit {
            format,
            source: crate::core::Error::corrupt(0, message),
        },
        _ => Error::Data { format, message },
    }
}

/// Maps a format crate's error to the facade's [`Error`] of `format`.
pub(crate) fn fe<E: FormatError>(format: Format) -> impl Fn(E) -> Error + Copy {
    move |x| x.into_facade(format)
}

/// How to open a dataset.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// Bounds on every allocation and count made from the file's numbers,
    /// when opening and when reading records and batches.
    pub limits: crate::core::Limits,
    /// What the typed view does with text that is not Unicode.
    pub text: TextRepair,
}

impl OpenOptions {
    /// Options with `limits`.
    pub fn with_limits(limits: crate::core::Limits) -> Self {
        OpenOptions {
            limits,
            ..OpenOptions::default()
        }
    }
}

/// What the typed view does with text that is not Unicode: IDV text
/// values holding half of a UTF-16 surrogate pair, which ML.NET writes and
/// the IDV crate keeps (as WTF-8), but Arrow's UTF-8 text cannot hold.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum TextRepair {
    /// Each unpaired surrogate becomes U+FFFD (`docs/arrow.md`).
    #[default]
    Replace,
    /// Such a value is an error ([`Error::Lossy`]) naming its record and
    /// column (what a conversion does unless it is lossy).
    Refuse,
    /// Replace, and count the values in the tally (a lossy conversion
    /// reports them).
    Count(std::sync::Arc<RepairTally>),
}

/// Text values [`TextRepair::Count`] replaced.
#[derive(Debug, Default)]
pub struct RepairTally {
    values: std::sync::atomic::AtomicU64,
    first: std::sync::Mutex<Option<(u64, String)>>,
}

impl RepairTally {
    /// How many values were replaced.
    pub fn count(&self) -> u64 {
        self.values.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The first replaced value's `(record, column)` (the lowest record).
    pub fn first(&self) -> Option<(u64, String)> {
        self.first.lock().ok().and_then(|f| f.clone())
    }

    /// Counts `n` values replaced in `column`, the first at `record`.
    pub(crate) fn add(&self, column: &str, record: u64, n: u64) {
        self.values
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut f) = self.first.lock()
            && f.as_ref().is_none_or(|(r, _)| record < *r)
        {
            *f = Some((record, column.to_string()));
        }
    }
}

impl TextRepair {
    /// Applies the policy to the lone surrogates `found` (row of the first
    /// within rows starting at `start`, and how many) of `column`.
    pub(crate) fn check(
        &self,
        column: &str,
        start: u64,
        found: Option<(usize, u64)>,
    ) -> Result<(), Error> {
        let Some((row, n)) = found else {
            return Ok(());
        };
        let record = start + row as u64;
        match self {
            TextRepair::Replace => Ok(()),
            TextRepair::Refuse => Err(Error::Lossy {
                message: format!(
                    "record {record}, field {column:?}: text holding half of a UTF-16 \
                     surrogate pair, which UTF-8 cannot hold (a lossy conversion writes \
                     U+FFFD and counts it)"
                ),
            }),
            TextRepair::Count(t) => {
                t.add(column, record, n);
                Ok(())
            }
        }
    }
}

/// What [`Dataset::reader`](trait.Dataset.html#method.reader) reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Column names to read, in this order (`None`: every column). Columns
    /// not named are not decoded at all.
    pub columns: Option<Vec<String>>,
    /// Records to read (clamped to the records there are; `None`: all).
    pub rows: Option<std::ops::Range<u64>>,
    /// Records per batch (at least 1).
    pub batch_size: usize,
}

impl ReadOptions {
    /// The records [`rows`](Self::rows) selects out of `len`, clamped.
    fn records_of(&self, len: u64) -> std::ops::Range<u64> {
        let rows = self.rows.clone().unwrap_or(0..len);
        let end = rows.end.min(len);
        rows.start.min(end)..end
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            columns: None,
            rows: None,
            batch_size: 1024,
        }
    }
}

/// A dataset of any format.
pub trait Dataset: Send + Sync {
    /// Which format.
    fn format(&self) -> Format;
    /// The file's format version.
    fn version(&self) -> String;
    /// The columns every record has, in order: the
    /// [`schema`](Dataset::schema)'s fields in the convenience view's
    /// words (the format's own type name, the tensor shape).
    fn columns(&self) -> Vec<Column> {
        columns_from_schema(&self.schema())
    }
    /// Number of records (rows, samples, sequences).
    fn len(&self) -> u64;
    /// Whether there are no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Record `i`: one value per column, derived from its typed batch
    /// (see [`value_at`]).
    fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
        if i >= self.len() {
            return Err(Error::InvalidArgument {
                format: Some(self.format()),
                message: format!("no record {i}: there are {}", self.len()),
            });
        }
        let mut rows = self.records(i..i + 1)?;
        rows.pop().ok_or_else(|| Error::Data {
            format: Some(self.format()),
            message: format!("record {i} is missing from its batch"),
        })
    }
    /// Records `range` (clamped to the records there are), in order,
    /// derived from one typed batch of every column, so compressed blocks
    /// are decoded once per call.
    fn records(&self, range: std::ops::Range<u64>) -> Result<Vec<Vec<Value>>, Error> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let schema = self.schema();
        let all: Vec<usize> = (0..schema.fields().len()).collect();
        let arrays = self.read_arrays(&all, start..end)?;
        let n = match arrays.first() {
            Some(a) => a.len(),
            // No column: empty records, as many as asked for within the
            // default count limit (nothing bounds them otherwise).
            None => crate::core::Limits::default()
                .check_count("records of no columns", end - start)
                .map_err(|e| Error::limit(e).in_format(self.format()))?,
        };
        Ok((0..n)
            .map(|k| {
                arrays
                    .iter()
                    .zip(schema.fields())
                    .map(|(a, f)| value_at(a.as_ref(), f, k))
                    .collect()
            })
            .collect())
    }
    /// Checks the whole file the way the format's validator does.
    fn validate(&self) -> Result<(), Error> {
        self.validate_with(&mut crate::core::progress::none())
    }
    /// [`validate`](Dataset::validate), reporting how far it has got (in
    /// the format's unit: payload or stored bytes, chunks, blocks or
    /// samples).
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error>;
    /// The file's Arrow schema: one field per column, fixed for the file
    /// (computed from its headers, never from the values), each field's
    /// metadata naming the format's own type (see `docs/arrow.md`).
    fn schema(&self) -> arrow_schema::SchemaRef;
    /// Columns `columns` (indices into [`schema`](Dataset::schema)) of
    /// records `rows` (clamped), one array per column of exactly the
    /// schema's type. Columns not asked for are not decoded.
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error>;
    /// A hint that [`read_arrays`](Dataset::read_arrays)`(columns, rows)`
    /// comes soon: a file read by byte ranges from elsewhere starts
    /// fetching the blocks, chunks or samples it will need, so that they
    /// arrive while the records before them are decoded. Nothing to do for
    /// local files (the default); results never depend on it.
    fn prefetch(&self, columns: &[usize], rows: std::ops::Range<u64>) {
        let _ = (columns, rows);
    }
    /// At most `parts` (at least 1) consecutive, non-empty record ranges
    /// that together cover every record in order: the units of work for
    /// reading the file in parallel (a SQL scan's partitions, a cluster's
    /// read tasks). Cuts fall where the file's stored units start (IDV
    /// blocks, Bloscpack chunks, CBF chunks), so no block or chunk is
    /// decoded by two ranges; files stored record by record are cut
    /// evenly (the default). An empty file gives no range.
    fn splits(&self, parts: usize) -> Vec<std::ops::Range<u64>> {
        split_at_starts(self.len(), &[], 1, parts)
    }
    /// Columns `columns` of the records `indices`, in that order (any
    /// order, repeats allowed): what a shuffled loader or a sampler asks
    /// for. Every index must be below [`len`](Dataset::len).
    ///
    /// The default reads each run of consecutive records with one
    /// [`read_arrays`](Dataset::read_arrays) call, then puts the rows in the
    /// asked order; formats with cheap random access override it to decode
    /// each record straight into its place.
    fn take_arrays(
        &self,
        columns: &[usize],
        indices: &[u64],
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        check_indices(self, indices)?;
        take_by_runs(self, columns, indices)
    }
    /// The whole file's bytes when they are in memory (a mapped file, a
    /// buffer) and [`read_arrays`](Dataset::read_arrays) may return views
    /// of them instead of copies; `None` (the default) when it never does.
    /// [`read_column`](trait.Dataset.html#method.read_column) uses it to
    /// keep a view a view.
    fn memory(&self) -> Option<&[u8]> {
        None
    }
    /// The caps on what this file may make a reader allocate, as it was
    /// opened with ([`OpenOptions::limits`]).
    fn limits(&self) -> crate::core::Limits {
        crate::core::Limits::default()
    }
    /// A JSON summary: format, version, records, columns.
    fn summary_json(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "{{\"format\": \"{}\", \"version\": \"{}\", \"records\": {}, \"columns\": [",
            self.format().name(),
            self.version(),
            self.len()
        );
        for (i, c) in self.columns().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str("{\"name\": ");
            crate::core::text::push_json_string(&mut out, &c.name);
            out.push_str(", \"type\": ");
            crate::core::text::push_json_string(&mut out, &c.ty);
            let dims: Vec<String> = c.shape.iter().map(ToString::to_string).collect();
            let _ = write!(out, ", \"shape\": [{}]}}", dims.join(", "));
        }
        out.push_str("]}");
        out
    }
}

impl dyn Dataset + '_ {
    /// The indices of columns `names` in [`schema`](Dataset::schema)
    /// (`None`: every column), refusing unknown names.
    pub fn column_indices(&self, names: Option<&[String]>) -> Result<Vec<usize>, Error> {
        let schema = self.schema();
        match names {
            None => Ok((0..schema.fields().len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    schema.index_of(n).map_err(|_| Error::InvalidArgument {
                        format: Some(self.format()),
                        message: format!(
                            "no column {n:?}; the columns are {}",
                            schema
                                .fields()
                                .iter()
                                .map(|f| format!("{:?}", f.name()))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })
                })
                .collect(),
        }
    }

    /// The indices of columns `names` (as `column_indices` gives them)
    /// and the schema projected to them: the schema of every batch read
    /// with these columns.
    pub fn projection(
        &self,
        names: Option<&[String]>,
    ) -> Result<(Vec<usize>, arrow_schema::SchemaRef), Error> {
        let idx = self.column_indices(names)?;
        let schema = Arc::new(self.schema().project(&idx)?);
        Ok((idx, schema))
    }

    /// Records at `indices` (in that order, repeats allowed) of the columns
    /// at positions `columns`, as one batch with the schema projected to
    /// them ([`Dataset::take_arrays`]).
    pub fn take_batch(&self, columns: &[usize], indices: &[u64]) -> Result<RecordBatch, Error> {
        let schema = Arc::new(self.schema().project(columns)?);
        let arrays = self.take_arrays(columns, indices)?;
        batch(schema, arrays, indices.len() as u64)
    }

    /// Every record `opts` selects, as batches in order, decoded on
    /// `threads` threads (0: every core). The batches are cut where the
    /// file's stored units (blocks, chunks) start, near every
    /// `opts.batch_size` records, so that no unit is decoded for two
    /// batches: their lengths differ from `batch_size`, and a unit of up to
    /// four batches' worth of records is one batch. The first error is
    /// returned.
    pub fn read_all(&self, opts: &ReadOptions, threads: usize) -> Result<Vec<RecordBatch>, Error> {
        let (columns, schema) = self.projection(opts.columns.as_deref())?;
        let std::ops::Range { start, end } = opts.records_of(self.len());
        let batch = opts.batch_size.max(1) as u64;
        let mut batches =
            crate::convert::Batches::new(schema, start..end, batch, None).at_units_of(self);
        let threads = workers(threads);
        let mut out = Vec::new();
        let mut failed = None;
        batches.send_all(
            self,
            &columns,
            threads,
            &crate::core::parallel::Active::new(threads),
            &mut |b| match b {
                Ok(b) => {
                    out.push(b);
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        );
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Typed record batches: every batch has exactly the schema projected
    /// to `opts.columns`, and only those columns are decoded.
    pub fn reader(&self, opts: &ReadOptions) -> Result<BatchReader<'_>, Error> {
        BatchReader::new(Source::Borrowed(self), opts)
    }

    /// Records `rows` of `columns` (all when `None`) as one batch.
    pub fn read_batch(
        &self,
        columns: Option<&[String]>,
        rows: std::ops::Range<u64>,
    ) -> Result<RecordBatch, Error> {
        let (idx, schema) = self.projection(columns)?;
        let end = rows.end.min(self.len());
        let start = rows.start.min(end);
        let arrays = self.read_arrays(&idx, start..end)?;
        batch(schema, arrays, end - start)
    }

    /// Every record in order, read in batches through [`Dataset::records`]
    /// (so compressed blocks are decoded once); stops after the first error.
    pub fn iter(&self) -> Records<'_> {
        Records {
            d: self,
            next: 0,
            batch: Vec::new().into_iter(),
            failed: false,
        }
    }
}

/// The worker threads to start for a request of `threads` (0: every
/// core): at most four per core, since more only wait, and a request far
/// beyond that would fail to start them.
pub(crate) fn workers(threads: usize) -> usize {
    let cores = crate::core::parallel::threads(0);
    crate::core::parallel::threads(threads).min(cores.saturating_mul(4))
}

/// Cuts `0..len` into at most `parts` (at least 1) non-empty ranges of
/// about equal size. Each cut is a record where a stored unit starts: one
/// of `starts` (ascending) when given, else a multiple of `unit` (at least
/// 1), the nearest one to an even cut. Used by [`Dataset::splits`].
pub fn split_at_starts(
    len: u64,
    starts: &[u64],
    unit: u64,
    parts: usize,
) -> Vec<std::ops::Range<u64>> {
    let parts = parts.max(1) as u64;
    let unit = unit.max(1);
    let mut cuts = vec![0u64];
    for k in 1..parts {
        // The even cut point, moved to the nearest stored unit start.
        let want =
            u64::try_from(u128::from(len) * u128::from(k) / u128::from(parts)).unwrap_or(len);
        let cut = if starts.is_empty() {
            (want.saturating_add(unit / 2) / unit).saturating_mul(unit)
        } else {
            let i = starts.partition_point(|&s| s < want);
            let after = starts.get(i).copied().unwrap_or(len);
            match i.checked_sub(1).and_then(|j| starts.get(j)) {
                Some(&before) if want - before < after - want => before,
                _ => after,
            }
        };
        let last = cuts.last().copied().unwrap_or(0);
        if cut > last && cut < len {
            cuts.push(cut);
        }
    }
    cuts.push(len);
    cuts.iter()
        .zip(cuts.iter().skip(1))
        .filter(|(a, z)| a < z)
        .map(|(&a, &z)| a..z)
        .collect()
}

/// A record batch of `rows` records from its columns; the row count is
/// given so that a batch with no columns keeps its length.
pub(crate) fn batch(
    schema: arrow_schema::SchemaRef,
    arrays: Vec<arrow_array::ArrayRef>,
    rows: u64,
) -> Result<RecordBatch, Error> {
    let opts = arrow_array::RecordBatchOptions::new()
        .with_row_count(Some(usize::try_from(rows).unwrap_or(usize::MAX)));
    Ok(RecordBatch::try_new_with_options(schema, arrays, &opts)?)
}

/// Typed record batches of a dataset, in order
/// ([`Dataset::reader`](trait.Dataset.html#method.reader)); an Arrow
/// [`RecordBatchReader`](arrow_array::RecordBatchReader). It stops after
/// the first error.
pub struct BatchReader<'a> {
    d: Source<'a>,
    columns: Vec<usize>,
    schema: arrow_schema::SchemaRef,
    next: u64,
    end: u64,
    batch: u64,
    failed: bool,
    ahead: LookAhead,
}

/// Batches announced ahead of the one being read: enough requests in
/// flight to keep a remote source's connections busy while batches
/// decode; what is in flight stays a few batches.
pub const BATCHES_AHEAD: u64 = 4;

/// What a reader of consecutive batches has announced
/// ([`Dataset::prefetch`]): each batch once, [`BATCHES_AHEAD`] batches
/// ahead of the one being read. [`BatchReader`] and the conversions use it;
/// so can other readers of batches (the SQL table of
/// `dataformats-datafusion`).
#[derive(Debug, Default)]
pub struct LookAhead {
    /// Records before this were announced.
    until: u64,
}

impl LookAhead {
    /// Reading `rows` next of records up to `end` in batches of `batch`:
    /// announces to `d` the batches after it that were not announced yet,
    /// up to [`BATCHES_AHEAD`] of them.
    pub fn announce(
        &mut self,
        d: &dyn Dataset,
        columns: &[usize],
        rows: std::ops::Range<u64>,
        end: u64,
        batch: u64,
    ) {
        let batch = batch.max(1);
        let upto = end.min(rows.end.saturating_add(batch.saturating_mul(BATCHES_AHEAD)));
        let mut at = self.until.max(rows.end);
        while at < upto {
            let next = upto.min(at.saturating_add(batch));
            d.prefetch(columns, at..next);
            at = next;
        }
        self.until = self.until.max(at);
    }
}

/// The dataset a [`BatchReader`] reads: borrowed, or shared so that the
/// reader can outlive the caller's borrow.
enum Source<'a> {
    Borrowed(&'a dyn Dataset),
    Shared(Arc<dyn Dataset>),
}

impl Source<'_> {
    fn get(&self) -> &dyn Dataset {
        match self {
            Source::Borrowed(d) => *d,
            Source::Shared(d) => d.as_ref(),
        }
    }
}

impl<'a> BatchReader<'a> {
    fn new(d: Source<'a>, opts: &ReadOptions) -> Result<Self, Error> {
        let ds = d.get();
        let (columns, schema) = ds.projection(opts.columns.as_deref())?;
        let std::ops::Range { start, end } = opts.records_of(ds.len());
        Ok(BatchReader {
            d,
            columns,
            schema,
            next: start,
            end,
            batch: opts.batch_size.max(1) as u64,
            failed: false,
            ahead: LookAhead::default(),
        })
    }
}

impl BatchReader<'static> {
    /// [`Dataset::reader`](trait.Dataset.html#method.reader) of a shared
    /// dataset: a reader that owns its share, so it can be handed on
    /// (another thread, an Arrow C stream).
    pub fn shared(d: Arc<dyn Dataset>, opts: &ReadOptions) -> Result<Self, Error> {
        BatchReader::new(Source::Shared(d), opts)
    }
}

impl BatchReader<'_> {
    /// The next batch, with the facade's error.
    pub fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        if self.failed || self.next >= self.end {
            return None;
        }
        let end = self.end.min(self.next.saturating_add(self.batch));
        let d = self.d.get();
        // The batches after this one start on their way while it decodes.
        self.ahead
            .announce(d, &self.columns, self.next..end, self.end, self.batch);
        let r = d
            .read_arrays(&self.columns, self.next..end)
            .and_then(|arrays| batch(self.schema.clone(), arrays, end - self.next));
        match r {
            Ok(b) => {
                self.next = end;
                Some(Ok(b))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// Records still to read.
    pub fn remaining(&self) -> u64 {
        if self.failed { 0 } else { self.end - self.next }
    }

    /// Records per batch (the last may have fewer).
    pub fn batch_size(&self) -> u64 {
        self.batch
    }
}

/// A stream of record batches of one schema: a dataset's
/// [`BatchReader`] or an import (Parquet, Arrow IPC, CSV, JSON lines) in
/// [`crate::convert`].
pub trait BatchStream {
    /// The schema of every batch.
    fn schema(&self) -> arrow_schema::SchemaRef;
    /// The next batch; `None` at the end or after an error.
    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>>;
    /// The records the stream will still give unless it fails, when that
    /// is known ahead (a dataset's records, as its headers and tables
    /// say); `None` (the default) when it is not, or is only a footer's
    /// word (Parquet's). A writer whose file starts with a table of its
    /// records or their size (TBL v2's index, Bloscpack's header) then
    /// writes the rest once, in place. Reading may still find the count
    /// false (the stream then ends in an error), so a writer reserves no
    /// more for it than it can afford to lose.
    fn records_left(&self) -> Option<u64> {
        None
    }
    /// Hands every batch to `send`, in order, until the end, an error
    /// (handed on, then the end) or `send` returning `false`. A stream
    /// whose batches decode apart from each other (a dataset's records)
    /// may decode them on up to `threads` threads, of which as many as
    /// `active` says at a time (the caller may change it while the batches
    /// flow); the default reads them one after the other with
    /// [`next_batch`](Self::next_batch).
    fn send_all(
        &mut self,
        threads: usize,
        active: &crate::core::parallel::Active,
        send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
    ) {
        let _ = (threads, active);
        send_each(self, send);
    }
    /// The records the stream has still to give as parts that can be read
    /// apart from each other, when they can (a dataset's records: `Some`);
    /// `None` (the default) for a stream read in one pass. A writer that
    /// encodes parts of its output side by side (Parquet's row groups)
    /// reads them so, after the first batch (which fits the batches'
    /// length to the records' size).
    fn parts(&self) -> Option<&dyn Parts> {
        None
    }
}

/// Records of a stream that can be read in parts, each apart from the
/// others and on a thread of its own ([`BatchStream::parts`]).
pub trait Parts: Sync {
    /// The records the stream has still to give (numbered as the dataset
    /// numbers them).
    fn range(&self) -> std::ops::Range<u64>;
    /// Records `rows` (within [`range`](Self::range)) as batches cut as the
    /// whole stream cuts them (their lengths depend on `rows` and on the
    /// batches the stream gave before, not on when or where they are read).
    fn part(&self, rows: std::ops::Range<u64>) -> Box<dyn BatchStream + Send + '_>;
}

/// [`BatchStream::send_all`] one batch after the other.
pub(crate) fn send_each<S: BatchStream + ?Sized>(
    stream: &mut S,
    send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
) {
    while let Some(b) = stream.next_batch() {
        let failed = b.is_err();
        if !send(b) || failed {
            break;
        }
    }
}

/// Batches a program already has, or makes as it goes, as a
/// [`BatchStream`]: how its own Arrow data reaches the writers of
/// [`crate::convert`] and [`crate::export`].
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{Int32Array, RecordBatch};
/// use arrow_schema::{DataType, Field, Schema};
/// use dataformats::{BatchIter, BatchStream};
///
/// let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, false)]));
/// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int32Array::from(vec![1, 2]))])?;
/// let mut stream = BatchIter::from_batches(schema, vec![batch.clone(), batch]);
/// assert_eq!(stream.next_batch().unwrap()?.num_rows(), 2);
/// assert!(stream.next_batch().is_some());
/// assert!(stream.next_batch().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct BatchIter<I> {
    schema: arrow_schema::SchemaRef,
    batches: I,
}

impl<I: Iterator<Item = Result<RecordBatch, Error>>> BatchIter<I> {
    /// The batches `batches` gives, each of `schema`; the stream ends at the
    /// iterator's end or after its first error.
    pub fn new(schema: arrow_schema::SchemaRef, batches: I) -> Self {
        BatchIter { schema, batches }
    }
}

impl
    BatchIter<
        std::iter::Map<
            std::vec::IntoIter<RecordBatch>,
            fn(RecordBatch) -> Result<RecordBatch, Error>,
        >,
    >
{
    /// `batches`, each of `schema`, in order.
    pub fn from_batches(schema: arrow_schema::SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let ok: fn(RecordBatch) -> Result<RecordBatch, Error> = Ok;
        BatchIter::new(schema, batches.into_iter().map(ok))
    }
}

impl<I: Iterator<Item = Result<RecordBatch, Error>>> BatchStream for BatchIter<I> {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        self.batches.next()
    }
}

impl BatchStream for BatchReader<'_> {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        BatchReader::next_batch(self)
    }
    fn parts(&self) -> Option<&dyn Parts> {
        Some(self)
    }
}

impl Parts for BatchReader<'_> {
    fn range(&self) -> std::ops::Range<u64> {
        self.next..self.end
    }
    fn part(&self, rows: std::ops::Range<u64>) -> Box<dyn BatchStream + Send + '_> {
        let end = rows.end.min(self.end);
        Box::new(BatchReader {
            d: Source::Borrowed(self.d.get()),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
            next: rows.start.clamp(self.next, end),
            end,
            batch: self.batch,
            failed: false,
            ahead: LookAhead::default(),
        })
    }
}

impl Iterator for BatchReader<'_> {
    type Item = Result<RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
            .map(|r| r.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))))
    }
}

impl arrow_array::RecordBatchReader for BatchReader<'_> {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
}

/// The iterator of [`Dataset::iter`](trait.Dataset.html#method.iter).
pub struct Records<'a> {
    d: &'a dyn Dataset,
    next: u64,
    batch: std::vec::IntoIter<Vec<Value>>,
    failed: bool,
}

impl Iterator for Records<'_> {
    type Item = Result<Vec<Value>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.batch.next() {
            return Some(Ok(r));
        }
        if self.failed || self.next >= self.d.len() {
            return None;
        }
        let end = self.d.len().min(self.next + 1024);
        match self.d.records(self.next..end) {
            Ok(rows) => {
                self.next = end;
                self.batch = rows.into_iter();
                self.batch.next().map(Ok)
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Opens `path` (a file, or a BLZ/bcolz directory), whatever its format,
/// with the default [`Limits`](crate::core::Limits).
pub fn open(path: impl AsRef<Path>) -> Result<Box<dyn Dataset>, Error> {
    open_with(path, &OpenOptions::default())
}

/// [`open`] with the caller's options.
pub fn open_with(path: impl AsRef<Path>, opts: &OpenOptions) -> Result<Box<dyn Dataset>, Error> {
    let path = path.as_ref();
    if crate::remote::is_url(path) {
        // One object, asked for its length once: detected from its first
        // bytes, then read through the same source.
        let src = match crate::remote::source(path) {
            Ok(src) => src,
            // No such object: a BLZ/bcolz directory is a prefix.
            Err(e) => {
                return match crate::remote::detect(path) {
                    Ok(Some(Format::Blz)) => open_as_with(path, Format::Blz, opts),
                    _ => Err(e),
                };
            }
        };
        let format =
            crate::remote::detect_source(&src, path)?.ok_or_else(|| Error::Unrecognized {
                what: path.display().to_string(),
            })?;
        if !has_view(format) || format == Format::Blz {
            return Err(no_view(format, &path.display().to_string()));
        }
        return from_source(src, format, opts);
    }
    let format = detect_path(path)?.ok_or_else(|| Error::Unrecognized {
        what: path.display().to_string(),
    })?;
    open_as_with(path, format, opts)
}

/// [`detect`], its failure (the file cannot be read) as this crate's error.
pub(crate) fn detect_path(path: &Path) -> Result<Option<Format>, Error> {
    if crate::remote::is_url(path) {
        return crate::remote::detect(path);
    }
    detect(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })
}

/// Opens `path` as `format` (files are memory mapped; they must not change
/// while open).
pub fn open_as(path: &Path, format: Format) -> Result<Box<dyn Dataset>, Error> {
    open_as_with(path, format, &OpenOptions::default())
}

/// [`open_as`] with the caller's options.
pub fn open_as_with(
    path: &Path,
    format: Format,
    opts: &OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    #[cfg(feature = "bloscpack")]
    if format == Format::Blz {
        return crate::adapters::blz::open(path, opts);
    }
    open_mapped(path, format, opts).map(|(d, _)| d)
}

/// [`open_as_with`] for a file (not a BLZ/bcolz directory), with the
/// mapping it reads, so that a long pass can release its pages
/// ([`crate::core::Source::release_pages`]).
pub(crate) fn open_mapped(
    path: &Path,
    format: Format,
    opts: &OpenOptions,
) -> Result<(Box<dyn Dataset>, crate::core::Source), Error> {
    if !has_view(format) || format == Format::Blz {
        return Err(no_view(format, &path.display().to_string()));
    }
    let src = map_file(path)?;
    Ok((from_source(src.clone(), format, opts)?, src))
}

/// Maps `path` into memory (files must not change while mapped).
/// A URL is read by byte ranges instead ([`crate::remote`]).
pub(crate) fn map_file(path: &Path) -> Result<crate::core::Source, Error> {
    crate::remote::source(path)
}

/// Opens an in-memory file, whatever its format (detected by magic number,
/// or as FFCV by a plausible header). BLZ/bcolz, being directories, cannot
/// come from bytes.
pub fn open_bytes(bytes: Vec<u8>) -> Result<Box<dyn Dataset>, Error> {
    open_bytes_with(bytes, &OpenOptions::default())
}

/// [`open_bytes`] with the caller's options.
pub fn open_bytes_with(bytes: Vec<u8>, opts: &OpenOptions) -> Result<Box<dyn Dataset>, Error> {
    let head = bytes.get(..crate::SNIFF_LEN).unwrap_or(&bytes);
    let format = crate::detect_bytes(head)
        .or_else(|| crate::looks_like_ffcv(head).then_some(Format::Ffcv))
        .ok_or_else(|| Error::Unrecognized {
            what: "bytes".into(),
        })?;
    open_bytes_as_with(bytes, format, opts)
}

/// Opens an in-memory file as `format`.
pub fn open_bytes_as(bytes: Vec<u8>, format: Format) -> Result<Box<dyn Dataset>, Error> {
    open_bytes_as_with(bytes, format, &OpenOptions::default())
}

/// [`open_bytes_as`] with the caller's options.
pub fn open_bytes_as_with(
    bytes: Vec<u8>,
    format: Format,
    opts: &OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    if !has_view(format) || format == Format::Blz {
        return Err(no_view(format, "bytes"));
    }
    from_source(crate::core::Source::from_vec(bytes), format, opts)
}

/// Opens a file behind any [`Source`](crate::core::Source) (for example
/// bytes elsewhere read by ranges, [`crate::core::RangeRead`]), whatever
/// its format: detected from its first bytes. Sources that are not in
/// memory are read by exact byte ranges as the reader needs them, and
/// every short or failed read is an error naming its range.
pub fn open_source(
    src: crate::core::Source,
    opts: &OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let n = src.len().min(crate::SNIFF_LEN as u64);
    let head = src.read_vec(0, n, &opts.limits).map_err(|e| Error::Io {
        path: "source".into(),
        source: std::io::Error::other(e),
    })?;
    let format = crate::detect_bytes(&head)
        .or_else(|| crate::looks_like_ffcv(&head).then_some(Format::Ffcv))
        .ok_or_else(|| Error::Unrecognized {
            what: "source".into(),
        })?;
    open_source_as(src, format, opts)
}

/// [`open_source`] as `format`.
pub fn open_source_as(
    src: crate::core::Source,
    format: Format,
    opts: &OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    if !has_view(format) || format == Format::Blz {
        return Err(no_view(format, "source"));
    }
    from_source(src, format, opts)
}

fn has_view(format: Format) -> bool {
    format.is_available() && format != Format::Ctf
}

fn no_view(format: Format, what: &str) -> Error {
    Error::Unsupported {
        format: Some(format),
        message: format!(
            "{what}: {} ({}) has no common view in this build{}",
            format.name(),
            format.description(),
            if format == Format::Blz {
                "; a BLZ/bcolz array is a directory"
            } else if format.is_available() {
                "; use its crate's reader"
            } else {
                ""
            }
        ),
    }
}

#[allow(unused_variables)]
fn from_source(
    src: crate::core::Source,
    format: Format,
    opts: &OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    use crate::adapters;
    match format {
        #[cfg(feature = "idv")]
        Format::Idv => adapters::idv::open(src, opts),
        #[cfg(feature = "mldf")]
        Format::Mldf => adapters::mldf::open(src, opts),
        #[cfg(feature = "ffcv")]
        Format::Ffcv => adapters::ffcv::open(src, opts),
        #[cfg(feature = "cntk")]
        Format::Cntk => adapters::cntk::open(src, opts),
        #[cfg(feature = "tbl2")]
        Format::Tbl2 => adapters::tbl2::open(src, opts),
        #[cfg(feature = "bloscpack")]
        Format::Bloscpack => adapters::bloscpack::open(src, opts),
        other => Err(no_view(other, "input")),
    }
}

/// Value `i` of `array` (a column of field `field`) in the convenience
/// view: numbers, text and bytes as themselves, numeric lists as tensors
/// (with the `arrow.fixed_shape_tensor` shape when the field has one),
/// structs and other lists as lists, dictionary entries as their value.
pub fn value_at(array: &dyn arrow_array::Array, field: &arrow_schema::Field, i: usize) -> Value {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as A;
    if i >= array.len() || array.is_null(i) {
        return Value::Null;
    }
    macro_rules! p {
        ($t:ty, $v:ident) => {
            Value::$v(array.as_primitive::<$t>().value(i).into())
        };
    }
    match array.data_type() {
        A::Boolean => Value::Bool(array.as_boolean().value(i)),
        A::Int8 => p!(Int8Type, Int),
        A::Int16 => p!(Int16Type, Int),
        A::Int32 => p!(Int32Type, Int),
        A::Int64 => p!(Int64Type, Int),
        A::UInt8 => p!(UInt8Type, UInt),
        A::UInt16 => p!(UInt16Type, UInt),
        A::UInt32 => p!(UInt32Type, UInt),
        A::UInt64 => p!(UInt64Type, UInt),
        A::Float16 => Value::Float(array.as_primitive::<Float16Type>().value(i).to_f64()),
        A::Float32 => p!(Float32Type, Float),
        A::Float64 => p!(Float64Type, Float),
        A::Timestamp(..) | A::Duration(_) | A::Date64 => {
            Value::Int(crate::typed::time_count(array, i).unwrap_or_default())
        }
        A::Utf8 => Value::Text(array.as_string::<i32>().value(i).to_string()),
        A::Binary => Value::Bytes(array.as_binary::<i32>().value(i).to_vec()),
        A::FixedSizeBinary(_) => Value::Bytes(array.as_fixed_size_binary().value(i).to_vec()),
        A::Dictionary(..) => {
            let d = array.as_any_dictionary();
            let vf = arrow_schema::Field::new("value", d.values().data_type().clone(), true);
            match crate::typed::dict_key(array, i) {
                Some(k) => value_at(d.values().as_ref(), &vf, k),
                None => Value::Null,
            }
        }
        A::FixedSizeList(f, _) | A::List(f) => {
            let values = match array.data_type() {
                A::List(_) => array.as_list::<i32>().value(i),
                _ => array.as_fixed_size_list().value(i),
            };
            let shape = tensor_shape(field)
                .filter(|s| s.iter().product::<u64>() == values.len() as u64)
                .unwrap_or_else(|| vec![values.len() as u64]);
            let dtype = match f.data_type() {
                A::Int8 => "int8",
                A::Int16 => "int16",
                A::Int32 => "int32",
                A::Int64 => "int64",
                A::UInt8 => "uint8",
                A::UInt16 => "uint16",
                A::UInt32 => "uint32",
                A::UInt64 => "uint64",
                A::Float16 => "float16",
                A::Float32 => "float32",
                A::Float64 => "float64",
                _ => "",
            };
            if dtype.is_empty() || values.null_count() > 0 {
                return Value::List(
                    (0..values.len())
                        .map(|k| value_at(values.as_ref(), f, k))
                        .collect(),
                );
            }
            let d = values.to_data();
            let width = d.data_type().primitive_width().unwrap_or(1);
            let data = d
                .buffers()
                .first()
                .and_then(|b| b.get(d.offset() * width..(d.offset() + d.len()) * width))
                .unwrap_or_default()
                .to_vec();
            Value::Tensor {
                dtype: dtype.into(),
                shape,
                data,
            }
        }
        A::Struct(fields) => {
            let s = array.as_struct();
            Value::List(
                s.columns()
                    .iter()
                    .zip(fields)
                    .map(|(c, f)| value_at(c.as_ref(), f, i))
                    .collect(),
            )
        }
        _ => Value::Null,
    }
}

/// The shape of an `arrow.fixed_shape_tensor` field (from its extension
/// metadata), if it has one.
fn tensor_shape(field: &arrow_schema::Field) -> Option<Vec<u64>> {
    let m = field.metadata().get(crate::typed::EXTENSION_METADATA)?;
    let m = serde_json::from_str::<serde_json::Value>(m).ok()?;
    m.get("shape")?
        .as_array()?
        .iter()
        .map(serde_json::Value::as_u64)
        .collect()
}

/// The columns of a typed schema, in the convenience view's words.
/// An [`Error::InvalidArgument`] naming the first of `indices` that is
/// not a record of `d`.
pub(crate) fn check_indices<D: Dataset + ?Sized>(d: &D, indices: &[u64]) -> Result<(), Error> {
    let n = d.len();
    match indices.iter().enumerate().find(|&(_, &i)| i >= n) {
        Some((k, i)) => Err(Error::InvalidArgument {
            format: Some(d.format()),
            message: format!(
                "index {i} (position {k} of the request) is not a record: there are {n}"
            ),
        }),
        None => Ok(()),
    }
}

/// [`Dataset::take_arrays`] through `read_arrays`: one call per run of
/// consecutive records (in ascending order), then one `take` into the
/// asked order.
fn take_by_runs<D: Dataset + ?Sized>(
    d: &D,
    columns: &[usize],
    indices: &[u64],
) -> Result<Vec<arrow_array::ArrayRef>, Error> {
    use arrow_array::{Array, UInt32Array};
    if indices.is_empty() {
        return d.read_arrays(columns, 0..0);
    }
    let positions = u32::try_from(indices.len()).map_err(|_| Error::InvalidArgument {
        format: Some(d.format()),
        message: format!("{} indices in one request, more than 2^32", indices.len()),
    })?;
    let mut sorted: Vec<(u64, u32)> = indices.iter().copied().zip(0..positions).collect();
    sorted.sort_unstable();
    // Runs of distinct consecutive records, and for every request the
    // row it gets among the runs' rows.
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut at = vec![0u32; indices.len()];
    let mut row = 0u32;
    for &(i, pos) in &sorted {
        match runs.last_mut() {
            Some((_, end)) if *end == i + 1 => {}
            Some((_, end)) if *end == i => {
                *end += 1;
                row += 1;
            }
            Some(_) => {
                runs.push((i, i + 1));
                row += 1;
            }
            None => runs.push((i, i + 1)),
        }
        if let Some(slot) = at.get_mut(pos as usize) {
            *slot = row;
        }
    }
    let pieces = runs
        .iter()
        .map(|&(a, b)| d.read_arrays(columns, a..b))
        .collect::<Result<Vec<_>, _>>()?;
    let take = UInt32Array::from(at);
    let mut out = Vec::with_capacity(columns.len());
    for c in 0..columns.len() {
        let parts: Vec<&dyn Array> = pieces
            .iter()
            .filter_map(|p| p.get(c).map(|a| a.as_ref()))
            .collect();
        let whole = match parts.as_slice() {
            [one] => one.slice(0, one.len()),
            _ => arrow_select::concat::concat(&parts)?,
        };
        out.push(arrow_select::take::take(whole.as_ref(), &take, None)?);
    }
    Ok(out)
}

pub(crate) fn columns_from_schema(schema: &arrow_schema::Schema) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .map(|f| Column {
            name: f.name().clone(),
            ty: f
                .metadata()
                .get(crate::typed::TYPE_KEY)
                .cloned()
                .unwrap_or_else(|| f.data_type().to_string()),
            shape: match f.data_type() {
                arrow_schema::DataType::FixedSizeList(_, n) => tensor_shape(f)
                    .filter(|s| s.iter().product::<u64>() == *n as u64)
                    .unwrap_or_else(|| vec![*n as u64]),
                arrow_schema::DataType::List(_) => vec![0],
                _ => Vec::new(),
            },
        })
        .collect()
}
