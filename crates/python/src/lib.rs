//! The native half of the `dataformats` Python package
//! (`crates/python/python/dataformats` is the other half).
//!
//! Everything crosses into Python through the Arrow C data interface as
//! PyCapsules (`arrow_schema`, `arrow_array`, `arrow_array_stream`), which
//! pyarrow imports without copying: an array whose buffer borrows the file's
//! memory map stays a view of the map in pyarrow and in NumPy. Decoding runs
//! with the GIL released.

mod alloc;

use std::ffi::CString;
use std::sync::{Arc, Mutex, mpsc};

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray};
use dataformats::dataset::BatchReader;
use dataformats::{DatasetError, ReadOptions};

/// The facade's batch reader over a shared dataset.
type Batches = BatchReader<'static>;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

pyo3::create_exception!(
    _native,
    FormatError,
    PyException,
    "A file dataformats cannot read as it is, or a request it cannot \
     serve: `.kind` is a short word for what (`truncated`, `bad_magic`, \
     `io`, `invalid_argument`, ...), `.offset` the byte offset in the file \
     when known, `.format` the format concerned when known."
);

/// A `FormatError` carrying `kind`, `offset` and `format`.
fn format_error(
    py: Python<'_>,
    message: String,
    kind: &str,
    offset: Option<u64>,
    format: Option<&str>,
) -> PyErr {
    let err = FormatError::new_err(message);
    let v = err.value(py);
    let _ = v.setattr("kind", kind);
    let _ = v.setattr("offset", offset);
    let _ = v.setattr("format", format);
    err
}

/// The Python exception of a facade error.
fn py_err(py: Python<'_>, e: &DatasetError) -> PyErr {
    let format = e.format().map(|f| f.name());
    format_error(py, e.to_string(), e.kind(), e.offset(), format)
}

/// A `FormatError` of kind `kind` for something that is not a facade error.
fn other_err(py: Python<'_>, kind: &str, message: impl std::fmt::Display) -> PyErr {
    format_error(py, message.to_string(), kind, None, None)
}

fn capsule_name(name: &str) -> Option<CString> {
    CString::new(name).ok()
}

/// An `arrow_schema` capsule of `schema`.
fn schema_capsule<'py>(
    py: Python<'py>,
    schema: &arrow_schema::Schema,
) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema)
        .map_err(|e| other_err(py, "arrow", format!("schema export: {e}")))?;
    PyCapsule::new(py, ffi, capsule_name("arrow_schema"))
}

/// `(arrow_schema, arrow_array)` capsules of one batch (a struct array
/// of its columns; the schema keeps its metadata).
fn batch_capsules<'py>(
    py: Python<'py>,
    batch: RecordBatch,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let schema = schema_capsule(py, batch.schema().as_ref())?;
    let data = StructArray::from(batch).into_data();
    let array = FFI_ArrowArray::new(&data);
    Ok((
        schema,
        PyCapsule::new(py, array, capsule_name("arrow_array"))?,
    ))
}

/// An `arrow_array_stream` capsule of `reader`.
fn stream_capsule<'py>(
    py: Python<'py>,
    reader: Box<dyn arrow_array::RecordBatchReader + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(reader);
    PyCapsule::new(py, stream, capsule_name("arrow_array_stream"))
}

/// Records `start..end` (either open, clamped) of `columns` (all when
/// `None`) of `d` in batches: a reader that owns its share of the dataset,
/// so that a stream can outlive the call.
fn batches(
    d: &Arc<dyn dataformats::Dataset>,
    columns: Option<Vec<String>>,
    rows: (Option<u64>, Option<u64>),
    batch_size: usize,
) -> Result<Batches, DatasetError> {
    let opts = ReadOptions {
        columns,
        rows: Some(rows.0.unwrap_or(0)..rows.1.unwrap_or(u64::MAX)),
        batch_size,
    };
    Batches::shared(d.clone(), &opts)
}

/// Batches a consumer takes one at a time: read on a thread of their own,
/// up to [`AHEAD`] batches ahead of the consumer, so that decoding the next
/// batch overlaps the consumer's work on this one. A read of one batch
/// stays on the consumer's thread.
enum Ahead {
    Here(Batches),
    Behind {
        schema: arrow_schema::SchemaRef,
        rx: mpsc::Receiver<Result<RecordBatch, DatasetError>>,
    },
}

/// Batches decoded ahead of an `iter_batches` or stream consumer.
const AHEAD: usize = 2;

