//! Reading Bloscpack files: open, random access to chunks and byte ranges,
//! sequential iteration, whole-file validation.

use std::borrow::Cow;
use std::path::Path;

use dataformats_core::codec::blosc::{self, BloscHeader};
use dataformats_core::codec::{self as core_codec, Codec};
use dataformats_core::limits::check_range;
use dataformats_core::{ChecksumKind, Limits, Source};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::format::{HEADER_SIZE, Header, METADATA_HEADER_SIZE, MetaCodec, MetadataHeader};
use crate::numpy::NumpyMeta;
use crate::parse;

/// How a [`Reader`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Check each chunk's digest before decoding it (on by default).
    pub verify_checksums: bool,
    /// Caps on what the file may make us allocate.
    pub limits: Limits,
    /// c-blosc worker threads per chunk decode.
    pub threads: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            verify_checksums: true,
            limits: Limits::default(),
            threads: 1,
        }
    }
}

impl ReadOptions {
    /// These options with digest checks on or off.
    #[must_use]
    pub fn verify_checksums(mut self, on: bool) -> Self {
        self.verify_checksums = on;
        self
    }

    /// These options with other limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// These options with `n` c-blosc threads per decode.
    #[must_use]
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }
}

/// The decoded metadata section.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// Its header.
    pub header: MetadataHeader,
    /// The decoded JSON text (`meta_size` bytes).
    pub json_text: String,
    /// The parsed JSON value.
    pub value: Value,
    /// The stored digest (over the stored, possibly compressed, bytes).
    pub digest: Vec<u8>,
}

/// Where a chunk is and what its Blosc header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// File offset of the chunk's Blosc header.
    pub offset: u64,
    /// The chunk's Blosc header.
    pub blosc: BloscHeader,
    /// Offset of the first payload byte this chunk decodes to.
    pub payload_start: u64,
}

impl ChunkInfo {
    /// Decoded size.
    pub fn nbytes(&self) -> u64 {
        u64::from(self.blosc.nbytes)
    }

    /// Offset of the digest that follows the chunk.
    pub fn digest_offset(&self) -> u64 {
        self.offset + u64::from(self.blosc.cbytes)
    }
}

/// An open Bloscpack file.
///
/// Opening reads the header, the metadata section, the offsets table and
/// each chunk's 16-byte Blosc header (no chunk data), checking everything
/// those say against the file size; chunk data is read and checked only when
/// asked for. [`Reader::validate`] checks everything, in the order of
/// `bloscpack-blz.md` §6.3.
#[derive(Debug, Clone)]
pub struct Reader {
    src: Source,
    opts: ReadOptions,
    header: Header,
    metadata: Option<Metadata>,
    numpy: Option<NumpyMeta>,
    offsets: Option<Vec<i64>>,
    reserved_all_minus1: Option<bool>,
    chunks: Vec<ChunkInfo>,
    data_end: u64,
}

