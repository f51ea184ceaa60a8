//! ndarray arrays and views of numeric data (feature `ndarray`).
//!
//! Views borrow the file where the format stores plain little-endian
//! numbers at an aligned place (uncompressed MLDF NDARRAY values in a
//! mapped file, CNTK dense records); everything compressed is decoded once
//! into an owned array (Bloscpack, BLZ/bcolz), and IDV columns move their
//! decoded vector into the array without a copy.
//!
//! ```no_run
//! use dataformats::ndarray::mldf_ndarray;
//! let r = dataformats::mldf::Reader::open("data.mldf").unwrap();
//! let j = r.field_index("features").unwrap();
//! let a = mldf_ndarray::<f32>(&r, 0, j).unwrap();
//! println!("shape {:?}, borrowed: {}", a.shape(), a.is_view());
//! ```

use ::ndarray::{ArrayD, CowArray, IxDyn, ShapeBuilder};

use crate::core::plain::{self, Plain};
use crate::dataset::{Error, Value, numpy_dtype_name};

/// An element type arrays can hold: the primitive numbers.
pub trait Element: Plain {
    /// The common dtype name (`float32`, `int64`, ...).
    const DTYPE: &'static str;
}

macro_rules! element {
    ($($t:ty => $n:expr),*) => {$(
        impl Element for $t {
            const DTYPE: &'static str = $n;
        }
    )*};
}
element!(u8 => "uint8", i8 => "int8", u16 => "uint16", i16 => "int16", u32 => "uint32",
    i32 => "int32", u64 => "uint64", i64 => "int64", f32 => "float32", f64 => "float64");

fn error(kind: &str, message: String) -> Error {
    match kind {
        "limit_exceeded" => Error::limit(message),
        "missing" | "invalid_argument" => Error::InvalidArgument {
            format: None,
            message,
        },
        _ => Error::invalid(message),
    }
}

fn check_dtype<T: Element>(dtype: &str) -> Result<(), Error> {
    let name = match dtype {
        "f32" => "float32".to_string(),
        "f64" => "float64".to_string(),
        d => numpy_dtype_name(d),
    };
    if name == T::DTYPE {
        Ok(())
    } else {
        Err(error(
            "invalid_argument",
            format!("elements are {dtype}, not {}", T::DTYPE),
        ))
    }
}

fn dims(shape: &[u64]) -> Result<Vec<usize>, Error> {
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| error("limit_exceeded", format!("dimension {d} too large")))
        })
        .collect()
}

/// Decodes little-endian `bytes` into an owned array of `shape` (C order,
/// or Fortran order when `fortran`).
fn owned<T: Element>(bytes: &[u8], shape: &[u64], fortran: bool) -> Result<ArrayD<T>, Error> {
    let mut v = vec![T::default(); bytes.len() / T::SIZE];
    plain::copy_into(bytes, &mut v).map_err(|e| error("invalid_argument", format!("{e:?}")))?;
    let d = dims(shape)?;
    ArrayD::from_shape_vec(IxDyn(&d).set_f(fortran), v)
        .map_err(|e| error("invalid_argument", e.to_string()))
}

/// A view of `bytes` when they are aligned for `T`, else an owned copy.
fn cow<'a, T: Element>(bytes: &'a [u8], shape: &[u64]) -> Result<CowArray<'a, T, IxDyn>, Error> {
    let d = dims(shape)?;
    match plain::cast_slice::<T>(bytes) {
        Some(s) => ::ndarray::ArrayViewD::from_shape(IxDyn(&d), s)
            .map(CowArray::from)
            .map_err(|e| error("invalid_argument", e.to_string())),
        None => owned(bytes, shape, false).map(CowArray::from),
    }
}

/// A tensor [`Value`] (from [`crate::Dataset::record`]) as an owned array.
pub fn tensor<T: Element>(v: &Value) -> Result<ArrayD<T>, Error> {
    match v {
        Value::Tensor { dtype, shape, data } => {
            check_dtype::<T>(dtype)?;
            owned(data, shape, false)
        }
        other => Err(error(
            "invalid_argument",
            format!("not a tensor: {}", other.to_json()),
        )),
    }
}

