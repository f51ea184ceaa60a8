//! TBL v2 on-disk records (`tbl2.md` §1), as TurboLoader writes them.

use dataformats_core::ChecksumKind;

/// `TBL\x02`.
pub const MAGIC: &[u8; 4] = b"TBL\x02";
/// The only version.
pub const VERSION: u32 = 2;
/// Header size.
pub const HEADER_SIZE: u64 = 64;
/// Index entry size.
pub const ENTRY_SIZE: u64 = 24;
/// Metadata block header size.
pub const BLOCK_HEADER_SIZE: u64 = 16;

/// Header flag bit 0: the writer had compression on.
pub const FLAG_COMPRESSED: u32 = 1;
/// Header flag bit 1: at least one metadata block.
pub const FLAG_HAS_METADATA: u32 = 2;
/// Header flag bit 2: samples carry CRC-16s (always set by TurboLoader).
pub const FLAG_HAS_CHECKSUMS: u32 = 4;

/// Index entry flag bit 0: the payload is an LZ4 block.
pub const SAMPLE_COMPRESSED: u8 = 1;
/// Index entry flag bit 1: a metadata block names this sample.
pub const SAMPLE_HAS_METADATA: u8 = 2;

/// What a sample holds (`SampleFormat`, a u8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SampleFormat(pub u8);

impl SampleFormat {
    /// 0: unknown.
    pub const UNKNOWN: Self = SampleFormat(0);
    /// 1: JPEG.
    pub const JPEG: Self = SampleFormat(1);
    /// 2: PNG.
    pub const PNG: Self = SampleFormat(2);
    /// 3: WebP.
    pub const WEBP: Self = SampleFormat(3);
    /// 4: BMP.
    pub const BMP: Self = SampleFormat(4);
    /// 5: TIFF.
    pub const TIFF: Self = SampleFormat(5);
    /// 6: MP4 video.
    pub const MP4: Self = SampleFormat(6);
    /// 7: AVI video.
    pub const AVI: Self = SampleFormat(7);
    /// 8: decoded RGB uint8, height × width × 3.
    pub const RAW_U8: Self = SampleFormat(8);

    /// The lowercase name (`jpeg`, `png`, ... `raw_u8`), or the code in decimal.
    pub fn name(self) -> String {
        match self.0 {
            0 => "unknown".into(),
            1 => "jpeg".into(),
            2 => "png".into(),
            3 => "webp".into(),
            4 => "bmp".into(),
            5 => "tiff".into(),
            6 => "mp4".into(),
            7 => "avi".into(),
            8 => "raw_u8".into(),
            n => n.to_string(),
        }
    }

    /// The format TurboLoader's converter gives a file extension
    /// (ASCII-case-insensitive): jpg/jpeg, png, webp, bmp, tif/tiff, mp4, avi.
    pub fn from_extension(ext: &str) -> Option<Self> {
        match ext.to_ascii_lowercase().as_str() {
            "jpg" | "jpeg" => Some(Self::JPEG),
            "png" => Some(Self::PNG),
            "webp" => Some(Self::WEBP),
            "bmp" => Some(Self::BMP),
            "tif" | "tiff" => Some(Self::TIFF),
            "mp4" => Some(Self::MP4),
            "avi" => Some(Self::AVI),
            _ => None,
        }
    }

    /// The file extension for this format (used when writing tars).
    pub fn extension(self) -> &'static str {
        match self.0 {
            1 => "jpg",
            2 => "png",
            3 => "webp",
            4 => "bmp",
            5 => "tiff",
            6 => "mp4",
            7 => "avi",
            8 => "raw",
            _ => "bin",
        }
    }
}

/// The type of a metadata block (`MetadataType`, a u16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MetadataType(pub u16);

impl MetadataType {
    /// 0: none.
    pub const NONE: Self = MetadataType(0);
    /// 1: JSON.
    pub const JSON: Self = MetadataType(1);
    /// 2: protobuf.
    pub const PROTOBUF: Self = MetadataType(2);
    /// 3: MessagePack.
    pub const MSGPACK: Self = MetadataType(3);
    /// 255: custom.
    pub const CUSTOM: Self = MetadataType(255);

    /// The lowercase name, or the code in decimal.
    pub fn name(self) -> String {
        match self.0 {
            0 => "none".into(),
            1 => "json".into(),
            2 => "protobuf".into(),
            3 => "msgpack".into(),
            255 => "custom".into(),
            n => n.to_string(),
        }
    }
}

/// The 64-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Version (2).
    pub version: u32,
    /// Number of samples.
    pub num_samples: u64,
    /// `64 + 24 × N`, truncated to 32 bits (not used by readers).
    pub header_size: u32,
    /// Padding (0).
    pub padding1: u32,
    /// Where the metadata section starts (0 when there is none).
    pub metadata_offset: u64,
    /// Total bytes of all metadata blocks.
    pub metadata_size: u64,
    /// Flags (`FLAG_*`).
    pub flags: u32,
    /// CRC-32 of the header with this field taken as zero.
    pub checksum: u32,
    /// Reserved (zeros).
    pub reserved: [u8; 16],
}

