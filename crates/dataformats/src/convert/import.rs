//! Inputs that are not dataset formats but carry typed tables: Parquet,
//! Arrow IPC (file and stream), CSV and JSON lines. Their batches go
//! through the same writers as any dataset's.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, SchemaRef};

use super::{ConvertOptions, Input};
use crate::dataset::{BatchStream, Error};

mod ipc;
mod parquet;

/// The kinds of table file [`open`] reads, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Parquet,
    ArrowFile,
    ArrowStream,
    Csv,
    JsonLines,
}

impl Table {
    pub(crate) fn from_path(path: &Path) -> Option<Table> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "parquet" | "pq" => Table::Parquet,
            "arrow" | "feather" | "ipc" => Table::ArrowFile,
            "arrows" => Table::ArrowStream,
            "csv" => Table::Csv,
            "jsonl" | "ndjson" => Table::JsonLines,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Parquet => "parquet",
            Table::ArrowFile => "arrow",
            Table::ArrowStream => "arrows",
            Table::Csv => "csv",
            Table::JsonLines => "jsonl",
        }
    }
}

/// Where a table's batches come from.
enum Source {
    /// An Arrow reader's batches (Arrow IPC; Parquet without columns).
    Arrow(Box<dyn Iterator<Item = Result<RecordBatch, ArrowError>> + Send>),
    /// Parquet: runs of records, each read on any thread.
    Parquet(Box<parquet::ParquetInput>),
    /// An Arrow IPC file: its stored batches, each decoded on any thread.
    Ipc(ipc::IpcBatches),
    /// An Arrow IPC stream, read in order.
    IpcStream(Box<ipc::IpcStream>),
    /// JSON lines: the lines of each batch are read in order and can be
    /// decoded on any thread.
    Json(JsonLines),
    /// CSV: the text of each batch's records is found in order and can be
    /// decoded on any thread.
    Csv(Box<CsvBlocks>),
}

impl Iterator for Source {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Source::Arrow(batches) => Some(batches.next()?.map_err(Error::from)),
            Source::Parquet(p) => p.next(),
            Source::Ipc(b) => b.next(),
            Source::IpcStream(b) => b.next(),
            Source::Json(lines) => lines.next(),
            Source::Csv(blocks) => blocks.next(),
        }
    }
}

/// The columns, records and limit of the conversion, applied to a
/// table's batches in order.
struct Window {
    schema: SchemaRef,
    columns: Vec<usize>,
    /// Records still to skip, then still to give.
    skip: u64,
    left: u64,
}

impl Window {
    /// What of batch `b` (the next in order) is given: `None` when all of
    /// it is skipped.
    fn cut(&mut self, b: RecordBatch) -> Option<Result<RecordBatch, Error>> {
        let n = b.num_rows() as u64;
        if self.skip >= n {
            self.skip -= n;
            return None;
        }
        let start = self.skip;
        self.skip = 0;
        let take = (n - start).min(self.left);
        self.left -= take;
        let b = b.slice(start as usize, take as usize);
        Some(
            b.project(&self.columns)
                .and_then(|b| b.with_schema(self.schema.clone()))
                .map_err(Error::from),
        )
    }
}

/// Batches of a table file, with the columns, records and limit of the
/// conversion applied.
struct Sliced {
    inner: Source,
    window: Window,
    failed: bool,
}

impl Sliced {
    /// The input named `from` of `records` announced records (0: not
    /// known): `inner`'s batches through `window`.
    fn input(from: &str, records: u64, inner: Source, window: Window) -> Input {
        Input {
            from: from.to_string(),
            records,
            stream: Box::new(Sliced {
                inner,
                window,
                failed: false,
            }),
            repaired: None,
            staged: None,
        }
    }
}

