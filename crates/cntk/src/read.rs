//! Reading CBF files strictly, in the check order of `cntk.md` §4.2.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use dataformats_core::{Limits, ReadOptions, Source, plain};

use dataformats_core::parse::{Input, le_u32, run};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{CHUNK_ENTRY_SIZE, FOOTER_SIZE, PREAMBLE_SIZE, RawChunkEntry};
pub use crate::format::{ChunkEntry, ElemType, MAGIC, StreamDesc, StreamKind, VERSION};
use crate::parse;

/// Values of one record, widened to f64 (exactly; NaN payloads kept).
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `samples` dense samples of `dim` values each, back to back.
    Dense {
        /// Number of samples.
        samples: u32,
        /// `samples × dim` values.
        values: Vec<f64>,
    },
    /// `samples` sparse samples.
    Sparse {
        /// Number of samples.
        samples: u32,
        /// All entries' values.
        values: Vec<f64>,
        /// All entries' row indices (each `< dim`).
        indices: Vec<u32>,
        /// Entries per sample.
        sizes: Vec<u32>,
    },
}

impl Record {
    /// Samples of this stream in the sequence.
    pub fn samples(&self) -> u32 {
        match self {
            Record::Dense { samples, .. } | Record::Sparse { samples, .. } => *samples,
        }
    }
}

/// A decoded chunk: per sequence, its length and one record per stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The length prefix (samples per sequence).
    pub sequence_lengths: Vec<u32>,
    /// `records[stream][sequence]`.
    pub records: Vec<Vec<Record>>,
}

/// An open CBF file: preamble, footer, header and chunk table checked.
#[derive(Debug)]
pub struct Reader {
    src: Source,
    header_offset: u64,
    streams: Vec<StreamDesc>,
    chunks: Vec<ChunkEntry>,
    limits: Limits,
}

/// The stored values widened to f64 (exactly; NaN payloads kept).
fn floats(b: &[u8], elem: ElemType) -> Vec<f64> {
    match elem {
        ElemType::F32 => plain::values::<f32>(b).map(f64::from).collect(),
        ElemType::F64 => plain::values::<f64>(b).collect(),
    }
}

