//! Writing TBL v2 files byte-identical to TurboLoader's writer, streaming:
//! sample data goes to a spool file as it arrives, and so do the 24-byte
//! index entries once a few megabytes of them are complete (the index
//! comes before the data in the file, and its length is known only at the
//! end), so memory does not grow with the samples; `finish` assembles the
//! file and renames it into place.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use dataformats_core::codec::{self, Codec};
use dataformats_core::{AtomicFile, ChecksumKind};

use crate::error::{Error, ErrorKind, Result, Stage};
use crate::format::{
    ENTRY_SIZE, FLAG_COMPRESSED, FLAG_HAS_CHECKSUMS, FLAG_HAS_METADATA, HEADER_SIZE, Header,
    IndexEntry, MetadataType, SAMPLE_COMPRESSED, SAMPLE_HAS_METADATA, SampleFormat, VERSION,
};

fn werr(kind: ErrorKind, m: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(kind, m).in_stage(Stage::Write)
}

/// An I/O or core error of the writer, in the write stage.
pub(crate) fn wfail(e: impl Into<Error>) -> Error {
    e.into().in_stage(Stage::Write)
}

/// A spool file beside the target, removed on drop.
#[derive(Debug)]
struct Spool {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    len: u64,
}

impl Spool {
    fn create(beside: &Path, tag: &str) -> io::Result<Self> {
        let name = beside
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = beside
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        for k in 0..100u32 {
            let path = dir.join(format!(".{name}.{tag}-{}-{k}", std::process::id()));
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(f) => {
                    return Ok(Spool {
                        path,
                        file: Some(BufWriter::with_capacity(1 << 20, f)),
                        len: 0,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("cannot create a spool file"))
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("spool closed"))?
            .write_all(b)?;
        self.len += b.len() as u64;
        Ok(())
    }

    /// The bytes written, read back from the start (the spool is closed
    /// for writing).
    fn read_back(&mut self) -> io::Result<io::Take<File>> {
        let w = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("spool closed"))?;
        let mut f = w.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f.take(self.len))
    }

    fn copy_into(&mut self, out: &mut impl Write) -> io::Result<()> {
        let copied = io::copy(&mut self.read_back()?, out)?;
        if copied != self.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "spool file shrank",
            ));
        }
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where sample data goes as it comes.
#[derive(Debug)]
enum DataOut {
    /// A spool file, copied in after the index by [`Writer::finish`].
    Spool(Spool),
    /// The target file itself, after room for the header and the index of
    /// `samples` samples; `len` bytes of data written so far.
    Direct {
        file: BufWriter<AtomicFile>,
        samples: u64,
        len: u64,
    },
}

impl DataOut {
    /// Bytes of data written so far.
    fn len(&self) -> u64 {
        match self {
            DataOut::Spool(s) => s.len,
            DataOut::Direct { len, .. } => *len,
        }
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            DataOut::Spool(s) => s.write(b),
            DataOut::Direct { file, len, .. } => {
                file.write_all(b)?;
                *len += b.len() as u64;
                Ok(())
            }
        }
    }
}

/// Bytes of complete index entries kept in memory before they go to the
/// index spool.
const INDEX_MEMORY: usize = 8 << 20;

/// The index of the samples added so far: the first `spooled` entries in
/// a spool file (created once [`INDEX_MEMORY`] of them are complete),
/// the others in memory, of which the first `ready` are complete and the
/// rest wait for their group's stored bytes from the pool. Offsets count
/// from the start of the data until [`Index::write_into`] places them.
#[derive(Debug)]
struct Index {
    /// The file the spool goes beside.
    target: PathBuf,
    spool: Option<Spool>,
    spooled: u64,
    kept: Vec<IndexEntry>,
    ready: usize,
    /// Spooled samples given metadata after they were spooled, a bit each.
    marked: Vec<u64>,
    /// Bytes of complete entries kept before they are spooled.
    memory: usize,
}

impl Index {
    fn new(target: PathBuf) -> Self {
        Index {
            target,
            spool: None,
            spooled: 0,
            kept: Vec::new(),
            ready: 0,
            marked: Vec::new(),
            memory: INDEX_MEMORY,
        }
    }

    /// Samples added.
    fn len(&self) -> u64 {
        self.spooled + self.kept.len() as u64
    }

    /// Adds a sample's entry, complete (all samples before it are) or
    /// waiting for its group.
    fn push(&mut self, entry: IndexEntry, complete: bool) -> Result<()> {
        self.kept.push(entry);
        match complete {
            true => self.complete_through(self.len()),
            false => Ok(()),
        }
    }

