//! Conversions between formats, as a library: [`convert`] reads any input
//! the facade opens (or a Parquet, Arrow IPC, CSV or JSON lines import),
//! turns it into typed Arrow batches and hands them to the writer of the
//! target. What a target cannot hold exactly is refused, naming the record
//! and the field, or with [`ConvertOptions::lossy`] changed and counted in
//! the [`Report`].
//!
//! ```no_run
//! use dataformats::convert::{ConvertOptions, convert};
//! let report = convert("train.idv".as_ref(), "train.mldf".as_ref(), &ConvertOptions::default())?;
//! println!("{} records, {} changes", report.records, report.changes.len());
//! # Ok::<(), dataformats::DatasetError>(())
//! ```

// Builds without some targets leave some helpers unused.
#![cfg_attr(
    not(all(
        feature = "mldf",
        feature = "tbl2",
        feature = "cntk",
        feature = "export"
    )),
    allow(dead_code, unused_variables)
)]

#[cfg(feature = "bloscpack")]
pub mod bloscpack;
#[cfg(feature = "bloscpack")]
pub mod blz;
#[cfg(feature = "cntk")]
pub mod cntk;
pub mod direct;
#[cfg(feature = "idv")]
pub mod idv;
#[cfg(feature = "export")]
pub(crate) mod import;
pub mod json;
#[cfg(any(feature = "export", feature = "mldf"))]
mod json_rows;
#[cfg(feature = "mldf")]
mod line_blocks;
#[cfg(feature = "mldf")]
pub mod mldf;
#[cfg(feature = "mldf")]
pub mod mldf_json;
#[cfg(feature = "bloscpack")]
mod npy;
#[cfg(feature = "tbl2")]
pub mod tbl2;
#[cfg(feature = "idv")]
pub mod text;

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::dataset::{BatchStream, Dataset, Error, OpenOptions};

/// What [`convert`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// MLDF 1.0 (`.mldf`).
    Mldf,
    /// TurboLoader TBL v2 (`.tbl`).
    Tbl2,
    /// CNTK binary format (`.bin`, `.cbf`).
    Cntk,
    /// ML.NET binary dataview (`.idv`).
    Idv,
    /// A Bloscpack file holding a numpy array (`.blp`).
    Bloscpack,
    /// A BLZ/bcolz directory (`.bcolz`; `.blz` for the blz 0.6 layout).
    Blz,
    /// Apache Parquet (`.parquet`).
    Parquet,
    /// Arrow IPC file (`.arrow`, `.feather`).
    ArrowFile,
    /// Arrow IPC stream (`.arrows`).
    ArrowStream,
    /// CSV with a header line (`.csv`).
    Csv,
    /// Lossless JSON lines (`.jsonl`).
    JsonLines,
    /// CNTK text format (`.ctf`), from CNTK binary only.
    Ctf,
    /// A tar of one member per sample (`.tar`), from TBL v2 only.
    Tar,
    /// A numpy `.npy` file, from Bloscpack (numpy) and BLZ/bcolz only.
    Npy,
}

impl Target {
    /// Every target, in the order the CLI lists them.
    pub const ALL: &'static [Target] = &[
        Target::Mldf,
        Target::Tbl2,
        Target::Cntk,
        Target::Idv,
        Target::Bloscpack,
        Target::Blz,
        Target::Parquet,
        Target::ArrowFile,
        Target::ArrowStream,
        Target::Csv,
        Target::JsonLines,
        Target::Ctf,
        Target::Tar,
        Target::Npy,
    ];

    /// The target an output path names by its extension.
    pub fn from_path(path: &Path) -> Option<Target> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "mldf" => Target::Mldf,
            "tbl" => Target::Tbl2,
            "bin" | "cbf" => Target::Cntk,
            "idv" => Target::Idv,
            "blp" => Target::Bloscpack,
            "bcolz" | "blz" => Target::Blz,
            "parquet" | "pq" => Target::Parquet,
            "arrow" | "feather" | "ipc" => Target::ArrowFile,
            "arrows" => Target::ArrowStream,
            "csv" => Target::Csv,
            "jsonl" | "ndjson" => Target::JsonLines,
            "ctf" => Target::Ctf,
            "tar" => Target::Tar,
            "npy" => Target::Npy,
            _ => return None,
        })
    }

    /// The usual extension of its files (what [`Target::from_path`] reads).
    pub fn extension(self) -> &'static str {
        match self {
            Target::Cntk => "bin",
            t => t.name(),
        }
    }

    /// Its short name.
    pub fn name(self) -> &'static str {
        match self {
            Target::Mldf => "mldf",
            Target::Tbl2 => "tbl",
            Target::Cntk => "cntk",
            Target::Idv => "idv",
            Target::Bloscpack => "blp",
            Target::Blz => "bcolz",
            Target::Parquet => "parquet",
            Target::ArrowFile => "arrow",
            Target::ArrowStream => "arrows",
            Target::Csv => "csv",
            Target::JsonLines => "jsonl",
            Target::Ctf => "ctf",
            Target::Tar => "tar",
            Target::Npy => "npy",
        }
    }

    #[cfg(feature = "export")]
    fn export(self) -> Option<crate::export::ExportFormat> {
        use crate::export::ExportFormat as E;
        Some(match self {
            Target::Parquet => E::Parquet,
            Target::ArrowFile => E::ArrowFile,
            Target::ArrowStream => E::ArrowStream,
            Target::Csv => E::Csv,
            Target::JsonLines => E::JsonLines,
            Target::Mldf
            | Target::Tbl2
            | Target::Cntk
            | Target::Idv
            | Target::Bloscpack
            | Target::Blz
            | Target::Ctf
            | Target::Tar
            | Target::Npy => {
                return None;
            }
        })
    }
}

/// What a conversion reads and how it writes.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The target format (`None`: from the output's extension).
    pub to: Option<Target>,
    /// Only these columns, in this order (`None`: all).
    pub columns: Option<Vec<String>>,
    /// Only these records (clamped to the records there are).
    pub rows: Option<std::ops::Range<u64>>,
    /// At most this many records.
    pub limit: Option<u64>,
    /// Change what the target cannot hold (and report it) instead of
    /// refusing.
    pub lossy: bool,
    /// Records per batch; 0 (the default): batches of about
    /// [`BATCH_BYTES`] when every column is of fixed width, cut where the
    /// input's stored units (chunks, blocks) start; else, for a format
    /// without such units, a first batch of a few records, then as many
    /// records as its values say fill [`BATCH_BYTES`] (at most
    /// [`BATCH_RECORDS`]), so that large images or texts do not make
    /// large batches; else [`BATCH_RECORDS`] records.
    pub batch_size: usize,
    /// Threads a conversion may use (0: every core): a format's batches
    /// are decoded on all of them but the writer's; CNTK text → CBF and
    /// JSON lines → MLDF parse on that many, and an IDV target is
    /// deflated, and a Bloscpack target's chunks and a TBL v2 target's
    /// samples (tar → TBL v2 too) are compressed on that many. The output
    /// does not depend on it.
    pub threads: usize,
    /// How the input is opened (limits).
    pub open: OpenOptions,
    /// CNTK text input settings (the streams, which CTF does not name).
    #[cfg(feature = "cntk")]
    pub ctf: direct::CtfOptions,
    /// MLDF target settings.
    #[cfg(feature = "mldf")]
    pub mldf: mldf::MldfOptions,
    /// TBL v2 target settings.
    #[cfg(feature = "tbl2")]
    pub tbl2: tbl2::Tbl2Options,
    /// CNTK target settings.
    #[cfg(feature = "cntk")]
    pub cntk: cntk::CntkOptions,
    /// IDV target settings.
    #[cfg(feature = "idv")]
    pub idv: idv::IdvOptions,
    /// Bloscpack target settings.
    #[cfg(feature = "bloscpack")]
    pub bloscpack: bloscpack::BloscpackOptions,
    /// BLZ/bcolz target settings.
    #[cfg(feature = "bloscpack")]
    pub blz: blz::BlzOptions,
}