impl Reader {
    /// Opens the file at `path` (positioned reads).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(Source::open(path)?, ReadOptions::default())
    }

    /// Opens a file in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src`, checking everything up to the chunk table (checks 1–8).
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        let limits = opts.limits;
        let size = src.len();
        if size < 20 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("file of {size} bytes is shorter than 20"),
            )
            .at(0));
        }
        let (magic, version) = run(&src.bytes(0, PREAMBLE_SIZE)?, 0, parse::preamble)?;
        if &magic != MAGIC {
            return Err(Error::new(ErrorKind::BadMagic, "no cntk_bin magic at offset 0").at(0));
        }
        if version != VERSION {
            return Err(Error::new(
                ErrorKind::BadVersion,
                format!("version {version} (only 1 exists)"),
            )
            .at(8));
        }
        let footer_at = size - FOOTER_SIZE;
        let h = run(
            &src.bytes(footer_at, FOOTER_SIZE)?,
            footer_at,
            parse::footer,
        )?;
        let ok = u64::try_from(h)
            .ok()
            .filter(|&h| h >= 12 && h.checked_add(16).is_some_and(|e| e <= footer_at));
        let Some(h) = ok else {
            return Err(Error::new(
                ErrorKind::BadHeaderOffset,
                format!(
                    "footer points at {h}, outside 12..={}",
                    footer_at.saturating_sub(16)
                ),
            )
            .at(footer_at));
        };
        if src.bytes(h, 8)?.as_ref() != MAGIC {
            return Err(
                Error::new(ErrorKind::BadHeaderMagic, "no magic at the header offset").at(h),
            );
        }
        // The header runs from its magic to the footer (the vectors pin
        // that a field reaching past the footer is Truncated).
        let region = limits.check_alloc("CBF header and chunk table", footer_at - h - 8)?;
        let header = src.bytes(h + 8, region as u64)?;
        let mut c = Input::new(&header, h + 8);
        let cut = |what: &'static str| parse::past_footer(what, footer_at);
        let (num_chunks, num_streams) = c
            .parse(parse::counts)
            .map_err(cut("chunk and stream counts"))?;
        let streams = parse::stream_descriptors(&mut c, num_streams, footer_at)?;
        let table_at = c.offset();
        let mut table = Input::new(
            c.take(u64::from(num_chunks) * CHUNK_ENTRY_SIZE)
                .map_err(cut("chunk table"))?,
            table_at,
        );
        if !c.is_empty() {
            return Err(Error::new(
                ErrorKind::BadChunkTable,
                format!(
                    "{} byte(s) between the chunk table and the footer",
                    footer_at - c.offset()
                ),
            )
            .at(c.offset()));
        }
        let raw: Vec<RawChunkEntry> = (0..num_chunks)
            .map(|_| table.parse(parse::chunk_entry))
            .collect::<std::result::Result<_, _>>()?;
        if raw.is_empty() && h != 12 {
            return Err(Error::new(
                ErrorKind::BadChunkOffset,
                "no chunks, but data bytes before the header",
            )
            .at(12));
        }
        if let Some(first) = raw.first()
            && first.offset != 12
        {
            return Err(Error::new(
                ErrorKind::BadChunkOffset,
                format!("the first chunk starts at {}, not 12", first.offset),
            )
            .at(table_at)
            .in_chunk(0));
        }
        let mut chunks = Vec::with_capacity(raw.len());
        for (i, e) in raw.iter().enumerate() {
            let (off, nseq, nsamp) = (e.offset, e.num_sequences, e.num_samples);
            let end = raw.get(i + 1).map_or(h as i64, |n| n.offset);
            let ok = u64::try_from(off)
                .ok()
                .zip(u64::try_from(end).ok())
                .filter(|&(o, e)| o >= 12 && o <= e && e <= h);
            let Some((o, e)) = ok else {
                return Err(Error::new(
                    ErrorKind::BadChunkOffset,
                    format!("chunk {i} spans {off}..{end}, outside 12..={h} or reversed"),
                )
                .at(table_at + CHUNK_ENTRY_SIZE * i as u64)
                .in_chunk(i as u64));
            };
            chunks.push(ChunkEntry {
                offset: o,
                num_sequences: nseq,
                num_samples: nsamp,
                end: e,
            });
        }
        Ok(Reader {
            src,
            header_offset: h,
            streams,
            chunks,
            limits,
        })
    }

    /// The streams, in header order.
    pub fn streams(&self) -> &[StreamDesc] {
        &self.streams
    }

    /// The chunk table.
    pub fn chunks(&self) -> &[ChunkEntry] {
        &self.chunks
    }

    /// Where the header starts.
    pub fn header_offset(&self) -> u64 {
        self.header_offset
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// Decodes chunk `i` into owned records with values widened to f64,
    /// after every check of [`Reader::chunk_view`].
    pub fn read_chunk(&self, i: usize) -> Result<Chunk> {
        let view = self.chunk_view(i)?;
        let records = (0..self.streams.len())
            .map(|s| {
                (0..view.num_sequences())
                    .filter_map(|q| view.record(s, q))
                    .map(|r| r.to_record())
                    .collect()
            })
            .collect();
        Ok(Chunk {
            sequence_lengths: view.sequence_lengths().to_vec(),
            records,
        })
    }

    /// Checks chunk `i` (checks 9–15: every count, size and sparse index)
    /// and returns a view of it that borrows the chunk's bytes (from the
    /// memory map when the source is one; read once otherwise). Values are
    /// handed out in their stored type, as zero-copy slices when aligned or
    /// decoded into caller buffers.
    pub fn chunk_view(&self, i: usize) -> Result<ChunkView<'_>> {
        let checked = self.checked_chunk(i)?;
        self.view(&checked)
    }

    /// Checks chunk `i` as [`Reader::chunk_view`] does and keeps what the
    /// check found (and the bytes, when the source is not a map): a reader
    /// of a chunk in pieces (a few records at a time) checks it once and
    /// views it again with [`Reader::view`] for each piece.
    pub fn checked_chunk(&self, i: usize) -> Result<CheckedChunk> {
        let entry = self.entry(i)?;
        let span = entry.end - entry.offset;
        self.limits.check_alloc("chunk", span)?;
        let data = self.src.bytes(entry.offset, span)?;
        let (lengths, locs) = check_chunk(&data, &entry, i, &self.streams)?;
        let mut starts = Vec::with_capacity(lengths.len());
        let mut at = 0u64;
        for &l in &lengths {
            starts.push(at);
            at += u64::from(l);
        }
        Ok(CheckedChunk(Arc::new(Checked {
            index: i,
            lengths,
            starts,
            locs,
            owned: match data {
                Cow::Owned(v) => Some(v),
                Cow::Borrowed(_) => None,
            },
        })))
    }

    /// A view of a chunk this reader checked ([`Reader::checked_chunk`]),
    /// without checking it again.
    pub fn view<'a>(&'a self, checked: &CheckedChunk) -> Result<ChunkView<'a>> {
        let c = &checked.0;
        let entry = self.entry(c.index)?;
        // Borrowed again from the map, unless the check kept the bytes.
        let mapped = match c.owned {
            Some(_) => None,
            None => Some(
                self.src
                    .as_slice()
                    .and_then(|whole| {
                        let start = usize::try_from(entry.offset).ok()?;
                        let end = usize::try_from(entry.end).ok()?;
                        whole.get(start..end)
                    })
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidArgument,
                            format!("chunk {} was not checked by this reader", c.index),
                        )
                    })?,
            ),
        };
        Ok(ChunkView {
            mapped,
            streams: &self.streams,
            checked: c.clone(),
        })
    }

    /// Entry `i` of the chunk table.
    fn entry(&self, i: usize) -> Result<ChunkEntry> {
        self.chunks.get(i).copied().ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("chunk {i} does not exist"),
            )
        })
    }

    /// Checks every chunk (everything [`Reader::read_chunk`] checks, with
    /// nothing decoded: values are only ever reinterpreted), on every core
    /// for files of several chunks and megabytes; the first failure in
    /// table order is reported.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the chunks checked so far out of
    /// all chunks.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        // Mapped pages go back as the pass goes on: a file of gigabytes
        // checked with tens of megabytes resident.
        let mut releasing =
            dataformats_core::progress::Releasing::new(&self.src, progress).in_file_order();
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let total = self.chunks.len() as u64;
        // Threads pay off from a few MB on.
        let bytes: u64 = self.chunks.iter().map(|c| c.end - c.offset).sum();
        let threads = if total < 2 {
            1
        } else {
            dataformats_core::parallel::threads_for(bytes, 0)
        };
        let mut next = 0..self.chunks.len();
        let mut done = 0u64;
        dataformats_core::parallel::ordered(
            threads,
            || Ok(next.next()),
            |i| {
                let checked = self.chunk_view(i).map(drop);
                // A checked chunk's pages go back at once, not when the
                // pass in order has gone a step past them: chunks of
                // tens of megabytes checked side by side and ahead kept
                // several of them resident (1 GB in chunks of 128 MiB:
                // 450 MB).
                if let Ok(e) = self.entry(i) {
                    self.src.release_range(e.offset..e.end);
                }
                checked
            },
            |checked| {
                checked?;
                done += 1;
                progress.advance(done, total);
                Ok(())
            },
        )
    }
}

