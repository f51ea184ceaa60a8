//! FFCV's on-disk structures (`ffcv-beton.md` §1), as FFCV's numpy dtypes
//! lay them out: plain values, nothing checked. [`crate::parse`] reads them.

/// Size of the file header.
pub const HEADER_SIZE: u64 = 24;
/// Size of one field descriptor.
pub const DESC_SIZE: u64 = 1041;
/// Size of one allocation table entry.
pub const ALLOC_ENTRY_SIZE: u64 = 24;
/// The only file version FFCV reads.
pub const VERSION: u16 = 2;
/// The smallest page size FFCV allows (2 MiB).
pub const MIN_PAGE_SIZE: u32 = 1 << 21;
/// Where an array field's dtype text starts in its arguments.
pub const DESCR_AT: u64 = 264;
/// The most dtype text the 1024 argument bytes hold.
pub const MAX_DESCR_LEN: u64 = 1024 - DESCR_AT;

/// The 24-byte header (`HeaderType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// File version (2).
    pub version: u16,
    /// Number of field descriptors.
    pub num_fields: u16,
    /// Page size of the data region.
    pub page_size: u32,
    /// Number of samples (metadata rows).
    pub num_samples: u64,
    /// Absolute offset of the allocation table (0: the writer did not finish).
    pub alloc_table_ptr: u64,
}

/// A 1041-byte field descriptor (`FieldDescType`), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDescriptor<'a> {
    /// The type id (§2).
    pub type_id: u8,
    /// The 16 name bytes (ASCII, NUL-padded; a 16-byte name has no NUL).
    pub name: &'a [u8],
    /// The 1024 argument bytes.
    pub arguments: &'a [u8],
}

/// An NDArray/TorchTensor field's arguments (§1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayArgs<'a> {
    /// The 32 dimension slots (unused ones zero).
    pub dims: [u64; 32],
    /// The length of the dtype text.
    pub descr_len: u64,
    /// The 760 bytes the dtype text starts in.
    pub descr_area: &'a [u8],
}

/// An `RGBImageField` column (13 bytes, packed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageColumn {
    /// 0 JPEG, 1 raw.
    pub mode: u8,
    /// Width in pixels.
    pub width: u16,
    /// Height in pixels.
    pub height: u16,
    /// Absolute offset of the value.
    pub data_ptr: u64,
}

/// One field's column in a metadata row (§1.3), in its type's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `IntField`/`FloatField`: the 8 value bytes as a `u64`.
    Scalar(u64),
    /// `NDArrayField`/`TorchTensorField`: the data pointer alone (the size
    /// comes from the allocation table).
    Pointer(u64),
    /// `BytesField`/`JSONField`: pointer and size.
    Sized {
        /// Absolute offset of the value.
        ptr: u64,
        /// Its length.
        size: u64,
    },
    /// `RGBImageField`.
    Image(ImageColumn),
}

/// One allocation table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alloc {
    /// The sample the allocation belongs to.
    pub sample: u64,
    /// Absolute file offset of the bytes.
    pub ptr: u64,
    /// Length in bytes.
    pub size: u64,
}
