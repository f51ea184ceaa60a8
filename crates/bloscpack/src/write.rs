//! Writing Bloscpack files: streaming, atomic, with every option the
//! reference writer has; and appending to existing files as it does.

use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use dataformats_core::codec::blosc::{self, BloscCompressor, BloscParams, Shuffle};
use dataformats_core::codec::{self as core_codec, Codec};
use dataformats_core::{AtomicFile, ChecksumKind};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::format::{
    FORMAT_VERSION, Header, MAX_CHUNK_SIZE, META_MAGIC, MetaCodec, MetadataHeader, OPTION_METADATA,
    OPTION_OFFSETS,
};
use crate::numpy::{NumpyMeta, Order};
use crate::read::{Element, ReadOptions, Reader};

/// How the metadata section is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetadataOptions {
    /// zlib (the default) or none; zlib is dropped when it would not make the metadata smaller.
    pub codec: MetaCodec,
    /// zlib level 0..=9 (default 6).
    pub level: u8,
    /// Digest over the stored metadata (default Adler-32).
    pub checksum: ChecksumKind,
    /// Space reserved for the stored metadata (default 10 × its size).
    pub max_meta_size: Option<u32>,
}

impl Default for MetadataOptions {
    fn default() -> Self {
        MetadataOptions {
            codec: MetaCodec::Zlib,
            level: 6,
            checksum: ChecksumKind::Adler32,
            max_meta_size: None,
        }
    }
}

/// Settings for writing; the defaults are python-bloscpack's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Blosc compressor (default blosclz).
    pub codec: BloscCompressor,
    /// Compression level 0..=9 (default 7).
    pub clevel: u8,
    /// Shuffle filter (default byte).
    pub shuffle: Shuffle,
    /// Blosc typesize (default: the itemsize of numpy metadata, else 8).
    pub typesize: Option<usize>,
    /// Uncompressed bytes per chunk (default 1 MiB).
    pub chunk_size: usize,
    /// Per-chunk digest (default Adler-32).
    pub checksum: ChecksumKind,
    /// Write an offsets table (default on).
    pub offsets: bool,
    /// Offset slots reserved for appends (default 10 × nchunks; 0 without offsets).
    pub max_app_chunks: Option<u64>,
    /// How metadata is stored.
    pub metadata: MetadataOptions,
    /// Blosc block size (0 = c-blosc chooses).
    pub blocksize: usize,
    /// c-blosc threads per chunk.
    pub threads: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            codec: BloscCompressor::BloscLz,
            clevel: 7,
            shuffle: Shuffle::Byte,
            typesize: None,
            chunk_size: 1 << 20,
            checksum: ChecksumKind::Adler32,
            offsets: true,
            max_app_chunks: None,
            metadata: MetadataOptions::default(),
            blocksize: 0,
            threads: 1,
        }
    }
}

