//! Parquet inputs, read in runs of records on every core.
//!
//! Each run (a [`Part`]) has a reader of its own that fetches only the
//! pages it needs, by positioned reads, so runs can be decoded on any
//! thread at once and handed on in order. A run is a whole number of
//! batches, so the batches are cut where one reader of the whole range
//! cuts them (every `batch` records from the first selected one, across
//! row groups): the same batches on one thread as on many.
//!
//! The file is read in runs only where a reader can start in the middle
//! of a row group cheaply: when the file's offset index locates every
//! page of the columns read, or when none of them repeats (then a page
//! header says how many records its page holds, and the pages before a
//! run are stepped over unread). Otherwise (repeated values, as lists,
//! without an offset index: the pages before a run would have to be
//! decompressed to count their records) one reader reads it all.

use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::errors::ParquetError;
use parquet::file::metadata::{
    ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use parquet::file::reader::{ChunkReader, Length};

use super::{Sliced, Source, Window, io};
use crate::convert::{ConvertOptions, Input};
use crate::core::Limits;
use crate::dataset::Error;

mod delta;

/// Decoded bytes a run of records is cut to, when its row group can be
/// cut (the columns' uncompressed sizes say how many records that is).
const PART_BYTES: u64 = 16 << 20;

/// A file read by positioned reads, through `&self`: any number of
/// readers on any threads at once (the readers of a `File`'s clones share
/// one cursor). Every read is checked against the file's length and the
/// caller's cap on one allocation.
#[derive(Clone)]
pub(super) struct Positioned {
    src: crate::core::Source,
    limits: Limits,
}

impl Length for Positioned {
    fn len(&self) -> u64 {
        self.src.len()
    }
}

/// Reads a [`Positioned`] file forward from an offset.
pub(super) struct At {
    src: crate::core::Source,
    offset: u64,
}

impl std::io::Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.src.len().saturating_sub(self.offset);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let Some(buf @ [_, ..]) = buf.get_mut(..n) else {
            return Ok(0);
        };
        self.src
            .read_at(self.offset, buf)
            .map_err(std::io::Error::other)?;
        self.offset += n as u64;
        Ok(n)
    }
}

impl ChunkReader for Positioned {
    type T = BufReader<At>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BufReader::new(At {
            src: self.src.clone(),
            offset: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let v = self
            .src
            .read_vec(start, length as u64, &self.limits)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(Bytes::from(v))
    }
}

/// `rows` records of the file from its record `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Part {
    start: u64,
    rows: u64,
}

/// The runs of records to read, in order, covering the selected range.
pub(super) struct Parts {
    /// Records per run when the file can be read in runs: a whole number
    /// of batches, so that the batches are cut where one reader of the
    /// whole range cuts them.
    part_rows: u64,
    /// Whether a reader can start in the middle of a row group cheaply.
    pub(super) split: bool,
    /// The next record to hand out, and the end of the selected records.
    next: u64,
    end: u64,
    /// The first record of each row group (as [`group_starts`]).
    starts: Vec<u64>,
    /// Batches end every `batch` records from record `base`.
    base: u64,
    batch: u64,
}

impl Parts {
    /// The next run: when the file can be read in runs about `part_rows`
    /// records, else all that are left. A run whose end would fall within
    /// half a run of a row group's start ends at the first batch boundary
    /// from that start instead, so that the next run starts at most a
    /// batch into a row group: its reader steps over those few records
    /// itself, without the offset index (and without checking the index
    /// against the pages of lists, [`ListCheck`]).
    pub(super) fn next_part(&mut self) -> Option<Result<Part, Error>> {
        if self.next >= self.end {
            return None;
        }
        let mut rows = self.end - self.next;
        if self.split {
            rows = rows.min(self.near_group(self.next.saturating_add(self.part_rows)) - self.next);
        }
        let part = Part {
            start: self.next,
            rows,
        };
        self.next += rows;
        Some(Ok(part))
    }

    /// `end`, or the first batch boundary from the row group start nearest
    /// to it when that start lies within half a run of it (after the next
    /// record to hand out).
    fn near_group(&self, end: u64) -> u64 {
        let near = self.part_rows / 2;
        let at = self.starts.partition_point(|&s| s <= end);
        let candidates = [at.checked_sub(1), Some(at)];
        let start = candidates
            .into_iter()
            .flatten()
            .filter_map(|k| self.starts.get(k).copied())
            .filter(|&s| s > self.next && s.abs_diff(end) <= near)
            .min_by_key(|&s| s.abs_diff(end));
        let Some(start) = start else { return end };
        let into = (start - self.base.min(start)) % self.batch.max(1);
        let grid = match into {
            0 => start,
            _ => start.saturating_add(self.batch - into),
        };
        grid.max(self.next + 1)
    }
}

/// Records in a run of about `part_bytes` of the columns read decoded, by
/// `sizes`: a whole number of batches of `batch` records. A run is
/// decoded whole before it is handed on, so what its records decode to
/// counts, not their pages: those may hold far fewer bytes than their
/// values (a dictionary of a few values, runs of one value); sized by its
/// pages alone, a run of such a column was the whole file, all of it in
/// memory at once (1 GB of dictionary-encoded 64-byte values: 232 MB
/// resident on two threads, 14 MB on one). Where the metadata cannot say
/// what some column decodes to ([`Sizes::open_ended`]), a run holds at most
/// `part_bytes / BATCH_BYTES` batches. Runs of whole pages matter too:
/// each run decompresses every page it reads a record of, so runs of far
/// fewer records than a page decompressed its pages again and again (5
/// million dictionary-encoded 20-byte strings in runs of 16 batches of
/// 4,096: 1.0 s, most of it decompressing the same pages).
fn run_rows(part_bytes: u64, sizes: &Sizes, batch: u64) -> u64 {
    let batch = batch.max(1);
    let per_row = sizes.per_row().max(sizes.widest);
    let batches = (part_bytes / per_row.saturating_mul(batch)).max(1);
    let batches = match sizes.open_ended {
        true => batches.min((part_bytes / crate::convert::BATCH_BYTES).max(1)),
        false => batches,
    };
    batches.saturating_mul(batch)
}

/// What the leaf columns read take, by the row groups' metadata: the
/// bytes of their pages (or of their values, where those are more) and
/// the records of the groups, for the size of a run; and the most a
/// record of any selected group decodes to, for the size of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sizes {
    /// Every group's [`chunk_bytes`], summed.
    bytes: u64,
    /// Every group's records.
    rows: u64,
    /// The most bytes a record of a selected group's columns decodes to
    /// at least ([`decoded_bytes`] over its records, rounded up): pages
    /// can hold far fewer bytes than their values decode to (a dictionary
    /// of a few values, runs of one value).
    widest: u64,
    /// Whether a selected column chunk of byte arrays may decode to far
    /// more than its pages and [`decoded_bytes`] say: without its values'
    /// bytes in its metadata, with a dictionary that could not be read.
    /// (Byte arrays stored as differences from the value before, whose
    /// bytes can repeat most of the one before in a few bits, have their
    /// pages walked instead: [`delta::walk_chunk`].)
    open_ended: bool,
}

impl Sizes {
    /// Bytes of pages (or values) a record, over the whole file.
    fn per_row(&self) -> u64 {
        self.bytes.checked_div(self.rows).unwrap_or(0).max(1)
    }
}

/// The [`Sizes`] of the leaf columns `leaves` of `md` (read from the
/// file at `path`), the widest record of the groups (starting at
/// `starts`) holding records of `range`. A column chunk of byte arrays
/// with a dictionary whose metadata does not give its values' bytes has
/// its dictionary read first ([`longest_in_dictionary`]): its pages say
/// nothing of what a record decodes to, and a few long values repeated
/// would make batches of thousands of them (a 116 KB file of four
/// 100,000-byte values: 1.6 GB resident). A column chunk of byte arrays
/// stored as lengths or as differences has its pages walked
/// ([`delta::walk_chunk`]): their counts checked before the decoder
/// allocates by them (an error naming the page when one counts more than
/// its values), and what they decode to added up where the metadata does
/// not give it.
fn sizes(
    input: &Positioned,
    md: &ParquetMetaData,
    leaves: &[usize],
    starts: &[u64],
    range: std::ops::Range<u64>,
    path: &Path,
    threads: usize,
) -> Result<Sizes, Error> {
    let mut sizes = Sizes {
        bytes: 0,
        rows: 0,
        widest: 0,
        open_ended: false,
    };
    let walked = walk_all(input, md, leaves, starts, range.clone(), path, threads)?;
    for (k, g) in md.row_groups().iter().enumerate() {
        let rows = u64::try_from(g.num_rows()).unwrap_or(0);
        sizes.bytes = sizes.bytes.saturating_add(chunk_bytes(g, leaves));
        sizes.rows = sizes.rows.saturating_add(rows);
        let selected = holds(starts, k, rows, &range);
        if !selected || rows == 0 {
            continue;
        }
        let mut decoded = 0u64;
        for (c, col) in leaves
            .iter()
            .filter_map(|&c| Some((c, g.columns().get(c)?)))
        {
            let longest = match dictionary_unsized(col) {
                true => {
                    let longest = longest_in_dictionary(input, col, rows);
                    sizes.open_ended |= longest.is_none();
                    longest
                }
                false => None,
            };
            let walked = walked.get(&(k, c)).copied();
            decoded = decoded.saturating_add(decoded_bytes(col, rows, longest, walked));
        }
        sizes.widest = sizes.widest.max(decoded.div_ceil(rows));
    }
    Ok(sizes)
}

/// What the column chunks of the leaf columns `leaves` of `md` that store
/// byte arrays as lengths or differences decode to, by row group and leaf
/// column, in the row groups (starting at `starts`) holding records of
/// `range`: chunks whose metadata lists those encodings
/// ([`delta::stored_as_differences`]), or whose page headers say them
/// ([`delta::pages_store_differences`]: the metadata need not list what
/// the decoder follows), have their pages walked ([`delta::walk_chunk`]),
/// on up to `threads` threads (one for a few megabytes). A page that
/// cannot be decoded is an error naming its row group, column and page.
fn walk_all(
    input: &Positioned,
    md: &ParquetMetaData,
    leaves: &[usize],
    starts: &[u64],
    range: std::ops::Range<u64>,
    path: &Path,
    threads: usize,
) -> Result<std::collections::HashMap<(usize, usize), u64>, Error> {
    let descr = md.file_metadata().schema_descr();
    let mut chunks = Vec::new();
    for (k, g) in md.row_groups().iter().enumerate() {
        let rows = u64::try_from(g.num_rows()).unwrap_or(0);
        let selected = holds(starts, k, rows, &range);
        if !selected || rows == 0 {
            continue;
        }
        for (c, col) in leaves
            .iter()
            .filter_map(|&c| Some((c, g.columns().get(c)?)))
        {
            use parquet::basic::Type;
            let arrays = matches!(
                col.column_type(),
                Type::BYTE_ARRAY | Type::FIXED_LEN_BYTE_ARRAY
            );
            if arrays && c < descr.num_columns() {
                chunks.push((k, c, col, usize::try_from(rows).unwrap_or(usize::MAX)));
            }
        }
    }
    let bytes = chunks.iter().fold(0u64, |sum, (_, _, col, _)| {
        sum.saturating_add(u64::try_from(col.uncompressed_size()).unwrap_or(0))
    });
    let threads = crate::core::parallel::threads_for(bytes, threads).min(chunks.len().max(1));
    let mut next = chunks.iter();
    let mut walked = std::collections::HashMap::new();
    crate::core::parallel::ordered(
        threads,
        || Ok::<_, Error>(next.next()),
        |&(k, c, col, rows)| {
            // The pages' encodings, where the metadata lists neither.
            let walk =
                delta::stored_as_differences(col) || delta::pages_store_differences(input, col);
            if !walk {
                return Ok(None);
            }
            let leaf = descr.column(c);
            let (def, rep) = (leaf.max_def_level(), leaf.max_rep_level());
            // What the values decode to only where the metadata does not say.
            let decode = col.unencoded_byte_array_data_bytes().is_none();
            delta::walk_chunk(input, col, rows, def, rep, decode)
                .map_err(|bad| Error::Data {
                    format: None,
                    message: format!(
                        "{}: row group {k}, column {c} ({}), data page {}: {}",
                        path.display(),
                        col.column_path(),
                        bad.page,
                        bad.why
                    ),
                })
                .map(|bytes| Some(((k, c), bytes)))
        },
        |bytes| {
            walked.extend(bytes?);
            Ok(())
        },
    )?;
    Ok(walked)
}

