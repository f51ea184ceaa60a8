//! Typed batches into ML.NET's binary dataview (IDV).
//!
//! A field whose `dataformats.type` names an IDV type (`Key<UInt32, 0-9>`,
//! `Vector<Single, 3>`, ...) and whose Arrow type is the one the IDV view
//! gives that type gets exactly that column type back, with its annotations
//! (`dataformats.annotation.<kind>` and `dataformats.annotation_type.<kind>`).
//! Any other field is mapped from its Arrow type: integers, floats,
//! booleans and text to their scalar types, dictionaries of text to keys
//! with the dictionary as KeyValues, fixed-size lists to vectors of that
//! size (tensor shape kept), lists to variable vectors, timestamps to
//! DateTime (DateTimeOffset with a time zone), durations to TimeSpan,
//! FixedSizeBinary(16) to DataViewRowId. IDV has no missing values except
//! keys: a null elsewhere is refused, or with `lossy` written as the
//! type's default and reported; columns of other types are refused, or
//! with `lossy` left out and reported.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, TimeUnit};

use super::{ChangeKind, Report};
use crate::dataset::{BatchStream, Error};
use crate::idv::{
    ColumnSpec, ColumnType, DateTimeOffset, ItemType, KeyWidth, Values, VectorValues, Writer,
    WriterOptions,
};
use crate::typed::{ANNOTATION_PREFIX, ANNOTATION_TYPE_PREFIX, EXTENSION_METADATA, TYPE_KEY};

/// IDV target settings: the writer's (compression, rows per block, level).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IdvOptions {
    /// The IDV writer's settings.
    pub writer: WriterOptions,
    /// CSV input: ML.NET TextLoader columns (each names its IDV type and
    /// its CSV fields) instead of types inferred from the text.
    pub text: Option<super::text::TextLoader>,
}

/// Ticks (100 ns) between 0001-01-01 and the Unix epoch.
const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;

fn data_err(message: String) -> Error {
    Error::Data {
        format: Some(crate::Format::Idv),
        message,
    }
}

/// An item type by ML.NET's name (as `ColumnType`'s display writes it).
fn parse_item(s: &str) -> Option<ItemType> {
    Some(match s.trim() {
        "SByte" => ItemType::I8,
        "Byte" => ItemType::U8,
        "Int16" => ItemType::I16,
        "UInt16" => ItemType::U16,
        "Int32" => ItemType::I32,
        "UInt32" => ItemType::U32,
        "Int64" => ItemType::I64,
        "UInt64" => ItemType::U64,
        "Single" => ItemType::F32,
        "Double" => ItemType::F64,
        "Boolean" => ItemType::Bool,
        "String" => ItemType::Text,
        "TimeSpan" => ItemType::TimeSpan,
        "DateTime" => ItemType::DateTime,
        "DateTimeOffset" => ItemType::DateTimeOffset,
        "DataViewRowId" => ItemType::RowId,
        k => {
            let inner = k.strip_prefix("Key<")?.strip_suffix('>')?;
            let (w, range) = inner.split_once(',')?;
            let width = match w.trim() {
                "Byte" => KeyWidth::U8,
                "UInt16" => KeyWidth::U16,
                "UInt32" => KeyWidth::U32,
                "UInt64" => KeyWidth::U64,
                _ => return None,
            };
            let last: u64 = range.trim().strip_prefix("0-")?.parse().ok()?;
            let count = last.checked_add(1)?;
            (count <= width.max()).then_some(ItemType::Key { width, count })?
        }
    })
}

/// Splits at the commas that are not inside `<...>`.
fn top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s.get(start..i).unwrap_or_default());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s.get(start..).unwrap_or_default());
    out
}

