//! Decoded values: one typed vector per column (or block, or annotation).

use std::borrow::Cow;
use std::ops::Range;

use crate::types::{ColumnType, ItemType};

/// A `DateTimeOffset`: the local clock time and its offset from UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DateTimeOffset {
    /// Clock ticks (100 ns since 0001-01-01, local time).
    pub ticks: i64,
    /// Offset from UTC in minutes (±840).
    pub offset_minutes: i16,
}

/// Text values, stored as WTF-8 so that a value holding half of a surrogate
/// pair (which ML.NET allows, `idv.md` §7.7) survives unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextValues {
    pub(crate) bytes: Vec<u8>,
    /// End of each value in `bytes` (start = previous end).
    pub(crate) ends: Vec<usize>,
}

impl TextValues {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn range(&self, i: usize) -> Option<Range<usize>> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        Some(start..end)
    }

    /// Value `i` as WTF-8 bytes (UTF-8, except that a lone surrogate is
    /// encoded in 3 bytes).
    pub fn wtf8(&self, i: usize) -> Option<&[u8]> {
        self.bytes.get(self.range(i)?)
    }

    /// Value `i` as text; a lone surrogate becomes U+FFFD.
    pub fn get(&self, i: usize) -> Option<Cow<'_, str>> {
        Some(wtf8_to_str_lossy(self.wtf8(i)?))
    }

    /// The indices of the values that are not UTF-8 (those holding half
    /// of a UTF-16 surrogate pair), in order.
    pub fn not_utf8(&self) -> impl Iterator<Item = usize> + '_ {
        // Whole values back to back: all UTF-8 when their bytes are.
        let n = if std::str::from_utf8(&self.bytes).is_ok() {
            0
        } else {
            self.len()
        };
        (0..n).filter(|&i| {
            self.wtf8(i)
                .is_some_and(|b| std::str::from_utf8(b).is_err())
        })
    }

    /// Every value, lossily as [`TextValues::get`].
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, str>> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Appends a value.
    pub fn push(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
        self.ends.push(self.bytes.len());
    }

    pub(crate) fn push_wtf8(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
        self.ends.push(self.bytes.len());
    }

    /// Value `i` as UTF-16 units (what ML.NET holds).
    pub fn utf16(&self, i: usize) -> Option<Vec<u16>> {
        let b = self.wtf8(i)?;
        let mut out = Vec::new();
        let mut k = 0;
        while k < b.len() {
            let (cp, n) = wtf8_next(b, k);
            k += n;
            if cp >= 0x10000 {
                let v = cp - 0x10000;
                out.push(0xD800 | (v >> 10) as u16);
                out.push(0xDC00 | (v & 0x3FF) as u16);
            } else {
                out.push(cp as u16);
            }
        }
        Some(out)
    }
}

impl<S: AsRef<str>> FromIterator<S> for TextValues {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut t = TextValues::default();
        for s in iter {
            t.push(s.as_ref());
        }
        t
    }
}