macro_rules! setter {
    ($($(#[$d:meta])* $name:ident: $t:ty => $field:ident $(($wrap:path))?;)*) => {$(
        $(#[$d])*
        #[must_use]
        pub fn $name(mut self, v: $t) -> Self {
            self.$field = $($wrap)?(v);
            self
        }
    )*};
}

impl MetadataOptions {
    setter! {
        /// Sets the metadata codec.
        codec: MetaCodec => codec;
        /// Sets the zlib level.
        level: u8 => level;
        /// Sets the metadata checksum.
        checksum: ChecksumKind => checksum;
        /// Sets the reserved space.
        max_meta_size: u32 => max_meta_size(Some);
    }
}

impl WriteOptions {
    setter! {
        /// Sets the compressor.
        codec: BloscCompressor => codec;
        /// Sets the compression level.
        clevel: u8 => clevel;
        /// Sets the shuffle filter.
        shuffle: Shuffle => shuffle;
        /// Sets the Blosc typesize.
        typesize: usize => typesize(Some);
        /// Sets the chunk size in bytes.
        chunk_size: usize => chunk_size;
        /// Sets the per-chunk checksum.
        checksum: ChecksumKind => checksum;
        /// Turns the offsets table on or off.
        offsets: bool => offsets;
        /// Sets the number of reserved offset slots.
        max_app_chunks: u64 => max_app_chunks(Some);
        /// Sets how metadata is stored.
        metadata: MetadataOptions => metadata;
        /// Sets the Blosc block size.
        blocksize: usize => blocksize;
        /// Sets the c-blosc thread count.
        threads: usize => threads;
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
        if self.clevel > 9 {
            return bad(format!("clevel {} is not in 0..=9", self.clevel));
        }
        if self.chunk_size == 0 || self.chunk_size > MAX_CHUNK_SIZE as usize {
            return bad(format!(
                "chunk_size {} is not in 1..={MAX_CHUNK_SIZE}",
                self.chunk_size
            ));
        }
        if let Some(t) = self.typesize
            && !(1..=255).contains(&t)
        {
            return bad(format!("typesize {t} is not in 1..=255"));
        }
        if crate::format::checksum_id(self.checksum).is_none()
            || crate::format::checksum_id(self.metadata.checksum).is_none()
        {
            return bad("Bloscpack has no CRC-16 checksum".into());
        }
        if !self.codec.is_available() {
            return bad(format!("compressor {} is not built in", self.codec));
        }
        if self.metadata.level > 9 {
            return bad(format!(
                "metadata level {} is not in 0..=9",
                self.metadata.level
            ));
        }
        Ok(())
    }

    fn blosc(&self, typesize: usize) -> BloscParams {
        BloscParams::new(self.codec, self.clevel, self.shuffle, typesize)
            .with_blocksize(self.blocksize)
            .with_threads(self.threads)
    }
}

/// Where a [`Writer`] puts its bytes: something that can seek back to patch
/// the offsets table, and that makes the output final on [`Sink::commit`].
pub trait Sink: Write + Seek {
    /// Makes the written bytes final (flush; for files, rename into place).
    fn commit(&mut self) -> io::Result<()> {
        self.flush()
    }
}

impl Sink for Cursor<Vec<u8>> {}
impl Sink for Cursor<&mut Vec<u8>> {}
impl Sink for std::fs::File {}

/// A file written through [`AtomicFile`]: it appears at its path only on commit.
#[derive(Debug)]
pub struct AtomicSink(Option<io::BufWriter<AtomicFile>>);

impl AtomicSink {
    /// Starts writing `path` (under a temporary name until commit).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Ok(AtomicSink(Some(io::BufWriter::with_capacity(
            1 << 20,
            AtomicFile::create(path)?,
        ))))
    }

    fn inner(&mut self) -> io::Result<&mut io::BufWriter<AtomicFile>> {
        self.0
            .as_mut()
            .ok_or_else(|| io::Error::other("already committed"))
    }
}

impl Write for AtomicSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner()?.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner()?.flush()
    }
}

impl Seek for AtomicSink {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner()?.seek(pos)
    }
}

impl Sink for AtomicSink {
    fn commit(&mut self) -> io::Result<()> {
        let w = self
            .0
            .take()
            .ok_or_else(|| io::Error::other("already committed"))?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.finish()
    }
}

/// The chunking python-bloscpack chooses for `total` bytes and a requested
/// chunk size: `(chunk_size, last_chunk, nchunks)`.
pub fn chunking(total: u64, requested: usize) -> (u64, u64, u64) {
    let req = requested as u64;
    if total == 0 {
        (0, 0, 1)
    } else if req >= total {
        (total, total, 1)
    } else {
        let n = total.div_ceil(req);
        let last = total - req * (n - 1);
        (req, last, n)
    }
}

