//! JSON values back into Arrow arrays of a given type: the inverse of
//! [`crate::export::json_value`] (integers exact, floats as numbers or the
//! strings `"NaN"`, `"Infinity"`, `"-Infinity"`, bytes as base64, lists as
//! arrays, structs as objects, dictionary entries as their text, times as
//! integers of their unit). Used by JSON lines imports and by MLDF fields
//! that carry a nested value as JSON text.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, DictionaryArray, FixedSizeBinaryArray,
    FixedSizeListArray, ListArray, PrimitiveArray, StringArray, StructArray, new_null_array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field};
use base64::Engine as _;
use serde_json::Value as J;

/// A value that does not fit the type: where (`at`, the index among the
/// values decoded together) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The index of the value among those decoded together.
    pub at: usize,
    /// What is wrong.
    pub message: String,
}

type R<T> = Result<T, DecodeError>;

fn bad(at: usize, message: impl Into<String>) -> DecodeError {
    DecodeError {
        at,
        message: message.into(),
    }
}

/// Whether [`decode`] handles `dt` (checked before any value is read, so a
/// schema from a file cannot lead the decoder anywhere unplanned).
pub fn supported(dt: &DataType) -> bool {
    use DataType as D;
    match dt {
        D::Null
        | D::Boolean
        | D::Int8
        | D::Int16
        | D::Int32
        | D::Int64
        | D::UInt8
        | D::UInt16
        | D::UInt32
        | D::UInt64
        | D::Float16
        | D::Float32
        | D::Float64
        | D::Utf8
        | D::Binary
        | D::Timestamp(..)
        | D::Duration(_)
        | D::Date32
        | D::Date64 => true,
        D::FixedSizeBinary(n) => *n >= 0,
        D::List(f) => supported(f.data_type()),
        D::FixedSizeList(f, n) => *n >= 0 && supported(f.data_type()),
        D::Struct(fs) => fs.iter().all(|f| supported(f.data_type())),
        D::Dictionary(k, v) => k.is_dictionary_key_type() && **v == D::Utf8,
        _ => false,
    }
}

/// Decodes `values` (`None` or JSON `null`: a null) as an array of `dt`.
/// A dictionary takes its entries from `dictionary` when given (a text not
/// in it is an error), else from the texts in the order they appear.
pub fn decode(
    dt: &DataType,
    values: &[Option<&J>],
    dictionary: Option<&StringArray>,
) -> R<ArrayRef> {
    if !supported(dt) {
        return Err(bad(0, format!("cannot decode JSON as {dt}")));
    }
    decode_any(dt, values, dictionary)
}

fn valid(values: &[Option<&J>]) -> Option<NullBuffer> {
    let v: Vec<bool> = values
        .iter()
        .map(|x| !matches!(x, None | Some(J::Null)))
        .collect();
    if v.iter().all(|&b| b) {
        None
    } else {
        Some(NullBuffer::from(v))
    }
}

fn present<'a>(x: &Option<&'a J>) -> Option<&'a J> {
    match x {
        None | Some(J::Null) => None,
        Some(v) => Some(v),
    }
}

fn int<T: TryFrom<i64> + TryFrom<u64>>(at: usize, v: &J) -> R<T> {
    let n = match v {
        J::Number(n) => n,
        other => return Err(bad(at, format!("{other} is not an integer"))),
    };
    if let Some(x) = n.as_u64() {
        return T::try_from(x).map_err(|_| bad(at, format!("{x} is out of range")));
    }
    if let Some(x) = n.as_i64() {
        return T::try_from(x).map_err(|_| bad(at, format!("{x} is out of range")));
    }
    Err(bad(at, format!("{n} is not an integer in range")))
}

/// A NaN written with its bits (`"NaN:0x7fc00001"`), when `v` is one.
fn nan_bits(v: &J, digits: usize) -> Option<u64> {
    let h = v.as_str()?.strip_prefix("NaN:0x")?;
    (h.len() == digits).then(|| u64::from_str_radix(h, 16).ok())?
}

