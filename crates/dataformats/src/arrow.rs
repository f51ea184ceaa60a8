//! Arrow `RecordBatch` export (feature `arrow`, arrow-rs sub-crates only).
//!
//! Two routes:
//!
//! * [`record_batch`] turns any [`Dataset`] (IDV columns, MLDF fields,
//!   BLZ/bcolz tables, Bloscpack rows, CNTK and TBL v2 records) into a
//!   batch: integers, floats, booleans, text and bytes become the matching
//!   Arrow arrays; tensors become primitive arrays of their element type
//!   (0-d) or `FixedSizeList`s (the shape is in the field metadata under
//!   `shape`); lists become JSON text; missing values become nulls. Every
//!   field is nullable, and each column's type is decided from the
//!   records of the range (a range where a column has no value at all gives
//!   it the `Null` type).
//! * [`idv_record_batch`] reads IDV columns in their own types (`Int32`
//!   stays `Int32`, keys are `UInt*` with key 0 as null, vectors are
//!   `FixedSizeList` or `List`, sparse vectors are densified with zeros).
//!
//! ```no_run
//! let d = dataformats::open("table.mldf").unwrap();
//! let batch = dataformats::arrow::record_batch(d.as_ref(), 0..d.len()).unwrap();
//! println!("{} rows, schema {}", batch.num_rows(), batch.schema());
//! ```

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, ListArray, NullArray,
    PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema};

use crate::dataset::{Dataset, Error, Value};

fn arrow_err(e: ArrowError) -> Error {
    Error {
        format: None,
        kind: "arrow".into(),
        message: e.to_string(),
    }
}

/// A numeric element type, as tensors and numpy arrays name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prim {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl Prim {
    fn of(dtype: &str) -> Option<Prim> {
        Some(match crate::dataset::numpy_dtype_name(dtype).as_str() {
            "bool" => Prim::Bool,
            "int8" => Prim::I8,
            "int16" => Prim::I16,
            "int32" => Prim::I32,
            "int64" => Prim::I64,
            "uint8" => Prim::U8,
            "uint16" => Prim::U16,
            "uint32" => Prim::U32,
            "uint64" => Prim::U64,
            "float16" => Prim::F16,
            "float32" => Prim::F32,
            "float64" => Prim::F64,
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 | Prim::F16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
        }
    }

    fn data_type(self) -> DataType {
        match self {
            Prim::Bool => DataType::Boolean,
            Prim::I8 => DataType::Int8,
            Prim::I16 => DataType::Int16,
            Prim::I32 => DataType::Int32,
            Prim::I64 => DataType::Int64,
            Prim::U8 => DataType::UInt8,
            Prim::U16 => DataType::UInt16,
            Prim::U32 => DataType::UInt32,
            Prim::U64 => DataType::UInt64,
            Prim::F16 => DataType::Float16,
            Prim::F32 => DataType::Float32,
            Prim::F64 => DataType::Float64,
        }
    }

    /// An array of the little-endian elements in `bytes`.
    fn array(self, bytes: &[u8], nulls: Option<NullBuffer>) -> ArrayRef {
        macro_rules! prim {
            ($t:ty, $n:expr, $from:expr) => {{
                let v: Vec<_> = bytes
                    .chunks_exact($n)
                    .map(|c| $from(c.try_into().unwrap_or([0; $n])))
                    .collect();
                Arc::new(PrimitiveArray::<$t>::new(ScalarBuffer::from(v), nulls))
            }};
        }
        match self {
            Prim::Bool => Arc::new(BooleanArray::new(
                BooleanBuffer::from_iter(bytes.iter().map(|&b| b != 0)),
                nulls,
            )),
            Prim::I8 => prim!(Int8Type, 1, i8::from_le_bytes),
            Prim::I16 => prim!(Int16Type, 2, i16::from_le_bytes),
            Prim::I32 => prim!(Int32Type, 4, i32::from_le_bytes),
            Prim::I64 => prim!(Int64Type, 8, i64::from_le_bytes),
            Prim::U8 => prim!(UInt8Type, 1, u8::from_le_bytes),
            Prim::U16 => prim!(UInt16Type, 2, u16::from_le_bytes),
            Prim::U32 => prim!(UInt32Type, 4, u32::from_le_bytes),
            Prim::U64 => prim!(UInt64Type, 8, u64::from_le_bytes),
            Prim::F16 => prim!(Float16Type, 2, |b: [u8; 2]| half_from_bits(
                u16::from_le_bytes(b)
            )),
            Prim::F32 => prim!(Float32Type, 4, f32::from_le_bytes),
            Prim::F64 => prim!(Float64Type, 8, f64::from_le_bytes),
        }
    }
}