/// Decodes one code point (or lone surrogate) of WTF-8 at `k`; returns it
/// and its byte length. Bytes that are not WTF-8 give U+FFFD, 1 byte.
fn wtf8_next(b: &[u8], k: usize) -> (u32, usize) {
    let at = |j: usize| b.get(k + j).copied().map(u32::from);
    let Some(b0) = at(0) else {
        return (0xFFFD, 1);
    };
    let cont = |j: usize| at(j).filter(|x| x & 0xC0 == 0x80).map(|x| x & 0x3F);
    match b0 {
        0x00..=0x7F => (b0, 1),
        0xC0..=0xDF => match cont(1) {
            Some(c1) => (((b0 & 0x1F) << 6) | c1, 2),
            None => (0xFFFD, 1),
        },
        0xE0..=0xEF => match (cont(1), cont(2)) {
            (Some(c1), Some(c2)) => (((b0 & 0x0F) << 12) | (c1 << 6) | c2, 3),
            _ => (0xFFFD, 1),
        },
        0xF0..=0xF7 => match (cont(1), cont(2), cont(3)) {
            (Some(c1), Some(c2), Some(c3)) => {
                (((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3, 4)
            }
            _ => (0xFFFD, 1),
        },
        _ => (0xFFFD, 1),
    }
}

/// WTF-8 to text, each lone surrogate replaced by one U+FFFD.
pub fn wtf8_to_str_lossy(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        let (cp, n) = wtf8_next(b, k);
        out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
        k += n;
    }
    Cow::Owned(out)
}

/// Appends the WTF-8 form of UTF-16 `units` (pairs combined, lone
/// surrogates in 3 bytes).
pub(crate) fn utf16_to_wtf8(units: &[u16], out: &mut Vec<u8>) {
    for r in char::decode_utf16(units.iter().copied()) {
        match r {
            Ok(c) => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
            Err(e) => {
                let u = u32::from(e.unpaired_surrogate());
                out.extend_from_slice(&[
                    0xE0 | (u >> 12) as u8,
                    0x80 | ((u >> 6) & 0x3F) as u8,
                    0x80 | (u & 0x3F) as u8,
                ]);
            }
        }
    }
}

/// Vectors, one per row: each dense (all `length` values stored) or sparse
/// (`indices` and their values stored; the rest are the item's default).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VectorValues {
    pub(crate) lengths: Vec<u32>,
    /// Per vector: start of its indices in `indices`, or `None` when dense.
    pub(crate) sparse: Vec<Option<usize>>,
    pub(crate) indices: Vec<u32>,
    /// Per vector: end of its explicit values in `values` (start = previous end).
    pub(crate) value_ends: Vec<usize>,
    pub(crate) values: Box<Values>,
}

/// One vector of a [`VectorValues`].
#[derive(Debug, Clone)]
pub struct VectorRef<'a> {
    /// Logical length.
    pub length: u32,
    /// The stored indices of a sparse vector; `None` for a dense one.
    pub indices: Option<&'a [u32]>,
    /// Where its explicit values lie in [`VectorValues::values`].
    pub values: Range<usize>,
}

impl VectorValues {
    /// An empty set of vectors of items `item`.
    pub fn new(item: ItemType) -> Self {
        VectorValues {
            values: Box::new(Values::empty(item)),
            ..Default::default()
        }
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// All explicit values, vector after vector.
    pub fn values(&self) -> &Values {
        &self.values
    }

    /// Vector `i`.
    pub fn get(&self, i: usize) -> Option<VectorRef<'_>> {
        let length = *self.lengths.get(i)?;
        let end = *self.value_ends.get(i)?;
        let start = if i == 0 {
            0
        } else {
            *self.value_ends.get(i - 1)?
        };
        let indices = match self.sparse.get(i)? {
            Some(s) => Some(self.indices.get(*s..*s + (end - start))?),
            None => None,
        };
        Some(VectorRef {
            length,
            indices,
            values: start..end,
        })
    }

    /// Vector `i` with every slot present: a sparse vector's missing slots
    /// get the item's default (0, +0.0, false, empty text, key 0, ...).
    pub fn dense(&self, i: usize) -> Option<Values> {
        let r = self.get(i)?;
        let Some(ix) = r.indices else {
            return self.values.slice(r.values);
        };
        let mut out = self.values.empty_like();
        let mut zero = self.values.empty_like();
        zero.push_default();
        let mut next = 0u32;
        for (k, &slot) in ix.iter().enumerate() {
            for _ in next..slot {
                out.append_from(&zero, 0..1);
            }
            out.append_from(&self.values, r.values.start + k..r.values.start + k + 1);
            next = slot + 1;
        }
        for _ in next..r.length {
            out.append_from(&zero, 0..1);
        }
        Some(out)
    }

    /// Appends a dense vector whose values are `vals` (same item type).
    pub fn push_dense(&mut self, vals: &Values) -> bool {
        let n = vals.len();
        if !self.values.append_from(vals, 0..n) {
            return false;
        }
        self.lengths.push(n as u32);
        self.sparse.push(None);
        self.value_ends.push(self.values.len());
        true
    }

