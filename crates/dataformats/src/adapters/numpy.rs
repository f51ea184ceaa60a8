//! numpy dtypes as Arrow, shared by the Bloscpack and BLZ/bcolz adapters.
//!
//! A row is one element of the array's first axis: a scalar for a 1-d
//! array, a tensor of the remaining axes otherwise. A structured dtype
//! gives one column per named field (numpy's unnamed padding is left
//! out), each a tensor of the outer axes and the field's own subarray.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, TimeUnit};

use crate::bloscpack::dtype::{ByteOrder, Dtype, Scalar, ScalarKind};
use crate::dataset::Error;
use crate::typed::{FixedCells, VarCells, fixed_array, swap_bytes, tensor_field};

/// One column of numpy rows.
#[derive(Debug, Clone)]
pub(crate) struct NpColumn {
    pub name: String,
    /// The element type; `None` for a nested structured field (kept as raw bytes).
    pub scalar: Option<Scalar>,
    /// The element's size in bytes.
    pub itemsize: usize,
    /// Shape of the column's value in one row.
    pub shape: Vec<u64>,
    /// Byte offset of the field in a record.
    pub offset: usize,
    /// Elements of the field in one record (its subarray size).
    pub per_record: usize,
    /// Records per row (the product of the outer axes).
    pub records_per_row: usize,
    /// Bytes of one record.
    pub record_size: usize,
    /// numpy's spelling of the type (for the field metadata).
    pub typestr: String,
}

/// The columns of rows of `dtype` whose value has shape `outer` (the
/// array's shape without its first axis); `name` for a scalar dtype.
pub(crate) fn columns(dtype: &Dtype, outer: &[u64], name: &str) -> Result<Vec<NpColumn>, Error> {
    let records_per_row = outer
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::invalid(format!("shape {outer:?} is too large")))?;
    let record_size = dtype.itemsize();
    match dtype {
        Dtype::Scalar(s) => Ok(vec![NpColumn {
            name: name.to_string(),
            scalar: Some(s.clone()),
            itemsize: s.itemsize,
            shape: outer.to_vec(),
            offset: 0,
            per_record: 1,
            records_per_row,
            record_size,
            typestr: s.typestr(),
        }]),
        Dtype::Record(fields) => {
            let mut at = 0usize;
            let mut out = Vec::new();
            for f in fields {
                let per = f
                    .shape
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| Error::invalid(format!("field {:?} is too large", f.name)))?;
                let size = f.dtype.itemsize().saturating_mul(per);
                if !f.name.is_empty() {
                    out.push(NpColumn {
                        name: f.name.clone(),
                        scalar: f.dtype.as_scalar().cloned(),
                        itemsize: f.dtype.itemsize(),
                        shape: outer.iter().chain(&f.shape).copied().collect(),
                        offset: at,
                        per_record: per,
                        records_per_row,
                        record_size,
                        typestr: match f.dtype.as_scalar() {
                            Some(s) => s.typestr(),
                            None => f.dtype.python_literal(),
                        },
                    });
                }
                at = at.saturating_add(size);
            }
            Ok(out)
        }
    }
}

fn unit(u: Option<&str>) -> Option<TimeUnit> {
    Some(match u? {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return None,
    })
}

/// The Arrow type of one element, and whether it is a variable-width
/// string (`S`/`U` scalars, which lose numpy's trailing NUL padding).
fn elem_type(c: &NpColumn) -> DataType {
    let Some(s) = &c.scalar else {
        return DataType::FixedSizeBinary(i32::try_from(c.itemsize).unwrap_or(i32::MAX));
    };
    let w = s.itemsize;
    let scalar_col = c.shape.is_empty();
    match (s.kind, w) {
        (ScalarKind::Bool, 1) => DataType::Boolean,
        (ScalarKind::Int, 1) => DataType::Int8,
        (ScalarKind::Int, 2) => DataType::Int16,
        (ScalarKind::Int, 4) => DataType::Int32,
        (ScalarKind::Int, 8) => DataType::Int64,
        (ScalarKind::UInt, 1) => DataType::UInt8,
        (ScalarKind::UInt, 2) => DataType::UInt16,
        (ScalarKind::UInt, 4) => DataType::UInt32,
        (ScalarKind::UInt, 8) => DataType::UInt64,
        (ScalarKind::Float, 2) => DataType::Float16,
        (ScalarKind::Float, 4) => DataType::Float32,
        (ScalarKind::Float, 8) => DataType::Float64,
        (ScalarKind::Complex, 8) => {
            DataType::FixedSizeList(crate::typed::item(DataType::Float32, false), 2)
        }
        (ScalarKind::Complex, 16) => {
            DataType::FixedSizeList(crate::typed::item(DataType::Float64, false), 2)
        }
        (ScalarKind::Datetime, 8) => match unit(s.unit.as_deref()) {
            Some(u) => DataType::Timestamp(u, None),
            None => DataType::Int64,
        },
        (ScalarKind::Timedelta, 8) => match unit(s.unit.as_deref()) {
            Some(u) => DataType::Duration(u),
            None => DataType::Int64,
        },
        (ScalarKind::Bytes, _) if scalar_col => DataType::Binary,
        (ScalarKind::Unicode, _) if scalar_col => DataType::Utf8,
        _ => DataType::FixedSizeBinary(i32::try_from(w.max(1)).unwrap_or(i32::MAX)),
    }
}

