//! Building blocks of the typed Arrow view: field constructors that record
//! the format's own type in the field metadata, and array builders that
//! turn the little-endian bytes a format stores into Arrow arrays of a
//! schema's exact type.
//!
//! Every adapter describes its columns with [`arrow_schema::Field`]s made
//! here and fills them with the crate's array builders; the type of an
//! array never depends on the values read, so every batch of a file has the
//! same schema. The metadata keys and [`type_name`] are public: they are
//! what `docs/arrow.md` documents.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, make_array};
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{DataType, Field, FieldRef};

use crate::core::Limits;
use crate::dataset::Error;

/// Field metadata key: the format's own type name (`U4[0-9]`, `Single`,
/// `NDARRAY<float32>[3,224,224]`, `<f8`, ...), so a writer can restore it.
pub const TYPE_KEY: &str = "dataformats.type";
/// Field metadata key: the declared dimension of a sparse column (CNTK
/// sparse streams, IDV vectors kept sparse).
pub const DIM_KEY: &str = "dataformats.dim";
/// Field metadata key of a column's original name, when the typed view had
/// to rename it (a repeated IDV column name).
pub const NAME_KEY: &str = "dataformats.name";
/// Field metadata key prefix of IDV annotations (`dataformats.annotation.SlotNames`).
pub const ANNOTATION_PREFIX: &str = "dataformats.annotation.";
/// Field metadata key: the kinds of a column's IDV annotations in the
/// file's order, as a JSON list (ML.NET keeps annotations in that order).
pub const ANNOTATION_ORDER_KEY: &str = "dataformats.annotations";
/// Prefix of the field metadata keys that give an annotation's own type
/// (IDV: `Vector<String, 3>`, `Boolean`, ...).
pub const ANNOTATION_TYPE_PREFIX: &str = "dataformats.annotation_type.";
/// Arrow's canonical extension name key.
pub const EXTENSION_NAME: &str = "ARROW:extension:name";
/// Arrow's canonical extension metadata key.
pub const EXTENSION_METADATA: &str = "ARROW:extension:metadata";

/// A field with the format's own type name in its metadata.
pub(crate) fn field(name: &str, dt: DataType, nullable: bool, ty: &str) -> Field {
    Field::new(name, dt, nullable)
        .with_metadata(HashMap::from([(TYPE_KEY.to_string(), ty.to_string())]))
}

/// The item field of lists and fixed-size lists.
pub(crate) fn item(dt: DataType, nullable: bool) -> FieldRef {
    Arc::new(Field::new("item", dt, nullable))
}

/// A tensor column of fixed `shape`: a scalar of `elem` for shape `[]`, a
/// `FixedSizeList` of the element count otherwise; two or more dimensions
/// add the `arrow.fixed_shape_tensor` extension with the shape.
pub(crate) fn tensor_field(
    name: &str,
    elem: DataType,
    shape: &[u64],
    nullable: bool,
    ty: &str,
) -> Result<Field, Error> {
    if shape.is_empty() {
        return Ok(field(name, elem, nullable, ty));
    }
    let n = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| Error::invalid(format!("{name}: shape {shape:?} is too large for Arrow")))?;
    if shape.len() < 2 {
        return Ok(field(
            name,
            DataType::FixedSizeList(item(elem, false), n),
            nullable,
            ty,
        ));
    }
    // The canonical tensor extension's storage: a list of nullable items.
    let f = field(
        name,
        DataType::FixedSizeList(item(elem, true), n),
        nullable,
        ty,
    );
    let mut md = f.metadata().clone();
    md.insert(EXTENSION_NAME.into(), "arrow.fixed_shape_tensor".into());
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    md.insert(
        EXTENSION_METADATA.into(),
        format!("{{\"shape\":[{}]}}", dims.join(",")),
    );
    Ok(f.with_metadata(md))
}

