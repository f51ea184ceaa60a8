//! JSON lines of flat records decoded straight into Arrow columns, without
//! a document per line.
//!
//! [`super::json::decode`] takes every line as a `serde_json::Value` (a map
//! of keys, a vector per array, a node per number) and then each column's
//! values out of those documents. For the records most JSON lines hold
//! (booleans, integers, floats, text, and lists of those), [`decode`] reads
//! each line once with the same parser and appends every value to its
//! column as it comes. It gives up (`None`) on anything it does not handle
//! exactly as the document path does: a type it does not decode, a value
//! that does not fit its column, a key given twice, a line that is not an
//! object or not JSON. The caller then decodes the lines the document way,
//! which gives the same records or names the problem; so the two agree on
//! every input (a test compares them on random lines). [`decode_texts`]
//! does the same for a column of JSON texts, one value each (MLDF fields
//! that hold a nested value as JSON).

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, ListArray, PrimitiveArray, RecordBatch,
    RecordBatchOptions, StringArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, SchemaRef};
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// The values of one column so far.
enum Values {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Text {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
    },
    /// A list of a column of one of the kinds above (never a list).
    List {
        offsets: Vec<i32>,
        items: Box<Column>,
    },
}

/// A column being decoded: its values and which are present.
struct Column {
    values: Values,
    valid: Vec<bool>,
    nulls: usize,
}

impl Column {
    /// An empty column of `dt`; `None` for a type [`decode`] leaves to the
    /// document path (a list only of a type that is not a list).
    fn new(dt: &DataType, list_allowed: bool) -> Option<Column> {
        use DataType as D;
        let values = match dt {
            D::Boolean => Values::Bool(Vec::new()),
            D::Int8 => Values::I8(Vec::new()),
            D::Int16 => Values::I16(Vec::new()),
            D::Int32 => Values::I32(Vec::new()),
            D::Int64 => Values::I64(Vec::new()),
            D::UInt8 => Values::U8(Vec::new()),
            D::UInt16 => Values::U16(Vec::new()),
            D::UInt32 => Values::U32(Vec::new()),
            D::UInt64 => Values::U64(Vec::new()),
            D::Float32 => Values::F32(Vec::new()),
            D::Float64 => Values::F64(Vec::new()),
            D::Utf8 => Values::Text {
                offsets: vec![0],
                bytes: Vec::new(),
            },
            D::List(item) if list_allowed && item.is_nullable() => Values::List {
                offsets: vec![0],
                items: Box::new(Column::new(item.data_type(), false)?),
            },
            _ => return None,
        };
        Some(Column {
            values,
            valid: Vec::new(),
            nulls: 0,
        })
    }

