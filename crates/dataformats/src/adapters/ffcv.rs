//! The ffcv adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};
use crate::ffcv::Value;
use arrow_schema::DataType;

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let r = crate::ffcv::Reader::with_options(
        src,
        crate::core::ReadOptions::default().limits(opts.limits),
    )
    .map_err(fe(Format::Ffcv))?;
    let schema = schema(&r).map_err(|e| e.in_format(Format::Ffcv))?;
    Ok(Box::new(Ffcv(r, schema, opts.limits)))
}

/// The Arrow element type of a numpy type string (`<f4`, `|u1`, ...);
/// anything else stays raw bytes of its size.
fn elem_type(dtype: &str, itemsize: u64) -> arrow_schema::DataType {
    use arrow_schema::DataType as A;
    match crate::dataset::numpy_dtype_name(dtype).as_str() {
        "bool" => A::Boolean,
        "int8" => A::Int8,
        "int16" => A::Int16,
        "int32" => A::Int32,
        "int64" => A::Int64,
        "uint8" => A::UInt8,
        "uint16" => A::UInt16,
        "uint32" => A::UInt32,
        "uint64" => A::UInt64,
        "float16" => A::Float16,
        "float32" => A::Float32,
        "float64" => A::Float64,
        _ => A::FixedSizeBinary(i32::try_from(itemsize.max(1)).unwrap_or(i32::MAX)),
    }
}

/// Every built-in FFCV field type as Arrow; an RGB image field gives four
/// columns (bytes, `.mode`, `.width`, `.height`), as the common view does.
fn schema(r: &crate::ffcv::Reader) -> Result<arrow_schema::SchemaRef, Error> {
    use crate::ffcv::FieldType as T;
    use crate::typed::{EXTENSION_NAME, field, tensor_field};
    use arrow_schema::DataType as A;
    let mut out = Vec::new();
    for f in r.fields() {
        let ty = f.ty.name().to_string();
        match &f.ty {
            T::Int => out.push(field(&f.name, A::Int64, false, &ty)),
            T::Float => out.push(field(&f.name, A::Float64, false, &ty)),
            T::Bytes => out.push(field(&f.name, A::Binary, false, &ty)),
            T::Json => {
                let x = field(&f.name, A::Utf8, false, &ty);
                let mut md = x.metadata().clone();
                md.insert(EXTENSION_NAME.into(), "arrow.json".into());
                out.push(x.with_metadata(md));
            }
            T::NdArray {
                dtype,
                itemsize,
                shape,
            }
            | T::TorchTensor {
                dtype,
                itemsize,
                shape,
            } => {
                let et = elem_type(dtype, *itemsize);
                let ty = format!("{ty}<{dtype}>{shape:?}");
                out.push(tensor_field(&f.name, et, shape, false, &ty)?);
            }
            T::RgbImage => {
                out.push(field(&f.name, A::Binary, false, &ty));
                out.push(field(
                    &format!("{}.mode", f.name),
                    A::Dictionary(Box::new(A::UInt8), Box::new(A::Utf8)),
                    false,
                    "image mode",
                ));
                out.push(field(&format!("{}.width", f.name), A::UInt16, false, "u16"));
                out.push(field(
                    &format!("{}.height", f.name),
                    A::UInt16,
                    false,
                    "u16",
                ));
            }
        }
    }
    Ok(std::sync::Arc::new(arrow_schema::Schema::new(out)))
}

/// FFCV through the common view. An image field becomes four columns:
/// the stored bytes, `<name>.mode` (`raw` or `jpg`), `<name>.width` and
/// `<name>.height`, so nothing of the file is lost.
struct Ffcv(
    crate::ffcv::Reader,
    arrow_schema::SchemaRef,
    crate::core::Limits,
);

impl Dataset for Ffcv {
    fn limits(&self) -> crate::core::Limits {
        self.2
    }

