//! Reading TBL v2 files: zero-copy access to stored samples, LZ4 decode into
//! caller buffers, CRC-16 verification, cached dimensions, metadata lookup.

use std::borrow::Cow;
use std::path::Path;
use std::sync::OnceLock;

use dataformats_core::codec::{self, Codec, CodecError};
use dataformats_core::limits::check_range;
use dataformats_core::parse;
use dataformats_core::{ChecksumKind, Limits, Source};

use crate::error::{Error, ErrorKind, Result, Stage};
use crate::format::{
    BLOCK_HEADER_SIZE, ENTRY_SIZE, HEADER_SIZE, Header, IndexEntry, MAGIC, MetadataBlock,
    MetadataType, VERSION,
};

/// How a [`Reader`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Check the header CRC-32 at open and each sample's CRC-16 (on by default).
    pub verify_checksums: bool,
    /// Our stricter checks (on by default): raw samples' `uncompressed_size`
    /// must equal their size, and metadata blocks must tile their section.
    /// Off, the reader accepts what TurboLoader accepts (still with checked
    /// arithmetic).
    pub strict: bool,
    /// Caps on what the file may make us allocate.
    pub limits: Limits,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            verify_checksums: true,
            strict: true,
            limits: Limits::default(),
        }
    }
}

impl ReadOptions {
    /// These options with checksum verification on or off.
    #[must_use]
    pub fn verify_checksums(mut self, on: bool) -> Self {
        self.verify_checksums = on;
        self
    }

    /// These options with strict checks on or off.
    #[must_use]
    pub fn strict(mut self, on: bool) -> Self {
        self.strict = on;
        self
    }

    /// These options with other limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// An open TBL v2 file.
///
/// Opening checks the header (size, magic, version, CRC-32) and finds the
/// index (24 bytes per sample, checked against the file size): where it
/// lies in a file in memory (mapped or read whole), each entry decoded
/// when asked for; read into memory once, as stored, from a file read by
/// positioned reads. Samples are read on demand; the metadata section is
/// walked once, on first use.
#[derive(Debug)]
pub struct Reader {
    src: Source,
    header: Header,
    index: IndexBytes,
    opts: ReadOptions,
    metadata: OnceLock<Result<Vec<MetadataBlock>>>,
}

/// Where a [`Reader`]'s index entries are, as stored.
#[derive(Debug)]
enum IndexBytes {
    /// These bytes of the source's memory.
    InSource(std::ops::Range<usize>),
    /// Read from the source.
    Read(Box<[u8]>),
}

/// The index of a TBL v2 file: its entries as stored, 24 bytes each,
/// decoded one at a time when asked for.
#[derive(Debug, Clone, Copy)]
pub struct Index<'a> {
    raw: &'a [u8],
}

/// An index entry's size in memory.
const ENTRY: usize = ENTRY_SIZE as usize;

impl<'a> Index<'a> {
    /// The number of entries (of samples).
    pub fn len(self) -> usize {
        self.raw.len() / ENTRY
    }

    /// True for a file without samples.
    pub fn is_empty(self) -> bool {
        self.raw.len() < ENTRY
    }

    /// Entry `i`, if the file has it.
    pub fn get(self, i: usize) -> Option<IndexEntry> {
        let at = i.checked_mul(ENTRY)?;
        let b = self.raw.get(at..)?.first_chunk::<ENTRY>()?;
        Some(IndexEntry::from_bytes(b))
    }

    /// Every entry, in order.
    pub fn iter(self) -> impl Iterator<Item = IndexEntry> + 'a {
        self.raw
            .chunks_exact(ENTRY)
            .filter_map(|b| b.first_chunk::<ENTRY>().map(IndexEntry::from_bytes))
    }

    /// Every entry, decoded.
    pub fn to_vec(self) -> Vec<IndexEntry> {
        self.iter().collect()
    }
}

/// Parses the header (the first 64 bytes of `b`) without checking its
/// fields; fewer than 64 bytes are [`ErrorKind::TooSmall`], as a file
/// shorter than its header is.
pub fn parse_header(b: &[u8]) -> Result<Header> {
    dataformats_core::parse::run(b, 0, crate::parse::header).map_err(|e| match e {
        dataformats_core::Error::Truncated { .. } => Error::new(
            ErrorKind::TooSmall,
            format!("{} byte(s) are shorter than the 64-byte header", b.len()),
        )
        .in_stage(Stage::Open)
        .at(0),
        e => Error::from(e).in_stage(Stage::Open),
    })
}