/// Bytes of values in a batch when [`ConvertOptions::batch_size`] is 0
/// and every column is of fixed width: large enough that handing batches
/// from the reader to the writer costs little next to their values, small
/// enough that the few in flight take little memory.
pub const BATCH_BYTES: u64 = 1 << 20;

/// Records in a batch when [`ConvertOptions::batch_size`] is 0 and a
/// record's size is not known ahead (text, bytes, lists): at most this
/// many, fewer when their values are large (see
/// [`ConvertOptions::batch_size`]).
pub const BATCH_RECORDS: u64 = 4096;

/// Records in the first batch of an input whose batches are fitted to
/// their values' bytes ([`ConvertOptions::batch_size`]).
const FIRST_FITTED: u64 = 16;

/// Bytes of the values `b` holds (its arrays' slices, not the buffers they
/// may be views of).
pub(crate) fn batch_bytes(b: &RecordBatch) -> u64 {
    b.columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0) as u64)
        .sum()
}

/// The bytes of one record of `schema` when every column is of fixed width
/// (nulls not counted), else `None`.
pub(crate) fn record_width(schema: &arrow_schema::Schema) -> Option<u64> {
    schema.fields().iter().try_fold(0u64, |sum, f| {
        let w = u64::try_from(crate::typed::fixed_width(f.data_type())?).ok()?;
        sum.checked_add(w)
    })
}

impl ConvertOptions {
    /// Records per batch of `schema`'s records: [`batch_size`](Self::batch_size),
    /// or when it is 0, [`BATCH_BYTES`] worth of fixed-width records or
    /// [`BATCH_RECORDS`] others; at least 1.
    pub(crate) fn batch_records(&self, schema: &arrow_schema::Schema) -> u64 {
        if self.batch_size > 0 {
            return self.batch_size as u64;
        }
        match record_width(schema) {
            Some(w @ 1..) => (BATCH_BYTES / w).max(1),
            _ => BATCH_RECORDS,
        }
    }

    /// [`batch_records`](Self::batch_records) as a length.
    pub(crate) fn batch_len(&self, schema: &arrow_schema::Schema) -> usize {
        usize::try_from(self.batch_records(schema)).unwrap_or(usize::MAX)
    }

    /// The records `rows` and `limit` select out of `len`.
    pub(crate) fn record_range(&self, len: u64) -> std::ops::Range<u64> {
        let rows = self.rows.clone().unwrap_or(0..len);
        let end = rows.end.min(len);
        let start = rows.start.min(end);
        let end = self.limit.map_or(end, |n| end.min(start.saturating_add(n)));
        start..end
    }

    /// The indices in `schema` of the columns `columns` selects (all when
    /// `None`); an unknown name is an error naming it and `path`.
    pub(crate) fn column_indices(
        &self,
        schema: &arrow_schema::Schema,
        path: &Path,
    ) -> Result<Vec<usize>, Error> {
        match &self.columns {
            Some(names) => names
                .iter()
                .map(|n| {
                    schema.index_of(n).map_err(|_| Error::InvalidArgument {
                        format: None,
                        message: format!("no column {n:?} in {}", path.display()),
                    })
                })
                .collect(),
            None => Ok((0..schema.fields().len()).collect()),
        }
    }
}

/// Gives the pages of a conversion's memory-mapped input back to the
/// kernel every [`RELEASE_EVERY`] records or [`RELEASE_BYTES`] of values,
/// so that a pass over a large file keeps its resident memory flat however
/// large its records.
pub(crate) struct PageRelease {
    src: crate::core::Source,
    released: u64,
    /// Bytes of values read since the last release.
    bytes: u64,
    /// Bytes of values read between two releases at most.
    every_bytes: u64,
}

impl PageRelease {
    pub(crate) fn new(src: crate::core::Source, start: u64) -> Self {
        PageRelease {
            src,
            released: start,
            bytes: 0,
            every_bytes: RELEASE_BYTES,
        }
    }

    /// Another release for a part of the records, read beside others:
    /// from record `start`, every [`RELEASE_BYTES`] / `parts` bytes (each
    /// release gives back every page, the other parts' too).
    fn part(&self, start: u64, parts: u64) -> Self {
        PageRelease {
            src: self.src.clone(),
            released: start,
            bytes: 0,
            every_bytes: (RELEASE_BYTES / parts.max(1)).max(1),
        }
    }

    /// Records up to `end` have been read, the last of them `bytes` of
    /// values.
    pub(crate) fn read_to(&mut self, end: u64, bytes: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
        if end.saturating_sub(self.released) >= RELEASE_EVERY || self.bytes >= self.every_bytes {
            self.src.release_pages();
            self.released = end;
            self.bytes = 0;
        }
    }
}

/// A stream's walk over records `next..end`, a batch at a time: stops
/// after the first error, releases mapped pages as it goes.
pub(crate) struct Batches {
    schema: SchemaRef,
    next: u64,
    end: u64,
    batch: u64,
    /// Where batches end, ascending: the starts of the input's stored units
    /// (chunks, blocks) nearest to every `batch` records, so that a unit is
    /// decoded for one batch, not two. Past the last, every `batch` records.
    cuts: std::collections::VecDeque<u64>,
    failed: bool,
    pages: Option<PageRelease>,
    ahead: crate::dataset::LookAhead,
    /// Until the first batch was read, when the batches' length is to be
    /// fitted to its values ([`by_bytes`](Self::by_bytes)): the most
    /// records a batch may hold.
    fit: Option<u64>,
}

/// The most batches' worth of records a stored unit may hold and still be
/// read as one batch.
const UNIT_BATCHES: u64 = 4;

/// Cuts between batches computed from a dataset's stored units at most:
/// past this many batches, batches are cut every so many records.
const MAX_CUTS: u64 = 1 << 16;

impl Batches {
    /// Batches of `batch` records over `rows` (cut every `batch` records).
    pub(crate) fn new(
        schema: SchemaRef,
        rows: std::ops::Range<u64>,
        batch: u64,
        pages: Option<PageRelease>,
    ) -> Self {
        Batches {
            schema,
            next: rows.start,
            end: rows.end,
            batch: batch.max(1),
            cuts: std::collections::VecDeque::new(),
            failed: false,
            pages,
            ahead: crate::dataset::LookAhead::default(),
            fit: None,
        }
    }

    /// Fits the batches' length to their values: the first holds a few
    /// records, every later one as many as the first one's bytes per
    /// record say fill [`BATCH_BYTES`], at most the `batch` records asked
    /// for. Decided from the first batch alone, the lengths are the same
    /// however many threads decode the batches. Not for an input cut at
    /// stored units ([`at_units_of`](Self::at_units_of)): a unit is
    /// decoded whole, so its batch stays whole.
    pub(crate) fn by_bytes(mut self) -> Self {
        if self.cuts.is_empty() {
            self.fit = Some(self.batch);
            self.batch = self.batch.min(FIRST_FITTED);
        }
        self
    }