/// Serializes metadata the way python-bloscpack does: compact JSON with
/// every non-ASCII character escaped as `\uXXXX`.
pub fn metadata_json(v: &Value) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Builds the metadata section (header, stored bytes, padding, digest).
fn metadata_section(v: &Value, o: &MetadataOptions) -> Result<Vec<u8>> {
    let text = metadata_json(v);
    let raw = text.as_bytes();
    let meta_size = u32::try_from(raw.len())
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, "metadata larger than 4 GiB"))?;
    let (codec, stored) = match o.codec {
        MetaCodec::None => (MetaCodec::None, raw.to_vec()),
        MetaCodec::Zlib => {
            let z = core_codec::compress(Codec::Zlib, raw, Some(i32::from(o.level)))
                .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
            // Compression is dropped only when it makes the metadata strictly larger.
            if z.len() > raw.len() {
                (MetaCodec::None, raw.to_vec())
            } else {
                (MetaCodec::Zlib, z)
            }
        }
    };
    let comp = u32::try_from(stored.len())
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, "metadata too large"))?;
    let max = match o.max_meta_size {
        Some(m) if m < comp => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("max_meta_size {m} is smaller than the stored metadata ({comp} bytes)"),
            ));
        }
        Some(m) => m,
        None => meta_size.saturating_mul(10).max(comp),
    };
    let mh = MetadataHeader {
        magic_format: *META_MAGIC,
        meta_options: 0,
        meta_checksum: o.checksum,
        meta_codec: codec,
        meta_level: o.level,
        meta_size,
        max_meta_size: max,
        meta_comp_size: comp,
        user_codec: [0; 8],
    };
    let mut out = Vec::with_capacity(32 + max as usize + 64);
    out.extend_from_slice(&mh.to_bytes());
    out.extend_from_slice(&stored);
    out.resize(32 + max as usize, 0);
    out.extend_from_slice(o.checksum.digest(&stored).as_bytes());
    Ok(out)
}

/// One chunk's payload compressed, with the digest of the compressed bytes.
fn compress_chunk(raw: &[u8], params: &BloscParams, checksum: ChecksumKind) -> Compressed {
    let chunk = blosc::compress(raw, params).map_err(|e| e.to_string())?;
    let digest = checksum.digest(&chunk);
    Ok((chunk, digest))
}

/// Writes a compressed chunk and its digest at `pos` and enters its offset.
fn put_chunk<W: Sink>(
    sink: &mut W,
    offsets: &mut Vec<i64>,
    pos: &mut u64,
    compressed: Compressed,
) -> Result<()> {
    let (chunk, digest) = compressed.map_err(|e| Error::new(ErrorKind::InvalidArgument, e))?;
    sink.write_all(&chunk)?;
    sink.write_all(digest.as_bytes())?;
    offsets.push(i64::try_from(*pos).unwrap_or(i64::MAX));
    *pos += (chunk.len() + digest.as_bytes().len()) as u64;
    Ok(())
}

/// A streaming Bloscpack writer.
///
/// The total payload size is declared up front (it fixes the number of
/// chunks and the size of the offsets table); the payload is then written in
/// any pieces, and at most one chunk is held in memory. [`Writer::finish`]
/// patches the offsets table and commits the sink; for [`Writer::create`]
/// that is when the file appears.
#[derive(Debug)]
pub struct Writer<W: Sink> {
    sink: W,
    opts: WriteOptions,
    typesize: usize,
    header: Header,
    offsets_at: u64,
    offsets: Vec<i64>,
    pos: u64,
    buf: Vec<u8>,
    written: u64,
    total: u64,
    /// Chunks handed on (written, or compressing on `pool`).
    chunks: u64,
    /// Threads asked for by [`Writer::set_threads`] (0: every core).
    threads: usize,
    /// Compresses chunks on threads of its own once the payload is large
    /// enough; results are written in order.
    pool: Option<dataformats_core::parallel::OrderedPool<Vec<u8>, Compressed>>,
}

/// A chunk compressed on a pool thread with its digest, or why not.
type Compressed = std::result::Result<(Vec<u8>, dataformats_core::Digest), String>;

/// Bytes of chunks in flight on the pool at most (handed over but not yet
/// written).
const COMPRESSING_BYTES: usize = 64 << 20;