/// The NDARRAY value of field `field` in `sample`, borrowed from the file
/// when it is memory mapped, uncompressed and aligned (MLDF aligns values to
/// 8 bytes), else decoded into an owned array. Missing values are an error.
#[cfg(feature = "mldf")]
pub fn mldf_ndarray<T: Element>(
    r: &crate::mldf::Reader,
    sample: u64,
    field: usize,
) -> Result<CowArray<'_, T, IxDyn>, Error> {
    use crate::mldf::{FieldType, Value as M};
    let f = r.fields().get(field).ok_or_else(|| {
        error(
            "invalid_argument",
            format!("field {field} of {}", r.fields().len()),
        )
    })?;
    let FieldType::NdArray { dtype, shape } = &f.ty else {
        return Err(error(
            "invalid_argument",
            format!("field {:?} is {}, not NDARRAY", f.name, f.ty.name()),
        ));
    };
    check_dtype::<T>(dtype.name())?;
    let v = r
        .value(sample, field)
        .map_err(|e| crate::error::FormatError::into_facade(e, crate::Format::Mldf))?;
    match v {
        M::NdArray(std::borrow::Cow::Borrowed(b)) => cow(b, shape),
        M::NdArray(std::borrow::Cow::Owned(b)) => owned(&b, shape, false).map(CowArray::from),
        _ => Err(error(
            "missing",
            format!("sample {sample}, field {:?} has no value", f.name),
        )),
    }
}

/// A dense CNTK record as a `[samples, dim]` array: a view of the mapped
/// file when the stream's element type is `T` and the bytes are aligned.
#[cfg(feature = "cntk")]
pub fn cntk_dense<'a, T: Element>(
    d: &crate::cntk::DenseView<'a>,
) -> Result<CowArray<'a, T, IxDyn>, Error> {
    check_dtype::<T>(d.elem.name())?;
    cow(d.raw(), &[u64::from(d.samples), u64::from(d.dim)])
}

/// A Bloscpack file with numpy metadata as an array of its shape and order
/// (the payload is decompressed once).
#[cfg(feature = "bloscpack")]
pub fn bloscpack_array<T: Element>(r: &crate::bloscpack::Reader) -> Result<ArrayD<T>, Error> {
    let e = |x: crate::bloscpack::Error| {
        crate::error::FormatError::into_facade(x, crate::Format::Bloscpack)
    };
    let m = r.numpy().ok_or_else(|| {
        error(
            "invalid_argument",
            "the file has no numpy metadata (shape and dtype unknown)".into(),
        )
    })?;
    check_dtype::<T>(&m.dtype.to_string())?;
    let bytes = r.read_all().map_err(e)?;
    owned(&bytes, &m.shape, m.order == crate::bloscpack::Order::F)
}

/// A BLZ/bcolz array (or one table column) as an array of shape
/// `[len, trailing...]`.
#[cfg(feature = "bloscpack")]
pub fn blz_array<T: Element>(a: &crate::bloscpack::blz::CArray) -> Result<ArrayD<T>, Error> {
    check_dtype::<T>(&a.dtype().to_string())?;
    let bytes = a
        .read_all()
        .map_err(|x| crate::error::FormatError::into_facade(x, crate::Format::Blz))?;
    owned(&bytes, a.shape(), false)
}

/// An IDV scalar column as a 1-d array (the decoded vector moves into the
/// array; nothing is copied).
#[cfg(feature = "idv")]
pub fn idv_column<T: crate::idv::Scalar>(
    r: &crate::idv::Reader,
    name: &str,
) -> Result<::ndarray::Array1<T>, Error> {
    r.column::<T>(name)
        .map(::ndarray::Array1::from_vec)
        .map_err(|x| crate::error::FormatError::into_facade(x, crate::Format::Idv))
}
