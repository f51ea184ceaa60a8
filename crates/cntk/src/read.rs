//! Reading CBF files strictly, in the check order of `cntk.md` §4.2.

use std::collections::HashSet;
use std::path::Path;

use dataformats_core::{Limits, Source};

use crate::error::{Error, ErrorKind, Result};

/// The magic, `0x636E746B5F62696E` stored little-endian.
pub const MAGIC: &[u8; 8] = b"nib_ktnc";
/// The only format version.
pub const VERSION: u32 = 1;

/// Dense or sparse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// Every sample is `dim` values.
    Dense,
    /// Every sample is a list of (index, value) entries.
    Sparse,
}

/// Element type of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ElemType {
    /// Size in bytes.
    pub const fn size(self) -> u64 {
        match self {
            ElemType::F32 => 4,
            ElemType::F64 => 8,
        }
    }

    /// `"f32"` or `"f64"`.
    pub const fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }
}

/// A stream descriptor from the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDesc {
    /// Stream name.
    pub name: String,
    /// Dense or sparse.
    pub kind: StreamKind,
    /// Element type.
    pub elem: ElemType,
    /// Sample dimension.
    pub dim: u32,
}

/// A chunk-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Absolute offset of the chunk.
    pub offset: u64,
    /// Sequences in the chunk.
    pub num_sequences: u32,
    /// Samples in the chunk (sum of its sequence lengths).
    pub num_samples: u32,
    /// Where the chunk's bytes end (the next chunk's offset, or the header).
    pub end: u64,
}

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

struct Cursor<'a> {
    src: &'a Source,
    pos: u64,
    end: u64,
}

impl Cursor<'_> {
    fn bytes(&mut self, n: u64, kind: ErrorKind, what: &str) -> Result<Vec<u8>> {
        let stop = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.end)
            .ok_or_else(|| {
                Error::new(
                    kind,
                    format!(
                        "{what} ({n} bytes) passes the end of its region at {}",
                        self.end
                    ),
                )
                .at(self.pos)
            })?;
        let v = self.src.read_vec(self.pos, n, &Limits::none())?;
        self.pos = stop;
        Ok(v)
    }

    fn u8(&mut self, kind: ErrorKind, what: &str) -> Result<u8> {
        Ok(self.bytes(1, kind, what)?.first().copied().unwrap_or(0))
    }

    fn u32(&mut self, kind: ErrorKind, what: &str) -> Result<u32> {
        let b = self.bytes(4, kind, what)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(&b);
        Ok(u32::from_le_bytes(a))
    }
}

/// The first `N` bytes of `b` (zero-filled if shorter).
fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    a
}

/// A cursor over a chunk already in memory (borrowed from a map when possible).
struct SliceCursor<'a> {
    data: &'a [u8],
    base: u64,
    pos: usize,
}

impl<'a> SliceCursor<'a> {
    fn bytes(&mut self, n: u64, kind: ErrorKind, what: &str) -> Result<&'a [u8]> {
        let at = self.base + self.pos as u64;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(Error::new(
                kind,
                format!(
                    "{what} ({n} bytes) passes the end of the chunk at {}",
                    self.base + self.data.len() as u64
                ),
            )
            .at(at));
        };
        let out = self.data.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    fn u32(&mut self, kind: ErrorKind, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(arr::<4>(self.bytes(4, kind, what)?)))
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

fn floats(b: &[u8], elem: ElemType) -> Vec<f64> {
    match elem {
        ElemType::F32 => b
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(arr::<4>(c))))
            .collect(),
        ElemType::F64 => b
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                f64::from_le_bytes(a)
            })
            .collect(),
    }
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(arr::<4>(c)))
        .collect()
}