    /// The entries of samples `first..first + n`, waiting for their group.
    fn waiting(&mut self, first: u64, n: usize) -> Result<&mut [IndexEntry]> {
        let at = first
            .checked_sub(self.spooled)
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k >= self.ready);
        at.and_then(|k| self.kept.get_mut(k..))
            .and_then(|s| s.get_mut(..n))
            .ok_or_else(|| werr(ErrorKind::IndexRange, "encoded samples past the index"))
    }

    /// Every sample before `end` is complete: spools the complete entries
    /// once they fill `memory` ([`INDEX_MEMORY`]).
    fn complete_through(&mut self, end: u64) -> Result<()> {
        let done = usize::try_from(end.saturating_sub(self.spooled)).unwrap_or(usize::MAX);
        self.ready = self.ready.max(done.min(self.kept.len()));
        if self.ready * ENTRY_BYTES < self.memory {
            return Ok(());
        }
        let spool = match &mut self.spool {
            Some(s) => s,
            None => self
                .spool
                .insert(Spool::create(&self.target, "index").map_err(wfail)?),
        };
        for e in self.kept.drain(..self.ready) {
            spool.write(&e.to_bytes()).map_err(wfail)?;
        }
        self.spooled += self.ready as u64;
        self.ready = 0;
        Ok(())
    }

    /// Marks sample `i` as having metadata.
    fn mark(&mut self, i: u64) -> Result<()> {
        let n = self.len();
        if i < self.spooled {
            let word = usize::try_from(i / 64).unwrap_or(usize::MAX);
            if self.marked.len() <= word {
                self.marked.resize(word + 1, 0);
            }
            if let Some(w) = self.marked.get_mut(word) {
                *w |= 1 << (i % 64);
            }
            return Ok(());
        }
        let e = usize::try_from(i - self.spooled)
            .ok()
            .and_then(|k| self.kept.get_mut(k))
            .ok_or_else(|| {
                werr(
                    ErrorKind::IndexRange,
                    format!("metadata for sample {i}, but only {n} sample(s) were added"),
                )
            })?;
        e.flags |= SAMPLE_HAS_METADATA;
        Ok(())
    }

    /// Writes every entry to `out`, its offset moved by `data_start` (all
    /// of them complete).
    fn write_into(&mut self, out: &mut impl Write, data_start: u64) -> Result<()> {
        if let Some(spool) = &mut self.spool {
            let mut spooled = spool.read_back().map_err(wfail)?;
            let mut buf = vec![0u8; 4096 * ENTRY_BYTES];
            let mut i = 0u64;
            while i < self.spooled {
                let n = usize::try_from((self.spooled - i).min(4096)).unwrap_or(4096);
                let chunk = buf.get_mut(..n * ENTRY_BYTES).unwrap_or_default();
                spooled.read_exact(chunk).map_err(wfail)?;
                for e in chunk.chunks_exact_mut(ENTRY_BYTES) {
                    let Some((offset, rest)) = e.split_first_chunk_mut::<8>() else {
                        continue;
                    };
                    *offset = (u64::from_le_bytes(*offset) + data_start).to_le_bytes();
                    let word = usize::try_from(i / 64).unwrap_or(usize::MAX);
                    let word = self.marked.get(word).copied().unwrap_or(0);
                    if let Some(flags) = rest.get_mut(FLAGS_AT - 8)
                        && (word >> (i % 64)) & 1 == 1
                    {
                        *flags |= SAMPLE_HAS_METADATA;
                    }
                    i += 1;
                }
                out.write_all(chunk).map_err(wfail)?;
            }
        }
        for e in &self.kept {
            let mut e = *e;
            e.offset += data_start;
            out.write_all(&e.to_bytes()).map_err(wfail)?;
        }
        Ok(())
    }
}

/// Where an index entry's flags byte lies in it.
const FLAGS_AT: usize = 21;

/// An index entry's size.
const ENTRY_BYTES: usize = ENTRY_SIZE as usize;

/// Where the data of a file of `samples` samples starts: after the header
/// and the index, whose end the header's 32-bit `header_size` must hold.
fn data_start(samples: u64) -> Result<u64> {
    samples
        .checked_mul(ENTRY_SIZE)
        .and_then(|i| i.checked_add(HEADER_SIZE))
        .filter(|&d| u32::try_from(d).is_ok())
        .ok_or_else(|| {
            werr(
                ErrorKind::InvalidArgument,
                format!(
                    "{samples} samples: a TBL v2 index ends where the header's 32-bit \
                     header_size says, so a file holds at most {} samples",
                    (u64::from(u32::MAX) - HEADER_SIZE) / ENTRY_SIZE
                ),
            )
        })
}

