//! Writing CBF files: streams declared up front, sequences appended, chunks
//! cut by a target size, memory bounded by one chunk (three with
//! [`Writer::write_behind`]), atomic output.

use std::io::{BufWriter, Write};
use std::path::Path;

use dataformats_core::AtomicFile;
use dataformats_core::write_behind::WriteBehind;

use crate::error::{Error, ErrorKind, Result};
use crate::read::{ElemType, MAGIC, StreamDesc, StreamKind, VERSION};

/// How sequences are grouped into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// Close a chunk once its estimated size reaches the target (each chunk
    /// starts counting from zero).
    Target(u64),
    /// ctf2bin's rule, quirks included (`cntk.md` §5.8): one running total
    /// that is never reset, compared with `>=` after every sequence but the
    /// last. Gives ctf2bin's chunk boundaries, so byte-identical files.
    Ctf2bin(u64),
}

/// One stream's data in one sequence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RecordData<'a> {
    /// `samples` dense samples: `samples × dim` values.
    Dense {
        /// Number of samples.
        samples: u32,
        /// The values, sample after sample.
        values: &'a [f64],
    },
    /// `samples` dense samples given as the stream's own little-endian
    /// element bytes (`samples × dim × 4` or `× 8`), written as they are:
    /// every bit pattern, signalling NaN payloads included, is kept.
    DenseBytes {
        /// Number of samples.
        samples: u32,
        /// The element bytes, sample after sample.
        bytes: &'a [u8],
    },
    /// Sparse samples: per sample, its (index, value) entries.
    Sparse(&'a [Vec<(u32, f64)>]),
    /// Sparse samples with each value as the stream element's own bit
    /// pattern (an `f32`'s bits in the low half for float32 streams), written
    /// as it is: NaN payloads included.
    SparseBits(&'a [Vec<(u32, u64)>]),
}

/// Checks a sparse record's counts and indices.
fn check_sparse<T>(s: &StreamDesc, samples: &[Vec<(u32, T)>], signed: bool) -> Result<()> {
    let nnz: usize = samples.iter().map(Vec::len).sum();
    if u32::try_from(samples.len()).is_err() || i32::try_from(nnz).is_err() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("stream {:?}: too many samples or entries", s.name),
        ));
    }
    let bad = |i: u32| {
        if signed {
            i64::from(i as i32) >= i64::from(s.dim)
        } else {
            i >= s.dim
        }
    };
    if let Some((i, _)) = samples.iter().flatten().find(|(i, _)| bad(*i)) {
        return Err(Error::new(
            ErrorKind::IndexOutOfRange,
            format!("stream {:?}: index {i} outside 0..{}", s.name, s.dim),
        ));
    }
    Ok(())
}

/// Appends a sparse record (counts, values, indices, per-sample counts)
/// and returns (samples, estimated bytes).
fn put_sparse<T: Copy>(
    buf: &mut Vec<u8>,
    samples: &[Vec<(u32, T)>],
    elem_size: u64,
    put: impl Fn(&mut Vec<u8>, T),
) -> (u32, u64) {
    let k = samples.len() as u32;
    let nnz = samples.iter().map(Vec::len).sum::<usize>() as i32;
    buf.extend_from_slice(&k.to_le_bytes());
    buf.extend_from_slice(&nnz.to_le_bytes());
    for (_, v) in samples.iter().flatten() {
        put(buf, *v);
    }
    for (i, _) in samples.iter().flatten() {
        buf.extend_from_slice(&i.to_le_bytes());
    }
    for smp in samples {
        buf.extend_from_slice(&(smp.len() as u32).to_le_bytes());
    }
    let estimate = samples
        .iter()
        .map(|smp| smp.len() as u64 * (4 + elem_size) + 4)
        .sum();
    (k, estimate)
}

/// Where a [`Writer`]'s bytes go.
#[derive(Debug)]
enum Out {
    /// Written on the calling thread.
    Here(BufWriter<AtomicFile>),
    /// Written on a thread of their own.
    Behind(WriteBehind<AtomicFile>),
    /// Between the two (only if switching failed).
    Gone,
}

/// Records of at least this many bytes are handed to the writing thread as
/// they are, without a copy.
const HAND_OVER: usize = 1 << 20;