/// Whether row group `k` (of `rows` records, the groups starting at
/// `starts`) holds records of `range`.
fn holds(starts: &[u64], k: usize, rows: u64, range: &std::ops::Range<u64>) -> bool {
    let first = starts.get(k).copied().unwrap_or(0);
    first < range.end && first.saturating_add(rows) > range.start
}

/// The bytes of the leaf columns `leaves` in row group `g`: each column
/// chunk's uncompressed pages, or the bytes of its byte arrays' values
/// when its metadata gives them and they are more (values a dictionary
/// or runs of one value store in far fewer bytes). A value lies in the
/// pages, so no record's can be longer than they are: a claim beyond that
/// counts as that.
fn chunk_bytes(g: &RowGroupMetaData, leaves: &[usize]) -> u64 {
    let rows = u64::try_from(g.num_rows()).unwrap_or(0);
    leaves
        .iter()
        .filter_map(|&c| g.columns().get(c))
        .fold(0u64, |sum, c| {
            let pages = u64::try_from(c.uncompressed_size()).unwrap_or(0);
            sum.saturating_add(pages.max(value_bytes(c, rows)))
        })
}

/// The bytes of column chunk `c`'s byte arrays' values, when its
/// metadata gives them, at most its pages' bytes for each of its `rows`
/// records; else 0.
fn value_bytes(c: &ColumnChunkMetaData, rows: u64) -> u64 {
    let pages = u64::try_from(c.uncompressed_size()).unwrap_or(0);
    c.unencoded_byte_array_data_bytes()
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(0)
        .min(pages.saturating_mul(rows))
}

/// Whether column chunk `c` holds byte arrays through a dictionary and
/// its metadata does not give the bytes of their values.
fn dictionary_unsized(c: &ColumnChunkMetaData) -> bool {
    use parquet::basic::{Encoding, Type};
    let dictionary = c.dictionary_page_offset().is_some()
        || c.encodings()
            .any(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY));
    c.column_type() == Type::BYTE_ARRAY
        && dictionary
        && c.unencoded_byte_array_data_bytes().is_none()
}

/// What column chunk `c` (of a row group of `rows` records) decodes to at
/// least: each value's width (a bit for a boolean, an offset of 4 bytes
/// for a byte array), and a byte array's bytes: as its metadata gives
/// them, or, with `longest` (the longest value of its dictionary), that
/// many for each value, or, with `walked`, what its pages were found to
/// decode to ([`delta::walk_chunk`]), whichever is most.
fn decoded_bytes(
    c: &ColumnChunkMetaData,
    rows: u64,
    longest: Option<u64>,
    walked: Option<u64>,
) -> u64 {
    use parquet::basic::Type;
    let values = u64::try_from(c.num_values()).unwrap_or(0);
    let width = match c.column_type() {
        Type::BOOLEAN => 0,
        Type::INT32 | Type::FLOAT | Type::BYTE_ARRAY => 4,
        Type::INT64 | Type::DOUBLE => 8,
        Type::INT96 => 12,
        Type::FIXED_LEN_BYTE_ARRAY => u64::try_from(c.column_descr().type_length()).unwrap_or(0),
    };
    let bits = match c.column_type() {
        Type::BOOLEAN => values.div_ceil(8),
        _ => 0,
    };
    let each = width.saturating_add(longest.unwrap_or(0));
    each.saturating_mul(values)
        .saturating_add(value_bytes(c, rows).max(walked.unwrap_or(0)))
        .saturating_add(bits)
}

/// The longest value in the dictionary page of column chunk `c` (of byte
/// arrays, in a row group of `rows` records): the page read and its
/// values' lengths walked. A dictionary whose values cannot be walked
/// counts as one value of its whole page; `None` when the chunk's first
/// page is not a dictionary or cannot be read (its reader says why).
fn longest_in_dictionary(input: &Positioned, c: &ColumnChunkMetaData, rows: u64) -> Option<u64> {
    use parquet::basic::Encoding;
    use parquet::column::page::{Page, PageReader};
    let rows = usize::try_from(rows).ok()?;
    let mut pages = parquet::file::serialized_reader::SerializedPageReader::new(
        Arc::new(input.clone()),
        c,
        rows,
        None,
    )
    .ok()?;
    let Ok(Some(Page::DictionaryPage {
        buf,
        num_values,
        encoding,
        ..
    })) = pages.get_next_page()
    else {
        return None;
    };
    let whole = u64::try_from(buf.len()).unwrap_or(u64::MAX);
    let plain = matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY);
    Some(
        plain
            .then(|| longest_plain(&buf, num_values))
            .flatten()
            .unwrap_or(whole),
    )
}

/// The longest of the `count` byte arrays of a plain-encoded page
/// (`page`: a 4-byte little-endian length before each value); `None` when
/// they do not fit in it.
fn longest_plain(page: &[u8], count: u32) -> Option<u64> {
    let mut rest = page;
    let mut longest = 0u32;
    for _ in 0..count {
        let (len, after) = rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len);
        rest = after.get(usize::try_from(len).ok()?..)?;
        longest = longest.max(len);
    }
    Some(u64::from(longest))
}

/// The first record of each row group, and after them the file's record
/// count, as the row groups announce them; a negative count or a total
/// past `u64` is an error naming the row group.
fn group_starts(meta: &ParquetMetaData, path: &Path) -> Result<Vec<u64>, Error> {
    let mut starts = Vec::with_capacity(meta.num_row_groups() + 1);
    let mut at = 0u64;
    starts.push(at);
    for (k, g) in meta.row_groups().iter().enumerate() {
        at = u64::try_from(g.num_rows())
            .ok()
            .and_then(|n| at.checked_add(n))
            .ok_or_else(|| Error::Data {
                format: None,
                message: format!(
                    "{}: row group {k} announces {} records, more than a file can hold",
                    path.display(),
                    g.num_rows()
                ),
            })?;
        starts.push(at);
    }
    Ok(starts)
}

/// What every run's reader shares: the file, its metadata, the columns
/// and the batch size. Runs are decoded through `&self`, on any thread.
pub(super) struct Decoder {
    input: Positioned,
    meta: ArrowReaderMetadata,
    mask: ProjectionMask,
    /// [`group_starts`].
    starts: Vec<u64>,
    /// The first selected record: batches end every `batch` records from
    /// it.
    base: u64,
    batch: usize,
    path: String,
    /// Set when columns of lists are read by following the offset index:
    /// their version-1 pages' levels are checked against it before a
    /// piece starts inside a row group.
    lists: Option<ListCheck>,
}

/// The check of an offset index against the records the pages of columns
/// of lists hold. A version-1 page's header says how many levels it holds,
/// not how many records, so an index that misplaces a page by a record or
/// two agrees with the headers; a reader following it would start a run
/// at the wrong record. The first piece that starts more than a batch
/// inside a row group reads the levels of that group's list pages (each
/// page's records counted from its repetition levels); a group whose
/// pages do not hold the records the index says is read without the
/// index (from its start, the records before the piece stepped over by
/// their levels), as is any piece at most a batch into its group.
struct ListCheck {
    /// The leaf columns read that repeat, with their greatest repetition
    /// level.
    leaves: Vec<(usize, i16)>,
    /// Per row group: whether its index agrees with its list pages.
    groups: Vec<std::sync::OnceLock<bool>>,
    /// The metadata without the offset index.
    bare: ArrowReaderMetadata,
}

impl Decoder {
    /// The metadata a piece of row group `group` starting `skip` records
    /// into it is read with: the file's, or the same without the offset
    /// index for a piece at most a batch into its group and for a group
    /// whose list pages disagree with the index (checked here the first
    /// time a piece starts deeper).
    fn meta_for(&self, group: usize, skip: usize) -> &ArrowReaderMetadata {
        let Some(lists) = &self.lists else {
            return &self.meta;
        };
        if skip <= self.batch {
            // Read from the group's start, the few records before the piece
            // (if any) stepped over by their levels.
            return &lists.bare;
        }
        let agrees = lists.groups.get(group).is_some_and(|ok| {
            *ok.get_or_init(|| {
                let what = || format!("row group {group}: the pages of its lists");
                super::caught(&self.path, what, "Parquet reader", || {
                    lists_agree(&self.input, self.meta.metadata(), group, &lists.leaves)
                })
                .unwrap_or(false)
            })
        });
        if agrees { &self.meta } else { &lists.bare }
    }

    /// The row group record `at` lies in (the last one for the end).
    fn group_of(&self, at: u64) -> usize {
        self.starts
            .partition_point(|&s| s <= at)
            .saturating_sub(1)
            .min(self.meta.metadata().num_row_groups().saturating_sub(1))
    }

    /// Whether a batch ends at record `at`: every `batch` records from
    /// the first selected one.
    fn on_grid(&self, at: u64) -> bool {
        (at - self.base).is_multiple_of(self.batch as u64)
    }

    /// The piece of a run that starts at record `at` (before `end`): the
    /// records up to the next batch's start if `at` is not one, else up to
    /// the end of its row group or of the run.
    fn piece(&self, at: u64, end: u64) -> Piece {
        let group = self.group_of(at);
        let group_end = self.starts.get(group + 1).copied().unwrap_or(end);
        let last = group_end.min(end).max(at + 1);
        let into = (at - self.base) % self.batch as u64;
        match into {
            0 => Piece {
                group,
                start: at,
                rows: last - at,
                batch: self.batch,
            },
            _ => {
                let rows = (self.batch as u64 - into).min(last - at);
                Piece {
                    group,
                    start: at,
                    rows,
                    batch: usize::try_from(rows).unwrap_or(usize::MAX),
                }
            }
        }
    }

    /// A reader of `piece`'s records.
    fn reader(&self, piece: Piece) -> Result<ParquetRecordBatchReader, Error> {
        let group_start = self.starts.get(piece.group).copied().unwrap_or(0);
        let too_many = |n: u64| Error::Data {
            format: None,
            message: format!(
                "{}: {n} records from record {} are more than this machine can address",
                self.path, piece.start
            ),
        };
        let skip = piece.start.saturating_sub(group_start);
        let skip = usize::try_from(skip).map_err(|_| too_many(skip))?;
        let rows = usize::try_from(piece.rows).map_err(|_| too_many(piece.rows))?;
        let mut selection = Vec::with_capacity(2);
        if skip > 0 {
            selection.push(RowSelector::skip(skip));
        }
        selection.push(RowSelector::select(rows));
        let what = || format!("row group {}", piece.group);
        super::caught(&self.path, what, "Parquet reader", || {
            Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(
                self.input.clone(),
                self.meta_for(piece.group, skip).clone(),
            )
            .with_row_groups(vec![piece.group])
            .with_projection(self.mask.clone())
            .with_batch_size(piece.batch)
            .with_row_selection(RowSelection::from(selection))
            .build()?)
        })
    }

    /// Every batch of run `part`.
    pub(super) fn decode(self: &Arc<Self>, part: Part) -> Result<Vec<RecordBatch>, Error> {
        RunReader::new(Arc::clone(self), part).collect()
    }

    /// A piece that gave other than the records its row group announced
    /// (the file's metadata and its pages disagree): an error naming the
    /// row group.
    fn short(&self, piece: Piece, read: u64) -> Error {
        let group_start = self.starts.get(piece.group).copied().unwrap_or(0);
        let group_end = self.starts.get(piece.group + 1).copied().unwrap_or(0);
        Error::Data {
            format: None,
            message: format!(
                "{}: row group {} announces {} records, but its pages gave {read} of the {} from its record {}",
                self.path,
                piece.group,
                group_end.saturating_sub(group_start),
                piece.rows,
                piece.start - group_start,
            ),
        }
    }
}

/// `rows` records of row group `group` from record `start` of the file,
/// read by one reader in batches of `batch`.
#[derive(Debug, Clone, Copy)]
struct Piece {
    group: usize,
    start: u64,
    rows: u64,
    batch: usize,
}

/// The batches of a run, read row group by row group (so that a row group
/// whose pages hold fewer records than it announces is found, and the
/// records of one are never taken for another's): each batch ends where
/// one reader of the whole range would end it, one made of two row
/// groups' records joined.
pub(super) struct RunReader {
    d: Arc<Decoder>,
    /// The record the next piece starts at, and the run's end.
    next: u64,
    end: u64,
    /// The piece being read, its reader and the records it gave.
    reader: Option<(Piece, ParquetRecordBatchReader, u64)>,
    /// The records of a batch begun in the row group before.
    carry: Option<RecordBatch>,
}

impl RunReader {
    fn new(d: Arc<Decoder>, part: Part) -> Self {
        RunReader {
            d,
            next: part.start,
            end: part.start + part.rows,
            reader: None,
            carry: None,
        }
    }
}

