//! IDV's fixed on-disk structures (`idv.md` §3, §8) as stored, before any
//! check: the header's fields and a block lookup entry. [`crate::parse`]
//! reads them; the reader checks them in the order `idv.md` gives.

/// The header's fields (the first 52 of its 256 bytes), as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHeader {
    /// The signature (`CML\0DVB\0`).
    pub signature: u64,
    /// Writer version.
    pub version: u64,
    /// Oldest reader version that can read the file.
    pub compatible_version: u64,
    /// Column table of contents offset.
    pub toc_offset: i64,
    /// Tail signature offset.
    pub tail_offset: i64,
    /// Rows.
    pub row_count: i64,
    /// Columns in the table of contents.
    pub column_count: i32,
}

/// One 16-byte block lookup entry, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBlockEntry {
    /// Offset of the stored block.
    pub offset: i64,
    /// Stored length.
    pub compressed_len: i32,
    /// Length after decompression.
    pub decompressed_len: i32,
}

/// Bytes of the header that hold fields.
pub const HEADER_FIELDS_SIZE: u64 = 52;
/// Size of one block lookup entry.
pub const BLOCK_ENTRY_SIZE: u64 = 16;
