//! Blosc1 chunks through the vendored C c-blosc 1.21 (blosc-src).
//!
//! c-blosc's decoders take no source length, so nothing reaches them before
//! [`validate`] has checked the 16-byte header against the buffer, against the
//! rules c-blosc applies itself, and against the stricter rules our readers
//! enforce (the chunk rule of `bloscpack-blz.md` §2.5), and before
//! `blosc_cbuffer_validate` has agreed.
//!
//! ```
//! use dataformats_core::codec::blosc::{self, BloscCompressor, BloscParams, Shuffle};
//! let data: Vec<u8> = (0..4000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
//! let params = BloscParams::new(BloscCompressor::Lz4, 5, Shuffle::Byte, 4);
//! let chunk = blosc::compress(&data, &params).unwrap();
//! let header = blosc::validate(&chunk).unwrap();
//! assert_eq!(header.nbytes as usize, data.len());
//!
//! let mut out = vec![0u8; data.len()];
//! blosc::decompress_into(&chunk, &mut out, 1).unwrap();
//! assert_eq!(out, data);
//!
//! // Items 10..12 only (typesize 4), decoding just the block that holds them.
//! let mut two = [0u8; 8];
//! blosc::getitem(&chunk, 10, 2, &mut two).unwrap();
//! assert_eq!(two, data[40..48]);
//! ```

use std::ffi::{CStr, c_int, c_void};
use std::fmt;

use super::{CodecError, DecodedSize};

const BLOSC: &str = "blosc";

/// Size of a Blosc1 chunk header.
pub const HEADER_SIZE: usize = 16;
const HEADER_U32: u32 = 16;
/// Largest `nbytes` a Blosc1 chunk may hold (`BLOSC_MAX_BUFFERSIZE`).
pub const MAX_BUFFER_SIZE: u32 = blosc_src::BLOSC_MAX_BUFFERSIZE;
/// The only Blosc1 format version c-blosc 1.x reads and writes.
pub const FORMAT_VERSION: u8 = 2;

/// Flag bit 0: byte shuffle applied.
pub const FLAG_SHUFFLE: u8 = 0x01;
/// Flag bit 1: the body is the raw data.
pub const FLAG_MEMCPYED: u8 = 0x02;
/// Flag bit 2: bit shuffle applied.
pub const FLAG_BITSHUFFLE: u8 = 0x04;
/// Flag bit 3: reserved, must be clear.
pub const FLAG_RESERVED: u8 = 0x08;
/// Flag bit 4: blocks are not split into per-byte streams.
pub const FLAG_DONT_SPLIT: u8 = 0x10;

/// The compressor inside a Blosc chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BloscCompressor {
    /// BloscLZ (codec id 0).
    BloscLz,
    /// LZ4 (codec id 1).
    Lz4,
    /// LZ4-HC (codec id 1 too: same stream format as LZ4).
    Lz4Hc,
    /// Snappy (codec id 2; built from the vendored C++ snappy).
    Snappy,
    /// zlib (codec id 3).
    Zlib,
    /// Zstandard (codec id 4).
    Zstd,
}

impl BloscCompressor {
    /// Every compressor c-blosc knows.
    pub const ALL: [BloscCompressor; 6] = [
        BloscCompressor::BloscLz,
        BloscCompressor::Lz4,
        BloscCompressor::Lz4Hc,
        BloscCompressor::Snappy,
        BloscCompressor::Zlib,
        BloscCompressor::Zstd,
    ];