/// Bytes per value of a fixed-width type (`None` for variable-width types).
/// Booleans count one byte here: the builders take them as one byte each.
pub(crate) fn fixed_width(dt: &DataType) -> Option<usize> {
    Some(match dt {
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 | DataType::Float16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::Date32 => 4,
        DataType::Int64
        | DataType::UInt64
        | DataType::Float64
        | DataType::Date64
        | DataType::Timestamp(..)
        | DataType::Duration(_) => 8,
        DataType::FixedSizeBinary(n) => usize::try_from(*n).ok()?,
        DataType::FixedSizeList(f, n) => {
            fixed_width(f.data_type())?.checked_mul(usize::try_from(*n).ok()?)?
        }
        _ => return None,
    })
}

/// Every value of `a` back to back, as [`fixed_array`] takes them: for an
/// array of a fixed-width type other than boolean (booleans are bits in
/// Arrow) with no null at any level; `None` for any other array.
pub(crate) fn fixed_bytes(a: &dyn Array) -> Option<&[u8]> {
    use arrow_array::cast::AsArray;
    if a.null_count() > 0 {
        return None;
    }
    match a.data_type() {
        DataType::Boolean => None,
        DataType::FixedSizeBinary(_) => {
            let b = a.as_fixed_size_binary();
            // A slice of the array slices its value bytes too.
            b.value_data().get(..b.value_size().checked_mul(b.len())?)
        }
        DataType::FixedSizeList(_, _) => {
            let l = a.as_fixed_size_list();
            let values = l.values();
            let w = fixed_width(values.data_type())?;
            let n = usize::try_from(l.value_length()).ok()?;
            let start = usize::try_from(l.value_offset(0)).ok()?.checked_mul(w)?;
            let len = l.len().checked_mul(n)?.checked_mul(w)?;
            fixed_bytes(values.as_ref())?.get(start..start.checked_add(len)?)
        }
        dt => {
            let b = crate::convert::all_bytes(a);
            (b.len() == fixed_width(dt)?.checked_mul(a.len())?).then_some(b)
        }
    }
}

fn arrow_err(what: &str, e: arrow_schema::ArrowError) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// The null buffer of `valid` (`None` when every value is present).
pub(crate) fn nulls(valid: &[bool]) -> Option<NullBuffer> {
    if valid.iter().all(|&v| v) {
        None
    } else {
        Some(NullBuffer::from(valid.to_vec()))
    }
}