/// A column type as `ColumnType`'s display writes it.
pub(crate) fn parse_type(s: &str) -> Option<ColumnType> {
    let s = s.trim();
    let Some(inner) = s.strip_prefix("Vector<").and_then(|x| x.strip_suffix('>')) else {
        return parse_item(s).map(ColumnType::Scalar);
    };
    let parts = top_level(inner);
    let (first, dims) = parts.split_first()?;
    let item = parse_item(first)?;
    if dims.is_empty() {
        return Some(ColumnType::var_vector(item));
    }
    let dims: Vec<u32> = dims
        .iter()
        .map(|d| match d.trim() {
            "*" => Some(0),
            d => d.parse().ok(),
        })
        .collect::<Option<_>>()?;
    let total = dims.iter().try_fold(1u32, |a, &d| a.checked_mul(d))?;
    (i32::try_from(total).is_ok()).then_some(ColumnType::Vector { item, dims })
}

fn item_of(dt: &DataType) -> Option<ItemType> {
    Some(match dt {
        DataType::Int8 => ItemType::I8,
        DataType::UInt8 => ItemType::U8,
        DataType::Int16 => ItemType::I16,
        DataType::UInt16 => ItemType::U16,
        DataType::Int32 => ItemType::I32,
        DataType::UInt32 => ItemType::U32,
        DataType::Int64 => ItemType::I64,
        DataType::UInt64 => ItemType::U64,
        DataType::Float32 => ItemType::F32,
        DataType::Float64 => ItemType::F64,
        DataType::Boolean => ItemType::Bool,
        DataType::Utf8 => ItemType::Text,
        DataType::Timestamp(_, None) => ItemType::DateTime,
        DataType::Timestamp(_, Some(_)) => ItemType::DateTimeOffset,
        DataType::Duration(_) => ItemType::TimeSpan,
        DataType::FixedSizeBinary(16) => ItemType::RowId,
        _ => return None,
    })
}

fn key_item(entries: usize) -> ItemType {
    ItemType::Key {
        width: KeyWidth::U32,
        count: entries.max(1) as u64,
    }
}

/// The column type an Arrow field maps to without `dataformats.type`
/// (`first`: the first batch's column, for dictionaries).
fn infer(f: &Field, first: Option<&ArrayRef>) -> Option<ColumnType> {
    let dict = || {
        first
            .and_then(|a| crate::typed::dictionary_entries(a.as_ref()))
            .map_or(0, |d| d.len())
    };
    let item = |dt: &DataType| match dt {
        DataType::Dictionary(k, v) if k.is_dictionary_key_type() && **v == DataType::Utf8 => {
            Some(key_item(dict()))
        }
        other => item_of(other),
    };
    Some(match f.data_type() {
        DataType::FixedSizeList(it, n) => {
            let dims = f
                .metadata()
                .get(EXTENSION_METADATA)
                .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
                .and_then(|v| {
                    v.get("shape")?
                        .as_array()?
                        .iter()
                        .map(|d| d.as_u64().and_then(|d| u32::try_from(d).ok()))
                        .collect::<Option<Vec<u32>>>()
                })
                .filter(|d| d.iter().map(|&x| u64::from(x)).product::<u64>() == *n as u64)
                .unwrap_or_else(|| vec![u32::try_from(*n).unwrap_or(0)]);
            if dims.contains(&0) {
                return None;
            }
            ColumnType::Vector {
                item: item(it.data_type())?,
                dims,
            }
        }
        DataType::List(it) => ColumnType::var_vector(item(it.data_type())?),
        dt => ColumnType::Scalar(item(dt)?),
    })
}

/// The column type of `f`: its own IDV type when the Arrow type is the
/// one the IDV view gives it, else inferred from the Arrow type.
fn column_type(f: &Field, first: Option<&ArrayRef>) -> Option<ColumnType> {
    if let Some(ty) = f.metadata().get(TYPE_KEY).and_then(|t| parse_type(t)) {
        let kv = matches!(f.data_type(), DataType::Dictionary(..))
            || matches!(f.data_type(), DataType::List(i) | DataType::FixedSizeList(i, _) if matches!(i.data_type(), DataType::Dictionary(..)));
        let kv = kv.then(|| Arc::new(StringArray::from(Vec::<&str>::new())));
        if let Ok((view, _)) = crate::adapters::idv::typed::type_field(f.name(), &ty, kv)
            && view.data_type() == f.data_type()
        {
            return Some(ty);
        }
    }
    infer(f, first)
}