    /// The name c-blosc uses (`"blosclz"`, `"lz4"`, `"lz4hc"`, `"snappy"`, `"zlib"`, `"zstd"`).
    pub const fn name(self) -> &'static str {
        match self {
            BloscCompressor::BloscLz => "blosclz",
            BloscCompressor::Lz4 => "lz4",
            BloscCompressor::Lz4Hc => "lz4hc",
            BloscCompressor::Snappy => "snappy",
            BloscCompressor::Zlib => "zlib",
            BloscCompressor::Zstd => "zstd",
        }
    }

    /// The compressor named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The codec id stored in flag bits 5..7.
    pub const fn id(self) -> u8 {
        match self {
            BloscCompressor::BloscLz => 0,
            BloscCompressor::Lz4 | BloscCompressor::Lz4Hc => 1,
            BloscCompressor::Snappy => 2,
            BloscCompressor::Zlib => 3,
            BloscCompressor::Zstd => 4,
        }
    }

    /// True when this build can compress and decompress with it.
    pub const fn is_available(self) -> bool {
        // blosc-src is built with every codec c-blosc supports (lz4, zlib, zstd, snappy).
        true
    }

    fn c_name(self) -> &'static CStr {
        match self {
            BloscCompressor::BloscLz => c"blosclz",
            BloscCompressor::Lz4 => c"lz4",
            BloscCompressor::Lz4Hc => c"lz4hc",
            BloscCompressor::Snappy => c"snappy",
            BloscCompressor::Zlib => c"zlib",
            BloscCompressor::Zstd => c"zstd",
        }
    }
}

impl fmt::Display for BloscCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The shuffle filter applied before compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shuffle {
    /// No filter (0).
    None,
    /// Byte shuffle (1).
    Byte,
    /// Bit shuffle (2).
    Bit,
}

impl Shuffle {
    /// The name (`"none"`, `"byte"`, `"bit"`).
    pub const fn name(self) -> &'static str {
        match self {
            Shuffle::None => "none",
            Shuffle::Byte => "byte",
            Shuffle::Bit => "bit",
        }
    }

    const fn code(self) -> c_int {
        match self {
            Shuffle::None => 0,
            Shuffle::Byte => 1,
            Shuffle::Bit => 2,
        }
    }
}

/// The 16-byte header of a Blosc1 chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloscHeader {
    /// Blosc format version (2 for c-blosc 1.x).
    pub version: u8,
    /// Format version of the inner codec (1 for every codec).
    pub versionlz: u8,
    /// Flag byte (shuffle, memcpyed, bitshuffle, reserved, dont-split, codec id).
    pub flags: u8,
    /// Element size for the shuffle filters.
    pub typesize: u8,
    /// Decoded size.
    pub nbytes: u32,
    /// Size of the internal blocks.
    pub blocksize: u32,
    /// Compressed size including this header.
    pub cbytes: u32,
}