/// Where one record's parts lie in its chunk's bytes.
#[derive(Debug, Clone)]
enum Loc {
    Dense {
        samples: u32,
        values: Range<usize>,
    },
    Sparse {
        samples: u32,
        values: Range<usize>,
        indices: Range<usize>,
        sizes: Range<usize>,
    },
}

impl Loc {
    fn samples(&self) -> u32 {
        match self {
            Loc::Dense { samples, .. } | Loc::Sparse { samples, .. } => *samples,
        }
    }
}

type Found = (Vec<u32>, Vec<Vec<Loc>>);

/// Checks a chunk's bytes against its table entry and the streams (checks
/// 9–15) and finds every record.
fn check_chunk(data: &[u8], entry: &ChunkEntry, i: usize, streams: &[StreamDesc]) -> Result<Found> {
    let mut c = Input::new(data, entry.offset);
    let chunk_end = c.end();
    // A read past the chunk's end is ChunkOverrun (check 9), at the read.
    let overrun = |what: &'static str| {
        move |e: dataformats_core::Error| match e {
            dataformats_core::Error::Truncated { at, needed } => Error::new(
                ErrorKind::ChunkOverrun,
                format!("{what} ({needed} bytes) passes the end of the chunk at {chunk_end}"),
            )
            .at(at),
            other => other.into(),
        }
    };
    let nseq = entry.num_sequences as usize;
    let prefix_bytes = c
        .take(4 * u64::from(entry.num_sequences))
        .map_err(overrun("sequence length prefix"))
        .map_err(|e| e.in_chunk(i as u64))?;
    let lengths: Vec<u32> = plain::values::<u32>(prefix_bytes).collect();
    let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
    if total != u64::from(entry.num_samples) {
        return Err(Error::new(
            ErrorKind::SampleCountMismatch,
            format!(
                "sequence lengths sum to {total}, the chunk table says {}",
                entry.num_samples
            ),
        )
        .in_chunk(i as u64)
        .at(entry.offset));
    }
    let mut locs = Vec::new();
    for s in streams {
        // Grows with the records actually read, never sized from the file's counts.
        let mut per = Vec::new();
        for q in 0..nseq {
            let at = c.offset();
            let loc = |e: Error| e.in_chunk(i as u64).in_record(q as u64, &s.name);
            let k = c
                .parse(le_u32)
                .map_err(overrun("sample count"))
                .map_err(loc)?;
            let e = s.elem.size();
            match s.kind {
                StreamKind::Dense => {
                    let n = u64::from(k)
                        .checked_mul(u64::from(s.dim))
                        .and_then(|x| x.checked_mul(e))
                        .unwrap_or(u64::MAX);
                    let values = c
                        .take_range(n)
                        .map_err(overrun("dense values"))
                        .map_err(loc)?;
                    per.push(Loc::Dense { samples: k, values });
                }
                StreamKind::Sparse => {
                    let nnz_at = c.offset();
                    let nnz = c.parse(le_u32).map_err(overrun("nnz")).map_err(loc)? as i32;
                    if nnz < 0 {
                        return Err(loc(Error::new(
                            ErrorKind::BadCount,
                            format!("nnz {nnz} is negative"),
                        )
                        .at(nnz_at)));
                    }
                    let nnz = nnz as u64;
                    let values = c
                        .take_range(nnz * e)
                        .map_err(overrun("sparse values"))
                        .map_err(loc)?;
                    let (indices_at, indices) = (c.position(), c.take(nnz * 4));
                    let ib = indices.map_err(overrun("sparse indices")).map_err(loc)?;
                    let indices = indices_at..c.position();
                    let (sizes_at, sizes) = (c.position(), c.take(u64::from(k) * 4));
                    let sb = sizes.map_err(overrun("per-sample sizes")).map_err(loc)?;
                    let sizes = sizes_at..c.position();
                    let mut sum = 0u64;
                    for x in plain::values::<i32>(sb) {
                        if x < 0 {
                            return Err(loc(Error::new(
                                ErrorKind::BadCount,
                                format!("a per-sample size is {x}"),
                            )
                            .at(at)));
                        }
                        sum += x as u64;
                    }
                    if sum != nnz {
                        return Err(loc(Error::new(
                            ErrorKind::NnzMismatch,
                            format!("per-sample sizes sum to {sum}, nnz is {nnz}"),
                        )
                        .at(at)));
                    }
                    if let Some(bad) =
                        plain::values::<i32>(ib).find(|&x| x < 0 || x as u64 >= u64::from(s.dim))
                    {
                        return Err(loc(Error::new(
                            ErrorKind::IndexOutOfRange,
                            format!("index {bad} is outside 0..{}", s.dim),
                        )
                        .at(at)));
                    }
                    per.push(Loc::Sparse {
                        samples: k,
                        values,
                        indices,
                        sizes,
                    });
                }
            }
        }
        locs.push(per);
    }
    for (q, &len) in lengths.iter().enumerate() {
        let max = locs
            .iter()
            .filter_map(|per| per.get(q))
            .map(Loc::samples)
            .max()
            .unwrap_or(0);
        if max != len {
            return Err(Error::new(
                ErrorKind::SampleCountMismatch,
                format!("sequence {q} has length {len} in the prefix, its longest stream has {max} samples"),
            )
            .in_chunk(i as u64)
            .at(entry.offset));
        }
    }
    if c.offset() != entry.end {
        return Err(Error::new(
            ErrorKind::ChunkSizeMismatch,
            format!(
                "{} unused byte(s) at the end of the chunk",
                entry.end - c.offset()
            ),
        )
        .in_chunk(i as u64)
        .at(c.offset()));
    }
    Ok((lengths, locs))
}