impl Writer<AtomicSink> {
    /// Starts writing the file at `path` (it appears when `finish` succeeds).
    pub fn create(
        path: impl AsRef<Path>,
        total: u64,
        metadata: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<Self> {
        Self::new(AtomicSink::create(path)?, total, metadata, opts)
    }
}

impl<W: Sink> Writer<W> {
    /// Starts a file of `total` payload bytes in `sink`, with optional metadata.
    pub fn new(
        mut sink: W,
        total: u64,
        metadata: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<Self> {
        opts.check()?;
        // As python-bloscpack: an array's itemsize, else 8.
        let numpy_itemsize = metadata
            .and_then(|m| NumpyMeta::from_value(m).ok().flatten())
            .map(|n| n.dtype.itemsize())
            .filter(|&s| (1..=255).contains(&s));
        let typesize = opts.typesize.or(numpy_itemsize).unwrap_or(8);
        let (chunk_size, last_chunk, nchunks) = chunking(total, opts.chunk_size);
        let max_app = if opts.offsets {
            opts.max_app_chunks.unwrap_or(nchunks.saturating_mul(10))
        } else {
            0
        };
        let too_big = |what: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{what} does not fit the header"),
            )
        };
        let header = Header {
            format_version: FORMAT_VERSION,
            options: if opts.offsets { OPTION_OFFSETS } else { 0 }
                | if metadata.is_some() {
                    OPTION_METADATA
                } else {
                    0
                },
            checksum: opts.checksum,
            typesize: u8::try_from(typesize).map_err(|_| too_big("typesize"))?,
            chunk_size: i32::try_from(chunk_size).map_err(|_| too_big("chunk_size"))?,
            last_chunk: i32::try_from(last_chunk).map_err(|_| too_big("last_chunk"))?,
            nchunks: i64::try_from(nchunks).map_err(|_| too_big("nchunks"))?,
            max_app_chunks: i64::try_from(max_app).map_err(|_| too_big("max_app_chunks"))?,
        };
        if header.nchunks.checked_add(header.max_app_chunks).is_none() {
            return Err(too_big("nchunks + max_app_chunks"));
        }
        sink.write_all(&header.to_bytes())?;
        let mut pos = 32u64;
        if let Some(m) = metadata {
            let section = metadata_section(m, &opts.metadata)?;
            sink.write_all(&section)?;
            pos += section.len() as u64;
        }
        let offsets_at = pos;
        if opts.offsets {
            let slots = nchunks + max_app;
            // Reserve the table (all -1, as the reference does); patched by finish().
            let minus1 = [0xffu8; 8 * 512];
            let mut left = slots * 8;
            while left > 0 {
                let n = left.min(minus1.len() as u64) as usize;
                sink.write_all(minus1.get(..n).unwrap_or_default())?;
                left -= n as u64;
            }
            pos += slots * 8;
        }
        Ok(Writer {
            sink,
            opts: *opts,
            typesize,
            header,
            offsets_at,
            offsets: Vec::new(),
            pos,
            buf: Vec::new(),
            written: 0,
            total,
            chunks: 0,
            threads: 0,
            pool: None,
        })
    }

    /// Compresses chunks on `threads` threads (0, the default: every core;
    /// 1: only the calling thread), each chunk on one of them, written in
    /// order: the file is the same either way. A payload under a few
    /// megabytes stays on the calling thread. Independent of
    /// [`WriteOptions::threads`], c-blosc's threads inside one chunk. Takes
    /// effect before the first chunk is complete.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// The header this writer writes.
    pub fn header(&self) -> &Header {
        &self.header
    }

    fn current_chunk_len(&self) -> u64 {
        self.header.declared_chunk_size(self.chunks).unwrap_or(0)
    }