/// The annotations `f`'s metadata carries, as the writer takes them.
fn annotations(f: &Field) -> Result<Vec<(String, ColumnType, Values)>, Error> {
    let mut out = Vec::new();
    // The file's order where the view kept it, then any others by name.
    let order: Vec<String> = f
        .metadata()
        .get(crate::typed::ANNOTATION_ORDER_KEY)
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    let rank = |k: &str| {
        let kind = k.trim_start_matches(ANNOTATION_PREFIX);
        order.iter().position(|o| o == kind).unwrap_or(usize::MAX)
    };
    let mut kinds: Vec<&String> = f
        .metadata()
        .keys()
        .filter(|k| k.starts_with(ANNOTATION_PREFIX))
        .collect();
    kinds.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    for key in kinds {
        let kind = key.trim_start_matches(ANNOTATION_PREFIX);
        let Some(ty) = f
            .metadata()
            .get(&format!("{ANNOTATION_TYPE_PREFIX}{kind}"))
            .and_then(|t| parse_type(t))
        else {
            continue;
        };
        let bad = |m: String| Error::invalid(format!("{:?}: annotation {kind}: {m}", f.name()));
        let (af, _) = crate::adapters::idv::typed::type_field(kind, &ty, None)?;
        let text = f.metadata().get(key).map(String::as_str).unwrap_or("null");
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let a =
            super::json::decode(af.data_type(), &[Some(&v)], None).map_err(|e| bad(e.message))?;
        let vals = to_values(&a, &ty, &mut Nulls::refuse(kind)).map_err(bad)?;
        out.push((kind.to_string(), ty, vals));
    }
    Ok(out)
}

/// What to do with a null where IDV has no missing value.
struct Nulls<'a> {
    field: &'a str,
    lossy: bool,
    first: Option<u64>,
    count: u64,
    base: u64,
}

impl<'a> Nulls<'a> {
    fn refuse(field: &'a str) -> Self {
        Nulls {
            field,
            lossy: false,
            first: None,
            count: 0,
            base: 0,
        }
    }

    fn null(&mut self, i: usize) -> Result<(), String> {
        let record = self.base + i as u64;
        if !self.lossy {
            return Err(format!(
                "record {record}: a missing value in {:?} (IDV has none but keys); pass --lossy \
                 to write the type's default",
                self.field
            ));
        }
        self.first.get_or_insert(record);
        self.count += 1;
        Ok(())
    }
}

fn prim<T: ArrowPrimitiveType>(
    a: &dyn Array,
    nulls: &mut Nulls<'_>,
) -> Result<Vec<T::Native>, String> {
    let p = a
        .as_primitive_opt::<T>()
        .ok_or_else(|| format!("{} is not {}", a.data_type(), T::DATA_TYPE))?;
    if p.null_count() > 0 {
        for i in 0..p.len() {
            if p.is_null(i) {
                nulls.null(i)?;
            }
        }
    }
    Ok(p.values().to_vec())
}

/// Ticks of value `i` of a time array: the view's struct (its `ticks`) or
/// a plain Arrow timestamp/duration.
fn ticks(a: &dyn Array) -> Result<Vec<i64>, String> {
    if let Some(s) = a.as_struct_opt() {
        let t = s
            .column_by_name("ticks")
            .ok_or("a time struct without ticks")?;
        return Ok(t
            .as_primitive_opt::<Int64Type>()
            .ok_or("ticks are not Int64")?
            .values()
            .to_vec());
    }
    let per_tick: (i64, i64) = match a.data_type() {
        DataType::Timestamp(u, _) | DataType::Duration(u) => match u {
            TimeUnit::Second => (10_000_000, 1),
            TimeUnit::Millisecond => (10_000, 1),
            TimeUnit::Microsecond => (10, 1),
            TimeUnit::Nanosecond => (1, 100),
        },
        other => return Err(format!("{other} is not a time")),
    };
    let epoch = if matches!(a.data_type(), DataType::Timestamp(..)) {
        UNIX_EPOCH_TICKS
    } else {
        0
    };
    let mut out = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        let x = crate::typed::time_count(a, i).unwrap_or(0);
        let t = x
            .checked_mul(per_tick.0)
            .map(|t| t.div_euclid(per_tick.1))
            .and_then(|t| t.checked_add(epoch))
            .ok_or_else(|| format!("value {i}: {x} is outside .NET's time range"))?;
        out.push(t);
    }
    Ok(out)
}