/// A chunk checked by [`Reader::checked_chunk`], to be viewed again with
/// [`Reader::view`] without checking it again (cheap to clone).
#[derive(Debug, Clone)]
pub struct CheckedChunk(Arc<Checked>);

impl CheckedChunk {
    /// The chunk's index in the table.
    pub fn index(&self) -> usize {
        self.0.index
    }
}

/// What checking a chunk found: where every record lies, and the bytes
/// when the source could not lend them.
#[derive(Debug)]
struct Checked {
    index: usize,
    lengths: Vec<u32>,
    /// The chunk's first sample of each sequence.
    starts: Vec<u64>,
    locs: Vec<Vec<Loc>>,
    owned: Option<Vec<u8>>,
}

/// A checked chunk whose records borrow its bytes; see [`Reader::chunk_view`].
#[derive(Debug)]
pub struct ChunkView<'a> {
    /// The chunk's bytes in the memory map (`None`: in `checked.owned`).
    mapped: Option<&'a [u8]>,
    streams: &'a [StreamDesc],
    checked: Arc<Checked>,
}

impl ChunkView<'_> {
    fn data(&self) -> &[u8] {
        self.mapped
            .or(self.checked.owned.as_deref())
            .unwrap_or_default()
    }

    /// Samples per sequence (the chunk's length prefix).
    pub fn sequence_lengths(&self) -> &[u32] {
        &self.checked.lengths
    }

    /// Sequences in the chunk.
    pub fn num_sequences(&self) -> usize {
        self.checked.lengths.len()
    }

    /// The sequence holding the chunk's sample `k` (counted from the
    /// chunk's first sample) and that sequence's first sample; `None` past
    /// the chunk's samples.
    pub fn sequence_of_sample(&self, k: u64) -> Option<(usize, u64)> {
        let q = self
            .checked
            .starts
            .partition_point(|&s| s <= k)
            .checked_sub(1)?;
        let first = *self.checked.starts.get(q)?;
        let len = u64::from(*self.checked.lengths.get(q)?);
        // Sequences of length 0 share their start with the next one; the
        // partition point lands past them.
        (k < first + len).then_some((q, first))
    }

    /// The record of stream `stream` (declaration order) in sequence `seq`,
    /// or `None` if either is out of range.
    pub fn record(&self, stream: usize, seq: usize) -> Option<RecordView<'_>> {
        let desc = self.streams.get(stream)?;
        let data = self.data();
        // Ranges check_chunk found in these very bytes.
        let bytes = |r: &Range<usize>| data.get(r.clone());
        Some(match self.checked.locs.get(stream)?.get(seq)? {
            Loc::Dense { samples, values } => RecordView::Dense(DenseView {
                samples: *samples,
                dim: desc.dim,
                elem: desc.elem,
                bytes: bytes(values)?,
            }),
            Loc::Sparse {
                samples,
                values,
                indices,
                sizes,
            } => RecordView::Sparse(SparseView {
                samples: *samples,
                dim: desc.dim,
                elem: desc.elem,
                values: bytes(values)?,
                indices: bytes(indices)?,
                sizes: bytes(sizes)?,
            }),
        })
    }
}