impl BatchStream for Sliced {
    fn schema(&self) -> SchemaRef {
        self.window.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        loop {
            if self.failed || self.window.left == 0 {
                return None;
            }
            let b = match self.inner.next()? {
                Ok(b) => b,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            if let Some(b) = self.window.cut(b) {
                return Some(b);
            }
        }
    }

    /// A Parquet input that can be read in runs: the records not yet
    /// handed out, as parts read side by side.
    fn parts(&self) -> Option<&dyn crate::dataset::Parts> {
        match &self.inner {
            Source::Parquet(p) if !self.failed && self.window.left > 0 => {
                p.view().map(|v| v as &dyn crate::dataset::Parts)
            }
            _ => None,
        }
    }

    /// JSON lines and CSV: each batch's text read here, in order, and
    /// decoded on `threads` threads (`active` of them at a time); Parquet:
    /// each run of records decoded on one of them; other tables one batch
    /// after the other.
    fn send_all(
        &mut self,
        threads: usize,
        active: &crate::core::parallel::Active,
        send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
    ) {
        let serial = match &self.inner {
            Source::Arrow(_) | Source::IpcStream(_) => true,
            Source::Parquet(p) => !(p.parts.split && p.untouched()),
            Source::Ipc(_) => false,
            Source::Json(_) | Source::Csv(_) => false,
        };
        if threads < 2 || self.failed || self.window.left == 0 || serial {
            return crate::dataset::send_each(self, send);
        }
        // However the run ends, the stream has ended.
        self.failed = true;
        let Sliced { inner, window, .. } = self;
        match inner {
            Source::Json(json) => {
                let (schema, path) = (json.schema.clone(), json.path.clone());
                decode_apart(
                    threads,
                    active,
                    window,
                    send,
                    || json.next_text(),
                    |lines| Ok(vec![decode_json(&schema, &path, lines)?]),
                );
            }
            Source::Csv(csv) => {
                let schema = csv.schema.clone();
                decode_apart(
                    threads,
                    active,
                    window,
                    send,
                    || csv.next_block(),
                    |block| Ok(vec![block.decode(&schema)?]),
                );
            }
            Source::Parquet(p) => {
                let parquet::ParquetInput { parts, decoder, .. } = &mut **p;
                decode_apart(
                    threads,
                    active,
                    window,
                    send,
                    || parts.next_part(),
                    |part| decoder.decode(part),
                );
            }
            Source::Ipc(batches) => {
                let file = batches.file.clone();
                decode_apart(
                    threads,
                    active,
                    window,
                    send,
                    || batches.next_index(),
                    |k| Ok(vec![file.batch(k)?]),
                );
            }
            Source::Arrow(_) | Source::IpcStream(_) => {}
        }
    }
}

/// Hands the batches `work` decodes on `threads` threads (`active` of them
/// at a time) from the items `next` reads, in order, through `window` to
/// `send`, until the end, the first error (handed on) or `send` refusing.
fn decode_apart<T: Send>(
    threads: usize,
    active: &crate::core::parallel::Active,
    window: &mut Window,
    send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
    mut next: impl FnMut() -> Option<Result<T, Error>>,
    work: impl Fn(T) -> Result<Vec<RecordBatch>, Error> + Sync,
) {
    // `Err(None)`: stop without an error to hand on.
    let r = crate::core::parallel::ordered_active(
        threads,
        threads,
        active,
        || next().transpose().map_err(Some),
        work,
        |batches| {
            for b in batches.map_err(Some)? {
                let Some(b) = window.cut(b) else {
                    continue;
                };
                let ok = b.is_ok();
                if !(send(b) && ok && window.left > 0) {
                    return Err(None);
                }
            }
            Ok(())
        },
    );
    if let Err(Some(e)) = r {
        send(Err(e));
    }
}

/// `f`, a call into another crate's decoder (`by`: arrow-ipc's, the
/// parquet crate's) on what a file says: a panic (they assert some of what
/// a footer, block or page says) is an error naming `what()` in `path` and
/// the panic's message, not a crash, and nothing is printed for it.
fn caught<T>(
    path: &str,
    what: impl FnOnce() -> String,
    by: &str,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    crate::core::panics::catch_quiet(f).unwrap_or_else(|panic| {
        Err(Error::Data {
            format: None,
            message: format!(
                "{path}: {} is malformed (the {by} failed on it: {panic})",
                what()
            ),
        })
    })
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A reader that fails once more than the caller's cap of bytes
/// (`Limits::max_alloc`) has come through it: the text read to infer a
/// schema, not cut short silently.
struct Capped<R> {
    inner: R,
    left: u64,
    limit: u64,
    what: &'static str,
}

impl<R> Capped<R> {
    fn new(inner: R, what: &'static str, opts: &ConvertOptions) -> Self {
        let limit = opts.open.limits.max_alloc;
        Capped {
            inner,
            left: limit,
            limit,
            what,
        }
    }
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => Err(std::io::Error::other(format!(
                "limit exceeded: {} is over {} bytes, the limit is {}",
                self.what, self.limit, self.limit
            ))),
        }
    }
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// [`open`], a Parquet file in runs of about `part_bytes` of the columns
/// read (the fuzz target's small files then make several runs), following
/// its offset index if `index`.
pub(crate) fn open_in_runs(
    path: &Path,
    kind: Table,
    opts: &ConvertOptions,
    part_bytes: u64,
    index: bool,
) -> Result<Input, Error> {
    match kind {
        Table::Parquet => parquet::open_guarded(path, opts, part_bytes, index),
        _ => open(path, kind, opts),
    }
}

/// Opens the table file `path` as typed batches.
pub(crate) fn open(path: &Path, kind: Table, opts: &ConvertOptions) -> Result<Input, Error> {
    let file = || File::open(path).map_err(io(path));
    let (schema, records, source): (SchemaRef, Option<u64>, Source) = match kind {
        Table::Parquet => return parquet::open(path, opts),
        Table::ArrowFile => return open_ipc(path, opts),
        Table::ArrowStream => {
            let r = ipc::IpcStream::open(path)?;
            (r.schema(), None, Source::IpcStream(Box::new(r)))
        }
        Table::Csv => {
            let format = arrow_csv::reader::Format::default().with_header(true);
            let mut counted = Counted {
                inner: file()?,
                bytes: 0,
            };
            // The lines read to infer the schema are held one record at a
            // time: no more than the caller's cap of text is read for them
            // (a record cut short there could be taken for another type).
            let capped = Capped::new(&mut counted, "the CSV text read to infer its schema", opts);
            let (schema, read) = format.infer_schema(BufReader::new(capped), Some(10_000))?;
            let schema = Arc::new(schema);
            // Records without a fixed width: as many per batch as the
            // rows read to infer the schema say fill BATCH_BYTES.
            let mut batch = opts.batch_records(&schema);
            if opts.batch_size == 0 && super::record_width(&schema).is_none() {
                let per_row = counted.bytes.checked_div(read as u64).unwrap_or(0).max(1);
                batch = (super::BATCH_BYTES / per_row).clamp(1, batch);
            }
            let blocks = CsvBlocks::new(file()?, schema.clone(), batch, opts.open.limits);
            (schema, None, Source::Csv(Box::new(blocks)))
        }
        Table::JsonLines => {
            let schema = Arc::new(infer_json(path, opts.open.limits)?);
            let r = JsonLines {
                reader: BufReader::new(file()?),
                limits: opts.open.limits,
                schema: schema.clone(),
                batch: opts.batch_len(&schema),
                batch_bytes: (opts.batch_size == 0)
                    .then(|| usize::try_from(super::BATCH_BYTES).unwrap_or(usize::MAX)),
                line: 0,
                path: path.display().to_string(),
                failed: None,
            };
            (schema, None, Source::Json(r))
        }
    };
    let columns = opts.column_indices(&schema, path)?;
    let projected = Arc::new(schema.project(&columns)?);
    // The record count may be unknown: select from an unbounded range.
    let range = opts.record_range(u64::MAX);
    let (skip, left) = (range.start, range.end - range.start);
    let total = records
        .map(|r| r.saturating_sub(skip).min(left))
        .unwrap_or(0);
    let window = Window {
        schema: projected,
        columns,
        skip,
        left,
    };
    Ok(Sliced::input(kind.name(), total, source, window))
}

/// Opens the Arrow IPC file `path`: its stored batches, holding only the
/// columns selected.
fn open_ipc(path: &Path, opts: &ConvertOptions) -> Result<Input, Error> {
    let file = ipc::IpcFile::open(path, opts.open.limits, |schema| {
        opts.column_indices(schema, path)
    })?;
    let schema = file.schema();
    let range = opts.record_range(u64::MAX);
    let window = Window {
        columns: (0..schema.fields().len()).collect(),
        schema,
        skip: range.start,
        left: range.end - range.start,
    };
    let batches = Source::Ipc(ipc::IpcBatches::new(file));
    Ok(Sliced::input(Table::ArrowFile.name(), 0, batches, window))
}

/// Lines read to infer a JSON lines file's schema.
const INFER_LINES: usize = 10_000;

fn json_err(path: &Path, line: usize, m: impl std::fmt::Display) -> Error {
    Error::Data {
        format: None,
        message: format!("{}: line {line}: {m}", path.display()),
    }
}

/// The type of one JSON value, merged with what was seen before.
fn merge(seen: Option<DataType>, v: &serde_json::Value) -> Result<Option<DataType>, String> {
    use serde_json::Value as J;
    let now = match v {
        J::Null => return Ok(seen),
        J::Bool(_) => DataType::Boolean,
        // Non-negative integers (UInt8 marks them while inferring) fit both
        // an Int64 and a UInt64 column; `finish` makes them Int64.
        J::Number(n) if n.as_i64().is_some_and(|x| x >= 0) => DataType::UInt8,
        J::Number(n) if n.is_i64() => DataType::Int64,
        J::Number(n) if n.is_u64() => DataType::UInt64,
        J::Number(_) => DataType::Float64,
        J::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => match &seen {
            Some(DataType::Float64 | DataType::Int64 | DataType::UInt64) => DataType::Float64,
            _ => DataType::Utf8,
        },
        J::String(_) => DataType::Utf8,
        J::Array(items) => {
            let inner = match &seen {
                Some(DataType::List(f)) => Some(f.data_type().clone()),
                _ => None,
            };
            let mut t = inner;
            for x in items {
                t = merge(t, x)?;
            }
            DataType::List(Arc::new(arrow_schema::Field::new(
                "item",
                t.unwrap_or(DataType::Utf8),
                true,
            )))
        }
        J::Object(m) => {
            let mut fields: Vec<(String, Option<DataType>)> = match &seen {
                Some(DataType::Struct(fs)) => fs
                    .iter()
                    .map(|f| (f.name().clone(), Some(f.data_type().clone())))
                    .collect(),
                _ => Vec::new(),
            };
            for (k, x) in m {
                match fields.iter_mut().find(|(n, _)| n == k) {
                    Some((_, t)) => *t = merge(t.take(), x).map_err(|e| format!("{k}: {e}"))?,
                    None => fields.push((k.clone(), merge(None, x)?)),
                }
            }
            DataType::Struct(
                fields
                    .into_iter()
                    .map(|(n, t)| arrow_schema::Field::new(n, t.unwrap_or(DataType::Utf8), true))
                    .collect(),
            )
        }
    };
    Ok(Some(match (seen, now) {
        (None, t) => t,
        (Some(a), b) if a == b => a,
        (Some(DataType::UInt8), DataType::Int64) | (Some(DataType::Int64), DataType::UInt8) => {
            DataType::Int64
        }
        (Some(DataType::UInt8), DataType::UInt64) | (Some(DataType::UInt64), DataType::UInt8) => {
            DataType::UInt64
        }
        (Some(DataType::UInt64), DataType::Int64) | (Some(DataType::Int64), DataType::UInt64) => {
            return Err("negative integers and integers above i64::MAX in one field".into());
        }
        (Some(DataType::Float64), DataType::Int64 | DataType::UInt64 | DataType::UInt8)
        | (Some(DataType::Int64 | DataType::UInt64 | DataType::UInt8), DataType::Float64) => {
            DataType::Float64
        }
        (Some(DataType::List(_)), t @ DataType::List(_)) => t,
        (Some(DataType::Struct(_)), t @ DataType::Struct(_)) => t,
        (Some(a), b) => return Err(format!("{a} and {b} values")),
    }))
}

/// The inferred type with the non-negative-integer mark made Int64.
fn finish(t: DataType) -> DataType {
    match t {
        DataType::UInt8 => DataType::Int64,
        DataType::List(f) => DataType::List(Arc::new(arrow_schema::Field::new(
            "item",
            finish(f.data_type().clone()),
            true,
        ))),
        DataType::Struct(fs) => DataType::Struct(
            fs.iter()
                .map(|f| arrow_schema::Field::new(f.name(), finish(f.data_type().clone()), true))
                .collect(),
        ),
        t => t,
    }
}

/// The schema of the first lines of a JSON lines file: one nullable field
/// per key, in order of appearance.
fn infer_json(path: &Path, limits: crate::core::Limits) -> Result<arrow_schema::Schema, Error> {
    use std::io::BufRead as _;
    let f = File::open(path).map_err(io(path))?;
    let mut fields: Vec<(String, Option<DataType>)> = Vec::new();
    // The lines are held one at a time: no more than the caller's cap of
    // text is read for them.
    let capped = BufReader::new(Capped {
        inner: f,
        left: limits.max_alloc,
        limit: limits.max_alloc,
        what: "the JSON lines read to infer their schema",
    });
    for (n, line) in capped.lines().take(INFER_LINES).enumerate() {
        let line = line.map_err(io(path))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| json_err(path, n + 1, e))?;
        if let Some(lit) = crate::core::json::wide_integer(&line) {
            return Err(json_err(
                path,
                n + 1,
                format!("the integer {lit} does not fit 64 bits (it would become a rounded float)"),
            ));
        }
        let serde_json::Value::Object(m) = v else {
            return Err(json_err(path, n + 1, "not a JSON object"));
        };
        for (k, x) in &m {
            if !fields.iter().any(|(name, _)| name == k) {
                fields.push((k.clone(), None));
            }
            let Some((_, slot)) = fields.iter_mut().find(|(name, _)| name == k) else {
                continue;
            };
            *slot =
                merge(slot.take(), x).map_err(|e| json_err(path, n + 1, format!("{k:?}: {e}")))?;
        }
    }
    Ok(arrow_schema::Schema::new(
        fields
            .into_iter()
            .map(|(n, t)| arrow_schema::Field::new(n, finish(t.unwrap_or(DataType::Utf8)), true))
            .collect::<Vec<_>>(),
    ))
}