    /// Appends a sparse vector of `length` with `indices` (strictly
    /// increasing, below `length`) and their values.
    pub fn push_sparse(&mut self, length: u32, indices: &[u32], vals: &Values) -> bool {
        if indices.len() != vals.len()
            || indices.windows(2).any(|w| w.first() >= w.get(1))
            || indices.last().is_some_and(|&i| i >= length)
            || !self.values.append_from(vals, 0..vals.len())
        {
            return false;
        }
        self.sparse.push(Some(self.indices.len()));
        self.indices.extend_from_slice(indices);
        self.lengths.push(length);
        self.value_ends.push(self.values.len());
        true
    }
}

/// The values of one column (or part of one), typed by its item type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Values {
    /// `SByte`.
    I8(Vec<i8>),
    /// `Byte`.
    U8(Vec<u8>),
    /// `Int16`.
    I16(Vec<i16>),
    /// `UInt16`.
    U16(Vec<u16>),
    /// `Int32`.
    I32(Vec<i32>),
    /// `UInt32`.
    U32(Vec<u32>),
    /// `Int64`.
    I64(Vec<i64>),
    /// `UInt64`.
    U64(Vec<u64>),
    /// `Single`.
    F32(Vec<f32>),
    /// `Double`.
    F64(Vec<f64>),
    /// `Boolean`.
    Bool(Vec<bool>),
    /// Text.
    Text(TextValues),
    /// `TimeSpan` ticks.
    TimeSpan(Vec<i64>),
    /// `DateTime` ticks.
    DateTime(Vec<i64>),
    /// `DateTimeOffset`.
    DateTimeOffset(Vec<DateTimeOffset>),
    /// `DataViewRowId`.
    RowId(Vec<u128>),
    /// Keys (0 = missing), widened to u64.
    Key(Vec<u64>),
    /// Vectors.
    Vector(VectorValues),
}