/// The column's Arrow field: a scalar, or a tensor of its shape.
pub(crate) fn field(c: &NpColumn) -> Result<Field, Error> {
    let et = elem_type(c);
    let nullable = c.shape.is_empty()
        && matches!(
            c.scalar.as_ref().map(|s| s.kind),
            Some(ScalarKind::Datetime | ScalarKind::Timedelta)
        );
    tensor_field(&c.name, et, &c.shape, nullable, &c.typestr)
}

/// The column's array for `n` rows stored back to back in `rows`
/// (C order, `record_size * records_per_row` bytes each).
pub(crate) fn array(
    c: &NpColumn,
    dt: &DataType,
    rows: &Buffer,
    n: usize,
    limits: &crate::core::Limits,
) -> Result<ArrayRef, Error> {
    let field_bytes = c.itemsize.saturating_mul(c.per_record);
    let row_size = c.record_size.saturating_mul(c.records_per_row);
    if rows.len() != row_size.saturating_mul(n) {
        return Err(Error::invalid(format!(
            "{n} rows of {row_size} bytes, got {} bytes",
            rows.len()
        )));
    }
    let whole = c.record_size == field_bytes && c.offset == 0;
    if whole && as_stored(c, dt) {
        // The rows are the column's values as they are: the array holds
        // the buffer itself (the file's memory when it is shared).
        return fixed_array(dt, rows.clone(), n, None);
    }
    // The column's bytes, row after row.
    let mut bytes = Vec::new();
    limits
        .check_alloc(
            "numpy column",
            (field_bytes as u64).saturating_mul((c.records_per_row * n) as u64),
        )
        .map_err(Error::limit)?;
    bytes.reserve(
        field_bytes
            .saturating_mul(c.records_per_row)
            .saturating_mul(n),
    );
    if whole {
        bytes.extend_from_slice(rows);
    } else {
        for rec in rows.chunks_exact(c.record_size.max(1)) {
            bytes.extend_from_slice(
                rec.get(c.offset..c.offset + field_bytes)
                    .ok_or_else(|| Error::invalid("field beyond its record"))?,
            );
        }
    }
    let Some(s) = &c.scalar else {
        let len = bytes.len() / fixed_or(dt, 1);
        return fixed_array(dt, Buffer::from_vec(bytes), len, None);
    };
    if s.order == ByteOrder::Big {
        let w = match s.kind {
            ScalarKind::Complex => s.itemsize / 2,
            ScalarKind::Unicode => 4,
            ScalarKind::Bytes | ScalarKind::Void => 1,
            _ => s.itemsize,
        };
        swap_bytes(&mut bytes, w);
    }
    match dt {
        DataType::Binary | DataType::Utf8 => {
            let mut cells = VarCells::new(n, limits);
            for v in bytes.chunks_exact(s.itemsize.max(1)) {
                if s.kind == ScalarKind::Unicode {
                    let mut text = String::new();
                    for (k, ch) in v.chunks_exact(4).enumerate() {
                        let code = u32::from_le_bytes(ch.try_into().unwrap_or([0; 4]));
                        let c = char::from_u32(code).ok_or_else(|| {
                            Error::invalid(format!(
                                "code point {code:#x} at character {k} is not Unicode"
                            ))
                        })?;
                        text.push(c);
                    }
                    let t = text.trim_end_matches('\0');
                    cells.push(Some(t.as_bytes()))?;
                } else {
                    let end = v.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                    cells.push(Some(v.get(..end).unwrap_or_default()))?;
                }
            }
            if s.itemsize == 0 {
                for _ in 0..n {
                    cells.push(Some(&[]))?;
                }
            }
            cells.finish(dt)
        }
        DataType::Timestamp(..) | DataType::Duration(_) => {
            // NaT (i64::MIN) is a null.
            let mut cells = FixedCells::new(dt, n, limits)?;
            for v in bytes.chunks_exact(8) {
                let x = i64::from_le_bytes(v.try_into().unwrap_or([0; 8]));
                cells.push((x != i64::MIN).then_some(v))?;
            }
            cells.finish(dt)
        }
        _ => fixed_array(dt, Buffer::from_vec(bytes), n, None),
    }
}

/// Whether column `c`'s stored bytes are already the Arrow values of `dt`:
/// little-endian (or one-byte) fixed-width numbers, or a nested field kept
/// as raw bytes; not text, booleans (bits in Arrow) or times (NaT is null).
fn as_stored(c: &NpColumn, dt: &DataType) -> bool {
    let Some(s) = &c.scalar else {
        return crate::typed::fixed_width(dt).is_some();
    };
    let mut leaf = dt;
    while let DataType::FixedSizeList(f, _) = leaf {
        leaf = f.data_type();
    }
    s.order != ByteOrder::Big
        && crate::typed::fixed_width(dt).is_some()
        && !matches!(
            leaf,
            DataType::Boolean | DataType::Timestamp(..) | DataType::Duration(_)
        )
}

fn fixed_or(dt: &DataType, d: usize) -> usize {
    crate::typed::fixed_width(dt).unwrap_or(d).max(1)
}

/// A schema of `cols`.
pub(crate) fn schema(cols: &[NpColumn]) -> Result<arrow_schema::SchemaRef, Error> {
    let fields = cols.iter().map(field).collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(arrow_schema::Schema::new(fields)))
}
