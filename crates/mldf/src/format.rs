//! The fixed structures: magic, header, field descriptors and types
//! (`mldf.md` §2–§5).

use dataformats_core::parse::{self, le_u8, le_u32};

use crate::error::{Error, ErrorKind, Result};

/// The 9-byte magic.
pub const MAGIC: &[u8; 9] = b"\x89MLDF\r\n\x1a\n";
/// End of the header (magic + 64 bytes) and lower bound of every pointer.
pub const HEADER_END: u64 = 73;
/// Size of one field descriptor.
pub const DESC_SIZE: u64 = 208;
/// Where writers put the descriptors.
pub const FIELD_DESC_PTR: u64 = 80;

/// Flag bit: little-endian (must be set).
pub const FLAG_LITTLE_ENDIAN: u32 = 0x1;
/// Flag bit: every allocation is one zstd frame.
pub const FLAG_COMPRESSED: u32 = 0x2;
/// Flag bit: the header holds the data region's CRC-32.
pub const FLAG_CHECKSUMMED: u32 = 0x4;
/// Flag bit: encrypted (undefined in 1.x, rejected).
pub const FLAG_ENCRYPTED: u32 = 0x8;
/// Descriptor flag: the field may hold missing values.
pub const FIELD_NULLABLE: u16 = 0x1;

/// The header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Major version (1).
    pub version_major: u16,
    /// Minor version (0 for this spec; newer minors are read with a warning).
    pub version_minor: u16,
    /// Flag bits.
    pub flags: u32,
    /// Samples (metadata rows).
    pub num_samples: u64,
    /// Field descriptors.
    pub num_fields: u16,
    /// Page size of the data region.
    pub page_size: u32,
    /// Offset of the first descriptor.
    pub field_desc_ptr: u64,
    /// Offset of the metadata table.
    pub metadata_ptr: u64,
    /// Offset of the data region.
    pub data_ptr: u64,
    /// Offset of the allocation table (which runs to the end of the file).
    pub alloc_table_ptr: u64,
    /// CRC-32 of the data region (meaningful with [`FLAG_CHECKSUMMED`]).
    pub data_crc32: u32,
}

impl Header {
    /// Parses the 64 header bytes at offset 9 (`bytes` = the file's first 73).
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        let body = bytes.get(9..).unwrap_or_default();
        parse::run(body, 9, crate::parse::header)
            .map_err(|e| Error::new(ErrorKind::Truncated, e.to_string()).at(9))
    }

    /// The 64 header bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        let mut put = |at: usize, v: &[u8]| {
            if let Some(d) = b.get_mut(at..at + v.len()) {
                d.copy_from_slice(v);
            }
        };
        put(0, &self.version_major.to_le_bytes());
        put(2, &self.version_minor.to_le_bytes());
        put(4, &self.flags.to_le_bytes());
        put(8, &self.num_samples.to_le_bytes());
        put(16, &self.num_fields.to_le_bytes());
        put(20, &self.page_size.to_le_bytes());
        put(24, &self.field_desc_ptr.to_le_bytes());
        put(32, &self.metadata_ptr.to_le_bytes());
        put(40, &self.data_ptr.to_le_bytes());
        put(48, &self.alloc_table_ptr.to_le_bytes());
        put(56, &self.data_crc32.to_le_bytes());
        b
    }
}

/// Size of one allocation-table entry.
pub const ALLOC_ENTRY_SIZE: u64 = 16;
/// Size of the NULLABLE trailer after a record.
pub const TRAILER_SIZE: u64 = 8;

/// A field descriptor as stored (§4): the bytes, nothing checked yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDescriptor<'a> {
    /// The 64 name bytes (UTF-8, NUL-terminated and NUL-padded).
    pub name: &'a [u8],
    /// The type id (§5).
    pub type_id: u16,
    /// Descriptor flags ([`FIELD_NULLABLE`]).
    pub flags: u16,
    /// Bytes this field takes in a metadata row.
    pub metadata_size: u32,
    /// The 128 type-specific argument bytes.
    pub arguments: &'a [u8],
}

/// NDARRAY's arguments (§5.4): element type code, rank, and the 15 dimension
/// slots (only the first `ndim` mean anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdArrayArgs {
    /// The dtype code.
    pub dtype: u8,
    /// The number of dimensions.
    pub ndim: u8,
    /// The dimension slots.
    pub dims: [u64; 15],
}