    fn flush_chunk(&mut self) -> Result<()> {
        let params = self.opts.blosc(self.typesize);
        let checksum = self.opts.checksum;
        if self.pool.is_none() && self.chunks == 0 && self.header.nchunks > 1 {
            let threads = dataformats_core::parallel::threads_for(self.total, self.threads);
            if threads > 1 {
                self.pool = Some(dataformats_core::parallel::OrderedPool::new(
                    threads,
                    4 * threads,
                    COMPRESSING_BYTES,
                    move |raw: Vec<u8>| compress_chunk(&raw, &params, checksum),
                )?);
            }
        }
        self.chunks += 1;
        let Writer {
            sink,
            offsets,
            pos,
            buf,
            pool,
            ..
        } = self;
        match pool {
            Some(pool) => {
                let raw = std::mem::replace(buf, Vec::with_capacity(buf.capacity()));
                let n = raw.len();
                pool.push(raw, n, |c| put_chunk(sink, offsets, pos, c))
            }
            None => {
                let done = compress_chunk(buf, &params, checksum);
                buf.clear();
                put_chunk(sink, offsets, pos, done)
            }
        }
    }

    /// Adds payload bytes.
    pub fn write_payload(&mut self, mut data: &[u8]) -> Result<()> {
        if self.written + data.len() as u64 > self.total {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("more than the declared {} payload byte(s)", self.total),
            ));
        }
        while !data.is_empty() {
            let want = (self.current_chunk_len() as usize).saturating_sub(self.buf.len());
            let (now, rest) = data.split_at(want.min(data.len()));
            if self.buf.capacity() == 0 {
                self.buf.reserve_exact(self.current_chunk_len() as usize);
            }
            self.buf.extend_from_slice(now);
            self.written += now.len() as u64;
            data = rest;
            if self.buf.len() as u64 == self.current_chunk_len() {
                self.flush_chunk()?;
            }
        }
        Ok(())
    }

    /// Copies the whole rest of the payload from `r`.
    pub fn write_from(&mut self, r: &mut impl Read) -> Result<()> {
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            self.write_payload(buf.get(..n).unwrap_or_default())?;
        }
        Ok(())
    }

    /// Writes the last chunk, patches the offsets table and commits the sink.
    pub fn finish(mut self) -> Result<W> {
        if self.written != self.total {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{} payload byte(s) were declared but {} written",
                    self.total, self.written
                ),
            ));
        }
        if self.total == 0 {
            // One empty chunk, as the reference writes for empty input.
            self.flush_chunk()?;
        }
        if let Some(mut pool) = self.pool.take() {
            let (sink, offsets, pos) = (&mut self.sink, &mut self.offsets, &mut self.pos);
            pool.finish(|c| put_chunk(sink, offsets, pos, c))?;
        }
        if self.opts.offsets {
            self.sink.seek(SeekFrom::Start(self.offsets_at))?;
            let mut table = Vec::with_capacity(self.offsets.len() * 8);
            for o in &self.offsets {
                table.extend_from_slice(&o.to_le_bytes());
            }
            self.sink.write_all(&table)?;
            self.sink.seek(SeekFrom::End(0))?;
        }
        self.sink.commit()?;
        Ok(self.sink)
    }
}

/// Packs `data` into a Bloscpack file in memory.
pub fn pack_bytes(data: &[u8], metadata: Option<&Value>, opts: &WriteOptions) -> Result<Vec<u8>> {
    let mut w = Writer::new(Cursor::new(Vec::new()), data.len() as u64, metadata, opts)?;
    w.write_payload(data)?;
    Ok(w.finish()?.into_inner())
}

/// Packs a 1-D array of numbers with numpy metadata, in memory.
pub fn pack_array<T: Element>(values: &[T], opts: &WriteOptions) -> Result<Vec<u8>> {
    let dtype = crate::dtype::Dtype::Scalar(
        crate::dtype::Scalar::parse_typestr(T::TYPESTR)
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.0))?,
    );
    let meta = NumpyMeta {
        dtype,
        shape: vec![values.len() as u64],
        order: Order::C,
    };
    let size = std::mem::size_of::<T>();
    let mut o = *opts;
    if o.typesize.is_none() {
        o.typesize = Some(size);
    }
    if !o.chunk_size.is_multiple_of(size) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "chunk_size {} is not a multiple of the itemsize {size}",
                o.chunk_size
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(std::mem::size_of_val(values));
    for v in values {
        v.write_le(&mut bytes);
    }
    pack_bytes(&bytes, Some(&meta.to_value()), &o)
}