/// Buffers are sized for chunks of at most this many bytes (64 MiB).
const MAX_BUFFERED_TARGET: u64 = 64 << 20;

/// The error for writing to [`Out::Gone`].
fn lost() -> std::io::Error {
    std::io::Error::other("the output was lost by an earlier error")
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Here(w) => w.write(b),
            Out::Behind(w) => w.write(b),
            Out::Gone => Err(lost()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Here(w) => w.flush(),
            Out::Behind(w) => w.flush(),
            Out::Gone => Err(lost()),
        }
    }
}

/// A streaming CBF writer.
#[derive(Debug)]
pub struct Writer {
    out: Out,
    streams: Vec<StreamDesc>,
    chunking: Chunking,
    pos: u64,
    table: Vec<(u64, u32, u32)>,
    /// Current chunk: sequence lengths and, per stream, the records' bytes.
    lengths: Vec<u32>,
    records: Vec<Vec<u8>>,
    chunk_estimate: u64,
    running_total: u64,
    close_pending: bool,
    signed_indices: bool,
}

pub(crate) fn put_value(out: &mut Vec<u8>, elem: ElemType, v: f64) {
    match elem {
        // A plain cast, as ctf2bin's C conversion: overflow gives ±inf, NaN keeps its sign.
        ElemType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        ElemType::F64 => out.extend_from_slice(&v.to_le_bytes()),
    }
}

impl Writer {
    /// Starts a file at `path` with `streams` (names must be unique; sparse
    /// dimensions below 2^31). The file appears when [`Writer::finish`] succeeds.
    pub fn create(
        path: impl AsRef<Path>,
        streams: &[StreamDesc],
        chunking: Chunking,
    ) -> Result<Self> {
        let mut names = std::collections::HashSet::new();
        for s in streams {
            if !names.insert(&s.name) {
                return Err(Error::new(
                    ErrorKind::DuplicateStream,
                    format!("stream {:?} declared twice", s.name),
                ));
            }
            if s.kind == StreamKind::Sparse && s.dim >= 1 << 31 {
                return Err(Error::new(
                    ErrorKind::BadSampleDim,
                    format!("sparse stream {:?} has dimension {}", s.name, s.dim),
                ));
            }
        }
        let f = AtomicFile::create(path).map_err(Error::from)?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let io = Error::from;
        out.write_all(MAGIC).map_err(io)?;
        out.write_all(&VERSION.to_le_bytes()).map_err(io)?;
        Ok(Writer {
            out: Out::Here(out),
            records: vec![Vec::new(); streams.len()],
            streams: streams.to_vec(),
            chunking,
            pos: 12,
            table: Vec::new(),
            lengths: Vec::new(),
            chunk_estimate: 0,
            running_total: 0,
            close_pending: false,
            signed_indices: false,
        })
    }

    /// Takes sparse indices as the bit patterns of `i32`s, as ctf2bin.py
    /// does: an index is then refused only when it is `>= dim` as a signed
    /// number, so a negative index is written as is. Such a file is invalid
    /// (CNTK's readers and ours reject it); this exists only to reproduce
    /// ctf2bin's output byte for byte (`--compat ctf2bin`).
    pub fn set_signed_indices(&mut self, on: bool) {
        self.signed_indices = on;
    }

    /// Writes the file on a thread of its own from now on: a finished chunk
    /// is handed over (its large records without a copy) and the caller goes
    /// on with the next one while the kernel takes the bytes. For callers
    /// that keep other threads busy (a parallel conversion), whose work
    /// would otherwise wait while a large chunk is written. Memory is then
    /// bounded by about three chunks (one being filled, and up to the chunk
    /// size, at most 64 MiB, plus 16 MiB waiting to be written) instead of
    /// one. Write errors are returned by a later call.
    pub fn write_behind(&mut self) -> Result<()> {
        let io = Error::from;
        match std::mem::replace(&mut self.out, Out::Gone) {
            Out::Here(b) => {
                let f = b.into_inner().map_err(|e| io(e.into_error()))?;
                // Room for a whole chunk and then some, so that the chunk
                // after a large one is handed over without waiting.
                let room = self.buffered_target() + (16 << 20);
                self.out = Out::Behind(WriteBehind::new(f, HAND_OVER, room).map_err(io)?);
            }
            other => self.out = other,
        }
        Ok(())
    }