impl Reader {
    /// Opens the file at `path` with positioned reads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(Source::open(path)?, ReadOptions::default())
    }

    /// Opens a file already in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src` with `opts`.
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        Self::open_inner(src, opts, false)
    }

    fn open_inner(src: Source, opts: ReadOptions, deep: bool) -> Result<Self> {
        let len = src.len();
        if len < HEADER_SIZE {
            return Err(Error::new(
                ErrorKind::Truncated,
                format!("file of {len} byte(s) is shorter than the 32-byte header"),
            )
            .at(0));
        }
        let header = parse::header(&src.bytes(0, HEADER_SIZE)?)?;
        let mut pos = HEADER_SIZE;

        let metadata = if header.has_metadata() {
            let (m, end) = read_metadata(&src, pos, &opts.limits)?;
            pos = end;
            Some(m)
        } else {
            None
        };
        let numpy = match &metadata {
            Some(m) => NumpyMeta::from_value(&m.value).map_err(|e| e.at(HEADER_SIZE))?,
            None => None,
        };

        let nchunks = header.nchunks.unsigned_abs();
        opts.limits.check_count("nchunks", nchunks)?;
        let (offsets, reserved_all_minus1) = if header.has_offsets() {
            let slots = header.nchunks.unsigned_abs() + header.max_app_chunks.unsigned_abs();
            let table_len = slots.checked_mul(8).filter(|&n| check_range(pos, n, len).is_ok()).ok_or_else(|| {
                Error::new(
                    ErrorKind::Truncated,
                    format!("the offsets table of {slots} entries does not fit in the file ({len} bytes)"),
                )
                .at(pos)
            })?;
            let own_len = nchunks * 8;
            let mut offs = Vec::new();
            parse::offsets(&src.bytes(pos, own_len)?, &mut offs);
            let reserved = src.bytes(pos + own_len, table_len - own_len)?;
            let all_minus1 = reserved.chunks_exact(8).all(|c| c == [0xff; 8]);
            pos += table_len;
            (Some(offs), Some(all_minus1))
        } else {
            (None, None)
        };

        let mut r = Reader {
            src,
            opts,
            header,
            metadata,
            numpy,
            offsets,
            reserved_all_minus1,
            chunks: Vec::new(),
            data_end: pos,
        };
        r.scan_chunks(pos, deep, &mut |_| {})?;
        Ok(r)
    }

    /// Walks the chunks from `pos` in file order, checking each as §6.3 step 4
    /// orders it. With `deep`, digests are checked and chunks decoded too:
    /// on every core, after the walk, with the first failure in the order of
    /// a one-chunk-at-a-time check (a chunk's digest and decode come after
    /// the checks of its header, before anything of the next chunk).
    fn scan_chunks(
        &mut self,
        mut pos: u64,
        deep: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let digest_size = self.header.checksum.digest_size() as u64;
        let mut payload = 0u64;
        let mut chunks = Vec::new();
        // A failure of the walk, and the chunk whose digest a
        // one-at-a-time check would have checked before it.
        let mut stopped: Option<(Error, Option<ChunkInfo>)> = None;
        for i in 0..self.header.nchunks.unsigned_abs() {
            let walked = self.walk_chunk(i, pos, payload);
            match walked {
                Ok(info) => {
                    payload += u64::from(info.blosc.nbytes);
                    pos += u64::from(info.blosc.cbytes) + digest_size;
                    chunks.push(info);
                }
                Err(e) => {
                    stopped = Some(*e);
                    break;
                }
            }
        }
        if deep {
            self.deep_check(&chunks, progress)?;
        }
        if let Some((e, digest_first)) = stopped {
            if deep && let Some(info) = digest_first {
                self.verify_digest(chunks.len() as u64, &info)?;
            }
            return Err(e);
        }
        if deep && let Some(np) = &self.numpy {
            let want = np.nbytes();
            if want != Some(payload) {
                return Err(Error::new(
                    ErrorKind::SizeMismatch,
                    format!(
                        "numpy metadata says shape {:?} of {} ({} bytes), but the chunks hold {payload} bytes",
                        np.shape,
                        np.dtype,
                        want.map_or("too many".to_string(), |w| w.to_string())
                    ),
                ));
            }
        }
        self.chunks = chunks;
        self.data_end = pos;
        Ok(())
    }

    /// Chunk `i` at `pos` (its payload starting at `payload`) checked as
    /// far as its header goes; a failure comes with the chunk when a
    /// one-at-a-time check would have checked its digest before it.
    fn walk_chunk(
        &self,
        i: u64,
        pos: u64,
        payload: u64,
    ) -> std::result::Result<ChunkInfo, Box<(Error, Option<ChunkInfo>)>> {
        let len = self.src.len();
        let digest_size = self.header.checksum.digest_size() as u64;
        if let Some(offs) = &self.offsets {
            let stored = offs.get(i as usize).copied().unwrap_or(-1);
            if u64::try_from(stored).ok() != Some(pos) {
                return Err(Box::new((
                    Error::new(
                        ErrorKind::BadOffset,
                        format!("offsets[{i}] is {stored}, but the chunk starts at {pos}"),
                    )
                    .in_chunk(i)
                    .at(pos),
                    None,
                )));
            }
        }
        if check_range(pos, 16, len).is_err() {
            return Err(Box::new((
                Error::new(
                    ErrorKind::Truncated,
                    "the file ends inside a chunk's 16-byte Blosc header",
                )
                .in_chunk(i)
                .at(pos),
                None,
            )));
        }
        let bytes = self
            .src
            .bytes(pos, 16)
            .map_err(|e| Box::new((e.into(), None)))?;
        let h = BloscHeader::parse(&bytes)
            .map_err(|e| Box::new((crate::error::codec(e, i, pos), None)))?;
        if h.cbytes < 16 {
            return Err(Box::new((
                Error::new(
                    ErrorKind::ChunkHeaderInvalid,
                    format!("cbytes {} is less than 16", h.cbytes),
                )
                .in_chunk(i)
                .at(pos),
                None,
            )));
        }
        let cbytes = u64::from(h.cbytes);
        if check_range(pos, cbytes + digest_size, len).is_err() {
            return Err(Box::new((Error::new(
                ErrorKind::Truncated,
                format!(
                    "chunk of {cbytes} byte(s) and its {digest_size}-byte digest pass the end of the file ({len} bytes)"
                ),
            )
            .in_chunk(i)
            .at(pos), None)));
        }
        let info = ChunkInfo {
            offset: pos,
            blosc: h,
            payload_start: payload,
        };
        if let Some(declared) = self.header.declared_chunk_size(i)
            && u64::from(h.nbytes) != declared
        {
            let which = if i + 1 == self.header.nchunks.unsigned_abs() {
                "last_chunk"
            } else {
                "chunk_size"
            };
            return Err(Box::new((
                Error::new(
                    ErrorKind::SizeMismatch,
                    format!(
                        "chunk decodes to {} byte(s), but {which} is {declared}",
                        h.nbytes
                    ),
                )
                .in_chunk(i)
                .at(pos),
                Some(info),
            )));
        }
        h.check()
            .map_err(|e| Box::new((crate::error::codec(e, i, pos), Some(info))))?;
        Ok(info)
    }

    /// Checks every chunk's digest and decodes it, on every core, with the
    /// first failure in chunk order; `progress` gets each chunk's decoded
    /// bytes in order.
    fn deep_check(&self, chunks: &[ChunkInfo], progress: &mut dyn FnMut(u64)) -> Result<()> {
        thread_local! {
            // Decoded chunks, and compressed ones read from a file.
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
            static RAW: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        // Threads pay off from a few MB of work on: the compressed bytes
        // read and hashed, and the decoded bytes written (which is most of
        // it when the data compresses well: a 200 MB payload packed into
        // 1 MB decoded on one thread ran at 0.7x of a read on every core).
        let work: u64 = chunks
            .iter()
            .map(|c| u64::from(c.blosc.cbytes) + u64::from(c.blosc.nbytes))
            .sum();
        let threads = dataformats_core::parallel::threads_for(work, 0);
        let mut next = (0u64..).zip(chunks);
        dataformats_core::parallel::ordered(
            threads,
            || Ok(next.next()),
            |(i, info)| -> Result<u64> {
                RAW.with_borrow_mut(|raw| {
                    // Read once (from a file) for the digest and the decode.
                    let raw = self.compressed(info, raw)?;
                    self.check_digest(i, info, raw)?;
                    let n = self
                        .opts
                        .limits
                        .check_alloc("chunk", u64::from(info.blosc.nbytes))?;
                    SCRATCH.with_borrow_mut(|scratch| {
                        scratch.resize(n, 0);
                        blosc::decompress_into(raw, scratch, self.opts.threads)
                            .map_err(|e| crate::error::codec(e, i, info.offset))
                    })
                })?;
                Ok(u64::from(info.blosc.nbytes))
            },
            |done| {
                progress(done?);
                Ok(())
            },
        )
    }

    fn verify_digest(&self, i: u64, info: &ChunkInfo) -> Result<()> {
        if self.header.checksum == ChecksumKind::None {
            return Ok(());
        }
        let raw = self.src.bytes(info.offset, u64::from(info.blosc.cbytes))?;
        self.check_digest(i, info, &raw)
    }

    /// The compressed bytes of the chunk `info` describes: borrowed from a
    /// source in memory, else read once into `scratch` (resized to fit,
    /// within the limits).
    fn compressed<'a>(&'a self, info: &ChunkInfo, scratch: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        let len = u64::from(info.blosc.cbytes);
        if self.src.is_in_memory()
            && let Cow::Borrowed(b) = self.src.bytes(info.offset, len)?
        {
            return Ok(b);
        }
        let n = self.opts.limits.check_alloc("compressed chunk", len)?;
        scratch.resize(n, 0);
        self.src.read_at(info.offset, scratch)?;
        Ok(scratch)
    }

    /// Checks chunk `i`'s stored digest against `raw`, its compressed bytes.
    fn check_digest(&self, i: u64, info: &ChunkInfo, raw: &[u8]) -> Result<()> {
        let kind = self.header.checksum;
        if kind == ChecksumKind::None {
            return Ok(());
        }
        let stored = self
            .src
            .bytes(info.digest_offset(), kind.digest_size() as u64)?;
        let computed = kind.digest(raw);
        if computed.as_bytes() != &*stored {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!(
                    "{kind} digest stored {} but computed {}",
                    dataformats_core::error::HexBytes(&stored),
                    computed.to_hex()
                ),
            )
            .in_chunk(i)
            .at(info.digest_offset()));
        }
        Ok(())
    }

    /// Checks the whole file: everything `open` checks, then every chunk's
    /// digest and full decode, and the numpy shape against the decoded total,
    /// in the order of `bloscpack-blz.md` §6.3 (the first failure is reported).
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the payload bytes checked so far
    /// out of the payload's length.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        // Mapped pages go back as the pass goes on: a file of gigabytes
        // checked with tens of megabytes resident.
        let mut releasing =
            dataformats_core::progress::Releasing::new(&self.src, progress).in_file_order();
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let mut again = self.clone();
        again.opts.verify_checksums = true;
        let start = self.chunks.first().map_or(self.data_end, |c| c.offset);
        let total = self.payload_len();
        let mut done = 0u64;
        again.scan_chunks(start, true, &mut |n| {
            done += n;
            progress.advance(done.min(total), total);
        })
    }

    /// Opens and fully validates `src` in one pass (see [`Reader::validate`]).
    pub fn open_validated(src: Source, opts: ReadOptions) -> Result<Self> {
        Self::open_inner(src, opts, true)
    }

    /// The file header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata section, if the file has one.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// The numpy array description, when the metadata is a numpy container.
    pub fn numpy(&self) -> Option<&NumpyMeta> {
        self.numpy.as_ref()
    }

    /// The offsets of the chunks (entries `0..nchunks` of the table), if the file has a table.
    pub fn offsets(&self) -> Option<&[i64]> {
        self.offsets.as_deref()
    }

    /// Whether every reserved offset slot holds −1 (`None` without a table).
    pub fn reserved_offsets_all_minus1(&self) -> Option<bool> {
        self.reserved_all_minus1
    }

    /// The chunks, in file order.
    pub fn chunks(&self) -> &[ChunkInfo] {
        &self.chunks
    }

    /// Number of chunks.
    pub fn nchunks(&self) -> usize {
        self.chunks.len()
    }

    /// Decoded size of the whole payload.
    pub fn payload_len(&self) -> u64 {
        self.chunks
            .last()
            .map_or(0, |c| c.payload_start + c.nbytes())
    }

    /// Where the last chunk's digest ends.
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Bytes after the last digest (left by appends; not an error).
    pub fn trailing_bytes(&self) -> u64 {
        self.src.len().saturating_sub(self.data_end)
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// The options this reader uses.
    pub fn options(&self) -> &ReadOptions {
        &self.opts
    }

    fn info(&self, i: usize) -> Result<&ChunkInfo> {
        self.chunks.get(i).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "chunk {i} does not exist (the file has {})",
                    self.chunks.len()
                ),
            )
        })
    }

    /// The compressed bytes of chunk `i` (borrowed from memory-backed sources).
    pub fn raw_chunk(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let c = self.info(i)?;
        Ok(self.src.bytes(c.offset, u64::from(c.blosc.cbytes))?)
    }

    /// The digest stored after chunk `i`.
    pub fn stored_digest(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let c = self.info(i)?;
        Ok(self
            .src
            .bytes(c.digest_offset(), self.header.checksum.digest_size() as u64)?)
    }

    /// Decodes chunk `i` into `dst`, which must be exactly the chunk's
    /// decoded size; checks the digest first when the options say so.
    pub fn read_chunk_into(&self, i: usize, dst: &mut [u8]) -> Result<()> {
        self.read_chunk_into_with(i, dst, &mut Vec::new())
    }

    /// [`Reader::read_chunk_into`], reading the compressed bytes into
    /// `scratch` (resized to fit, within the limits) when the source is not
    /// in memory, so that a caller decoding many chunks reuses one buffer.
    /// The bytes are read once, for the digest and the decode. Memory-backed
    /// sources are decoded where they lie and leave `scratch` alone.
    pub fn read_chunk_into_with(
        &self,
        i: usize,
        dst: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let c = *self.info(i)?;
        if dst.len() as u64 != c.nbytes() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "chunk {i} decodes to {} byte(s), the buffer has {}",
                    c.nbytes(),
                    dst.len()
                ),
            ));
        }
        let raw = self.compressed(&c, scratch)?;
        if self.opts.verify_checksums {
            self.check_digest(i as u64, &c, raw)?;
        }
        blosc::decompress_into(raw, dst, self.opts.threads)
            .map_err(|e| crate::error::codec(e, i as u64, c.offset))?;
        Ok(())
    }

    /// Decodes chunk `i` into a new buffer.
    pub fn read_chunk(&self, i: usize) -> Result<Vec<u8>> {
        let c = self.info(i)?;
        let mut v = self.opts.limits.alloc_zeroed("chunk", c.nbytes())?;
        self.read_chunk_into(i, &mut v)?;
        Ok(v)
    }

    /// Decodes the whole payload into `dst` (exactly [`Reader::payload_len`] bytes).
    pub fn read_all_into(&self, dst: &mut [u8]) -> Result<()> {
        if dst.len() as u64 != self.payload_len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the payload is {} byte(s), the buffer has {}",
                    self.payload_len(),
                    dst.len()
                ),
            ));
        }
        self.read_range_into(0, dst)
    }

    /// Decodes the whole payload into a new buffer.
    pub fn read_all(&self) -> Result<Vec<u8>> {
        let mut v = self
            .opts
            .limits
            .alloc_zeroed("payload", self.payload_len())?;
        self.read_all_into(&mut v)?;
        Ok(v)
    }

    /// Decodes the whole payload into `dst` with chunks decoded in parallel on
    /// the rayon thread pool (each chunk straight into its part of `dst`).
    #[cfg(feature = "rayon")]
    pub fn read_all_into_parallel(&self, dst: &mut [u8]) -> Result<()> {
        use rayon::prelude::*;
        if dst.len() as u64 != self.payload_len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the payload is {} byte(s), the buffer has {}",
                    self.payload_len(),
                    dst.len()
                ),
            ));
        }
        let mut parts = Vec::with_capacity(self.chunks.len());
        let mut rest = dst;
        for c in &self.chunks {
            let (head, tail) = rest
                .split_at_mut_checked(c.nbytes() as usize)
                .ok_or_else(|| {
                    Error::new(ErrorKind::InvalidArgument, "chunk sizes exceed the payload")
                })?;
            parts.push(head);
            rest = tail;
        }
        parts
            .into_par_iter()
            .enumerate()
            .try_for_each(|(i, part)| self.read_chunk_into(i, part))
    }

    /// Decodes payload bytes `start .. start + dst.len()` into `dst`, touching
    /// only the chunks that hold them. Whole chunks decode straight into
    /// `dst`; for a partial chunk only the Blosc blocks holding the range are
    /// decoded (`blosc_getitem`) when the range is aligned to its typesize.
    pub fn read_range_into(&self, start: u64, dst: &mut [u8]) -> Result<()> {
        let end = check_range(start, dst.len() as u64, self.payload_len()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "bytes {start}..{}+{} are outside the {}-byte payload",
                    start,
                    dst.len(),
                    self.payload_len()
                ),
            )
        })?;
        if start == end {
            return Ok(());
        }
        let first = self
            .chunks
            .partition_point(|c| c.payload_start + c.nbytes() <= start);
        let last = self.chunks.partition_point(|c| c.payload_start < end);
        let touched = self.chunks.get(first..last).unwrap_or_default();
        if !self.opts.verify_checksums {
            return self.decode_range(first, touched, start, dst, |_| Ok(()));
        }
        let cbytes: u64 = touched.iter().map(|c| u64::from(c.blosc.cbytes)).sum();
        if touched.len() < 2 || dataformats_core::parallel::threads_for(cbytes, 0) < 2 {
            return self.decode_range(first, touched, start, dst, |i| {
                self.verify_digest(i as u64, self.info(i)?)
            });
        }
        // Digests on another core, each chunk's while the one before it
        // decodes here; a chunk's digest result is taken before its
        // decode result, so errors come in the order of a serial read.
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel(touched.len());
            // Joined before the scope returns, as every worker of ours.
            let _hashing = dataformats_core::parallel::Joined(vec![s.spawn(move || {
                for (i, c) in (first..).zip(touched) {
                    if tx.send(self.verify_digest(i as u64, c)).is_err() {
                        return;
                    }
                }
            })]);
            self.decode_range(first, touched, start, dst, |_| {
                rx.recv().unwrap_or_else(|_| {
                    Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "digest thread ended",
                    ))
                })
            })
        })
    }

    /// Decodes the parts of chunks `touched` (the first being chunk
    /// `first`) that hold payload bytes `start .. start + dst.len()` into
    /// `dst`; `check(i)` says whether chunk `i`'s digest is right, and an
    /// error of it comes before any error decoding that chunk.
    fn decode_range(
        &self,
        first: usize,
        touched: &[ChunkInfo],
        start: u64,
        dst: &mut [u8],
        mut check: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let end = start + dst.len() as u64;
        let mut scratch = Vec::new();
        for (i, c) in (first..).zip(touched) {
            let a = start.max(c.payload_start);
            let b = end.min(c.payload_start + c.nbytes());
            let out = dst
                .get_mut((a - start) as usize..(b - start) as usize)
                .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "range arithmetic"))?;
            let decoded = self.decode_part(i, c, a, b, out, &mut scratch);
            check(i)?;
            decoded?;
        }
        Ok(())
    }

    /// Decodes payload bytes `a..b`, which lie in chunk `i`, into `out`
    /// (the whole chunk straight into it, a part through Blosc's block
    /// access or `scratch`); no digest check.
    fn decode_part(
        &self,
        i: usize,
        c: &ChunkInfo,
        a: u64,
        b: u64,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let raw = self.src.bytes(c.offset, u64::from(c.blosc.cbytes))?;
        if a == c.payload_start && b == c.payload_start + c.nbytes() {
            return blosc::decompress_into(&raw, out, self.opts.threads)
                .map(|_| ())
                .map_err(|e| crate::error::codec(e, i as u64, c.offset));
        }
        let ts = u64::from(c.blosc.typesize.max(1));
        let (la, lb) = (a - c.payload_start, b - c.payload_start);
        if la % ts == 0 && (lb - la) % ts == 0 {
            return blosc::getitem(&raw, la / ts, (lb - la) / ts, out)
                .map(|_| ())
                .map_err(|e| crate::error::codec(e, i as u64, c.offset));
        }
        let n = self.opts.limits.check_alloc("chunk", c.nbytes())?;
        scratch.resize(n, 0);
        blosc::decompress_into(&raw, scratch, self.opts.threads)
            .map_err(|e| crate::error::codec(e, i as u64, c.offset))?;
        let part = scratch
            .get(la as usize..lb as usize)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "range arithmetic"))?;
        out.copy_from_slice(part);
        Ok(())
    }

    /// Payload bytes `start .. start + len` exactly as the file stores them,
    /// when they lie in one chunk that Blosc stored uncompressed
    /// (memcpyed): a view of the source with nothing decoded (borrowed from
    /// memory-backed sources), after the chunk's digest check when the
    /// options ask for it. `None` when the range is empty, spans chunks or
    /// its chunk is compressed; an error when it lies outside the payload.
    pub fn stored_range(&self, start: u64, len: u64) -> Result<Option<Cow<'_, [u8]>>> {
        let end = check_range(start, len, self.payload_len()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "bytes {start}..{start}+{len} are outside the {}-byte payload",
                    self.payload_len()
                ),
            )
        })?;
        if start == end {
            return Ok(None);
        }
        let i = self
            .chunks
            .partition_point(|c| c.payload_start + c.nbytes() <= start);
        let Some(c) = self.chunks.get(i) else {
            return Ok(None);
        };
        if !c.blosc.is_memcpyed() || end > c.payload_start + c.nbytes() {
            return Ok(None);
        }
        if self.opts.verify_checksums {
            self.verify_digest(i as u64, c)?;
        }
        let at = c.offset + blosc::HEADER_SIZE as u64 + (start - c.payload_start);
        Ok(Some(self.src.bytes(at, len)?))
    }

    /// Decodes elements `first .. first + count` of a numpy payload (element
    /// size from the metadata) into `dst`.
    pub fn read_elements_into(&self, first: u64, count: u64, dst: &mut [u8]) -> Result<()> {
        let itemsize = self
            .numpy
            .as_ref()
            .map(|n| n.dtype.itemsize() as u64)
            .ok_or_else(|| {
                Error::new(ErrorKind::InvalidArgument, "the file has no numpy metadata")
            })?;
        let (Some(start), Some(len)) = (first.checked_mul(itemsize), count.checked_mul(itemsize))
        else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "element range overflows",
            ));
        };
        if dst.len() as u64 != len {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{count} element(s) are {len} byte(s), the buffer has {}",
                    dst.len()
                ),
            ));
        }
        self.read_range_into(start, dst)
    }

    /// Iterates over the decoded chunks in order.
    pub fn iter_chunks(&self) -> impl Iterator<Item = Result<Vec<u8>>> + '_ {
        (0..self.chunks.len()).map(move |i| self.read_chunk(i))
    }

    /// Reads the whole payload as numbers of type `T`, which must match the
    /// numpy dtype (kind, size and byte order).
    pub fn read_array<T: Element>(&self) -> Result<Vec<T>> {
        let np = self.numpy.as_ref().ok_or_else(|| {
            Error::new(ErrorKind::InvalidArgument, "the file has no numpy metadata")
        })?;
        let ok = np
            .dtype
            .as_scalar()
            .is_some_and(|s| T::matches(&s.typestr()));
        if !ok {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the array holds {}, not {}", np.dtype, T::TYPESTR),
            ));
        }
        let bytes = self.read_all()?;
        T::decode_all(&bytes).ok_or_else(|| {
            Error::new(
                ErrorKind::SizeMismatch,
                format!(
                    "the payload's {} bytes are not a whole number of {}",
                    bytes.len(),
                    T::TYPESTR
                ),
            )
        })
    }
}