    /// Appends a null (the type's default value in its slot).
    fn null(&mut self) -> Result<(), Stop> {
        self.valid.push(false);
        self.nulls += 1;
        match &mut self.values {
            Values::Bool(v) => v.push(false),
            Values::I8(v) => v.push(0),
            Values::I16(v) => v.push(0),
            Values::I32(v) => v.push(0),
            Values::I64(v) => v.push(0),
            Values::U8(v) => v.push(0),
            Values::U16(v) => v.push(0),
            Values::U32(v) => v.push(0),
            Values::U64(v) => v.push(0),
            Values::F32(v) => v.push(0.0),
            Values::F64(v) => v.push(0.0),
            Values::Text { offsets, bytes } => offsets.push(end(bytes.len())?),
            Values::List { offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last);
            }
        }
        Ok(())
    }

    /// Appends an integer as the document path converts one: kept only
    /// when the column's type holds it exactly (floats take it as a
    /// float).
    fn integer<N>(&mut self, x: N) -> Result<(), Stop>
    where
        N: Copy + TryInto<i8> + TryInto<i16> + TryInto<i32> + TryInto<i64>,
        N: TryInto<u8> + TryInto<u16> + TryInto<u32> + TryInto<u64> + AsFloat,
    {
        fn fit<N: TryInto<T>, T>(x: N) -> Result<T, Stop> {
            x.try_into().map_err(|_| Stop)
        }
        match &mut self.values {
            Values::I8(v) => v.push(fit(x)?),
            Values::I16(v) => v.push(fit(x)?),
            Values::I32(v) => v.push(fit(x)?),
            Values::I64(v) => v.push(fit(x)?),
            Values::U8(v) => v.push(fit(x)?),
            Values::U16(v) => v.push(fit(x)?),
            Values::U32(v) => v.push(fit(x)?),
            Values::U64(v) => v.push(fit(x)?),
            Values::F32(v) => v.push(x.to_float() as f32),
            Values::F64(v) => v.push(x.to_float()),
            _ => return Err(Stop),
        }
        self.valid.push(true);
        Ok(())
    }

    fn float(&mut self, x: f64) -> Result<(), Stop> {
        match &mut self.values {
            Values::F32(v) => v.push(x as f32),
            Values::F64(v) => v.push(x),
            _ => return Err(Stop),
        }
        self.valid.push(true);
        Ok(())
    }

    fn text(&mut self, s: &str) -> Result<(), Stop> {
        // A float column takes the three words the document path takes;
        // any other text in one (a NaN written with its bits) is left to
        // that path.
        let word = match s {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        };
        match (&mut self.values, word) {
            (Values::Text { offsets, bytes }, _) => {
                bytes.extend_from_slice(s.as_bytes());
                offsets.push(end(bytes.len())?);
            }
            (Values::F32(_) | Values::F64(_), Some(x)) => return self.float(x),
            _ => return Err(Stop),
        }
        self.valid.push(true);
        Ok(())
    }

    fn boolean(&mut self, b: bool) -> Result<(), Stop> {
        match &mut self.values {
            Values::Bool(v) => v.push(b),
            _ => return Err(Stop),
        }
        self.valid.push(true);
        Ok(())
    }

    /// The column as an array of `dt` (the type it was made for).
    fn finish(self, dt: &DataType) -> Option<ArrayRef> {
        let nulls = (self.nulls > 0).then(|| NullBuffer::from(self.valid));
        fn prim<T: ArrowPrimitiveType>(
            v: Vec<T::Native>,
            nulls: Option<NullBuffer>,
            dt: &DataType,
        ) -> Option<ArrayRef> {
            let a = PrimitiveArray::<T>::try_new(v.into(), nulls).ok()?;
            Some(Arc::new(a.with_data_type(dt.clone())))
        }
        match self.values {
            Values::Bool(v) => Some(Arc::new(BooleanArray::new(v.into(), nulls))),
            Values::I8(v) => prim::<Int8Type>(v, nulls, dt),
            Values::I16(v) => prim::<Int16Type>(v, nulls, dt),
            Values::I32(v) => prim::<Int32Type>(v, nulls, dt),
            Values::I64(v) => prim::<Int64Type>(v, nulls, dt),
            Values::U8(v) => prim::<UInt8Type>(v, nulls, dt),
            Values::U16(v) => prim::<UInt16Type>(v, nulls, dt),
            Values::U32(v) => prim::<UInt32Type>(v, nulls, dt),
            Values::U64(v) => prim::<UInt64Type>(v, nulls, dt),
            Values::F32(v) => prim::<Float32Type>(v, nulls, dt),
            Values::F64(v) => prim::<Float64Type>(v, nulls, dt),
            Values::Text { offsets, bytes } => Some(Arc::new(
                StringArray::try_new(OffsetBuffer::new(offsets.into()), bytes.into(), nulls)
                    .ok()?,
            )),
            Values::List { offsets, items } => {
                let DataType::List(item) = dt else {
                    return None;
                };
                let child = items.finish(item.data_type())?;
                Some(Arc::new(
                    ListArray::try_new(
                        item.clone(),
                        OffsetBuffer::new(offsets.into()),
                        child,
                        nulls,
                    )
                    .ok()?,
                ))
            }
        }
    }
}

/// An integer's value as a float, as `serde_json::Number::as_f64` gives
/// it.
trait AsFloat {
    fn to_float(self) -> f64;
}

impl AsFloat for u64 {
    fn to_float(self) -> f64 {
        self as f64
    }
}