/// BYTES, NDARRAY and JSON records (`BytesMeta`, 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BytesMeta {
    /// Offset of the value's allocation (0 when empty).
    pub data_ptr: u64,
    /// The value's length (decompressed).
    pub data_size: u32,
}

/// Image records (`ImageMeta`, 24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImageMeta {
    /// Offset of the value's allocation (0 when empty).
    pub data_ptr: u64,
    /// The value's length (decompressed).
    pub data_size: u32,
    /// Height in pixels.
    pub height: u16,
    /// Width in pixels.
    pub width: u16,
    /// Channels.
    pub channels: u8,
    /// 0 raw, 1 JPEG, 2 PNG.
    pub mode: u8,
}

/// Audio records (`AudioMeta`, 24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AudioMeta {
    /// Offset of the value's allocation (0 when empty).
    pub data_ptr: u64,
    /// The value's length (decompressed).
    pub data_size: u32,
    /// Frames.
    pub num_samples: u32,
    /// Hz.
    pub sample_rate: u32,
    /// Channels.
    pub num_channels: u16,
    /// Bits per sample.
    pub bit_depth: u8,
    /// 0 PCM, 1 FLAC, 2 AAC, 3 MP3.
    pub codec: u8,
}

/// Text records (`TextMeta`, 16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextMeta {
    /// Offset of the value's allocation (0 when empty).
    pub data_ptr: u64,
    /// The value's length (decompressed).
    pub data_size: u32,
    /// Token count (saturating at 65535; 0 for TEXT_RAW).
    pub num_tokens: u16,
    /// 0 UTF-8, 1 i32 ids, 2 i16 ids.
    pub encoding: u8,
}

/// One metadata record (§6.3), in the layout its field's type gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    /// INT and FLOAT: the value's 8 bytes as a `u64`.
    Scalar(u64),
    /// BYTES, NDARRAY, JSON.
    Bytes(BytesMeta),
    /// IMAGE_*.
    Image(ImageMeta),
    /// AUDIO_*.
    Audio(AudioMeta),
    /// TEXT_*.
    Text(TextMeta),
}

impl Record {
    /// `(data_ptr, data_size)` for the pointer records, `None` for a scalar.
    pub fn data(&self) -> Option<(u64, u32)> {
        match *self {
            Record::Scalar(_) => None,
            Record::Bytes(m) => Some((m.data_ptr, m.data_size)),
            Record::Image(m) => Some((m.data_ptr, m.data_size)),
            Record::Audio(m) => Some((m.data_ptr, m.data_size)),
            Record::Text(m) => Some((m.data_ptr, m.data_size)),
        }
    }
}

/// One allocation-table entry (§7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alloc {
    /// Absolute offset.
    pub ptr: u64,
    /// Stored length.
    pub size: u32,
}

/// NDARRAY element types (codes 1–13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 1 byte, non-zero = true.
    Bool,
    /// `uint8`.
    U8,
    /// `int8`.
    I8,
    /// `uint16`.
    U16,
    /// `int16`.
    I16,
    /// `uint32`.
    U32,
    /// `int32`.
    I32,
    /// `uint64`.
    U64,
    /// `int64`.
    I64,
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// bfloat16 (the upper half of an f32).
    BF16,
}

impl Dtype {
    /// From the code of §5.4.
    pub const fn from_code(c: u8) -> Option<Dtype> {
        Some(match c {
            1 => Dtype::Bool,
            2 => Dtype::U8,
            3 => Dtype::I8,
            4 => Dtype::U16,
            5 => Dtype::I16,
            6 => Dtype::U32,
            7 => Dtype::I32,
            8 => Dtype::U64,
            9 => Dtype::I64,
            10 => Dtype::F16,
            11 => Dtype::F32,
            12 => Dtype::F64,
            13 => Dtype::BF16,
            _ => return None,
        })
    }

    /// The code of §5.4.
    pub const fn code(self) -> u8 {
        match self {
            Dtype::Bool => 1,
            Dtype::U8 => 2,
            Dtype::I8 => 3,
            Dtype::U16 => 4,
            Dtype::I16 => 5,
            Dtype::U32 => 6,
            Dtype::I32 => 7,
            Dtype::U64 => 8,
            Dtype::I64 => 9,
            Dtype::F16 => 10,
            Dtype::F32 => 11,
            Dtype::F64 => 12,
            Dtype::BF16 => 13,
        }
    }

