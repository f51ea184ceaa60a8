//! Parquet encoded on every core: the records are cut into parts fixed by
//! the data alone, each part is encoded into row groups on a thread of its
//! own, and the row groups are written in record order by the calling
//! thread. A stream whose records can be read in parts (a dataset's,
//! [`Parts`]) has each part read by the thread that encodes it
//! ([`write`]); any other is read by the calling thread, which hands the
//! parts on ([`write_stream`]).
//!
//! A worker holds one row group at a time: once it has closed one, it
//! waits until every part before its own has been written and its group
//! with them. So the encoded data in memory stays near one row group per
//! thread (about a part's values where they do not compress; at most
//! [`GROUP_BYTES`]), and the file is the same on any number of threads
//! (the parts, the batches inside them and the rule that closes a group
//! depend on the records only).

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use parquet::file::writer::SerializedFileWriter;

use crate::core::parallel::Joined;
use crate::dataset::{Error, Parts};

/// Rows in a row group at most (as in [`super::ExportFormat::Parquet`]).
pub(super) const GROUP_ROWS: usize = 1 << 20;

/// A row group is closed once the column writers estimate its encoded
/// size at this many bytes.
pub(super) const GROUP_BYTES: usize = 64 << 20;

/// Bytes of values in a part at most. Values that do not compress are
/// encoded into about as many bytes, so a part is then one row group of
/// about this size: two workers hold about twice that. A part also ends
/// a row group, so much smaller parts would make many small row groups.
const PART_BYTES: u64 = 32 << 20;

/// Input below this many bytes of values is one part.
const MIN_PART_BYTES: u64 = 4 << 20;

/// How records are cut into parts and row groups.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// [`PART_BYTES`].
    part_bytes: u64,
    /// [`MIN_PART_BYTES`].
    min_part_bytes: u64,
    /// [`GROUP_ROWS`].
    group_rows: usize,
    /// [`GROUP_BYTES`].
    group_bytes: usize,
}

const SIZES: Sizes = Sizes {
    part_bytes: PART_BYTES,
    min_part_bytes: MIN_PART_BYTES,
    group_rows: GROUP_ROWS,
    group_bytes: GROUP_BYTES,
};

/// What a worker hands to the writing thread.
enum Msg {
    /// A closed row group of `rows` records; `ack` is told once it is
    /// written.
    Group {
        chunks: Vec<ArrowColumnChunk>,
        rows: usize,
        ack: mpsc::SyncSender<()>,
    },
    /// The part has no more row groups.
    Done,
    /// Reading or encoding the part failed.
    Failed(Error),
    /// Reading or encoding the part panicked: resumed on the writing
    /// thread when the part's turn comes (as `core::parallel` does), so
    /// the other threads are not left waiting.
    Panicked(Box<dyn std::any::Any + Send>),
}

/// The parts the records `rest` are cut into, after a first batch of
/// `first` records (which goes with the first part), `per_record` bytes of
/// values each: about `sizes.part_bytes` of values and at most
/// `sizes.group_rows` records each, of equal length.
fn plan(first: u64, rest: Range<u64>, per_record: u64, sizes: Sizes) -> Vec<Range<u64>> {
    let n = rest.end.saturating_sub(rest.start);
    let all = n.saturating_add(first);
    if all == 0 {
        return Vec::new();
    }
    let bytes = all.saturating_mul(per_record.max(1));
    let count = match bytes < sizes.min_part_bytes {
        true => 1,
        false => bytes.div_ceil(sizes.part_bytes.max(1)),
    }
    .max(all.div_ceil(sizes.group_rows.max(1) as u64))
    .min(n)
    .max(1);
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if n == 0 {
        return vec![rest];
    }
    crate::dataset::split_at_starts(n, &[], 1, count)
        .into_iter()
        .map(|r| rest.start + r.start..rest.start + r.end)
        .collect()
}

/// Writes `first` (the stream's first batch, which fitted the length of
/// the others) and then the records of `parts` through `w` (which has
/// written nothing yet), encoded on `threads` threads; returns the records
/// written. The first error in record order is returned.
pub(super) fn write<W: Write + Send>(
    first: Option<RecordBatch>,
    parts: &dyn Parts,
    schema: &SchemaRef,
    w: ArrowWriter<W>,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    write_sized(first, parts, schema, w, threads, SIZES, progress)
}