    /// Cuts the batches where `d`'s stored units start
    /// ([`Dataset::splits`]), about every `batch` records. A unit of up
    /// to [`UNIT_BATCHES`] batches stays one batch (an IDV block of wide
    /// rows is inflated once, not once for each batch it would be cut
    /// into); a larger one (a CNTK chunk, a Bloscpack chunk of a few wide
    /// rows) is cut evenly into batches of at most `batch` records.
    pub(crate) fn at_units_of(mut self, d: &dyn Dataset) -> Self {
        let parts = d.len().div_ceil(self.batch);
        if !(2..=MAX_CUTS).contains(&parts) {
            return self;
        }
        let parts = usize::try_from(parts).unwrap_or(usize::MAX);
        let units = d.splits(parts);
        if units == crate::dataset::split_at_starts(d.len(), &[], 1, parts) {
            // Records stored one by one: no unit to keep whole.
            return self;
        }
        let (mut cuts, mut at) = (std::collections::VecDeque::new(), self.next);
        for end in units.iter().map(|r| r.end.min(self.end)) {
            if end <= at {
                continue;
            }
            let span = end - at;
            if span > UNIT_BATCHES * self.batch {
                let n = span.div_ceil(self.batch);
                cuts.extend((1..n).map(|k| {
                    at + u64::try_from(u128::from(span) * u128::from(k) / u128::from(n))
                        .unwrap_or(span)
                }));
            }
            cuts.push_back(end);
            at = end;
        }
        self.cuts = cuts;
        self
    }

    /// The walk over records `rows` (within this one's), its batches cut
    /// as this one cuts them from here on, read beside `parts - 1` others
    /// (each releases mapped pages more often).
    fn part(&self, rows: std::ops::Range<u64>, parts: u64) -> Batches {
        let end = rows.end.min(self.end);
        let start = rows.start.clamp(self.next, end);
        Batches {
            schema: self.schema.clone(),
            next: start,
            end,
            batch: self.batch,
            cuts: self
                .cuts
                .iter()
                .copied()
                .filter(|&c| c > start && c < end)
                .collect(),
            failed: false,
            pages: self.pages.as_ref().map(|p| p.part(start, parts)),
            ahead: crate::dataset::LookAhead::default(),
            fit: self.fit,
        }
    }

    /// The end of the batch that starts at `next`.
    fn batch_end(&mut self) -> u64 {
        while self.cuts.front().is_some_and(|&c| c <= self.next) {
            self.cuts.pop_front();
        }
        match self.cuts.front() {
            Some(&c) => c.min(self.end),
            None => self.end.min(self.next.saturating_add(self.batch)),
        }
    }

    /// Announces to `d` the batches after the one
    /// [`next_with`](Self::next_with) reads next, so they are on their way
    /// while that one decodes.
    pub(crate) fn announce(&mut self, d: &dyn Dataset, columns: &[usize]) {
        if self.failed || self.next >= self.end {
            return;
        }
        let end = self.batch_end();
        self.ahead
            .announce(d, columns, self.next..end, self.end, end - self.next);
    }

    /// The records of the next batch (`None` at the end or after an
    /// error); [`done`](Self::done) is told when it was read.
    fn take(&mut self) -> Option<std::ops::Range<u64>> {
        if self.failed || self.next >= self.end {
            return None;
        }
        let end = self.batch_end();
        let rows = self.next..end;
        self.next = end;
        Some(rows)
    }

    /// Every batch's records, in order (the walk is used up).
    pub(crate) fn ranges(mut self) -> Vec<std::ops::Range<u64>> {
        std::iter::from_fn(|| self.take()).collect()
    }

    /// The batch of `arrays` read for `rows`.
    fn make(
        schema: &SchemaRef,
        rows: &std::ops::Range<u64>,
        arrays: Result<Vec<arrow_array::ArrayRef>, Error>,
    ) -> Result<RecordBatch, Error> {
        crate::dataset::batch(schema.clone(), arrays?, rows.end - rows.start)
    }

    /// The batch ending at record `end` was read (an error: `None`).
    fn done(&mut self, end: u64, read: Option<&RecordBatch>) {
        self.failed |= read.is_none();
        // Counted only for what needs it (a walk without page release or
        // fitting, as `read_all`'s, skips it).
        let bytes = match self.pages.is_some() || self.fit.is_some() {
            true => read.map_or(0, batch_bytes),
            false => 0,
        };
        if let Some(p) = &mut self.pages {
            p.read_to(end, bytes);
        }
        if let (Some(most), Some(b)) = (self.fit.take(), read.filter(|b| b.num_rows() > 0)) {
            let per_record = bytes.div_ceil(b.num_rows() as u64).max(1);
            self.batch = (BATCH_BYTES / per_record).clamp(1, most);
        }
    }

    /// The next batch, its columns read by `read` for its record range.
    pub(crate) fn next_with(
        &mut self,
        read: impl FnOnce(std::ops::Range<u64>) -> Result<Vec<arrow_array::ArrayRef>, Error>,
    ) -> Option<Result<RecordBatch, Error>> {
        let rows = self.take()?;
        let r = Self::make(&self.schema, &rows, read(rows.clone()));
        self.done(rows.end, r.as_ref().ok());
        Some(r)
    }

    /// The next batch of `columns` of `d`, the ones after it announced.
    fn next_of(
        &mut self,
        d: &dyn Dataset,
        columns: &[usize],
    ) -> Option<Result<RecordBatch, Error>> {
        self.announce(d, columns);
        self.next_with(|rows| d.read_arrays(columns, rows))
    }

    /// Every batch of `columns` of `d`, handed to `send` in order until the
    /// end, an error (handed on, then the end) or `send` returning `false`:
    /// decoded on `threads` threads, `active` of them at a time, each
    /// batch's records by one thread.
    pub(crate) fn send_all(
        &mut self,
        d: &dyn Dataset,
        columns: &[usize],
        threads: usize,
        active: &crate::core::parallel::Active,
        send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
    ) {
        if self.fit.is_some() {
            // The first batch, which sets the others' length, before any other.
            match self.next_of(d, columns) {
                Some(b) => {
                    let failed = b.is_err();
                    if !send(b) || failed {
                        return;
                    }
                }
                None => return,
            }
        }
        if threads < 2 || self.end.saturating_sub(self.next) <= self.batch {
            while let Some(b) = self.next_of(d, columns) {
                let failed = b.is_err();
                if !send(b) || failed {
                    return;
                }
            }
            return;
        }
        let schema = self.schema.clone();
        let batches = std::cell::RefCell::new(self);
        // The error ends the run once it was handed on (or `send` refused).
        // One batch in flight per thread: more only adds buffers that wait
        // for the consumer when it is the slower side.
        let _: Result<(), ()> = crate::core::parallel::ordered_active(
            threads,
            threads,
            active,
            || {
                let mut b = batches.borrow_mut();
                b.announce(d, columns);
                Ok(b.take())
            },
            |rows| {
                let r = Self::make(&schema, &rows, d.read_arrays(columns, rows.clone()));
                (rows.end, r)
            },
            |(end, r)| {
                let ok = r.is_ok();
                batches.borrow_mut().done(end, r.as_ref().ok());
                match send(r) && ok {
                    true => Ok(()),
                    false => Err(()),
                }
            },
        );
    }
}