impl Header {
    /// Encodes the header with its current `checksum` field.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        let parts: [&[u8]; 10] = [
            MAGIC,
            &self.version.to_le_bytes(),
            &self.num_samples.to_le_bytes(),
            &self.header_size.to_le_bytes(),
            &self.padding1.to_le_bytes(),
            &self.metadata_offset.to_le_bytes(),
            &self.metadata_size.to_le_bytes(),
            &self.flags.to_le_bytes(),
            &self.checksum.to_le_bytes(),
            &self.reserved,
        ];
        let mut at = 0;
        for p in parts {
            for (d, s) in b.iter_mut().skip(at).zip(p) {
                *d = *s;
            }
            at += p.len();
        }
        b
    }

    /// The CRC-32 TurboLoader stores: over the 64 bytes with bytes 44..48 zero.
    pub fn compute_checksum(&self) -> u32 {
        let mut h = *self;
        h.checksum = 0;
        ChecksumKind::Crc32
            .digest(&h.to_bytes())
            .value()
            .unwrap_or(0) as u32
    }

    /// True when samples carry CRC-16s that a verifying reader checks.
    pub fn has_checksums(&self) -> bool {
        self.flags & FLAG_HAS_CHECKSUMS != 0
    }

    /// Where the data section starts (`64 + 24 N`), if that fits in a u64.
    pub fn data_start(&self) -> Option<u64> {
        self.num_samples
            .checked_mul(ENTRY_SIZE)?
            .checked_add(HEADER_SIZE)
    }
}

/// One 24-byte index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Absolute offset of the stored payload.
    pub offset: u64,
    /// Stored length.
    pub size: u32,
    /// Decoded length.
    pub uncompressed_size: u32,
    /// Cached width (0 = unknown).
    pub width: u16,
    /// Cached height (0 = unknown).
    pub height: u16,
    /// Sample format.
    pub format: SampleFormat,
    /// Flags (`SAMPLE_*`).
    pub flags: u8,
    /// CRC-16/MODBUS of the decoded bytes.
    pub checksum: u16,
}

impl IndexEntry {
    /// True when the payload is an LZ4 block.
    pub fn is_compressed(&self) -> bool {
        self.flags & SAMPLE_COMPRESSED != 0
    }

    /// True when a metadata block names this sample.
    pub fn has_metadata(&self) -> bool {
        self.flags & SAMPLE_HAS_METADATA != 0
    }

    /// Decodes 24 bytes (any 24 bytes are an entry; the inverse of
    /// [`IndexEntry::to_bytes`]).
    pub fn from_bytes(b: &[u8; 24]) -> Self {
        let (offset, b) = split::<8>(b);
        let (size, b) = split::<4>(b);
        let (uncompressed_size, b) = split::<4>(b);
        let (width, b) = split::<2>(b);
        let (height, b) = split::<2>(b);
        let ([format, flags], b) = split::<2>(b);
        let (checksum, _) = split::<2>(b);
        IndexEntry {
            offset: u64::from_le_bytes(offset),
            size: u32::from_le_bytes(size),
            uncompressed_size: u32::from_le_bytes(uncompressed_size),
            width: u16::from_le_bytes(width),
            height: u16::from_le_bytes(height),
            format: SampleFormat(format),
            flags,
            checksum: u16::from_le_bytes(checksum),
        }
    }

    /// Encodes 24 bytes.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        let parts: [&[u8]; 8] = [
            &self.offset.to_le_bytes(),
            &self.size.to_le_bytes(),
            &self.uncompressed_size.to_le_bytes(),
            &self.width.to_le_bytes(),
            &self.height.to_le_bytes(),
            &[self.format.0],
            &[self.flags],
            &self.checksum.to_le_bytes(),
        ];
        let mut at = 0;
        for p in parts {
            for (d, s) in b.iter_mut().skip(at).zip(p) {
                *d = *s;
            }
            at += p.len();
        }
        b
    }
}

/// The first `N` bytes of `b` and the rest (zeros past its end, which the
/// fixed layout above never reaches).
fn split<const N: usize>(b: &[u8]) -> ([u8; N], &[u8]) {
    match b.split_first_chunk::<N>() {
        Some((head, rest)) => (*head, rest),
        None => ([0; N], &[]),
    }
}

/// One metadata block as found in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataBlock {
    /// The sample it names.
    pub sample_index: u64,
    /// Its type.
    pub kind: MetadataType,
    /// Where its payload starts in the file.
    pub offset: u64,
    /// Payload length.
    pub size: u32,
}