impl BloscHeader {
    /// Reads the header fields from the first 16 bytes of `chunk` (no rules checked).
    pub fn parse(chunk: &[u8]) -> Result<Self, CodecError> {
        let Some((h, _)) = chunk.split_first_chunk::<HEADER_SIZE>() else {
            return Err(invalid(format!(
                "chunk of {} byte(s) is shorter than the 16-byte header",
                chunk.len()
            )));
        };
        let u32_at = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(h.get(i..i + 4).unwrap_or(&[0; 4]));
            u32::from_le_bytes(b)
        };
        let [version, versionlz, flags, typesize, ..] = *h;
        Ok(BloscHeader {
            version,
            versionlz,
            flags,
            typesize,
            nbytes: u32_at(4),
            blocksize: u32_at(8),
            cbytes: u32_at(12),
        })
    }

    /// The codec id in flag bits 5..7.
    pub const fn codec_id(&self) -> u8 {
        self.flags >> 5
    }

    /// The compressor the codec id names (`Lz4` for id 1, which LZ4-HC shares);
    /// `None` for ids 5..7.
    pub const fn compressor(&self) -> Option<BloscCompressor> {
        match self.codec_id() {
            0 => Some(BloscCompressor::BloscLz),
            1 => Some(BloscCompressor::Lz4),
            2 => Some(BloscCompressor::Snappy),
            3 => Some(BloscCompressor::Zlib),
            4 => Some(BloscCompressor::Zstd),
            _ => None,
        }
    }

    /// True when the body is the raw data.
    pub const fn is_memcpyed(&self) -> bool {
        self.flags & FLAG_MEMCPYED != 0
    }

    /// The shuffle filter the flags ask for (byte shuffle wins if both bits are set).
    pub const fn shuffle(&self) -> Shuffle {
        if self.flags & FLAG_SHUFFLE != 0 {
            Shuffle::Byte
        } else if self.flags & FLAG_BITSHUFFLE != 0 {
            Shuffle::Bit
        } else {
            Shuffle::None
        }
    }

    /// Number of internal blocks (0 for an empty chunk).
    pub const fn nblocks(&self) -> u32 {
        if self.blocksize == 0 {
            0
        } else {
            self.nbytes.div_ceil(self.blocksize)
        }
    }

    /// Checks the header rules (version, flags, typesize, sizes, codec,
    /// bstarts table size); does not look at the body.
    pub fn check(&self) -> Result<(), CodecError> {
        if self.version != FORMAT_VERSION {
            return Err(invalid(format!(
                "Blosc format version {}, expected {FORMAT_VERSION}",
                self.version
            )));
        }
        if self.flags & FLAG_RESERVED != 0 {
            return Err(invalid(format!(
                "reserved flag bit 3 set (flags 0x{:02x})",
                self.flags
            )));
        }
        if self.typesize == 0 {
            return Err(invalid("typesize 0"));
        }
        if self.cbytes < HEADER_U32 {
            return Err(invalid(format!(
                "cbytes {} is less than the 16-byte header",
                self.cbytes
            )));
        }
        if self.nbytes == 0 {
            if self.cbytes != HEADER_U32 {
                return Err(invalid(format!(
                    "empty chunk with cbytes {} (must be 16)",
                    self.cbytes
                )));
            }
            return Ok(());
        }
        if self.nbytes > MAX_BUFFER_SIZE {
            return Err(invalid(format!(
                "nbytes {} exceeds the Blosc maximum {MAX_BUFFER_SIZE}",
                self.nbytes
            )));
        }
        if self.blocksize == 0 || self.blocksize > self.nbytes {
            return Err(invalid(format!(
                "blocksize {} is not in 1..={} (nbytes)",
                self.blocksize, self.nbytes
            )));
        }
        if self.is_memcpyed() {
            if u64::from(self.cbytes) != u64::from(self.nbytes) + HEADER_SIZE as u64 {
                return Err(invalid(format!(
                    "memcpyed chunk with cbytes {} != nbytes {} + 16",
                    self.cbytes, self.nbytes
                )));
            }
            return Ok(());
        }
        match self.compressor() {
            None => return Err(invalid(format!("unknown codec id {}", self.codec_id()))),
            Some(c) if !c.is_available() => {
                return Err(CodecError::Unsupported {
                    codec: BLOSC,
                    why: format!("{c} chunks (this build has no {c} decoder)").into(),
                });
            }
            Some(_) => {}
        }
        if self.versionlz != 1 {
            return Err(invalid(format!(
                "codec format version (versionlz) {}, expected 1",
                self.versionlz
            )));
        }
        let table = HEADER_SIZE as u64 + 4 * u64::from(self.nblocks());
        if table > u64::from(self.cbytes) {
            return Err(invalid(format!(
                "{} block offsets do not fit in cbytes {}",
                self.nblocks(),
                self.cbytes
            )));
        }
        Ok(())
    }
}

fn invalid(why: impl Into<std::borrow::Cow<'static, str>>) -> CodecError {
    CodecError::InvalidHeader {
        codec: BLOSC,
        why: why.into(),
    }
}