impl Reader {
    /// Opens the file at `path` (positioned reads).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_limits(Source::open(path)?, Limits::default())
    }

    /// Opens a file in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_limits(Source::from_vec(bytes), Limits::default())
    }

    /// Opens `src`, checking everything up to the chunk table (checks 1–8).
    pub fn with_limits(src: Source, limits: Limits) -> Result<Self> {
        let size = src.len();
        if size < 20 {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("file of {size} bytes is shorter than 20"),
            )
            .at(0));
        }
        let head = src.read_vec(0, 12, &limits)?;
        if head.get(..8) != Some(&MAGIC[..]) {
            return Err(Error::new(ErrorKind::BadMagic, "no cntk_bin magic at offset 0").at(0));
        }
        let version = u32::from_le_bytes(arr::<4>(head.get(8..).unwrap_or_default()));
        if version != VERSION {
            return Err(Error::new(
                ErrorKind::BadVersion,
                format!("version {version} (only 1 exists)"),
            )
            .at(8));
        }
        let foot = src.read_vec(size - 8, 8, &limits)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&foot);
        let h = i64::from_le_bytes(a);
        let footer_at = size - 8;
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
        if src.read_vec(h, 8, &limits)?.as_slice() != MAGIC {
            return Err(
                Error::new(ErrorKind::BadHeaderMagic, "no magic at the header offset").at(h),
            );
        }
        let mut c = Cursor {
            src: &src,
            pos: h + 8,
            end: footer_at,
        };
        let num_chunks = c.u32(ErrorKind::Truncated, "chunk count")?;
        let num_streams = c.u32(ErrorKind::Truncated, "stream count")?;
        let mut streams = Vec::new();
        let mut names = HashSet::new();
        for i in 0..num_streams {
            let at = c.pos;
            let enc = c.u8(ErrorKind::Truncated, "stream encoding")?;
            let kind = match enc {
                0 => StreamKind::Dense,
                1 => StreamKind::Sparse,
                e => {
                    return Err(Error::new(
                        ErrorKind::BadEncoding,
                        format!("stream {i} has encoding type {e}"),
                    )
                    .at(at));
                }
            };
            let n = c.u32(ErrorKind::Truncated, "stream name length")?;
            let name_at = c.pos;
            let name = c.bytes(u64::from(n), ErrorKind::Truncated, "stream name")?;
            let name = String::from_utf8(name).map_err(|_| {
                Error::new(
                    ErrorKind::BadName,
                    format!("stream {i}'s name is not UTF-8"),
                )
                .at(name_at)
            })?;
            let et_at = c.pos;
            let elem = match c.u8(ErrorKind::Truncated, "element type")? {
                0 => ElemType::F32,
                1 => ElemType::F64,
                e => {
                    return Err(Error::new(
                        ErrorKind::BadElemType,
                        format!("stream {name:?} has element type {e}"),
                    )
                    .at(et_at));
                }
            };
            let dim_at = c.pos;
            let dim = c.u32(ErrorKind::Truncated, "sample dimension")?;
            if kind == StreamKind::Sparse && dim >= 1 << 31 {
                return Err(Error::new(
                    ErrorKind::BadSampleDim,
                    format!("sparse stream {name:?} has dimension {dim}"),
                )
                .at(dim_at));
            }
            if !names.insert(name.clone()) {
                return Err(Error::new(
                    ErrorKind::DuplicateStream,
                    format!("stream name {name:?} appears twice"),
                )
                .at(at));
            }
            streams.push(StreamDesc {
                name,
                kind,
                elem,
                dim,
            });
        }
        let table_len = u64::from(num_chunks) * 16;
        let table_at = c.pos;
        let table = c.bytes(table_len, ErrorKind::Truncated, "chunk table")?;
        if c.pos != footer_at {
            return Err(Error::new(
                ErrorKind::BadChunkTable,
                format!(
                    "{} byte(s) between the chunk table and the footer",
                    footer_at - c.pos
                ),
            )
            .at(c.pos));
        }
        let raw: Vec<(i64, u32, u32)> = table
            .chunks_exact(16)
            .map(|e| {
                (
                    i64::from_le_bytes(arr::<8>(e)),
                    u32::from_le_bytes(arr::<4>(e.get(8..).unwrap_or_default())),
                    u32::from_le_bytes(arr::<4>(e.get(12..).unwrap_or_default())),
                )
            })
            .collect();
        if raw.is_empty() && h != 12 {
            return Err(Error::new(
                ErrorKind::BadChunkOffset,
                "no chunks, but data bytes before the header",
            )
            .at(12));
        }
        if let Some(first) = raw.first() {
            if first.0 != 12 {
                return Err(Error::new(
                    ErrorKind::BadChunkOffset,
                    format!("the first chunk starts at {}, not 12", first.0),
                )
                .at(table_at)
                .in_chunk(0));
            }
        }
        let mut chunks = Vec::with_capacity(raw.len());
        for (i, &(off, nseq, nsamp)) in raw.iter().enumerate() {
            let end = raw.get(i + 1).map_or(h as i64, |n| n.0);
            let ok = u64::try_from(off)
                .ok()
                .zip(u64::try_from(end).ok())
                .filter(|&(o, e)| o >= 12 && o <= e && e <= h);
            let Some((o, e)) = ok else {
                return Err(Error::new(
                    ErrorKind::BadChunkOffset,
                    format!("chunk {i} spans {off}..{end}, outside 12..={h} or reversed"),
                )
                .at(table_at + 16 * i as u64)
                .in_chunk(i));
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

    /// Decodes chunk `i`, checking every count, size and index (checks 9–15).
    pub fn read_chunk(&self, i: usize) -> Result<Chunk> {
        let entry = *self.chunks.get(i).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("chunk {i} does not exist"),
            )
        })?;
        let span = entry.end - entry.offset;
        self.limits.check_alloc("chunk", span)?;
        let chunk_bytes = self.src.bytes(entry.offset, span)?;
        let mut c = SliceCursor {
            data: &chunk_bytes,
            base: entry.offset,
            pos: 0,
        };
        let nseq = entry.num_sequences as usize;
        let prefix_bytes = c
            .bytes(
                4 * u64::from(entry.num_sequences),
                ErrorKind::ChunkOverrun,
                "sequence length prefix",
            )
            .map_err(|e| e.in_chunk(i))?;
        let lengths: Vec<u32> = prefix_bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(arr::<4>(b)))
            .collect();
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        if total != u64::from(entry.num_samples) {
            return Err(Error::new(
                ErrorKind::SampleCountMismatch,
                format!(
                    "sequence lengths sum to {total}, the chunk table says {}",
                    entry.num_samples
                ),
            )
            .in_chunk(i)
            .at(entry.offset));
        }
        let mut records = Vec::new();
        for s in &self.streams {
            // Grows with the records actually read, never sized from the file's counts.
            let mut per = Vec::new();
            for q in 0..nseq {
                let at = c.offset();
                let loc = |e: Error| e.in_chunk(i).in_record(q, &s.name);
                let k = c
                    .u32(ErrorKind::ChunkOverrun, "sample count")
                    .map_err(loc)?;
                let e = s.elem.size();
                match s.kind {
                    StreamKind::Dense => {
                        let n = u64::from(k)
                            .checked_mul(u64::from(s.dim))
                            .and_then(|x| x.checked_mul(e))
                            .unwrap_or(u64::MAX);
                        let b = c
                            .bytes(n, ErrorKind::ChunkOverrun, "dense values")
                            .map_err(loc)?;
                        per.push(Record::Dense {
                            samples: k,
                            values: floats(b, s.elem),
                        });
                    }
                    StreamKind::Sparse => {
                        let nnz_at = c.offset();
                        let nnz = c.u32(ErrorKind::ChunkOverrun, "nnz").map_err(loc)? as i32;
                        if nnz < 0 {
                            return Err(loc(Error::new(
                                ErrorKind::BadCount,
                                format!("nnz {nnz} is negative"),
                            )
                            .at(nnz_at)));
                        }
                        let nnz = nnz as u64;
                        let vb = c
                            .bytes(nnz * e, ErrorKind::ChunkOverrun, "sparse values")
                            .map_err(loc)?;
                        let ib = c
                            .bytes(nnz * 4, ErrorKind::ChunkOverrun, "sparse indices")
                            .map_err(loc)?;
                        let sb = c
                            .bytes(
                                u64::from(k) * 4,
                                ErrorKind::ChunkOverrun,
                                "per-sample sizes",
                            )
                            .map_err(loc)?;
                        let sizes = i32s(sb);
                        if let Some(bad) = sizes.iter().find(|&&x| x < 0) {
                            return Err(loc(Error::new(
                                ErrorKind::BadCount,
                                format!("a per-sample size is {bad}"),
                            )
                            .at(at)));
                        }
                        let sum: u64 = sizes.iter().map(|&x| x as u64).sum();
                        if sum != nnz {
                            return Err(loc(Error::new(
                                ErrorKind::NnzMismatch,
                                format!("per-sample sizes sum to {sum}, nnz is {nnz}"),
                            )
                            .at(at)));
                        }
                        let indices = i32s(ib);
                        if let Some(bad) = indices
                            .iter()
                            .find(|&&x| x < 0 || x as u64 >= u64::from(s.dim))
                        {
                            return Err(loc(Error::new(
                                ErrorKind::IndexOutOfRange,
                                format!("index {bad} is outside 0..{}", s.dim),
                            )
                            .at(at)));
                        }
                        per.push(Record::Sparse {
                            samples: k,
                            values: floats(vb, s.elem),
                            indices: indices.into_iter().map(|x| x as u32).collect(),
                            sizes: sizes.into_iter().map(|x| x as u32).collect(),
                        });
                    }
                }
            }
            records.push(per);
        }
        for (q, &len) in lengths.iter().enumerate() {
            let max = records
                .iter()
                .filter_map(|per| per.get(q))
                .map(Record::samples)
                .max()
                .unwrap_or(0);
            if max != len {
                return Err(Error::new(
                    ErrorKind::SampleCountMismatch,
                    format!("sequence {q} has length {len} in the prefix, its longest stream has {max} samples"),
                )
                .in_chunk(i)
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
            .in_chunk(i)
            .at(c.offset()));
        }
        Ok(Chunk {
            sequence_lengths: lengths,
            records,
        })
    }

    /// Decodes every chunk in table order; the first failure is reported.
    pub fn validate(&self) -> Result<()> {
        for i in 0..self.chunks.len() {
            self.read_chunk(i)?;
        }
        Ok(())
    }
}