fn half_from_bits(b: u16) -> <Float16Type as arrow_array::ArrowPrimitiveType>::Native {
    <Float16Type as arrow_array::ArrowPrimitiveType>::Native::from_bits(b)
}

/// How one column is exported, decided from its first present value.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Null,
    Int,
    UInt,
    Float,
    Bool,
    Text,
    Bytes,
    /// A tensor of this element type and shape (empty: a scalar).
    Tensor(Prim, Vec<u64>),
    /// Anything else (lists, mixed values): JSON text.
    Json,
}

fn kind_of(v: &Value) -> Option<Kind> {
    Some(match v {
        Value::Null => return None,
        Value::Int(_) => Kind::Int,
        Value::UInt(_) => Kind::UInt,
        Value::Float(_) => Kind::Float,
        Value::Bool(_) => Kind::Bool,
        Value::Text(_) => Kind::Text,
        Value::Bytes(_) => Kind::Bytes,
        Value::Tensor { dtype, shape, .. } => match Prim::of(dtype) {
            Some(p) => Kind::Tensor(p, shape.clone()),
            None => Kind::Bytes,
        },
        Value::List(_) => Kind::Json,
    })
}

fn fits(k: &Kind, v: &Value) -> bool {
    match (k, v) {
        (_, Value::Null) => true,
        (Kind::Json, _) => true,
        (Kind::Bytes, Value::Tensor { .. }) => true,
        (k, v) => kind_of(v).as_ref() == Some(k),
    }
}

/// Records `rows` of `d` as one Arrow batch (one column per
/// [`Dataset::columns`] entry; see the module docs for the types). The
/// records are read into memory: export a large file in ranges.
pub fn record_batch(d: &dyn Dataset, rows: Range<u64>) -> Result<RecordBatch, Error> {
    let records = d.records(rows)?;
    let cols = d.columns();
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
    for (j, c) in cols.iter().enumerate() {
        let column: Vec<&Value> = records
            .iter()
            .map(|r| r.get(j).unwrap_or(&Value::Null))
            .collect();
        let mut kind = column.iter().find_map(|v| kind_of(v)).unwrap_or(Kind::Null);
        if !column.iter().all(|v| fits(&kind, v)) {
            kind = Kind::Json;
        }
        let (array, meta) = column_array(&kind, &column)?;
        // Nullable always: whether a value may be missing is the format's
        // business, and batches of one file must share one schema.
        let mut field = Field::new(&c.name, array.data_type().clone(), true);
        if let Some(m) = meta {
            field = field.with_metadata(m);
        }
        fields.push(field);
        arrays.push(array);
    }
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(records.len()));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(arrow_err)
}