impl Ahead {
    /// The batches of `b`; the thread ends after the last batch, after an
    /// error, or when the consumer is dropped.
    fn start(mut b: Batches) -> std::io::Result<Self> {
        if b.remaining() <= b.batch_size() {
            return Ok(Ahead::Here(b));
        }
        let schema = arrow_array::RecordBatchReader::schema(&b);
        let (tx, rx) = mpsc::sync_channel(AHEAD);
        std::thread::Builder::new()
            .name("dataformats-read-ahead".into())
            .spawn(move || {
                while let Some(r) = b.next_batch() {
                    let failed = r.is_err();
                    if tx.send(r).is_err() || failed {
                        break;
                    }
                }
            })?;
        Ok(Ahead::Behind { schema, rx })
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, DatasetError>> {
        match self {
            Ahead::Here(b) => b.next_batch(),
            Ahead::Behind { rx, .. } => rx.recv().ok(),
        }
    }
}

impl Iterator for Ahead {
    type Item = Result<RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
            .map(|r| r.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))))
    }
}

impl arrow_array::RecordBatchReader for Ahead {
    fn schema(&self) -> arrow_schema::SchemaRef {
        match self {
            Ahead::Here(b) => arrow_array::RecordBatchReader::schema(b),
            Ahead::Behind { schema, .. } => schema.clone(),
        }
    }
}

/// An open dataset of any format.
#[pyclass(frozen, module = "dataformats._native")]
struct Dataset {
    d: Arc<dyn dataformats::Dataset>,
}

/// Opens `path` (a file, or a BLZ/bcolz directory), whatever its format.
#[pyfunction]
fn open(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Dataset> {
    let d = py
        .detach(|| dataformats::open(&path))
        .map_err(|e| py_err(py, &e))?;
    Ok(Dataset { d: Arc::from(d) })
}

/// The format of `path` (its name), or `None` when it is not recognised.
#[pyfunction]
fn detect(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Option<&'static str>> {
    let f = py
        .detach(|| {
            if path.is_dir() {
                Ok(dataformats::detect_dir(&path))
            } else {
                dataformats::detect(&path)
            }
        })
        .map_err(|e| other_err(py, "io", format!("{}: {e}", path.display())))?;
    Ok(f.map(|f| f.name()))
}

#[pymethods]
impl Dataset {
    /// The format's name (`idv`, `mldf`, `cntk`, `tbl2`, `bloscpack`,
    /// `blz`, `ffcv`).
    #[getter]
    fn format(&self) -> &'static str {
        self.d.format().name()
    }

    /// The file's format version.
    #[getter]
    fn version(&self) -> String {
        self.d.version()
    }

    /// The number of records.
    #[getter]
    fn num_rows(&self) -> u64 {
        self.d.len()
    }

    /// The Arrow schema as an `arrow_schema` capsule.
    fn schema_capsule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, self.d.schema().as_ref())
    }

    /// An `arrow_array_stream` capsule of the records (decoded as pyarrow
    /// pulls the batches).
    #[pyo3(signature = (columns=None, start=None, end=None, batch_size=65536))]
    fn stream_capsule<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        end: Option<u64>,
        batch_size: usize,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let b = batches(&self.d, columns, (start, end), batch_size).map_err(|e| py_err(py, &e))?;
        let b =
            Ahead::start(b).map_err(|e| other_err(py, "io", format!("starting a thread: {e}")))?;
        stream_capsule(py, Box::new(b))
    }

    /// Every batch decoded first (GIL released, errors as `FormatError`) on
    /// `threads` threads (0: every core), in batches cut where the file's
    /// blocks or chunks start near every `batch_size` records, then handed
    /// over as an `arrow_array_stream` capsule.
    #[pyo3(signature = (columns=None, start=None, end=None, batch_size=65536, threads=0))]
    fn read_stream<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        end: Option<u64>,
        batch_size: usize,
        threads: usize,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let d = self.d.clone();
        let opts = ReadOptions {
            rows: Some(start.unwrap_or(0)..end.unwrap_or(u64::MAX)),
            columns,
            batch_size,
        };
        let (_, schema) = d
            .projection(opts.columns.as_deref())
            .map_err(|e| py_err(py, &e))?;
        let batches = py
            .detach(|| d.read_all(&opts, threads))
            .map_err(|e| py_err(py, &e))?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        stream_capsule(py, Box::new(reader))
    }

    /// Records `start..end` of `columns` as one batch: `(arrow_schema,
    /// arrow_array)` capsules.
    #[pyo3(signature = (start, end, columns=None))]
    fn read_batch<'py>(
        &self,
        py: Python<'py>,
        start: u64,
        end: u64,
        columns: Option<Vec<String>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let d = self.d.clone();
        let batch = py
            .detach(|| d.read_batch(columns.as_deref(), start..end))
            .map_err(|e| py_err(py, &e))?;
        batch_capsules(py, batch)
    }

    /// Column `name` of every record as one batch (`(arrow_schema,
    /// arrow_array)` capsules), decoded on `threads` threads (0: every
    /// core): the facade's `read_column`.
    #[pyo3(signature = (name, threads=0))]
    fn read_column<'py>(
        &self,
        py: Python<'py>,
        name: String,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let d = self.d.clone();
        let batch = py
            .detach(|| -> Result<RecordBatch, DatasetError> {
                let (idx, schema) = d.projection(Some(std::slice::from_ref(&name)))?;
                let column = idx.first().copied().unwrap_or_default();
                let array = d.read_column(column, threads)?;
                Ok(RecordBatch::try_new(schema, vec![array])?)
            })
            .map_err(|e| py_err(py, &e))?;
        batch_capsules(py, batch)
    }

    /// A reader of batches for `iter_batches`.
    #[pyo3(signature = (columns=None, start=None, end=None, batch_size=65536))]
    fn batches(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        start: Option<u64>,
        end: Option<u64>,
        batch_size: usize,
    ) -> PyResult<BatchIter> {
        let b = batches(&self.d, columns, (start, end), batch_size).map_err(|e| py_err(py, &e))?;
        let b =
            Ahead::start(b).map_err(|e| other_err(py, "io", format!("starting a thread: {e}")))?;
        Ok(BatchIter(Mutex::new(b)))
    }

    /// Reads every batch in Rust and drops it, returning the number of
    /// records: the baseline `python/bench/bench_package.py` compares
    /// `iter_batches` with, in the same process.
    #[pyo3(signature = (columns=None, batch_size=65536))]
    fn _read_all_in_rust(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        batch_size: usize,
    ) -> PyResult<u64> {
        let mut b =
            batches(&self.d, columns, (None, None), batch_size).map_err(|e| py_err(py, &e))?;
        py.detach(|| {
            let mut n = 0u64;
            while let Some(r) = b.next_batch() {
                n += r?.num_rows() as u64;
            }
            Ok::<_, DatasetError>(n)
        })
        .map_err(|e| py_err(py, &e))
    }

    /// At most `parts` consecutive `(start, end)` record ranges covering
    /// every record, cut where the file's blocks or chunks start: units of
    /// parallel work (a cluster's read tasks).
    fn splits(&self, parts: usize) -> Vec<(u64, u64)> {
        self.d
            .splits(parts)
            .into_iter()
            .map(|r| (r.start, r.end))
            .collect()
    }

    /// Checks the whole file the way the format's validator does (GIL
    /// released).
    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        let d = self.d.clone();
        py.detach(|| d.validate()).map_err(|e| py_err(py, &e))
    }
}

