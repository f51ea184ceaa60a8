//! Blosc1 chunks through the vendored C c-blosc 1.21 (blosc-src); zlib
//! chunks decoded on one thread go through libdeflate and our own block
//! loop and unshuffle instead, with c-blosc deciding whenever that path has
//! any doubt (see `docs/architecture.md`, "Codecs").
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
    if threads <= 1 && zlib_blocks(chunk, &h, dst) {
        return Ok(h);
    }
    decode_with_c_blosc(chunk, &h, dst, threads)
}

/// [`decompress_into`] by c-blosc alone, whatever the codec: the reference
/// the faster zlib path is measured and tested against.
pub fn decompress_into_c_blosc(
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
    decode_with_c_blosc(chunk, &h, dst, threads)
}

/// c-blosc's decode of a chunk [`validate`] passed, `dst` being `nbytes` long.
fn decode_with_c_blosc(
    chunk: &[u8],
    h: &BloscHeader,
    dst: &mut [u8],
    threads: usize,
) -> Result<BloscHeader, CodecError> {
    let h = *h;
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

/// c-blosc's `MIN_BUFFERSIZE`: blocks of fewer elements are not split.
const MIN_SPLIT_ELEMENTS: usize = 128;
/// c-blosc's `MAX_SPLITS`: larger elements are not split.
const MAX_SPLITS: usize = 16;

/// The largest block buffer a thread keeps between chunks (c-blosc's own
/// blocks are at most a few MiB).
const KEEP_SHUFFLED: usize = 8 << 20;

thread_local! {
    /// The shuffled bytes of one block, kept per thread.
    static SHUFFLED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A zlib chunk decoded here instead of by c-blosc: each split inflated by
/// libdeflate (whole-buffer inflate of a known size, about twice zlib's
/// speed), the byte shuffle undone here, with the block layout and the
/// checks of c-blosc 1.21's block decoder (splits, a split stored raw when
/// its size equals its decoded size, every size checked against the chunk).
///
/// False whenever this path cannot be sure of c-blosc's answer: another
/// codec, bit shuffle, a zlib stream declaring a window under 32 KiB (zlib
/// refuses distances beyond the declared window, libdeflate does not look),
/// or any failure at all; c-blosc then decodes the chunk, so its results and
/// its errors stay the reference. `dst` is `nbytes` long; on false its
/// bytes are unspecified.
fn zlib_blocks(chunk: &[u8], h: &BloscHeader, dst: &mut [u8]) -> bool {
    if h.is_memcpyed() || h.compressor() != Some(BloscCompressor::Zlib) {
        return false;
    }
    let ts = usize::from(h.typesize);
    let shuffle = h.flags & FLAG_SHUFFLE != 0 && ts > 1;
    if !shuffle && h.flags & FLAG_BITSHUFFLE != 0 {
        return false;
    }
    let may_split = h.flags & FLAG_DONT_SPLIT == 0 && ts <= MAX_SPLITS;
    let blocksize = h.blocksize as usize;
    let decoded = super::with_libdeflate(|d| {
        SHUFFLED.with(|cell| {
            let Ok(mut shuffled) = cell.try_borrow_mut() else {
                return false;
            };
            let all = dst.chunks_mut(blocksize).enumerate().all(|(j, block)| {
                let Some(start) = block_start(chunk, j) else {
                    return false;
                };
                // The last block, when shorter, is never split.
                let bsize = block.len();
                let nsplits = if may_split && bsize == blocksize && bsize / ts >= MIN_SPLIT_ELEMENTS
                {
                    ts
                } else {
                    1
                };
                if shuffle {
                    shuffled.resize(bsize, 0);
                    inflate_splits(d, chunk, start, nsplits, &mut shuffled)
                        && unshuffle(ts, &shuffled, block)
                } else {
                    inflate_splits(d, chunk, start, nsplits, block)
                }
            });
            // Kept for the next chunk, unless a rare huge block made it big.
            if shuffled.capacity() > KEEP_SHUFFLED {
                *shuffled = Vec::new();
            }
            all
        })
    });
    decoded == Some(true)
}

/// Where block `j`'s splits start (an entry of the table after the header).
fn block_start(chunk: &[u8], j: usize) -> Option<usize> {
    let at = HEADER_SIZE.checked_add(j.checked_mul(4)?)?;
    usize::try_from(i32_at(chunk, at)?).ok()
}

/// The little-endian `i32` at byte `at` of `chunk`.
fn i32_at(chunk: &[u8], at: usize) -> Option<i32> {
    let b = chunk.get(at..at.checked_add(4)?)?;
    Some(i32::from_le_bytes(b.try_into().ok()?))
}

/// Fills `out` (one block, `nsplits` equal parts) from the splits that start
/// at `pos`: each a 4-byte size, then that many bytes, which are the part
/// itself when the size equals the part's, or else a zlib stream of it.
fn inflate_splits(
    d: &mut libdeflater::Decompressor,
    chunk: &[u8],
    mut pos: usize,
    nsplits: usize,
    out: &mut [u8],
) -> bool {
    if nsplits == 0 || out.is_empty() || !out.len().is_multiple_of(nsplits) {
        return false;
    }
    let part = out.len() / nsplits;
    for dst in out.chunks_exact_mut(part) {
        let Some(size) = i32_at(chunk, pos).and_then(|n| usize::try_from(n).ok()) else {
            return false;
        };
        pos += 4;
        let Some(src) = pos.checked_add(size).and_then(|end| chunk.get(pos..end)) else {
            return false;
        };
        pos += size;
        if size == part {
            dst.copy_from_slice(src);
        } else if src.first() != Some(&0x78) || d.zlib_decompress(src, dst) != Ok(part) {
            // 0x78: deflate with a 32 KiB window, what zlib writes by default.
            return false;
        }
    }
    true
}

/// Undoes the byte shuffle of one block: `src` holds byte 0 of every
/// element, then byte 1 of every element, and so on; the bytes after the
/// last whole element are stored as they are.
fn unshuffle(ts: usize, src: &[u8], dst: &mut [u8]) -> bool {
    if src.len() != dst.len() || ts == 0 {
        return false;
    }
    let n = dst.len() / ts;
    let body = n * ts;
    let (planes, tail) = src.split_at(body);
    let (out, out_tail) = dst.split_at_mut(body);
    out_tail.copy_from_slice(tail);
    match ts {
        2 => unshuffle_simd::<2>(planes, out, n),
        4 => unshuffle_simd::<4>(planes, out, n),
        8 => unshuffle_simd::<8>(planes, out, n),
        16 => unshuffle_simd::<16>(planes, out, n),
        _ => {
            for (k, plane) in planes.chunks_exact(n.max(1)).enumerate().take(ts) {
                for (o, &b) in out.iter_mut().skip(k).step_by(ts).zip(plane) {
                    *o = b;
                }
            }
        }
    }
    true
}

/// [`unshuffle`] of `T`-byte elements for `T` = 2, 4, 8 or 16: 16 elements
/// at a time in SSE2 registers (every x86-64 has it).
///
/// The `T` planes' next 16 bytes are loaded into `T` registers. Each of the
/// log2(`T`) rounds interleaves the registers pairwise, (0, 1), (2, 3) and so
/// on, at a width of 1, 2, 4 then 8 bytes; the low halves go to the first
/// half of the registers and the high halves to the second. After the last
/// round, register `j` holds the 16 output bytes at the position whose bits
/// are `j`'s reversed.
#[cfg(target_arch = "x86_64")]
fn unshuffle_sse2<const T: usize>(planes: &[u8], out: &mut [u8], n: usize) {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_storeu_si128};
    const { assert!(T.is_power_of_two() && T >= 2 && T <= 16) };
    let rounds = T.trailing_zeros();
    let whole = n / 16 * 16;
    if planes.len() < T * n || out.len() < T * n {
        return unshuffle_rest::<T>(planes, out, n, 0);
    }
    let (src, dst) = (planes.as_ptr(), out.as_mut_ptr());
    for i in (0..whole).step_by(16) {
        // SAFETY: for every k < T, bytes k * n + i .. k * n + i + 16 lie in
        // `planes` (i + 16 <= n and planes holds T * n bytes), and the T
        // stores cover bytes T * i .. T * (i + 16) of `out` (T * (i + 16) <=
        // T * n); loads and stores are unaligned.
        unsafe {
            let mut x: [_; T] = std::array::from_fn(|k| _mm_loadu_si128(src.add(k * n + i).cast()));
            for round in 0..rounds {
                let prev = x;
                let (low, high) = x.split_at_mut(T / 2);
                for ((l, h), &[a, b]) in low.iter_mut().zip(high).zip(prev.as_chunks::<2>().0) {
                    *l = interleave(round, false, a, b);
                    *h = interleave(round, true, a, b);
                }
            }
            for (j, v) in x.into_iter().enumerate() {
                let at = j.reverse_bits() >> (usize::BITS - rounds);
                _mm_storeu_si128(dst.add(T * i + 16 * at).cast(), v);
            }
        }
    }
    unshuffle_rest::<T>(planes, out, n, whole);
}

/// The low (or high) halves of `a` and `b` interleaved in units of
/// 2^`width_log2` bytes: one round of [`unshuffle_sse2`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn interleave(
    width_log2: u32,
    high: bool,
    a: std::arch::x86_64::__m128i,
    b: std::arch::x86_64::__m128i,
) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::{
        _mm_unpackhi_epi8, _mm_unpackhi_epi16, _mm_unpackhi_epi32, _mm_unpackhi_epi64,
        _mm_unpacklo_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };
    // SAFETY: SSE2 is part of x86-64; these only read their arguments.
    unsafe {
        match (width_log2, high) {
            (0, false) => _mm_unpacklo_epi8(a, b),
            (0, true) => _mm_unpackhi_epi8(a, b),
            (1, false) => _mm_unpacklo_epi16(a, b),
            (1, true) => _mm_unpackhi_epi16(a, b),
            (2, false) => _mm_unpacklo_epi32(a, b),
            (2, true) => _mm_unpackhi_epi32(a, b),
            (_, false) => _mm_unpacklo_epi64(a, b),
            (_, true) => _mm_unpackhi_epi64(a, b),
        }
    }
}