fn nulls_of(column: &[&Value]) -> Option<NullBuffer> {
    let valid: Vec<bool> = column.iter().map(|v| !matches!(v, Value::Null)).collect();
    if valid.iter().all(|&b| b) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

type ColumnOut = (ArrayRef, Option<HashMap<String, String>>);

fn column_array(kind: &Kind, column: &[&Value]) -> Result<ColumnOut, Error> {
    let nulls = nulls_of(column);
    let n = column.len();
    let array: ArrayRef = match kind {
        Kind::Null => Arc::new(NullArray::new(n)),
        Kind::Int => Arc::new(PrimitiveArray::<Int64Type>::new(
            column
                .iter()
                .map(|v| if let Value::Int(x) = v { *x } else { 0 })
                .collect(),
            nulls,
        )),
        Kind::UInt => Arc::new(PrimitiveArray::<UInt64Type>::new(
            column
                .iter()
                .map(|v| if let Value::UInt(x) = v { *x } else { 0 })
                .collect(),
            nulls,
        )),
        Kind::Float => Arc::new(PrimitiveArray::<Float64Type>::new(
            column
                .iter()
                .map(|v| if let Value::Float(x) = v { *x } else { 0.0 })
                .collect(),
            nulls,
        )),
        Kind::Bool => Arc::new(BooleanArray::new(
            column
                .iter()
                .map(|v| matches!(v, Value::Bool(true)))
                .collect(),
            nulls,
        )),
        Kind::Text => Arc::new(StringArray::from(
            column
                .iter()
                .map(|v| match v {
                    Value::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )),
        Kind::Json => Arc::new(StringArray::from(
            column
                .iter()
                .map(|v| match v {
                    Value::Null => None,
                    v => Some(v.to_json()),
                })
                .collect::<Vec<_>>(),
        )),
        Kind::Bytes => Arc::new(BinaryArray::from(
            column
                .iter()
                .map(|v| match v {
                    Value::Bytes(b) | Value::Tensor { data: b, .. } => Some(b.as_slice()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        )),
        Kind::Tensor(p, shape) => {
            let per: usize = shape.iter().map(|&d| d as usize).product();
            let width = per * p.size();
            let mut flat = Vec::with_capacity(n * width);
            for v in column {
                match v {
                    Value::Tensor { data, .. } if data.len() == width => {
                        flat.extend_from_slice(data)
                    }
                    Value::Null => flat.resize(flat.len() + width, 0),
                    _ => {
                        return Err(Error {
                            format: None,
                            kind: "arrow".into(),
                            message: format!("a tensor of {} bytes, {width} expected", {
                                match v {
                                    Value::Tensor { data, .. } => data.len(),
                                    _ => 0,
                                }
                            }),
                        });
                    }
                }
            }
            if shape.is_empty() {
                p.array(&flat, nulls)
            } else {
                let values = p.array(&flat, None);
                let item = Arc::new(Field::new("item", p.data_type(), false));
                let size = i32::try_from(per).map_err(|_| Error {
                    format: None,
                    kind: "arrow".into(),
                    message: format!("tensors of {per} elements are too large for Arrow"),
                })?;
                let list =
                    FixedSizeListArray::try_new(item, size, values, nulls).map_err(arrow_err)?;
                let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
                let meta = HashMap::from([("shape".to_string(), format!("[{}]", dims.join(", ")))]);
                return Ok((Arc::new(list), Some(meta)));
            }
        }
    };
    Ok((array, None))
}

/// IDV columns `rows` in their own types: every live column, read with
/// [`crate::idv::Reader::read_rows`] (only the blocks the range needs).
///
/// Integers and floats keep their width; `Boolean` is `Boolean`; text is
/// `Utf8` (a lone surrogate half becomes U+FFFD); keys are unsigned
/// integers with key 0 (missing) as null; `TimeSpan` and `DateTime` are
/// `Int64` ticks of 100 ns (field metadata `idv.type` says which);
/// `DateTimeOffset` is its text form; `DataViewRowId` is 16 bytes; vectors
/// of known size are `FixedSizeList`s (sparse ones densified with the
/// item's default), variable vectors `List`s.
#[cfg(feature = "idv")]
pub fn idv_record_batch(r: &crate::idv::Reader, rows: Range<u64>) -> Result<RecordBatch, Error> {
    let end = rows.end.min(r.row_count());
    let rows = rows.start.min(end)..end;
    let e = |x: crate::idv::Error| Error {
        format: Some(crate::Format::Idv),
        kind: x.kind().as_str().to_string(),
        message: x.to_string(),
    };
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (k, c) in r.columns().iter().enumerate() {
        if c.is_dead() {
            continue;
        }
        let Some(ty) = c.ty() else { continue };
        let values = r.read_rows(k, rows.clone()).map_err(e)?;
        let array = idv::array(&values, ty)?;
        // Keys (0 = missing) are the only IDV values that can be null.
        let nullable = matches!(values, crate::idv::Values::Key(_));
        let mut field = Field::new(&c.name, array.data_type().clone(), nullable);
        if let Some(t) = idv::time_kind(&values) {
            field = field.with_metadata(HashMap::from([("idv.type".to_string(), t.to_string())]));
        }
        fields.push(field);
        arrays.push(array);
    }
    let options = arrow_array::RecordBatchOptions::new()
        .with_row_count(Some(usize::try_from(rows.end - rows.start).unwrap_or(0)));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(arrow_err)
}

#[cfg(feature = "idv")]
mod idv {
    use super::*;
    use crate::idv::{ColumnType, Values};

    pub(super) fn time_kind(v: &Values) -> Option<&'static str> {
        match v {
            Values::TimeSpan(_) => Some("TimeSpan"),
            Values::DateTime(_) => Some("DateTime"),
            _ => None,
        }
    }

    fn prim<T: arrow_array::ArrowPrimitiveType>(v: &[T::Native]) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::from(v.to_vec()),
            None,
        ))
    }

    fn bad(m: String) -> Error {
        Error {
            format: Some(crate::Format::Idv),
            kind: "unsupported".into(),
            message: m,
        }
    }

    /// The Arrow array of one column's values.
    pub(super) fn array(v: &Values, ty: &ColumnType) -> Result<ArrayRef, Error> {
        Ok(match v {
            Values::I8(x) => prim::<Int8Type>(x),
            Values::U8(x) => prim::<UInt8Type>(x),
            Values::I16(x) => prim::<Int16Type>(x),
            Values::U16(x) => prim::<UInt16Type>(x),
            Values::I32(x) => prim::<Int32Type>(x),
            Values::U32(x) => prim::<UInt32Type>(x),
            Values::I64(x) | Values::TimeSpan(x) | Values::DateTime(x) => prim::<Int64Type>(x),
            Values::U64(x) => prim::<UInt64Type>(x),
            Values::F32(x) => prim::<Float32Type>(x),
            Values::F64(x) => prim::<Float64Type>(x),
            Values::Bool(x) => Arc::new(BooleanArray::from(x.clone())),
            Values::Text(_) | Values::DateTimeOffset(_) => Arc::new(StringArray::from(
                (0..v.len())
                    .map(|i| crate::idv::render::text_scalar(v, i))
                    .collect::<Vec<_>>(),
            )),
            Values::RowId(x) => Arc::new(
                arrow_array::FixedSizeBinaryArray::try_from_iter(x.iter().map(|r| r.to_le_bytes()))
                    .map_err(arrow_err)?,
            ),
            Values::Key(x) => {
                let nulls = NullBuffer::from(x.iter().map(|&k| k != 0).collect::<Vec<_>>());
                let nulls = (nulls.null_count() > 0).then_some(nulls);
                use crate::idv::{ItemType, KeyWidth};
                let width = match ty.item() {
                    ItemType::Key { width, .. } => width,
                    _ => KeyWidth::U64,
                };
                match width {
                    KeyWidth::U8 => Arc::new(PrimitiveArray::<UInt8Type>::new(
                        x.iter().map(|&k| k as u8).collect(),
                        nulls,
                    )),
                    KeyWidth::U16 => Arc::new(PrimitiveArray::<UInt16Type>::new(
                        x.iter().map(|&k| k as u16).collect(),
                        nulls,
                    )),
                    KeyWidth::U32 => Arc::new(PrimitiveArray::<UInt32Type>::new(
                        x.iter().map(|&k| k as u32).collect(),
                        nulls,
                    )),
                    _ => Arc::new(PrimitiveArray::<UInt64Type>::new(
                        x.iter().copied().collect(),
                        nulls,
                    )),
                }
            }
            Values::Vector(vv) => {
                let item_ty = ColumnType::Scalar(ty.item());
                let mut flat = vv.values().empty_like();
                let mut offsets = vec![0i32];
                for i in 0..vv.len() {
                    let d = vv
                        .dense(i)
                        .ok_or_else(|| bad(format!("vector {i} is malformed")))?;
                    if !flat.append_from(&d, 0..d.len()) {
                        return Err(bad(format!("vector {i} has another item type")));
                    }
                    let n = i32::try_from(flat.len())
                        .map_err(|_| bad("vectors too large for an Arrow list".into()))?;
                    offsets.push(n);
                }
                let values = array(&flat, &item_ty)?;
                let item = Arc::new(Field::new("item", values.data_type().clone(), true));
                let fixed = match ty {
                    ColumnType::Vector { dims, .. } if !dims.is_empty() => {
                        Some(dims.iter().map(|&d| u64::from(d)).product::<u64>())
                    }
                    _ => None,
                };
                match fixed.and_then(|s| i32::try_from(s).ok()) {
                    Some(size) if size > 0 => Arc::new(
                        FixedSizeListArray::try_new(item, size, values, None).map_err(arrow_err)?,
                    ),
                    _ => Arc::new(
                        ListArray::try_new(
                            item,
                            OffsetBuffer::new(ScalarBuffer::from(offsets)),
                            values,
                            None,
                        )
                        .map_err(arrow_err)?,
                    ),
                }
            }
            other => {
                return Err(bad(format!(
                    "IDV values {} have no Arrow export",
                    other.len()
                )));
            }
        })
    }
}