/// A flat array as IDV values of `item`.
fn flat(a: &dyn Array, item: ItemType, nulls: &mut Nulls<'_>) -> Result<Values, String> {
    Ok(match item {
        ItemType::I8 => Values::I8(prim::<Int8Type>(a, nulls)?),
        ItemType::U8 => Values::U8(prim::<UInt8Type>(a, nulls)?),
        ItemType::I16 => Values::I16(prim::<Int16Type>(a, nulls)?),
        ItemType::U16 => Values::U16(prim::<UInt16Type>(a, nulls)?),
        ItemType::I32 => Values::I32(prim::<Int32Type>(a, nulls)?),
        ItemType::U32 => Values::U32(prim::<UInt32Type>(a, nulls)?),
        ItemType::I64 => Values::I64(prim::<Int64Type>(a, nulls)?),
        ItemType::U64 => Values::U64(prim::<UInt64Type>(a, nulls)?),
        ItemType::F32 => Values::F32(prim::<Float32Type>(a, nulls)?),
        ItemType::F64 => Values::F64(prim::<Float64Type>(a, nulls)?),
        ItemType::Bool => {
            let b = a.as_boolean_opt().ok_or("not a boolean array")?;
            let mut out = Vec::with_capacity(b.len());
            for (i, x) in b.iter().enumerate() {
                if x.is_none() {
                    nulls.null(i)?;
                }
                out.push(x.unwrap_or(false));
            }
            Values::Bool(out)
        }
        ItemType::Text => {
            let s = a.as_string_opt::<i32>().ok_or("not a text array")?;
            let mut t = crate::idv::TextValues::default();
            for (i, x) in s.iter().enumerate() {
                if x.is_none() {
                    nulls.null(i)?;
                }
                t.push(x.unwrap_or(""));
            }
            Values::Text(t)
        }
        ItemType::TimeSpan | ItemType::DateTime | ItemType::DateTimeOffset => {
            for i in 0..a.len() {
                if a.is_null(i) {
                    nulls.null(i)?;
                }
            }
            let t = ticks(a)?;
            match item {
                ItemType::TimeSpan => Values::TimeSpan(t),
                ItemType::DateTime => Values::DateTime(t),
                _ => {
                    let off: Vec<i16> = match a.as_struct_opt() {
                        Some(s) => s
                            .column_by_name("offset_minutes")
                            .and_then(|c| c.as_primitive_opt::<Int16Type>())
                            .ok_or("DateTimeOffset without offset_minutes")?
                            .values()
                            .to_vec(),
                        None => vec![0; t.len()],
                    };
                    Values::DateTimeOffset(
                        t.iter()
                            .zip(off)
                            .map(|(&ticks, offset_minutes)| DateTimeOffset {
                                ticks,
                                offset_minutes,
                            })
                            .collect(),
                    )
                }
            }
        }
        ItemType::RowId => {
            let b = a
                .as_fixed_size_binary_opt()
                .ok_or("not FixedSizeBinary(16)")?;
            let mut out = Vec::with_capacity(b.len());
            for i in 0..b.len() {
                if b.is_null(i) {
                    nulls.null(i)?;
                }
                let v: [u8; 16] = b.value(i).try_into().map_err(|_| "not 16 bytes")?;
                out.push(u128::from_le_bytes(v));
            }
            Values::RowId(out)
        }
        ItemType::Key { width, .. } => {
            let mut out = Vec::with_capacity(a.len());
            match a.data_type() {
                DataType::Dictionary(..) => {
                    for i in 0..a.len() {
                        out.push(crate::typed::dict_key(a, i).map_or(0, |k| k as u64 + 1));
                    }
                }
                DataType::UInt64 => {
                    let p = a.as_primitive::<UInt64Type>();
                    out.extend(p.iter().map(|x| x.unwrap_or(0)));
                }
                DataType::UInt32 => {
                    let p = a.as_primitive::<UInt32Type>();
                    out.extend(p.iter().map(|x| u64::from(x.unwrap_or(0))));
                }
                other => return Err(format!("{other} cannot hold keys")),
            }
            // Keys above the count are kept (ML.NET's loader does not check
            // them either); they must fit the key's item type.
            if let Some(k) = out.iter().find(|&&k| k > width.max()) {
                return Err(format!("key {k} does not fit {}", width.name()));
            }
            Values::Key(out)
        }
    })
}