impl Values {
    /// Text values (scalars or vector items) holding half of a UTF-16
    /// surrogate pair, which only WTF-8 keeps: the row of the first and
    /// how many values there are, or `None` when every text is UTF-8.
    pub fn lone_surrogates(&self) -> Option<(usize, u64)> {
        match self {
            Values::Text(t) => {
                let mut bad = t.not_utf8();
                let first = bad.next()?;
                Some((first, 1 + bad.count() as u64))
            }
            Values::Vector(v) => match v.values.as_ref() {
                Values::Text(t) => {
                    let mut bad = t.not_utf8();
                    let k = bad.next()?;
                    let row = v.value_ends.partition_point(|&end| end <= k);
                    Some((row, 1 + bad.count() as u64))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

macro_rules! each_flat {
    ($v:expr, $x:ident => $body:expr, $t:ident => $tbody:expr, $vec:ident => $vbody:expr) => {
        match $v {
            Values::I8($x) => $body,
            Values::U8($x) => $body,
            Values::I16($x) => $body,
            Values::U16($x) => $body,
            Values::I32($x) => $body,
            Values::U32($x) => $body,
            Values::I64($x) => $body,
            Values::U64($x) => $body,
            Values::F32($x) => $body,
            Values::F64($x) => $body,
            Values::Bool($x) => $body,
            Values::TimeSpan($x) => $body,
            Values::DateTime($x) => $body,
            Values::DateTimeOffset($x) => $body,
            Values::RowId($x) => $body,
            Values::Key($x) => $body,
            Values::Text($t) => $tbody,
            Values::Vector($vec) => $vbody,
        }
    };
}

impl Default for Values {
    /// No `Single` values.
    fn default() -> Self {
        Values::F32(Vec::new())
    }
}

impl Values {
    /// No values of item type `t` (scalar form).
    pub fn empty(t: ItemType) -> Self {
        match t {
            ItemType::I8 => Values::I8(Vec::new()),
            ItemType::U8 => Values::U8(Vec::new()),
            ItemType::I16 => Values::I16(Vec::new()),
            ItemType::U16 => Values::U16(Vec::new()),
            ItemType::I32 => Values::I32(Vec::new()),
            ItemType::U32 => Values::U32(Vec::new()),
            ItemType::I64 => Values::I64(Vec::new()),
            ItemType::U64 => Values::U64(Vec::new()),
            ItemType::F32 => Values::F32(Vec::new()),
            ItemType::F64 => Values::F64(Vec::new()),
            ItemType::Bool => Values::Bool(Vec::new()),
            ItemType::Text => Values::Text(TextValues::default()),
            ItemType::TimeSpan => Values::TimeSpan(Vec::new()),
            ItemType::DateTime => Values::DateTime(Vec::new()),
            ItemType::DateTimeOffset => Values::DateTimeOffset(Vec::new()),
            ItemType::RowId => Values::RowId(Vec::new()),
            ItemType::Key { .. } => Values::Key(Vec::new()),
        }
    }

    /// No values of column type `ty`.
    pub fn empty_of(ty: &ColumnType) -> Self {
        match ty {
            ColumnType::Scalar(t) => Values::empty(*t),
            ColumnType::Vector { item, .. } => Values::Vector(VectorValues::new(*item)),
        }
    }

    /// Number of values (rows).
    pub fn len(&self) -> usize {
        each_flat!(self, v => v.len(), t => t.len(), v => v.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `other[range]`; false when the variants differ or the range
    /// is out of bounds.
    pub fn append_from(&mut self, other: &Values, range: Range<usize>) -> bool {
        macro_rules! flat {
            ($a:expr, $b:expr) => {
                match $b.get(range) {
                    Some(s) => {
                        $a.extend_from_slice(s);
                        true
                    }
                    None => false,
                }
            };
        }
        match (self, other) {
            (Values::I8(a), Values::I8(b)) => flat!(a, b),
            (Values::U8(a), Values::U8(b)) => flat!(a, b),
            (Values::I16(a), Values::I16(b)) => flat!(a, b),
            (Values::U16(a), Values::U16(b)) => flat!(a, b),
            (Values::I32(a), Values::I32(b)) => flat!(a, b),
            (Values::U32(a), Values::U32(b)) => flat!(a, b),
            (Values::I64(a), Values::I64(b)) => flat!(a, b),
            (Values::U64(a), Values::U64(b)) => flat!(a, b),
            (Values::F32(a), Values::F32(b)) => flat!(a, b),
            (Values::F64(a), Values::F64(b)) => flat!(a, b),
            (Values::Bool(a), Values::Bool(b)) => flat!(a, b),
            (Values::TimeSpan(a), Values::TimeSpan(b)) => flat!(a, b),
            (Values::DateTime(a), Values::DateTime(b)) => flat!(a, b),
            (Values::DateTimeOffset(a), Values::DateTimeOffset(b)) => flat!(a, b),
            (Values::RowId(a), Values::RowId(b)) => flat!(a, b),
            (Values::Key(a), Values::Key(b)) => flat!(a, b),
            (Values::Text(a), Values::Text(b)) => {
                if range.end > b.len() || range.start > range.end {
                    return false;
                }
                for i in range {
                    a.push_wtf8(b.wtf8(i).unwrap_or_default());
                }
                true
            }
            (Values::Vector(a), Values::Vector(b)) => {
                if range.end > b.len() || range.start > range.end {
                    return false;
                }
                for i in range {
                    let Some(v) = b.get(i) else { return false };
                    if !a.values.append_from(&b.values, v.values.clone()) {
                        return false;
                    }
                    a.lengths.push(v.length);
                    match v.indices {
                        Some(ix) => {
                            a.sparse.push(Some(a.indices.len()));
                            a.indices.extend_from_slice(ix);
                        }
                        None => a.sparse.push(None),
                    }
                    a.value_ends.push(a.values.len());
                }
                true
            }
            _ => false,
        }
    }

    /// Appends the item type's default value (vectors: an empty vector).
    pub fn push_default(&mut self) {
        match self {
            Values::I8(x) => x.push(0),
            Values::U8(x) => x.push(0),
            Values::I16(x) => x.push(0),
            Values::U16(x) => x.push(0),
            Values::I32(x) => x.push(0),
            Values::U32(x) => x.push(0),
            Values::I64(x) | Values::TimeSpan(x) | Values::DateTime(x) => x.push(0),
            Values::U64(x) | Values::Key(x) => x.push(0),
            Values::F32(x) => x.push(0.0),
            Values::F64(x) => x.push(0.0),
            Values::Bool(x) => x.push(false),
            Values::Text(t) => t.push(""),
            Values::DateTimeOffset(x) => x.push(DateTimeOffset::default()),
            Values::RowId(x) => x.push(0),
            Values::Vector(v) => {
                let empty = v.values.empty_like();
                v.push_dense(&empty);
            }
        }
    }

    /// A copy of `self[range]` (None when out of bounds).
    pub fn slice(&self, range: Range<usize>) -> Option<Values> {
        let mut out = self.empty_like();
        out.append_from(self, range).then_some(out)
    }

    /// An empty value set of the same variant (and vector item type).
    pub fn empty_like(&self) -> Values {
        match self {
            Values::Vector(v) => Values::Vector(VectorValues {
                values: Box::new(v.values.empty_like()),
                ..Default::default()
            }),
            Values::Text(_) => Values::Text(TextValues::default()),
            Values::I8(_) => Values::I8(Vec::new()),
            Values::U8(_) => Values::U8(Vec::new()),
            Values::I16(_) => Values::I16(Vec::new()),
            Values::U16(_) => Values::U16(Vec::new()),
            Values::I32(_) => Values::I32(Vec::new()),
            Values::U32(_) => Values::U32(Vec::new()),
            Values::I64(_) => Values::I64(Vec::new()),
            Values::U64(_) => Values::U64(Vec::new()),
            Values::F32(_) => Values::F32(Vec::new()),
            Values::F64(_) => Values::F64(Vec::new()),
            Values::Bool(_) => Values::Bool(Vec::new()),
            Values::TimeSpan(_) => Values::TimeSpan(Vec::new()),
            Values::DateTime(_) => Values::DateTime(Vec::new()),
            Values::DateTimeOffset(_) => Values::DateTimeOffset(Vec::new()),
            Values::RowId(_) => Values::RowId(Vec::new()),
            Values::Key(_) => Values::Key(Vec::new()),
        }
    }
}

/// Scalar types that [`crate::Reader::column`] can hand out directly.
pub trait Scalar: Sized {
    /// Takes the values out if `v` holds this type.
    fn from_values(v: Values) -> Option<Vec<Self>>;
}

macro_rules! scalar {
    ($t:ty, $($var:ident),+) => {
        impl Scalar for $t {
            fn from_values(v: Values) -> Option<Vec<Self>> {
                match v {
                    $(Values::$var(x) => Some(x),)+
                    _ => None,
                }
            }
        }
    };
}
scalar!(i8, I8);
scalar!(u8, U8);
scalar!(i16, I16);
scalar!(u16, U16);
scalar!(i32, I32);
scalar!(u32, U32);
scalar!(u64, U64, Key);
scalar!(f32, F32);
scalar!(f64, F64);
scalar!(bool, Bool);
scalar!(u128, RowId);
scalar!(DateTimeOffset, DateTimeOffset);
scalar!(i64, I64, TimeSpan, DateTime);

impl Scalar for String {
    fn from_values(v: Values) -> Option<Vec<Self>> {
        match v {
            Values::Text(t) => Some(t.iter().map(Cow::into_owned).collect()),
            _ => None,
        }
    }
}

/// Plain numeric item types whose blocks are packed little-endian values,
/// for [`crate::Reader::read_block_into`].
pub trait PlainItem: dataformats_core::plain::Plain {
    /// The item type these values have in a file.
    const ITEM: ItemType;
}

macro_rules! plain_item {
    ($($t:ty => $i:ident),*) => {$(
        impl PlainItem for $t {
            const ITEM: ItemType = ItemType::$i;
        }
    )*};
}
plain_item!(i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64, f32 => F32, f64 => F64);