/// Batches of a JSON lines file decoded with a fixed schema.
struct JsonLines {
    reader: BufReader<File>,
    /// The caller's caps: a line is read into one buffer.
    limits: crate::core::Limits,
    schema: SchemaRef,
    batch: usize,
    /// Bytes of text after which a batch ends early (when the batch size
    /// is left to the library): long lines make short batches.
    batch_bytes: Option<usize>,
    line: usize,
    path: String,
    /// A failure to read a line, given after the lines read before it.
    failed: Option<Error>,
}

impl JsonLines {
    /// The next batch's lines that are not blank, each with its 1-based
    /// number; `None` at the end. A failure to read a line comes after
    /// the lines before it.
    fn next_text(&mut self) -> Option<Result<Vec<(usize, String)>, Error>> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        let mut rows = Vec::new();
        let mut text = 0usize;
        while rows.len() < self.batch && self.batch_bytes.is_none_or(|most| text < most) {
            let l = match self.next_line() {
                None => break,
                Some(Ok(l)) => l,
                Some(Err(e)) => match rows.is_empty() {
                    true => return Some(Err(e)),
                    false => {
                        self.failed = Some(e);
                        break;
                    }
                },
            };
            text += l.len();
            if l.trim().is_empty() {
                continue;
            }
            rows.push((self.line, l));
        }
        (!rows.is_empty()).then_some(Ok(rows))
    }

    /// The next line, without its LF and a CR before it (as
    /// `BufRead::lines` gives it), read into a buffer of at most the
    /// caller's cap; `None` at the end.
    fn next_line(&mut self) -> Option<Result<String, Error>> {
        use std::io::{BufRead as _, Read as _};
        let most = self.limits.max_alloc;
        let mut raw = Vec::new();
        let read = (&mut self.reader)
            .take(most.saturating_add(1))
            .read_until(b'\n', &mut raw);
        let io = |e: std::io::Error| Error::from(ArrowError::IoError(e.to_string(), e));
        match read {
            Ok(0) => return None,
            Ok(_) => self.line += 1,
            Err(e) => return Some(Err(io(e))),
        }
        if raw.len() as u64 > most {
            return Some(Err(Error::limit(
                self.limits
                    .check_alloc("a line of JSON lines", raw.len() as u64)
                    .err()?,
            )));
        }
        if raw.last() == Some(&b'\n') {
            raw.pop();
            if raw.last() == Some(&b'\r') {
                raw.pop();
            }
        }
        Some(String::from_utf8(raw).map_err(|_| io(super::not_utf8())))
    }
}