/// A column of `ty` as IDV values.
fn to_values(a: &ArrayRef, ty: &ColumnType, nulls: &mut Nulls<'_>) -> Result<Values, String> {
    let item = ty.item();
    let ColumnType::Vector { .. } = ty else {
        return flat(a.as_ref(), item, nulls);
    };
    let mut vv = VectorValues::new(item);
    let dim = ty.vector_size().unwrap_or(0);
    let mut push = |vals: &Values| {
        if vv.push_dense(vals) {
            Ok(())
        } else {
            Err("vector items of another type".to_string())
        }
    };
    match a.data_type() {
        DataType::FixedSizeList(..) => {
            let l = a.as_fixed_size_list();
            let all = flat(l.values().as_ref(), item, nulls)?;
            let n = l.value_length() as usize;
            for i in 0..l.len() {
                if l.is_null(i) {
                    nulls.null(i)?;
                }
                push(&all.slice(i * n..(i + 1) * n).ok_or("vector out of range")?)?;
            }
        }
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let all = flat(l.values().as_ref(), item, nulls)?;
            for (i, w) in l.value_offsets().windows(2).enumerate() {
                if l.is_null(i) {
                    nulls.null(i)?;
                }
                let (s, e) = match w {
                    [s, e] => (*s as usize, *e as usize),
                    _ => (0, 0),
                };
                push(&all.slice(s..e).ok_or("vector out of range")?)?;
            }
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let (Some(ix), Some(vals)) = (s.column_by_name("indices"), s.column_by_name("values"))
            else {
                return Err("a sparse vector needs indices and values".into());
            };
            let (Some(ix), Some(vals)) = (ix.as_list_opt::<i32>(), vals.as_list_opt::<i32>())
            else {
                return Err("sparse indices and values must be lists".into());
            };
            let all = flat(vals.values().as_ref(), item, nulls)?;
            let idx = ix
                .values()
                .as_primitive_opt::<UInt32Type>()
                .ok_or("sparse indices are not UInt32")?;
            let spans = ix
                .value_offsets()
                .windows(2)
                .zip(vals.value_offsets().windows(2));
            for (i, (a, b)) in spans.enumerate() {
                let (&[a0, a1], &[b0, b1]) = (a, b) else {
                    return Err("bad list offsets".into());
                };
                let (a0, a1, b0, b1) = (a0 as usize, a1 as usize, b0 as usize, b1 as usize);
                let ids = idx.values().get(a0..a1).ok_or("indices out of range")?;
                let v = all.slice(b0..b1).ok_or("values out of range")?;
                if !vv.push_sparse(dim, ids, &v) {
                    return Err(format!(
                        "record {i}: a sparse vector that does not fit {dim} slots"
                    ));
                }
            }
        }
        other => return Err(format!("{other} is not a vector")),
    }
    Ok(Values::Vector(vv))
}