    /// Appends one sequence: one entry per stream, in declaration order.
    pub fn add_sequence(&mut self, data: &[RecordData<'_>]) -> Result<()> {
        if data.len() != self.streams.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} record(s) for {} stream(s)",
                    data.len(),
                    self.streams.len()
                ),
            ));
        }
        if self.close_pending {
            self.flush_chunk()?;
            self.close_pending = false;
        }
        // Check every record before writing any, so a refused sequence leaves no bytes behind.
        for (s, d) in self.streams.iter().zip(data) {
            match (s.kind, d) {
                (StreamKind::Dense, RecordData::Dense { samples, values }) => {
                    if values.len() as u64 != u64::from(*samples) * u64::from(s.dim) {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!(
                                "stream {:?}: {} values for {samples} samples of dimension {}",
                                s.name,
                                values.len(),
                                s.dim
                            ),
                        ));
                    }
                }
                (StreamKind::Dense, RecordData::DenseBytes { samples, bytes }) => {
                    let want = u64::from(*samples) * u64::from(s.dim) * s.elem.size();
                    if bytes.len() as u64 != want {
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!(
                                "stream {:?}: {} bytes for {samples} samples of dimension {} ({want} needed)",
                                s.name,
                                bytes.len(),
                                s.dim
                            ),
                        ));
                    }
                }
                (StreamKind::Sparse, RecordData::Sparse(samples)) => {
                    check_sparse(s, samples, self.signed_indices)?
                }
                (StreamKind::Sparse, RecordData::SparseBits(samples)) => {
                    check_sparse(s, samples, self.signed_indices)?
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("stream {:?} is {:?}, the record is not", s.name, s.kind),
                    ));
                }
            }
        }
        let mut len = 0u32;
        let mut estimate = 0u64;
        let room = self.large_chunk_room();
        for ((s, d), buf) in self.streams.iter().zip(data).zip(self.records.iter_mut()) {
            if let Some(room) = room.filter(|_| buf.capacity() < HAND_OVER) {
                dataformats_core::buffers::reserve_large(buf, room);
            }
            let e = s.elem.size();
            match (s.kind, d) {
                (StreamKind::Dense, RecordData::Dense { samples, values }) => {
                    buf.extend_from_slice(&samples.to_le_bytes());
                    for &v in *values {
                        put_value(buf, s.elem, v);
                    }
                    len = len.max(*samples);
                    estimate += u64::from(*samples) * u64::from(s.dim) * e;
                }
                (StreamKind::Dense, RecordData::DenseBytes { samples, bytes }) => {
                    buf.extend_from_slice(&samples.to_le_bytes());
                    buf.extend_from_slice(bytes);
                    len = len.max(*samples);
                    estimate += bytes.len() as u64;
                }
                (StreamKind::Sparse, RecordData::Sparse(samples)) => {
                    let elem = s.elem;
                    let (k, est) = put_sparse(buf, samples, e, |b, v| put_value(b, elem, v));
                    len = len.max(k);
                    estimate += est;
                }
                (StreamKind::Sparse, RecordData::SparseBits(samples)) => {
                    let elem = s.elem;
                    let (k, est) = put_sparse(buf, samples, e, |b, v| match elem {
                        ElemType::F32 => b.extend_from_slice(&(v as u32).to_le_bytes()),
                        ElemType::F64 => b.extend_from_slice(&v.to_le_bytes()),
                    });
                    len = len.max(k);
                    estimate += est;
                }
                _ => {}
            }
        }
        self.lengths.push(len);
        match self.chunking {
            Chunking::Target(t) => {
                self.chunk_estimate += estimate;
                if self.chunk_estimate >= t {
                    self.close_pending = true;
                }
            }
            Chunking::Ctf2bin(t) => {
                self.running_total += estimate;
                if self.running_total >= t {
                    // Closed only if another sequence follows (the last one stays open).
                    self.close_pending = true;
                }
            }
        }
        Ok(())
    }

    /// With ctf2bin's chunking, once one chunk has closed every later chunk
    /// holds a single sequence (its running total is never reset).
    fn single_sequence_chunks(&self) -> bool {
        matches!(self.chunking, Chunking::Ctf2bin(t) if self.running_total >= t)
    }

    /// The room a record buffer of a large chunk is given at once (see
    /// [`dataformats_core::buffers::reserve_large`]): the chunk's target
    /// (at most 64 MiB) and one more sequence's worth. `None` for small
    /// chunks, which grow as usual.
    fn large_chunk_room(&self) -> Option<usize> {
        let target = self.buffered_target();
        if target < 4 << 20 || self.single_sequence_chunks() {
            return None;
        }
        Some(target + HAND_OVER)
    }

    /// The chunk size target, capped at [`MAX_BUFFERED_TARGET`]: what the
    /// writer sizes buffers by (a larger target still makes larger chunks).
    fn buffered_target(&self) -> usize {
        let (Chunking::Target(t) | Chunking::Ctf2bin(t)) = self.chunking;
        usize::try_from(t.min(MAX_BUFFERED_TARGET)).unwrap_or(MAX_BUFFERED_TARGET as usize)
    }

    fn flush_chunk(&mut self) -> Result<()> {
        let io = Error::from;
        let start = self.pos;
        let mut samples = 0u64;
        for l in &self.lengths {
            self.out.write_all(&l.to_le_bytes()).map_err(io)?;
            samples += u64::from(*l);
        }
        self.pos += 4 * self.lengths.len() as u64;
        // Once every later chunk holds a single sequence, the large
        // buffers are not needed again, and are freed now rather than at
        // the end.
        let small_from_now = self.single_sequence_chunks();
        for r in &mut self.records {
            self.pos += r.len() as u64;
            match &mut self.out {
                Out::Behind(w) if r.len() >= HAND_OVER => {
                    // Handed over as it is; a buffer the thread has written
                    // takes its place (its pages already in memory).
                    let next = if small_from_now {
                        Vec::new()
                    } else {
                        w.spare()
                    };
                    w.write_vec(std::mem::replace(r, next)).map_err(io)?;
                }
                out => {
                    out.write_all(r).map_err(io)?;
                    r.clear();
                    if small_from_now && r.capacity() > HAND_OVER {
                        *r = Vec::new();
                    }
                }
            }
        }
        let nseq = u32::try_from(self.lengths.len())
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "too many sequences in a chunk"))?;
        let samples = u32::try_from(samples)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "too many samples in a chunk"))?;
        self.table.push((start, nseq, samples));
        self.lengths.clear();
        self.chunk_estimate = 0;
        Ok(())
    }

    /// Writes the last chunk, the header and the footer, and renames the file into place.
    pub fn finish(mut self) -> Result<()> {
        let io = Error::from;
        // The open chunk is always written (an empty input gives one empty chunk).
        self.flush_chunk()?;
        let h = self.pos;
        let mut head = Vec::new();
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&(self.table.len() as u32).to_le_bytes());
        head.extend_from_slice(&(self.streams.len() as u32).to_le_bytes());
        for s in &self.streams {
            head.push(match s.kind {
                StreamKind::Dense => 0,
                StreamKind::Sparse => 1,
            });
            head.extend_from_slice(&(s.name.len() as u32).to_le_bytes());
            head.extend_from_slice(s.name.as_bytes());
            head.push(match s.elem {
                ElemType::F32 => 0,
                ElemType::F64 => 1,
            });
            head.extend_from_slice(&s.dim.to_le_bytes());
        }
        for (off, nseq, nsamp) in &self.table {
            head.extend_from_slice(&(*off as i64).to_le_bytes());
            head.extend_from_slice(&nseq.to_le_bytes());
            head.extend_from_slice(&nsamp.to_le_bytes());
        }
        head.extend_from_slice(&(h as i64).to_le_bytes());
        self.out.write_all(&head).map_err(io)?;
        let f = match self.out {
            Out::Here(b) => b.into_inner().map_err(|e| io(e.into_error()))?,
            Out::Behind(w) => w.into_inner().map_err(io)?,
            Out::Gone => {
                return Err(io(lost()));
            }
        };
        f.finish().map_err(io)
    }
}