impl Iterator for JsonLines {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let lines = self.next_text()?;
        Some(
            lines.and_then(|lines| {
                decode_json(&self.schema, &self.path, lines).map_err(Error::from)
            }),
        )
    }
}

/// The records of JSON `lines` (each with its 1-based line number in the
/// file at `path`) as a batch of `schema`.
fn decode_json(
    schema: &SchemaRef,
    path: &str,
    lines: Vec<(usize, String)>,
) -> Result<RecordBatch, ArrowError> {
    // Records decoded as they are read, when nothing in them needs the
    // documents (which then give the same records or the error).
    if !lines
        .iter()
        .any(|(_, l)| crate::core::json::wide_integer(l).is_some())
        && let Some(batch) = super::json_rows::decode(schema, &lines)
    {
        return Ok(batch);
    }
    decode_documents(schema, path, lines)
}

/// [`decode_json`] through a document per line.
fn decode_documents(
    schema: &SchemaRef,
    path: &str,
    lines: Vec<(usize, String)>,
) -> Result<RecordBatch, ArrowError> {
    let bad = |line: usize, m: String| ArrowError::ParseError(format!("{path}: line {line}: {m}"));
    let mut rows: Vec<(usize, serde_json::Map<String, serde_json::Value>)> =
        Vec::with_capacity(lines.len());
    for (line, l) in lines {
        if let Some(lit) = crate::core::json::wide_integer(&l) {
            return Err(bad(
                line,
                format!("the integer {lit} does not fit 64 bits (it would become a rounded float)"),
            ));
        }
        match serde_json::from_str::<serde_json::Value>(&l) {
            Ok(serde_json::Value::Object(m)) => rows.push((line, m)),
            Ok(_) => return Err(bad(line, "not a JSON object".into())),
            Err(e) => return Err(bad(line, e.to_string())),
        }
    }
    let mut cols = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let vals: Vec<Option<&serde_json::Value>> =
            rows.iter().map(|(_, m)| m.get(f.name())).collect();
        match super::json::decode(f.data_type(), &vals, None) {
            Ok(a) => cols.push(a),
            Err(e) => {
                let line = rows.get(e.at).map_or(0, |(l, _)| *l);
                return Err(bad(line, format!("{:?}: {}", f.name(), e.message)));
            }
        }
    }
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows.len()));
    RecordBatch::try_new_with_options(schema.clone(), cols, &opts)
}