/// `a` with every dictionary in it (top level or in lists) re-keyed to
/// the entries `kv` (a key column's KeyValues): Parquet and other sources
/// may hand out their own dictionary per batch.
fn rekey(a: &ArrayRef, kv: &StringArray) -> Result<ArrayRef, String> {
    match a.data_type() {
        DataType::Dictionary(k, _) => {
            let d = a.as_any_dictionary();
            let v = d
                .values()
                .as_string_opt::<i32>()
                .ok_or("a dictionary of non-text")?;
            if v == kv {
                return Ok(a.clone());
            }
            let texts: Vec<Option<&str>> = (0..a.len())
                .map(|i| crate::typed::dict_key(a.as_ref(), i).map(|k| v.value(k)))
                .collect();
            super::json::dictionary(k, &texts, Some(kv))
                .map_err(|e| format!("value {}: {}", e.at, e.message))
        }
        DataType::List(f) => {
            let l = a.as_list::<i32>();
            let child = rekey(l.values(), kv)?;
            Ok(Arc::new(
                arrow_array::ListArray::try_new(
                    f.clone(),
                    l.offsets().clone(),
                    child,
                    l.nulls().cloned(),
                )
                .map_err(|e| e.to_string())?,
            ))
        }
        DataType::FixedSizeList(f, n) => {
            let l = a.as_fixed_size_list();
            let child = rekey(l.values(), kv)?;
            Ok(Arc::new(
                arrow_array::FixedSizeListArray::try_new(f.clone(), *n, child, l.nulls().cloned())
                    .map_err(|e| e.to_string())?,
            ))
        }
        _ => Ok(a.clone()),
    }
}

/// The KeyValues text of a column's annotations, when it has them.
fn key_values(spec: &ColumnSpec) -> Option<StringArray> {
    let (_, _, v) = spec.annotations.iter().find(|(k, _, _)| k == "KeyValues")?;
    let Values::Vector(vv) = v else { return None };
    let Values::Text(t) = vv.dense(0)? else {
        return None;
    };
    Some(StringArray::from_iter_values(t.iter()))
}

/// The first record of `a` with a missing value IDV cannot hold (keys
/// may be missing; nothing else may).
fn first_null(a: &dyn Array, ty: &ColumnType) -> Option<usize> {
    if matches!(ty.item(), ItemType::Key { .. }) {
        return None;
    }
    let child_null = |v: &ArrayRef| v.null_count() > 0;
    (0..a.len()).find(|&i| {
        a.is_null(i)
            || match a.data_type() {
                DataType::FixedSizeList(..) => child_null(&a.as_fixed_size_list().value(i)),
                DataType::List(_) => child_null(&a.as_list::<i32>().value(i)),
                _ => false,
            }
    })
}

/// Why a column is dropped.
const NO_TYPE: &str = "IDV has no column type for it";

/// The columns of `schema` IDV has a column type for (ascending), the
/// others noted in `report` as dropped (refused without `lossy`). Whether
/// a column has one depends on its field alone: the first batch only
/// gives a dictionary's key count.
pub(super) fn columns_used(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
) -> Result<Vec<usize>, Error> {
    let mut used = Vec::new();
    for (k, f) in schema.fields().iter().enumerate() {
        match column_type(f, None) {
            Some(_) => used.push(k),
            None => report.column(ChangeKind::Dropped, f.name(), NO_TYPE),
        }
    }
    report.check(lossy)?;
    Ok(used)
}

