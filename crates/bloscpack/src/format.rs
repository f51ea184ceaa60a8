//! The Bloscpack v3 on-disk records, as types (`bloscpack-blz.md` §1).

use dataformats_core::ChecksumKind;

/// `blpk`: the magic of Bloscpack files and of BLZ/bcolz chunk files.
pub const MAGIC: &[u8; 4] = b"blpk";
/// The only Bloscpack format version with a stable layout.
pub const FORMAT_VERSION: u8 = 3;
/// Size of the file header.
pub const HEADER_SIZE: u64 = 32;
/// Size of the metadata section's own header.
pub const METADATA_HEADER_SIZE: u64 = 32;
/// Options bit 0: an offsets table follows the header (and metadata).
pub const OPTION_OFFSETS: u8 = 0x01;
/// Options bit 1: a metadata section follows the header.
pub const OPTION_METADATA: u8 = 0x02;
/// The metadata serializer id: `JSON` padded with NULs.
pub const META_MAGIC: &[u8; 8] = b"JSON\0\0\0\0";
/// Largest `chunk_size` (c-blosc's BLOSC_MAX_BUFFERSIZE).
pub const MAX_CHUNK_SIZE: i32 = i32::MAX - 16;

/// Checksum kinds by their id in the header (0..=8).
pub const CHECKSUMS: [ChecksumKind; 9] = [
    ChecksumKind::None,
    ChecksumKind::Adler32,
    ChecksumKind::Crc32,
    ChecksumKind::Md5,
    ChecksumKind::Sha1,
    ChecksumKind::Sha224,
    ChecksumKind::Sha256,
    ChecksumKind::Sha384,
    ChecksumKind::Sha512,
];

/// The checksum with header id `id`.
pub fn checksum_from_id(id: u8) -> Option<ChecksumKind> {
    CHECKSUMS.get(usize::from(id)).copied()
}

/// The header id of `kind` (`None` for CRC-16, which Bloscpack does not use).
pub fn checksum_id(kind: ChecksumKind) -> Option<u8> {
    CHECKSUMS
        .iter()
        .position(|&k| k == kind)
        .and_then(|i| u8::try_from(i).ok())
}

/// The name Bloscpack (and the sidecars) use for a checksum: `"None"`,
/// `"adler32"`, `"crc32"`, `"md5"`, `"sha1"`, ... .
pub fn checksum_name(kind: ChecksumKind) -> &'static str {
    match kind {
        ChecksumKind::None => "None",
        k => k.name(),
    }
}

/// The 32-byte file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format version (3).
    pub format_version: u8,
    /// Options byte (bit 0 offsets, bit 1 metadata).
    pub options: u8,
    /// Per-chunk checksum.
    pub checksum: ChecksumKind,
    /// The typesize given to Blosc when packing (informative: each chunk has its own).
    pub typesize: u8,
    /// Uncompressed size of every chunk but the last; −1 = unknown.
    pub chunk_size: i32,
    /// Uncompressed size of the last chunk; −1 = unknown.
    pub last_chunk: i32,
    /// Number of chunks.
    pub nchunks: i64,
    /// Offset slots reserved for appends.
    pub max_app_chunks: i64,
}

impl Header {
    /// True when an offsets table is present.
    pub fn has_offsets(&self) -> bool {
        self.options & OPTION_OFFSETS != 0
    }

    /// True when a metadata section is present.
    pub fn has_metadata(&self) -> bool {
        self.options & OPTION_METADATA != 0
    }

    /// Total uncompressed payload, when chunk_size and last_chunk are known.
    pub fn payload_size(&self) -> Option<u64> {
        let cs = u64::try_from(self.chunk_size).ok()?;
        let last = u64::try_from(self.last_chunk).ok()?;
        let n = u64::try_from(self.nchunks).ok()?;
        cs.checked_mul(n.checked_sub(1)?)?.checked_add(last)
    }

    /// The declared uncompressed size of chunk `i`, or `None` when unknown (−1).
    pub fn declared_chunk_size(&self, i: u64) -> Option<u64> {
        let last = u64::try_from(self.nchunks).ok()?.checked_sub(1)?;
        let v = if i == last {
            self.last_chunk
        } else {
            self.chunk_size
        };
        u64::try_from(v).ok()
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        let mut w = Put(&mut b, 0);
        w.bytes(MAGIC);
        w.bytes(&[
            self.format_version,
            self.options,
            checksum_id(self.checksum).unwrap_or(0),
            self.typesize,
        ]);
        w.bytes(&self.chunk_size.to_le_bytes());
        w.bytes(&self.last_chunk.to_le_bytes());
        w.bytes(&self.nchunks.to_le_bytes());
        w.bytes(&self.max_app_chunks.to_le_bytes());
        b
    }
}

/// Compression of the stored metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaCodec {
    /// Stored as is (id 0).
    None,
    /// A zlib stream (id 1).
    Zlib,
}

impl MetaCodec {
    /// The name the sidecars use (`"None"`, `"zlib"`).
    pub fn name(self) -> &'static str {
        match self {
            MetaCodec::None => "None",
            MetaCodec::Zlib => "zlib",
        }
    }
}

/// The 32-byte header of the metadata section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataHeader {
    /// Serializer id (`JSON\0\0\0\0`).
    pub magic_format: [u8; 8],
    /// Unused option bits (0).
    pub meta_options: u8,
    /// Checksum over the stored bytes.
    pub meta_checksum: ChecksumKind,
    /// Compression of the stored bytes.
    pub meta_codec: MetaCodec,
    /// Compression level (informative).
    pub meta_level: u8,
    /// Length of the decoded metadata.
    pub meta_size: u32,
    /// Space reserved for the stored metadata.
    pub max_meta_size: u32,
    /// Length actually stored.
    pub meta_comp_size: u32,
    /// Reserved, NUL-filled.
    pub user_codec: [u8; 8],
}

impl MetadataHeader {
    /// Length of the whole section: header, reserved space, digest.
    pub fn section_len(&self) -> u64 {
        METADATA_HEADER_SIZE
            + u64::from(self.max_meta_size)
            + self.meta_checksum.digest_size() as u64
    }

    /// Encodes the header.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        let mut w = Put(&mut b, 0);
        w.bytes(&self.magic_format);
        let codec = match self.meta_codec {
            MetaCodec::None => 0,
            MetaCodec::Zlib => 1,
        };
        w.bytes(&[
            self.meta_options,
            checksum_id(self.meta_checksum).unwrap_or(0),
            codec,
            self.meta_level,
        ]);
        w.bytes(&self.meta_size.to_le_bytes());
        w.bytes(&self.max_meta_size.to_le_bytes());
        w.bytes(&self.meta_comp_size.to_le_bytes());
        w.bytes(&self.user_codec);
        b
    }
}

/// Writes bytes into a fixed buffer at a moving position (silently stops at the end).
struct Put<'a>(&'a mut [u8], usize);

impl Put<'_> {
    fn bytes(&mut self, src: &[u8]) {
        for (d, s) in self.0.iter_mut().skip(self.1).zip(src) {
            *d = *s;
        }
        self.1 += src.len();
    }
}