impl AsFloat for i64 {
    fn to_float(self) -> f64 {
        self as f64
    }
}

/// The end offset of `len` bytes; too many for `i32` offsets stops.
fn end(len: usize) -> Result<i32, Stop> {
    i32::try_from(len).map_err(|_| Stop)
}

/// Why [`decode`] gave up: the document path is to decode the lines.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to the document path")
    }
}

/// A value into `column` (a list's items when the column is a list; a
/// list in a list's items stops).
struct Value<'c> {
    column: &'c mut Column,
}

impl<'de> DeserializeSeed<'de> for Value<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Value<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.column.null().map_err(E::custom)
    }

    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<(), E> {
        self.column.boolean(b).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, x: u64) -> Result<(), E> {
        self.column.integer(x).map_err(E::custom)
    }

    fn visit_i64<E: serde::de::Error>(self, x: i64) -> Result<(), E> {
        self.column.integer(x).map_err(E::custom)
    }

    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<(), E> {
        self.column.float(x).map_err(E::custom)
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.column.text(s).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Column {
            values: Values::List { offsets, items },
            valid,
            ..
        } = self.column
        else {
            return Err(A::Error::custom(Stop));
        };
        let mut n = items.valid.len();
        while seq.next_element_seed(Value { column: items })?.is_some() {
            n += 1;
        }
        offsets.push(end(n).map_err(A::Error::custom)?);
        valid.push(true);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(A::Error::custom(Stop))
    }
}

/// A key of a line's object: borrowed from the line when it has no
/// escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(s.to_owned()))
    }
}

/// One line: an object whose members go to the columns of the same name.
struct Row<'r> {
    columns: &'r mut [Column],
    names: &'r [&'r str],
    /// The line's number among the lines, marking the columns it filled.
    row: usize,
    filled: &'r mut [usize],
}

impl<'de> DeserializeSeed<'de> for Row<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Row<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(Key)? {
            let Some(c) = self.names.iter().position(|n| *n == key) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            // A key given twice: the document keeps the last value.
            let (Some(column), Some(filled)) = (self.columns.get_mut(c), self.filled.get_mut(c))
            else {
                return Err(A::Error::custom(Stop));
            };
            if *filled == self.row {
                return Err(A::Error::custom(Stop));
            }
            *filled = self.row;
            map.next_value_seed(Value { column })?;
        }
        Ok(())
    }
}