/// The batches of [`Dataset::batches`], one `next()` at a time.
#[pyclass(frozen, module = "dataformats._native")]
struct BatchIter(Mutex<Ahead>);

#[pymethods]
impl BatchIter {
    /// The next batch as `(arrow_schema, arrow_array)` capsules, or `None`
    /// after the last.
    fn next<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)>> {
        let next = py.detach(|| match self.0.lock() {
            Ok(mut b) => b.next_batch(),
            Err(_) => None,
        });
        match next {
            None => Ok(None),
            Some(Ok(b)) => batch_capsules(py, b).map(Some),
            Some(Err(e)) => Err(py_err(py, &e)),
        }
    }
}

/// `dataformats convert` with its command-line arguments (without the
/// program and command names); returns what happened as a dict.
#[pyfunction]
fn convert<'py>(py: Python<'py>, argv: Vec<String>) -> PyResult<Bound<'py, PyDict>> {
    let args = dataformats_cli::parse_convert(&argv)
        .map_err(|f| other_err(py, f.kind, f.message.clone()))?;
    let out = PyDict::new(py);
    if args.pack.append {
        let opts = args
            .pack
            .options()
            .map_err(|f| other_err(py, f.kind, f.to_string()))?;
        let a = py
            .detach(|| dataformats::convert::direct::append(&args.input, &args.output, &opts))
            .map_err(|e| py_err(py, &e))?;
        out.set_item("appended", a.bytes)?;
        out.set_item("new_chunks", a.new_chunks)?;
        out.set_item("nchunks", a.nchunks)?;
        out.set_item("payload_bytes", a.payload_bytes)?;
        out.set_item("max_app_chunks", a.slots_left)?;
        return Ok(out);
    }
    let opts = args
        .options()
        .map_err(|f| other_err(py, f.kind, f.to_string()))?;
    let report = py
        .detach(|| dataformats::convert::convert(&args.input, &args.output, &opts))
        .map_err(|e| py_err(py, &e))?;
    out.set_item("input", args.input.display().to_string())?;
    out.set_item("output", args.output.display().to_string())?;
    out.set_item("from", report.from.to_string())?;
    out.set_item("to", report.to.to_string())?;
    out.set_item("records", report.records)?;
    let changes: Vec<String> = report.changes.iter().map(ToString::to_string).collect();
    out.set_item("changes", changes)?;
    out.set_item("warnings", report.warnings.clone())?;
    Ok(out)
}