/// Checks that `chunk` is one whole, well-formed Blosc1 chunk: exactly
/// `cbytes` long, a header that passes [`BloscHeader::check`], block offsets
/// inside the chunk, and `blosc_cbuffer_validate` agreeing. After this it is
/// safe to hand the chunk to c-blosc.
pub fn validate(chunk: &[u8]) -> Result<BloscHeader, CodecError> {
    let h = BloscHeader::parse(chunk)?;
    if chunk.len() as u64 != u64::from(h.cbytes) {
        return Err(invalid(format!(
            "cbytes {} but the chunk is {} byte(s)",
            h.cbytes,
            chunk.len()
        )));
    }
    h.check()?;
    if h.nbytes > 0 && !h.is_memcpyed() {
        let table_end = HEADER_SIZE + 4 * h.nblocks() as usize;
        let table = chunk.get(HEADER_SIZE..table_end).unwrap_or_default();
        let max = u64::from(h.cbytes).saturating_sub(4);
        for (i, b) in table.chunks_exact(4).enumerate() {
            let mut x = [0u8; 4];
            x.copy_from_slice(b);
            let start = i32::from_le_bytes(x);
            let ok = u64::try_from(start).is_ok_and(|s| s >= table_end as u64 && s <= max);
            if !ok {
                return Err(CodecError::corrupt(
                    BLOSC,
                    format!("block {i} starts at {start}, outside {table_end}..={max}"),
                ));
            }
        }
    }
    let mut nbytes = 0usize;
    // SAFETY: `chunk` is a live slice of `chunk.len()` bytes (at least 16, checked
    // by `parse`); the function reads only the header within that length and
    // writes one usize through a valid pointer.
    let rc = unsafe {
        blosc_src::blosc_cbuffer_validate(chunk.as_ptr().cast::<c_void>(), chunk.len(), &mut nbytes)
    };
    if rc != 0 || nbytes != h.nbytes as usize {
        return Err(invalid("rejected by blosc_cbuffer_validate"));
    }
    Ok(h)
}

/// Decodes the whole chunk into `dst`, whose length is the decoded size the
/// caller expects; the chunk's `nbytes` must equal it. `threads` is the number
/// of c-blosc worker threads (1 = serial; no global state is used).
pub fn decompress_into(
    chunk: &[u8],
    dst: &mut [u8],
    threads: usize,
) -> Result<BloscHeader, CodecError> {
    let h = validate(chunk)?;
    if h.nbytes as usize != dst.len() {
        return Err(CodecError::size(
            BLOSC,
            dst.len(),
            DecodedSize::Exactly(u64::from(h.nbytes)),
        ));
    }
    if h.nbytes == 0 {
        return Ok(h);
    }
    let threads = c_int::try_from(threads.clamp(1, 256)).unwrap_or(1);
    // SAFETY: `validate` established that `chunk` is exactly one chunk of
    // `cbytes` bytes whose header and block table c-blosc accepts, so c-blosc
    // reads only inside it; `dst` is writable for `dst.len()` bytes, which we
    // pass as `destsize` (c-blosc never writes past it).
    let n = unsafe {
        blosc_src::blosc_decompress_ctx(
            chunk.as_ptr().cast::<c_void>(),
            dst.as_mut_ptr().cast::<c_void>(),
            dst.len(),
            threads,
        )
    };
    if n <= 0 {
        return Err(CodecError::corrupt(
            BLOSC,
            format!("decompression failed (c-blosc code {n})"),
        ));
    }
    if n as usize != dst.len() {
        return Err(CodecError::size(
            BLOSC,
            dst.len(),
            DecodedSize::Exactly(n as u64),
        ));
    }
    Ok(h)
}