    /// Bytes per element.
    pub const fn size(self) -> u64 {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 | Dtype::F16 | Dtype::BF16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::U64 | Dtype::I64 | Dtype::F64 => 8,
        }
    }

    /// numpy's name.
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::I8 => "int8",
            Dtype::U16 => "uint16",
            Dtype::I16 => "int16",
            Dtype::U32 => "uint32",
            Dtype::I32 => "int32",
            Dtype::U64 => "uint64",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::BF16 => "bfloat16",
        }
    }
}

/// A field's type and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// i64 in the record.
    Int,
    /// f64 bits in the record.
    Float,
    /// Opaque bytes.
    Bytes,
    /// Fixed dtype and shape, C order.
    NdArray {
        /// Element type.
        dtype: Dtype,
        /// Dimensions (at most 15).
        shape: Vec<u64>,
    },
    /// UTF-8 JSON text.
    Json,
    /// HWC uint8 pixels.
    ImageRaw,
    /// A JPEG file.
    ImageJpeg {
        /// Encoder quality 1–100, 0 if unknown.
        quality: u8,
    },
    /// A PNG file.
    ImagePng,
    /// Interleaved PCM.
    AudioWaveform {
        /// `false`: signed integer PCM; `true`: IEEE float.
        float: bool,
    },
    /// FLAC, AAC or MP3.
    AudioCompressed,
    /// UTF-8 text.
    TextRaw,
    /// Token ids.
    TextTokenized {
        /// Vocabulary size, 0 if unknown.
        vocab_size: u32,
    },
    /// A field a 1.0 reader cannot interpret in a newer-minor file (§9.3).
    Opaque {
        /// Its type id.
        type_id: u16,
    },
}

impl FieldType {
    /// The type id.
    pub fn type_id(&self) -> u16 {
        match self {
            FieldType::Int => 1,
            FieldType::Float => 2,
            FieldType::Bytes => 3,
            FieldType::NdArray { .. } => 4,
            FieldType::Json => 5,
            FieldType::ImageRaw => 10,
            FieldType::ImageJpeg { .. } => 11,
            FieldType::ImagePng => 12,
            FieldType::AudioWaveform { .. } => 20,
            FieldType::AudioCompressed => 21,
            FieldType::TextRaw => 40,
            FieldType::TextTokenized { .. } => 41,
            FieldType::Opaque { type_id } => *type_id,
        }
    }

    /// Record size in a metadata row (without the NULLABLE trailer).
    pub fn record_size(&self) -> Option<u32> {
        Some(match self {
            FieldType::Int | FieldType::Float => 8,
            FieldType::Bytes
            | FieldType::NdArray { .. }
            | FieldType::Json
            | FieldType::TextRaw
            | FieldType::TextTokenized { .. } => 16,
            FieldType::ImageRaw
            | FieldType::ImageJpeg { .. }
            | FieldType::ImagePng
            | FieldType::AudioWaveform { .. }
            | FieldType::AudioCompressed => 24,
            FieldType::Opaque { .. } => return None,
        })
    }

    /// The spec's name (for opaque fields, the reserved name or `UNKNOWN_<id>`).
    pub fn name(&self) -> String {
        type_name(self.type_id())
    }

    /// The 128 argument bytes.
    pub fn arguments(&self) -> [u8; 128] {
        let mut a = [0u8; 128];
        match self {
            FieldType::NdArray { dtype, shape } => {
                a[0] = dtype.code();
                a[1] = shape.len() as u8;
                for (k, d) in shape.iter().enumerate().take(15) {
                    if let Some(s) = a.get_mut(8 + 8 * k..16 + 8 * k) {
                        s.copy_from_slice(&d.to_le_bytes());
                    }
                }
            }
            FieldType::ImageJpeg { quality } => a[0] = *quality,
            FieldType::AudioWaveform { float } => a[0] = u8::from(*float),
            FieldType::TextTokenized { vocab_size } => {
                a[..4].copy_from_slice(&vocab_size.to_le_bytes())
            }
            _ => {}
        }
        a
    }
}