/// The lines (text only; their numbers are the caller's) as a batch of
/// `schema`, or `None` when the document path is to decode them.
pub(super) fn decode(schema: &SchemaRef, lines: &[(usize, String)]) -> Option<RecordBatch> {
    let fields = schema.fields();
    let mut columns = fields
        .iter()
        .map(|f| Column::new(f.data_type(), true))
        .collect::<Option<Vec<_>>>()?;
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    // Two columns of one name both take its value there.
    if names
        .iter()
        .enumerate()
        .any(|(k, n)| names.get(..k).is_some_and(|before| before.contains(n)))
    {
        return None;
    }
    let mut filled = vec![usize::MAX; columns.len()];
    for (row, (_, line)) in lines.iter().enumerate() {
        let mut de = serde_json::Deserializer::from_str(line);
        Row {
            columns: &mut columns,
            names: &names,
            row,
            filled: &mut filled,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        // The columns the line did not name are null in it.
        for (column, filled) in columns.iter_mut().zip(&mut filled) {
            if *filled != row {
                *filled = row;
                column.null().ok()?;
            }
        }
    }
    let arrays = columns
        .into_iter()
        .zip(fields)
        .map(|(c, f)| c.finish(f.data_type()))
        .collect::<Option<Vec<_>>>()?;
    let opts = RecordBatchOptions::new().with_row_count(Some(lines.len()));
    RecordBatch::try_new_with_options(schema.clone(), arrays, &opts).ok()
}

/// The JSON texts of `texts` (a null: a null) as an array of `dt`, one
/// value each, or `None` when the document path is to decode them.
pub(super) fn decode_texts(dt: &DataType, texts: &StringArray) -> Option<ArrayRef> {
    let mut column = Column::new(dt, true)?;
    for t in texts.iter() {
        match t {
            None => column.null().ok()?,
            Some(t) => {
                let mut de = serde_json::Deserializer::from_str(t);
                Value {
                    column: &mut column,
                }
                .deserialize(&mut de)
                .ok()?;
                de.end().ok()?;
            }
        }
    }
    let a = column.finish(dt)?;
    (a.len() == texts.len()).then_some(a)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use arrow_schema::Field;

    /// A column of JSON texts decoded as read is the documents' column:
    /// random texts (of the column's kind mostly, and of every other kind,
    /// nulls, JSON `null`, texts that are not JSON) into every kind of
    /// column; wherever the quick decoder gives an array the documents
    /// give the same one, and wherever they refuse the texts it gives none.
    #[test]
    fn texts_decoded_as_read_are_the_documents_values() {
        let mut r = crate::core::rng::SplitMix64::new(43);
        let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, true)));
        let kinds = [
            DataType::Boolean,
            DataType::Int16,
            DataType::Int64,
            DataType::UInt32,
            DataType::UInt64,
            DataType::Float32,
            DataType::Float64,
            DataType::Utf8,
            list(DataType::Float64),
            list(DataType::Int8),
            list(DataType::Utf8),
            list(list(DataType::Int64)),
            DataType::List(Arc::new(Field::new("item", DataType::Float64, false))),
        ];
        let texts = [
            "null",
            "true",
            "0",
            "-3",
            "40000",
            "-40000",
            "18446744073709551615",
            "123456789012345678901234",
            "1.5",
            "-0.0",
            "1e400",
            "\"NaN\"",
            "\"-Infinity\"",
            "\"abc\"",
            "\"NaN:0x7ff8000000000001\"",
            "[]",
            "[1,2.5,null]",
            "[[1],[2,3]]",
            "[\"x\",null]",
            "[1,\"x\"]",
            "{}",
            "[1,",
            " 7 ",
            "7 8",
            "",
        ];
        let (mut quick, mut refused) = (0, 0);
        for case in 0..4000 {
            let dt = kinds[r.below(kinds.len() as u64) as usize].clone();
            let own: &[&str] = match &dt {
                DataType::Boolean => &["true", "false"],
                DataType::Float32 | DataType::Float64 => {
                    &["1.5", "-2", "3.4028235e38", "\"Infinity\""]
                }
                DataType::Utf8 => &["\"a\\u00e9\"", "\"\""],
                DataType::List(item) => match item.data_type() {
                    DataType::Utf8 => &["[\"x\",null]", "[]"],
                    DataType::List(_) => &["[[1],[2,3],null]"],
                    _ => &["[1,-2,null]", "[]", "[100]"],
                },
                _ => &["0", "17", "null"],
            };
            let values: Vec<Option<&str>> = (0..1 + r.below(6))
                .map(|_| match r.below(8) {
                    0 => None,
                    1..=5 => Some(own[r.below(own.len() as u64) as usize]),
                    _ => Some(texts[r.below(texts.len() as u64) as usize]),
                })
                .collect();
            let array = StringArray::from(values.clone());
            let parsed: Result<Vec<Option<serde_json::Value>>, _> = values
                .iter()
                .map(|t| t.map(serde_json::from_str::<serde_json::Value>).transpose())
                .collect();
            let documents = parsed.ok().and_then(|p| {
                let refs: Vec<Option<&serde_json::Value>> = p.iter().map(Option::as_ref).collect();
                super::super::json::decode(&dt, &refs, None).ok()
            });
            match decode_texts(&dt, &array) {
                Some(a) => {
                    quick += 1;
                    let want = documents.unwrap_or_else(|| panic!("case {case}: {values:?}"));
                    assert_eq!(a.data_type(), want.data_type(), "case {case}");
                    assert_eq!(
                        format!("{a:?}"),
                        format!("{want:?}"),
                        "case {case}: {values:?}"
                    );
                }
                None => refused += usize::from(documents.is_none()),
            }
        }
        assert!(
            quick > 800 && refused > 800,
            "quick {quick}, refused {refused}"
        );
    }
}
