//! The mldf adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let r = crate::mldf::Reader::with_options(
        src,
        crate::core::ReadOptions::default().limits(opts.limits),
    )
    .map_err(fe(Format::Mldf))?;
    let fields = r
        .fields()
        .iter()
        .map(arrow_field)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.in_format(Format::Mldf))?;
    let own = arrow_schema::Schema::new(fields);
    // A file written by a conversion carries the schema it came from.
    let restore = crate::convert::mldf::Restorer::from_file(&r, &own)
        .map_err(|e| e.in_format(Format::Mldf))?;
    let carrier = own.fields().last().is_some_and(|f| {
        f.name() == crate::convert::mldf::SCHEMA_FIELD
            && f.data_type() == &arrow_schema::DataType::Utf8
    });
    let schema = match &restore {
        Some(x) => x.schema(),
        // A carrier without a value (a file without records) is hidden too.
        None if carrier => {
            let n = own.fields().len() - 1;
            std::sync::Arc::new(own.project(&(0..n).collect::<Vec<_>>())?)
        }
        None => std::sync::Arc::new(own),
    };
    let spans = r.fields().iter().map(|_| Spans::new()).collect();
    Ok(Box::new(Mldf(r, schema, opts.limits, restore, spans)))
}

/// An MLDF file: its reader, its typed schema (the carried one when the
/// file has [`SCHEMA_FIELD`](crate::convert::mldf::SCHEMA_FIELD)), limits,
/// how to restore the carried types, and per field the file bytes of all
/// its values when they lie back to back (learnt by the first read of
/// every record).
struct Mldf(
    crate::mldf::Reader,
    arrow_schema::SchemaRef,
    crate::core::Limits,
    Option<crate::convert::mldf::Restorer>,
    Vec<Spans>,
);

/// What is known of one field's values in the file: `None` until a read
/// of every record has looked; then their one byte range, or `None`.
type Spans = std::sync::OnceLock<Option<std::ops::Range<u64>>>;

/// The format's own name of a field type, with its arguments.
fn type_name(t: &crate::mldf::FieldType) -> String {
    use crate::mldf::FieldType as T;
    match t {
        T::NdArray { dtype, shape } => {
            let d: Vec<String> = shape.iter().map(ToString::to_string).collect();
            format!("NDARRAY<{}>[{}]", dtype.name(), d.join(","))
        }
        T::ImageJpeg { quality } => format!("IMAGE_JPEG<quality={quality}>"),
        T::AudioWaveform { float } => {
            format!("AUDIO_WAVEFORM<{}>", if *float { "float" } else { "int" })
        }
        T::TextTokenized { vocab_size } => format!("TEXT_TOKENIZED<vocab={vocab_size}>"),
        T::Opaque { type_id } => format!("OPAQUE<{type_id}>"),
        other => other.name(),
    }
}

/// The Arrow element type of an NDARRAY dtype (bfloat16 widens exactly to
/// Float32).
fn elem_type(d: crate::mldf::Dtype) -> arrow_schema::DataType {
    use crate::mldf::Dtype as D;
    use arrow_schema::DataType as A;
    match d {
        D::Bool => A::Boolean,
        D::U8 => A::UInt8,
        D::I8 => A::Int8,
        D::U16 => A::UInt16,
        D::I16 => A::Int16,
        D::U32 => A::UInt32,
        D::I32 => A::Int32,
        D::U64 => A::UInt64,
        D::I64 => A::Int64,
        D::F16 => A::Float16,
        D::F32 => A::Float32,
        D::F64 => A::Float64,
        D::BF16 => A::Float32,
    }
}

pub(crate) fn image_type() -> arrow_schema::DataType {
    use arrow_schema::{DataType as A, Field};
    A::Struct(
        vec![
            Field::new("data", A::Binary, false),
            Field::new("height", A::UInt16, false),
            Field::new("width", A::UInt16, false),
            Field::new("channels", A::UInt8, false),
        ]
        .into(),
    )
}