/// SplitMix64: a small, fixed pseudo-random sequence, so that an order is
/// the same on every machine, rank and version for the same seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), without modulo bias.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// Shuffled, sharded batches of a dataset for training loops.
#[pyclass(module = "dataformats._native")]
struct Loader {
    d: Arc<dyn dataformats::Dataset>,
    columns: Vec<usize>,
    batch_size: usize,
    shuffle: bool,
    seed: u64,
    rank: u64,
    world_size: u64,
    drop_last: bool,
    threads: usize,
    epoch: u64,
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (path, batch_size, columns=None, shuffle=false, seed=0, rank=0,
        world_size=1, drop_last=false, num_threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        batch_size: usize,
        columns: Option<Vec<String>>,
        shuffle: bool,
        seed: u64,
        rank: u64,
        world_size: u64,
        drop_last: bool,
        num_threads: Option<usize>,
    ) -> PyResult<Self> {
        if batch_size == 0 {
            return Err(other_err(
                py,
                "invalid_argument",
                "batch_size must be at least 1",
            ));
        }
        if world_size == 0 || rank >= world_size {
            return Err(other_err(
                py,
                "invalid_argument",
                format!("rank {rank} is not in 0..{world_size} (world_size)"),
            ));
        }
        let d: Arc<dyn dataformats::Dataset> = Arc::from(
            py.detach(|| dataformats::open(&path))
                .map_err(|e| py_err(py, &e))?,
        );
        let columns = d
            .column_indices(columns.as_deref())
            .map_err(|e| py_err(py, &e))?;
        let threads = num_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        Ok(Loader {
            d,
            columns,
            batch_size,
            shuffle,
            seed,
            rank,
            world_size,
            drop_last,
            threads,
            epoch: 0,
        })
    }