    fn format(&self) -> Format {
        Format::Ffcv
    }
    fn version(&self) -> String {
        self.0.layout().version.to_string()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.1.clone()
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let end = rows.end.min(self.len());
        let start = rows.start.min(end);
        let n = usize::try_from(end - start).unwrap_or(usize::MAX);
        self.2
            .check_count("FFCV samples", n as u64)
            .map_err(|e| Error::limit(e).in_format(Format::Ffcv))?;
        let parts = parts(&self.0);
        let mut out = columns
            .iter()
            .map(|&j| {
                let (Some(&(_, part)), Some(f)) = (parts.get(j), self.1.fields().get(j)) else {
                    return Err(err(
                        Format::Ffcv,
                        "invalid_argument",
                        format!("no column {j}"),
                    ));
                };
                let dt = f.data_type();
                Ok(match (part, dt) {
                    (Part::Mode, _) => Cells::Mode(Vec::with_capacity(n)),
                    (_, DataType::Binary | DataType::Utf8) => {
                        Cells::Var(crate::typed::VarCells::new(n, &self.2))
                    }
                    _ => Cells::Fixed(crate::typed::FixedCells::new(dt, n, &self.2)?),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        // One sample's values, each field read once however many of its
        // columns are asked for.
        let mut row: Vec<Option<Value<'_>>> = vec![None; self.0.fields().len()];
        for i in start..end {
            row.iter_mut().for_each(|v| *v = None);
            for (cells, &j) in out.iter_mut().zip(columns) {
                let Some(&(fj, part)) = parts.get(j) else {
                    continue;
                };
                let slot = row
                    .get_mut(fj)
                    .ok_or_else(|| Error::invalid(format!("no field {fj}")))?;
                if slot.is_none() {
                    *slot = Some(self.0.value(i, fj).map_err(fe(Format::Ffcv))?);
                }
                let Some(v) = slot.as_ref() else { continue };
                push(cells, v, part).map_err(|e| {
                    e.in_format(Format::Ffcv)
                        .context(&format!("sample {i}, column {:?}", self.1.field(j).name()))
                })?;
            }
        }
        columns
            .iter()
            .zip(out)
            .map(|(&j, cells)| {
                let f = self.1.field(j);
                cells.finish(f.data_type()).map_err(|e| {
                    e.in_format(Format::Ffcv)
                        .context(&format!("field {:?}", f.name()))
                })
            })
            .collect()
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.0.validate_with(progress).map_err(fe(Format::Ffcv))
    }
}

/// Which part of an FFCV field a column of the typed view holds: the
/// value itself, or one of an image's mode, width and height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Value,
    Mode,
    Width,
    Height,
}

/// For every column of the schema (in order), its field and part.
fn parts(r: &crate::ffcv::Reader) -> Vec<(usize, Part)> {
    let mut out = Vec::new();
    for (j, f) in r.fields().iter().enumerate() {
        out.push((j, Part::Value));
        if f.ty == crate::ffcv::FieldType::RgbImage {
            out.extend([(j, Part::Mode), (j, Part::Width), (j, Part::Height)]);
        }
    }
    out
}

/// The values of one column as they are read.
enum Cells {
    Fixed(crate::typed::FixedCells),
    Var(crate::typed::VarCells),
    Mode(Vec<&'static str>),
}

impl Cells {
    fn finish(self, dt: &DataType) -> Result<arrow_array::ArrayRef, Error> {
        match self {
            Cells::Fixed(c) => c.finish(dt),
            Cells::Var(c) => c.finish(dt),
            Cells::Mode(m) => {
                let a: arrow_array::DictionaryArray<arrow_array::types::UInt8Type> =
                    m.into_iter().collect();
                Ok(std::sync::Arc::new(a))
            }
        }
    }
}

/// Appends `part` of value `v` to `cells`.
fn push(cells: &mut Cells, v: &Value<'_>, part: Part) -> Result<(), Error> {
    use crate::ffcv::ImageMode;
    let mismatch = || Error::invalid(format!("a {} value in this column", value_kind(v)));
    match (cells, v, part) {
        (Cells::Fixed(c), Value::Int(x), Part::Value) => c.push(Some(&x.to_le_bytes())),
        (Cells::Fixed(c), Value::Float(x), Part::Value) => c.push(Some(&x.to_le_bytes())),
        (Cells::Fixed(c), Value::Array(b), Part::Value) => c.push(Some(b)),
        (Cells::Var(c), Value::Bytes(b), Part::Value) => c.push(Some(b)),
        (Cells::Var(c), Value::Json(t), Part::Value) => c.push(Some(t.as_bytes())),
        (Cells::Var(c), Value::Image { data, .. }, Part::Value) => c.push(Some(data)),
        (Cells::Mode(m), Value::Image { mode, .. }, Part::Mode) => {
            m.push(match mode {
                ImageMode::Jpeg => "jpg",
                ImageMode::Raw => "raw",
            });
            Ok(())
        }
        (Cells::Fixed(c), Value::Image { width, .. }, Part::Width) => {
            c.push(Some(&width.to_le_bytes()))
        }
        (Cells::Fixed(c), Value::Image { height, .. }, Part::Height) => {
            c.push(Some(&height.to_le_bytes()))
        }
        _ => Err(mismatch()),
    }
}

fn value_kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::Int(_) => "int",
        Value::Float(_) => "float",
        Value::Bytes(_) => "bytes",
        Value::Json(_) => "JSON",
        Value::Array(_) => "array",
        Value::Image { .. } => "image",
    }
}