fn float32(at: usize, v: &J) -> R<f32> {
    if let Some(b) = nan_bits(v, 8) {
        let x = f32::from_bits(u32::try_from(b).unwrap_or(0));
        return if x.is_nan() {
            Ok(x)
        } else {
            Err(bad(at, "not a NaN"))
        };
    }
    Ok(float(at, v)? as f32)
}

fn float(at: usize, v: &J) -> R<f64> {
    if let Some(b) = nan_bits(v, 16) {
        let x = f64::from_bits(b);
        return if x.is_nan() {
            Ok(x)
        } else {
            Err(bad(at, "not a NaN"))
        };
    }
    match v {
        J::Number(n) => n
            .as_f64()
            .ok_or_else(|| bad(at, format!("{n} is not a number"))),
        J::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(bad(at, format!("{s:?} is not a number"))),
        },
        other => Err(bad(at, format!("{other} is not a number"))),
    }
}

fn prim<T: ArrowPrimitiveType>(
    dt: &DataType,
    values: &[Option<&J>],
    f: impl Fn(usize, &J) -> R<T::Native>,
) -> R<ArrayRef> {
    let mut out = Vec::with_capacity(values.len());
    for (at, v) in values.iter().enumerate() {
        out.push(match present(v) {
            Some(v) => f(at, v)?,
            None => T::Native::default(),
        });
    }
    let a = PrimitiveArray::<T>::try_new(out.into(), valid(values))
        .map_err(|e| bad(0, e.to_string()))?
        .with_data_type(dt.clone());
    Ok(Arc::new(a))
}

fn text(at: usize, v: &J) -> R<&str> {
    v.as_str()
        .ok_or_else(|| bad(at, format!("{v} is not a string")))
}

fn base64(at: usize, v: &J) -> R<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text(at, v)?)
        .map_err(|e| bad(at, format!("not base64: {e}")))
}