/// An array of `dt` (a fixed-width type) from `len` values stored back to
/// back in `bytes` (little-endian, booleans one byte each; null slots hold
/// any bytes of the right width).
pub(crate) fn fixed_array(
    dt: &DataType,
    bytes: Buffer,
    len: usize,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, Error> {
    let data = fixed_data(dt, bytes, len, nulls)?;
    Ok(make_array(data))
}

fn fixed_data(
    dt: &DataType,
    bytes: Buffer,
    len: usize,
    nulls: Option<NullBuffer>,
) -> Result<arrow_data::ArrayData, Error> {
    let width =
        fixed_width(dt).ok_or_else(|| Error::invalid(format!("{dt} is not a fixed-width type")))?;
    let need = width.saturating_mul(len);
    if bytes.len() != need {
        return Err(Error::invalid(format!(
            "{len} values of {dt} need {need} bytes, got {}",
            bytes.len()
        )));
    }
    let b = ArrayDataBuilder::new(dt.clone())
        .len(len)
        .nulls(nulls)
        .align_buffers(true);
    let b = match dt {
        DataType::Boolean => {
            let mut bits = BooleanBufferBuilder::new(len);
            for &x in bytes.as_slice() {
                bits.append(x != 0);
            }
            b.add_buffer(bits.finish().into_inner())
        }
        DataType::FixedSizeList(child, n) => {
            let n = usize::try_from(*n).unwrap_or(0);
            let child_len = n.saturating_mul(len);
            b.child_data(vec![fixed_data(child.data_type(), bytes, child_len, None)?])
        }
        _ => b.add_buffer(bytes),
    };
    b.build().map_err(|e| arrow_err("fixed-width array", e))
}

/// Collects fixed-width cells into one buffer: `None` cells become zeros
/// and nulls. Every present cell must be exactly `width` bytes.
pub(crate) struct FixedCells {
    width: usize,
    bytes: MutableBuffer,
    valid: Vec<bool>,
}

impl FixedCells {
    /// Room for `rows` values of `dt` (a fixed-width type), within `limits`.
    pub(crate) fn new(dt: &DataType, rows: usize, limits: &Limits) -> Result<Self, Error> {
        let width = fixed_width(dt)
            .ok_or_else(|| Error::invalid(format!("{dt} is not a fixed-width type")))?;
        let total = (width as u64).saturating_mul(rows as u64);
        limits
            .check_alloc("Arrow column", total)
            .map_err(Error::limit)?;
        Ok(FixedCells {
            width,
            bytes: MutableBuffer::new(total as usize),
            valid: Vec::with_capacity(rows),
        })
    }

    /// Appends one value (or a null).
    pub(crate) fn push(&mut self, cell: Option<&[u8]>) -> Result<(), Error> {
        match cell {
            Some(b) if b.len() == self.width => {
                self.bytes.extend_from_slice(b);
                self.valid.push(true);
            }
            Some(b) => {
                return Err(Error::invalid(format!(
                    "value {} has {} bytes, its type has {}",
                    self.valid.len(),
                    b.len(),
                    self.width
                )));
            }
            None => {
                self.bytes.extend_zeros(self.width);
                self.valid.push(false);
            }
        }
        Ok(())
    }

    /// The finished array of `dt`.
    pub(crate) fn finish(self, dt: &DataType) -> Result<ArrayRef, Error> {
        let len = self.valid.len();
        fixed_array(dt, self.bytes.into(), len, nulls(&self.valid))
    }
}

/// Collects variable-length cells (`Binary`, `Utf8`, or a `List` of a
/// fixed-width item whose cell is its items' bytes back to back).
pub(crate) struct VarCells {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    valid: Vec<bool>,
    limit: u64,
}

impl VarCells {
    /// Empty, for about `rows` values, bounded by `limits`.
    pub(crate) fn new(rows: usize, limits: &Limits) -> Self {
        let mut offsets = Vec::with_capacity(rows.saturating_add(1).min(1 << 20));
        offsets.push(0);
        VarCells {
            offsets,
            bytes: Vec::new(),
            valid: Vec::new(),
            limit: limits.max_alloc.min(i32::MAX as u64),
        }
    }

    /// Appends one value (or a null).
    pub(crate) fn push(&mut self, cell: Option<&[u8]>) -> Result<(), Error> {
        if let Some(b) = cell {
            let total = self.bytes.len() as u64 + b.len() as u64;
            if total > self.limit {
                return Err(Error::limit(format!(
                    "a batch's variable-length values need {total} bytes, more than the limit of {} \
                     (read fewer rows per batch)",
                    self.limit
                )));
            }
            self.bytes.extend_from_slice(b);
        }
        self.valid.push(cell.is_some());
        self.offsets.push(self.bytes.len() as i32);
        Ok(())
    }

    /// Makes room for `bytes` more value bytes (as far as the limit
    /// allows), so that a batch whose sizes are known grows its buffer once.
    pub(crate) fn reserve(&mut self, bytes: u64) {
        let room = bytes.min(self.limit.saturating_sub(self.bytes.len() as u64));
        let _ = self
            .bytes
            .try_reserve(usize::try_from(room).unwrap_or(usize::MAX));
    }

    /// Appends one value of `len` bytes that `fill` writes onto the end of
    /// the values buffer (decoding straight into the batch, no copy);
    /// `fill` must append exactly `len` bytes or fail.
    pub(crate) fn push_with(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let start = self.bytes.len();
        let total = start as u64 + len as u64;
        if total > self.limit {
            return Err(Error::limit(format!(
                "a batch's variable-length values need {total} bytes, more than the limit of {} \
                 (read fewer rows per batch)",
                self.limit
            )));
        }
        fill(&mut self.bytes)?;
        if self.bytes.len() != start + len {
            let got = self.bytes.len() - start.min(self.bytes.len());
            self.bytes.truncate(start);
            return Err(Error::invalid(format!(
                "a value said to be {len} byte(s) decoded to {got}"
            )));
        }
        self.valid.push(true);
        self.offsets.push(self.bytes.len() as i32);
        Ok(())
    }

    /// The finished array: `Binary`, `Utf8` (checked to be UTF-8) or a
    /// `List` of a fixed-width item.
    pub(crate) fn finish(self, dt: &DataType) -> Result<ArrayRef, Error> {
        let len = self.valid.len();
        let nulls = nulls(&self.valid);
        match dt {
            DataType::Binary | DataType::Utf8 => {
                let data = ArrayDataBuilder::new(dt.clone())
                    .align_buffers(true)
                    .len(len)
                    .nulls(nulls)
                    .add_buffer(Buffer::from_vec(self.offsets))
                    .add_buffer(Buffer::from_vec(self.bytes))
                    .build()
                    .map_err(|e| arrow_err("variable-length array", e))?;
                Ok(make_array(data))
            }
            DataType::List(child) => {
                let width = fixed_width(child.data_type())
                    .ok_or_else(|| Error::invalid(format!("{dt}: the item is not fixed-width")))?;
                let width32 = i32::try_from(width).unwrap_or(i32::MAX).max(1);
                let mut offsets = Vec::with_capacity(self.offsets.len());
                for &o in &self.offsets {
                    if o % width32 != 0 {
                        return Err(Error::invalid(format!(
                            "a list of {} holds a partial item",
                            child.data_type()
                        )));
                    }
                    offsets.push(o / width32);
                }
                let n = offsets.last().copied().unwrap_or(0) as usize;
                let child_data =
                    fixed_data(child.data_type(), Buffer::from_vec(self.bytes), n, None)?;
                let data = ArrayDataBuilder::new(dt.clone())
                    .align_buffers(true)
                    .len(len)
                    .nulls(nulls)
                    .add_buffer(Buffer::from_vec(offsets))
                    .child_data(vec![child_data])
                    .build()
                    .map_err(|e| arrow_err("list array", e))?;
                Ok(make_array(data))
            }
            other => Err(Error::invalid(format!(
                "{other} is not a variable-length type"
            ))),
        }
    }
}

/// Reverses the byte order of every `width`-byte element of `bytes` (numpy
/// big-endian data into Arrow's little-endian buffers).
pub(crate) fn swap_bytes(bytes: &mut [u8], width: usize) {
    if width > 1 {
        for c in bytes.chunks_exact_mut(width) {
            c.reverse();
        }
    }
}

/// The typed schema as text, one field a line: `name: type`, then
/// ` (nullable)` and the format's own type (`  (NDARRAY<float32>[64])`)
/// where there is one.
pub fn schema_text(schema: &arrow_schema::Schema) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for f in schema.fields() {
        let own = f
            .metadata()
            .get(TYPE_KEY)
            .map(|t| format!("  ({t})"))
            .unwrap_or_default();
        let nullable = if f.is_nullable() { " (nullable)" } else { "" };
        let _ = writeln!(out, "{}: {}{nullable}{own}", f.name(), f.data_type());
    }
    out
}