/// Packs the file at `input` into a Bloscpack file at `output`, streaming.
pub fn pack_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    metadata: Option<&Value>,
    opts: &WriteOptions,
) -> Result<()> {
    let mut f = std::fs::File::open(input.as_ref())?;
    let total = f.metadata()?.len();
    let mut w = Writer::create(output, total, metadata, opts)?;
    w.write_from(&mut f)?;
    w.finish()?;
    Ok(())
}

/// Appends `data` to the Bloscpack file at `path`, in place, as
/// python-bloscpack's append does: the last chunk is filled up to
/// `chunk_size` and rewritten at its offset (with `opts`' Blosc settings),
/// the rest goes into new chunks that use reserved offset slots, and the
/// header and offsets table are rewritten. Metadata is left alone.
///
/// Refuses, before writing anything, files without an offsets table and
/// appends that need more new chunks than `max_app_chunks` allows
/// ([`ErrorKind::NotEnoughSpace`]). Returns the number of new chunks.
pub fn append(path: impl AsRef<Path>, data: &[u8], opts: &WriteOptions) -> Result<u64> {
    opts.check()?;
    let path = path.as_ref();
    let reader = Reader::with_options(
        dataformats_core::Source::open(path)?,
        ReadOptions::default(),
    )?;
    let h = *reader.header();
    if !h.has_offsets() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "append needs a file with an offsets table",
        ));
    }
    let chunk_size = u64::try_from(h.chunk_size).unwrap_or(0);
    if chunk_size == 0 {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "append needs a known, non-zero chunk_size",
        ));
    }
    let last_i = reader.nchunks() - 1;
    let last_info = *reader
        .chunks()
        .get(last_i)
        .ok_or_else(|| Error::new(ErrorKind::SizeMismatch, "no chunks"))?;
    let mut last = reader.read_chunk(last_i)?;
    let fill = ((chunk_size - last.len() as u64) as usize).min(data.len());
    let (head, rest) = data.split_at(fill);
    let n_new = (rest.len() as u64).div_ceil(chunk_size);
    if n_new > h.max_app_chunks.unsigned_abs() {
        return Err(Error::new(
            ErrorKind::NotEnoughSpace,
            format!(
                "the append needs {n_new} new chunk(s) but only {} offset slot(s) are reserved",
                h.max_app_chunks
            ),
        ));
    }
    last.extend_from_slice(head);
    let typesize = opts.typesize.unwrap_or(usize::from(h.typesize.max(1)));
    let params = opts.blosc(typesize);
    let offsets_at = reader.chunks().first().map_or(0, |c| c.offset)
        - (h.nchunks.unsigned_abs() + h.max_app_chunks.unsigned_abs()) * 8;
    drop(reader);

    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut new_offsets = Vec::new();
    let mut pos = last_info.offset;
    let emit = |f: &mut std::fs::File, bytes: &[u8], pos: &mut u64| -> Result<()> {
        let c = blosc::compress(bytes, &params)
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
        f.seek(SeekFrom::Start(*pos))?;
        f.write_all(&c)?;
        f.write_all(h.checksum.digest(&c).as_bytes())?;
        *pos += (c.len() + h.checksum.digest_size()) as u64;
        Ok(())
    };
    emit(&mut f, &last, &mut pos)?;
    let mut last_len = last.len() as u64;
    for piece in rest.chunks(chunk_size as usize) {
        new_offsets.push(pos);
        emit(&mut f, piece, &mut pos)?;
        last_len = piece.len() as u64;
    }
    let mut nh = h;
    nh.nchunks += n_new as i64;
    nh.max_app_chunks -= n_new as i64;
    nh.last_chunk = i32::try_from(last_len)
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, "chunk too large"))?;
    let slot0 = offsets_at + (h.nchunks.unsigned_abs()) * 8;
    f.seek(SeekFrom::Start(slot0))?;
    for o in &new_offsets {
        f.write_all(&o.to_le_bytes())?;
    }
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&nh.to_bytes())?;
    f.sync_all()?;
    Ok(n_new)
}
