//! Column types and codec descriptions (`idv.md` §7.1, §7.2, §7.8, §7.9).

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// The unsigned integer a key is stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyWidth {
    /// `Byte`.
    U8,
    /// `UInt16`.
    U16,
    /// `UInt32`.
    U32,
    /// `UInt64`.
    U64,
}

impl KeyWidth {
    /// The largest value of the item type (and so the largest key count).
    pub const fn max(self) -> u64 {
        match self {
            KeyWidth::U8 => u8::MAX as u64,
            KeyWidth::U16 => u16::MAX as u64,
            KeyWidth::U32 => u32::MAX as u64,
            KeyWidth::U64 => u64::MAX,
        }
    }

    /// Bytes per stored value.
    pub const fn size(self) -> usize {
        match self {
            KeyWidth::U8 => 1,
            KeyWidth::U16 => 2,
            KeyWidth::U32 => 4,
            KeyWidth::U64 => 8,
        }
    }

    /// ML.NET's name of the item type.
    pub const fn name(self) -> &'static str {
        match self {
            KeyWidth::U8 => "Byte",
            KeyWidth::U16 => "UInt16",
            KeyWidth::U32 => "UInt32",
            KeyWidth::U64 => "UInt64",
        }
    }
}

/// The type of one value (a scalar column, or the item of a vector column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemType {
    /// `SByte`.
    I8,
    /// `Byte`.
    U8,
    /// `Int16`.
    I16,
    /// `UInt16`.
    U16,
    /// `Int32`.
    I32,
    /// `UInt32`.
    U32,
    /// `Int64`.
    I64,
    /// `UInt64`.
    U64,
    /// `Single`.
    F32,
    /// `Double`.
    F64,
    /// `Boolean`.
    Bool,
    /// `String` (text, stored by the `TextSpan` codec).
    Text,
    /// `TimeSpan`: ticks of 100 ns.
    TimeSpan,
    /// `DateTime`: ticks since 0001-01-01.
    DateTime,
    /// `DateTimeOffset`: local clock ticks and an offset in minutes.
    DateTimeOffset,
    /// `DataViewRowId`: a 128-bit id.
    RowId,
    /// `Key<W, 0-(count-1)>`: 0 = missing, 1..=count the categories.
    Key {
        /// Storage width.
        width: KeyWidth,
        /// Number of categories (≥ 1).
        count: u64,
    },
}

impl ItemType {
    /// The current codec load name that writes this type.
    pub const fn codec_name(self) -> &'static str {
        match self {
            ItemType::I8 => "SByte",
            ItemType::U8 => "Byte",
            ItemType::I16 => "Int16",
            ItemType::U16 => "UInt16",
            ItemType::I32 => "Int32",
            ItemType::U32 => "UInt32",
            ItemType::I64 => "Int64",
            ItemType::U64 => "UInt64",
            ItemType::F32 => "Single",
            ItemType::F64 => "Double",
            ItemType::Bool => "Boolean",
            ItemType::Text => "TextSpan",
            ItemType::TimeSpan => "TimeSpan",
            ItemType::DateTime => "DateTime",
            ItemType::DateTimeOffset => "DateTimeOffset",
            ItemType::RowId => "DataViewRowId",
            ItemType::Key { .. } => "Key2",
        }
    }

    /// Fixed bytes per value in a block (None for text, which is variable,
    /// and booleans, which are bit-packed).
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            ItemType::I8 | ItemType::U8 => Some(1),
            ItemType::I16 | ItemType::U16 => Some(2),
            ItemType::I32 | ItemType::U32 | ItemType::F32 => Some(4),
            ItemType::I64
            | ItemType::U64
            | ItemType::F64
            | ItemType::TimeSpan
            | ItemType::DateTime => Some(8),
            ItemType::DateTimeOffset => Some(10),
            ItemType::RowId => Some(16),
            ItemType::Key { width, .. } => Some(width.size()),
            ItemType::Bool | ItemType::Text => None,
        }
    }
}

impl fmt::Display for ItemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ItemType::I8 => "SByte",
            ItemType::U8 => "Byte",
            ItemType::I16 => "Int16",
            ItemType::U16 => "UInt16",
            ItemType::I32 => "Int32",
            ItemType::U32 => "UInt32",
            ItemType::I64 => "Int64",
            ItemType::U64 => "UInt64",
            ItemType::F32 => "Single",
            ItemType::F64 => "Double",
            ItemType::Bool => "Boolean",
            ItemType::Text => "String",
            ItemType::TimeSpan => "TimeSpan",
            ItemType::DateTime => "DateTime",
            ItemType::DateTimeOffset => "DateTimeOffset",
            ItemType::RowId => "DataViewRowId",
            ItemType::Key { width, count } => {
                return write!(f, "Key<{}, 0-{}>", width.name(), count - 1);
            }
        };
        f.write_str(s)
    }
}

/// A column's (or annotation's) type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// One value per row.
    Scalar(ItemType),
    /// A vector per row.
    Vector {
        /// Item type.
        item: ItemType,
        /// Dimensions as stored (empty when the file stored none: one
        /// variable dimension). A zero dimension makes the size variable.
        dims: Vec<u32>,
    },
}

impl ColumnType {
    /// The item type (the scalar type itself for a scalar).
    pub fn item(&self) -> ItemType {
        match self {
            ColumnType::Scalar(t) | ColumnType::Vector { item: t, .. } => *t,
        }
    }