/// The name of a type id (§5.1, §5.9).
pub fn type_name(id: u16) -> String {
    match id {
        1 => "INT",
        2 => "FLOAT",
        3 => "BYTES",
        4 => "NDARRAY",
        5 => "JSON",
        10 => "IMAGE_RAW",
        11 => "IMAGE_JPEG",
        12 => "IMAGE_PNG",
        20 => "AUDIO_WAVEFORM",
        21 => "AUDIO_COMPRESSED",
        22 => "AUDIO_SPECTROGRAM",
        23 => "AUDIO_CODEC_TOKENS",
        30 => "VIDEO_FRAMES",
        31 => "VIDEO_COMPRESSED",
        32 => "VIDEO_OPTICAL_FLOW",
        40 => "TEXT_RAW",
        41 => "TEXT_TOKENIZED",
        42 => "TEXT_PACKED",
        43 => "TEXT_HIERARCHICAL",
        50 => "MULTIMODAL_SAMPLE",
        other => return format!("UNKNOWN_{other}"),
    }
    .to_string()
}

/// One field descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Name (1–63 bytes of UTF-8).
    pub name: String,
    /// Type and arguments.
    pub ty: FieldType,
    /// May hold missing values.
    pub nullable: bool,
    /// Bytes in a metadata row.
    pub metadata_size: u32,
}

impl Field {
    /// A field of `ty` that holds a value in every sample, with the
    /// metadata size it needs.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Field {
        let metadata_size = ty.record_size().unwrap_or(8);
        Field {
            name: name.into(),
            ty,
            nullable: false,
            metadata_size,
        }
    }

    /// This field, able to hold missing values when `nullable` (its
    /// metadata rows then carry the 8-byte NULL trailer).
    #[must_use]
    pub fn with_nullable(mut self, nullable: bool) -> Field {
        if nullable != self.nullable {
            self.metadata_size = if nullable {
                self.metadata_size + 8
            } else {
                self.metadata_size - 8
            };
            self.nullable = nullable;
        }
        self
    }

    /// NDARRAY bytes per value.
    pub fn nbytes(&self) -> Option<u64> {
        match &self.ty {
            FieldType::NdArray { dtype, shape } => shape
                .iter()
                .try_fold(dtype.size(), |a, &d| a.checked_mul(d)),
            _ => None,
        }
    }

    /// The 208 descriptor bytes.
    pub fn to_bytes(&self) -> [u8; 208] {
        let mut b = [0u8; 208];
        for (d, s) in b.iter_mut().zip(self.name.as_bytes().iter().take(63)) {
            *d = *s;
        }
        b[64..66].copy_from_slice(&self.ty.type_id().to_le_bytes());
        b[66..68].copy_from_slice(&u16::from(self.nullable).to_le_bytes());
        b[68..72].copy_from_slice(&self.metadata_size.to_le_bytes());
        b[76..204].copy_from_slice(&self.ty.arguments());
        b
    }
}

fn bad_desc(m: String, at: u64) -> Error {
    Error::new(ErrorKind::BadFieldDescriptor, m).at(at)
}