    /// Starts epoch `epoch`: a new order (when shuffling), the same on
    /// every rank.
    fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// The current epoch.
    #[getter]
    fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The records this rank reads this epoch, in order (`worker` of
    /// `num_workers` takes every `num_workers`-th batch of them).
    #[pyo3(signature = (worker=0, num_workers=1))]
    fn indices(&self, py: Python<'_>, worker: usize, num_workers: usize) -> PyResult<Vec<u64>> {
        Ok(self
            .plan(py, worker, num_workers)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// The number of batches this rank reads per epoch (all workers).
    fn __len__(&self) -> usize {
        let n = self.shard_len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// The batches of this epoch for `worker` of `num_workers`, decoded on
    /// Rust threads ahead of the consumer: `num_threads` threads each decode
    /// whole batches (thread t batches t, t + num_threads, ...), each up to
    /// `prefetch` batches ahead, and the consumer takes them in order.
    #[pyo3(signature = (worker=0, num_workers=1, prefetch=2))]
    fn batches(
        &self,
        py: Python<'_>,
        worker: usize,
        num_workers: usize,
        prefetch: usize,
    ) -> PyResult<LoaderIter> {
        let plan = self.plan(py, worker, num_workers)?;
        let threads = self.threads.min(plan.len()).max(1);
        let mut parts: Vec<Vec<Vec<u64>>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, idx) in plan.into_iter().enumerate() {
            if let Some(part) = parts.get_mut(k % threads) {
                part.push(idx);
            }
        }
        let mut receivers = Vec::with_capacity(threads);
        for (t, part) in parts.into_iter().enumerate() {
            let (tx, rx) = mpsc::sync_channel(prefetch.max(1));
            let d = self.d.clone();
            let columns = self.columns.clone();
            std::thread::Builder::new()
                .name(format!("dataformats-loader-{t}"))
                .spawn(move || {
                    for idx in part {
                        let r = d.take_batch(&columns, &idx);
                        let failed = r.is_err();
                        // The consumer went away: stop decoding.
                        if tx.send(r.map(|b| (b, idx))).is_err() || failed {
                            break;
                        }
                    }
                })
                .map_err(|e| other_err(py, "io", format!("starting a loader thread: {e}")))?;
            receivers.push(rx);
        }
        Ok(LoaderIter(Mutex::new(Ordered {
            receivers,
            next: 0,
            done: false,
        })))
    }
}

impl Loader {
    /// Records of this rank per epoch.
    fn shard_len(&self) -> usize {
        let n = self.d.len();
        let per = if self.drop_last {
            n / self.world_size
        } else {
            n / self.world_size + u64::from(self.rank < n % self.world_size)
        };
        usize::try_from(per).unwrap_or(usize::MAX)
    }

    /// This epoch's batches of `worker` of `num_workers` on this rank.
    fn plan(&self, py: Python<'_>, worker: usize, num_workers: usize) -> PyResult<Vec<Vec<u64>>> {
        if num_workers == 0 || worker >= num_workers {
            return Err(other_err(
                py,
                "invalid_argument",
                format!("worker {worker} is not in 0..{num_workers}"),
            ));
        }
        let n = self.d.len();
        let mut order: Vec<u64> = Vec::new();
        order
            .try_reserve_exact(usize::try_from(n).unwrap_or(usize::MAX))
            .map_err(|e| other_err(py, "limit_exceeded", format!("{n} records: {e}")))?;
        order.extend(0..n);
        if self.shuffle {
            let mut rng = SplitMix(
                self.seed
                    .wrapping_mul(0x2545_F491_4F6C_DD1D)
                    .wrapping_add(self.epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            );
            for i in (1..order.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                order.swap(i, j);
            }
        }
        // Position p of the order goes to rank p % world_size; with
        // drop_last every rank gets exactly n / world_size records.
        let keep = if self.drop_last {
            n / self.world_size * self.world_size
        } else {
            n
        };
        let mine: Vec<u64> = order
            .into_iter()
            .take(usize::try_from(keep).unwrap_or(usize::MAX))
            .skip(usize::try_from(self.rank).unwrap_or(usize::MAX))
            .step_by(usize::try_from(self.world_size).unwrap_or(1))
            .collect();
        let mut batches: Vec<Vec<u64>> =
            mine.chunks(self.batch_size).map(<[u64]>::to_vec).collect();
        if self.drop_last && batches.last().is_some_and(|b| b.len() < self.batch_size) {
            batches.pop();
        }
        Ok(batches
            .into_iter()
            .skip(worker)
            .step_by(num_workers)
            .collect())
    }
}

/// The loader's decoded batches with their record indices.
#[pyclass(frozen, module = "dataformats._native")]
struct LoaderIter(Mutex<Ordered>);

/// The decoding threads' channels, read round-robin: batch k comes from
/// thread k % threads.
struct Ordered {
    receivers: Vec<mpsc::Receiver<Decoded>>,
    next: usize,
    done: bool,
}

impl Ordered {
    /// The next batch in order; `None` after the last one or an error.
    fn recv(&mut self) -> Option<Decoded> {
        if self.done {
            return None;
        }
        let at = self.next % self.receivers.len().max(1);
        let got = self.receivers.get(at).and_then(|rx| rx.recv().ok());
        self.next += 1;
        if !matches!(got, Some(Ok(_))) {
            // The batches ran out (a thread ends only after its last one)
            // or one failed: stop, and let the threads stop too.
            self.done = true;
            self.receivers.clear();
        }
        got
    }
}

/// A decoded loader batch with its record indices, or why it failed.
type Decoded = Result<(RecordBatch, Vec<u64>), DatasetError>;

/// `((arrow_schema, arrow_array), indices)` of one loader batch.
type LoaderItem<'py> = ((Bound<'py, PyCapsule>, Bound<'py, PyCapsule>), Vec<u64>);

#[pymethods]
impl LoaderIter {
    /// The next batch, or `None` after the last.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<LoaderItem<'py>>> {
        let got = py.detach(|| match self.0.lock() {
            Ok(mut o) => o.recv(),
            Err(_) => None,
        });
        match got {
            None => Ok(None),
            Some(Ok((b, idx))) => Ok(Some((batch_capsules(py, b)?, idx))),
            Some(Err(e)) => Err(py_err(py, &e)),
        }
    }
}

/// The `dataformats._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FormatError", m.py().get_type::<FormatError>())?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(detect, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_class::<Dataset>()?;
    m.add_class::<BatchIter>()?;
    m.add_class::<Loader>()?;
    m.add_class::<LoaderIter>()?;
    Ok(())
}