/// Ends with the first error (after it, the items are not defined; the
/// input's stream ends there).
impl Iterator for RunReader {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((piece, reader, read)) = &mut self.reader {
                let group = piece.group;
                let what = || format!("row group {group}: a page");
                let next = match super::caught(&self.d.path, what, "Parquet decoder", || {
                    Ok(reader.next())
                }) {
                    Ok(next) => next.map(|b| b.map_err(Error::from)),
                    Err(e) => Some(Err(e)),
                };
                match next {
                    Some(Ok(b)) => {
                        *read += b.num_rows() as u64;
                        if *read > piece.rows {
                            return Some(Err(self.d.short(*piece, *read)));
                        }
                        let at = piece.start + *read;
                        let b = match self.carry.take() {
                            Some(c) => {
                                match arrow_select::concat::concat_batches(&c.schema(), [&c, &b]) {
                                    Ok(b) => b,
                                    Err(e) => return Some(Err(e.into())),
                                }
                            }
                            None => b,
                        };
                        if self.d.on_grid(at) || at == self.end {
                            return Some(Ok(b));
                        }
                        self.carry = Some(b);
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => {
                        let (piece, read) = (*piece, *read);
                        if read != piece.rows {
                            return Some(Err(self.d.short(piece, read)));
                        }
                        self.reader = None;
                        self.next = piece.start + piece.rows;
                    }
                }
                continue;
            }
            if self.next >= self.end {
                return self.carry.take().map(Ok);
            }
            let piece = self.d.piece(self.next, self.end);
            match self.d.reader(piece) {
                Ok(r) => self.reader = Some((piece, r, 0)),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// A Parquet file's selected records, as batches: run by run, read in
/// order here or on several threads ([`Parts`] and [`Decoder`]). The runs
/// are the same either way, and so are their batches.
pub(super) struct ParquetInput {
    pub(super) parts: Parts,
    pub(super) decoder: Arc<Decoder>,
    run: Option<RunReader>,
    /// The records not yet handed out, as parts a writer can read side by
    /// side; `None` when runs cannot start inside a row group.
    view: Option<View>,
}

/// The records of a Parquet input not yet handed out, read in parts on
/// any thread ([`crate::dataset::Parts`]): the Parquet writer reads and
/// encodes each part on a thread of its own. A part's batches are cut
/// where the whole stream cuts them (every `batch` records from the first
/// selected one), wherever the part starts.
pub(super) struct View {
    decoder: Arc<Decoder>,
    /// The next record to hand out, and the end of the selected ones.
    at: std::sync::atomic::AtomicU64,
    end: u64,
    /// The columns asked for, by their place in a decoded batch, and the
    /// schema they make.
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl crate::dataset::Parts for View {
    fn range(&self) -> std::ops::Range<u64> {
        self.at.load(std::sync::atomic::Ordering::SeqCst)..self.end
    }

    fn part(&self, rows: std::ops::Range<u64>) -> Box<dyn crate::dataset::BatchStream + Send + '_> {
        let part = Part {
            start: rows.start,
            rows: rows.end.saturating_sub(rows.start),
        };
        Box::new(ViewPart {
            view: self,
            run: Some(RunReader::new(Arc::clone(&self.decoder), part)),
        })
    }
}

/// One part of a [`View`].
struct ViewPart<'a> {
    view: &'a View,
    /// `None` once the part has ended with an error.
    run: Option<RunReader>,
}

impl crate::dataset::BatchStream for ViewPart<'_> {
    fn schema(&self) -> SchemaRef {
        self.view.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        let b = self.run.as_mut()?.next()?;
        if b.is_err() {
            self.run = None;
        }
        Some(b.and_then(|b| {
            Ok(b.project(&self.view.columns)?
                .with_schema(self.view.schema.clone())?)
        }))
    }
}

impl ParquetInput {
    /// True when no run has been started here: the rest of the file can
    /// go to other threads.
    pub(super) fn untouched(&self) -> bool {
        self.run.is_none()
    }

    /// The records not yet handed out, as parts, when the file can be
    /// read so.
    pub(super) fn view(&self) -> Option<&View> {
        self.view.as_ref()
    }
}

/// Ends with the first error (the stream it feeds stops there).
impl Iterator for ParquetInput {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(run) = &mut self.run {
                match run.next() {
                    Some(b) => {
                        if let (Ok(b), Some(v)) = (&b, &self.view) {
                            v.at.fetch_add(
                                b.num_rows() as u64,
                                std::sync::atomic::Ordering::SeqCst,
                            );
                        }
                        return Some(b);
                    }
                    None => self.run = None,
                }
            }
            let part = match self.parts.next_part()? {
                Ok(p) => p,
                Err(e) => return Some(Err(e)),
            };
            self.run = Some(RunReader::new(Arc::clone(&self.decoder), part));
        }
    }
}

/// Records per batch of a Parquet file: [`ConvertOptions::batch_records`],
/// but for records without a fixed width (when the batch size is left to
/// the library) as many as fill [`crate::convert::BATCH_BYTES`] by the
/// bytes per record of the columns read: over the whole file by their
/// pages, and in each selected row group by what its records decode to at
/// least ([`Sizes::widest`]), whichever is more. A file of images gives
/// batches of a few megabytes, not of 4,096 images, and so does a file
/// whose images are a few, repeated through a dictionary.
fn batch_records(sizes: &Sizes, schema: &arrow_schema::Schema, opts: &ConvertOptions) -> u64 {
    let records = opts.batch_records(schema);
    if opts.batch_size > 0 || crate::convert::record_width(schema).is_some() {
        return records;
    }
    let per_row = sizes.per_row().max(sizes.widest);
    (crate::convert::BATCH_BYTES / per_row).clamp(1, records)
}

/// `md` (read from a file of `len` bytes) checked before any reader
/// trusts it: every column chunk's bytes lie inside the file (else an
/// error naming the row group and column), and the offset index, which
/// readers follow without checking, is dropped unless every page it
/// locates lies inside its column chunk, after the one before, and starts
/// at a record after the one before (the pages are then read as if the
/// file had none).
fn checked(md: ParquetMetaData, len: u64, path: &Path) -> Result<ParquetMetaData, Error> {
    for (k, g) in md.row_groups().iter().enumerate() {
        for (c, col) in g.columns().iter().enumerate() {
            if chunk_range(col).is_none_or(|r| r.end > len) {
                return Err(Error::Data {
                    format: None,
                    message: format!(
                        "{}: row group {k}, column {c} ({}): its {} bytes at offset {} lie outside the file of {len} bytes",
                        path.display(),
                        col.column_path(),
                        col.compressed_size(),
                        col.dictionary_page_offset()
                            .unwrap_or(col.data_page_offset()),
                    ),
                });
            }
        }
    }
    let sound = md.offset_index().is_none_or(|index| {
        index.len() == md.num_row_groups()
            && index.iter().zip(md.row_groups()).all(|(cols, g)| {
                cols.iter()
                    .zip(g.columns())
                    .all(|(o, col)| pages_sound(o.page_locations(), chunk_range(col), g.num_rows()))
            })
    });
    if sound {
        return Ok(md);
    }
    Ok(md.into_builder().set_offset_index(None).build())
}

/// The bytes of column chunk `col` in the file; `None` when negative or
/// past `u64`.
fn chunk_range(col: &ColumnChunkMetaData) -> Option<std::ops::Range<u64>> {
    let start = u64::try_from(
        col.dictionary_page_offset()
            .unwrap_or(col.data_page_offset()),
    )
    .ok()?;
    let len = u64::try_from(col.compressed_size()).ok()?;
    Some(start..start.checked_add(len)?)
}

/// Whether the page locations `pages` of a column chunk at `chunk` of a
/// row group of `rows` records can be followed: each page inside the
/// chunk and after the one before, the first at record 0, each starting
/// at a later record than the one before and before the end.
fn pages_sound(
    pages: &[parquet::file::page_index::offset_index::PageLocation],
    chunk: Option<std::ops::Range<u64>>,
    rows: i64,
) -> bool {
    let Some(chunk) = chunk else { return false };
    if pages.first().is_none_or(|p| p.first_row_index != 0) {
        return false;
    }
    let mut byte = chunk.start;
    let mut row = -1i64;
    pages.iter().all(|p| {
        let (Ok(at), Ok(size)) = (
            u64::try_from(p.offset),
            u64::try_from(p.compressed_page_size),
        ) else {
            return false;
        };
        let ok = size > 0
            && at >= byte
            && at.checked_add(size).is_some_and(|end| end <= chunk.end)
            && p.first_row_index > row
            && p.first_row_index < rows;
        byte = at.saturating_add(size);
        row = p.first_row_index;
        ok
    })
}