/// One record of a [`ChunkView`], borrowing its bytes.
#[derive(Debug, Clone, Copy)]
pub enum RecordView<'a> {
    /// A dense stream's record.
    Dense(DenseView<'a>),
    /// A sparse stream's record.
    Sparse(SparseView<'a>),
}

impl RecordView<'_> {
    /// Samples of this stream in the sequence.
    pub fn samples(&self) -> u32 {
        match self {
            RecordView::Dense(d) => d.samples,
            RecordView::Sparse(s) => s.samples,
        }
    }

    /// An owned copy with values widened to f64.
    pub fn to_record(&self) -> Record {
        match self {
            RecordView::Dense(d) => Record::Dense {
                samples: d.samples,
                values: d.to_f64_vec(),
            },
            RecordView::Sparse(s) => Record::Sparse {
                samples: s.samples,
                values: floats(s.values, s.elem),
                indices: s.indices().collect(),
                sizes: s.sizes().collect(),
            },
        }
    }
}

/// Dense samples: `samples × dim` values of the stream's element type,
/// sample after sample.
#[derive(Debug, Clone, Copy)]
pub struct DenseView<'a> {
    /// Number of samples.
    pub samples: u32,
    /// Values per sample.
    pub dim: u32,
    /// Stored element type.
    pub elem: ElemType,
    bytes: &'a [u8],
}