/// A CSV file (with a header line) cut into blocks of whole records, a
/// batch's worth each, where the tokenizer arrow-csv decodes with (csv-core,
/// in arrow-csv's default format) ends them ([`Scan`]; the tests check the
/// two agree): each block decodes on its own into the batch one pass would
/// have made of those records.
struct CsvBlocks {
    file: BufReader<File>,
    schema: SchemaRef,
    /// Records per block.
    batch: usize,
    /// The header is still to be read (with the first block).
    header: bool,
    /// Records before the next block (the header not counted).
    records: u64,
    ended: bool,
    /// Where the scan stands.
    state: Scan,
    /// The caller's caps: a block's text is one buffer.
    limits: crate::core::Limits,
}

/// The text of a batch's records (and before them the header line, in the
/// first block).
struct CsvBlock {
    text: Vec<u8>,
    header: bool,
    /// Records in the block (the header not counted).
    records: usize,
    /// Records before the block (the header not counted).
    before: u64,
}

impl CsvBlocks {
    fn new(file: File, schema: SchemaRef, batch: u64, limits: crate::core::Limits) -> Self {
        CsvBlocks {
            file: BufReader::with_capacity(1 << 20, file),
            schema,
            batch: usize::try_from(batch).unwrap_or(usize::MAX).max(1),
            header: true,
            records: 0,
            ended: false,
            state: Scan::StartRecord,
            limits,
        }
    }

    /// The next block; `None` at the end (a header without records
    /// included).
    fn next_block(&mut self) -> Option<Result<CsvBlock, Error>> {
        if self.ended {
            return None;
        }
        let want = self.batch.saturating_add(usize::from(self.header));
        let (mut text, mut got) = (Vec::new(), 0usize);
        while got < want {
            let buf = match std::io::BufRead::fill_buf(&mut self.file) {
                Ok(buf) => buf,
                Err(e) => {
                    self.ended = true;
                    return Some(Err(ArrowError::IoError(e.to_string(), e).into()));
                }
            };
            if buf.is_empty() {
                // The end of the text ends a last record without its
                // line end.
                if self.state != Scan::StartRecord {
                    got += 1;
                    self.state = Scan::StartRecord;
                }
                self.ended = true;
                break;
            }
            let (used, records) = take_records(buf, &mut self.state, want - got);
            got += records;
            // The records of a block (or one unending record: an
            // unclosed quote) held in one buffer, within the caps.
            let held = (text.len() + used) as u64;
            if let Err(e) = self.limits.check_alloc("the text of a CSV block", held) {
                self.ended = true;
                return Some(Err(Error::limit(e)));
            }
            text.extend_from_slice(buf.get(..used).unwrap_or(buf));
            std::io::BufRead::consume(&mut self.file, used);
        }
        let header = std::mem::replace(&mut self.header, false);
        let records = got.saturating_sub(usize::from(header));
        if records == 0 {
            self.ended = true;
            return None;
        }
        let before = self.records;
        self.records += records as u64;
        Some(Ok(CsvBlock {
            text,
            header,
            records,
            before,
        }))
    }
}