/// [`write`] with parts and row groups cut by `sizes`.
fn write_sized<W: Write + Send>(
    first: Option<RecordBatch>,
    parts: &dyn Parts,
    schema: &SchemaRef,
    w: ArrowWriter<W>,
    threads: usize,
    sizes: Sizes,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    let per_record = match (crate::convert::record_width(schema), &first) {
        (Some(w), _) => w,
        (None, Some(b)) if b.num_rows() > 0 => {
            crate::convert::batch_bytes(b).div_ceil(b.num_rows() as u64)
        }
        (None, _) => 1,
    };
    let first_rows = first.as_ref().map_or(0, |b| b.num_rows() as u64);
    let plan = plan(first_rows, parts.range(), per_record, sizes);
    let first = std::sync::Mutex::new(first);
    let (mut file, factory) = w.into_serialized_writer()?;
    let workers = threads.clamp(1, plan.len().max(1));
    let next = AtomicUsize::new(0);
    // No part after one that failed is started.
    let last = AtomicUsize::new(usize::MAX);
    let stop = AtomicBool::new(false);
    let mut rows = 0u64;
    let (tx, rx) = mpsc::channel::<(usize, Msg)>();
    std::thread::scope(|s| {
        // Dropped last: the workers joined once the results' channel is
        // gone and `stop` set, so none outlives the call.
        let mut joined = Joined(Vec::with_capacity(workers));
        for _ in 0..workers {
            let tx = tx.clone();
            let (plan, next, last, stop, factory, first) =
                (&plan, &next, &last, &stop, &factory, &first);
            joined.0.push(s.spawn(move || {
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(range) = plan.get(k) else { break };
                    if k > last.load(Ordering::SeqCst) || stop.load(Ordering::SeqCst) {
                        break;
                    }
                    // The first part starts with the stream's first batch.
                    let head = match k {
                        0 => first.lock().ok().and_then(|mut f| f.take()),
                        _ => None,
                    };
                    let mut part = parts.part(range.clone());
                    let mut batches = head
                        .map(Ok)
                        .into_iter()
                        .chain(std::iter::from_fn(|| part.next_batch()));
                    let Some(end) = run(k, &mut batches, schema, factory, sizes, stop, &tx) else {
                        continue;
                    };
                    if let Some(end) = end {
                        last.fetch_min(k, Ordering::SeqCst);
                        let _ = tx.send((k, end));
                    }
                    break;
                }
            }));
        }
        drop(tx);
        let r = deliver(rx, plan.len(), &mut file, &mut rows, progress);
        // The channel is gone: a worker waiting to hand on or to hear
        // back stops, and so does one reading.
        stop.store(true, Ordering::SeqCst);
        r
    })?;
    file.close()?;
    Ok(rows)
}

/// Encodes part `k`'s `batches` into row groups and hands them through
/// `tx`, each waiting until it is written. `None` when the part is done
/// (and `tx` told); else the worker stops, with what to tell `tx` if
/// anything (its failure or its panic; nothing when it was stopped).
fn run(
    k: usize,
    batches: &mut dyn Iterator<Item = Result<RecordBatch, Error>>,
    schema: &SchemaRef,
    factory: &ArrowRowGroupWriterFactory,
    sizes: Sizes,
    stop: &AtomicBool,
    tx: &mpsc::Sender<(usize, Msg)>,
) -> Option<Option<Msg>> {
    let mut send = |chunks, rows| {
        let (ack, acked) = mpsc::sync_channel(1);
        tx.send((k, Msg::Group { chunks, rows, ack })).is_ok() && acked.recv().is_ok()
    };
    let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        encode(k, batches, schema, factory, sizes, stop, &mut send)
    }));
    match encoded {
        Ok(Ok(true)) if tx.send((k, Msg::Done)).is_ok() => None,
        Ok(Ok(_)) => Some(None),
        Ok(Err(e)) => Some(Some(Msg::Failed(e))),
        Err(panic) => Some(Some(Msg::Panicked(panic))),
    }
}

/// Bytes of values in a part cut from a stream read in order
/// ([`write_stream`]): the calling thread holds the part it reads and the
/// parts waiting for a worker, so they are smaller than [`PART_BYTES`].
const STREAM_PART_BYTES: u64 = 16 << 20;

const STREAM_SIZES: Sizes = Sizes {
    part_bytes: STREAM_PART_BYTES,
    min_part_bytes: 0,
    group_rows: GROUP_ROWS,
    group_bytes: GROUP_BYTES,
};

/// Writes `first` and then every batch of `reader` (a stream read in
/// order, not in parts) through `w` (which has written nothing yet),
/// encoded on `threads` threads; returns the records written.
///
/// The calling thread reads the batches and cuts them into parts after
/// the batch that brings a part to [`STREAM_PART_BYTES`] of values, or at
/// [`GROUP_ROWS`] records (where they are cut depends on the batches
/// alone); each part is encoded into row groups by a worker, and the
/// calling thread writes them in record order between batches.
/// At most one part per worker waits for one, so the batches held stay
/// near `threads + 2` parts. On one thread the parts are encoded where
/// they are read, into the same file. The first error in record order is
/// returned; no part is read after a failure is known.
pub(super) fn write_stream<W: Write + Send>(
    first: Option<RecordBatch>,
    reader: &mut dyn crate::dataset::BatchStream,
    schema: &SchemaRef,
    w: ArrowWriter<W>,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    write_stream_sized(first, reader, schema, w, threads, STREAM_SIZES, progress)
}