pub(crate) fn audio_type() -> arrow_schema::DataType {
    use arrow_schema::{DataType as A, Field};
    A::Struct(
        vec![
            Field::new("data", A::Binary, false),
            Field::new("num_samples", A::UInt32, false),
            Field::new("sample_rate", A::UInt32, false),
            Field::new("num_channels", A::UInt16, false),
            Field::new("bit_depth", A::UInt8, false),
            Field::new("codec", A::UInt8, false),
        ]
        .into(),
    )
}

/// The Arrow field of an MLDF field (`docs/arrow.md`).
pub(crate) fn arrow_field(f: &crate::mldf::Field) -> Result<arrow_schema::Field, Error> {
    use crate::mldf::FieldType as T;
    use crate::typed::{field, item, tensor_field};
    use arrow_schema::DataType as A;
    let ty = type_name(&f.ty);
    let n = f.nullable;
    Ok(match &f.ty {
        T::Int => field(&f.name, A::Int64, n, &ty),
        T::Float => field(&f.name, A::Float64, n, &ty),
        T::Bytes | T::Opaque { .. } => field(&f.name, A::Binary, n, &ty),
        T::NdArray { dtype, shape } => tensor_field(&f.name, elem_type(*dtype), shape, n, &ty)?,
        T::Json => {
            let mut x = field(&f.name, A::Utf8, n, &ty);
            let mut md = x.metadata().clone();
            md.insert(crate::typed::EXTENSION_NAME.into(), "arrow.json".into());
            x = x.with_metadata(md);
            x
        }
        T::TextRaw => field(&f.name, A::Utf8, n, &ty),
        T::ImageRaw | T::ImageJpeg { .. } | T::ImagePng => field(&f.name, image_type(), n, &ty),
        T::AudioWaveform { .. } | T::AudioCompressed => field(&f.name, audio_type(), n, &ty),
        T::TextTokenized { .. } => field(&f.name, A::List(item(A::Int32, false)), n, &ty),
    })
}

/// Tells a remote source that the metadata rows of samples `rows` (one
/// stretch of the file, every field's record) are about to be read: each
/// value is found through its record, one small read per record and field
/// otherwise. The values themselves come by read-ahead as they are read.
fn announce_metadata(r: &crate::mldf::Reader, rows: std::ops::Range<u64>) {
    let src = r.source();
    let end = rows.end.min(r.len());
    if !src.is_remote() || rows.start >= end {
        return;
    }
    let base = r.header().metadata_ptr;
    let at = |i: u64| {
        i.checked_mul(r.row_size())
            .and_then(|x| x.checked_add(base))
    };
    if let (Some(a), Some(b)) = (at(rows.start), at(end)) {
        src.prefetch(std::slice::from_ref(&(a..b)));
    }
}

impl Dataset for Mldf {
    fn memory(&self) -> Option<&[u8]> {
        self.0.source().as_slice()
    }

    fn limits(&self) -> crate::core::Limits {
        self.2
    }

    fn format(&self) -> Format {
        Format::Mldf
    }
    fn version(&self) -> String {
        let h = self.0.header();
        format!("{}.{}", h.version_major, h.version_minor)
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.0.validate_with(progress).map_err(fe(Format::Mldf))
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.1.clone()
    }
    fn prefetch(&self, _columns: &[usize], rows: std::ops::Range<u64>) {
        announce_metadata(&self.0, rows);
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let end = rows.end.min(self.0.len());
        let start = rows.start.min(end);
        announce_metadata(&self.0, start..end);
        let mut out = Vec::with_capacity(columns.len());
        for &j in columns {
            let (Some(f), Some(af)) = (self.0.fields().get(j), self.1.fields().get(j)) else {
                return Err(err(
                    Format::Mldf,
                    "invalid_argument",
                    format!("no column {j}"),
                ));
            };
            let context = |e: Error| {
                e.in_format(Format::Mldf)
                    .context(&format!("field {:?}", f.name))
            };
            let a = match &self.3 {
                Some(x) => {
                    let own = x
                        .own_type(j)
                        .ok_or_else(|| Error::invalid("no such field"))?;
                    let raw = column(&self.0, j, &f.ty, own, start..end, &self.2, self.4.get(j))
                        .map_err(context)?;
                    x.restore(j, &raw).map_err(context)?
                }
                None => column(
                    &self.0,
                    j,
                    &f.ty,
                    af.data_type(),
                    start..end,
                    &self.2,
                    self.4.get(j),
                )
                .map_err(context)?,
            };
            out.push(a);
        }
        Ok(out)
    }
}