/// Scans `buf` from `state` until `most` records have ended or `buf` has:
/// the bytes scanned and the records ended.
fn take_records(buf: &[u8], state: &mut Scan, most: usize) -> (usize, usize) {
    let (mut used, mut got) = (0, 0);
    while got < most
        && let Some(rest @ [_, ..]) = buf.get(used..)
    {
        let (n, records) = match *state {
            // At a record's start, up to the first quote: each run of
            // bytes other than CR and LF is a record.
            Scan::StartRecord => match plain_records(rest, most - got) {
                (n, records, true) => (n, records),
                // A quote, or the buffer's end inside a record: one record
                // byte by byte from its start.
                (n, records, false) => {
                    let after = rest.get(n..).unwrap_or_default();
                    let (m, one, next) = scan(after, Scan::StartRecord, 1);
                    *state = next;
                    (n + m, records + one)
                }
            },
            now => {
                let (n, one, next) = scan(rest, now, 1);
                *state = next;
                (n, one)
            }
        };
        used += n;
        got += records;
    }
    (used, got)
}

/// Where the CSV tokenizer stands, as csv-core's does with arrow-csv's
/// default format (`,` between fields, `"` quoting with `""` for a quote
/// inside, no escape byte, no comments, CR, LF or CRLF ending a record,
/// blank lines skipped): the states that decide where records end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Between records: line ends are skipped.
    StartRecord,
    /// At a field's start: a quote opens a quoted field.
    StartField,
    /// In an unquoted field (a quote is an ordinary byte there).
    InField,
    /// In a quoted field: only a quote means anything.
    InQuoted,
    /// After a quote in a quoted field: a second one is a quote inside it.
    QuoteInQuoted,
}

/// Scans `text` from `state` until `most` records have ended (a record
/// ends with the CR or LF after it, included) or the text ends: the bytes
/// scanned, the records ended and the state after them. At the end of the
/// input, any state but [`Scan::StartRecord`] ends one more record.
fn scan(text: &[u8], mut state: Scan, most: usize) -> (usize, usize, Scan) {
    let (mut at, mut records) = (0usize, 0usize);
    while records < most {
        let Some(rest @ [c, ..]) = text.get(at..) else {
            break;
        };
        let c = *c;
        let line_end = c == b'\r' || c == b'\n';
        (at, state) = match state {
            Scan::StartRecord if line_end => (at + 1, Scan::StartRecord),
            Scan::StartRecord => (at, Scan::StartField),
            Scan::StartField if c == b'"' => (at + 1, Scan::InQuoted),
            Scan::StartField if c == b',' => (at + 1, Scan::StartField),
            Scan::StartField | Scan::QuoteInQuoted | Scan::InField if line_end => {
                records += 1;
                (at + 1, Scan::StartRecord)
            }
            Scan::StartField => (at + 1, Scan::InField),
            Scan::QuoteInQuoted if c == b'"' => (at + 1, Scan::InQuoted),
            Scan::QuoteInQuoted if c == b',' => (at + 1, Scan::StartField),
            Scan::QuoteInQuoted => (at + 1, Scan::InField),
            Scan::InField => match memchr::memchr3(b',', b'\r', b'\n', rest) {
                // The delimiter or line end, seen next time round.
                Some(i @ 1..) => (at + i, Scan::InField),
                // A delimiter (line ends were taken above).
                Some(_) => (at + 1, Scan::StartField),
                None => (text.len(), Scan::InField),
            },
            Scan::InQuoted => match memchr::memchr(b'"', rest) {
                Some(i) => (at + i + 1, Scan::QuoteInQuoted),
                None => (text.len(), Scan::InQuoted),
            },
        };
    }
    (at, records, state)
}

/// Up to `most` records of `text` (which starts at a record's start)
/// before its first quote: the bytes they take (each up to and with the CR
/// or LF that ends it, blank lines before them included), how many, and
/// whether the count is whole (`most` records found, or the text ended
/// with a record's end): else the rest of the text, from the byte
/// returned, is left to the tokenizer. Without quotes (and with arrow-csv's
/// default format, whose only other special bytes are the delimiter and
/// the line ends), a record is a run of bytes other than CR and LF.
fn plain_records(text: &[u8], most: usize) -> (usize, usize, bool) {
    let plain = text.get(..memchr::memchr(b'"', text).unwrap_or(text.len()));
    let plain = plain.unwrap_or_default();
    let (mut at, mut records) = (0, 0);
    while records < most {
        // Blank lines are skipped.
        let Some(start) = plain
            .get(at..)
            .and_then(|t| t.iter().position(|&b| b != b'\n' && b != b'\r'))
        else {
            // Only line ends left: taken, when the text ends here.
            return match plain.len() == text.len() {
                true => (text.len(), records, true),
                false => (at, records, false),
            };
        };
        let Some(end) = plain
            .get(at + start..)
            .and_then(|t| memchr::memchr2(b'\n', b'\r', t))
        else {
            return (at, records, false);
        };
        at += start + end + 1;
        records += 1;
    }
    (at, records, true)
}

impl Iterator for CsvBlocks {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let block = self.next_block()?;
        Some(block.and_then(|b| b.decode(&self.schema).map_err(Error::from)))
    }
}