/// The typed schema as JSON: `{"fields": [{"name", "type", "nullable",
/// "metadata"}]}`, types spelled by [`type_name`].
pub fn schema_json(schema: &arrow_schema::Schema) -> serde_json::Value {
    let fields: Vec<serde_json::Value> = schema
        .fields()
        .iter()
        .map(|f| {
            let md: serde_json::Map<String, serde_json::Value> = f
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            serde_json::json!({
                "name": f.name(),
                "type": type_name(f.data_type()),
                "nullable": f.is_nullable(),
                "metadata": md,
            })
        })
        .collect();
    serde_json::json!({ "fields": fields })
}

fn unit_name(u: &arrow_schema::TimeUnit) -> &'static str {
    match u {
        arrow_schema::TimeUnit::Second => "s",
        arrow_schema::TimeUnit::Millisecond => "ms",
        arrow_schema::TimeUnit::Microsecond => "us",
        arrow_schema::TimeUnit::Nanosecond => "ns",
    }
}

fn child_name(f: &Field) -> String {
    format!(
        "{}: {}{}",
        f.name(),
        type_name(f.data_type()),
        if f.is_nullable() { "" } else { " not null" }
    )
}

/// An Arrow type spelled as pyarrow prints it (`int64`, `string`,
/// `fixed_size_list<item: float not null>[6]`, `timestamp[us, tz=UTC]`,
/// `dictionary<values=string, indices=uint32, ordered=0>`, ...), the
/// spelling of `dataformats schema --json`.
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Null => "null".into(),
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 => "halffloat".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Utf8 => "string".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::Binary => "binary".into(),
        DataType::LargeBinary => "large_binary".into(),
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary[{n}]"),
        DataType::Date32 => "date32[day]".into(),
        DataType::Date64 => "date64[ms]".into(),
        DataType::Timestamp(u, None) => format!("timestamp[{}]", unit_name(u)),
        DataType::Timestamp(u, Some(tz)) => format!("timestamp[{}, tz={tz}]", unit_name(u)),
        DataType::Duration(u) => format!("duration[{}]", unit_name(u)),
        DataType::List(f) => format!("list<{}>", child_name(f)),
        DataType::LargeList(f) => format!("large_list<{}>", child_name(f)),
        DataType::FixedSizeList(f, n) => format!("fixed_size_list<{}>[{n}]", child_name(f)),
        DataType::Struct(fs) => format!(
            "struct<{}>",
            fs.iter()
                .map(|f| child_name(f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Dictionary(k, v) => format!(
            "dictionary<values={}, indices={}, ordered=0>",
            type_name(v),
            type_name(k)
        ),
        other => other.to_string(),
    }
}

/// Keeps a [`SharedBytes`](crate::core::SharedBytes) alive for an Arrow
/// buffer that borrows it.
struct Shared {
    _keep: crate::core::SharedBytes,
}

// The bytes are immutable and the owner is only dropped: nothing can be
// seen half-changed after a panic.
impl std::panic::RefUnwindSafe for Shared {}

/// `sub` (borrowed from `src`'s map or buffer) as an Arrow buffer that
/// shares the memory instead of copying it; `None` when `src` cannot share
/// it (a file read by positioned reads, or bytes from elsewhere).
pub(crate) fn shared_buffer(src: &crate::core::Source, sub: &[u8]) -> Option<Buffer> {
    let bytes = src.share(sub)?;
    let ptr = std::ptr::NonNull::new(bytes.as_ptr().cast_mut())?;
    let len = bytes.len();
    // SAFETY: `ptr` and `len` describe the bytes `bytes` owns (a memory map
    // or an `Arc<[u8]>` that never changes), and the buffer keeps `bytes`
    // alive for as long as it (or any slice of it) exists.
    Some(unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(Shared { _keep: bytes })) })
}