/// The kinds of change a lossy conversion makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// The source schema could not travel with the data (MLDF without
    /// records); the target keeps its own types.
    SchemaNotCarried,
    /// A float was rounded to a narrower type.
    Rounded,
    /// A column the target has no place for was left out.
    Dropped,
    /// A column the target holds only as another type (integers as a
    /// CNTK float64 stream, a tensor flattened): its values kept, its type
    /// not. Values that do not survive exactly are counted as `Rounded`.
    Retyped,
    /// A missing value the target cannot hold was written as the type's
    /// default.
    NullFilled,
    /// A value the typed view cannot hold was replaced (IDV text holding
    /// half of a UTF-16 surrogate pair: U+FFFD in its place).
    Replaced,
}

impl ChangeKind {
    /// A short name (`schema_not_carried`, `rounded`, `dropped`, `retyped`,
    /// `null_filled`, `replaced`).
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::SchemaNotCarried => "schema_not_carried",
            ChangeKind::Rounded => "rounded",
            ChangeKind::Dropped => "dropped",
            ChangeKind::Retyped => "retyped",
            ChangeKind::NullFilled => "null_filled",
            ChangeKind::Replaced => "replaced",
        }
    }
}

/// One kind of change to one field, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What changed.
    pub kind: ChangeKind,
    /// The field (empty: the whole dataset).
    pub field: String,
    /// The first record changed.
    pub first_record: u64,
    /// How many values changed.
    pub count: u64,
    /// In words.
    pub detail: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.kind.name(), self.detail)
        } else if self.count == 0 {
            // Before any record was written: the whole column.
            write!(
                f,
                "{} in field {:?}: {} (the whole column)",
                self.kind.name(),
                self.field,
                self.detail
            )
        } else {
            write!(
                f,
                "{} in field {:?}: {} ({} value(s), first in record {})",
                self.kind.name(),
                self.field,
                self.detail,
                self.count,
                self.first_record
            )
        }
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Records written.
    pub records: u64,
    /// The input's format (`idv`, `parquet`, ...).
    pub from: String,
    /// The target's name.
    pub to: String,
    /// Every kind of change made, per field.
    pub changes: Vec<Change>,
    /// What else the caller should know (members of a tar that were not
    /// samples, a tar cut short when `lossy` kept what came before, ...).
    pub warnings: Vec<String>,
}

impl Report {
    /// Counts a change of `kind` to `field` in `record`.
    pub(crate) fn change(&mut self, kind: ChangeKind, field: &str, record: u64, detail: &str) {
        self.change_n(kind, field, record, 1, detail);
    }

    /// A change of `kind` to the whole column `field` (dropped, retyped):
    /// counted once the records are written.
    pub(crate) fn column(&mut self, kind: ChangeKind, field: &str, detail: &str) {
        self.change_n(kind, field, 0, 0, detail);
    }

    /// Counts `count` changes of `kind` to `field`, the first in `record`.
    pub(crate) fn change_n(
        &mut self,
        kind: ChangeKind,
        field: &str,
        record: u64,
        count: u64,
        detail: &str,
    ) {
        if let Some(c) = self
            .changes
            .iter_mut()
            .find(|c| c.kind == kind && c.field == field)
        {
            c.count += count;
            c.first_record = c.first_record.min(record);
            return;
        }
        self.changes.push(Change {
            kind,
            field: field.to_string(),
            first_record: record,
            count,
            detail: detail.to_string(),
        });
    }

    pub(crate) fn note(&mut self, c: Change) {
        self.changes.push(c);
    }

    /// Without `lossy`, any change is an error naming every change so far.
    pub(crate) fn check(&self, lossy: bool) -> Result<(), Error> {
        if lossy || self.changes.is_empty() {
            return Ok(());
        }
        let all: Vec<String> = self.changes.iter().map(ToString::to_string).collect();
        Err(Error::Lossy {
            message: format!(
                "{}; pass --lossy (ConvertOptions::lossy) to convert anyway",
                all.join("; ")
            ),
        })
    }
}

/// The columns of `schema` (but `except`) that `plan` gives a place in the
/// target, with their indices; each other column is reported as dropped
/// (`why`), which without `lossy` refuses the conversion. No column at all
/// is an error naming `target`.
pub(crate) fn keep_columns<T>(
    schema: &arrow_schema::Schema,
    except: Option<usize>,
    report: &mut Report,
    lossy: bool,
    why: &str,
    target: &str,
    plan: impl Fn(&arrow_schema::Field) -> Result<Option<T>, Error>,
) -> Result<Vec<(usize, T)>, Error> {
    let mut out = Vec::new();
    for (k, f) in schema.fields().iter().enumerate() {
        if Some(k) == except {
            continue;
        }
        match plan(f)? {
            Some(t) => out.push((k, t)),
            None => report.column(ChangeKind::Dropped, f.name(), why),
        }
    }
    report.check(lossy)?;
    if out.is_empty() {
        return Err(Error::invalid(format!("no column can become {target}")));
    }
    Ok(out)
}

/// The batches of an opened dataset (it owns the dataset).
struct Owned {
    d: Box<dyn Dataset>,
    columns: Vec<usize>,
    batches: Batches,
}

impl BatchStream for Owned {
    fn schema(&self) -> SchemaRef {
        self.batches.schema.clone()
    }
    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        self.batches.next_of(self.d.as_ref(), &self.columns)
    }
    fn records_left(&self) -> Option<u64> {
        Some(self.batches.end.saturating_sub(self.batches.next))
    }
    /// Batches decoded on `threads` threads, `active` of them at a time
    /// (each batch's records by one thread), handed on in order.
    fn send_all(
        &mut self,
        threads: usize,
        active: &crate::core::parallel::Active,
        send: &mut dyn FnMut(Result<RecordBatch, Error>) -> bool,
    ) {
        self.batches
            .send_all(self.d.as_ref(), &self.columns, threads, active, send);
    }
    fn parts(&self) -> Option<&dyn crate::dataset::Parts> {
        Some(self)
    }
}

impl crate::dataset::Parts for Owned {
    fn range(&self) -> std::ops::Range<u64> {
        self.batches.next..self.batches.end
    }
    fn part(&self, rows: std::ops::Range<u64>) -> Box<dyn BatchStream + Send + '_> {
        Box::new(Part {
            d: self.d.as_ref(),
            columns: &self.columns,
            batches: self.batches.part(rows, PARTS_BESIDE),
        })
    }
}

/// Parts of a dataset's records read at a time, as far as releasing
/// mapped pages is concerned (each part's releases come
/// [`PARTS_BESIDE`] times as often).
const PARTS_BESIDE: u64 = 4;

/// Records of an opened dataset read apart from the others
/// ([`Parts::part`](crate::dataset::Parts::part)).
struct Part<'a> {
    d: &'a dyn Dataset,
    columns: &'a [usize],
    batches: Batches,
}

impl BatchStream for Part<'_> {
    fn schema(&self) -> SchemaRef {
        self.batches.schema.clone()
    }
    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        self.batches.next_of(self.d, self.columns)
    }
    fn records_left(&self) -> Option<u64> {
        Some(self.batches.end.saturating_sub(self.batches.next))
    }
}

/// An input as a stream of typed batches: its format's name, the records
/// it will give, and the stream.
pub struct Input {
    /// The format's short name.
    pub from: String,
    /// The records the stream gives.
    pub records: u64,
    /// The batches (read on a thread of their own by the conversions).
    pub stream: Box<dyn BatchStream + Send>,
    /// Text values the reader replaced (IDV text that is not Unicode,
    /// read for a lossy conversion), counted while the stream is read.
    pub repaired: Option<Arc<crate::dataset::RepairTally>>,
    /// The local copy of a URL input read whole (deleted with the input).
    staged: Option<crate::remote::Staged>,
}