/// What the writer needs to know about a sample besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleInfo {
    /// Format code.
    pub format: SampleFormat,
    /// Width (0 = unknown).
    pub width: u16,
    /// Height (0 = unknown).
    pub height: u16,
}

/// Whether a writer tries to compress samples (TurboLoader's switch; its
/// converter's default is [`Compression::Lz4`], `--no-compress` is
/// [`Compression::None`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Every sample stored as is.
    None,
    /// Each sample as an LZ4 block when that is strictly smaller.
    Lz4,
}

/// One sample, LZ4-compressed when `compression` asks for it and that is
/// strictly smaller: the stored bytes and the index entry (offset 0, to be
/// placed by the writer).
pub fn encode_sample(
    data: &[u8],
    info: SampleInfo,
    compression: Compression,
) -> Result<(Vec<u8>, IndexEntry)> {
    let mut stored = Vec::new();
    let entry = encode_sample_into(data, info, compression, &mut stored)?;
    Ok((stored, entry))
}

/// [`encode_sample`], appending the stored bytes to `out`.
fn encode_sample_into(
    data: &[u8],
    info: SampleInfo,
    compression: Compression,
    out: &mut Vec<u8>,
) -> Result<IndexEntry> {
    let uncompressed_size = sample_size(data.len())?;
    let crc = ChecksumKind::Crc16Modbus.digest(data).value().unwrap_or(0) as u16;
    let start = out.len();
    let mut compressed = false;
    if compression == Compression::Lz4 && !data.is_empty() {
        let n = codec::compress_append(Codec::Lz4Block, data, None, out)
            .map_err(|e| werr(ErrorKind::InvalidArgument, e.to_string()))?;
        compressed = n < data.len();
        if !compressed {
            out.truncate(start);
        }
    }
    if !compressed {
        out.extend_from_slice(data);
    }
    Ok(IndexEntry {
        offset: 0,
        // At most the sample's own size, which fits.
        size: u32::try_from(out.len() - start).unwrap_or(uncompressed_size),
        uncompressed_size,
        width: info.width,
        height: info.height,
        format: info.format,
        flags: if compressed { SAMPLE_COMPRESSED } else { 0 },
        checksum: crc,
    })
}

/// A sample's length as the index stores it.
fn sample_size(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| werr(ErrorKind::InvalidArgument, "a sample must be under 4 GiB"))
}

/// Sample bytes gathered before they go to the pool as one piece of work.
const GROUP_BYTES: usize = 1 << 20;
/// Samples in one piece of work at most (when they are small).
const GROUP_SAMPLES: usize = 16_384;
/// Bytes of samples handed to the pool and not yet written, at most.
const ENCODING_BYTES: usize = 64 << 20;

/// Samples waiting to be encoded on a pool thread: their bytes back to
/// back, each one's length and info, and the index of the first.
#[derive(Debug, Default)]
struct Group {
    data: Vec<u8>,
    samples: Vec<(usize, SampleInfo)>,
    first: u64,
}

/// A group encoded: the index of its first sample, the stored bytes back
/// to back and each sample's entry (offset 0); or the first sample that
/// could not be encoded.
type Encoded = Result<(u64, Vec<u8>, Vec<IndexEntry>)>;

fn encode_group(g: Group, compression: Compression) -> Encoded {
    let mut out = Vec::with_capacity(g.data.len());
    let mut entries = Vec::with_capacity(g.samples.len());
    let mut rest = g.data.as_slice();
    for (k, &(len, info)) in g.samples.iter().enumerate() {
        let (data, after) = rest.split_at(len.min(rest.len()));
        rest = after;
        let e = encode_sample_into(data, info, compression, &mut out)
            .map_err(|e| e.in_sample(g.first + k as u64))?;
        entries.push(e);
    }
    Ok((g.first, out, entries))
}

/// How the writer encodes samples.
#[derive(Debug)]
enum Encoding {
    /// On the calling thread, until a few megabytes show whether the
    /// samples are worth a pool.
    Calling,
    /// On the calling thread to the end.
    Serial,
    /// On a pool of threads, a group at a time.
    Pool(Box<dataformats_core::parallel::OrderedPool<Group, Encoded>>),
}