/// [`unshuffle`] for an element size of 2, 4, 8 or 16: [`unshuffle_sse2`] on
/// x86-64, [`unshuffle_fixed`] elsewhere.
fn unshuffle_simd<const T: usize>(planes: &[u8], out: &mut [u8], n: usize) {
    #[cfg(target_arch = "x86_64")]
    unshuffle_sse2::<T>(planes, out, n);
    #[cfg(not(target_arch = "x86_64"))]
    unshuffle_fixed::<T>(planes, out, n);
}

/// Elements `from..n` one byte at a time.
fn unshuffle_rest<const T: usize>(planes: &[u8], out: &mut [u8], n: usize, from: usize) {
    for i in from..n {
        for k in 0..T {
            if let (Some(o), Some(&b)) = (out.get_mut(i * T + k), planes.get(k * n + i)) {
                *o = b;
            }
        }
    }
}

/// [`unshuffle`] for an element size known at compile time, 16 elements at
/// a time, without SIMD intrinsics.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn unshuffle_fixed<const T: usize>(planes: &[u8], out: &mut [u8], n: usize) {
    const TILE: usize = 16;
    let whole = n / TILE * TILE;
    let mut i = 0;
    let mut tile = [[0u8; T]; TILE];
    while i < whole {
        for (k, row) in (0..T).map(|k| (k, planes.get(k * n + i..k * n + i + TILE))) {
            let Some(row) = row else { return };
            for (e, &b) in tile.iter_mut().zip(row) {
                if let Some(x) = e.get_mut(k) {
                    *x = b;
                }
            }
        }
        if let Some(dst) = out.get_mut(i * T..(i + TILE) * T) {
            for (d, e) in dst.chunks_exact_mut(T).zip(&tile) {
                d.copy_from_slice(e);
            }
        }
        i += TILE;
    }
    unshuffle_rest::<T>(planes, out, n, whole);
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

    /// Both decoders on `chunk`: the same bytes, or both an error with the
    /// same message; returns whether the zlib path decoded it itself. The one
    /// difference allowed: a damaged zlib stream that libdeflate still
    /// decodes to exactly its size with a matching adler-32 (libdeflate
    /// accepts some Huffman tables zlib refuses), and then the bytes must be
    /// `original`'s.
    fn agree(chunk: &[u8], original: &[u8]) -> bool {
        let nbytes = original.len();
        let mut ours = vec![0u8; nbytes];
        let mut theirs = vec![0u8; nbytes];
        let a = decompress_into(chunk, &mut ours, 1).map_err(|e| e.to_string());
        let b = decompress_into_c_blosc(chunk, &mut theirs, 1).map_err(|e| e.to_string());
        match (&a, &b) {
            (Ok(_), Err(_)) => assert!(ours == original, "libdeflate's bytes are not the data"),
            _ => assert_eq!(a, b, "results differ"),
        }
        if b.is_ok() {
            assert!(ours == theirs, "decoded bytes differ");
        }
        let Ok(h) = validate(chunk) else { return false };
        let mut direct = vec![0u8; nbytes];
        h.nbytes as usize == nbytes && h.nbytes > 0 && zlib_blocks(chunk, &h, &mut direct)
    }

    fn sample(kind: usize, len: usize, rng: &mut crate::rng::SplitMix64) -> Vec<u8> {
        match kind {
            // A slow ramp of little-endian floats: shuffling pays.
            0 => (0..len.div_ceil(8) as u32)
                .flat_map(|i| (f64::from(i) * 0.25).to_le_bytes())
                .take(len)
                .collect(),
            // Noise: splits stored as they are.
            _ => (0..len).map(|_| rng.next_u64() as u8).collect(),
        }
    }

    #[test]
    fn zlib_path_gives_c_bloscs_bytes() {
        let mut rng = crate::rng::SplitMix64::new(7);
        let mut taken = 0;
        for ts in [1usize, 2, 3, 4, 5, 8, 12, 16, 17, 255] {
            for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
                for (len, blocksize) in [
                    (1, 0),
                    (999, 0),
                    (70_000, 0),
                    (70_001, 4096),
                    (33_000, 1000),
                ] {
                    for kind in 0..2 {
                        let d = sample(kind, len, &mut rng);
                        let p = BloscParams::new(BloscCompressor::Zlib, 5, shuffle, ts)
                            .with_blocksize(blocksize);
                        let chunk = compress(&d, &p).unwrap();
                        let mut out = vec![0u8; len];
                        decompress_into(&chunk, &mut out, 1).unwrap();
                        assert!(out == d, "ts {ts} {shuffle:?} len {len}");
                        let h = validate(&chunk).unwrap();
                        let direct = agree(&chunk, &d);
                        let filtered = h.flags & (FLAG_SHUFFLE | FLAG_BITSHUFFLE);
                        let expected = !h.is_memcpyed() && filtered != FLAG_BITSHUFFLE;
                        assert_eq!(
                            direct, expected,
                            "ts {ts} {shuffle:?} len {len} flags {:#x}",
                            h.flags
                        );
                        taken += usize::from(direct);
                    }
                }
            }
        }
        assert!(taken > 50, "the zlib path decoded only {taken} chunks");
    }

    /// A zlib chunk built by hand with every block split in `ts` parts (what
    /// c-blosc before 1.13 wrote); `raw` stores the parts as they are.
    fn split_chunk(d: &[u8], ts: usize, blocksize: usize, shuffle: bool, raw: bool) -> Vec<u8> {
        let mut z = libdeflater::Compressor::new(libdeflater::CompressionLvl::default());
        let nblocks = d.len().div_ceil(blocksize);
        let mut body = Vec::new();
        let mut starts = Vec::new();
        let table_end = HEADER_SIZE + 4 * nblocks;
        for block in d.chunks(blocksize) {
            starts.push((table_end + body.len()) as i32);
            let mut filtered = block.to_vec();
            let n = block.len() / ts;
            if shuffle {
                for i in 0..n {
                    for k in 0..ts {
                        filtered[k * n + i] = block[i * ts + k];
                    }
                }
            }
            let nsplits = if block.len() == blocksize && blocksize / ts >= MIN_SPLIT_ELEMENTS {
                ts
            } else {
                1
            };
            for part in filtered.chunks(block.len() / nsplits) {
                let stored = if raw {
                    part.to_vec()
                } else {
                    let mut out = vec![0u8; z.zlib_compress_bound(part.len())];
                    let k = z.zlib_compress(part, &mut out).unwrap();
                    out.truncate(k);
                    out
                };
                body.extend_from_slice(&(stored.len() as i32).to_le_bytes());
                body.extend_from_slice(&stored);
            }
        }
        let flags = (3 << 5) | if shuffle { FLAG_SHUFFLE } else { 0 };
        let mut chunk = vec![2, 1, flags, ts as u8];
        chunk.extend_from_slice(&(d.len() as u32).to_le_bytes());
        chunk.extend_from_slice(&(blocksize as u32).to_le_bytes());
        chunk.extend_from_slice(&((table_end + body.len()) as u32).to_le_bytes());
        for s in starts {
            chunk.extend_from_slice(&s.to_le_bytes());
        }
        chunk.extend_from_slice(&body);
        chunk
    }

    #[test]
    fn zlib_path_reads_split_blocks_and_leaves_doubt_to_c_blosc() {
        let mut rng = crate::rng::SplitMix64::new(11);
        for ts in [2usize, 4, 8, 16] {
            for shuffle in [false, true] {
                for raw in [false, true] {
                    let d = sample(0, 3 * 4096 + 100, &mut rng);
                    let chunk = split_chunk(&d, ts, 4096, shuffle, raw);
                    let mut out = vec![0u8; d.len()];
                    decompress_into_c_blosc(&chunk, &mut out, 1).unwrap();
                    assert!(out == d, "c-blosc reads the hand-made chunk (ts {ts})");
                    assert!(agree(&chunk, &d), "ts {ts} shuffle {shuffle} raw {raw}");
                }
            }
        }
        // A stream declaring a 16 KiB window: left to c-blosc (and zlib).
        let d = sample(0, 8192, &mut rng);
        let mut chunk = split_chunk(&d, 8, 8192, true, false);
        let first = HEADER_SIZE + 4 + 4;
        assert_eq!(chunk[first], 0x78);
        chunk[first] = 0x68;
        chunk[first + 1] = (31 - (u16::from(0x68u8) << 8 | u16::from(chunk[first + 1] & 0xe0)) % 31)
            as u8
            | (chunk[first + 1] & 0xe0);
        assert!(!agree(&chunk, &d));
    }

    #[test]
    fn damaged_zlib_chunks_get_c_bloscs_answer() {
        let mut rng = crate::rng::SplitMix64::new(5);
        let d = sample(0, 20_000, &mut rng);
        let chunks = [
            compress(
                &d,
                &BloscParams::new(BloscCompressor::Zlib, 5, Shuffle::Byte, 8).with_blocksize(4096),
            )
            .unwrap(),
            compress(
                &d,
                &BloscParams::new(BloscCompressor::Zlib, 9, Shuffle::None, 4),
            )
            .unwrap(),
            split_chunk(&d, 8, 4096, true, false),
        ];
        for good in &chunks {
            assert!(agree(good, &d));
            for _ in 0..400 {
                let mut c = good.clone();
                for _ in 0..=rng.below(3) {
                    let at = HEADER_SIZE + rng.below((c.len() - HEADER_SIZE) as u64) as usize;
                    c[at] ^= 1 << rng.below(8);
                }
                agree(&c, &d);
            }
        }
    }

    #[test]
    fn unshuffle_inverts_the_byte_shuffle_for_every_size() {
        let mut rng = crate::rng::SplitMix64::new(3);
        for ts in 1..=20usize {
            for len in (0..300).chain([4096, 4099, 65_536 + 13]) {
                let d: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let n = len / ts;
                let mut shuffled = d.clone();
                for i in 0..n {
                    for k in 0..ts {
                        shuffled[k * n + i] = d[i * ts + k];
                    }
                }
                let mut out = vec![0u8; len];
                assert!(unshuffle(ts, &shuffled, &mut out));
                assert!(out == d, "ts {ts} len {len}");
                // The portable path, which other targets take for these sizes.
                let body = n * ts;
                let mut out = vec![0u8; body];
                match ts {
                    2 => unshuffle_fixed::<2>(&shuffled[..body], &mut out, n),
                    4 => unshuffle_fixed::<4>(&shuffled[..body], &mut out, n),
                    8 => unshuffle_fixed::<8>(&shuffled[..body], &mut out, n),
                    16 => unshuffle_fixed::<16>(&shuffled[..body], &mut out, n),
                    _ => continue,
                }
                assert!(out == d[..body], "portable: ts {ts} len {len}");
            }
        }
    }
}