/// Field `j` of samples `rows` as an array of `dt` (`spans`: what is known
/// of where the field's values lie).
fn column(
    r: &crate::mldf::Reader,
    j: usize,
    ty: &crate::mldf::FieldType,
    dt: &arrow_schema::DataType,
    rows: std::ops::Range<u64>,
    limits: &crate::core::Limits,
    spans: Option<&Spans>,
) -> Result<arrow_array::ArrayRef, Error> {
    use crate::mldf::{Dtype, FieldType as T, Value as M};
    use crate::typed::{FixedCells, VarCells};
    use arrow_array::{ArrayRef, PrimitiveArray, StructArray};
    use std::sync::Arc;
    let n = usize::try_from(rows.end - rows.start).unwrap_or(usize::MAX);
    limits
        .check_count("MLDF samples", n as u64)
        .map_err(Error::limit)?;
    let val = |i: u64| r.value(i, j).map_err(fe(Format::Mldf));
    match ty {
        T::NdArray { dtype, .. } if *dtype != Dtype::BF16 => {
            // Values stored back to back, uncompressed, in the file's memory
            // become one buffer that shares it; anything else is copied.
            // Once a read of every record found them back to back, any
            // run of them is a slice of that range: no pointer is checked
            // again. Reads of fewer records check their own.
            let all = r.len();
            let known = match spans {
                Some(s) if rows.start == 0 && rows.end == all => {
                    Some(s.get_or_init(|| r.contiguous_values(j, 0..all).ok().flatten()))
                }
                Some(s) => s.get(),
                None => None,
            };
            let span = match known {
                Some(Some(whole)) => {
                    let each = (whole.end - whole.start) / all.max(1);
                    Some(whole.start + rows.start * each..whole.start + rows.end * each)
                }
                _ => r
                    .contiguous_values(j, rows.clone())
                    .map_err(fe(Format::Mldf))?,
            };
            let shared = span.and_then(|s| {
                let all = r.source().as_slice()?;
                let s = all.get(usize::try_from(s.start).ok()?..usize::try_from(s.end).ok()?)?;
                crate::typed::shared_buffer(r.source(), s)
            });
            if let Some(buf) = shared {
                return crate::typed::fixed_array(dt, buf, n, None);
            }
            let mut cells = FixedCells::new(dt, n, limits)?;
            r.fixed_cells(j, rows, fe(Format::Mldf), |cell| cells.push(cell))?;
            cells.finish(dt)
        }
        T::Int | T::Float | T::NdArray { .. } => {
            let bf16 = matches!(
                ty,
                T::NdArray {
                    dtype: Dtype::BF16,
                    ..
                }
            );
            let mut cells = FixedCells::new(dt, n, limits)?;
            if bf16 {
                // Each bfloat16 widened to the float32 with the same bits on top.
                let mut wide = Vec::new();
                r.fixed_cells(j, rows, fe(Format::Mldf), |cell| match cell {
                    Some(b) => {
                        wide.clear();
                        wide.extend(b.chunks_exact(2).flat_map(|c| {
                            [
                                0,
                                0,
                                c.first().copied().unwrap_or(0),
                                c.get(1).copied().unwrap_or(0),
                            ]
                        }));
                        cells.push(Some(&wide))
                    }
                    None => cells.push(None),
                })?;
            } else {
                r.fixed_cells(j, rows, fe(Format::Mldf), |cell| cells.push(cell))?;
            }
            cells.finish(dt)
        }
        T::Bytes | T::Opaque { .. } | T::Json | T::TextRaw | T::TextTokenized { .. } => {
            let mut cells = VarCells::new(n, limits);
            for i in rows {
                match val(i)? {
                    M::Missing => cells.push(None)?,
                    M::Bytes(b) | M::Opaque(b) => cells.push(Some(&b))?,
                    M::Json(t) | M::Text(t) => cells.push(Some(t.as_bytes()))?,
                    t @ M::Tokens { .. } => {
                        let ids: Vec<u8> = t
                            .token_ids()
                            .unwrap_or_default()
                            .into_iter()
                            .flat_map(i32::to_le_bytes)
                            .collect();
                        cells.push(Some(&ids))?
                    }
                    _ => return Err(Error::invalid(format!("sample {i}: not a {}", ty.name()))),
                }
            }
            cells.finish(dt)
        }
        T::ImageRaw
        | T::ImageJpeg { .. }
        | T::ImagePng
        | T::AudioWaveform { .. }
        | T::AudioCompressed => {
            let arrow_schema::DataType::Struct(fields) = dt else {
                return Err(Error::invalid("image/audio type is not a struct"));
            };
            let mut data = VarCells::new(n, limits);
            let mut nums: Vec<Vec<u64>> =
                vec![Vec::with_capacity(n); fields.len().saturating_sub(1)];
            let mut valid = Vec::with_capacity(n);
            for i in rows {
                let v = val(i)?;
                let (bytes, parts): (Option<&[u8]>, Vec<u64>) = match &v {
                    M::Missing => (None, vec![0; nums.len()]),
                    M::Image {
                        height,
                        width,
                        channels,
                        data: d,
                        ..
                    } => (
                        Some(d),
                        vec![u64::from(*height), u64::from(*width), u64::from(*channels)],
                    ),
                    M::Audio {
                        num_samples,
                        sample_rate,
                        num_channels,
                        bit_depth,
                        codec,
                        data: d,
                    } => (
                        Some(d),
                        vec![
                            u64::from(*num_samples),
                            u64::from(*sample_rate),
                            u64::from(*num_channels),
                            u64::from(*bit_depth),
                            u64::from(*codec),
                        ],
                    ),
                    _ => return Err(Error::invalid(format!("sample {i}: not a {}", ty.name()))),
                };
                if parts.len() != nums.len() {
                    return Err(Error::invalid(format!("sample {i}: not a {}", ty.name())));
                }
                valid.push(bytes.is_some());
                data.push(Some(bytes.unwrap_or_default()))?;
                for (col, x) in nums.iter_mut().zip(parts) {
                    col.push(x);
                }
            }
            let mut arrays: Vec<ArrayRef> = vec![data.finish(&arrow_schema::DataType::Binary)?];
            for (f, col) in fields.iter().skip(1).zip(nums) {
                arrays.push(match f.data_type() {
                    arrow_schema::DataType::UInt8 => Arc::new(PrimitiveArray::<
                        arrow_array::types::UInt8Type,
                    >::from_iter_values(
                        col.into_iter().map(|x| x as u8)
                    )),
                    arrow_schema::DataType::UInt16 => Arc::new(PrimitiveArray::<
                        arrow_array::types::UInt16Type,
                    >::from_iter_values(
                        col.into_iter().map(|x| x as u16)
                    )),
                    _ => Arc::new(
                        PrimitiveArray::<arrow_array::types::UInt32Type>::from_iter_values(
                            col.into_iter().map(|x| x as u32),
                        ),
                    ),
                });
            }
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                arrays,
                crate::typed::nulls(&valid),
            )?))
        }
    }
}