fn decode_any(dt: &DataType, values: &[Option<&J>], dict: Option<&StringArray>) -> R<ArrayRef> {
    use DataType as D;
    Ok(match dt {
        D::Null => new_null_array(dt, values.len()),
        D::Boolean => {
            let mut out = Vec::with_capacity(values.len());
            for (at, v) in values.iter().enumerate() {
                out.push(match present(v) {
                    Some(J::Bool(b)) => Some(*b),
                    Some(other) => return Err(bad(at, format!("{other} is not a boolean"))),
                    None => None,
                });
            }
            Arc::new(BooleanArray::from(out))
        }
        D::Int8 => prim::<Int8Type>(dt, values, int)?,
        D::Int16 => prim::<Int16Type>(dt, values, int)?,
        D::Int32 => prim::<Int32Type>(dt, values, int)?,
        D::Int64 => prim::<Int64Type>(dt, values, int)?,
        D::UInt8 => prim::<UInt8Type>(dt, values, int)?,
        D::UInt16 => prim::<UInt16Type>(dt, values, int)?,
        D::UInt32 => prim::<UInt32Type>(dt, values, int)?,
        D::UInt64 => prim::<UInt64Type>(dt, values, int)?,
        // f64 → f32 (and → f16 through f32) rounds once to nearest: the
        // shortest text of an f32 parses back to the same f32.
        D::Float16 => {
            prim::<Float16Type>(dt, values, |at, v| Ok(half::f16::from_f64(float(at, v)?)))?
        }
        D::Float32 => prim::<Float32Type>(dt, values, float32)?,
        D::Float64 => prim::<Float64Type>(dt, values, float)?,
        D::Timestamp(..) | D::Duration(_) | D::Date64 => prim::<Int64Type>(&D::Int64, values, int)?
            .to_data()
            .into_builder()
            .data_type(dt.clone())
            .build()
            .map(arrow_array::make_array)
            .map_err(|e| bad(0, e.to_string()))?,
        D::Date32 => prim::<Date32Type>(dt, values, int)?,
        D::Utf8 => {
            let mut out = Vec::with_capacity(values.len());
            for (at, v) in values.iter().enumerate() {
                out.push(present(v).map(|v| text(at, v)).transpose()?);
            }
            Arc::new(StringArray::from(out))
        }
        D::Binary => {
            let mut out = Vec::with_capacity(values.len());
            for (at, v) in values.iter().enumerate() {
                out.push(present(v).map(|v| base64(at, v)).transpose()?);
            }
            Arc::new(BinaryArray::from_iter(out))
        }
        D::FixedSizeBinary(n) => {
            let n = *n;
            let width = usize::try_from(n).map_err(|_| bad(0, "negative width"))?;
            let mut bytes = Vec::with_capacity(values.len().saturating_mul(width));
            for (at, v) in values.iter().enumerate() {
                match present(v) {
                    Some(v) => {
                        let b = base64(at, v)?;
                        if b.len() != width {
                            return Err(bad(
                                at,
                                format!("{} bytes where {width} are needed", b.len()),
                            ));
                        }
                        bytes.extend_from_slice(&b);
                    }
                    None => bytes.resize(bytes.len() + width, 0),
                }
            }
            Arc::new(
                FixedSizeBinaryArray::try_new(n, bytes.into(), valid(values))
                    .map_err(|e| bad(0, e.to_string()))?,
            )
        }
        D::List(item) => {
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i32);
            let mut children: Vec<Option<&J>> = Vec::new();
            for (at, v) in values.iter().enumerate() {
                if let Some(v) = present(v) {
                    let a = v
                        .as_array()
                        .ok_or_else(|| bad(at, format!("{v} is not a list")))?;
                    children.extend(a.iter().map(Some));
                }
                let end = i32::try_from(children.len()).map_err(|_| bad(at, "list too long"))?;
                offsets.push(end);
            }
            let child =
                decode_any(item.data_type(), &children, dict).map_err(|e| inner(&offsets, e))?;
            Arc::new(
                ListArray::try_new(
                    item.clone(),
                    OffsetBuffer::new(offsets.into()),
                    child,
                    valid(values),
                )
                .map_err(|e| bad(0, e.to_string()))?,
            )
        }
        D::FixedSizeList(item, n) => {
            let width = usize::try_from(*n).map_err(|_| bad(0, "negative size"))?;
            let mut children: Vec<Option<&J>> = Vec::with_capacity(values.len() * width);
            for (at, v) in values.iter().enumerate() {
                match present(v) {
                    Some(v) => {
                        let a = v
                            .as_array()
                            .ok_or_else(|| bad(at, format!("{v} is not a list")))?;
                        if a.len() != width {
                            return Err(bad(
                                at,
                                format!("{} items where {width} are needed", a.len()),
                            ));
                        }
                        children.extend(a.iter().map(Some));
                    }
                    None => children.extend(std::iter::repeat_n(None, width)),
                }
            }
            let child = decode_any(item.data_type(), &children, dict)
                .map_err(|e| bad(e.at / width.max(1), e.message))?;
            let child = if item.is_nullable() || child.null_count() == 0 {
                child
            } else {
                // Null lists hide their slots; give them the item's default.
                fill_nulls(item, child).map_err(|m| bad(0, m))?
            };
            Arc::new(
                FixedSizeListArray::try_new(item.clone(), *n, child, valid(values))
                    .map_err(|e| bad(0, e.to_string()))?,
            )
        }
        D::Struct(fields) => {
            let mut columns = Vec::with_capacity(fields.len());
            for f in fields {
                let mut col: Vec<Option<&J>> = Vec::with_capacity(values.len());
                for (at, v) in values.iter().enumerate() {
                    col.push(match present(v) {
                        Some(J::Object(m)) => m.get(f.name()),
                        Some(other) => return Err(bad(at, format!("{other} is not an object"))),
                        None => None,
                    });
                }
                let a = decode_any(f.data_type(), &col, dict).map_err(|e| DecodeError {
                    at: e.at,
                    message: format!("{}: {}", f.name(), e.message),
                })?;
                let a = if f.is_nullable() || a.null_count() == 0 {
                    a
                } else {
                    // Only slots of null structs may be missing.
                    for (at, (v, parent)) in col.iter().zip(values).enumerate() {
                        if present(v).is_none() && present(parent).is_some() {
                            return Err(bad(at, format!("{}: missing", f.name())));
                        }
                    }
                    fill_nulls(f, a).map_err(|m| bad(0, m))?
                };
                columns.push(a);
            }
            Arc::new(
                StructArray::try_new_with_length(
                    fields.clone(),
                    columns,
                    valid(values),
                    values.len(),
                )
                .map_err(|e| bad(0, e.to_string()))?,
            )
        }
        D::Dictionary(k, _) => {
            let mut texts = Vec::with_capacity(values.len());
            for (at, v) in values.iter().enumerate() {
                texts.push(present(v).map(|v| text(at, v)).transpose()?);
            }
            dictionary(k, &texts, dict)?
        }
        other => return Err(bad(0, format!("cannot decode JSON as {other}"))),
    })
}