/// Whether the offset index of `md` agrees with the page headers of the
/// leaf columns `leaves` (read, not decompressed): as many data pages,
/// each holding the records the index says it starts (a version-2 page
/// says how many; a version-1 page holds one level per record of a
/// column that does not repeat, and at least one per record of one that
/// does). Runs follow the index to where they start; a file whose index
/// disagrees is read as if it had none.
fn index_agrees(input: &Positioned, md: &ParquetMetaData, leaves: &[usize]) -> Result<bool, Error> {
    if md.offset_index().is_none() {
        return Ok(true);
    }
    let descr = md.file_metadata().schema_descr();
    let leaves: Vec<(usize, i16)> = leaves
        .iter()
        .map(|&c| {
            let rep = (c < descr.num_columns()).then(|| descr.column(c).max_rep_level());
            (c, rep.unwrap_or(0))
        })
        .collect();
    for group in 0..md.num_row_groups() {
        if !pages_agree(input, md, group, &leaves, false)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether the version-1 data pages of the repeated leaf columns `leaves`
/// (each with its greatest repetition level) in row group `group` hold
/// the records the offset index of `md` says: each page's repetition
/// levels read, the page starting a record (level 0) and holding as many
/// as the index gives it. Version-2 pages say how many records they hold
/// in their headers ([`index_agrees`] compared those).
fn lists_agree(
    input: &Positioned,
    md: &ParquetMetaData,
    group: usize,
    leaves: &[(usize, i16)],
) -> Result<bool, Error> {
    pages_agree(input, md, group, leaves, true)
}

/// Whether the pages of the leaf columns `leaves` (each with its greatest
/// repetition level) in row group `group` are where and as many as the
/// offset index of `md` says, each holding the records the index gives
/// it: by its header (a version-2 page's record count; a version-1 page's
/// level count, one per record where the column does not repeat, at least
/// one where it does) or, with `levels`, for a version-1 page of a column
/// that repeats, by its repetition levels ([`records_in_levels`]).
fn pages_agree(
    input: &Positioned,
    md: &ParquetMetaData,
    group: usize,
    leaves: &[(usize, i16)],
    levels: bool,
) -> Result<bool, Error> {
    use parquet::basic::{Compression, Encoding};
    use parquet::column::page::{Page, PageReader};
    let (Some(index), Some(g)) = (md.offset_index(), md.row_groups().get(group)) else {
        return Ok(false);
    };
    let Some(cols) = index.get(group) else {
        return Ok(false);
    };
    let rows = usize::try_from(g.num_rows()).unwrap_or(0);
    let reader = Arc::new(input.clone());
    for &(c, max_rep) in leaves {
        let (Some(o), Some(col)) = (cols.get(c), g.columns().get(c)) else {
            return Ok(false);
        };
        let repeats = max_rep > 0;
        let locations = o.page_locations();
        // Zstandard pages whose levels are counted are read as stored and
        // only their first bytes (the levels) decompressed.
        let prefix = levels && repeats && matches!(col.compression(), Compression::ZSTD(_));
        let stored;
        let col = match prefix {
            true => {
                stored = col
                    .clone()
                    .into_builder()
                    .set_compression(Compression::UNCOMPRESSED)
                    .build()?;
                &stored
            }
            false => col,
        };
        let mut pages = parquet::file::serialized_reader::SerializedPageReader::new(
            reader.clone(),
            col,
            rows,
            None,
        )?;
        let mut k = 0;
        while let Some(page) = pages.peek_next_page()? {
            if page.is_dict {
                pages.skip_next_page()?;
                continue;
            }
            let Some(at) = locations.get(k) else {
                return Ok(false);
            };
            let next = locations
                .get(k + 1)
                .map_or(g.num_rows(), |n| n.first_row_index);
            let want = usize::try_from(next.saturating_sub(at.first_row_index)).unwrap_or(0);
            let agrees = match (page.num_rows, page.num_levels) {
                (Some(r), _) => r == want,
                (None, Some(_)) if repeats && levels => match pages.get_next_page()? {
                    Some(Page::DataPage {
                        buf,
                        num_values,
                        rep_level_encoding: Encoding::RLE,
                        ..
                    }) => {
                        // A decompressed page is read where it is.
                        let levels = match prefix {
                            true => zstd_levels(&buf, num_values).map(std::borrow::Cow::Owned),
                            false => Some(std::borrow::Cow::Borrowed(&buf[..])),
                        };
                        levels.and_then(|l| records_in_levels(&l, num_values, max_rep))
                            == Some(want as u64)
                    }
                    _ => false,
                },
                (None, Some(l)) if repeats => l >= want,
                (None, Some(l)) => l == want,
                (None, None) => false,
            };
            if !agrees {
                return Ok(false);
            }
            if !(repeats && levels && page.num_rows.is_none()) {
                pages.skip_next_page()?;
            }
            k += 1;
        }
        if k != locations.len() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The repetition levels at the start of a version-1 page of `count`
/// values compressed with Zstandard (`page`, as stored): the 4-byte length
/// and the levels after it, decompressed alone (the values after them are
/// not). `None` when they do not decompress or say they are longer than
/// `count` levels can be (a run header and two bytes of value each).
fn zstd_levels(page: &[u8], count: u32) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut d = zstd::stream::read::Decoder::with_buffer(page).ok()?;
    let mut len = [0u8; 4];
    d.read_exact(&mut len).ok()?;
    let n = usize::try_from(u32::from_le_bytes(len)).ok()?;
    let most = usize::try_from(count)
        .ok()?
        .saturating_mul(3)
        .saturating_add(16);
    if n > most {
        return None;
    }
    let mut out = vec![0u8; 4 + n];
    out.get_mut(..4)?.copy_from_slice(&len);
    d.read_exact(out.get_mut(4..)?).ok()?;
    Some(out)
}

/// The records a version-1 data page holds, from `levels`, the page's
/// decompressed body starting with its repetition levels: a 4-byte
/// length, then `count` levels of `max_rep`'s bit width as runs of the
/// RLE/bit-packing hybrid (a varint header; its low bit set: groups of
/// eight values bit-packed, else one value repeated). A record starts at
/// each level 0. `None` unless the levels decode, the first is 0 and
/// `count` is not 0.
fn records_in_levels(levels: &[u8], count: u32, max_rep: i16) -> Option<u64> {
    let width = 16 - u16::try_from(max_rep).ok()?.leading_zeros();
    if width == 0 || count == 0 {
        return None;
    }
    let len = u32::from_le_bytes(levels.get(..4)?.try_into().ok()?);
    let mut data = levels.get(4..4 + usize::try_from(len).ok()?)?;
    let mut left = u64::from(count);
    let (mut records, mut first) = (0u64, true);
    while left > 0 {
        let mut header = 0u64;
        let mut shift = 0;
        loop {
            let (&b, rest) = data.split_first()?;
            data = rest;
            header |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
        let n = header >> 1;
        if header & 1 == 1 {
            // `n` groups of eight values, `width` bits each, the first
            // value in the lowest bits.
            let bytes = usize::try_from(n.checked_mul(u64::from(width))?).ok()?;
            let packed = data.get(..bytes)?;
            data = data.get(bytes..)?;
            let take = left.min(n * 8);
            // The first level's bits (the loop below checks wider ones).
            let low = (1u16 << width.min(8)) - 1;
            if first && width <= 8 && u16::from(*packed.first()?) & low != 0 {
                return None;
            }
            if width == 1 {
                // One bit per level (lists not nested): the zero bits.
                let whole = usize::try_from(take / 8).ok()?;
                let ones: u64 = packed
                    .get(..whole)?
                    .iter()
                    .map(|b| u64::from(b.count_ones()))
                    .sum();
                let rest = u8::try_from(take % 8).ok()?;
                let tail = match rest {
                    0 => 0,
                    r => u64::from((packed.get(whole)? & ((1u8 << r) - 1)).count_ones()),
                };
                records += take - ones - tail;
            } else {
                for i in 0..take {
                    let bit = i * u64::from(width);
                    let mut v = 0u32;
                    for j in 0..u64::from(width) {
                        let at = usize::try_from((bit + j) / 8).ok()?;
                        v |= u32::from(packed.get(at)? >> ((bit + j) % 8) & 1) << j;
                    }
                    if first && v != 0 {
                        return None;
                    }
                    first = false;
                    records += u64::from(v == 0);
                }
            }
            first = false;
            left -= take;
        } else {
            if n == 0 {
                return None;
            }
            let bytes = usize::try_from(width.div_ceil(8)).ok()?;
            let mut v = 0u32;
            for (j, &b) in data.get(..bytes)?.iter().enumerate() {
                v |= u32::from(b) << (8 * j);
            }
            data = data.get(bytes..)?;
            if first && v != 0 {
                return None;
            }
            first = false;
            let take = left.min(n);
            if v == 0 {
                records += take;
            }
            left -= take;
        }
    }
    Some(records)
}

/// Opens the Parquet file `path` as typed batches.
pub(super) fn open(path: &Path, opts: &ConvertOptions) -> Result<Input, Error> {
    open_in_runs(path, opts, PART_BYTES)
}

/// Whether a reader can start in the middle of a row group of `md` cheaply
/// for the leaf columns `leaves`: the offset index locates every page of
/// theirs, or none of them repeats.
fn runs_possible(md: &ParquetMetaData, leaves: &[usize]) -> bool {
    let descr = md.file_metadata().schema_descr();
    let repeats = leaves
        .iter()
        .any(|&c| c < descr.num_columns() && descr.column(c).max_rep_level() > 0);
    let indexed = md.offset_index().is_some_and(|index| {
        index.len() == md.num_row_groups()
            && index.iter().all(|g| {
                leaves
                    .iter()
                    .all(|&c| g.get(c).is_some_and(|o| !o.page_locations().is_empty()))
            })
    });
    indexed || !repeats
}

/// [`open`], in runs of about `part_bytes` of the columns read.
pub(super) fn open_in_runs(
    path: &Path,
    opts: &ConvertOptions,
    part_bytes: u64,
) -> Result<Input, Error> {
    open_guarded(path, opts, part_bytes, true)
}

/// [`open_unguarded`], its panics caught. Without `index`, the file is
/// read as if it had no offset index: what a reader following the index
/// must give too (the fuzz target compares them).
pub(super) fn open_guarded(
    path: &Path,
    opts: &ConvertOptions,
    part_bytes: u64,
    index: bool,
) -> Result<Input, Error> {
    let name = path.display().to_string();
    let what = || "the file's footer".to_string();
    super::caught(&name, what, "Parquet reader", || {
        open_unguarded(path, opts, part_bytes, index)
    })
}

/// [`open_in_runs`], following the file's offset index where it has a
/// usable one if `index`; panics not caught.
fn open_unguarded(
    path: &Path,
    opts: &ConvertOptions,
    part_bytes: u64,
    index: bool,
) -> Result<Input, Error> {
    // Positioned reads: each page is copied once, into the buffer its
    // reader decompresses from (a mapping was no faster, and its pages
    // count as the process's memory).
    let file = std::fs::File::open(path).map_err(io(path))?;
    let src =
        crate::core::Source::from_file(file).map_err(|e| io(path)(std::io::Error::other(e)))?;
    let input = Positioned {
        src,
        limits: opts.open.limits,
    };
    // The offset index, when the file has one, lets a reader start in
    // the middle of a row group without reading the pages before.
    let policy = match index {
        true => PageIndexPolicy::Optional,
        false => PageIndexPolicy::Skip,
    };
    let md = ParquetMetaDataReader::new()
        .with_offset_index_policy(policy)
        .parse_and_finish(&input)?;
    let md = checked(md, input.len(), path)?;
    let meta = ArrowReaderMetadata::try_new(Arc::new(md), ArrowReaderOptions::new())?;
    let file_meta = meta.metadata().file_metadata();
    let mut schema = meta.schema().clone();
    if schema.metadata().contains_key(crate::export::NUM_ROWS_KEY) {
        let mut s = schema.as_ref().clone();
        s.metadata.remove(crate::export::NUM_ROWS_KEY);
        schema = Arc::new(s);
    }
    if schema.fields().is_empty() {
        return without_columns(path, &meta, schema, opts);
    }
    let columns = opts.column_indices(&schema, path)?;
    let projected = Arc::new(schema.project(&columns)?);
    // The reader gives the columns read in the file's order, each once.
    let mut roots = columns.clone();
    roots.sort_unstable();
    roots.dedup();
    let local = columns
        .iter()
        .map(|c| roots.binary_search(c).unwrap_or_default())
        .collect();
    let descr = file_meta.schema_descr();
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&c| roots.binary_search(&descr.get_column_root_idx(c)).is_ok())
        .collect();
    let mask = ProjectionMask::roots(descr, roots.iter().copied());
    let mut meta = meta;
    if !index_agrees(&input, meta.metadata(), &leaves)? {
        let bare = (**meta.metadata())
            .clone()
            .into_builder()
            .set_offset_index(None)
            .build();
        meta = ArrowReaderMetadata::try_new(Arc::new(bare), ArrowReaderOptions::new())?;
    }
    let md = meta.metadata().clone();
    let descr = md.file_metadata().schema_descr();
    let repeat: Vec<(usize, i16)> = leaves
        .iter()
        .filter(|&&c| c < descr.num_columns())
        .map(|&c| (c, descr.column(c).max_rep_level()))
        .filter(|&(_, rep)| rep > 0)
        .collect();
    let lists = match md.offset_index() {
        Some(_) if !repeat.is_empty() => Some(ListCheck {
            leaves: repeat,
            groups: md
                .row_groups()
                .iter()
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            bare: ArrowReaderMetadata::try_new(
                Arc::new((*md).clone().into_builder().set_offset_index(None).build()),
                ArrowReaderOptions::new(),
            )?,
        }),
        _ => None,
    };
    let split = runs_possible(&md, &leaves);
    let starts = group_starts(&md, path)?;
    let rows = starts.last().copied().unwrap_or(0);
    let range = opts.record_range(rows);
    let sizes = sizes(
        &input,
        &md,
        &leaves,
        &starts,
        range.clone(),
        path,
        opts.threads,
    )?;
    let batch = batch_records(&sizes, &projected, opts);
    let total = range.end - range.start;
    let window = Window {
        schema: projected,
        columns: local,
        // The runs hold only the selected records.
        skip: 0,
        left: range.end - range.start,
    };
    let path = path.display().to_string();
    let part_rows = run_rows(part_bytes, &sizes, batch);
    let parts = Parts {
        part_rows,
        split,
        next: range.start,
        end: range.end,
        starts: starts.clone(),
        base: range.start,
        batch,
    };
    let decoder = Decoder {
        input,
        meta,
        mask,
        starts,
        base: range.start,
        batch: usize::try_from(batch).unwrap_or(usize::MAX).max(1),
        path,
        lists,
    };
    let decoder = Arc::new(decoder);
    let view = split.then(|| View {
        decoder: Arc::clone(&decoder),
        at: std::sync::atomic::AtomicU64::new(range.start),
        end: range.end,
        columns: window.columns.clone(),
        schema: window.schema.clone(),
    });
    let runs = Source::Parquet(Box::new(ParquetInput {
        parts,
        decoder,
        run: None,
        view,
    }));
    Ok(Sliced::input("parquet", total, runs, window))
}

/// A file without columns (as the export writes a table of records
/// without fields): only the row count its metadata records says how many
/// records there are.
fn without_columns(
    path: &Path,
    meta: &ArrowReaderMetadata,
    schema: SchemaRef,
    opts: &ConvertOptions,
) -> Result<Input, Error> {
    let file_meta = meta.metadata().file_metadata();
    let rows = file_meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == crate::export::NUM_ROWS_KEY))
        .and_then(|k| k.value.as_deref()?.parse().ok())
        .unwrap_or(u64::try_from(file_meta.num_rows()).unwrap_or(0));
    // A file's number, bounded by the caller's limits.
    opts.open
        .limits
        .check_count("records of a table without columns", rows)
        .map_err(Error::limit)?;
    let batch = opts.batch_records(&schema);
    let s = schema.clone();
    let batches = (0..rows.div_ceil(batch)).map(move |k| {
        let n = (rows - k * batch).min(batch) as usize;
        RecordBatch::try_new_with_options(
            s.clone(),
            vec![],
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
    });
    let columns = opts.column_indices(&schema, path)?;
    let range = opts.record_range(u64::MAX);
    let (skip, left) = (range.start, range.end - range.start);
    let window = Window {
        schema: Arc::new(schema.project(&columns)?),
        columns,
        skip,
        left,
    };
    let records = rows.saturating_sub(skip).min(left);
    Ok(Sliced::input(
        "parquet",
        records,
        Source::Arrow(Box::new(batches)),
        window,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::sync::Arc;

    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder, Int32Builder, ListBuilder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{Field, Schema};
    use parquet::file::metadata::RowGroupMetaData;
    use parquet::file::properties::WriterProperties;

    use crate::convert::ConvertOptions;
    use crate::dataset::Error;

    const ROWS: i64 = 20_000;

    /// Records `0..ROWS` of four columns: a nullable Int64, a list of four
    /// floats, a text and a list of 0 to 4 ints.
    fn table() -> RecordBatch {
        let id = Int64Array::from_iter((0..ROWS).map(|i| (i % 7 != 3).then_some(i)));
        let mut x = FixedSizeListBuilder::new(Float32Builder::new(), 4);
        let mut l = ListBuilder::new(Int32Builder::new());
        for i in 0..ROWS {
            for j in 0..4 {
                x.values().append_value((i * 4 + j) as f32 * 0.25);
            }
            x.append(true);
            for j in 0..(i % 5) {
                l.values().append_value((i + j) as i32);
            }
            l.append(i % 11 != 0);
        }
        let s = StringArray::from_iter_values(
            (0..ROWS).map(|i| format!("v{i}").repeat((i % 13) as usize)),
        );
        let columns: Vec<ArrayRef> = vec![
            Arc::new(id),
            Arc::new(x.finish()),
            Arc::new(s),
            Arc::new(l.finish()),
        ];
        let fields: Vec<Field> = ["id", "x", "s", "l"]
            .iter()
            .zip(&columns)
            .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// `table()` as Parquet: row groups of 6,000 records, pages of 700,
    /// with or without an offset index.
    fn write(path: &std::path::Path, indexed: bool) -> RecordBatch {
        write_compressed(path, indexed, parquet::basic::Compression::UNCOMPRESSED)
    }

    /// [`write`] with pages compressed by `codec`.
    fn write_compressed(
        path: &std::path::Path,
        indexed: bool,
        codec: parquet::basic::Compression,
    ) -> RecordBatch {
        let t = table();
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_max_row_group_row_count(Some(6_000))
            .set_data_page_row_count_limit(700)
            .set_write_batch_size(700)
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Chunk)
            .set_offset_index_disabled(!indexed)
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
        w.write(&t).unwrap();
        w.close().unwrap();
        t
    }

    /// What a reader gave, in order.
    type Read = Vec<Result<RecordBatch, Error>>;

    /// Every batch of `path`'s input read one after the other, and read on
    /// three threads, in runs of about `part_bytes`.
    fn both_ways(path: &std::path::Path, opts: &ConvertOptions, part_bytes: u64) -> (Read, Read) {
        let mut one = super::open_in_runs(path, opts, part_bytes).unwrap();
        let mut serial = Vec::new();
        while let Some(b) = one.stream.next_batch() {
            serial.push(b);
        }
        let mut many = super::open_in_runs(path, opts, part_bytes).unwrap();
        let mut parallel = Vec::new();
        many.stream
            .send_all(3, &crate::core::parallel::Active::new(3), &mut |b| {
                parallel.push(b);
                true
            });
        (serial, parallel)
    }

    fn leaves_of(
        path: &std::path::Path,
        roots: &[usize],
    ) -> (parquet::file::metadata::ParquetMetaData, Vec<usize>) {
        let file = std::fs::File::open(path).unwrap();
        let md = parquet::file::metadata::ParquetMetaDataReader::new()
            .with_offset_index_policy(super::PageIndexPolicy::Optional)
            .parse_and_finish(&file)
            .unwrap();
        let descr = md.file_metadata().schema_descr();
        let leaves = (0..descr.num_columns())
            .filter(|&c| roots.contains(&descr.get_column_root_idx(c)))
            .collect();
        (md, leaves)
    }

    /// Runs are taken where a reader can start inside a row group cheaply:
    /// with an offset index, or without one for columns that do not
    /// repeat; not for lists without one.
    #[test]
    fn runs_only_where_pages_can_be_stepped_over() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.parquet"), dir.path().join("b.parquet"));
        write(&a, true);
        write(&b, false);
        let (md, leaves) = leaves_of(&a, &[0, 1, 2, 3]);
        assert!(super::runs_possible(&md, &leaves));
        let (md, leaves) = leaves_of(&b, &[0, 1, 2, 3]);
        assert!(md.offset_index().is_none());
        assert!(!super::runs_possible(&md, &leaves));
        let (md, leaves) = leaves_of(&b, &[1]);
        assert!(!super::runs_possible(&md, &leaves));
        let (md, leaves) = leaves_of(&b, &[0, 2]);
        assert!(super::runs_possible(&md, &leaves));
    }

    /// Read in runs of one batch (or of a few KiB) on three threads, a
    /// file gives the batches one reader gives: cut every `batch_size`
    /// records from the first selected one across row groups, holding the
    /// records and columns selected.
    #[test]
    fn runs_on_threads_give_the_batches_of_one_reader() {
        let dir = tempfile::tempdir().unwrap();
        let mut cases = 0;
        for indexed in [true, false] {
            let path = dir.path().join(format!("{indexed}.parquet"));
            let t = write(&path, indexed);
            for columns in [None, Some(vec!["s", "id"]), Some(vec!["x", "l"])] {
                for (rows, limit) in [
                    (None, None),
                    (Some(1_234..17_777), None),
                    (Some(5_999..6_001), None),
                    (None, Some(6_500)),
                ] {
                    let opts = ConvertOptions {
                        batch_size: 333,
                        columns: columns
                            .clone()
                            .map(|c| c.iter().map(|n| n.to_string()).collect()),
                        rows: rows.clone(),
                        limit,
                        ..Default::default()
                    };
                    for part_bytes in [1, 3 << 10, 1 << 30] {
                        let (serial, parallel) = both_ways(&path, &opts, part_bytes);
                        let serial: Vec<RecordBatch> =
                            serial.into_iter().map(Result::unwrap).collect();
                        let parallel: Vec<RecordBatch> =
                            parallel.into_iter().map(Result::unwrap).collect();
                        assert_eq!(
                            serial, parallel,
                            "{indexed} {columns:?} {rows:?} {limit:?} {part_bytes}"
                        );
                        // What was selected, in batches of 333.
                        let range = opts.record_range(ROWS as u64);
                        let names = columns.clone().unwrap_or(vec!["id", "x", "s", "l"]);
                        let idx: Vec<usize> = names
                            .iter()
                            .map(|n| t.schema().index_of(n).unwrap())
                            .collect();
                        let want = t
                            .project(&idx)
                            .unwrap()
                            .slice(range.start as usize, (range.end - range.start) as usize);
                        let got =
                            arrow_select::concat::concat_batches(&want.schema(), &serial).unwrap();
                        assert_eq!(got, want);
                        let n = serial.len();
                        assert!(serial[..n - 1].iter().all(|b| b.num_rows() == 333));
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 2 * 3 * 4 * 3);
    }

    /// `bytes` (a Parquet file) with row group `group` changed by `change`:
    /// the footer written again, the pages and page indexes where they
    /// were.
    fn rewrite(
        bytes: &[u8],
        group: usize,
        change: impl FnOnce(RowGroupMetaData) -> RowGroupMetaData,
    ) -> Vec<u8> {
        use parquet::file::metadata::{ParquetMetaDataReader, ParquetMetaDataWriter};
        let whole = bytes::Bytes::copy_from_slice(bytes);
        let md = ParquetMetaDataReader::new()
            .parse_and_finish(&whole)
            .unwrap();
        let mut b = md.into_builder();
        let mut groups = b.take_row_groups();
        groups[group] = change(groups[group].clone());
        let md = b.set_row_groups(groups).build();
        let n = bytes.len();
        let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
        let mut out = bytes[..n - 8 - footer].to_vec();
        ParquetMetaDataWriter::new(&mut out, &md).finish().unwrap();
        out
    }

    /// `bytes` with row group `group` announcing `delta` records more than
    /// it holds.
    fn announce(bytes: &[u8], group: usize, delta: i64) -> Vec<u8> {
        rewrite(bytes, group, |g| {
            let n = g.num_rows();
            g.into_builder().set_num_rows(n + delta).build().unwrap()
        })
    }

    /// A column chunk said to start before the file or to end past it is
    /// refused when the file is opened, naming the row group and column.
    #[test]
    fn column_chunks_outside_the_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        write(&good, true);
        let bytes = std::fs::read(&good).unwrap();
        let len = bytes.len() as i64;
        let cases: [(Option<i64>, i64, i64); 3] =
            [(None, -8, 10), (Some(-1), 4, 10), (None, 4, len)];
        for (dict, data, size) in cases {
            let bad = rewrite(&bytes, 2, |g| {
                let mut cols = g.columns().to_vec();
                cols[1] = cols[1]
                    .clone()
                    .into_builder()
                    .set_dictionary_page_offset(dict)
                    .set_data_page_offset(data)
                    .set_total_compressed_size(size)
                    .build()
                    .unwrap();
                g.into_builder().set_column_metadata(cols).build().unwrap()
            });
            let path = dir.path().join("bad.parquet");
            std::fs::write(&path, bad).unwrap();
            let e = super::open_in_runs(&path, &ConvertOptions::default(), 1 << 20)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("row group 2, column 1") && e.contains("outside the file"),
                "{e}"
            );
        }
    }

    /// A row group that announces more records than its pages hold is an
    /// error naming a row group, on one thread and on three, whatever the
    /// runs; one that announces fewer gives the same records either way.
    #[test]
    fn row_groups_announcing_other_counts_than_their_pages() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        write(&good, true);
        let bytes = std::fs::read(&good).unwrap();
        let opts = ConvertOptions {
            batch_size: 500,
            ..Default::default()
        };
        let more = dir.path().join("more.parquet");
        std::fs::write(&more, announce(&bytes, 1, 10)).unwrap();
        for part_bytes in [1, 3 << 10, 1 << 30] {
            let (serial, parallel) = both_ways(&more, &opts, part_bytes);
            for got in [serial, parallel] {
                let last = got.last().unwrap();
                let e = last.as_ref().unwrap_err().to_string();
                assert!(e.contains("row group"), "{e}");
                assert_eq!(got.iter().filter(|b| b.is_err()).count(), 1);
            }
        }
        let fewer = dir.path().join("fewer.parquet");
        std::fs::write(&fewer, announce(&bytes, 1, -10)).unwrap();
        for part_bytes in [1, 3 << 10, 1 << 30] {
            let (serial, parallel) = both_ways(&fewer, &opts, part_bytes);
            let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
            let parallel: Vec<RecordBatch> = parallel.into_iter().map(Result::unwrap).collect();
            assert_eq!(serial, parallel);
            let rows: usize = serial.iter().map(RecordBatch::num_rows).sum();
            assert_eq!(rows as i64, ROWS - 10);
        }
    }

    /// A file of `t` written with dictionaries (of up to 64 MiB), with or
    /// without the bytes of its byte arrays' values in its metadata
    /// (`sizes`), into `dir`, in row groups of `group` records.
    fn write_dictionary(
        dir: &std::path::Path,
        t: &RecordBatch,
        sizes: bool,
        group: usize,
    ) -> std::path::PathBuf {
        use parquet::file::properties::{EnabledStatistics, WriterProperties};
        let path = dir.join(format!("dict-{sizes}-{group}.parquet"));
        let stats = match sizes {
            true => EnabledStatistics::Chunk,
            false => EnabledStatistics::None,
        };
        let props = WriterProperties::builder()
            .set_statistics_enabled(stats)
            .set_dictionary_page_size_limit(64 << 20)
            .set_max_row_group_row_count(Some(group))
            .build();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
        w.write(t).unwrap();
        w.close().unwrap();
        path
    }

    /// The [`super::Sizes`] of the first `roots` columns of the file at
    /// `path` for all its records, its metadata and leaves.
    fn sizes_of(
        path: &std::path::Path,
        roots: &[usize],
    ) -> (
        super::Sizes,
        parquet::file::metadata::ParquetMetaData,
        Vec<usize>,
    ) {
        let (md, leaves) = leaves_of(path, roots);
        let input = super::Positioned {
            src: crate::core::Source::from_file(std::fs::File::open(path).unwrap()).unwrap(),
            limits: crate::core::Limits::default(),
        };
        let starts = super::group_starts(&md, path).unwrap();
        let all = 0..starts.last().copied().unwrap();
        let sizes = super::sizes(&input, &md, &leaves, &starts, all, path, 0).unwrap();
        (sizes, md, leaves)
    }

    /// A column whose pages hold far fewer bytes than its values (a
    /// dictionary of four 1 KiB values) is read in batches whose decoded
    /// values stay near their size (1 MiB): by the values' bytes where the
    /// column chunks' metadata gives them, else by the longest value of
    /// the dictionary; its runs hold at most 16 batches, never the whole
    /// file; and the runs give the records of one reader.
    #[test]
    fn runs_of_dictionary_pages_stay_near_the_run_size() {
        use arrow_array::{Array, BinaryArray};
        let dir = tempfile::tempdir().unwrap();
        let values: Vec<Vec<u8>> = (0..4u8).map(|v| vec![v; 1024]).collect();
        let rows = 20_000usize;
        let b = BinaryArray::from_iter_values((0..rows).map(|i| &values[i % 4]));
        let t = RecordBatch::try_from_iter([("b", Arc::new(b) as ArrayRef)]).unwrap();
        for sizes in [true, false] {
            let path = write_dictionary(dir.path(), &t, sizes, 1 << 20);
            let (found, _, _) = sizes_of(&path, &[0]);
            let per_row = found.per_row();
            let opts = ConvertOptions::default();
            let batch = super::batch_records(&found, &t.schema(), &opts);
            // A record decodes to its 1 KiB value (and an offset): batches
            // of about 1 MiB.
            assert!(found.widest >= 1024, "{sizes}: {found:?}");
            assert!(
                batch * 1024 <= crate::convert::BATCH_BYTES
                    && 2 * batch * 1024 >= crate::convert::BATCH_BYTES,
                "{sizes}: {batch} records a batch"
            );
            match sizes {
                // The values' bytes, not the pages' (a byte or two a record).
                true => assert!(per_row >= 1024, "{per_row} bytes a record"),
                false => assert!(per_row < 8, "{per_row} bytes a record in the pages"),
            }
            for part_bytes in [1 << 20, 2 << 20, 3 << 20] {
                let run = super::run_rows(part_bytes, &found, batch);
                assert_eq!(run % batch, 0);
                let decoded = run * 1024;
                assert!(
                    decoded <= 4 * part_bytes.max(batch * 1024),
                    "{sizes}: runs of {run} records decode to {decoded} bytes (run size {part_bytes})"
                );
                let (serial, parallel) = both_ways(&path, &opts, part_bytes);
                let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
                let parallel: Vec<RecordBatch> = parallel.into_iter().map(Result::unwrap).collect();
                assert_eq!(serial, parallel);
                assert!(
                    serial.iter().all(|b| b.num_rows() as u64 <= batch),
                    "{sizes}: batches of more than {batch} records"
                );
                let all = arrow_select::concat::concat_batches(&t.schema(), &serial).unwrap();
                assert_eq!(all.column(0).len(), rows);
                assert_eq!(all, t);
            }
        }
    }

    /// Batches are sized by the widest records of any row group, not by
    /// the file's average: a file whose metadata does not give its values'
    /// bytes, of small values repeated and, in one row group of five, a
    /// 256 KiB value among them, is read four records a batch; the
    /// longest value of a dictionary is found wherever it stands in it.
    #[test]
    fn batches_are_sized_by_the_longest_value_of_any_dictionary() {
        use arrow_array::{BinaryArray, Int64Array};
        let dir = tempfile::tempdir().unwrap();
        let rows = 5_000usize;
        let long = vec![7u8; 256 << 10];
        let small: Vec<Vec<u8>> = (0..100u8).map(|v| vec![v; 10]).collect();
        let b = BinaryArray::from_iter_values((0..rows).map(|i| match i {
            3_333 | 3_500 => &long[..],
            _ => &small[i % 100][..],
        }));
        let n = Int64Array::from_iter_values(0..rows as i64);
        let t = RecordBatch::try_from_iter([
            ("b", Arc::new(b) as ArrayRef),
            ("n", Arc::new(n) as ArrayRef),
        ])
        .unwrap();
        let path = write_dictionary(dir.path(), &t, false, 1_000);
        let (found, md, _) = sizes_of(&path, &[0, 1]);
        assert_eq!(md.num_row_groups(), 5);
        // The long value, an offset and the integer.
        assert_eq!(found.widest, (256 << 10) + 4 + 8, "{found:?}");
        let opts = ConvertOptions::default();
        let batch = super::batch_records(&found, &t.schema(), &opts);
        assert_eq!(batch, 3);
        // The integer column alone has a fixed width: no dictionary read.
        let (found, _, _) = sizes_of(&path, &[1]);
        assert_eq!(found.widest, 8);
        let (batches, _) = both_ways(&path, &opts, 1 << 20);
        let batches: Vec<RecordBatch> = batches.into_iter().map(Result::unwrap).collect();
        assert!(batches.iter().all(|b| b.num_rows() <= 3));
        let all = arrow_select::concat::concat_batches(&t.schema(), &batches).unwrap();
        assert_eq!(all, t);
    }

    /// A run holds about its size of decoded records, however few bytes a
    /// batch holds (batches of 4,096 records of 24 bytes: 170 of them to
    /// 16 MiB, so that a run reads its pages whole rather than a piece of
    /// each again and again); where some column's records may decode to
    /// more than the metadata says, at most 16 batches.
    #[test]
    fn runs_hold_their_size_of_decoded_records() {
        let known = super::Sizes {
            bytes: 3 * 1_000_000,
            rows: 1_000_000,
            widest: 24,
            open_ended: false,
        };
        let run = super::run_rows(16 << 20, &known, 4096);
        assert_eq!(run, 170 * 4096);
        assert!(run * 24 <= 16 << 20 && 2 * run * 24 >= 16 << 20);
        // Pages wider than what the values decode to (plain text) count.
        let pages = super::Sizes {
            widest: 2,
            bytes: 24_000_000,
            ..known
        };
        assert_eq!(super::run_rows(16 << 20, &pages, 4096), run);
        let open = super::Sizes {
            open_ended: true,
            ..known
        };
        assert_eq!(super::run_rows(16 << 20, &open, 4096), 16 * 4096);
        // At least a batch, whatever a record takes.
        let wide = super::Sizes {
            widest: 64 << 20,
            ..known
        };
        assert_eq!(super::run_rows(16 << 20, &wide, 1), 1);
    }

    /// The longest of a plain page's byte arrays, wherever it stands; a
    /// page whose lengths run past its end has none.
    #[test]
    fn longest_values_of_plain_pages() {
        let mut page = Vec::new();
        for len in [3u32, 0, 70, 5] {
            page.extend_from_slice(&len.to_le_bytes());
            page.extend(std::iter::repeat_n(1u8, len as usize));
        }
        assert_eq!(super::longest_plain(&page, 4), Some(70));
        assert_eq!(super::longest_plain(&page, 2), Some(3));
        assert_eq!(super::longest_plain(&page, 0), Some(0));
        assert_eq!(super::longest_plain(&page, 5), None);
        assert_eq!(super::longest_plain(&page[..page.len() - 1], 4), None);
        assert_eq!(super::longest_plain(&page[..2], 1), None);
    }

    /// `t` written with its byte arrays stored as `encoding` (no
    /// dictionary, no statistics: the metadata gives no values' bytes),
    /// pages of 300 records compressed by `codec`, as `version` pages, in
    /// row groups of 2,000 records.
    fn write_delta(
        path: &std::path::Path,
        t: &RecordBatch,
        encoding: parquet::basic::Encoding,
        codec: parquet::basic::Compression,
        version: parquet::file::properties::WriterVersion,
    ) {
        use parquet::file::properties::EnabledStatistics;
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::None)
            .set_dictionary_enabled(false)
            .set_encoding(encoding)
            .set_compression(codec)
            .set_writer_version(version)
            .set_data_page_row_count_limit(300)
            .set_write_batch_size(300)
            .set_max_row_group_row_count(Some(2_000))
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
        w.write(t).unwrap();
        w.close().unwrap();
    }

    /// Text of 5,000 records, every seventh null, each a long run of one
    /// letter and a number (so that each shares most of its bytes with the
    /// one before), of 1 to 3,000 bytes; and lists of 0 to 3 such texts.
    fn texts() -> RecordBatch {
        let text = |i: usize| format!("{}{}", "a".repeat(i * 7919 % 3_000), i);
        let s = StringArray::from_iter((0..5_000).map(|i| (i % 7 != 3).then(|| text(i))));
        let mut l = ListBuilder::new(arrow_array::builder::StringBuilder::new());
        for i in 0..5_000 {
            for j in 0..i % 4 {
                l.values().append_value(text(i + j));
            }
            l.append(true);
        }
        RecordBatch::try_from_iter([
            ("s", Arc::new(s) as ArrayRef),
            ("l", Arc::new(l.finish()) as ArrayRef),
        ])
        .unwrap()
    }

    /// The walk of pages of byte arrays stored as differences from the
    /// value before finds what they decode to, byte for byte, whatever
    /// their nulls, lists, pages (versions 1 and 2) and compression (read
    /// from the start of each page, or from whole pages); a
    /// batch of such records holds about its size of them (not 4,096
    /// records of a few bytes of pages each); the records read are the
    /// table's. Stored as lengths, the pages are walked too and read back.
    #[test]
    fn byte_arrays_stored_as_differences_are_sized_by_what_they_decode_to() {
        use arrow_array::{Array, ListArray};
        use parquet::basic::{Compression, Encoding};
        use parquet::file::properties::WriterVersion;
        let dir = tempfile::tempdir().unwrap();
        let t = texts();
        let s = t.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        let l = t.column(1).as_any().downcast_ref::<ListArray>().unwrap();
        let l = l.values().as_any().downcast_ref::<StringArray>().unwrap();
        let bytes = |a: &StringArray| (a.value_offsets()[a.len()] - a.value_offsets()[0]) as u64;
        let path = dir.path().join("d.parquet");
        for encoding in [
            Encoding::DELTA_BYTE_ARRAY,
            Encoding::DELTA_LENGTH_BYTE_ARRAY,
        ] {
            let zstd = Compression::ZSTD(parquet::basic::ZstdLevel::default());
            for codec in [Compression::UNCOMPRESSED, Compression::SNAPPY, zstd] {
                for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
                    let case = format!("{encoding:?} {codec:?} {version:?}");
                    write_delta(&path, &t, encoding, codec, version);
                    let (md, _) = leaves_of(&path, &[0, 1]);
                    let input = super::Positioned {
                        src: crate::core::Source::from_file(std::fs::File::open(&path).unwrap())
                            .unwrap(),
                        limits: crate::core::Limits::default(),
                    };
                    let descr = md.file_metadata().schema_descr();
                    let mut walked = [0u64; 2];
                    for g in md.row_groups() {
                        for (c, sum) in walked.iter_mut().enumerate() {
                            let col = &g.columns()[c];
                            assert!(super::delta::stored_as_differences(col), "{case}");
                            let leaf = descr.column(c);
                            *sum += super::delta::walk_chunk(
                                &input,
                                col,
                                g.num_rows() as usize,
                                leaf.max_def_level(),
                                leaf.max_rep_level(),
                                true,
                            )
                            .unwrap();
                        }
                    }
                    // Exactly what the values decode to.
                    assert_eq!(walked, [bytes(s), bytes(l)], "{case}");
                    let (found, _, _) = sizes_of(&path, &[0]);
                    assert!(!found.open_ended, "{case}");
                    let opts = ConvertOptions::default();
                    let batch = super::batch_records(&found, &t.schema(), &opts);
                    // About 1,500 bytes a record: batches of about 11,000,
                    // at most the library's 4,096.
                    assert!(found.widest >= bytes(s) / 5_000, "{case}: {found:?}");
                    assert!(batch <= 4_096, "{case}");
                    let (serial, parallel) = both_ways(&path, &opts, 1 << 20);
                    let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
                    let parallel: Vec<RecordBatch> =
                        parallel.into_iter().map(Result::unwrap).collect();
                    assert_eq!(serial, parallel, "{case}");
                    let all = arrow_select::concat::concat_batches(&t.schema(), &serial).unwrap();
                    assert_eq!(all, t, "{case}");
                }
            }
        }
    }

    /// Values that repeat nearly all of the one before are found to decode
    /// to far more than their pages hold: 2,000 values of 100,000 bytes
    /// (a file of 700 KB: a page of 300 holds its first whole) are read
    /// ten a batch (a batch holds about 1 MiB), not 4,096 (400 MB).
    #[test]
    fn values_repeating_the_one_before_make_small_batches() {
        use arrow_array::BinaryArray;
        use parquet::basic::{Compression, Encoding};
        use parquet::file::properties::WriterVersion;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let long = vec![9u8; 100_000];
        let b = BinaryArray::from_iter_values((0..2_000u32).map(|i| {
            let mut v = long.clone();
            v.extend_from_slice(&i.to_le_bytes());
            v
        }));
        let t = RecordBatch::try_from_iter([("b", Arc::new(b) as ArrayRef)]).unwrap();
        write_delta(
            &path,
            &t,
            Encoding::DELTA_BYTE_ARRAY,
            Compression::UNCOMPRESSED,
            WriterVersion::PARQUET_1_0,
        );
        // A page stores its first value whole and the rest in a few bytes.
        assert!(std::fs::metadata(&path).unwrap().len() < 1_000_000);
        let (found, _, _) = sizes_of(&path, &[0]);
        assert_eq!(found.widest, 100_004 + 4, "{found:?}");
        let batch = super::batch_records(&found, &t.schema(), &ConvertOptions::default());
        assert_eq!(batch, crate::convert::BATCH_BYTES / 100_008);
        let (serial, _) = both_ways(&path, &ConvertOptions::default(), 4 << 20);
        let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
        assert!(serial.iter().all(|b| b.num_rows() as u64 <= batch));
        assert_eq!(
            arrow_select::concat::concat_batches(&t.schema(), &serial).unwrap(),
            t
        );
    }

    /// The Parquet file `bytes` with its footer rewritten: each column
    /// chunk's metadata through `change`.
    fn rewritten(
        bytes: &[u8],
        change: impl Fn(
            parquet::file::metadata::ColumnChunkMetaDataBuilder,
        ) -> parquet::file::metadata::ColumnChunkMetaDataBuilder,
    ) -> Vec<u8> {
        let md = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
            .unwrap();
        let n = bytes.len();
        let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
        let mut builder = md.into_builder();
        let groups = builder
            .take_row_groups()
            .into_iter()
            .map(|g| {
                let cols = g
                    .columns()
                    .iter()
                    .map(|c| change(c.clone().into_builder()).build().unwrap())
                    .collect();
                g.into_builder().set_column_metadata(cols).build().unwrap()
            })
            .collect();
        let md = builder.set_row_groups(groups).build();
        let mut out = bytes[..n - 8 - footer].to_vec();
        parquet::file::metadata::ParquetMetaDataWriter::new(&mut out, &md)
            .finish()
            .unwrap();
        out
    }

    /// The Parquet file `bytes` with its footer rewritten to list only
    /// plain values and levels as its column chunks' encodings, whatever
    /// their pages hold.
    fn unlisted(bytes: &[u8]) -> Vec<u8> {
        use parquet::basic::Encoding;
        let out = rewritten(bytes, |c| {
            c.set_encodings(vec![Encoding::PLAIN, Encoding::RLE])
        });
        let listed = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(out.clone()))
            .unwrap();
        let col = listed.row_group(0).column(0);
        assert!(!super::delta::stored_as_differences(col));
        out
    }

    /// The page headers of column chunks read in turn: as many as the
    /// page reader finds, their encodings (`None` for a dictionary page),
    /// ending where the chunk ends; with statistics in the headers, and
    /// in version 1 and 2 pages (whose byte arrays are stored as
    /// differences without a dictionary: found from the headers).
    #[test]
    fn page_headers_are_read_in_turn() {
        use parquet::column::page::PageReader;
        use parquet::file::properties::{EnabledStatistics, WriterVersion};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.parquet");
        let t = texts();
        // Chunks with and without pages of differences.
        let mut seen = [false; 2];
        for (version, stats, dictionary) in [
            (WriterVersion::PARQUET_1_0, EnabledStatistics::Page, true),
            (WriterVersion::PARQUET_2_0, EnabledStatistics::Page, false),
            (WriterVersion::PARQUET_2_0, EnabledStatistics::None, true),
        ] {
            let props = WriterProperties::builder()
                .set_statistics_enabled(stats)
                .set_write_page_header_statistics(true)
                .set_dictionary_enabled(dictionary)
                .set_writer_version(version)
                .set_data_page_row_count_limit(300)
                .set_write_batch_size(300)
                .set_max_row_group_row_count(Some(2_000))
                .build();
            let file = std::fs::File::create(&path).unwrap();
            let mut w =
                parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
            w.write(&t).unwrap();
            w.close().unwrap();
            let (md, _) = leaves_of(&path, &[0, 1]);
            let input = super::Positioned {
                src: crate::core::Source::from_file(std::fs::File::open(&path).unwrap()).unwrap(),
                limits: crate::core::Limits::default(),
            };
            for g in md.row_groups() {
                for col in g.columns() {
                    let chunk = super::chunk_range(col).unwrap();
                    let mut at = chunk.start;
                    let mut found = Vec::new();
                    while at < chunk.end {
                        let h = super::delta::page_header(&input, at, chunk.end).unwrap();
                        found.push(h.encoding);
                        at += h.len + h.body;
                    }
                    assert_eq!(at, chunk.end);
                    let mut pages = parquet::file::serialized_reader::SerializedPageReader::new(
                        Arc::new(input.clone()),
                        col,
                        g.num_rows() as usize,
                        None,
                    )
                    .unwrap();
                    let mut want = Vec::new();
                    while let Some(p) = pages.get_next_page().unwrap() {
                        want.push(match p.page_type() {
                            parquet::basic::PageType::DICTIONARY_PAGE => None,
                            _ => Some(p.encoding() as i32),
                        });
                    }
                    assert_eq!(found, want, "{version:?} {stats:?}");
                    let differences = found.iter().any(|e| matches!(e, Some(6 | 7)));
                    assert_eq!(
                        super::delta::pages_store_differences(&input, col),
                        differences
                    );
                    seen[usize::from(differences)] = true;
                }
            }
        }
        assert_eq!(seen, [true, true]);
    }

    /// A page whose lengths are counted as more than it has values (the
    /// decoder sets aside four bytes for each before reading any: 2^36 of
    /// them, 256 GiB, ended the process) is refused at open with an error
    /// naming its row group, column and page; so is a count within the
    /// page's values beyond the caller's limits, and blocks of lengths that
    /// miniblocks do not divide. Counts of 2^36, 2^61 and one more than the values, in either
    /// encoding, with and without the values' bytes in the metadata (the
    /// lengths then counted, not read).
    #[test]
    fn pages_counting_more_lengths_than_values_are_refused() {
        use arrow_array::BinaryArray;
        use parquet::basic::{Compression, Encoding};
        use parquet::file::properties::WriterVersion;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let b = BinaryArray::from_iter_values(
            (0..1_000u32).map(|i| format!("value{}", i * 7_919 % 1_000)),
        );
        let t = RecordBatch::try_from_iter([("b", Arc::new(b) as ArrayRef)]).unwrap();
        let opts = ConvertOptions::default();
        use parquet::file::properties::EnabledStatistics;
        let cases = [
            Encoding::DELTA_LENGTH_BYTE_ARRAY,
            Encoding::DELTA_BYTE_ARRAY,
        ]
        .into_iter()
        .flat_map(|e| [(e, EnabledStatistics::None), (e, EnabledStatistics::Chunk)]);
        for (encoding, stats) in cases {
            let props = WriterProperties::builder()
                .set_statistics_enabled(stats)
                .set_dictionary_enabled(false)
                .set_encoding(encoding)
                .set_compression(Compression::UNCOMPRESSED)
                .set_writer_version(WriterVersion::PARQUET_1_0)
                .build();
            let file = std::fs::File::create(&path).unwrap();
            let mut w =
                parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
            w.write(&t).unwrap();
            w.close().unwrap();
            let good = std::fs::read(&path).unwrap();
            // Blocks of 128 in 4 miniblocks, 1,000 values: the header of
            // the first run of lengths.
            let header = [0x80u8, 0x01, 0x04, 0xE8, 0x07];
            let at = good.windows(5).position(|w| w == header).unwrap() + 3;
            // The count is followed by the first length (a byte): ten
            // bytes rewritten keep the page's size.
            let counts: [(&[u8], &str); 3] = [
                (&[0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x00], "68719476736"),
                (
                    &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00],
                    "2305843009213693952",
                ),
                (&[0xE9, 0x07, 0x00], "1001"),
            ];
            for ((count, said), listed) in counts.into_iter().flat_map(|c| [(c, true), (c, false)])
            {
                let mut bad = good.clone();
                bad[at..at + count.len()].copy_from_slice(count);
                // The metadata listing only plain values: the pages' own
                // encodings are what the decoder follows.
                if !listed {
                    bad = unlisted(&bad);
                }
                std::fs::write(&path, &bad).unwrap();
                let Err(e) = super::open_in_runs(&path, &opts, 1 << 20) else {
                    panic!("{encoding:?} {listed}: a count of {said} opened");
                };
                let e = e.to_string();
                assert!(
                    e.contains("row group 0, column 0 (\"b\"), data page 0")
                        && e.contains(&format!("counted as {said}, more than its 1000 values")),
                    "{encoding:?} {listed}: {e}"
                );
            }
            // Unlisted, unchanged: read.
            std::fs::write(&path, unlisted(&good)).unwrap();
            let (serial, _) = both_ways(&path, &opts, 1 << 20);
            let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
            assert_eq!(
                arrow_select::concat::concat_batches(&t.schema(), &serial).unwrap(),
                t
            );
            // Within the values, beyond the caller's limits.
            std::fs::write(&path, &good).unwrap();
            let tight = ConvertOptions {
                open: crate::dataset::OpenOptions::with_limits(
                    crate::core::Limits::default().with_max_alloc(1_000),
                ),
                ..Default::default()
            };
            let Err(e) = super::open_in_runs(&path, &tight, 1 << 20) else {
                panic!("{encoding:?}: opened beyond the limits");
            };
            assert!(e.to_string().contains("data page 0"), "{e}");
            // A block of 128 lengths in 3 miniblocks.
            let mut bad = good.clone();
            bad[at - 1] = 3;
            std::fs::write(&path, &bad).unwrap();
            let Err(e) = super::open_in_runs(&path, &opts, 1 << 20) else {
                panic!("{encoding:?}: miniblocks that do not divide a block opened");
            };
            assert!(
                e.to_string()
                    .contains("data page 0: its lengths come in blocks of 128 in 3 miniblocks"),
                "{e}"
            );
            // The file unchanged opens and reads.
            std::fs::write(&path, &good).unwrap();
            let (serial, _) = both_ways(&path, &opts, 1 << 20);
            let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
            assert_eq!(
                arrow_select::concat::concat_batches(&t.schema(), &serial).unwrap(),
                t
            );
        }
    }

    /// Runs end at the first batch boundary from a row group's start when
    /// their end falls within half a run of it, so that the next run
    /// starts at most a batch into its group; runs in groups much larger
    /// than a run still start inside them. Every run is a whole number of
    /// batches from the first selected record, and together they cover the
    /// selection once.
    #[test]
    fn runs_end_near_row_groups_at_a_batch_boundary() {
        let starts = vec![0, 6_000, 12_000, 18_000, 40_000, 40_100];
        for (base, end, batch, part_rows) in [
            (0, 40_100, 1_000, 5_000),
            (1_234, 39_000, 1_000, 5_000),
            (0, 40_100, 700, 4_900),
            (17, 40_100, 1, 3),
        ] {
            let mut parts = super::Parts {
                part_rows,
                split: true,
                next: base,
                end,
                starts: starts.clone(),
                base,
                batch,
            };
            let mut at = base;
            let mut runs = Vec::new();
            while let Some(p) = parts.next_part() {
                let p = p.unwrap();
                assert_eq!(p.start, at);
                assert!(p.rows > 0);
                at += p.rows;
                assert!(
                    at == end || (at - base) % batch == 0,
                    "{base} {batch}: run ends at {at}"
                );
                runs.push(p.start);
            }
            assert_eq!(at, end);
            if part_rows < 1_000 {
                // Runs of three records: only those ending within one
                // record of a group start move.
                continue;
            }
            for &r in &runs[1..] {
                let group = starts[starts.partition_point(|&s| s <= r) - 1];
                let into = r - group;
                // Near a start (a batch in at most), or inside the large
                // group from 18,000 to 40,000, far from its ends.
                let inside = group == 18_000 && r + part_rows / 2 < 40_000;
                assert!(
                    into <= batch || inside,
                    "{base} {batch}: a run starts {into} into group {group}"
                );
            }
            let deep = runs
                .iter()
                .filter(|&&r| r > 18_000 + 1_000 && r < 40_000)
                .count();
            assert!(deep >= 2, "{base} {batch}: {runs:?}");
        }
        // Batches and runs past any file: one run, no overflow.
        let mut parts = super::Parts {
            part_rows: u64::MAX,
            split: true,
            next: 5,
            end: 40_100,
            starts: starts.clone(),
            base: 5,
            batch: u64::MAX - 3,
        };
        let one = parts.next_part().unwrap().unwrap();
        assert_eq!((one.start, one.rows), (5, 40_095));
        assert!(parts.next_part().is_none());
    }

    /// `levels` as the RLE/bit-packing hybrid of `width` bits, after a
    /// 4-byte length: runs of equal levels of 8 or more as repeated
    /// values, the rest bit-packed in groups of eight (the last group
    /// padded with zeros).
    fn hybrid(levels: &[u32], width: u32) -> Vec<u8> {
        fn varint(out: &mut Vec<u8>, mut v: u64) {
            while v >= 0x80 {
                out.push((v as u8) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let mut body = Vec::new();
        let mut i = 0;
        while i < levels.len() {
            let same = levels[i..].iter().take_while(|&&v| v == levels[i]).count();
            if same >= 8 {
                varint(&mut body, (same as u64) << 1);
                body.extend_from_slice(&levels[i].to_le_bytes()[..width.div_ceil(8) as usize]);
                i += same;
                continue;
            }
            let mut n = 0;
            while i + n < levels.len()
                && levels[i + n..]
                    .iter()
                    .take_while(|&&v| v == levels[i + n])
                    .count()
                    < 8
            {
                n += 8;
            }
            let groups = n / 8;
            varint(&mut body, ((groups as u64) << 1) | 1);
            let mut bits = vec![0u8; groups * width as usize];
            for k in 0..n {
                let v = levels.get(i + k).copied().unwrap_or(0);
                for j in 0..width as usize {
                    let bit = k * width as usize + j;
                    bits[bit / 8] |= (((v >> j) & 1) as u8) << (bit % 8);
                }
            }
            body.extend_from_slice(&bits);
            i += n;
        }
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    /// A page's records are its repetition levels of 0, read through runs
    /// of both kinds and of widths 1 to 9, whatever follows the levels; a
    /// page not starting a record, levels cut short or a run of none is
    /// `None`.
    #[test]
    fn records_are_counted_from_repetition_levels() {
        let mut rng = crate::core::rng::SplitMix64::new(5);
        for case in 0..400 {
            let max_rep = [1i16, 2, 3, 7, 255, 256, 300][case % 7];
            let width = 16 - (max_rep as u16).leading_zeros();
            let n = 1 + rng.below(300) as usize;
            let mut levels: Vec<u32> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => 0,
                    _ => rng.below(max_rep as u64 + 1) as u32,
                })
                .collect();
            // Long runs, for the repeated-value runs.
            if case % 3 == 0 {
                let at = rng.below(n as u64) as usize;
                let v = levels[at];
                levels.splice(at..at, std::iter::repeat_n(v, 20));
            }
            levels[0] = 0;
            let mut page = hybrid(&levels, width);
            page.extend_from_slice(&[0xff; 5]);
            let zeros = levels.iter().filter(|&&v| v == 0).count() as u64;
            let count = levels.len() as u32;
            assert_eq!(
                super::records_in_levels(&page, count, max_rep),
                Some(zeros),
                "case {case}"
            );
            // Fewer levels than the page holds: those only.
            let fewer = count / 2 + 1;
            let zeros = levels[..fewer as usize].iter().filter(|&&v| v == 0).count() as u64;
            assert_eq!(super::records_in_levels(&page, fewer, max_rep), Some(zeros));
            // More levels than the runs hold, or the runs cut short.
            assert_eq!(super::records_in_levels(&page, count + 8, max_rep), None);
            let short = hybrid(&levels, width);
            let len = u32::from_le_bytes(short[..4].try_into().unwrap());
            assert_eq!(
                super::records_in_levels(&short[..short.len() - 1], count, max_rep),
                None
            );
            assert!(len > 0);
            // Not starting a record.
            let mut mid = levels.clone();
            mid[0] = 1;
            assert_eq!(
                super::records_in_levels(&hybrid(&mid, width), count, max_rep),
                None
            );
        }
        // A repeated-value run of no values would never end.
        assert_eq!(super::records_in_levels(&[2, 0, 0, 0, 0, 0], 4, 1), None);
        assert_eq!(super::records_in_levels(&[], 1, 1), None);
        assert_eq!(super::records_in_levels(&hybrid(&[0], 1), 0, 1), None);
    }

    /// On a file as the parquet crate writes it (version-1 pages, lists
    /// in most of them; stored as they are or compressed with Zstandard,
    /// whose pages' levels are decompressed alone), every row group's list
    /// pages agree with its offset index; an index moved by one record at
    /// one page does not.
    #[test]
    fn list_pages_are_checked_against_the_offset_index() {
        use parquet::basic::{Compression, ZstdLevel};
        for codec in [
            Compression::UNCOMPRESSED,
            Compression::ZSTD(ZstdLevel::default()),
        ] {
            list_pages_checked(codec);
        }
    }

    fn list_pages_checked(codec: parquet::basic::Compression) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.parquet");
        write_compressed(&path, true, codec);
        let (md, leaves) = leaves_of(&path, &[0, 1, 2, 3]);
        assert_eq!(md.row_group(0).column(1).compression(), codec);
        let descr = md.file_metadata().schema_descr();
        let lists: Vec<(usize, i16)> = leaves
            .iter()
            .map(|&c| (c, descr.column(c).max_rep_level()))
            .filter(|&(_, r)| r > 0)
            .collect();
        assert_eq!(lists.len(), 2);
        let file = std::fs::File::open(&path).unwrap();
        let input = super::Positioned {
            src: crate::core::Source::from_file(file).unwrap(),
            limits: crate::core::Limits::default(),
        };
        for g in 0..md.num_row_groups() {
            assert!(
                super::lists_agree(&input, &md, g, &lists).unwrap(),
                "row group {g}"
            );
        }
        let mut index = md.offset_index().unwrap().clone();
        let moved = &mut index[1][lists[0].0];
        let mut pages = moved.page_locations().clone();
        assert!(pages.len() > 3);
        pages[2].first_row_index += 1;
        *moved = parquet::file::page_index::offset_index::OffsetIndexMetaData {
            page_locations: pages,
            ..moved.clone()
        };
        let bad = md
            .clone()
            .into_builder()
            .set_offset_index(Some(index))
            .build();
        assert!(super::lists_agree(&input, &bad, 0, &lists).unwrap());
        assert!(!super::lists_agree(&input, &bad, 1, &lists).unwrap());
    }

    /// Every byte of the first row group's offset index changed (by one):
    /// the input reads to its end or to an error, never a panic, on one
    /// thread and on three, and what it reads to the end is the file's
    /// records (for the columns of lists too: their pages' levels are
    /// checked against the index).
    #[test]
    fn damaged_offset_indexes_end_in_an_error_or_in_records() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        let want = write(&good, true);
        let bytes = std::fs::read(&good).unwrap();
        let (md, _) = leaves_of(&good, &[0, 1, 2, 3]);
        let descr = md.file_metadata().schema_descr();
        let regions: Vec<(std::ops::Range<usize>, bool)> = md.row_groups()[0]
            .columns()
            .iter()
            .enumerate()
            .map(|(c, col)| {
                let at = col.offset_index_offset().unwrap() as usize;
                let repeats = descr.column(c).max_rep_level() > 0;
                (
                    at..at + col.offset_index_length().unwrap() as usize,
                    repeats,
                )
            })
            .collect();
        assert_eq!(regions.iter().filter(|r| !r.1).count(), 2);
        let path = dir.path().join("bad.parquet");
        // Batches of 250 records in runs of one batch: most runs start
        // deep inside a row group, by the index.
        let opts = ConvertOptions {
            batch_size: 250,
            ..Default::default()
        };
        let (mut tried, mut refused) = (0, 0);
        for (r, repeats) in regions {
            for at in r {
                for v in [bytes[at].wrapping_add(1)] {
                    let mut b = bytes.clone();
                    b[at] = v;
                    std::fs::write(&path, &b).unwrap();
                    tried += 1;
                    if super::open_in_runs(&path, &opts, 3 << 10).is_err() {
                        refused += 1;
                        continue;
                    }
                    let (serial, parallel) = both_ways(&path, &opts, 3 << 10);
                    for got in [serial, parallel] {
                        assert!(got.iter().filter(|b| b.is_err()).count() <= 1);
                        let Ok(got) = got.into_iter().collect::<Result<Vec<_>, _>>() else {
                            continue;
                        };
                        let got =
                            arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
                        assert!(
                            got == want,
                            "byte {at} set to {v} (a list column's index: {repeats})"
                        );
                    }
                }
            }
        }
        assert!(tried > 150 && refused < tried, "{refused} of {tried}");
    }

    /// Bytes all through a small file changed (every 53rd byte's top bit
    /// flipped: pages, their headers, the footer): opening and reading it
    /// on one thread and on three ends in its records or in one error,
    /// never a panic.
    #[test]
    fn damaged_pages_end_in_an_error_or_in_records() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.parquet");
        let t = table().slice(0, 1_500);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(600))
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100)
            .build();
        let file = std::fs::File::create(&good).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, t.schema(), Some(props)).unwrap();
        w.write(&t).unwrap();
        w.close().unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let path = dir.path().join("bad.parquet");
        let opts = ConvertOptions {
            batch_size: 128,
            ..Default::default()
        };
        let (mut read, mut failed) = (0, 0);
        for at in (0..bytes.len()).step_by(53) {
            let mut b = bytes.clone();
            b[at] ^= 0x80;
            std::fs::write(&path, &b).unwrap();
            if super::open_in_runs(&path, &opts, 4 << 10).is_err() {
                continue;
            }
            let (serial, parallel) = both_ways(&path, &opts, 4 << 10);
            for got in [serial, parallel] {
                let errors = got.iter().filter(|b| b.is_err()).count();
                assert!(errors <= 1 && got.iter().skip_while(|b| b.is_ok()).count() == errors);
                read += 1;
                failed += errors;
            }
        }
        assert!(read > 0 && failed > 0, "{read} read, {failed} failed");
    }

    /// The records left after a first batch, read as parts cut anywhere,
    /// are the records the stream would give, in batches that end where
    /// its batches end (or where a part ends); a Parquet target made from
    /// the file in parts is the same on one thread, on three and on every
    /// core, and holds the records.
    #[test]
    fn parts_give_the_records_the_stream_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.parquet");
        let t = write(&path, true);
        let opts = ConvertOptions {
            batch_size: 333,
            rows: Some(1_234..17_777),
            ..Default::default()
        };
        let mut inp = super::open_in_runs(&path, &opts, 3 << 10).unwrap();
        let first = inp.stream.next_batch().unwrap().unwrap();
        let parts = inp.stream.parts().unwrap();
        let range = parts.range();
        assert_eq!(range, 1_234 + first.num_rows() as u64..17_777);
        let cuts = [
            range.start,
            range.start + 1_000,
            range.start + 1_001,
            9_999,
            range.end,
        ];
        let mut got = vec![first];
        for w in cuts.windows(2) {
            let mut part = parts.part(w[0]..w[1]);
            let mut rows = 0;
            while let Some(b) = part.next_batch() {
                let b = b.unwrap();
                rows += b.num_rows() as u64;
                let end = w[0] + rows;
                assert!(
                    end == w[1] || (end - 1_234) % 333 == 0,
                    "a batch ends at {end}"
                );
                got.push(b);
            }
            assert_eq!(rows, w[1] - w[0]);
        }
        let got = arrow_select::concat::concat_batches(&got[0].schema(), &got).unwrap();
        assert_eq!(got, t.slice(1_234, 17_777 - 1_234));
        let mut files = Vec::new();
        for threads in [1, 3, 0] {
            let out = dir.path().join(format!("t{threads}.parquet"));
            let opts = ConvertOptions {
                threads,
                ..Default::default()
            };
            crate::convert::convert(&path, &out, &opts).unwrap();
            files.push(std::fs::read(&out).unwrap());
        }
        assert!(files.iter().all(|f| f == &files[0]), "the files differ");
        let back = bytes::Bytes::from(files.remove(0));
        let r =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(back, 8_192).unwrap();
        let back: Vec<RecordBatch> = r.map(Result::unwrap).collect();
        let back = arrow_select::concat::concat_batches(&t.schema(), &back).unwrap();
        assert_eq!(back, t);
    }
}