/// A number type that [`Reader::read_array`] can produce.
pub trait Element: Copy + Sized {
    /// Its numpy type string, little-endian.
    const TYPESTR: &'static str;
    /// Decodes the little-endian values stored in `bytes`; `None` unless
    /// `bytes` holds a whole number of them.
    fn decode_all(bytes: &[u8]) -> Option<Vec<Self>>;
    /// Appends its little-endian bytes to `out`.
    fn write_le(&self, out: &mut Vec<u8>);
    /// True when `typestr` describes this type.
    fn matches(typestr: &str) -> bool {
        typestr == Self::TYPESTR
    }
}

macro_rules! element {
    ($($t:ty => $s:expr),*) => {$(
        impl Element for $t {
            const TYPESTR: &'static str = $s;
            fn decode_all(bytes: &[u8]) -> Option<Vec<Self>> {
                dataformats_core::plain::to_vec::<$t>(bytes).ok()
            }
            fn write_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}

element!(u8 => "|u1", i8 => "|i1", u16 => "<u2", i16 => "<i2", u32 => "<u4", i32 => "<i4", u64 => "<u8", i64 => "<i8", f32 => "<f4", f64 => "<f8");

impl Element for bool {
    const TYPESTR: &'static str = "|b1";
    fn decode_all(bytes: &[u8]) -> Option<Vec<Self>> {
        Some(bytes.iter().map(|&x| x != 0).collect())
    }
    fn write_le(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

/// Reads the metadata section at `pos`; returns it and the offset after it.
fn read_metadata(src: &Source, pos: u64, limits: &Limits) -> Result<(Metadata, u64)> {
    let len = src.len();
    if check_range(pos, METADATA_HEADER_SIZE, len).is_err() {
        return Err(Error::new(
            ErrorKind::Truncated,
            "the file ends inside the metadata header",
        )
        .at(pos));
    }
    let mh = parse::metadata_header(&src.bytes(pos, METADATA_HEADER_SIZE)?, pos)?;
    let section = mh.section_len();
    let end = check_range(pos, section, len).map_err(|_| {
        Error::new(
            ErrorKind::Truncated,
            format!(
                "the metadata section of {section} bytes passes the end of the file ({len} bytes)"
            ),
        )
        .at(pos)
    })?;
    let stored_at = pos + METADATA_HEADER_SIZE;
    let stored = src.bytes(stored_at, u64::from(mh.meta_comp_size))?;
    let digest_at = stored_at + u64::from(mh.max_meta_size);
    let digest = src
        .bytes(digest_at, mh.meta_checksum.digest_size() as u64)?
        .into_owned();
    let computed = mh.meta_checksum.digest(&stored);
    if computed.as_bytes() != digest.as_slice() {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!(
                "metadata {} digest stored {} but computed {}",
                mh.meta_checksum,
                dataformats_core::error::HexBytes(&digest),
                computed.to_hex()
            ),
        )
        .at(digest_at));
    }
    let bad = |m: String| Error::new(ErrorKind::BadMetadata, m).at(stored_at);
    let decoded = match mh.meta_codec {
        MetaCodec::None => {
            if mh.meta_comp_size != mh.meta_size {
                return Err(bad(format!(
                    "uncompressed metadata of {} byte(s), but meta_size is {}",
                    mh.meta_comp_size, mh.meta_size
                )));
            }
            stored.into_owned()
        }
        MetaCodec::Zlib => {
            let most = core_codec::max_decoded_len(Codec::Zlib, stored.len() as u64);
            if most.is_some_and(|m| u64::from(mh.meta_size) > m) {
                return Err(bad(format!(
                    "metadata does not inflate to meta_size ({}): {} zlib byte(s) cannot produce that many",
                    mh.meta_size,
                    stored.len()
                )));
            }
            let mut out = limits.alloc_zeroed("metadata", u64::from(mh.meta_size))?;
            core_codec::decompress_into(Codec::Zlib, &stored, &mut out).map_err(|e| {
                bad(format!(
                    "metadata does not inflate to meta_size ({}): {e}",
                    mh.meta_size
                ))
            })?;
            out
        }
    };
    let json_text = String::from_utf8(decoded)
        .map_err(|_| Error::new(ErrorKind::BadJson, "metadata is not UTF-8").at(stored_at))?;
    let value: Value = serde_json::from_str(&json_text).map_err(|e| {
        Error::new(ErrorKind::BadJson, format!("metadata is not JSON: {e}")).at(stored_at)
    })?;
    Ok((
        Metadata {
            header: mh,
            json_text,
            value,
            digest,
        },
        end,
    ))
}