/// An error inside a list's items, moved to the list that holds the item.
fn inner(offsets: &[i32], e: DecodeError) -> DecodeError {
    let at = i32::try_from(e.at).unwrap_or(i32::MAX);
    let list = offsets.partition_point(|&o| o <= at).saturating_sub(1);
    bad(list, e.message)
}

/// `a` with each null replaced by the type's default (for a non-nullable
/// child whose slots belong to null parents).
fn fill_nulls(f: &Field, a: ArrayRef) -> Result<ArrayRef, String> {
    let d = a.to_data();
    d.into_builder()
        .nulls(None)
        .build()
        .map(arrow_array::make_array)
        .map_err(|e| format!("{}: {e}", f.name()))
}

/// Texts as a dictionary array with keys of `key`: entries from `dict` when
/// given, else the distinct texts in order of appearance.
pub(crate) fn dictionary(
    key: &DataType,
    texts: &[Option<&str>],
    dict: Option<&StringArray>,
) -> R<ArrayRef> {
    let mut entries: Vec<String> = Vec::new();
    let mut index: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    if let Some(d) = dict {
        for i in 0..d.len() {
            let t = if d.is_null(i) { "" } else { d.value(i) };
            index.entry(t.to_string()).or_insert(i as u64);
            entries.push(t.to_string());
        }
    }
    let mut keys: Vec<Option<u64>> = Vec::with_capacity(texts.len());
    for (at, t) in texts.iter().enumerate() {
        keys.push(match t {
            None => None,
            Some(t) => Some(match index.get(*t) {
                Some(&k) => k,
                None if dict.is_some() => {
                    return Err(bad(
                        at,
                        format!("{t:?} is not one of the dictionary's entries"),
                    ));
                }
                None => {
                    let k = entries.len() as u64;
                    entries.push((*t).to_string());
                    index.insert((*t).to_string(), k);
                    k
                }
            }),
        });
    }
    let values: ArrayRef = match dict {
        Some(d) => Arc::new(d.clone()),
        None => Arc::new(StringArray::from(entries)),
    };
    macro_rules! keyed {
        ($t:ty) => {{
            let mut k = Vec::with_capacity(keys.len());
            for (at, x) in keys.iter().enumerate() {
                k.push(match x {
                    Some(x) => Some(
                        <<$t as ArrowPrimitiveType>::Native>::try_from(*x)
                            .map_err(|_| bad(at, "too many dictionary entries for the key type"))?,
                    ),
                    None => None,
                });
            }
            Arc::new(
                DictionaryArray::<$t>::try_new(PrimitiveArray::<$t>::from(k), values)
                    .map_err(|e| bad(0, e.to_string()))?,
            ) as ArrayRef
        }};
    }
    Ok(match key {
        DataType::Int8 => keyed!(Int8Type),
        DataType::Int16 => keyed!(Int16Type),
        DataType::Int32 => keyed!(Int32Type),
        DataType::Int64 => keyed!(Int64Type),
        DataType::UInt8 => keyed!(UInt8Type),
        DataType::UInt16 => keyed!(UInt16Type),
        DataType::UInt32 => keyed!(UInt32Type),
        DataType::UInt64 => keyed!(UInt64Type),
        other => return Err(bad(0, format!("{other} is not a dictionary key type"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(dt: DataType, texts: &[&str]) {
        let vals: Vec<J> = texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        let refs: Vec<Option<&J>> = vals.iter().map(Some).collect();
        let a = decode(&dt, &refs, None).unwrap();
        assert_eq!(a.data_type(), &dt);
        for (i, t) in texts.iter().enumerate() {
            let mut s = String::new();
            crate::typed::json_value(a.as_ref(), i, &mut s);
            assert_eq!(&s, t, "value {i} of {dt}");
        }
    }

    #[test]
    fn decodes_what_json_value_writes() {
        round(DataType::UInt64, &["18446744073709551615", "0", "null"]);
        round(DataType::Int8, &["-128", "127"]);
        round(
            DataType::Float64,
            &["5e-324", "\"NaN\"", "\"-Infinity\"", "0.1"],
        );
        round(DataType::Float32, &["0.1", "3.4028235e38", "1e-45"]);
        let v: Vec<J> = ["\"NaN:0x7fc00001\"", "\"NaN:0xfff0000000000001\""]
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        let a = decode(&DataType::Float32, &[Some(&v[0])], None).unwrap();
        let mut s = String::new();
        crate::typed::json_value_exact(a.as_ref(), 0, &mut s);
        assert_eq!(s, "\"NaN:0x7fc00001\"");
        let a = decode(&DataType::Float64, &[Some(&v[1])], None).unwrap();
        s.clear();
        crate::typed::json_value_exact(a.as_ref(), 0, &mut s);
        assert_eq!(s, "\"NaN:0xfff0000000000001\"");
        round(DataType::Binary, &["\"AAEC\"", "\"\""]);
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        round(DataType::List(item.clone()), &["[1.0,2.5]", "[]", "null"]);
        round(DataType::FixedSizeList(item, 2), &["[1.0,2.5]", "null"]);
        let st = DataType::Struct(
            vec![
                Field::new("a", DataType::Int64, false),
                Field::new("b", DataType::Utf8, true),
            ]
            .into(),
        );
        round(
            st,
            &["{\"a\":1,\"b\":\"x\"}", "{\"a\":2,\"b\":null}", "null"],
        );
        round(
            DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
            &["\"x\"", "\"y\"", "\"x\"", "null"],
        );
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let v: J = serde_json::from_str("256").unwrap();
        let e = decode(&DataType::UInt8, &[Some(&J::Null), Some(&v)], None).unwrap_err();
        assert_eq!(e.at, 1);
        assert!(e.message.contains("out of range"), "{e:?}");
        let v: J = serde_json::from_str("[1,2,3]").unwrap();
        let item = Arc::new(Field::new("item", DataType::Int32, false));
        let e = decode(&DataType::FixedSizeList(item, 2), &[Some(&v)], None).unwrap_err();
        assert!(e.message.contains("3 items where 2"), "{e:?}");
        let d = StringArray::from(vec!["a", "b"]);
        let v: J = serde_json::from_str("\"c\"").unwrap();
        let k = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
        assert!(decode(&k, &[Some(&v)], Some(&d)).is_err());
        assert!(!supported(&DataType::FixedSizeList(
            Arc::new(Field::new("item", DataType::Int32, false)),
            -1
        )));
    }
}