/// A streaming TBL v2 writer.
///
/// Output is byte-for-byte what TurboLoader's `TblWriterV2` writes for the
/// same `add_sample` / `add_metadata` calls (LZ4 through liblz4's
/// `LZ4_compress_default`, kept only when strictly smaller), on any
/// number of threads ([`Writer::set_threads`]).
#[derive(Debug)]
pub struct Writer {
    target: PathBuf,
    compression: Compression,
    index: Index,
    data: DataOut,
    meta: Spool,
    has_metadata: bool,
    /// Threads asked for by [`Writer::set_threads`] (0: every core).
    threads: usize,
    encoding: Encoding,
    /// Sample bytes added so far.
    added: u64,
    /// Samples not yet handed to the pool.
    group: Group,
    /// One sample's stored bytes on the calling thread.
    scratch: Vec<u8>,
}

impl Writer {
    /// Starts a file at `path` (it appears when [`Writer::finish`] succeeds).
    /// Sample data goes to a spool file beside it, copied in after the
    /// index when the number of samples is known at the end.
    pub fn create(path: impl AsRef<Path>, compression: Compression) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let data = DataOut::Spool(Spool::create(&target, "data").map_err(wfail)?);
        Self::with_data(target, compression, data)
    }

    /// [`Writer::create`] for a file that will hold exactly `samples`
    /// samples: their data goes straight into the file after room for
    /// their index, written once instead of spooled and copied.
    /// [`Writer::finish`] fails (and no file appears) when another number
    /// of samples was added.
    pub fn create_sized(
        path: impl AsRef<Path>,
        compression: Compression,
        samples: u64,
    ) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let mut file =
            BufWriter::with_capacity(1 << 20, AtomicFile::create(&target).map_err(wfail)?);
        file.seek(SeekFrom::Start(data_start(samples)?))
            .map_err(wfail)?;
        let data = DataOut::Direct {
            file,
            samples,
            len: 0,
        };
        Self::with_data(target, compression, data)
    }

    fn with_data(target: PathBuf, compression: Compression, data: DataOut) -> Result<Self> {
        Ok(Writer {
            data,
            meta: Spool::create(&target, "meta").map_err(wfail)?,
            index: Index::new(target.clone()),
            target,
            compression,
            has_metadata: false,
            threads: 0,
            encoding: Encoding::Calling,
            added: 0,
            group: Group::default(),
            scratch: Vec::new(),
        })
    }

    /// Compresses and checksums samples on `threads` threads (0, the
    /// default: every core; 1: only the calling thread), in groups of
    /// about a megabyte, written in the order they were added: the file is
    /// the same either way. The first few megabytes of samples are encoded
    /// on the calling thread; the pool starts once more come. An error in
    /// a sample encoded on the pool (one over LZ4's 2 GiB) is returned by
    /// a later call or by [`Writer::finish`], naming the sample.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// Number of samples added so far.
    pub fn len(&self) -> usize {
        usize::try_from(self.index.len()).unwrap_or(usize::MAX)
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }

    /// Adds a sample; returns its index.
    pub fn add_sample(&mut self, data: &[u8], info: SampleInfo) -> Result<u64> {
        let i = self.index.len();
        self.added += data.len() as u64;
        if matches!(self.encoding, Encoding::Calling)
            && self.added >= dataformats_core::parallel::MIN_BYTES
        {
            self.encoding = match dataformats_core::parallel::threads(self.threads) {
                t if t > 1 => {
                    let c = self.compression;
                    Encoding::Pool(Box::new(
                        dataformats_core::parallel::OrderedPool::new(
                            t,
                            4 * t,
                            ENCODING_BYTES,
                            move |g| encode_group(g, c),
                        )
                        .map_err(wfail)?,
                    ))
                }
                _ => Encoding::Serial,
            };
            self.group.first = i;
        }
        if !matches!(self.encoding, Encoding::Pool(_)) {
            self.scratch.clear();
            let mut entry = encode_sample_into(data, info, self.compression, &mut self.scratch)
                .map_err(|e| e.in_sample(i))?;
            entry.offset = self.data.len();
            self.data.write(&self.scratch).map_err(wfail)?;
            self.index.push(entry, true)?;
            return Ok(i);
        }
        // The entry is placed now (metadata may mark it); its stored size,
        // offset and checksum come back from the pool.
        let entry = IndexEntry {
            offset: 0,
            size: 0,
            uncompressed_size: sample_size(data.len()).map_err(|e| e.in_sample(i))?,
            width: info.width,
            height: info.height,
            format: info.format,
            flags: 0,
            checksum: 0,
        };
        self.index.push(entry, false)?;
        self.group.data.extend_from_slice(data);
        self.group.samples.push((data.len(), info));
        if self.group.data.len() >= GROUP_BYTES || self.group.samples.len() >= GROUP_SAMPLES {
            self.push_group()?;
        }
        Ok(i)
    }

    /// Hands the samples gathered so far to the pool (if any).
    fn push_group(&mut self) -> Result<()> {
        let Encoding::Pool(pool) = &mut self.encoding else {
            return Ok(());
        };
        if self.group.samples.is_empty() {
            return Ok(());
        }
        let next = Group {
            data: Vec::with_capacity(self.group.data.capacity()),
            samples: Vec::new(),
            first: self.index.len(),
        };
        let g = std::mem::replace(&mut self.group, next);
        let n = g.data.len();
        let (data, index) = (&mut self.data, &mut self.index);
        pool.push(g, n, |e| put_group(data, index, e))
    }

    /// Writes out every sample handed to the pool.
    fn drain(&mut self) -> Result<()> {
        self.push_group()?;
        if let Encoding::Pool(pool) = &mut self.encoding {
            let (data, index) = (&mut self.data, &mut self.index);
            pool.finish(|e| put_group(data, index, e))?;
        }
        Ok(())
    }

    /// Adds a sample already encoded by [`encode_sample`] (so encoding can run
    /// on other threads while the order of samples stays fixed).
    pub fn add_encoded(&mut self, stored: &[u8], entry: &mut IndexEntry) -> Result<u64> {
        self.drain()?;
        self.added += u64::from(entry.uncompressed_size);
        entry.offset = self.data.len();
        self.data.write(stored).map_err(wfail)?;
        self.index.push(*entry, true)?;
        // Samples added after it are grouped from the next index on.
        self.group.first = self.index.len();
        Ok(self.index.len() - 1)
    }

    /// Adds a metadata block for sample `i` (which must already exist).
    pub fn add_metadata(&mut self, i: u64, payload: &[u8], kind: MetadataType) -> Result<()> {
        self.index.mark(i)?;
        let size = u32::try_from(payload.len())
            .map_err(|_| werr(ErrorKind::InvalidArgument, "metadata block too large"))?;
        let mut h = [0u8; 16];
        h[..8].copy_from_slice(&i.to_le_bytes());
        h[8..12].copy_from_slice(&size.to_le_bytes());
        h[12..14].copy_from_slice(&kind.0.to_le_bytes());
        self.meta.write(&h).map_err(wfail)?;
        self.meta.write(payload).map_err(wfail)?;
        self.has_metadata = true;
        Ok(())
    }

    /// Writes header, index, data and metadata, and renames the file into place.
    pub fn finish(mut self) -> Result<Header> {
        self.drain()?;
        let n = self.index.len();
        let data_start = data_start(n)?;
        let meta_offset = if self.has_metadata {
            data_start + self.data.len()
        } else {
            0
        };
        let mut flags = FLAG_HAS_CHECKSUMS;
        if self.compression == Compression::Lz4 {
            flags |= FLAG_COMPRESSED;
        }
        if self.has_metadata {
            flags |= FLAG_HAS_METADATA;
        }
        let mut header = Header {
            version: VERSION,
            num_samples: n,
            header_size: data_start as u32,
            padding1: 0,
            metadata_offset: meta_offset,
            metadata_size: self.meta.len,
            flags,
            checksum: 0,
            reserved: [0; 16],
        };
        header.checksum = header.compute_checksum();
        let index = &mut self.index;
        let mut head = |out: &mut BufWriter<AtomicFile>| -> Result<()> {
            out.write_all(&header.to_bytes()).map_err(wfail)?;
            index.write_into(out, data_start)
        };
        let out = match self.data {
            DataOut::Spool(mut data) => {
                let mut out = BufWriter::with_capacity(
                    1 << 20,
                    AtomicFile::create(&self.target).map_err(wfail)?,
                );
                head(&mut out)?;
                data.copy_into(&mut out).map_err(wfail)?;
                self.meta.copy_into(&mut out).map_err(wfail)?;
                out
            }
            DataOut::Direct {
                mut file, samples, ..
            } => {
                if samples != n {
                    return Err(werr(
                        ErrorKind::InvalidArgument,
                        format!("{samples} samples were announced but {n} added"),
                    ));
                }
                self.meta.copy_into(&mut file).map_err(wfail)?;
                file.seek(SeekFrom::Start(0)).map_err(wfail)?;
                head(&mut file)?;
                file
            }
        };
        let f = out.into_inner().map_err(|e| wfail(e.into_error()))?;
        f.finish().map_err(wfail)?;
        Ok(header)
    }
}