/// [`write_stream`] with parts and row groups cut by `sizes`.
fn write_stream_sized<W: Write + Send>(
    first: Option<RecordBatch>,
    reader: &mut dyn crate::dataset::BatchStream,
    schema: &SchemaRef,
    w: ArrowWriter<W>,
    threads: usize,
    sizes: Sizes,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    let (mut file, factory) = w.into_serialized_writer()?;
    let mut cut = Cut {
        head: first,
        reader,
        sizes,
        ended: false,
    };
    let stop = AtomicBool::new(false);
    let rows = if threads < 2 {
        let mut rows = 0u64;
        let mut k = 0;
        while let Some(part) = cut.next_part(&mut || Ok(())) {
            let mut failed = None;
            let mut send = |chunks, n| match append(&mut file, chunks) {
                Ok(()) => {
                    rows += n as u64;
                    progress(rows);
                    true
                }
                Err(e) => {
                    failed = Some(e);
                    false
                }
            };
            let mut batches = part?.into_iter().map(Ok);
            let done = encode(k, &mut batches, schema, &factory, sizes, &stop, &mut send);
            if let Some(e) = failed {
                return Err(e);
            }
            done?;
            k += 1;
        }
        rows
    } else {
        let (jobs, taken) = mpsc::channel::<(usize, Vec<RecordBatch>)>();
        let taken = std::sync::Mutex::new(taken);
        let (tx, rx) = mpsc::channel::<(usize, Msg)>();
        std::thread::scope(|s| {
            // Dropped last: the workers joined once the jobs' sender (moved
            // into `feed`) and the results' receiver are gone and `stop`
            // set.
            let mut joined = Joined(Vec::with_capacity(threads));
            for _ in 0..threads {
                let tx = tx.clone();
                let (taken, stop, factory) = (&taken, &stop, &factory);
                joined.0.push(s.spawn(move || {
                    loop {
                        let job = match taken.lock() {
                            Ok(t) => t.recv(),
                            Err(_) => break,
                        };
                        let Ok((k, part)) = job else { break };
                        let mut batches = part.into_iter().map(Ok);
                        let Some(end) = run(k, &mut batches, schema, factory, sizes, stop, &tx)
                        else {
                            continue;
                        };
                        if let Some(end) = end {
                            let _ = tx.send((k, end));
                        }
                        break;
                    }
                }));
            }
            drop(tx);
            let mut d = Delivery::new(&mut file);
            let r = feed(&mut cut, &mut d, jobs, &rx, threads, progress);
            // A worker waiting to hand on or to hear back stops, and so
            // does one encoding.
            stop.store(true, Ordering::SeqCst);
            r
        })?
    };
    file.close()?;
    Ok(rows)
}

/// The calling thread's side of [`write_stream`] on `workers` threads:
/// reads the parts of `cut` and hands them through `jobs`, writes the row
/// groups arriving through `rx` in order (between batches, and while
/// [`workers`] parts are already waiting); returns the records written.
fn feed<W: Write + Send>(
    cut: &mut Cut<'_>,
    d: &mut Delivery<'_, W>,
    jobs: mpsc::Sender<(usize, Vec<RecordBatch>)>,
    rx: &mpsc::Receiver<(usize, Msg)>,
    workers: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    let mut k = 0;
    loop {
        // The parts handed on and not yet written: one encoding per
        // worker and one more waiting.
        while k - d.turn > workers {
            d.take(ended(rx.recv(), d.turn)?, progress)?;
        }
        let part = cut.next_part(&mut || {
            while let Ok(m) = rx.try_recv() {
                d.take(m, progress)?;
            }
            Ok(())
        });
        match part {
            None => break,
            Some(Ok(batches)) => {
                // Every worker has ended (each told why first): the
                // parts before this one say so in turn.
                let _ = jobs.send((k, batches));
                k += 1;
            }
            Some(Err(e)) => {
                d.take((k, Msg::Failed(e)), progress)?;
                k += 1;
                break;
            }
        }
    }
    drop(jobs);
    while d.turn < k {
        d.take(ended(rx.recv(), d.turn)?, progress)?;
    }
    Ok(d.rows)
}

/// A stream's batches cut into parts ([`write_stream`]).
struct Cut<'r> {
    /// Read before `reader`'s batches.
    head: Option<RecordBatch>,
    reader: &'r mut dyn crate::dataset::BatchStream,
    sizes: Sizes,
    /// The stream has no more batches.
    ended: bool,
}