/// Decodes `nitems` items of `typesize` bytes starting at item `start` into
/// the front of `dst`, decoding only the blocks that hold them.
pub fn getitem(
    chunk: &[u8],
    start: u64,
    nitems: u64,
    dst: &mut [u8],
) -> Result<BloscHeader, CodecError> {
    let h = validate(chunk)?;
    let ts = u64::from(h.typesize);
    let total_items = u64::from(h.nbytes) / ts;
    let end = start
        .checked_add(nitems)
        .filter(|&e| e <= total_items)
        .ok_or_else(|| {
            CodecError::arg(
                BLOSC,
                format!(
                    "items {start}..{start}+{nitems} are outside the chunk's {total_items} item(s)"
                ),
            )
        })?;
    let want = nitems * ts;
    if (dst.len() as u64) < want {
        return Err(CodecError::arg(
            BLOSC,
            format!("destination of {} byte(s) cannot hold {want}", dst.len()),
        ));
    }
    if nitems == 0 {
        return Ok(h);
    }
    let (Ok(start_c), Ok(n_c), Ok(_)) = (
        c_int::try_from(start),
        c_int::try_from(nitems),
        c_int::try_from(end),
    ) else {
        return Err(CodecError::arg(BLOSC, "item range does not fit in a C int"));
    };
    // SAFETY: `chunk` was validated as above; the item range lies inside the
    // chunk's nbytes, and `dst` has room for nitems * typesize bytes.
    let n = unsafe {
        blosc_src::blosc_getitem(
            chunk.as_ptr().cast::<c_void>(),
            start_c,
            n_c,
            dst.as_mut_ptr().cast::<c_void>(),
        )
    };
    if n < 0 {
        return Err(CodecError::corrupt(
            BLOSC,
            format!("getitem failed (c-blosc code {n})"),
        ));
    }
    if n as u64 != want {
        return Err(CodecError::SizeMismatch {
            codec: BLOSC,
            expected: want,
            found: DecodedSize::Exactly(n as u64),
        });
    }
    Ok(h)
}

/// Compression settings for [`compress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BloscParams {
    /// The compressor.
    pub compressor: BloscCompressor,
    /// Compression level 0..=9 (0 stores the data memcpyed).
    pub clevel: u8,
    /// The shuffle filter.
    pub shuffle: Shuffle,
    /// Element size for the shuffle filter, 1..=255.
    pub typesize: usize,
    /// Block size in bytes; 0 lets c-blosc choose.
    pub blocksize: usize,
    /// c-blosc worker threads (1 = serial).
    pub threads: usize,
}

impl BloscParams {
    /// Settings with an automatic block size and one thread.
    pub const fn new(
        compressor: BloscCompressor,
        clevel: u8,
        shuffle: Shuffle,
        typesize: usize,
    ) -> Self {
        BloscParams {
            compressor,
            clevel,
            shuffle,
            typesize,
            blocksize: 0,
            threads: 1,
        }
    }

    /// These settings with a fixed block size.
    #[must_use]
    pub const fn with_blocksize(mut self, blocksize: usize) -> Self {
        self.blocksize = blocksize;
        self
    }

    /// These settings with `threads` worker threads.
    #[must_use]
    pub const fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }
}

/// Compresses `src` into one Blosc1 chunk.
pub fn compress(src: &[u8], p: &BloscParams) -> Result<Vec<u8>, CodecError> {
    if !p.compressor.is_available() {
        return Err(CodecError::Unsupported {
            codec: BLOSC,
            why: format!("{} is not built in", p.compressor).into(),
        });
    }
    if p.clevel > 9 {
        return Err(CodecError::arg(
            BLOSC,
            format!("clevel {} is not in 0..=9", p.clevel),
        ));
    }
    if !(1..=255).contains(&p.typesize) {
        return Err(CodecError::arg(
            BLOSC,
            format!("typesize {} is not in 1..=255", p.typesize),
        ));
    }
    if src.len() > MAX_BUFFER_SIZE as usize {
        return Err(CodecError::arg(
            BLOSC,
            format!("{} bytes exceed the Blosc maximum", src.len()),
        ));
    }
    let cap = src.len() + HEADER_SIZE;
    let mut out = vec![0u8; cap];
    let threads = c_int::try_from(p.threads.clamp(1, 256)).unwrap_or(1);
    // SAFETY: `src` is readable for `src.len()` bytes (passed as nbytes), `out`
    // is writable for `cap` bytes (passed as destsize), the compressor name is
    // a NUL-terminated static string, and the numeric arguments were checked
    // against c-blosc's documented ranges above.
    let n = unsafe {
        blosc_src::blosc_compress_ctx(
            c_int::from(p.clevel),
            p.shuffle.code(),
            p.typesize,
            src.len(),
            src.as_ptr().cast::<c_void>(),
            out.as_mut_ptr().cast::<c_void>(),
            cap,
            p.compressor.c_name().as_ptr(),
            p.blocksize,
            threads,
        )
    };
    if n <= 0 {
        return Err(CodecError::arg(
            BLOSC,
            format!("compression failed (c-blosc code {n})"),
        ));
    }
    out.truncate(n as usize);
    Ok(out)
}