/// Value `i` of a timestamp, duration or date64 array as its integer count
/// of the type's unit (`None` for other types).
pub(crate) fn time_count(a: &dyn arrow_array::Array, i: usize) -> Option<i64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::TimeUnit as U;
    Some(match a.data_type() {
        DataType::Timestamp(U::Second, _) => a.as_primitive::<TimestampSecondType>().value(i),
        DataType::Timestamp(U::Millisecond, _) => {
            a.as_primitive::<TimestampMillisecondType>().value(i)
        }
        DataType::Timestamp(U::Microsecond, _) => {
            a.as_primitive::<TimestampMicrosecondType>().value(i)
        }
        DataType::Timestamp(U::Nanosecond, _) => {
            a.as_primitive::<TimestampNanosecondType>().value(i)
        }
        DataType::Duration(U::Second) => a.as_primitive::<DurationSecondType>().value(i),
        DataType::Duration(U::Millisecond) => a.as_primitive::<DurationMillisecondType>().value(i),
        DataType::Duration(U::Microsecond) => a.as_primitive::<DurationMicrosecondType>().value(i),
        DataType::Duration(U::Nanosecond) => a.as_primitive::<DurationNanosecondType>().value(i),
        DataType::Date64 => a.as_primitive::<Date64Type>().value(i),
        _ => return None,
    })
}

