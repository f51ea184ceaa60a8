//! The ffcv adapter of the common view.

#![allow(unused_imports)]

use crate::Format;
use crate::dataset::{Column, Dataset, Error, Value, err, fe};
use std::path::Path;

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let r = crate::ffcv::Reader::with_limits(src, opts.limits).map_err(fe(Format::Ffcv))?;
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
    fn format(&self) -> Format {
        Format::Ffcv
    }
    fn version(&self) -> String {
        self.0.layout().version.to_string()
    }
    fn columns(&self) -> Vec<Column> {
        use crate::ffcv::FieldType as T;
        let mut out = Vec::new();
        for f in self.0.fields() {
            let shape = match &f.ty {
                T::Int | T::Float => Vec::new(),
                t => t.array().map_or(vec![0], |(_, _, s)| s.to_vec()),
            };
            out.push(Column {
                name: f.name.clone(),
                ty: f.ty.name().to_string(),
                shape,
            });
            if f.ty == T::RgbImage {
                for (suffix, ty) in [("mode", "text"), ("width", "uint16"), ("height", "uint16")] {
                    out.push(Column {
                        name: format!("{}.{suffix}", f.name),
                        ty: ty.to_string(),
                        shape: Vec::new(),
                    });
                }
            }
        }
        out
    }
    fn len(&self) -> u64 {
        self.0.num_samples()
    }
    fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
        use crate::ffcv::{ImageMode, Value as F};
        let mut out = Vec::new();
        for (j, f) in self.0.fields().iter().enumerate() {
            let v = self.0.value(i, j).map_err(fe(Format::Ffcv))?;
            match v {
                F::Int(x) => out.push(Value::Int(x)),
                F::Float(x) => out.push(Value::Float(x)),
                F::Bytes(b) => out.push(Value::Bytes(b.into_owned())),
                F::Json(t) => out.push(Value::Text(t.into_owned())),
                F::Array(b) => match f.ty.array() {
                    Some((dtype, _, shape)) => out.push(Value::Tensor {
                        dtype: crate::dataset::numpy_dtype_name(dtype),
                        shape: shape.to_vec(),
                        data: b.into_owned(),
                    }),
                    None => out.push(Value::Bytes(b.into_owned())),
                },
                F::Image {
                    mode,
                    width,
                    height,
                    data,
                } => {
                    out.push(Value::Bytes(data.into_owned()));
                    out.push(Value::Text(
                        match mode {
                            ImageMode::Jpeg => "jpg",
                            ImageMode::Raw => "raw",
                        }
                        .to_string(),
                    ));
                    out.push(Value::UInt(u64::from(width)));
                    out.push(Value::UInt(u64::from(height)));
                }
            }
        }
        Ok(out)
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
        let mut cols: Vec<Vec<Value>> = vec![Vec::with_capacity(n); columns.len()];
        for i in start..end {
            let mut r = self.record(i)?;
            for (c, &j) in cols.iter_mut().zip(columns) {
                let v = r
                    .get_mut(j)
                    .map(|v| std::mem::replace(v, Value::Null))
                    .ok_or_else(|| {
                        err(Format::Ffcv, "invalid_argument", format!("no column {j}"))
                    })?;
                c.push(v);
            }
        }
        columns
            .iter()
            .zip(cols)
            .map(|(&j, vals)| {
                let f = self.1.field(j);
                crate::typed::from_values(f.data_type(), &vals, &self.2).map_err(|e| {
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