impl Cut<'_> {
    /// The next part's batches (`None` after the last), calling `between`
    /// after each batch read; a failure to read one, or `between`'s, ends
    /// the part and the stream.
    fn next_part(
        &mut self,
        between: &mut dyn FnMut() -> Result<(), Error>,
    ) -> Option<Result<Vec<RecordBatch>, Error>> {
        if self.ended {
            return None;
        }
        let (mut part, mut bytes, mut rows) = (Vec::new(), 0u64, 0usize);
        while bytes < self.sizes.part_bytes && rows < self.sizes.group_rows {
            let b = match self
                .head
                .take()
                .map(Ok)
                .or_else(|| self.reader.next_batch())
            {
                None => {
                    self.ended = true;
                    break;
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Some(Err(e));
                }
                Some(Ok(b)) => b,
            };
            // A part of more records than a row group holds would end in
            // a small one: the rest of the batch starts the next part.
            let room = self.sizes.group_rows - rows;
            let b = match b.num_rows() > room {
                true => {
                    self.head = Some(b.slice(room, b.num_rows() - room));
                    b.slice(0, room)
                }
                false => b,
            };
            if b.num_rows() > 0 {
                bytes += crate::convert::batch_bytes(&b);
                rows += b.num_rows();
                part.push(b);
            }
            if let Err(e) = between() {
                self.ended = true;
                return Some(Err(e));
            }
        }
        match part.is_empty() {
            true => None,
            false => Some(Ok(part)),
        }
    }
}

/// Writes a closed row group's column chunks to `file`.
fn append<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    chunks: Vec<ArrowColumnChunk>,
) -> Result<(), Error> {
    let mut group = file.next_row_group()?;
    for c in chunks {
        c.append_to_row_group(&mut group)?;
    }
    group.close()?;
    Ok(())
}

/// Writes the row groups the workers send through `rx`, part by part in
/// order, until all `parts` are done or the first failure in record order.
fn deliver<W: Write + Send>(
    rx: mpsc::Receiver<(usize, Msg)>,
    parts: usize,
    file: &mut SerializedFileWriter<W>,
    rows: &mut u64,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let mut d = Delivery::new(file);
    while d.turn < parts {
        d.take(ended(rx.recv(), d.turn)?, progress)?;
    }
    *rows = d.rows;
    Ok(())
}

/// What the workers sent, or an error saying that they all ended before
/// part `turn` was done.
fn ended<T>(got: Result<T, mpsc::RecvError>, turn: usize) -> Result<T, Error> {
    got.map_err(|_| Error::Data {
        format: None,
        message: format!(
            "Parquet output: the threads encoding row groups ended before part {turn}"
        ),
    })
}

/// The writing thread's side: row groups wait here until their part's
/// turn, then are written and their worker told.
struct Delivery<'a, W: Write + Send> {
    file: &'a mut SerializedFileWriter<W>,
    waiting: BTreeMap<usize, VecDeque<Msg>>,
    /// The part whose row groups are written next.
    turn: usize,
    /// Records written.
    rows: u64,
}

impl<'a, W: Write + Send> Delivery<'a, W> {
    fn new(file: &'a mut SerializedFileWriter<W>) -> Self {
        Delivery {
            file,
            waiting: BTreeMap::new(),
            turn: 0,
            rows: 0,
        }
    }