/// The version of the c-blosc library built in (e.g. `"1.21.6"`).
pub fn library_version() -> &'static str {
    // SAFETY: c-blosc returns a pointer to a static NUL-terminated string.
    let s = unsafe { CStr::from_ptr(blosc_src::blosc_get_version_string()) };
    s.to_str().unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| ((i / 5) as f32).to_le_bytes())
            .collect()
    }

    #[test]
    fn round_trip_every_compressor_and_shuffle() {
        let d = data();
        for c in BloscCompressor::ALL
            .into_iter()
            .filter(|c| c.is_available())
        {
            for s in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
                let p = BloscParams::new(c, 5, s, 4).with_threads(2);
                let chunk = compress(&d, &p).unwrap();
                let h = validate(&chunk).unwrap();
                assert_eq!(h.nbytes as usize, d.len());
                assert_eq!(h.typesize, 4);
                assert_eq!(h.compressor().map(|x| x.id()), Some(c.id()), "{c}");
                let mut out = vec![0u8; d.len()];
                decompress_into(&chunk, &mut out, 1).unwrap();
                assert_eq!(out, d, "{c} {s:?}");
                let mut item = [0u8; 12];
                getitem(&chunk, 1000, 3, &mut item).unwrap();
                assert_eq!(item, d[4000..4012], "{c} {s:?}");
            }
        }
        assert!(library_version().starts_with("1.21"));
    }

    #[test]
    fn clevel0_is_memcpyed_and_empty_is_header_only() {
        let d = data();
        let p = BloscParams::new(BloscCompressor::BloscLz, 0, Shuffle::None, 1);
        let chunk = compress(&d[..1000], &p).unwrap();
        let h = validate(&chunk).unwrap();
        assert!(h.is_memcpyed());
        assert_eq!(h.cbytes, 1016);
        let empty = compress(b"", &p).unwrap();
        let h = validate(&empty).unwrap();
        assert_eq!((h.nbytes, h.cbytes), (0, 16));
        decompress_into(&empty, &mut [], 1).unwrap();
    }

    #[test]
    fn size_declared_by_caller_must_match() {
        let d = data();
        let chunk = compress(
            &d,
            &BloscParams::new(BloscCompressor::Zstd, 3, Shuffle::Byte, 4),
        )
        .unwrap();
        let mut small = vec![0u8; d.len() - 1];
        let e = decompress_into(&chunk, &mut small, 1).unwrap_err();
        assert!(
            matches!(e, CodecError::SizeMismatch { found: DecodedSize::Exactly(n), .. } if n == d.len() as u64)
        );
        let mut big = vec![0u8; d.len() + 1];
        assert!(matches!(
            decompress_into(&chunk, &mut big, 1),
            Err(CodecError::SizeMismatch { .. })
        ));
    }

    #[test]
    fn header_rules() {
        let d = data();
        let good = compress(
            &d[..8000],
            &BloscParams::new(BloscCompressor::Lz4, 5, Shuffle::Byte, 4),
        )
        .unwrap();
        let mutate = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut c = good.clone();
            f(&mut c);
            validate(&c)
        };
        assert!(mutate(&|_| {}).is_ok());
        let header_err =
            |r: Result<BloscHeader, CodecError>| matches!(r, Err(CodecError::InvalidHeader { .. }));
        assert!(header_err(mutate(&|c| c[0] = 3)), "version");
        assert!(header_err(mutate(&|c| c[1] = 2)), "versionlz");
        assert!(
            header_err(mutate(&|c| c[2] |= FLAG_RESERVED)),
            "reserved flag"
        );
        assert!(header_err(mutate(&|c| c[3] = 0)), "typesize 0");
        assert!(
            header_err(mutate(&|c| c[2] = (c[2] & 0x1f) | (6 << 5))),
            "codec id 6"
        );
        // An LZ4 chunk relabelled as Snappy passes the header rules but cannot decode.
        let relabelled = {
            let mut c = good.clone();
            c[2] = (c[2] & 0x1f) | (2 << 5);
            c
        };
        assert!(validate(&relabelled).is_ok());
        let mut out = vec![0u8; 8000];
        assert!(matches!(
            decompress_into(&relabelled, &mut out, 1),
            Err(CodecError::Corrupt { .. })
        ));
        assert!(
            header_err(mutate(&|c| c[8..12].copy_from_slice(&8001u32.to_le_bytes()))),
            "blocksize > nbytes"
        );
        assert!(
            header_err(mutate(&|c| c[8..12].copy_from_slice(&0u32.to_le_bytes()))),
            "blocksize 0"
        );
        assert!(
            header_err(mutate(&|c| {
                c.pop();
            })),
            "shorter than cbytes"
        );
        assert!(header_err(mutate(&|c| c.push(0))), "longer than cbytes");
        assert!(
            header_err(mutate(
                &|c| c[12..16].copy_from_slice(&u32::MAX.to_le_bytes())
            )),
            "cbytes"
        );
        // Block start pointing into the header.
        assert!(matches!(
            mutate(&|c| c[16..20].copy_from_slice(&4i32.to_le_bytes())),
            Err(CodecError::Corrupt { .. })
        ));
        assert!(header_err(validate(&good[..10])), "short");
        // Memcpyed with a wrong cbytes.
        let mem = compress(
            &d[..100],
            &BloscParams::new(BloscCompressor::Lz4, 0, Shuffle::None, 1),
        )
        .unwrap();
        let mut bad = mem.clone();
        bad[4..8].copy_from_slice(&99u32.to_le_bytes());
        assert!(header_err(validate(&bad)));
    }

    #[test]
    fn getitem_range_checks() {
        let d = data();
        let chunk = compress(
            &d[..4000],
            &BloscParams::new(BloscCompressor::BloscLz, 5, Shuffle::Byte, 4),
        )
        .unwrap();
        let mut dst = [0u8; 8];
        assert!(getitem(&chunk, 999, 2, &mut dst).is_err());
        assert!(getitem(&chunk, u64::MAX, 2, &mut dst).is_err());
        assert!(getitem(&chunk, 0, 3, &mut dst).is_err(), "dst too small");
        getitem(&chunk, 998, 2, &mut dst).unwrap();
        assert_eq!(dst, d[3992..4000]);
    }

    #[test]
    fn corrupted_bodies_never_crash() {
        let d = data();
        let good = compress(
            &d[..20_000],
            &BloscParams::new(BloscCompressor::Zlib, 5, Shuffle::Byte, 4),
        )
        .unwrap();
        let mut out = vec![0u8; 20_000];
        for pos in (16..good.len()).step_by(7) {
            let mut c = good.clone();
            c[pos] ^= 0xa5;
            let _ = decompress_into(&c, &mut out, 1);
        }
    }
}