    /// A vector's fixed size (product of the dimensions), `Some(0)` for a
    /// variable size, `None` for a scalar.
    pub fn vector_size(&self) -> Option<u32> {
        match self {
            ColumnType::Scalar(_) => None,
            ColumnType::Vector { dims, .. } => {
                if dims.is_empty() {
                    return Some(0);
                }
                // Checked when parsed or built: the product fits in i32.
                Some(
                    dims.iter()
                        .try_fold(1u32, |a, &d| a.checked_mul(d))
                        .unwrap_or(0),
                )
            }
        }
    }

    /// A fixed-size vector of `n` items.
    pub fn vector(item: ItemType, n: u32) -> Self {
        ColumnType::Vector {
            item,
            dims: vec![n],
        }
    }

    /// A variable-size vector.
    pub fn var_vector(item: ItemType) -> Self {
        ColumnType::Vector {
            item,
            dims: vec![0],
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Scalar(t) => write!(f, "{t}"),
            ColumnType::Vector { item, dims } if dims.len() <= 1 => {
                match self.vector_size().unwrap_or(0) {
                    0 => write!(f, "Vector<{item}>"),
                    n => write!(f, "Vector<{item}, {n}>"),
                }
            }
            ColumnType::Vector { item, dims } => {
                write!(f, "Vector<{item}")?;
                for d in dims {
                    if *d == 0 {
                        write!(f, ", *")?;
                    } else {
                        write!(f, ", {d}")?;
                    }
                }
                write!(f, ">")
            }
        }
    }
}

/// A parsed codec description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codec {
    /// The load name as stored.
    pub name: String,
    /// The type, or `None` when the name is unknown (the owner is dead).
    pub ty: Option<ColumnType>,
    /// Booleans use the legacy 2-bit `DvBool` layout.
    pub(crate) dvbool: bool,
}

/// How the item of a description decodes (type plus legacy layout).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub(crate) ty: ItemType,
    pub(crate) dvbool: bool,
}

/// The item codecs known by name (no parameters).
pub(crate) fn simple(name: &str) -> Option<Item> {
    let (ty, dvbool) = match name {
        "SByte" => (ItemType::I8, false),
        "Byte" => (ItemType::U8, false),
        "Int16" => (ItemType::I16, false),
        "UInt16" => (ItemType::U16, false),
        "Int32" => (ItemType::I32, false),
        "UInt32" => (ItemType::U32, false),
        "Int64" => (ItemType::I64, false),
        "UInt64" => (ItemType::U64, false),
        "Single" => (ItemType::F32, false),
        "Double" => (ItemType::F64, false),
        "TimeSpan" | "DvTimeSpan" => (ItemType::TimeSpan, false),
        "DateTime" | "DvDateTime" => (ItemType::DateTime, false),
        "DateTimeOffset" | "DvDateTimeZone" => (ItemType::DateTimeOffset, false),
        "DataViewRowId" => (ItemType::RowId, false),
        "Boolean" => (ItemType::Bool, false),
        "DvBool" => (ItemType::Bool, true),
        "TextSpan" => (ItemType::Text, false),
        _ => return None,
    };
    Some(Item { ty, dvbool })
}

/// Appends a .NET string.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &str) {
    let mut b = [0u8; 5];
    let n = dataformats_core::parse::write_dotnet_7bit_i32(s.len() as i32, &mut b);
    out.extend_from_slice(b.get(..n).unwrap_or_default());
    out.extend_from_slice(s.as_bytes());
}

/// Appends an unsigned LEB128.
pub(crate) fn put_leb128(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; 10];
    let n = dataformats_core::parse::write_uleb128(v, &mut b);
    out.extend_from_slice(b.get(..n).unwrap_or_default());
}

fn put_desc(out: &mut Vec<u8>, name: &str, params: &[u8]) {
    put_string(out, name);
    put_leb128(out, params.len() as u64);
    out.extend_from_slice(params);
}

fn put_item(out: &mut Vec<u8>, t: ItemType) {
    match t {
        ItemType::Key { width, count } => {
            let mut params = Vec::new();
            put_desc(&mut params, width.name(), &[]);
            params.extend_from_slice(&count.to_le_bytes());
            put_desc(out, "Key2", &params);
        }
        other => put_desc(out, other.codec_name(), &[]),
    }
}

/// The codec description the current writer uses for `ty`.
pub(crate) fn write_codec(out: &mut Vec<u8>, ty: &ColumnType) {
    match ty {
        ColumnType::Scalar(t) => put_item(out, *t),
        ColumnType::Vector { item, dims } => {
            let mut params = Vec::new();
            put_item(&mut params, *item);
            let dims: &[u32] = if dims.is_empty() { &[0] } else { dims };
            params.extend_from_slice(&(dims.len() as i32).to_le_bytes());
            for d in dims {
                params.extend_from_slice(&(*d as i32).to_le_bytes());
            }
            put_desc(out, "VBuffer", &params);
        }
    }
}

/// Checks that a type can be written (key counts, vector sizes).
pub(crate) fn check_writable(ty: &ColumnType) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if let ItemType::Key { width, count } = ty.item()
        && (count == 0 || count > width.max())
    {
        return bad(format!("key count {count} not in 1..={}", width.max()));
    }
    if let ColumnType::Vector { dims, .. } = ty {
        if dims.iter().any(|&d| d > i32::MAX as u32) {
            return bad("vector dimension above 2^31-1".into());
        }
        let size = dims
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(u64::from(d)));
        if dims.iter().all(|&d| d != 0) && size.is_none_or(|s| s > i32::MAX as u64) {
            return bad("vector size overflows Int32".into());
        }
    }
    Ok(())
}