impl Input {
    /// Notes the replaced text values in `report`.
    fn report_repairs(&self, report: &mut Report) {
        let Some(t) = &self.repaired else { return };
        if let (n @ 1.., Some((record, field))) = (t.count(), t.first()) {
            report.note(Change {
                kind: ChangeKind::Replaced,
                field,
                first_record: record,
                count: n,
                detail: "text holding half of a UTF-16 surrogate pair, written with U+FFFD \
                         in its place"
                    .into(),
            });
        }
    }
}

/// Whether `p` names a table import (Parquet, Arrow IPC, CSV, JSON lines)
/// by its extension.
fn is_table(p: &Path) -> bool {
    #[cfg(feature = "export")]
    return import::Table::from_path(p).is_some();
    #[cfg(not(feature = "export"))]
    return {
        let _ = p;
        false
    };
}

/// Opens `input` (any format the facade reads, or a Parquet, Arrow IPC or
/// CSV table) as typed batches, with the
/// columns and records `opts` selects. An MLDF file written by a
/// conversion gives back the schema it came from.
///
/// A URL input is read by byte ranges when its format has a typed view,
/// else downloaded to a temporary file first (deleted with the `Input`).
pub fn open_input(input: &Path, opts: &ConvertOptions) -> Result<Input, Error> {
    let from = crate::dataset::detect_path(input)?;
    if crate::remote::is_url(input) && !crate::remote::by_ranges(from) {
        let staged = crate::remote::stage(input)?;
        let mut inp = open_detected(staged.path(), from, opts)?;
        inp.staged = Some(staged);
        return Ok(inp);
    }
    open_detected(input, from, opts)
}

/// [`open_input`] of a file whose format `detect` gave.
fn open_detected(
    input: &Path,
    detected: Option<crate::Format>,
    opts: &ConvertOptions,
) -> Result<Input, Error> {
    let Some(format) = detected else {
        #[cfg(feature = "export")]
        if let Some(kind) = import::Table::from_path(input) {
            return import::open(input, kind, opts);
        }
        #[cfg(feature = "bloscpack")]
        if input
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
        {
            return npy::open(input, opts);
        }
        return Err(Error::Unrecognized {
            what: input.display().to_string(),
        });
    };
    if input.is_dir() || format == crate::Format::Blz {
        return from_dataset(crate::open_as_with(input, format, &opts.open)?, opts, None);
    }
    // IDV text that is not Unicode: refused, or replaced and reported.
    let mut open = opts.open.clone();
    let mut repaired = None;
    if format == crate::Format::Idv {
        open.text = if opts.lossy {
            let tally = Arc::new(crate::dataset::RepairTally::default());
            repaired = Some(tally.clone());
            crate::dataset::TextRepair::Count(tally)
        } else {
            crate::dataset::TextRepair::Refuse
        };
    }
    let (d, src) = crate::dataset::open_mapped(input, format, &open)?;
    let mut input = from_dataset(d, opts, Some(src))?;
    input.repaired = repaired;
    Ok(input)
}

/// Records read between two releases of the input's mapped pages at most.
const RELEASE_EVERY: u64 = 32_768;

/// Bytes of values read between two releases of the input's mapped pages
/// at most.
const RELEASE_BYTES: u64 = 64 << 20;

fn from_dataset(
    d: Box<dyn Dataset>,
    opts: &ConvertOptions,
    pages: Option<crate::core::Source>,
) -> Result<Input, Error> {
    let from = d.format().name().to_string();
    let std::ops::Range { start, end } = opts.record_range(d.len());
    let (columns, schema) = d.projection(opts.columns.as_deref())?;
    let mut batches = Batches::new(
        schema.clone(),
        start..end,
        opts.batch_records(&schema),
        pages.map(|src| PageRelease::new(src, start)),
    );
    if opts.batch_size == 0 {
        batches = batches.at_units_of(d.as_ref());
        if record_width(&schema).is_none() {
            batches = batches.by_bytes();
        }
    }
    Ok(Input {
        from,
        records: end - start,
        stream: Box::new(Owned {
            d,
            columns,
            batches,
        }),
        repaired: None,
        staged: None,
    })
}

/// Converts `input` to `output` (the target from `opts.to` or the output's
/// extension). The output appears only when the conversion succeeded.
pub fn convert(input: &Path, output: &Path, opts: &ConvertOptions) -> Result<Report, Error> {
    convert_with_progress(input, output, opts, &mut |_, _| {})
}

