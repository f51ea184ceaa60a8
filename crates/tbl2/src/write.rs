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
    let usize = u32::try_from(data.len())
        .map_err(|_| werr(ErrorKind::InvalidArgument, "a sample must be under 4 GiB"))?;
    let crc = ChecksumKind::Crc16Modbus.digest(data).value().unwrap_or(0) as u16;
    let mut stored: Option<Vec<u8>> = None;
    if compression == Compression::Lz4 && !data.is_empty() {
        let c = codec::compress(Codec::Lz4Block, data, None)
            .map_err(|e| werr(ErrorKind::InvalidArgument, e.to_string()))?;
        if c.len() < data.len() {
            stored = Some(c);
        }
    }
    let compressed = stored.is_some();
    let bytes = stored.unwrap_or_else(|| data.to_vec());
    let entry = IndexEntry {
        offset: 0,
        size: u32::try_from(bytes.len())
            .map_err(|_| werr(ErrorKind::InvalidArgument, "sample too large"))?,
        uncompressed_size: usize,
        width: info.width,
        height: info.height,
        format: info.format,
        flags: if compressed { SAMPLE_COMPRESSED } else { 0 },
        checksum: crc,
    };
    Ok((bytes, entry))
}

/// A streaming TBL v2 writer.
///
/// Output is byte-for-byte what TurboLoader's `TblWriterV2` writes for the
/// same `add_sample` / `add_metadata` calls (LZ4 through liblz4's
/// `LZ4_compress_default`, kept only when strictly smaller).
#[derive(Debug)]
pub struct Writer {
    target: PathBuf,
    compression: Compression,
    entries: Vec<IndexEntry>,
    data: Spool,
    meta: Spool,
    has_metadata: bool,
}

impl Writer {
    /// Starts a file at `path` (it appears when [`Writer::finish`] succeeds).
    pub fn create(path: impl AsRef<Path>, compression: Compression) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        Ok(Writer {
            data: Spool::create(&target, "data").map_err(wfail)?,
            meta: Spool::create(&target, "meta").map_err(wfail)?,
            target,
            compression,
            entries: Vec::new(),
            has_metadata: false,
        })
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
        let (bytes, mut entry) = encode_sample(data, info, self.compression)?;
        self.add_encoded(&bytes, &mut entry)
    }

    /// Adds a sample already encoded by [`encode_sample`] (so encoding can run
    /// on other threads while the order of samples stays fixed).
    pub fn add_encoded(&mut self, stored: &[u8], entry: &mut IndexEntry) -> Result<u64> {
        entry.offset = self.data.len;
        self.data.write(stored).map_err(wfail)?;
        self.entries.push(*entry);
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
        let n = self.entries.len() as u64;
        let data_start = n * ENTRY_SIZE + HEADER_SIZE;
        let meta_offset = if self.has_metadata {
            data_start + self.data.len
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
        let mut out =
            BufWriter::with_capacity(1 << 20, AtomicFile::create(&self.target).map_err(wfail)?);
        out.write_all(&header.to_bytes()).map_err(wfail)?;
        for e in &self.entries {
            let mut e = *e;
            e.offset += data_start;
            out.write_all(&e.to_bytes()).map_err(wfail)?;
        }
        self.data.copy_into(&mut out).map_err(wfail)?;
        self.meta.copy_into(&mut out).map_err(wfail)?;
        let f = out.into_inner().map_err(|e| wfail(e.into_error()))?;
        f.finish().map_err(wfail)?;
        Ok(header)
    }
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
