//! Writing TBL v2 files byte-identical to TurboLoader's writer, streaming:
//! sample data goes to a spool file as it arrives, so memory holds only the
//! 24-byte index entries; `finish` assembles the file and renames it into
//! place.

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

    fn copy_into(&mut self, out: &mut impl Write) -> io::Result<()> {
        let w = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("spool closed"))?;
        let mut f = w.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        let copied = io::copy(&mut (&mut f).take(self.len), out)?;
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
    entries: Vec<IndexEntry>,
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
            target,
            compression,
            entries: Vec::new(),
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
        self.entries.len()
    }

    /// True before the first sample.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds a sample; returns its index.
    pub fn add_sample(&mut self, data: &[u8], info: SampleInfo) -> Result<u64> {
        let i = self.entries.len() as u64;
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
            self.entries.push(entry);
            return Ok(i);
        }
        // The entry is placed now (metadata may mark it); its stored size,
        // offset and checksum come back from the pool.
        self.entries.push(IndexEntry {
            offset: 0,
            size: 0,
            uncompressed_size: sample_size(data.len()).map_err(|e| e.in_sample(i))?,
            width: info.width,
            height: info.height,
            format: info.format,
            flags: 0,
            checksum: 0,
        });
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
            first: self.entries.len() as u64,
        };
        let g = std::mem::replace(&mut self.group, next);
        let n = g.data.len();
        let (data, entries) = (&mut self.data, &mut self.entries);
        pool.push(g, n, |e| put_group(data, entries, e))
    }

    /// Writes out every sample handed to the pool.
    fn drain(&mut self) -> Result<()> {
        self.push_group()?;
        if let Encoding::Pool(pool) = &mut self.encoding {
            let (data, entries) = (&mut self.data, &mut self.entries);
            pool.finish(|e| put_group(data, entries, e))?;
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
        self.entries.push(*entry);
        // Samples added after it are grouped from the next index on.
        self.group.first = self.entries.len() as u64;
        Ok(self.entries.len() as u64 - 1)
    }

    /// Adds a metadata block for sample `i` (which must already exist).
    pub fn add_metadata(&mut self, i: u64, payload: &[u8], kind: MetadataType) -> Result<()> {
        let n = self.entries.len() as u64;
        let e = usize::try_from(i)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
            .ok_or_else(|| {
                werr(
                    ErrorKind::IndexRange,
                    format!("metadata for sample {i}, but only {n} sample(s) were added"),
                )
            })?;
        e.flags |= SAMPLE_HAS_METADATA;
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
        let n = self.entries.len() as u64;
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
        let head = |out: &mut BufWriter<AtomicFile>| -> Result<()> {
            out.write_all(&header.to_bytes()).map_err(wfail)?;
            for e in &self.entries {
                let mut e = *e;
                e.offset += data_start;
                out.write_all(&e.to_bytes()).map_err(wfail)?;
            }
            Ok(())
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
fn put_group(data: &mut DataOut, entries: &mut [IndexEntry], encoded: Encoded) -> Result<()> {
    let (first, bytes, done) = encoded?;
    let first = usize::try_from(first).unwrap_or(usize::MAX);
    let slots = entries
        .get_mut(first..)
        .and_then(|s| s.get_mut(..done.len()))
        .ok_or_else(|| werr(ErrorKind::IndexRange, "encoded samples past the index"))?;
    let mut offset = data.len();
    for (slot, e) in slots.iter_mut().zip(done) {
        *slot = IndexEntry {
            offset,
            flags: e.flags | (slot.flags & SAMPLE_HAS_METADATA),
            ..e
        };
        offset += u64::from(e.size);
    }
    data.write(&bytes).map_err(wfail)
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
}