impl CsvBlock {
    /// The block's records as a batch of `schema`, decoded by arrow-csv;
    /// the lines its errors name are counted from the file's start, as a
    /// single pass over the file counts them.
    fn decode(self, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
        let format = arrow_csv::reader::Format::default().with_header(self.header);
        let mut d = arrow_csv::ReaderBuilder::new(schema.clone())
            .with_format(format)
            .with_batch_size(self.records)
            .build_decoder();
        // A block's decoder counts lines from its first record (a header
        // counts one): those before it are added to what it says.
        let before = match self.header {
            true => 0,
            false => self.before + 1,
        };
        let located = |e| relocate(e, before);
        let mut at = 0;
        while let Some(rest @ [_, ..]) = self.text.get(at..) {
            match d.decode(rest).map_err(located)? {
                0 => break,
                n => at += n,
            }
        }
        if at == self.text.len() {
            // The end of the text: a last record without its terminator.
            d.decode(&[]).map_err(located)?;
        }
        let b = d.flush().map_err(located)?;
        match b {
            Some(b) if b.num_rows() == self.records && at == self.text.len() => Ok(b),
            b => Err(ArrowError::CsvError(format!(
                "records from {}: the block of {} records was decoded into {} and {} bytes were left",
                self.before,
                self.records,
                b.map_or(0, |b| b.num_rows()),
                self.text.len() - at
            ))),
        }
    }
}