impl<'a> DenseView<'a> {
    /// Number of values (`samples × dim`).
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.size() as usize
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The stored little-endian bytes.
    pub fn raw(&self) -> &'a [u8] {
        self.bytes
    }

    /// The values as `&[f32]` without copying: `Some` for an f32 stream whose
    /// values are 4-byte aligned in memory (always so for a memory-mapped
    /// CBF file, whose fields are all 4-byte multiples after a 12-byte
    /// preamble) on a little-endian machine.
    pub fn as_f32(&self) -> Option<&'a [f32]> {
        (self.elem == ElemType::F32)
            .then(|| plain::cast_slice::<f32>(self.bytes))
            .flatten()
    }

    /// The values as `&[f64]` without copying: `Some` for an f64 stream
    /// whose values happen to be 8-byte aligned, on a little-endian machine.
    pub fn as_f64(&self) -> Option<&'a [f64]> {
        (self.elem == ElemType::F64)
            .then(|| plain::cast_slice::<f64>(self.bytes))
            .flatten()
    }

    /// Copies the values of an f32 stream into `out` (length `len()`).
    pub fn read_f32_into(&self, out: &mut [f32]) -> Result<()> {
        if self.elem != ElemType::F32 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "read_f32_into on an f64 stream (use read_f64_into)",
            ));
        }
        plain::copy_into(self.bytes, out)
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))
    }

    /// Copies the values into `out` (length `len()`), widening f32 exactly.
    pub fn read_f64_into(&self, out: &mut [f64]) -> Result<()> {
        if out.len() != self.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} values for a buffer of {}", self.len(), out.len()),
            ));
        }
        match self.elem {
            ElemType::F64 => plain::copy_into(self.bytes, out)
                .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string())),
            ElemType::F32 => {
                for (d, v) in out.iter_mut().zip(plain::values::<f32>(self.bytes)) {
                    *d = f64::from(v);
                }
                Ok(())
            }
        }
    }

    /// The values widened to f64 in a new vector.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        floats(self.bytes, self.elem)
    }

    /// Sample `j`'s stored bytes (`dim` values), or `None` past the end.
    pub fn sample_raw(&self, j: u32) -> Option<&'a [u8]> {
        let w = self.dim as usize * self.elem.size() as usize;
        let start = (j as usize).checked_mul(w)?;
        self.bytes.get(start..start.checked_add(w)?)
    }
}

/// Sparse samples in compressed sparse column form: all values, all row
/// indices (each checked `< dim`), and the entry count of each sample.
#[derive(Debug, Clone, Copy)]
pub struct SparseView<'a> {
    /// Number of samples (columns).
    pub samples: u32,
    /// Rows per sample.
    pub dim: u32,
    /// Stored element type.
    pub elem: ElemType,
    values: &'a [u8],
    indices: &'a [u8],
    sizes: &'a [u8],
}

impl<'a> SparseView<'a> {
    /// Entries over all samples.
    pub fn nnz(&self) -> usize {
        self.indices.len() / 4
    }

    /// The values' stored little-endian bytes.
    pub fn raw_values(&self) -> &'a [u8] {
        self.values
    }

    /// Row indices of all entries, sample after sample.
    pub fn indices(&self) -> impl ExactSizeIterator<Item = u32> + 'a {
        plain::values::<u32>(self.indices)
    }

    /// Entries per sample.
    pub fn sizes(&self) -> impl ExactSizeIterator<Item = u32> + 'a {
        plain::values::<u32>(self.sizes)
    }

    /// CSC column starts: `samples + 1` offsets into the entries, from 0 to `nnz`.
    pub fn column_starts(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.sizes.len() / 4 + 1);
        let mut at = 0u32;
        out.push(0);
        for n in self.sizes() {
            at = at.saturating_add(n);
            out.push(at);
        }
        out
    }

    /// The values as `&[f32]` without copying (f32 stream, aligned, little-endian).
    pub fn values_f32(&self) -> Option<&'a [f32]> {
        (self.elem == ElemType::F32)
            .then(|| plain::cast_slice::<f32>(self.values))
            .flatten()
    }

    /// The row indices as `&[u32]` without copying (aligned, little-endian).
    pub fn indices_u32(&self) -> Option<&'a [u32]> {
        plain::cast_slice::<u32>(self.indices)
    }

    /// Copies the values into `out` (length `nnz()`), widening f32 exactly.
    pub fn read_values_f64_into(&self, out: &mut [f64]) -> Result<()> {
        if out.len() != self.nnz() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} values for a buffer of {}", self.nnz(), out.len()),
            ));
        }
        for (d, v) in out.iter_mut().zip(floats(self.values, self.elem)) {
            *d = v;
        }
        Ok(())
    }

    /// Each sample's (index, value) entries, values widened to f64.
    pub fn samples_entries(&self) -> Vec<Vec<(u32, f64)>> {
        let values = floats(self.values, self.elem);
        let mut idx = self.indices().zip(values);
        self.sizes()
            .map(|n| idx.by_ref().take(n as usize).collect())
            .collect()
    }
}