/// Parses descriptor bytes `d` (at offset `at`) with §9.1 step 9's checks,
/// except uniqueness; `newer` makes unknown types opaque.
pub(crate) fn parse_field(d: &[u8], at: u64, newer: bool) -> Result<(Field, Option<String>)> {
    let RawDescriptor {
        name: name_bytes,
        type_id,
        flags,
        metadata_size,
        arguments: args,
    } = parse::run(d, at, crate::parse::descriptor).map_err(|e| bad_desc(e.to_string(), at))?;
    let nul = name_bytes
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| bad_desc("field name has no NUL in its 64 bytes".into(), at))?;
    if nul == 0 {
        return Err(bad_desc("empty field name".into(), at));
    }
    let (name, after) = name_bytes.split_at(nul);
    if after.iter().any(|&b| b != 0) {
        return Err(bad_desc(
            "non-NUL byte after the field name's terminator".into(),
            at,
        ));
    }
    let name = std::str::from_utf8(name)
        .map_err(|_| bad_desc("field name is not UTF-8".into(), at))?
        .to_string();
    let nullable = flags & FIELD_NULLABLE != 0;
    if metadata_size == 0 || metadata_size % 8 != 0 || (nullable && metadata_size < 16) {
        return Err(bad_desc(
            format!("field {name:?}: metadata_size {metadata_size}"),
            at + 68,
        ));
    }
    let mut warning = None;
    let mut opaque = |why: String| -> Result<FieldType> {
        if newer {
            warning = Some(format!("field {name:?} is opaque: {why}"));
            Ok(FieldType::Opaque { type_id })
        } else {
            Err(bad_desc(format!("field {name:?}: {why}"), at + 64))
        }
    };
    // The arguments are 128 bytes (the descriptor parser took them whole).
    let args_at = at + 76;
    let first = parse::run(args, args_at, le_u8).map_err(|e| bad_desc(e.to_string(), args_at))?;
    let mut ty = match type_id {
        1 => FieldType::Int,
        2 => FieldType::Float,
        3 => FieldType::Bytes,
        4 => FieldType::NdArray {
            dtype: Dtype::U8,
            shape: Vec::new(),
        },
        5 => FieldType::Json,
        10 => FieldType::ImageRaw,
        11 => FieldType::ImageJpeg { quality: first },
        12 => FieldType::ImagePng,
        20 => FieldType::AudioWaveform { float: false },
        21 => FieldType::AudioCompressed,
        40 => FieldType::TextRaw,
        41 => FieldType::TextTokenized {
            vocab_size: parse::run(args, args_at, le_u32)
                .map_err(|e| bad_desc(e.to_string(), args_at))?,
        },
        other => opaque(format!("type id {other} is not defined in MLDF 1.0"))?,
    };
    if let Some(size) = ty.record_size() {
        let want = size + if nullable { 8 } else { 0 };
        if metadata_size != want {
            return Err(bad_desc(
                format!("field {name:?}: metadata_size {metadata_size}, the type needs {want}"),
                at + 68,
            ));
        }
    }
    match &mut ty {
        FieldType::NdArray { dtype, shape } => {
            let a = parse::run(args, args_at, crate::parse::ndarray_args)
                .map_err(|e| bad_desc(e.to_string(), args_at))?;
            let Some(dt) = Dtype::from_code(a.dtype) else {
                ty = opaque(format!("NDARRAY dtype code {}", a.dtype))?;
                return Ok((
                    Field {
                        name,
                        ty,
                        nullable,
                        metadata_size,
                    },
                    warning,
                ));
            };
            *dtype = dt;
            let ndim = a.ndim;
            if ndim > 15 {
                return Err(bad_desc(format!("field {name:?}: ndim {ndim}"), at + 77));
            }
            let mut nonzero: u64 = dt.size();
            let mut total: Option<u64> = Some(dt.size());
            for &dim in a.dims.iter().take(usize::from(ndim)) {
                shape.push(dim);
                if dim != 0 {
                    nonzero = nonzero.saturating_mul(dim);
                }
                total = total.and_then(|t| t.checked_mul(dim));
            }
            if nonzero > u64::from(u32::MAX) || total.is_none_or(|t| t > u64::from(u32::MAX)) {
                return Err(bad_desc(
                    format!("field {name:?}: NDARRAY of more than 2^32-1 bytes"),
                    at + 76,
                ));
            }
        }
        FieldType::AudioWaveform { float } => match first {
            0 => *float = false,
            1 => *float = true,
            other => ty = opaque(format!("sample_format {other}"))?,
        },
        _ => {}
    }
    Ok((
        Field {
            name,
            ty,
            nullable,
            metadata_size,
        },
        warning,
    ))
}