fn push_f64(x: f64, out: &mut String, exact_nan: bool) {
    use std::fmt::Write as _;
    if x.is_nan() && exact_nan && x.to_bits() != f64::NAN.to_bits() {
        let _ = write!(out, "\"NaN:0x{:016x}\"", x.to_bits());
    } else if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        });
    } else {
        // As `{:?}`: the shortest decimal that reads back to the same bits.
        dataformats_core::text::push_f64_debug(out, x);
    }
}

fn push_f32(x: f32, out: &mut String, exact_nan: bool) {
    use std::fmt::Write as _;
    if x.is_finite() {
        dataformats_core::text::push_f32_debug(out, x);
    } else if x.is_nan() && exact_nan && x.to_bits() != f32::NAN.to_bits() {
        let _ = write!(out, "\"NaN:0x{:08x}\"", x.to_bits());
    } else {
        push_f64(f64::from(x), out, false);
    }
}

/// Items `start..end` of `values` as a JSON array: a list's items read in
/// place (no slice of the list is made), float items without nulls in one
/// loop over their values.
fn json_items(values: &dyn Array, start: usize, end: usize, out: &mut String, exact: bool) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    /// `xs` written one after the other, comma-separated.
    fn each<T>(xs: impl Iterator<Item = T>, out: &mut String, mut put: impl FnMut(T, &mut String)) {
        for (k, x) in xs.enumerate() {
            if k > 0 {
                out.push(',');
            }
            put(x, out);
        }
    }
    out.push('[');
    let end = end.min(values.len());
    match values.data_type() {
        DataType::Float32 if values.null_count() == 0 => {
            let v = values.as_primitive::<Float32Type>().values();
            each(
                v.get(start..end).unwrap_or_default().iter().copied(),
                out,
                |x, o| push_f32(x, o, exact),
            );
        }
        DataType::Float64 if values.null_count() == 0 => {
            let v = values.as_primitive::<Float64Type>().values();
            each(
                v.get(start..end).unwrap_or_default().iter().copied(),
                out,
                |x, o| push_f64(x, o, exact),
            );
        }
        _ => each(start..end, out, |k, o| json_value_with(values, k, o, exact)),
    }
    out.push(']');
}

/// Value `i` of `a` as JSON text (see
/// [`write_json_lines`](crate::export::write_json_lines)): lossless for
/// integers, floats, bytes (base64), lists, structs and times.
pub fn json_value(a: &dyn Array, i: usize, out: &mut String) {
    json_value_with(a, i, out, false)
}

/// [`json_value`], with each NaN that is not the canonical one written as
/// `"NaN:0x<its bits in hex>"` (8 hex digits for float32, 16 for
/// float64) so that it reads back to the same bits.
pub fn json_value_exact(a: &dyn Array, i: usize, out: &mut String) {
    json_value_with(a, i, out, true)
}