/// Writes a group's stored bytes to the data spool and completes its
/// samples' entries (keeping a metadata mark set meanwhile).
fn put_group(data: &mut DataOut, index: &mut Index, encoded: Encoded) -> Result<()> {
    let (first, bytes, done) = encoded?;
    let n = done.len();
    let slots = index.waiting(first, n)?;
    let mut offset = data.len();
    for (slot, e) in slots.iter_mut().zip(done) {
        *slot = IndexEntry {
            offset,
            flags: e.flags | (slot.flags & SAMPLE_HAS_METADATA),
            ..e
        };
        offset += u64::from(e.size);
    }
    data.write(&bytes).map_err(wfail)?;
    index.complete_through(first + n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_bare_header() {
        let dir = std::env::temp_dir().join(format!("df-tbl-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("empty.tbl");
        let h = Writer::create(&p, Compression::None)
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(h.flags, FLAG_HAS_CHECKSUMS);
        assert_eq!(std::fs::read(&p).unwrap().len(), 64);
        // No spool files are left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file whose index went to the spool a hundred entries at a time is
    /// the file whose index stayed in memory, byte for byte, on one thread
    /// and on three, sized or not, with metadata marking samples already
    /// spooled, kept and still being encoded; the memory held no more than
    /// a hundred entries on one thread.
    #[test]
    fn an_index_spooled_gives_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let info = SampleInfo {
            format: SampleFormat(4),
            width: 3,
            height: 2,
        };
        let n = 3_000u64;
        let sample = |i: u64| -> Vec<u8> {
            let mut rng = dataformats_core::rng::SplitMix64::new(i);
            let len = 1_000 + (rng.next_u64() % 3_000) as usize;
            (0..len)
                .map(|k| (k as u64 % (1 + i % 7)) as u8 ^ (rng.next_u64() as u8 & 3))
                .collect()
        };
        let write = |name: &str, memory: usize, threads: usize, sized: bool| -> Vec<u8> {
            let path = dir.path().join(name);
            let mut w = match sized {
                true => Writer::create_sized(&path, Compression::Lz4, n).unwrap(),
                false => Writer::create(&path, Compression::Lz4).unwrap(),
            };
            w.index.memory = memory;
            w.set_threads(threads);
            let mut most = 0;
            for i in 0..n {
                assert_eq!(w.add_sample(&sample(i), info).unwrap(), i);
                most = most.max(w.index.kept.len());
                if i == 2_000 {
                    // Long spooled, just added (waiting for the pool or kept).
                    w.add_metadata(5, b"a", MetadataType(1)).unwrap();
                    w.add_metadata(1_999, b"b", MetadataType(1)).unwrap();
                    w.add_metadata(i, b"c", MetadataType(1)).unwrap();
                }
            }
            assert!(w.add_metadata(n, b"d", MetadataType(1)).is_err());
            w.add_metadata(n - 1, b"e", MetadataType(1)).unwrap();
            if memory < INDEX_MEMORY {
                assert!(w.index.spooled > 0, "nothing spooled");
                // On one thread no entry waits for the pool.
                assert!(threads > 1 || most <= 100, "{most} entries kept");
            }
            w.finish().unwrap();
            std::fs::read(&path).unwrap()
        };
        let whole = write("whole.tbl", INDEX_MEMORY, 1, false);
        for threads in [1, 3] {
            for sized in [false, true] {
                let name = format!("spooled-{threads}-{sized}.tbl");
                assert!(
                    write(&name, 100 * ENTRY_BYTES, threads, sized) == whole,
                    "{threads} threads, sized {sized}"
                );
            }
        }
        // The marks are in the file.
        let r = crate::read::Reader::open(dir.path().join("whole.tbl")).unwrap();
        let marked: Vec<u64> = (0..n)
            .filter(|&i| r.entry(i as usize).unwrap().has_metadata())
            .collect();
        assert_eq!(marked, [5, 1_999, 2_000, n - 1]);
        // Only the files are left, no spool.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
    }
}