/// Checks the magic and the header fields (§9.1 steps 1–7).
pub(crate) fn check_header(bytes: &[u8], n: u64) -> Result<(Header, Vec<String>)> {
    if n < 9 {
        let prefix = MAGIC.get(..bytes.len()).is_some_and(|m| m == bytes);
        return Err(if prefix {
            Error::new(ErrorKind::Truncated, format!("{n} byte(s): a cut magic")).at(n)
        } else {
            Error::new(ErrorKind::BadMagic, "not an MLDF file (magic)").at(0)
        });
    }
    let head = bytes.get(..9).unwrap_or_default();
    if head != MAGIC {
        let first = head
            .iter()
            .zip(MAGIC)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let hint = if first == 8 && head.get(8) == Some(&0x01) {
            ": bytes 0-7 match and byte 8 is 0x01, the 8-byte-magic draft layout (header at 8), which is not MLDF 1.0"
        } else if first == 8 && head.get(8) == Some(&0x0D) {
            ": byte 8 is 0x0D, a LF-to-CRLF conversion damaged the file"
        } else if first == 5 {
            ": a CRLF-to-LF conversion damaged the file"
        } else if first == 0 && head.first() == Some(&0x09) {
            ": the high bit of byte 0 was stripped (7-bit channel)"
        } else {
            ""
        };
        return Err(Error::new(
            ErrorKind::BadMagic,
            format!("magic differs at byte {first}{hint}"),
        )
        .at(first as u64));
    }
    if n < HEADER_END {
        return Err(Error::new(
            ErrorKind::Truncated,
            format!("{n} bytes, the header ends at 73"),
        )
        .at(n));
    }
    let h = Header::parse(bytes)?;
    let mut warnings = Vec::new();
    if h.version_major != 1 {
        return Err(Error::new(
            ErrorKind::UnsupportedVersion,
            format!(
                "version {}.{} (this reader reads major version 1){}",
                h.version_major,
                h.version_minor,
                if h.version_major == 0 {
                    "; an all-zero header is an interrupted write"
                } else {
                    ""
                }
            ),
        )
        .at(9));
    }
    if h.version_minor > 0 {
        warnings.push(format!(
            "version 1.{} is newer than 1.0: unknown parts are skipped",
            h.version_minor
        ));
    }
    if h.flags & FLAG_LITTLE_ENDIAN == 0 {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "LITTLE_ENDIAN flag clear: big-endian MLDF is not defined",
        )
        .at(13));
    }
    if h.flags & FLAG_ENCRYPTED != 0 {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "ENCRYPTED flag set: not defined in MLDF 1.x",
        )
        .at(13));
    }
    if h.flags & !0xF != 0 {
        warnings.push(format!(
            "undefined flag bits 0x{:x} ignored",
            h.flags & !0xF
        ));
    }
    if !h.page_size.is_power_of_two() || h.page_size < 4096 || h.page_size > 1 << 31 {
        return Err(Error::new(ErrorKind::BadHeader, format!("page_size {}", h.page_size)).at(29));
    }
    if h.num_fields == 0 && h.num_samples > 0 {
        return Err(Error::new(
            ErrorKind::BadHeader,
            format!("{} samples and no fields", h.num_samples),
        )
        .at(25));
    }
    for (name, ptr, align, at) in [
        ("field_desc_ptr", h.field_desc_ptr, 8u64, 33u64),
        ("metadata_ptr", h.metadata_ptr, 64, 41),
        ("data_ptr", h.data_ptr, u64::from(h.page_size), 49),
        ("alloc_table_ptr", h.alloc_table_ptr, 16, 57),
    ] {
        if ptr < HEADER_END || ptr > n {
            return Err(Error::new(
                ErrorKind::OutOfBounds,
                format!("{name} {ptr} outside [73, {n}]"),
            )
            .at(at));
        }
        if ptr % align != 0 {
            return Err(Error::new(
                ErrorKind::Misaligned,
                format!("{name} {ptr} is not a multiple of {align}"),
            )
            .at(at));
        }
    }
    if !(n - h.alloc_table_ptr).is_multiple_of(16) {
        return Err(Error::new(
            ErrorKind::BadAllocTable,
            format!(
                "{} bytes from the allocation table to the end: not whole 16-byte entries",
                n - h.alloc_table_ptr
            ),
        )
        .at(h.alloc_table_ptr));
    }
    Ok((h, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A nullable field's metadata rows carry the 8-byte NULL trailer, and
    /// only while it is nullable.
    #[test]
    fn nullability_sizes_the_metadata_row() {
        let f = Field::new("x", FieldType::Int);
        assert_eq!((f.nullable, f.metadata_size), (false, 8));
        let n = f.clone().with_nullable(true);
        assert_eq!((n.nullable, n.metadata_size), (true, 16));
        assert_eq!(n.clone().with_nullable(true), n);
        assert_eq!(n.with_nullable(false), f);
        let t = Field::new("t", FieldType::Json).with_nullable(true);
        assert_eq!(
            t.metadata_size,
            FieldType::Json.record_size().unwrap_or(0) + 8
        );
    }
}