/// [`convert`], calling `progress(done, total)` with records written after
/// each batch.
pub fn convert_with_progress(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Report, Error> {
    let target = match opts.to {
        Some(t) => t,
        None => Target::from_path(output).ok_or_else(|| {
            Error::invalid(format!(
                "{}: no target format for this extension (targets: {})",
                output.display(),
                Target::ALL
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
    };
    let from = crate::dataset::detect_path(input)?;
    if target == Target::Blz && crate::remote::is_url(output) {
        return Err(Error::Unsupported {
            format: Some(crate::Format::Blz),
            message: format!(
                "{}: a BLZ/bcolz directory is written locally; it cannot be uploaded as one object",
                output.display()
            ),
        });
    }
    // A URL input read whole as a stream is downloaded first; formats with
    // a typed view are read by byte ranges. A URL output is written to a
    // temporary file, uploaded once the conversion has succeeded.
    let staged = match crate::remote::is_url(input) && !crate::remote::by_ranges(from) {
        true => Some(crate::remote::stage(input)?),
        false => None,
    };
    let input = staged.as_ref().map_or(input, crate::remote::Staged::path);
    let out = crate::remote::Output::new(output)?;
    let report = convert_local(input, out.path(), from, target, opts, progress)?;
    out.finish()?;
    Ok(report)
}

/// [`convert_with_progress`] once the input can be read and the output
/// written as local paths.
fn convert_local(
    input: &Path,
    output: &Path,
    from: Option<crate::Format>,
    target: Target,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Report, Error> {
    if let Some(r) = direct::convert(input, output, from, target, opts, progress) {
        return r;
    }
    let mut inp = open_detected(input, from, opts)?;
    let mut report = Report {
        from: inp.from.clone(),
        to: target.name().to_string(),
        ..Report::default()
    };
    if let Some(narrow) = narrowed(input, from, target, opts, &inp, &mut report)? {
        inp = narrow;
    }
    let total = inp.records;
    let mut tick = |n: u64| progress(n, total);
    let threads = crate::core::parallel::threads(opts.threads);
    if reads_parts(target, inp.stream.as_ref()) {
        // The writer reads the parts itself, each on a thread of its own.
        write(
            target,
            inp.stream.as_mut(),
            output,
            opts,
            &mut report,
            &mut tick,
        )?;
    } else {
        read_ahead(inp.stream.as_mut(), threads, |stream| {
            write(target, stream, output, opts, &mut report, &mut tick)
        })?;
    }
    inp.report_repairs(&mut report);
    Ok(report)
}

/// The columns of `schema` that `target`'s writer reads, found as the
/// writer finds them (the columns it leaves out noted in `report`);
/// `None` where it reads every column (the typed exports, Bloscpack's raw
/// chunks).
fn columns_used(
    target: Target,
    schema: &arrow_schema::Schema,
    lossy: bool,
    report: &mut Report,
) -> Option<Result<Vec<usize>, Error>> {
    let _ = (schema, lossy, &report);
    match target {
        #[cfg(feature = "mldf")]
        Target::Mldf => Some(mldf::columns_used(schema, report, lossy)),
        #[cfg(feature = "tbl2")]
        Target::Tbl2 => Some(tbl2::columns_used(schema, report, lossy)),
        #[cfg(feature = "cntk")]
        Target::Cntk => Some(cntk::columns_used(schema, report, lossy)),
        #[cfg(feature = "idv")]
        Target::Idv => Some(idv::columns_used(schema, report, lossy)),
        #[cfg(feature = "bloscpack")]
        Target::Bloscpack => bloscpack::columns_used(schema, report, lossy, bloscpack::NUMPY),
        #[cfg(feature = "bloscpack")]
        Target::Blz => bloscpack::columns_used(schema, report, lossy, blz::BLZ),
        _ => None,
    }
}

/// `inp` (the input at `input`) opened again with only the columns
/// `target`'s writer reads, when it leaves some out (a lossy conversion)
/// and the input decodes its columns apart from each other (a format's
/// file, Parquet, Arrow IPC): the columns left out are then never read.
/// They are noted in `report` as the writer notes them. `None` when the
/// writer reads every column or refuses the columns (its own error then
/// follows), or when the input's column names are not unique (the columns
/// are chosen again by name).
fn narrowed(
    input: &Path,
    from: Option<crate::Format>,
    target: Target,
    opts: &ConvertOptions,
    inp: &Input,
    report: &mut Report,
) -> Result<Option<Input>, Error> {
    #[cfg(feature = "export")]
    let by_column = from.is_some()
        || matches!(
            import::Table::from_path(input),
            Some(import::Table::Parquet | import::Table::ArrowFile | import::Table::ArrowStream)
        );
    #[cfg(not(feature = "export"))]
    let by_column = from.is_some();
    let schema = inp.stream.schema();
    let fields = schema.fields();
    let mut drops = Report::default();
    let used = match columns_used(target, &schema, opts.lossy, &mut drops) {
        Some(Ok(used)) if by_column && used.len() < fields.len() => used,
        _ => return Ok(None),
    };
    let names: std::collections::HashSet<&String> = fields.iter().map(|f| f.name()).collect();
    if names.len() < fields.len() {
        return Ok(None);
    }
    let columns = used
        .iter()
        .filter_map(|&k| fields.get(k).map(|f| f.name().clone()))
        .collect();
    let opts = ConvertOptions {
        columns: Some(columns),
        ..opts.clone()
    };
    let narrow = open_detected(input, from, &opts)?;
    report.changes.extend(
        drops
            .changes
            .into_iter()
            .filter(|c| c.kind == ChangeKind::Dropped),
    );
    Ok(Some(narrow))
}

/// The error `BufRead::lines` gives for a line that is not UTF-8 (JSON
/// lines read by hand give the same).
#[cfg(any(feature = "mldf", feature = "export"))]
pub(crate) fn not_utf8() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "stream did not contain valid UTF-8",
    )
}

/// Batches read ahead of the writer, at most this many waiting.
const AHEAD: usize = 2;

/// Whether `target`'s writer reads `stream` in parts, each on a thread of
/// its own ([`BatchStream::parts`]): Parquet from a dataset. Its batches
/// are then not read ahead on another thread.
fn reads_parts(target: Target, stream: &(dyn BatchStream + Send)) -> bool {
    target == Target::Parquet && stream.parts().is_some() && !stream.schema().fields().is_empty()
}

/// Runs `consume` on `stream`; with `threads` above 1, the stream is read
/// on a thread of its own, [`AHEAD`] batches ahead, so that decoding the
/// source (JSON, CSV, a format's chunks) and encoding the target run side
/// by side. A stream that can decode batches apart
/// ([`BatchStream::send_all`]) decodes on `threads - 1` threads, the
/// writer keeping one core, until the writer is seen to wait for batches
/// most of the time ([`Pace`]): then on `threads`. The batches arrive in
/// order, an error where the stream gave it; when `consume` stops early,
/// the reading stops after the batches under way.
fn read_ahead<T>(
    stream: &mut (dyn BatchStream + Send),
    threads: usize,
    consume: impl FnOnce(&mut dyn BatchStream) -> T,
) -> T {
    if threads < 2 {
        return consume(stream);
    }
    /// The receiving end, as a stream.
    struct Received {
        schema: SchemaRef,
        rx: std::sync::mpsc::Receiver<Result<RecordBatch, Error>>,
        pace: Pace,
        left: Option<u64>,
    }
    impl BatchStream for Received {
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
        fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
            self.pace.asking();
            let b = self.rx.recv().ok();
            self.pace.received();
            if let (Some(left), Some(Ok(b))) = (&mut self.left, &b) {
                *left = left.saturating_sub(b.num_rows() as u64);
            }
            b
        }
        fn records_left(&self) -> Option<u64> {
            self.left
        }
    }
    let schema = stream.schema();
    let left = stream.records_left();
    let (tx, rx) = std::sync::mpsc::sync_channel(AHEAD);
    let active = crate::core::parallel::Active::new(threads - 1);
    let pace = Pace::new(active.clone(), threads - 1, threads);
    std::thread::scope(|s| {
        // Dropped last: the reader joined (so nothing of its thread
        // outlives the call) after the receiver below is gone.
        let _reader = crate::core::parallel::Joined(vec![s.spawn(move || {
            stream.send_all(threads, &active, &mut |b| tx.send(b).is_ok());
        })]);
        // Dropped when `consume` returns, before the reader is joined: a
        // reader blocked on a full channel then stops.
        let mut received = Received {
            schema,
            rx,
            pace,
            left,
        };
        consume(&mut received)
    })
}

/// Batches over which the writer's waiting is measured.
const PACE_WINDOW: u32 = 8;

/// Lends the writer's core to the decoding threads while the writer
/// spends most of its time waiting for batches: over each
/// [`PACE_WINDOW`] batches, when the time waiting is more than twice the
/// time spent writing, decoding goes on `all` threads for the next
/// window, else on `base`. Decoding on every core while the writer is
/// busy slows a conversion whose writing is the larger part (the threads
/// then compete for the cores and the memory); decoding on one core
/// fewer while the writer waits leaves a core idle.
struct Pace {
    active: crate::core::parallel::Active,
    base: usize,
    all: usize,
    asked: Option<std::time::Instant>,
    got: Option<std::time::Instant>,
    waiting: std::time::Duration,
    writing: std::time::Duration,
    seen: u32,
}

impl Pace {
    fn new(active: crate::core::parallel::Active, base: usize, all: usize) -> Self {
        Pace {
            active,
            base,
            all,
            asked: None,
            got: None,
            waiting: std::time::Duration::ZERO,
            writing: std::time::Duration::ZERO,
            seen: 0,
        }
    }

    /// The writer asks for the next batch (it wrote the last one).
    fn asking(&mut self) {
        self.asked = Some(std::time::Instant::now());
    }

    /// The writer has the batch it asked for.
    fn received(&mut self) {
        let now = std::time::Instant::now();
        // The first batch's wait is the start of reading, not its pace.
        if let (Some(asked), Some(got)) = (self.asked, self.got) {
            self.batch(
                now.saturating_duration_since(asked),
                asked.saturating_duration_since(got),
            );
        }
        self.got = Some(now);
    }

    /// One more batch, for which the writer waited `waited` after writing
    /// the one before for `wrote`.
    fn batch(&mut self, waited: std::time::Duration, wrote: std::time::Duration) {
        self.waiting += waited;
        self.writing += wrote;
        self.seen += 1;
        if self.seen.is_multiple_of(PACE_WINDOW) {
            let n = if self.waiting > 2 * self.writing {
                self.all
            } else {
                self.base
            };
            self.active.set(n);
            self.waiting = std::time::Duration::ZERO;
            self.writing = std::time::Duration::ZERO;
        }
    }
}

/// Converts `input` into `out` as the typed export `target` (JSON lines,
/// CSV, Arrow IPC file or stream, Parquet), for outputs that are not files
/// of their own (stdout, a socket, a buffer); `out` is flushed at the end.
#[cfg(feature = "export")]
pub fn convert_to_writer<W: std::io::Write + Send>(
    input: &Path,
    target: Target,
    out: &mut W,
    opts: &ConvertOptions,
) -> Result<Report, Error> {
    let format = target.export().ok_or_else(|| {
        Error::invalid(format!(
            "{} is written to a file of its own; give an output path",
            target.name()
        ))
    })?;
    let mut inp = open_input(input, opts)?;
    let mut report = Report {
        from: inp.from.clone(),
        to: target.name().to_string(),
        ..Report::default()
    };
    let threads = crate::core::parallel::threads(opts.threads);
    let mut write = |stream: &mut dyn BatchStream| {
        crate::export::write_with_threads(stream, format, &mut *out, opts.threads, &mut |_| {})
    };
    report.records = match reads_parts(target, inp.stream.as_ref()) {
        true => write(inp.stream.as_mut()),
        false => read_ahead(inp.stream.as_mut(), threads, write),
    }?;
    out.flush().map_err(|source| Error::Io {
        path: "the output".into(),
        source,
    })?;
    inp.report_repairs(&mut report);
    Ok(report)
}

/// Writes every batch of `stream` to `output` as `target`.
pub fn write(
    target: Target,
    stream: &mut dyn BatchStream,
    output: &Path,
    opts: &ConvertOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    write_target(target, stream, output, opts, report, progress)?;
    // A column left out or retyped changed one value per record: none when
    // there were no records.
    let records = report.records;
    report.changes.retain_mut(|c| {
        if !matches!(c.kind, ChangeKind::Dropped | ChangeKind::Retyped) {
            return true;
        }
        c.count = records;
        records > 0
    });
    Ok(())
}

fn write_target(
    target: Target,
    stream: &mut dyn BatchStream,
    output: &Path,
    opts: &ConvertOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    match target {
        #[cfg(feature = "mldf")]
        Target::Mldf => mldf::write(
            stream,
            output,
            &opts.mldf,
            opts.lossy,
            opts.threads,
            report,
            progress,
        ),
        #[cfg(feature = "tbl2")]
        Target::Tbl2 => tbl2::write(
            stream,
            output,
            &opts.tbl2,
            opts.threads,
            opts.lossy,
            report,
            progress,
        ),
        #[cfg(feature = "cntk")]
        Target::Cntk => cntk::write(stream, output, &opts.cntk, opts.lossy, report, progress),
        #[cfg(feature = "idv")]
        Target::Idv => idv::write(
            stream,
            output,
            &opts.idv,
            opts.threads,
            opts.lossy,
            report,
            progress,
        ),
        #[cfg(feature = "bloscpack")]
        Target::Bloscpack => bloscpack::write(
            stream,
            output,
            &opts.bloscpack,
            opts.threads,
            opts.lossy,
            report,
            progress,
        ),
        #[cfg(feature = "bloscpack")]
        Target::Blz => blz::write(stream, output, &opts.blz, opts.lossy, report, progress),
        #[cfg(feature = "export")]
        t if t.export().is_some() => {
            let format = t
                .export()
                .ok_or_else(|| Error::invalid("no export format"))?;
            let name = output.display().to_string();
            let io = |source| Error::Io {
                path: name.clone(),
                source,
            };
            let mut out = crate::core::AtomicFile::create(output).map_err(io)?;
            report.records = crate::export::write_with_threads(
                stream,
                format,
                &mut out,
                opts.threads,
                progress,
            )?;
            out.finish().map_err(io)?;
            Ok(())
        }
        #[allow(unreachable_patterns)]
        t => {
            let _ = (stream, output, opts, report, progress);
            Err(Error::Unsupported {
                format: None,
                message: format!("this build cannot write {}", t.name()),
            })
        }
    }
}

/// The values of a fixed-width primitive array as little-endian bytes,
/// from its first element (borrowed from its buffer).
fn raw(a: &dyn arrow_array::Array) -> &[u8] {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType;
    macro_rules! raw {
        ($t:ty) => {
            a.as_primitive::<$t>().values().inner().as_slice()
        };
    }
    match a.data_type() {
        DataType::Int8 => raw!(Int8Type),
        DataType::UInt8 => raw!(UInt8Type),
        DataType::Int16 => raw!(Int16Type),
        DataType::UInt16 => raw!(UInt16Type),
        DataType::Float16 => raw!(Float16Type),
        DataType::Int32 => raw!(Int32Type),
        DataType::UInt32 => raw!(UInt32Type),
        DataType::Float32 => raw!(Float32Type),
        DataType::Int64 => raw!(Int64Type),
        DataType::UInt64 => raw!(UInt64Type),
        DataType::Float64 => raw!(Float64Type),
        _ => &[],
    }
}

/// The bytes of value `i` of a fixed-width primitive array.
pub(crate) fn value_bytes(a: &dyn arrow_array::Array, i: usize) -> &[u8] {
    let w = crate::typed::fixed_width(a.data_type()).unwrap_or(0);
    raw(a).get(i * w..(i + 1) * w).unwrap_or_default()
}

/// Every value of a primitive array, as little-endian bytes.
pub(crate) fn all_bytes(a: &dyn arrow_array::Array) -> &[u8] {
    let w = crate::typed::fixed_width(a.data_type()).unwrap_or(0);
    raw(a).get(..a.len() * w).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema, SchemaRef};

    use super::{AHEAD, PACE_WINDOW, Pace, read_ahead};
    use crate::dataset::{BatchStream, Error};

    /// A lossy conversion opens its input again with only the columns its
    /// target writes: a Parquet file of a `data` and an `n` column becomes
    /// the TBL v2 file the file of `data` alone does, and the IDV file the
    /// file of `n` alone does, the other column reported as dropped in
    /// every record; a target that keeps every column (Parquet) opens
    /// nothing again.
    #[cfg(all(feature = "export", feature = "tbl2", feature = "idv"))]
    #[test]
    fn lossy_conversions_read_only_the_columns_they_write() {
        use super::{ChangeKind, ConvertOptions, Report, Target, convert, narrowed, open_detected};
        use arrow_array::{ArrayRef, BinaryArray};
        let dir = tempfile::tempdir().unwrap();
        let data: ArrayRef = Arc::new(BinaryArray::from_iter_values(
            (0..5_000u32).map(|i| i.to_le_bytes().repeat(1 + (i % 7) as usize)),
        ));
        let n: ArrayRef = Arc::new(Int64Array::from_iter_values(0..5_000));
        let write = |name: &str, cols: Vec<(&str, ArrayRef)>| {
            let t = RecordBatch::try_from_iter(cols).unwrap();
            let path = dir.path().join(name);
            let file = std::fs::File::create(&path).unwrap();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, t.schema(), None).unwrap();
            w.write(&t).unwrap();
            w.close().unwrap();
            path
        };
        let both = write(
            "both.parquet",
            vec![("n", n.clone()), ("data", data.clone())],
        );
        let alone = write("alone.parquet", vec![("data", data)]);
        let numbers = write("numbers.parquet", vec![("n", n)]);
        let opts = ConvertOptions {
            lossy: true,
            ..Default::default()
        };
        let inp = open_detected(&both, None, &opts).unwrap();
        assert_eq!(inp.stream.schema().fields().len(), 2);
        for (target, kept) in [(Target::Tbl2, "data"), (Target::Idv, "n")] {
            let mut report = Report::default();
            let narrow = narrowed(&both, None, target, &opts, &inp, &mut report)
                .unwrap()
                .expect("opened again");
            let names: Vec<String> = narrow
                .stream
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            assert_eq!(names, [kept]);
            assert_eq!(narrow.records, 5_000);
            assert_eq!(report.changes.len(), 1);
        }
        let mut r = Report::default();
        let again = narrowed(&both, None, Target::Parquet, &opts, &inp, &mut r).unwrap();
        assert!(again.is_none());
        assert!(r.changes.is_empty());
        for (ext, from, dropped) in [("tbl", &alone, "n"), ("idv", &numbers, "data")] {
            let (a, b) = (
                dir.path().join(format!("a.{ext}")),
                dir.path().join(format!("b.{ext}")),
            );
            let report = convert(&both, &a, &opts).unwrap();
            convert(from, &b, &opts).unwrap();
            let same = std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap();
            assert!(same, "{ext}: the files differ");
            assert_eq!(report.records, 5_000);
            let changes: Vec<(&str, u64)> = report
                .changes
                .iter()
                .map(|c| {
                    assert_eq!(c.kind, ChangeKind::Dropped);
                    (c.field.as_str(), c.count)
                })
                .collect();
            assert_eq!(changes, [(dropped, 5_000)], "{ext}");
        }
        // Without `lossy` the conversion is refused, naming the column.
        let e = convert(&both, &dir.path().join("c.tbl"), &ConvertOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"n\""), "{e}");
    }

    /// Batch `k` holds the one value `k`; batch `fail_at` is an error,
    /// and the stream counts the batches asked of it.
    struct Counting {
        schema: SchemaRef,
        fail_at: usize,
        asked: Arc<AtomicUsize>,
        /// Touched when a batch is read on another thread than this one.
        exits: Option<(crate::core::testing::ThreadExits, std::thread::ThreadId)>,
    }

    impl BatchStream for Counting {
        fn schema(&self) -> SchemaRef {
            self.schema.clone()
        }
        fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
            if let Some((exits, caller)) = &self.exits
                && std::thread::current().id() != *caller
            {
                exits.touch();
            }
            let k = self.asked.fetch_add(1, Ordering::SeqCst);
            if k == self.fail_at {
                return Some(Err(Error::invalid(format!("batch {k} is broken"))));
            }
            if k > self.fail_at {
                return None;
            }
            let col = Arc::new(Int64Array::from(vec![k as i64]));
            Some(Ok(
                RecordBatch::try_new(self.schema.clone(), vec![col]).unwrap()
            ))
        }
    }

    fn counting(fail_at: usize) -> (Counting, Arc<AtomicUsize>) {
        let asked = Arc::new(AtomicUsize::new(0));
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
        let s = Counting {
            schema,
            fail_at,
            asked: asked.clone(),
            exits: None,
        };
        (s, asked)
    }

    /// The reading thread has exited (its thread-local values dropped)
    /// when the conversion returns: after reading to the end, and after a
    /// writer that stopped early left it blocked on a full channel.
    #[test]
    fn the_reader_does_not_outlive_the_conversion() {
        let exits = crate::core::testing::ThreadExits::new();
        for (round, stop_early) in [false, true, false, true].into_iter().enumerate() {
            let (mut s, _) = counting(if stop_early { usize::MAX } else { 30 });
            s.exits = Some((exits.clone(), std::thread::current().id()));
            read_ahead(&mut s, 2, |stream| {
                while let Some(Ok(_)) = stream.next_batch() {
                    if stop_early {
                        break;
                    }
                }
            });
            assert!(
                exits.made() > round / 2,
                "round {round}: nothing read ahead"
            );
            assert_eq!(exits.exited(), exits.made(), "round {round}");
        }
    }

    /// Read on a thread of its own or not, the writer gets the batches in
    /// order and the error where the stream gave it, and nothing after it.
    #[test]
    fn batches_read_ahead_arrive_in_order_up_to_the_error() {
        for ahead in [false, true] {
            let (mut s, asked) = counting(40);
            let (got, last) = read_ahead(&mut s, if ahead { 2 } else { 1 }, |stream| {
                assert_eq!(stream.schema().field(0).name(), "k");
                let mut got = Vec::new();
                let mut last = None;
                while let Some(b) = stream.next_batch() {
                    match b {
                        Ok(b) => got.push(
                            b.column(0)
                                .as_any()
                                .downcast_ref::<Int64Array>()
                                .unwrap()
                                .value(0),
                        ),
                        Err(e) => {
                            last = Some(e.to_string());
                            break;
                        }
                    }
                }
                (got, last)
            });
            assert_eq!(got, (0..40).collect::<Vec<i64>>(), "ahead: {ahead}");
            assert!(last.unwrap().contains("batch 40 is broken"));
            assert_eq!(
                asked.load(Ordering::SeqCst),
                41,
                "nothing read past the error"
            );
        }
    }

    /// A writer that stops early (its own error) does not wait for the
    /// rest of the input: the reading thread stops a few batches on.
    #[test]
    fn a_writer_that_stops_stops_the_reader() {
        let (mut s, asked) = counting(usize::MAX);
        let first = read_ahead(&mut s, 2, |stream| {
            stream.next_batch().map(|b| b.unwrap().num_rows())
        });
        assert_eq!(first, Some(1));
        // One taken, AHEAD waiting, one blocked in `send`, one more at most
        // being read when the channel closed.
        assert!(asked.load(Ordering::SeqCst) <= AHEAD + 3);
    }

    #[test]
    fn a_writer_that_mostly_waits_lends_its_core_and_takes_it_back() {
        let active = crate::core::parallel::Active::new(1);
        let mut pace = Pace::new(active.clone(), 1, 2);
        let ms = std::time::Duration::from_millis;
        // Waiting three times as long as writing: every core decodes,
        // from the end of the window on.
        for k in 0..PACE_WINDOW {
            assert_eq!(active.get(), 1, "batch {k}");
            pace.batch(ms(3), ms(1));
        }
        assert_eq!(active.get(), 2);
        // Waiting as long as writing: back to one core fewer.
        for _ in 0..PACE_WINDOW {
            assert_eq!(active.get(), 2);
            pace.batch(ms(2), ms(2));
        }
        assert_eq!(active.get(), 1);
        // Exactly twice is not more than twice.
        for _ in 0..PACE_WINDOW {
            pace.batch(ms(2), ms(1));
        }
        assert_eq!(active.get(), 1);
        // The windows are measured apart: a long wait before does not count.
        for _ in 0..PACE_WINDOW {
            pace.batch(ms(100), ms(1));
        }
        assert_eq!(active.get(), 2);
        for _ in 0..PACE_WINDOW {
            pace.batch(ms(1), ms(1));
        }
        assert_eq!(active.get(), 1);
    }
}