/// Arrow-csv's error `e` of a block with its (first) line number moved on
/// by `by`.
fn relocate(e: ArrowError, by: u64) -> ArrowError {
    let shift = |m: String| match m.find("line ") {
        Some(i) if by > 0 => {
            let (head, tail) = m.split_at(i + 5);
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            match tail.get(..digits).and_then(|d| d.parse::<u64>().ok()) {
                Some(n) => format!(
                    "{head}{}{}",
                    n.saturating_add(by),
                    tail.get(digits..).unwrap_or_default()
                ),
                None => m,
            }
        }
        _ => m,
    };
    match e {
        ArrowError::CsvError(m) => ArrowError::CsvError(shift(m)),
        ArrowError::ParseError(m) => ArrowError::ParseError(shift(m)),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records decoded as the lines are read are those of the documents:
    /// on random lines of random flat schemas (every value kind in every
    /// column kind, nulls, missing, unknown and repeated keys, lines that
    /// are not objects or not JSON), wherever the quick decoder gives a
    /// batch the documents give the same one, and wherever they refuse the
    /// lines the quick decoder gives none.
    #[test]
    fn records_decoded_as_read_are_the_documents_records() {
        use arrow_schema::{Field, Schema};
        let mut r = crate::core::rng::SplitMix64::new(41);
        let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
        let kinds = [
            DataType::Boolean,
            DataType::Int8,
            DataType::Int32,
            DataType::Int64,
            DataType::UInt8,
            DataType::UInt64,
            DataType::Float32,
            DataType::Float64,
            DataType::Utf8,
            list(DataType::Float64),
            list(DataType::Int64),
            list(DataType::Utf8),
            list(DataType::Float32),
            DataType::Date32,
        ];
        let values = [
            "null",
            "true",
            "false",
            "0",
            "7",
            "-3",
            "127",
            "128",
            "-129",
            "255",
            "256",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
            "-0",
            "1.5",
            "-0.0",
            "1e300",
            "1e-320",
            "2.5e38",
            "\"NaN\"",
            "\"Infinity\"",
            "\"-Infinity\"",
            "\"abc\"",
            "\"a\\\"b\\u00e9\"",
            "\"NaN:0x7ff8000000000001\"",
            "\"NaN:0x7fc00001\"",
            "[]",
            "[1,2.5,null]",
            "[\"x\",null]",
            "[1,[2]]",
            "[true]",
            "{}",
            "{\"a\":1}",
            "[-1,18446744073709551615]",
            "[\"NaN\",1e5]",
        ];
        let (mut quick, mut refused) = (0, 0);
        for case in 0..3000 {
            let n = 1 + r.below(4) as usize;
            let fields: Vec<Field> = (0..n)
                .map(|k| {
                    let t = kinds[r.below(kinds.len() as u64) as usize].clone();
                    Field::new(format!("f{k}"), t, r.below(8) != 0)
                })
                .collect();
            let schema = Arc::new(Schema::new(fields));
            let lines: Vec<(usize, String)> = (0..1 + r.below(5) as usize)
                .map(|line| {
                    let text = match r.below(40) {
                        0 => "[1]".to_string(),
                        1 => "{\"f0\":1".to_string(),
                        2 => "{} x".to_string(),
                        _ => {
                            let mut members = Vec::new();
                            for k in 0..n + 1 {
                                if r.below(5) == 0 {
                                    continue;
                                }
                                let name = if k == n {
                                    "zz".to_string()
                                } else {
                                    format!("f{k}")
                                };
                                let kind = schema.fields().get(k).map(|f| f.data_type().clone());
                                let pick = |r: &mut crate::core::rng::SplitMix64| {
                                    // Mostly values of the column's own kind.
                                    let own: &[&str] = match &kind {
                                        Some(DataType::Boolean) => &["true", "false", "null"],
                                        Some(DataType::Int8 | DataType::UInt8) => {
                                            &["0", "7", "100", "null"]
                                        }
                                        Some(DataType::Int32 | DataType::Int64) => {
                                            &["-3", "0", "123456", "-2147483648", "null"]
                                        }
                                        Some(DataType::UInt64) => {
                                            &["0", "18446744073709551615", "9"]
                                        }
                                        Some(DataType::Float32 | DataType::Float64) => &[
                                            "1.5",
                                            "-0.0",
                                            "7",
                                            "-2",
                                            "3.4028235e38",
                                            "1e-45",
                                            "\"NaN\"",
                                            "null",
                                        ],
                                        Some(DataType::Utf8) => {
                                            &["\"abc\"", "\"\"", "\"\\u00e9\\n\"", "null"]
                                        }
                                        Some(DataType::List(item)) => match item.data_type() {
                                            DataType::Utf8 => &["[\"x\",null,\"\"]", "[]", "null"],
                                            DataType::Int64 => {
                                                &["[1,-2,null]", "[]", "[9223372036854775807]"]
                                            }
                                            _ => &[
                                                "[1.5,-2,null,1e-7]",
                                                "[]",
                                                "[\"Infinity\"]",
                                                "null",
                                            ],
                                        },
                                        _ => &["null"],
                                    };
                                    let v = if r.below(4) != 0 {
                                        own[r.below(own.len() as u64) as usize]
                                    } else {
                                        values[r.below(values.len() as u64) as usize]
                                    };
                                    v.to_string()
                                };
                                members.push(format!("\"{name}\":{}", pick(&mut r)));
                                if r.below(30) == 0 {
                                    members.push(format!("\"{name}\":{}", pick(&mut r)));
                                }
                            }
                            // The members in a random order.
                            for i in (1..members.len()).rev() {
                                members.swap(i, r.below(i as u64 + 1) as usize);
                            }
                            format!("{{{}}}", members.join(","))
                        }
                    };
                    (line + 1, text)
                })
                .collect();
            let documents = decode_documents(&schema, "t", lines.clone());
            match super::super::json_rows::decode(&schema, &lines) {
                Some(batch) => {
                    quick += 1;
                    let want = documents.unwrap_or_else(|e| panic!("case {case}: {lines:?}: {e}"));
                    assert_eq!(batch.schema(), want.schema(), "case {case}");
                    assert_eq!(
                        format!("{batch:?}"),
                        format!("{want:?}"),
                        "case {case}: {lines:?}"
                    );
                }
                None => refused += usize::from(documents.is_err()),
            }
        }
        // Both sides were reached often.
        assert!(
            quick > 300 && refused > 300,
            "quick {quick}, refused {refused}"
        );
    }

    /// A few bytes drawn from `alphabet` by a small generator of `seed`.
    fn text(seed: &mut u64, alphabet: &[u8], len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                alphabet[(*seed % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    /// Where csv-core, in arrow-csv's default format, ends the records of
    /// `text` (the byte after each; the text's length for a last record
    /// without a line end).
    fn csv_core_ends(text: &[u8]) -> Vec<usize> {
        use csv_core::ReadRecordResult as R;
        let mut r = csv_core::ReaderBuilder::new().build();
        let (mut out, mut ends) = (vec![0u8; 1 << 16], vec![0usize; 1 << 12]);
        let (mut at, mut got) = (0, Vec::new());
        loop {
            let (res, n, _, _) = r.read_record(&text[at..], &mut out, &mut ends);
            at += n;
            match res {
                R::Record => got.push(at),
                R::End => break,
                R::OutputFull | R::OutputEndsFull => {}
                R::InputEmpty => {
                    if r.read_record(&[], &mut out, &mut ends).0 == R::Record {
                        got.push(at);
                    }
                    break;
                }
            }
        }
        got
    }

    /// The same through [`take_records`], `text` handed over in pieces of
    /// `piece` bytes (a buffer's end may fall anywhere), a record at a
    /// time.
    fn our_ends(text: &[u8], piece: usize) -> Vec<usize> {
        let (mut state, mut ends) = (Scan::StartRecord, Vec::new());
        for (k, buf) in text.chunks(piece).enumerate() {
            let mut used = 0;
            while used < buf.len() {
                let (n, records) = take_records(&buf[used..], &mut state, 1);
                used += n;
                if records == 1 {
                    ends.push(k * piece + used);
                }
            }
        }
        if state != Scan::StartRecord {
            ends.push(text.len());
        }
        ends
    }

    /// Records end where csv-core ends them, on random text of the bytes
    /// that matter (quotes, delimiters, CR, LF) handed over in pieces of
    /// every size: quoted fields across lines, doubled quotes, quotes
    /// inside unquoted fields, text after a closing quote, blank lines, a
    /// last record without a line end.
    #[test]
    fn records_end_where_csv_core_ends_them() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..20_000 {
            let alphabet: &[u8] = match round % 3 {
                0 => b"a,\"\r\n",
                1 => b"aaaa,,\"\n",
                _ => b"ab,\r\n\n\"",
            };
            let len = 1 + (round % 97);
            let t = text(&mut seed, alphabet, len);
            let want = csv_core_ends(&t);
            let shown = String::from_utf8_lossy(&t);
            for piece in [1, 2, 3, 7, 64, 1 << 20] {
                assert_eq!(our_ends(&t, piece), want, "{shown:?} in pieces of {piece}");
            }
            // All records at once: the same count.
            let mut state = Scan::StartRecord;
            let (n, records) = take_records(&t, &mut state, usize::MAX);
            assert_eq!(n, t.len());
            let last = usize::from(state != Scan::StartRecord);
            assert_eq!(records + last, want.len(), "{shown:?}");
        }
    }
}
