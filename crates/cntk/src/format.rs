//! CBF's on-disk structures (`cntk.md` §2): the preamble, the header's
//! stream descriptors and chunk table, as plain values. [`crate::parse`]
//! reads them; the reader checks them in the order of `cntk.md` §4.2.

/// The magic, `0x636E746B5F62696E` stored little-endian.
pub const MAGIC: &[u8; 8] = b"nib_ktnc";
/// The only format version.
pub const VERSION: u32 = 1;

/// Dense or sparse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// Every sample is `dim` values.
    Dense,
    /// Every sample is a list of (index, value) entries.
    Sparse,
}

/// Element type of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl ElemType {
    /// Size in bytes.
    pub const fn size(self) -> u64 {
        match self {
            ElemType::F32 => 4,
            ElemType::F64 => 8,
        }
    }

    /// `"f32"` or `"f64"`.
    pub const fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }
}

/// A stream descriptor from the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamDesc {
    /// Stream name.
    pub name: String,
    /// Dense or sparse.
    pub kind: StreamKind,
    /// Element type.
    pub elem: ElemType,
    /// Sample dimension.
    pub dim: u32,
}

/// A chunk-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Absolute offset of the chunk.
    pub offset: u64,
    /// Sequences in the chunk.
    pub num_sequences: u32,
    /// Samples in the chunk (sum of its sequence lengths).
    pub num_samples: u32,
    /// Where the chunk's bytes end (the next chunk's offset, or the header).
    pub end: u64,
}

/// A chunk-table entry as stored (16 bytes), before its offset is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawChunkEntry {
    /// Absolute offset of the chunk (an `i64`: CNTK's `int64_t`).
    pub offset: i64,
    /// Sequences in the chunk.
    pub num_sequences: u32,
    /// Samples in the chunk.
    pub num_samples: u32,
}

/// Size of the preamble (magic and version).
pub const PREAMBLE_SIZE: u64 = 12;
/// Size of the footer (the header offset).
pub const FOOTER_SIZE: u64 = 8;
/// Size of one chunk-table entry.
pub const CHUNK_ENTRY_SIZE: u64 = 16;