    /// Takes message `m` of part `k` and writes every row group whose turn
    /// it is; the failure of the part whose turn it is is returned, its
    /// panic resumed.
    fn take(&mut self, (k, m): (usize, Msg), progress: &mut dyn FnMut(u64)) -> Result<(), Error> {
        self.waiting.entry(k).or_default().push_back(m);
        while let Some(m) = self
            .waiting
            .get_mut(&self.turn)
            .and_then(VecDeque::pop_front)
        {
            match m {
                Msg::Group { chunks, rows, ack } => {
                    append(self.file, chunks)?;
                    self.rows += rows as u64;
                    progress(self.rows);
                    let _ = ack.send(());
                }
                Msg::Done => {
                    self.waiting.remove(&self.turn);
                    self.turn += 1;
                }
                Msg::Failed(e) => return Err(e),
                Msg::Panicked(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(())
    }
}

/// Reads part `k`'s batches and encodes them into row groups, handing each to `send`
/// once closed (a group closes at `sizes.group_rows` records or
/// `sizes.group_bytes` encoded). `Ok(false)` when it stopped early
/// (`send` refused, or `stop`).
fn encode(
    k: usize,
    part: &mut dyn Iterator<Item = Result<RecordBatch, Error>>,
    schema: &SchemaRef,
    factory: &ArrowRowGroupWriterFactory,
    sizes: Sizes,
    stop: &AtomicBool,
    send: &mut dyn FnMut(Vec<ArrowColumnChunk>, usize) -> bool,
) -> Result<bool, Error> {
    let mut group: Option<(Vec<ArrowColumnWriter>, usize)> = None;
    for b in part {
        if stop.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let b = b?;
        let mut at = 0;
        while at < b.num_rows() {
            let (writers, rows) = match &mut group {
                Some(g) => g,
                None => group.insert((factory.create_column_writers(k)?, 0)),
            };
            let n = sizes
                .group_rows
                .saturating_sub(*rows)
                .max(1)
                .min(b.num_rows() - at);
            let slice = b.slice(at, n);
            let mut leaves_to = writers.iter_mut();
            for (field, column) in schema.fields().iter().zip(slice.columns()) {
                for leaf in compute_leaves(field, column)? {
                    let Some(w) = leaves_to.next() else {
                        return Err(Error::Data {
                            format: None,
                            message: format!(
                                "Parquet output: more leaf columns than the schema's in column {:?}",
                                field.name()
                            ),
                        });
                    };
                    w.write(&leaf)?;
                }
            }
            *rows += n;
            at += n;
            let size: usize = writers
                .iter()
                .map(ArrowColumnWriter::get_estimated_total_bytes)
                .sum();
            let full = *rows >= sizes.group_rows || size >= sizes.group_bytes;
            if full
                && let Some((writers, rows)) = group.take()
                && !send(close(writers)?, rows)
            {
                return Ok(false);
            }
        }
    }
    match group {
        Some((writers, rows @ 1..)) => Ok(send(close(writers)?, rows)),
        _ => Ok(true),
    }
}

/// The column chunks of a row group's writers.
fn close(writers: Vec<ArrowColumnWriter>) -> Result<Vec<ArrowColumnChunk>, Error> {
    Ok(writers
        .into_iter()
        .map(ArrowColumnWriter::close)
        .collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{BatchIter, BatchStream};
    use arrow_array::{Array, Float64Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::sync::Arc;

    /// Records 0..n of an Int64 `id` (the record's number) and a Float64
    /// `x`, in parts read apart, batches of `batch` from each part's
    /// start; reading a record of `bad` fails.
    struct Numbers {
        schema: SchemaRef,
        /// The records left to read start here.
        start: u64,
        /// Reading this record panics.
        panics_at: u64,
        n: u64,
        batch: u64,
        bad: Vec<u64>,
        /// Touched by every thread other than the given one that reads a
        /// part.
        exits: Option<(crate::core::testing::ThreadExits, std::thread::ThreadId)>,
    }

    impl Numbers {
        fn new(n: u64, batch: u64, bad: Vec<u64>) -> Self {
            let schema = Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("x", DataType::Float64, false),
            ]));
            Numbers {
                schema,
                start: 0,
                panics_at: u64::MAX,
                n,
                batch,
                bad,
                exits: None,
            }
        }
    }

    impl Parts for Numbers {
        fn range(&self) -> Range<u64> {
            self.start..self.n
        }
        fn part(&self, rows: Range<u64>) -> Box<dyn BatchStream + Send + '_> {
            let schema = self.schema.clone();
            let (batch, mut at) = (self.batch, rows.start);
            let batches = std::iter::from_fn(move || {
                if at >= rows.end {
                    return None;
                }
                let end = rows.end.min(at + batch);
                let read = at..end;
                at = end;
                if let Some((exits, caller)) = &self.exits
                    && std::thread::current().id() != *caller
                {
                    exits.touch();
                }
                if read.contains(&self.panics_at) {
                    panic!("record {} panics", self.panics_at);
                }
                if let Some(b) = self.bad.iter().find(|b| read.contains(b)) {
                    return Some(Err(Error::Data {
                        format: None,
                        message: format!("bad record {b}"),
                    }));
                }
                Some(Ok(numbers(&self.schema, read)))
            });
            Box::new(BatchIter::new(schema, batches))
        }
    }

    /// Records `read` of [`Numbers`].
    fn numbers(schema: &SchemaRef, read: Range<u64>) -> RecordBatch {
        let ids = Int64Array::from_iter_values(read.clone().map(|i| i as i64));
        let xs = Float64Array::from_iter_values(read.map(|i| (i % 7) as f64 * 0.25));
        RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(xs)]).unwrap()
    }

    /// The Parquet file `parts` makes on `threads` threads (after a first
    /// batch of the records before `parts.start`), and the progress
    /// reported.
    fn parquet(
        parts: &Numbers,
        threads: usize,
        sizes: Sizes,
    ) -> (Result<u64, Error>, Vec<u8>, Vec<u64>) {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let w = super::super::parquet_writer(&mut out, &parts.schema).unwrap();
        let first = (parts.start > 0).then(|| numbers(&parts.schema, 0..parts.start));
        let r = write_sized(first, parts, &parts.schema, w, threads, sizes, &mut |n| {
            seen.push(n)
        });
        (r, out, seen)
    }

    fn sizes(part_records: u64, group_rows: usize, group_bytes: usize) -> Sizes {
        Sizes {
            part_bytes: part_records * 16,
            min_part_bytes: 0,
            group_rows,
            group_bytes,
        }
    }

    /// The row counts of the row groups of Parquet file `bytes`, and its
    /// `id` and `x` values in order.
    fn read(bytes: Vec<u8>) -> (Vec<i64>, Vec<i64>, Vec<f64>, Vec<bool>) {
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
        let meta = builder.metadata().clone();
        let groups = meta.row_groups().iter().map(|g| g.num_rows()).collect();
        let dictionaries = meta
            .row_groups()
            .first()
            .map(|g| {
                g.columns()
                    .iter()
                    .map(|c| c.dictionary_page_offset().is_some())
                    .collect()
            })
            .unwrap_or_default();
        let (mut ids, mut xs) = (Vec::new(), Vec::new());
        for b in builder.build().unwrap() {
            let b = b.unwrap();
            let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let x = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
            ids.extend(id.values().iter().copied());
            xs.extend(x.values().iter().copied());
        }
        (groups, ids, xs, dictionaries)
    }

    #[test]
    fn the_same_file_on_any_number_of_threads_with_every_record_in_order() {
        let n = 10_007;
        let parts = Numbers::new(n, 128, Vec::new());
        let sizes = sizes(1_000, 100_000, usize::MAX);
        let (r, one, seen) = parquet(&parts, 1, sizes);
        assert_eq!(r.unwrap(), n);
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&n));
        for threads in [2, 3, 8] {
            let (r, other, seen) = parquet(&parts, threads, sizes);
            assert_eq!(r.unwrap(), n);
            assert_eq!(seen.last(), Some(&n));
            assert!(other == one, "{threads} threads wrote another file");
        }
        let (groups, ids, xs, dictionaries) = read(one);
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>());
        let want_x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 * 0.25).collect();
        assert_eq!(xs, want_x);
        // Eleven parts of 909 or 910 records (10,007 records of 16 bytes
        // at 16,000 bytes a part), a row group each.
        let lengths = |parts: usize| -> Vec<i64> {
            crate::dataset::split_at_starts(n, &[], 1, parts)
                .iter()
                .map(|r| (r.end - r.start) as i64)
                .collect()
        };
        assert_eq!(groups, lengths(11));
        // At most 300 records a row group: 34 parts, all the same on any
        // number of threads.
        let (_, a, _) = parquet(
            &parts,
            1,
            Sizes {
                group_rows: 300,
                ..sizes
            },
        );
        let (_, b, _) = parquet(
            &parts,
            3,
            Sizes {
                group_rows: 300,
                ..sizes
            },
        );
        assert!(a == b);
        assert_eq!(read(a).0, lengths(34));
        // The integers keep their dictionary, the floats go without.
        assert_eq!(dictionaries, [true, false]);
    }

    /// The threads that read and encode the parts have exited (their
    /// thread-local values dropped) by the time the file is written.
    #[test]
    fn no_worker_outlives_the_writing_of_parts() {
        let exits = crate::core::testing::ThreadExits::new();
        let mut parts = Numbers::new(6_000, 128, Vec::new());
        parts.exits = Some((exits.clone(), std::thread::current().id()));
        for round in 0..3 {
            let (r, _, _) = parquet(&parts, 3, sizes(1_000, 100_000, usize::MAX));
            assert_eq!(r.unwrap(), 6_000);
            assert!(exits.made() > 0, "round {round}: no worker read");
            assert_eq!(exits.exited(), exits.made(), "round {round}");
        }
    }

    /// The same for a stream read in order, whose parts the workers
    /// encode: the batches they are handed end on their threads (each
    /// batch's values held by an owner that touches the counts when it
    /// is dropped on a worker).
    #[test]
    fn no_worker_outlives_the_writing_of_a_stream() {
        use arrow_buffer::{Buffer, ScalarBuffer};
        /// Values whose drop on a thread other than the caller's is
        /// counted.
        struct Owner(
            Vec<i64>,
            crate::core::testing::ThreadExits,
            std::thread::ThreadId,
        );
        impl Drop for Owner {
            fn drop(&mut self) {
                if std::thread::current().id() != self.2 {
                    self.1.touch();
                }
            }
        }
        let exits = crate::core::testing::ThreadExits::new();
        let caller = std::thread::current().id();
        let schema = Numbers::new(0, 1, Vec::new()).schema;
        for round in 0..3 {
            let mut at = 0i64;
            let batches = std::iter::from_fn(|| {
                if at >= 47 * 128 {
                    return None;
                }
                let range = at..at + 128;
                at = range.end;
                let owner = Arc::new(Owner(range.clone().collect(), exits.clone(), caller));
                let ptr = std::ptr::NonNull::new(owner.0.as_ptr().cast_mut().cast::<u8>()).unwrap();
                // SAFETY: `ptr` points at `owner`'s 128 values (1,024
                // bytes, aligned for i64), kept alive and unchanged by
                // the `Arc` the buffer holds.
                let buffer = unsafe { Buffer::from_custom_allocation(ptr, 128 * 8, owner) };
                let ids = Int64Array::new(ScalarBuffer::new(buffer, 0, 128), None);
                let xs = Float64Array::from_iter_values(range.map(|i| i as f64));
                Some(Ok(RecordBatch::try_new(
                    schema.clone(),
                    vec![Arc::new(ids), Arc::new(xs)],
                )
                .unwrap()))
            });
            let mut stream = BatchIter::new(schema.clone(), batches);
            let mut out = Vec::new();
            let w = super::super::parquet_writer(&mut out, &schema).unwrap();
            let sizes = sizes(1_000, 100_000, usize::MAX);
            let r = write_stream_sized(None, &mut stream, &schema, w, 3, sizes, &mut |_| {});
            assert_eq!(r.unwrap(), 47 * 128);
            assert!(
                exits.made() > 0,
                "round {round}: no batch ended on a worker"
            );
            assert_eq!(exits.exited(), exits.made(), "round {round}");
        }
    }

    #[test]
    fn a_row_group_closes_at_its_encoded_size() {
        let n = 2_000;
        let parts = Numbers::new(n, 128, Vec::new());
        // A group closes after every batch: a part's batches are its groups.
        let (r, file, _) = parquet(&parts, 2, sizes(1_000, usize::MAX, 1));
        assert_eq!(r.unwrap(), n);
        let (groups, ids, _, _) = read(file);
        let mut want = Vec::new();
        for part in [0..1_000i64, 1_000..2_000] {
            let mut at = part.start;
            while at < part.end {
                want.push((part.end - at).min(128));
                at += 128;
            }
        }
        assert_eq!(groups, want);
        assert_eq!(ids.len(), n as usize);
    }

    #[test]
    fn the_first_failure_in_record_order_is_the_one_returned() {
        let n = 10_000;
        // Parts of 1,000 records: the failures are in parts 1 and 8.
        let parts = Numbers::new(n, 100, vec![8_050, 1_050]);
        for threads in [1, 2, 3, 8] {
            let (r, _, seen) = parquet(&parts, threads, sizes(1_000, 300, usize::MAX));
            let e = r.unwrap_err();
            assert!(e.to_string().contains("bad record 1050"), "{threads}: {e}");
            // Nothing of part 1 or after was reported written.
            assert!(seen.iter().all(|&s| s <= 1_000), "{threads}: {seen:?}");
        }
    }

    #[test]
    fn the_first_batch_goes_first_with_the_first_part() {
        let n = 5_000;
        let mut parts = Numbers::new(n, 128, Vec::new());
        parts.start = 40;
        let sizes = sizes(1_000, 100_000, usize::MAX);
        let (r, one, seen) = parquet(&parts, 1, sizes);
        assert_eq!(r.unwrap(), n);
        assert_eq!(seen.last(), Some(&n));
        for threads in [2, 8] {
            assert!(parquet(&parts, threads, sizes).1 == one);
        }
        let (groups, ids, _, _) = read(one);
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>());
        // Five parts of the 4,960 records after the first 40 (5,000
        // records of 16 bytes at 16,000 a part), the first 40 with the
        // first part.
        let mut want: Vec<i64> = crate::dataset::split_at_starts(n - 40, &[], 1, 5)
            .iter()
            .map(|r| (r.end - r.start) as i64)
            .collect();
        want[0] += 40;
        assert_eq!(groups, want);
        // Only a first batch: one part, one row group.
        let mut only = Numbers::new(30, 128, Vec::new());
        only.start = 30;
        let (r, file, _) = parquet(&only, 2, sizes);
        assert_eq!(r.unwrap(), 30);
        assert_eq!(read(file).0, [30]);
    }

    #[test]
    fn a_panic_reading_a_part_is_resumed_not_waited_for() {
        let mut parts = Numbers::new(10_000, 100, Vec::new());
        parts.panics_at = 3_050;
        for threads in [1, 2, 8] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                parquet(&parts, threads, sizes(1_000, 300, usize::MAX))
            }));
            let panic = r.expect_err("the panic was resumed");
            let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
            assert_eq!(message, "record 3050 panics", "{threads}");
        }
    }

    /// The Parquet file [`write_stream_sized`] makes on `threads` threads of
    /// records 0..n in batches of `batch` (reading a record of `bad`
    /// fails), the first `first` records handed apart; the progress
    /// reported, and the most records read and not yet written at any
    /// time.
    fn streamed(
        n: u64,
        batch: u64,
        bad: &[u64],
        first: u64,
        threads: usize,
        sizes: Sizes,
    ) -> (Result<u64, Error>, Vec<u8>, Vec<u64>, u64) {
        let schema = Numbers::new(0, 1, Vec::new()).schema;
        let read = std::rc::Rc::new(std::cell::Cell::new(first));
        let written = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let most = std::rc::Rc::new(std::cell::Cell::new(0u64));
        let mut at = first;
        let batches = {
            let (schema, read, written, most) =
                (schema.clone(), read.clone(), written.clone(), most.clone());
            std::iter::from_fn(move || {
                if at >= n {
                    return None;
                }
                let range = at..n.min(at + batch);
                at = range.end;
                if let Some(b) = bad.iter().find(|b| range.contains(b)) {
                    return Some(Err(Error::Data {
                        format: None,
                        message: format!("bad record {b}"),
                    }));
                }
                read.set(range.end);
                most.set(most.get().max(read.get() - written.get()));
                Some(Ok(numbers(&schema, range)))
            })
        };
        let mut stream = BatchIter::new(schema.clone(), batches);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let w = super::super::parquet_writer(&mut out, &schema).unwrap();
        let head = (first > 0).then(|| numbers(&schema, 0..first));
        let r = write_stream_sized(head, &mut stream, &schema, w, threads, sizes, &mut |n| {
            written.set(n);
            seen.push(n)
        });
        (r, out, seen, most.get())
    }

    #[test]
    fn a_stream_makes_the_same_file_on_any_number_of_threads() {
        let n = 10_007;
        // Parts end after the batch that brings them to 16,000 bytes of
        // values: eight batches of 128 records of 16 bytes.
        let sizes = sizes(1_000, 100_000, usize::MAX);
        let (r, one, seen, _) = streamed(n, 128, &[], 0, 1, sizes);
        assert_eq!(r.unwrap(), n);
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert_eq!(seen.last(), Some(&n));
        for threads in [2, 3, 8] {
            let (r, other, seen, most) = streamed(n, 128, &[], 0, threads, sizes);
            assert_eq!(r.unwrap(), n);
            assert_eq!(seen.last(), Some(&n));
            assert!(other == one, "{threads} threads wrote another file");
            // A part encoding on each thread, one waiting, and the one
            // being read: never more records read and not written.
            assert!(most <= (threads as u64 + 2) * 1_024, "{threads}: {most}");
        }
        let (groups, ids, xs, dictionaries) = read(one);
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>());
        let want_x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 * 0.25).collect();
        assert_eq!(xs, want_x);
        let mut want = vec![1_024; 9];
        want.push(n as i64 - 9 * 1_024);
        assert_eq!(groups, want);
        assert_eq!(dictionaries, [true, false]);
        // At most 300 records a part: batches are cut at row groups.
        let capped = Sizes {
            group_rows: 300,
            ..sizes
        };
        let (_, a, _, _) = streamed(n, 128, &[], 0, 1, capped);
        let (_, b, _, _) = streamed(n, 128, &[], 0, 3, capped);
        assert!(a == b);
        let mut want = vec![300; 33];
        want.push(n as i64 - 33 * 300);
        assert_eq!(read(a).0, want);
        // A first batch handed apart starts the first part.
        let (r, c, _, _) = streamed(n, 128, &[], 40, 2, sizes);
        assert_eq!(r.unwrap(), n);
        let (groups, ids, _, _) = read(c);
        assert_eq!(ids, (0..n as i64).collect::<Vec<_>>());
        assert_eq!(groups[..2], [40 + 8 * 128, 1_024]);
    }

    #[test]
    fn a_streamed_row_group_closes_at_its_encoded_size() {
        let (r, file, _, _) = streamed(2_000, 128, &[], 0, 2, sizes(1_000, usize::MAX, 1));
        assert_eq!(r.unwrap(), 2_000);
        let (groups, ids, _, _) = read(file);
        let mut want = vec![128; 15];
        want.push(2_000 - 15 * 128);
        assert_eq!(groups, want);
        assert_eq!(ids.len(), 2_000);
    }

    #[test]
    fn a_stream_failing_ends_the_file_with_its_error() {
        for threads in [1, 2, 3, 8] {
            let (r, _, seen, _) = streamed(
                10_000,
                100,
                &[5_050],
                0,
                threads,
                sizes(1_000, 300, usize::MAX),
            );
            let e = r.unwrap_err();
            assert!(e.to_string().contains("bad record 5050"), "{threads}: {e}");
            // Nothing after the part read when it failed was written.
            assert!(seen.iter().all(|&s| s <= 5_000), "{threads}: {seen:?}");
        }
        // No records: a file of no row groups.
        let (r, file, seen, _) = streamed(0, 100, &[], 0, 2, STREAM_SIZES);
        assert_eq!(r.unwrap(), 0);
        assert!(seen.is_empty());
        assert!(read(file).0.is_empty());
    }

    #[test]
    fn no_records_make_a_file_of_no_rows() {
        let parts = Numbers::new(0, 100, Vec::new());
        let (r, file, seen) = parquet(&parts, 2, SIZES);
        assert_eq!(r.unwrap(), 0);
        assert!(seen.is_empty());
        let (groups, ids, _, _) = read(file);
        assert!(groups.is_empty() && ids.is_empty());
    }
}