fn json_value_with(a: &dyn Array, i: usize, out: &mut String, exact: bool) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use base64::Engine as _;
    use std::fmt::Write as _;
    if a.is_null(i) {
        out.push_str("null");
        return;
    }
    macro_rules! int {
        ($t:ty) => {{
            let _ = write!(out, "{}", a.as_primitive::<$t>().value(i));
        }};
    }
    match a.data_type() {
        DataType::Boolean => out.push_str(if a.as_boolean().value(i) {
            "true"
        } else {
            "false"
        }),
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float16 => push_f32(
            a.as_primitive::<Float16Type>().value(i).to_f32(),
            out,
            false,
        ),
        DataType::Float32 => push_f32(a.as_primitive::<Float32Type>().value(i), out, exact),
        DataType::Float64 => push_f64(a.as_primitive::<Float64Type>().value(i), out, exact),
        DataType::Timestamp(..) | DataType::Duration(_) | DataType::Date64 => {
            let _ = write!(
                out,
                "{}",
                crate::typed::time_count(a, i).unwrap_or_default()
            );
        }
        DataType::Utf8 => crate::core::text::push_json_string(out, a.as_string::<i32>().value(i)),
        DataType::Binary => {
            out.push('"');
            out.push_str(
                &base64::engine::general_purpose::STANDARD.encode(a.as_binary::<i32>().value(i)),
            );
            out.push('"');
        }
        DataType::FixedSizeBinary(_) => {
            out.push('"');
            out.push_str(
                &base64::engine::general_purpose::STANDARD
                    .encode(a.as_fixed_size_binary().value(i)),
            );
            out.push('"');
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let o = l.value_offsets();
            let start = o.get(i).copied().unwrap_or(0);
            let end = o.get(i + 1).copied().unwrap_or(start);
            json_items(
                l.values().as_ref(),
                start as usize,
                end as usize,
                out,
                exact,
            );
        }
        DataType::FixedSizeList(..) => {
            let l = a.as_fixed_size_list();
            let start = l.value_offset(i) as usize;
            let end = start + l.value_length() as usize;
            json_items(l.values().as_ref(), start, end, out, exact);
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            out.push('{');
            for (k, (c, f)) in s.columns().iter().zip(fields).enumerate() {
                if k > 0 {
                    out.push(',');
                }
                crate::core::text::push_json_string(out, f.name());
                out.push(':');
                json_value_with(c.as_ref(), i, out, exact);
            }
            out.push('}');
        }
        DataType::Dictionary(..) => match dict_key(a, i) {
            Some(k) => json_value_with(a.as_any_dictionary().values().as_ref(), k, out, exact),
            None => out.push_str("null"),
        },
        _ => out.push_str("null"),
    }
}

/// The index into the values of entry `i` of the dictionary array `a`:
/// `None` when it is null, out of range, or `a` is not a dictionary. (One
/// entry at a time: arrow's `normalized_keys` builds every key and panics on
/// a dictionary without values.)
pub(crate) fn dict_key(a: &dyn Array, i: usize) -> Option<usize> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    let d = a.as_any_dictionary_opt()?;
    let keys = d.keys();
    if i >= keys.len() || keys.is_null(i) {
        return None;
    }
    macro_rules! key {
        ($t:ty) => {
            usize::try_from(keys.as_primitive::<$t>().value(i)).ok()
        };
    }
    let k = match keys.data_type() {
        DataType::Int8 => key!(Int8Type),
        DataType::Int16 => key!(Int16Type),
        DataType::Int32 => key!(Int32Type),
        DataType::Int64 => key!(Int64Type),
        DataType::UInt8 => key!(UInt8Type),
        DataType::UInt16 => key!(UInt16Type),
        DataType::UInt32 => key!(UInt32Type),
        DataType::UInt64 => key!(UInt64Type),
        _ => None,
    };
    k.filter(|&k| k < d.values().len())
}

/// The text entries of the first dictionary in `a` (at the top level or
/// inside lists), when there is one.
pub(crate) fn dictionary_entries(a: &dyn Array) -> Option<Vec<String>> {
    use arrow_array::cast::AsArray;
    match a.data_type() {
        DataType::Dictionary(..) => {
            let v = a.as_any_dictionary().values().as_string_opt::<i32>()?;
            Some(v.iter().map(|x| x.unwrap_or("").to_string()).collect())
        }
        DataType::List(_) => dictionary_entries(a.as_list::<i32>().values().as_ref()),
        DataType::FixedSizeList(..) => dictionary_entries(a.as_fixed_size_list().values().as_ref()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use arrow_schema::{DataType, Field, Schema};

    /// One line a field: name, type, nullability, the format's own type.
    #[test]
    fn schema_text_is_a_line_a_field() {
        let own = [(
            super::TYPE_KEY.to_string(),
            "NDARRAY<float32>[2]".to_string(),
        )]
        .into();
        let item = std::sync::Arc::new(Field::new("item", DataType::Float32, false));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::FixedSizeList(item, 2), true).with_metadata(own),
        ]);
        let text = super::schema_text(&schema);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], "id: Int64");
        assert!(lines[1].starts_with("x: FixedSizeList"), "{text}");
        assert!(
            lines[1].ends_with(" (nullable)  (NDARRAY<float32>[2])"),
            "{text}"
        );
        assert_eq!(super::schema_text(&Schema::empty()), "");
    }
}