impl Reader {
    /// Opens the file at `path` with positioned reads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let src = Source::open(path).map_err(|e| Error::from(e).in_stage(Stage::Open))?;
        Self::with_options(src, ReadOptions::default())
    }

    /// Opens a file already in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src` with `opts` (checks in TurboLoader's order, `tbl2.md` §3).
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        let len = src.len();
        let err = |k: ErrorKind, m: String| Error::new(k, m).in_stage(Stage::Open);
        if len < HEADER_SIZE {
            return Err(err(
                ErrorKind::TooSmall,
                format!("file of {len} byte(s) is shorter than the 64-byte header"),
            )
            .at(0));
        }
        let mut hb = [0u8; 64];
        src.read_at(0, &mut hb)
            .map_err(|e| Error::from(e).in_stage(Stage::Open))?;
        if hb.get(..4) != Some(&MAGIC[..]) {
            return Err(err(
                ErrorKind::BadMagic,
                format!(
                    "magic {:02x?} is not TBL\\x02",
                    hb.get(..4).unwrap_or_default()
                ),
            )
            .at(0));
        }
        let header = parse_header(&hb)?;
        if header.version != VERSION {
            return Err(err(
                ErrorKind::BadVersion,
                format!("version {} (only 2 exists)", header.version),
            )
            .at(4));
        }
        if opts.verify_checksums {
            let want = header.compute_checksum();
            if want != header.checksum {
                return Err(err(
                    ErrorKind::HeaderCrc,
                    format!(
                        "header CRC-32 stored {:08x}, computed {want:08x}",
                        header.checksum
                    ),
                )
                .at(44));
            }
        }
        let index_len = header.num_samples.checked_mul(ENTRY_SIZE);
        let end = index_len
            .and_then(|l| l.checked_add(HEADER_SIZE))
            .filter(|&e| e <= len);
        let (Some(index_len), Some(_)) = (index_len, end) else {
            return Err(err(
                ErrorKind::IndexOob,
                format!(
                    "an index of {} entries does not fit in the {len}-byte file",
                    header.num_samples
                ),
            )
            .at(HEADER_SIZE));
        };
        opts.limits
            .check_count("samples", header.num_samples)
            .map_err(|e| Error::from(e).in_stage(Stage::Open))?;
        let in_source = src.as_slice().and_then(|all| {
            let start = usize::try_from(HEADER_SIZE).ok()?;
            let end = start.checked_add(usize::try_from(index_len).ok()?)?;
            all.get(start..end).map(|_| start..end)
        });
        let index = match in_source {
            Some(range) => IndexBytes::InSource(range),
            None => IndexBytes::Read(
                src.read_vec(HEADER_SIZE, index_len, &opts.limits)
                    .map_err(|e| Error::from(e).in_stage(Stage::Open))?
                    .into_boxed_slice(),
            ),
        };
        Ok(Reader {
            src,
            header,
            index,
            opts,
            metadata: OnceLock::new(),
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The index entries.
    pub fn index(&self) -> Index<'_> {
        let raw = match &self.index {
            IndexBytes::InSource(range) => self
                .src
                .as_slice()
                .and_then(|all| all.get(range.clone()))
                .unwrap_or_default(),
            IndexBytes::Read(raw) => raw,
        };
        Index { raw }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.index().len()
    }

    /// True when the file holds no samples.
    pub fn is_empty(&self) -> bool {
        self.index().is_empty()
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// The options.
    pub fn options(&self) -> &ReadOptions {
        &self.opts
    }

    /// Index entry `i` (its cached width, height and format need no data read).
    pub fn entry(&self, i: usize) -> Result<IndexEntry> {
        let index = self.index();
        index.get(i).ok_or_else(|| {
            Error::new(
                ErrorKind::IndexRange,
                format!("sample {i} does not exist (the file has {})", index.len()),
            )
            .in_stage(Stage::ReadSample(i as u64))
        })
    }

    /// Checks entry `i`'s stored range; returns it.
    fn stored_range(&self, i: usize) -> Result<(IndexEntry, u64)> {
        let e = self.entry(i)?;
        let stage = Stage::ReadSample(i as u64);
        let end = e.offset.checked_add(u64::from(e.size)).ok_or_else(|| {
            Error::new(
                ErrorKind::IndexOverflow,
                format!("offset {} + size {} overflows", e.offset, e.size),
            )
            .in_stage(stage)
            .at(e.offset)
        })?;
        if end > self.src.len() {
            return Err(Error::new(
                ErrorKind::DataOob,
                format!(
                    "{} byte(s) at offset {} pass the end of the {}-byte file",
                    e.size,
                    e.offset,
                    self.src.len()
                ),
            )
            .in_stage(stage)
            .at(e.offset));
        }
        Ok((e, end))
    }

    /// The stored bytes of sample `i` (the LZ4 block when compressed),
    /// borrowed from memory-backed sources.
    pub fn stored_sample(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let (e, _) = self.stored_range(i)?;
        self.src
            .bytes(e.offset, u64::from(e.size))
            .map_err(|x| Error::from(x).in_stage(Stage::ReadSample(i as u64)))
    }

    /// The decoded length of sample `i` (`uncompressed_size` for LZ4 samples,
    /// the stored size for raw ones).
    pub fn sample_len(&self, i: usize) -> Result<usize> {
        let e = self.entry(i)?;
        Ok(if e.is_compressed() {
            e.uncompressed_size
        } else {
            e.size
        } as usize)
    }

    /// Whether sample CRCs are checked.
    fn verifies(&self) -> bool {
        self.opts.verify_checksums && self.header.has_checksums()
    }

    fn check_crc(&self, i: usize, e: &IndexEntry, data: &[u8]) -> Result<()> {
        if self.verifies() {
            let got = ChecksumKind::Crc16Modbus.digest(data).value().unwrap_or(0) as u16;
            Self::crc_matches(i, e, got)?;
        }
        Ok(())
    }

    fn crc_matches(i: usize, e: &IndexEntry, got: u16) -> Result<()> {
        if got != e.checksum {
            return Err(Error::new(
                ErrorKind::Crc16,
                format!("CRC-16 stored {:04x}, computed {got:04x}", e.checksum),
            )
            .in_stage(Stage::ReadSample(i as u64))
            .at(e.offset));
        }
        Ok(())
    }

    /// Reads sample `i`: raw samples are borrowed straight from a memory map
    /// or buffer; LZ4 samples are decoded into a new buffer. Checks come in
    /// TurboLoader's order (range, bounds, sizes, CRC-16).
    pub fn read_sample(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let (e, _) = self.stored_range(i)?;
        if e.is_compressed() {
            let mut out = Vec::new();
            self.read_sample_into(i, &mut out)?;
            return Ok(Cow::Owned(out));
        }
        let data = self.raw_sample(i, &e)?;
        self.check_crc(i, &e, &data)?;
        Ok(data)
    }

    /// The stored bytes of raw (uncompressed) sample `i`, its CRC not
    /// checked yet.
    fn raw_sample(&self, i: usize, e: &IndexEntry) -> Result<Cow<'_, [u8]>> {
        let stage = Stage::ReadSample(i as u64);
        if self.opts.strict && e.uncompressed_size != e.size {
            return Err(Error::new(
                ErrorKind::UsizeMismatch,
                format!(
                    "raw sample of {} byte(s) says uncompressed_size {}",
                    e.size, e.uncompressed_size
                ),
            )
            .in_stage(stage)
            .at(e.offset));
        }
        self.src
            .bytes(e.offset, u64::from(e.size))
            .map_err(|x| Error::from(x).in_stage(stage))
    }

    /// Decodes sample `i` into `out` (resized to the sample's length; its
    /// capacity is reused across calls).
    pub fn read_sample_into(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        self.append_sample(i, out)
    }

    /// Decodes sample `i` onto the end of `out` (what was there stays; on
    /// an error `out` keeps its old length). Batches of samples decode
    /// straight into one buffer this way.
    pub fn append_sample(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        let (e, _) = self.stored_range(i)?;
        let stage = Stage::ReadSample(i as u64);
        if !e.is_compressed() {
            let data = self.raw_sample(i, &e)?;
            if !self.verifies() {
                out.extend_from_slice(&data);
                return Ok(());
            }
            let start = out.len();
            out.extend_from_slice(&data);
            let checked = self.check_crc(i, &e, out.get(start..).unwrap_or_default());
            if checked.is_err() {
                out.truncate(start);
            }
            return checked;
        }
        if e.uncompressed_size == 0 {
            return Err(Error::new(
                ErrorKind::NoUsize,
                "compressed sample with uncompressed_size 0",
            )
            .in_stage(stage)
            .at(e.offset));
        }
        let most = codec::max_decoded_len(Codec::Lz4Block, u64::from(e.size)).unwrap_or(u64::MAX);
        if u64::from(e.uncompressed_size) > most {
            return Err(Error::new(ErrorKind::UsizeMismatch, format!(
                    "uncompressed_size {} is more than an LZ4 block of {} byte(s) can decode to ({most})",
                    e.uncompressed_size, e.size
                )).in_stage(stage)
            .at(e.offset));
        }
        let n = self
            .opts
            .limits
            .check_alloc("sample", u64::from(e.uncompressed_size))
            .map_err(|x| Error::from(x).in_stage(stage))?;
        let stored = self
            .src
            .bytes(e.offset, u64::from(e.size))
            .map_err(|x| Error::from(x).in_stage(stage))?;
        out.try_reserve(n).map_err(|_| {
            Error::new(ErrorKind::LimitExceeded, "cannot allocate the sample").in_stage(stage)
        })?;
        let start = out.len();
        out.resize(start + n, 0);
        let (_, dst) = out.split_at_mut(start);
        let decoded = codec::decompress_into(Codec::Lz4Block, &stored, dst)
            .map_err(|x| {
                let kind = match x {
                    CodecError::SizeMismatch { .. } => ErrorKind::UsizeMismatch,
                    _ => ErrorKind::Lz4Error,
                };
                Error::new(kind, x.to_string()).in_stage(stage).at(e.offset)
            })
            .and_then(|_| self.check_crc(i, &e, dst));
        if decoded.is_err() {
            out.truncate(start);
        }
        decoded
    }

    /// Every metadata block in file order, walked (strictly) once and cached.
    pub fn metadata_blocks(&self) -> Result<&[MetadataBlock]> {
        match self.metadata.get_or_init(|| self.walk_metadata()) {
            Ok(v) => Ok(v),
            Err(e) => Err(e.clone()),
        }
    }

    fn walk_metadata(&self) -> Result<Vec<MetadataBlock>> {
        let h = &self.header;
        let len = self.src.len();
        if h.metadata_offset == 0 || h.metadata_size == 0 {
            return Ok(Vec::new());
        }
        let oob = |m: String, at: u64| {
            Error::new(ErrorKind::MetadataOob, m)
                .in_stage(Stage::Metadata)
                .at(at)
        };
        let end = match h.metadata_offset.checked_add(h.metadata_size) {
            Some(e) if e <= len || !self.opts.strict => e.min(len),
            _ => {
                return Err(oob(
                    format!(
                        "metadata section {}+{} passes the end of the {len}-byte file",
                        h.metadata_offset, h.metadata_size
                    ),
                    h.metadata_offset,
                ));
            }
        };
        let mut blocks = Vec::new();
        let mut pos = h.metadata_offset;
        while pos < end {
            if check_range(pos, BLOCK_HEADER_SIZE, end).is_err() {
                if !self.opts.strict {
                    break;
                }
                return Err(oob(
                    format!("metadata block header at {pos} passes the section end {end}"),
                    pos,
                ));
            }
            let mut b = [0u8; 16];
            self.src
                .read_at(pos, &mut b)
                .map_err(|x| Error::from(x).in_stage(Stage::Metadata))?;
            let (sample_index, size, kind) = parse::run(&b, pos, crate::parse::block_header)
                .map_err(|x| Error::from(x).in_stage(Stage::Metadata))?;
            let data_at = pos + BLOCK_HEADER_SIZE;
            let limit = if self.opts.strict { end } else { len };
            if check_range(data_at, u64::from(size), limit).is_err() {
                return Err(oob(
                    format!("metadata block of {size} byte(s) at {data_at} passes the end"),
                    pos,
                ));
            }
            blocks.push(MetadataBlock {
                sample_index,
                kind,
                offset: data_at,
                size,
            });
            pos = data_at + u64::from(size);
        }
        Ok(blocks)
    }

    /// The metadata of sample `i`, TurboLoader's way: only when the sample's
    /// HAS_METADATA bit is set, the first block in file order naming it.
    pub fn read_metadata(&self, i: usize) -> Result<Option<(MetadataType, Cow<'_, [u8]>)>> {
        let e = self.index().get(i).ok_or_else(|| {
            Error::new(ErrorKind::IndexRange, format!("sample {i} does not exist"))
                .in_stage(Stage::Metadata)
        })?;
        let blocks = self.metadata_blocks()?;
        if !e.has_metadata() {
            return Ok(None);
        }
        match blocks.iter().find(|b| b.sample_index == i as u64) {
            None => Ok(None),
            Some(b) => {
                let data = self
                    .src
                    .bytes(b.offset, u64::from(b.size))
                    .map_err(|x| Error::from(x).in_stage(Stage::Metadata))?;
                Ok(Some((b.kind, data)))
            }
        }
    }

    /// The payload of metadata block `b`.
    pub fn block_data(&self, b: &MetadataBlock) -> Result<Cow<'_, [u8]>> {
        self.src
            .bytes(b.offset, u64::from(b.size))
            .map_err(|x| Error::from(x).in_stage(Stage::Metadata))
    }

    /// Checks the whole file in the conformance order: every sample (bounds,
    /// sizes, decode, CRC-16), then the metadata section.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the stored bytes of the samples
    /// checked so far out of all samples' stored bytes.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        // Mapped pages go back as the pass goes on: a file of gigabytes
        // checked with tens of megabytes resident.
        // The index stays: every sample's check reads its entry.
        let data_start = HEADER_SIZE + ENTRY_SIZE * self.index().len() as u64;
        let mut releasing = dataformats_core::progress::Releasing::new(&self.src, progress)
            .over(data_start..self.src.len());
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let index = self.index();
        let total: u64 = index.iter().map(|e| u64::from(e.size)).sum();
        // Runs of samples read (decompressed, CRC checked) on every core
        // for data of a few MB; the first failure in index order.
        const RUN: usize = 256;
        let threads = dataformats_core::parallel::threads_for(total, 0);
        let mut runs = (0..index.len()).step_by(RUN);
        let mut done = 0u64;
        dataformats_core::parallel::ordered(
            threads,
            || Ok::<_, Error>(runs.next()),
            |first| -> Result<u64> {
                let mut buf = Vec::new();
                let mut bytes = 0;
                for i in first..(first + RUN).min(index.len()) {
                    self.read_sample_into(i, &mut buf)?;
                    bytes += buf.len() as u64;
                }
                Ok(bytes)
            },
            |run| {
                done += run?;
                progress.advance(done.min(total), total);
                Ok(())
            },
        )?;
        self.metadata_blocks().map(|_| ())
    }

    /// Indices of the samples whose cached dimensions are `width` × `height`
    /// (reads only the index).
    pub fn filter_by_dimensions(&self, width: u16, height: u16) -> Vec<usize> {
        self.index()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.width == width && e.height == height)
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::{Compression, SampleInfo, Writer};

    /// A file in memory keeps its index where it lies (the entries are
    /// decoded from the file's own bytes); a file read by positioned reads
    /// has it read once.
    #[test]
    fn an_index_in_memory_is_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("i.tbl");
        let mut w = Writer::create(&p, Compression::None).unwrap();
        let info = SampleInfo {
            format: crate::format::SampleFormat(1),
            width: 1,
            height: 1,
        };
        for i in 0..100u8 {
            w.add_sample(&[i; 5], info).unwrap();
        }
        w.finish().unwrap();
        let r = Reader::from_bytes(std::fs::read(&p).unwrap()).unwrap();
        assert!(matches!(r.index, IndexBytes::InSource(ref range) if *range == (64..64 + 2400)));
        let all = r.source().as_slice().unwrap().as_ptr_range();
        assert!(all.contains(&r.index().raw.as_ptr()));
        let f = Reader::open(&p).unwrap();
        assert!(matches!(f.index, IndexBytes::Read(ref raw) if raw.len() == 2400));
        assert_eq!(f.index().to_vec(), r.index().to_vec());
    }
}