/// Writes every batch of `input` to the IDV file `output`, deflating on
/// `threads` threads (0: every core).
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &IdvOptions,
    threads: usize,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let first = input.next_batch().transpose()?;
    let mut cols = Vec::new();
    let mut specs = Vec::new();
    for (k, f) in schema.fields().iter().enumerate() {
        let Some(ty) = column_type(f, first.as_ref().map(|b| b.column(k))) else {
            report.column(ChangeKind::Dropped, f.name(), NO_TYPE);
            continue;
        };
        let mut spec = ColumnSpec::new(
            f.metadata()
                .get(crate::typed::NAME_KEY)
                .cloned()
                .unwrap_or_else(|| f.name().clone()),
            ty.clone(),
        );
        spec.annotations = annotations(f)?;
        if matches!(ty.item(), ItemType::Key { .. })
            && !spec.annotations.iter().any(|(k, _, _)| k == "KeyValues")
        {
            // A dictionary's entries are the keys' KeyValues.
            if let Some(d) = first
                .as_ref()
                .and_then(|b| crate::typed::dictionary_entries(b.column(k).as_ref()))
            {
                let mut t = crate::idv::TextValues::default();
                d.iter().for_each(|x| t.push(x));
                let mut vv = VectorValues::new(ItemType::Text);
                vv.push_dense(&Values::Text(t));
                spec.annotations.push((
                    "KeyValues".into(),
                    ColumnType::vector(ItemType::Text, d.len() as u32),
                    Values::Vector(vv),
                ));
            }
        }
        cols.push(k);
        specs.push(spec);
    }
    report.check(lossy)?;
    let kvs: Vec<Option<StringArray>> = specs.iter().map(key_values).collect();
    let mut w = Writer::create(output, specs.clone(), opts.writer).map_err(Error::Idv)?;
    w.set_threads(threads);
    let mut written = 0u64;
    let mut null_counts: Vec<(Option<u64>, u64)> = vec![(None, 0); cols.len()];
    let mut batch: Option<RecordBatch> = first;
    while let Some(b) = batch.take() {
        let mut vals = Vec::with_capacity(cols.len());
        let parts = cols
            .iter()
            .zip(specs.iter().zip(&kvs))
            .zip(null_counts.iter_mut());
        for ((&k, (spec, kv)), nc) in parts {
            let mut nulls = Nulls {
                field: &spec.name,
                lossy,
                first: nc.0,
                count: nc.1,
                base: written,
            };
            if !lossy && let Some(i) = first_null(b.column(k).as_ref(), &spec.ty) {
                return Err(Error::Lossy {
                    message: format!(
                        "record {}: a missing value in {:?} (IDV has none but keys); pass \
                             --lossy to write the type's default",
                        written + i as u64,
                        spec.name
                    ),
                });
            }
            let col = match kv {
                Some(kv) => rekey(b.column(k), kv),
                None => Ok(b.column(k).clone()),
            };
            vals.push(
                col.and_then(|c| to_values(&c, &spec.ty, &mut nulls))
                    .map_err(|m| data_err(format!("column {:?}: {m}", spec.name)))?,
            );
            *nc = (nulls.first, nulls.count);
        }
        if cols.is_empty() {
            w.add_empty_rows(b.num_rows() as u64).map_err(Error::Idv)?;
        } else {
            w.write_batch(&vals).map_err(Error::Idv)?;
        }
        written += b.num_rows() as u64;
        progress(written);
        batch = input.next_batch().transpose()?;
    }
    for (spec, (first, count)) in specs.iter().zip(&null_counts) {
        if let Some(first) = first {
            report.change_n(
                ChangeKind::NullFilled,
                &spec.name,
                *first,
                *count,
                "a missing value written as the type's default (0, NaN-free zero, empty text)",
            );
        }
    }
    w.finish().map_err(Error::Idv)?;
    report.records = written;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_parse_back_from_their_display() {
        for t in [
            ColumnType::Scalar(ItemType::F32),
            ColumnType::Scalar(ItemType::Key {
                width: KeyWidth::U8,
                count: 255,
            }),
            ColumnType::vector(ItemType::Text, 3),
            ColumnType::var_vector(ItemType::I64),
            ColumnType::Vector {
                item: ItemType::F64,
                dims: vec![2, 3],
            },
            ColumnType::Vector {
                item: ItemType::Key {
                    width: KeyWidth::U32,
                    count: 10,
                },
                dims: vec![4],
            },
        ] {
            assert_eq!(parse_type(&t.to_string()), Some(t.clone()), "{t}");
        }
        assert_eq!(parse_type("Key<Byte, 0-300>"), None);
        assert_eq!(parse_type("Vector<Single, 65536, 65536>"), None);
        assert_eq!(parse_type("Nonsense"), None);
    }
}
