//! One view over every format: [`open`] a file, get a [`Dataset`] with a
//! schema, a record count, records as dynamic [`Value`]s, validation and a
//! JSON summary. The format crates stay reachable for everything this view
//! cannot express.

use std::fmt::Write as _;
use std::path::Path;

use crate::{Format, detect};

/// A value of any format, as the common view sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Missing.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer (keys, ids, large counts).
    UInt(u64),
    /// A float (f32 values widened exactly).
    Float(f64),
    /// Text.
    Text(String),
    /// Opaque bytes (an image file, a blob).
    Bytes(Vec<u8>),
    /// A list of values (a variable or sparse structure).
    List(Vec<Value>),
    /// A dense array: element type name, shape, little-endian C-order bytes.
    Tensor {
        /// Element type (`float32`, `int64`, a numpy descr, ...).
        dtype: String,
        /// Dimensions.
        shape: Vec<u64>,
        /// The elements' bytes.
        data: Vec<u8>,
    },
}

impl Value {
    /// JSON text: bytes as `{"len", "hex"}` (hex of the first 32 bytes),
    /// tensors as `{"dtype", "shape", "len"}`, non-finite floats as strings.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(x) => {
                let _ = write!(out, "{x}");
            }
            Value::UInt(x) => {
                let _ = write!(out, "{x}");
            }
            Value::Float(x) if x.is_finite() => {
                let _ = write!(out, "{x:?}");
            }
            Value::Float(x) => out.push_str(if x.is_nan() {
                "\"NaN\""
            } else if *x > 0.0 {
                "\"Infinity\""
            } else {
                "\"-Infinity\""
            }),
            Value::Text(s) => crate::core::text::push_json_string(out, s),
            Value::Bytes(b) => {
                let hex: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
                let _ = write!(out, "{{\"len\": {}, \"hex\": \"{hex}\"}}", b.len());
            }
            Value::List(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write_json(out);
                }
                out.push(']');
            }
            Value::Tensor { dtype, shape, data } => {
                let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
                let _ = write!(
                    out,
                    "{{\"dtype\": \"{dtype}\", \"shape\": [{}], ",
                    dims.join(", ")
                );
                match elements(dtype, data) {
                    Some(vals) => {
                        out.push_str("\"values\": [");
                        for (i, v) in vals.iter().enumerate() {
                            if i > 0 {
                                out.push_str(", ");
                            }
                            v.write_json(out);
                        }
                        out.push_str("]}");
                    }
                    None => {
                        let hex: String = data.iter().map(|x| format!("{x:02x}")).collect();
                        let _ = write!(out, "\"hex\": \"{hex}\"}}");
                    }
                }
            }
        }
    }
}

/// A tensor's elements as flat values (C order), for the numeric dtypes.
pub fn elements(dtype: &str, data: &[u8]) -> Option<Vec<Value>> {
    fn each<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> Value) -> Vec<Value> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    Some(match dtype {
        "float32" | "<f4" | "f4" => each(data, |b| Value::Float(f64::from(f32::from_le_bytes(b)))),
        "float64" | "<f8" | "f8" => each(data, |b| Value::Float(f64::from_le_bytes(b))),
        "int8" | "|i1" | "i1" => each(data, |b: [u8; 1]| Value::Int(i64::from(b[0] as i8))),
        "uint8" | "|u1" | "u1" => each(data, |b: [u8; 1]| Value::UInt(u64::from(b[0]))),
        "bool" | "|b1" | "b1" => each(data, |b: [u8; 1]| Value::Bool(b[0] != 0)),
        "int16" | "<i2" | "i2" => each(data, |b| Value::Int(i64::from(i16::from_le_bytes(b)))),
        "uint16" | "<u2" | "u2" => each(data, |b| Value::UInt(u64::from(u16::from_le_bytes(b)))),
        "int32" | "<i4" | "i4" => each(data, |b| Value::Int(i64::from(i32::from_le_bytes(b)))),
        "uint32" | "<u4" | "u4" => each(data, |b| Value::UInt(u64::from(u32::from_le_bytes(b)))),
        "int64" | "<i8" | "i8" => each(data, |b| Value::Int(i64::from_le_bytes(b))),
        "uint64" | "<u8" | "u8" => each(data, |b| Value::UInt(u64::from_le_bytes(b))),
        _ => return None,
    })
}

/// The common name (`float32`, `uint8`, `bool`, ...) of a little-endian
/// numpy type string (`<f4`, `|u1`, `|b1`, ...); other strings unchanged.
pub fn numpy_dtype_name(descr: &str) -> String {
    let kind = descr.strip_prefix(['<', '|', '=']).unwrap_or(descr);
    match kind {
        "b1" => "bool",
        "i1" => "int8",
        "u1" => "uint8",
        "i2" => "int16",
        "u2" => "uint16",
        "i4" => "int32",
        "u4" => "uint32",
        "i8" => "int64",
        "u8" => "uint64",
        "f2" => "float16",
        "f4" => "float32",
        "f8" => "float64",
        _ => return descr.to_string(),
    }
    .to_string()
}

/// One column (field, stream) of a dataset's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Name.
    pub name: String,
    /// The format's own type name (`Single`, `NDARRAY`, `dense f32`, ...).
    pub ty: String,
    /// Shape of one value: empty for a scalar, a 0 for a variable dimension.
    pub shape: Vec<u64>,
}

/// An error from [`open`] or a [`Dataset`]: the format's own error kind and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The format, when known.
    pub format: Option<Format>,
    /// The format crate's error kind (`truncated`, `BadValue`, ...), or
    /// `unsupported` / `io` / `invalid_argument`.
    pub kind: String,
    /// What went wrong, with its location.
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

fn err(format: Format, kind: &str, message: impl std::fmt::Display) -> Error {
    Error {
        format: Some(format),
        kind: kind.to_string(),
        message: message.to_string(),
    }
}

/// The errors of the format crates, by their kind word.
trait KindWord: std::fmt::Display {
    fn word(&self) -> &'static str;
}

macro_rules! kind_word {
    ($($feature:literal => $t:ty),*) => {$(
        #[cfg(feature = $feature)]
        impl KindWord for $t {
            fn word(&self) -> &'static str {
                self.kind().as_str()
            }
        }
    )*};
}
kind_word!("idv" => crate::idv::Error, "mldf" => crate::mldf::Error,
    "cntk" => crate::cntk::Error, "tbl2" => crate::tbl2::Error,
    "bloscpack" => crate::bloscpack::Error);

/// Maps a format crate's error to a [`Error`] of `format`, keeping its kind.
#[allow(dead_code)]
fn fe<E: KindWord>(format: Format) -> impl Fn(E) -> Error + Copy {
    move |x| err(format, x.word(), x)
}

/// A dataset of any format.
pub trait Dataset: Send + Sync {
    /// Which format.
    fn format(&self) -> Format;
    /// The file's format version.
    fn version(&self) -> String;
    /// The columns every record has, in order.
    fn columns(&self) -> Vec<Column>;
    /// Number of records (rows, samples, sequences).
    fn len(&self) -> u64;
    /// Whether there are no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Record `i`: one value per column.
    fn record(&self, i: u64) -> Result<Vec<Value>, Error>;
    /// Records `range` (clamped to the records there are), in order. Formats
    /// that store values in compressed blocks decode each block once here,
    /// so reading a file in batches is much faster than record by record.
    fn records(&self, range: std::ops::Range<u64>) -> Result<Vec<Vec<Value>>, Error> {
        let end = range.end.min(self.len());
        (range.start.min(end)..end)
            .map(|i| self.record(i))
            .collect()
    }
    /// Checks the whole file the way the format's validator does.
    fn validate(&self) -> Result<(), Error>;
    /// A JSON summary: format, version, records, columns.
    fn summary_json(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "{{\"format\": \"{}\", \"version\": \"{}\", \"records\": {}, \"columns\": [",
            self.format().name(),
            self.version(),
            self.len()
        );
        for (i, c) in self.columns().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str("{\"name\": ");
            crate::core::text::push_json_string(&mut out, &c.name);
            out.push_str(", \"type\": ");
            crate::core::text::push_json_string(&mut out, &c.ty);
            let dims: Vec<String> = c.shape.iter().map(ToString::to_string).collect();
            let _ = write!(out, ", \"shape\": [{}]}}", dims.join(", "));
        }
        out.push_str("]}");
        out
    }
}

impl dyn Dataset + '_ {
    /// Every record in order, read in batches through [`Dataset::records`]
    /// (so compressed blocks are decoded once); stops after the first error.
    pub fn iter(&self) -> Records<'_> {
        Records {
            d: self,
            next: 0,
            batch: Vec::new().into_iter(),
            failed: false,
        }
    }
}

/// The iterator of [`Dataset::iter`](trait.Dataset.html#method.iter).
pub struct Records<'a> {
    d: &'a dyn Dataset,
    next: u64,
    batch: std::vec::IntoIter<Vec<Value>>,
    failed: bool,
}

impl Iterator for Records<'_> {
    type Item = Result<Vec<Value>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.batch.next() {
            return Some(Ok(r));
        }
        if self.failed || self.next >= self.d.len() {
            return None;
        }
        let end = self.d.len().min(self.next + 1024);
        match self.d.records(self.next..end) {
            Ok(rows) => {
                self.next = end;
                self.batch = rows.into_iter();
                self.batch.next().map(Ok)
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Opens `path` (a file, or a BLZ/bcolz directory), whatever its format.
pub fn open(path: impl AsRef<Path>) -> Result<Box<dyn Dataset>, Error> {
    let path = path.as_ref();
    let format = detect(path)
        .map_err(|e| Error {
            format: None,
            kind: "io".into(),
            message: format!("{}: {e}", path.display()),
        })?
        .ok_or_else(|| Error {
            format: None,
            kind: "unrecognized".into(),
            message: format!("{}: no known magic number or layout", path.display()),
        })?;
    open_as(path, format)
}

/// Opens `path` as `format` (files are memory mapped; they must not change
/// while open).
pub fn open_as(path: &Path, format: Format) -> Result<Box<dyn Dataset>, Error> {
    #[cfg(feature = "bloscpack")]
    if format == Format::Blz {
        return formats::blz(path);
    }
    if !has_view(format) || format == Format::Blz {
        return Err(no_view(format, &path.display().to_string()));
    }
    // SAFETY: the facade documents that files must not change while open.
    let src = unsafe { crate::core::Source::map(path) }
        .map_err(|x| err(format, "io", format!("{}: {x}", path.display())))?;
    from_source(src, format)
}

/// Opens an in-memory file, whatever its format (detected by magic number,
/// or as FFCV by a plausible header). BLZ/bcolz, being directories, cannot
/// come from bytes.
pub fn open_bytes(bytes: Vec<u8>) -> Result<Box<dyn Dataset>, Error> {
    let head = bytes.get(..crate::SNIFF_LEN).unwrap_or(&bytes);
    let format = crate::detect_bytes(head)
        .or_else(|| crate::looks_like_ffcv(head).then_some(Format::Ffcv))
        .ok_or_else(|| Error {
            format: None,
            kind: "unrecognized".into(),
            message: "no known magic number".into(),
        })?;
    open_bytes_as(bytes, format)
}

/// Opens an in-memory file as `format`.
pub fn open_bytes_as(bytes: Vec<u8>, format: Format) -> Result<Box<dyn Dataset>, Error> {
    if !has_view(format) || format == Format::Blz {
        return Err(no_view(format, "bytes"));
    }
    from_source(crate::core::Source::from_vec(bytes), format)
}

fn has_view(format: Format) -> bool {
    format.is_available() && format != Format::Ctf
}

fn no_view(format: Format, what: &str) -> Error {
    err(
        format,
        "unsupported",
        format!(
            "{what}: {} ({}) has no common view in this build{}",
            format.name(),
            format.description(),
            if format == Format::Blz {
                "; a BLZ/bcolz array is a directory"
            } else if format.is_available() {
                "; use its crate's reader"
            } else {
                ""
            }
        ),
    )
}

#[allow(unused_variables)]
fn from_source(src: crate::core::Source, format: Format) -> Result<Box<dyn Dataset>, Error> {
    match format {
        #[cfg(feature = "idv")]
        Format::Idv => formats::idv(src),
        #[cfg(feature = "mldf")]
        Format::Mldf => formats::mldf(src),
        #[cfg(feature = "mldf")]
        Format::Ffcv => formats::ffcv(src),
        #[cfg(feature = "cntk")]
        Format::Cntk => formats::cntk(src),
        #[cfg(feature = "tbl2")]
        Format::Tbl2 => formats::tbl2(src),
        #[cfg(feature = "bloscpack")]
        Format::Bloscpack => formats::bloscpack(src),
        other => Err(no_view(other, "input")),
    }
}

#[allow(unused_imports)]
mod formats {
    use super::{Column, Dataset, Error, Value, err, fe};
    use crate::Format;
    use std::path::Path;

    #[cfg(feature = "idv")]
    pub(super) fn idv(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        use crate::idv::Reader;
        let e = fe::<crate::idv::Error>(Format::Idv);
        let r = Reader::with_limits(src, crate::core::Limits::default()).map_err(e)?;
        Ok(Box::new(Idv(r)))
    }

    #[cfg(feature = "idv")]
    struct Idv(crate::idv::Reader);

    #[cfg(feature = "idv")]
    fn idv_value(v: &crate::idv::Values, i: usize) -> Value {
        use crate::idv::Values as V;
        let at = |x: Option<Value>| x.unwrap_or(Value::Null);
        match v {
            V::I8(x) => at(x.get(i).map(|&y| Value::Int(i64::from(y)))),
            V::U8(x) => at(x.get(i).map(|&y| Value::UInt(u64::from(y)))),
            V::I16(x) => at(x.get(i).map(|&y| Value::Int(i64::from(y)))),
            V::U16(x) => at(x.get(i).map(|&y| Value::UInt(u64::from(y)))),
            V::I32(x) => at(x.get(i).map(|&y| Value::Int(i64::from(y)))),
            V::U32(x) => at(x.get(i).map(|&y| Value::UInt(u64::from(y)))),
            V::I64(x) => at(x.get(i).map(|&y| Value::Int(y))),
            V::U64(x) | V::Key(x) => at(x.get(i).map(|&y| Value::UInt(y))),
            V::F32(x) => at(x.get(i).map(|&y| Value::Float(f64::from(y)))),
            V::F64(x) => at(x.get(i).map(|&y| Value::Float(y))),
            V::Bool(x) => at(x.get(i).map(|&y| Value::Bool(y))),
            V::Text(t) => at(t.get(i).map(|s| Value::Text(s.into_owned()))),
            V::Vector(vv) => match vv.dense(i) {
                Some(d) => tensor(&d).unwrap_or_else(|| {
                    Value::List((0..d.len()).map(|k| idv_value(&d, k)).collect())
                }),
                None => Value::Null,
            },
            other => Value::Text(crate::idv::render::text_scalar(other, i)),
        }
    }

    /// A numeric vector as a 1-d tensor of its own type.
    #[cfg(feature = "idv")]
    fn tensor(d: &crate::idv::Values) -> Option<Value> {
        use crate::idv::Values as V;
        fn le<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        let (dtype, data) = match d {
            V::I8(x) => ("int8", le(x, i8::to_le_bytes)),
            V::U8(x) => ("uint8", x.clone()),
            V::I16(x) => ("int16", le(x, i16::to_le_bytes)),
            V::U16(x) => ("uint16", le(x, u16::to_le_bytes)),
            V::I32(x) => ("int32", le(x, i32::to_le_bytes)),
            V::U32(x) => ("uint32", le(x, u32::to_le_bytes)),
            V::I64(x) => ("int64", le(x, i64::to_le_bytes)),
            V::U64(x) => ("uint64", le(x, u64::to_le_bytes)),
            V::F32(x) => ("float32", le(x, f32::to_le_bytes)),
            V::F64(x) => ("float64", le(x, f64::to_le_bytes)),
            _ => return None,
        };
        Some(Value::Tensor {
            dtype: dtype.to_string(),
            shape: vec![d.len() as u64],
            data,
        })
    }

    #[cfg(feature = "idv")]
    impl Dataset for Idv {
        fn format(&self) -> Format {
            Format::Idv
        }
        fn version(&self) -> String {
            crate::idv::version_string(self.0.header().version)
        }
        fn columns(&self) -> Vec<Column> {
            self.0
                .columns()
                .iter()
                .filter(|c| !c.is_dead())
                .map(|c| {
                    let ty = c.ty().map(ToString::to_string).unwrap_or_default();
                    let shape = match c.ty() {
                        Some(crate::idv::ColumnType::Vector { dims, .. }) => {
                            if dims.is_empty() {
                                vec![0]
                            } else {
                                dims.iter().map(|&d| u64::from(d)).collect()
                            }
                        }
                        _ => Vec::new(),
                    };
                    Column {
                        name: c.name.clone(),
                        ty,
                        shape,
                    }
                })
                .collect()
        }
        fn len(&self) -> u64 {
            self.0.row_count()
        }
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            let mut out = Vec::new();
            for (k, c) in self.0.columns().iter().enumerate() {
                if c.is_dead() {
                    continue;
                }
                let v = self.0.read_rows(k, i..i + 1).map_err(fe(Format::Idv))?;
                out.push(idv_value(&v, 0));
            }
            Ok(out)
        }
        fn records(&self, range: std::ops::Range<u64>) -> Result<Vec<Vec<Value>>, Error> {
            let end = range.end.min(self.0.row_count());
            let start = range.start.min(end);
            // Decode first: the rows exist only once their blocks did.
            let mut columns = Vec::new();
            for (k, c) in self.0.columns().iter().enumerate() {
                if !c.is_dead() {
                    columns.push(self.0.read_rows(k, start..end).map_err(fe(Format::Idv))?);
                }
            }
            let n = match columns.first() {
                Some(v) => v.len(),
                None => {
                    // No live column: rows of nothing, as many as the header
                    // says, within the limits.
                    let n = end - start;
                    let limit = crate::core::Limits::default().max_count;
                    if n > limit {
                        return Err(err(
                            Format::Idv,
                            "limit_exceeded",
                            format!("{n} records of no columns exceed the limit of {limit}"),
                        ));
                    }
                    usize::try_from(n).unwrap_or(0)
                }
            };
            Ok((0..n)
                .map(|j| columns.iter().map(|v| idv_value(v, j)).collect())
                .collect())
        }
        fn validate(&self) -> Result<(), Error> {
            self.0.validate().map_err(fe(Format::Idv))
        }
    }

    #[cfg(feature = "mldf")]
    pub(super) fn mldf(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        let r = crate::mldf::Reader::with_limits(src, crate::core::Limits::default())
            .map_err(fe(Format::Mldf))?;
        Ok(Box::new(Mldf(r)))
    }

    #[cfg(feature = "mldf")]
    struct Mldf(crate::mldf::Reader);

    #[cfg(feature = "mldf")]
    impl Dataset for Mldf {
        fn format(&self) -> Format {
            Format::Mldf
        }
        fn version(&self) -> String {
            let h = self.0.header();
            format!("{}.{}", h.version_major, h.version_minor)
        }
        fn columns(&self) -> Vec<Column> {
            use crate::mldf::FieldType as T;
            self.0
                .fields()
                .iter()
                .map(|f| Column {
                    name: f.name.clone(),
                    ty: f.ty.name(),
                    shape: match &f.ty {
                        T::NdArray { shape, .. } => shape.clone(),
                        T::Int | T::Float => Vec::new(),
                        _ => vec![0],
                    },
                })
                .collect()
        }
        fn len(&self) -> u64 {
            self.0.num_samples()
        }
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            use crate::mldf::{FieldType as T, Value as M};
            let mut out = Vec::new();
            for (j, f) in self.0.fields().iter().enumerate() {
                let v = self.0.value(i, j).map_err(fe(Format::Mldf))?;
                out.push(match v {
                    M::Missing => Value::Null,
                    M::Int(x) => Value::Int(x),
                    M::Float(x) => Value::Float(x),
                    M::Bytes(b) | M::Opaque(b) => Value::Bytes(b.into_owned()),
                    M::NdArray(b) => match &f.ty {
                        T::NdArray { dtype, shape } => Value::Tensor {
                            dtype: dtype.name().to_string(),
                            shape: shape.clone(),
                            data: b.into_owned(),
                        },
                        _ => Value::Bytes(b.into_owned()),
                    },
                    M::Json(t) | M::Text(t) => Value::Text(t.into_owned()),
                    M::Image { data, .. } | M::Audio { data, .. } => {
                        Value::Bytes(data.into_owned())
                    }
                    t @ M::Tokens { .. } => Value::List(
                        t.token_ids()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|x| Value::Int(i64::from(x)))
                            .collect(),
                    ),
                });
            }
            Ok(out)
        }
        fn validate(&self) -> Result<(), Error> {
            self.0.validate().map_err(fe(Format::Mldf))
        }
    }

    #[cfg(feature = "mldf")]
    pub(super) fn ffcv(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        let r = crate::mldf::ffcv::Reader::with_limits(src, crate::core::Limits::default())
            .map_err(fe(Format::Ffcv))?;
        Ok(Box::new(Ffcv(r)))
    }

    /// FFCV through the common view. An image field becomes four columns:
    /// the stored bytes, `<name>.mode` (`raw` or `jpg`), `<name>.width` and
    /// `<name>.height`, so nothing of the file is lost.
    #[cfg(feature = "mldf")]
    struct Ffcv(crate::mldf::ffcv::Reader);

    #[cfg(feature = "mldf")]
    impl Dataset for Ffcv {
        fn format(&self) -> Format {
            Format::Ffcv
        }
        fn version(&self) -> String {
            self.0.layout().version.to_string()
        }
        fn columns(&self) -> Vec<Column> {
            use crate::mldf::ffcv::FieldType as T;
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
                    for (suffix, ty) in
                        [("mode", "text"), ("width", "uint16"), ("height", "uint16")]
                    {
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
            use crate::mldf::ffcv::{ImageMode, Value as F};
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
                            dtype: super::numpy_dtype_name(dtype),
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
        fn validate(&self) -> Result<(), Error> {
            self.0.validate().map_err(fe(Format::Ffcv))
        }
    }

    #[cfg(feature = "cntk")]
    pub(super) fn cntk(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        let r = crate::cntk::Reader::with_limits(src, crate::core::Limits::default())
            .map_err(fe(Format::Cntk))?;
        let mut starts = Vec::with_capacity(r.chunks().len());
        let mut n = 0u64;
        for c in r.chunks() {
            starts.push(n);
            n += u64::from(c.num_sequences);
        }
        Ok(Box::new(Cntk { r, starts, n }))
    }

    #[cfg(feature = "cntk")]
    struct Cntk {
        r: crate::cntk::Reader,
        starts: Vec<u64>,
        n: u64,
    }

    #[cfg(feature = "cntk")]
    impl Dataset for Cntk {
        fn format(&self) -> Format {
            Format::Cntk
        }
        fn version(&self) -> String {
            crate::cntk::VERSION.to_string()
        }
        fn columns(&self) -> Vec<Column> {
            use crate::cntk::StreamKind;
            self.r
                .streams()
                .iter()
                .map(|s| Column {
                    name: s.name.clone(),
                    ty: format!(
                        "{} {}",
                        if s.kind == StreamKind::Dense {
                            "dense"
                        } else {
                            "sparse"
                        },
                        s.elem.name()
                    ),
                    shape: vec![0, u64::from(s.dim)],
                })
                .collect()
        }
        fn len(&self) -> u64 {
            self.n
        }
        /// Sequence `i`: a dense stream as a `[samples, dim]` tensor, a sparse
        /// one as a list of samples, each a list of `[index, value]` pairs.
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            use crate::cntk::{ElemType, RecordView};
            if i >= self.n {
                return Err(err(
                    Format::Cntk,
                    "invalid_argument",
                    format!("no sequence {i}"),
                ));
            }
            let c = self.starts.partition_point(|&s| s <= i) - 1;
            let q = (i - self.starts.get(c).copied().unwrap_or(0)) as usize;
            let view = self.r.chunk_view(c).map_err(fe(Format::Cntk))?;
            let mut out = Vec::new();
            for s in 0..self.r.streams().len() {
                out.push(match view.record(s, q) {
                    Some(RecordView::Dense(d)) => Value::Tensor {
                        dtype: d.elem.name().replace('f', "float"),
                        shape: vec![u64::from(d.samples), u64::from(d.dim)],
                        data: d.raw().to_vec(),
                    },
                    Some(RecordView::Sparse(sp)) => Value::List(
                        sp.samples_entries()
                            .into_iter()
                            .map(|e| {
                                Value::List(
                                    e.into_iter()
                                        .map(|(k, v)| {
                                            Value::List(vec![
                                                Value::UInt(u64::from(k)),
                                                Value::Float(v),
                                            ])
                                        })
                                        .collect(),
                                )
                            })
                            .collect(),
                    ),
                    None => Value::Null,
                });
            }
            Ok(out)
        }
        fn validate(&self) -> Result<(), Error> {
            self.r.validate().map_err(fe(Format::Cntk))
        }
    }

    #[cfg(feature = "tbl2")]
    pub(super) fn tbl2(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        let r = crate::tbl2::Reader::with_options(src, crate::tbl2::ReadOptions::default())
            .map_err(fe(Format::Tbl2))?;
        Ok(Box::new(Tbl2(r)))
    }

    #[cfg(feature = "tbl2")]
    struct Tbl2(crate::tbl2::Reader);

    #[cfg(feature = "tbl2")]
    impl Dataset for Tbl2 {
        fn format(&self) -> Format {
            Format::Tbl2
        }
        fn version(&self) -> String {
            self.0.header().version.to_string()
        }
        fn columns(&self) -> Vec<Column> {
            let c = |n: &str, t: &str| Column {
                name: n.into(),
                ty: t.into(),
                shape: Vec::new(),
            };
            vec![
                c("data", "bytes"),
                c("format", "text"),
                c("width", "uint16"),
                c("height", "uint16"),
                c("metadata", "bytes"),
            ]
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            let e = fe::<crate::tbl2::Error>(Format::Tbl2);
            let k = usize::try_from(i).unwrap_or(usize::MAX);
            let entry = *self.0.entry(k).map_err(e)?;
            let data = self.0.read_sample(k).map_err(e)?.into_owned();
            let meta = self
                .0
                .read_metadata(k)
                .map_err(e)?
                .map(|(_, b)| Value::Bytes(b.into_owned()));
            Ok(vec![
                Value::Bytes(data),
                Value::Text(entry.format.name()),
                Value::UInt(u64::from(entry.width)),
                Value::UInt(u64::from(entry.height)),
                meta.unwrap_or(Value::Null),
            ])
        }
        fn validate(&self) -> Result<(), Error> {
            self.0.validate().map_err(fe(Format::Tbl2))
        }
    }

    #[cfg(feature = "bloscpack")]
    pub(super) fn bloscpack(src: crate::core::Source) -> Result<Box<dyn Dataset>, Error> {
        let r =
            crate::bloscpack::Reader::with_options(src, crate::bloscpack::ReadOptions::default())
                .map_err(fe(Format::Bloscpack))?;
        Ok(Box::new(Blp(r, std::sync::Mutex::new(None))))
    }

    /// A Bloscpack file: a C-order numpy array gives one record per row
    /// (first axis); anything else (raw bytes, Fortran order) one record
    /// per chunk, as bytes.
    #[cfg(feature = "bloscpack")]
    struct Blp(
        crate::bloscpack::Reader,
        /// The last decoded chunk, so reading rows in order decodes each
        /// chunk once.
        std::sync::Mutex<Option<(usize, Vec<u8>)>>,
    );

    #[cfg(feature = "bloscpack")]
    impl Blp {
        fn rows(&self) -> Option<(&crate::bloscpack::numpy::NumpyMeta, u64, u64)> {
            let m = self.0.numpy()?;
            if m.order != crate::bloscpack::numpy::Order::C {
                return None;
            }
            let rows = m.shape.first().copied().unwrap_or(1);
            let per_row = m.shape.iter().skip(1).product::<u64>() * m.dtype.itemsize() as u64;
            Some((m, rows, per_row))
        }

        /// Payload bytes `[start, start + out.len())`, through the chunk
        /// cache when they lie in one chunk.
        fn read_row(&self, start: u64, out: &mut [u8]) -> crate::bloscpack::Result<()> {
            let chunk = u64::try_from(self.0.header().chunk_size).unwrap_or(0);
            let end = start + out.len() as u64;
            if chunk == 0 || out.is_empty() || start / chunk != (end - 1) / chunk {
                return self.0.read_range_into(start, out);
            }
            let k = usize::try_from(start / chunk).unwrap_or(usize::MAX);
            let Ok(mut cache) = self.1.lock() else {
                return self.0.read_range_into(start, out);
            };
            if cache.as_ref().is_none_or(|(c, _)| *c != k) {
                *cache = Some((k, self.0.read_chunk(k)?));
            }
            let from = usize::try_from(start % chunk).unwrap_or(usize::MAX);
            match cache
                .as_ref()
                .and_then(|(_, b)| b.get(from..from + out.len()))
            {
                Some(src) => {
                    out.copy_from_slice(src);
                    Ok(())
                }
                None => self.0.read_range_into(start, out),
            }
        }
    }

    /// The named fields of a packed structured dtype with their byte
    /// offsets in a record; `None` for a scalar dtype.
    #[cfg(feature = "bloscpack")]
    fn record_fields(
        d: &crate::bloscpack::dtype::Dtype,
    ) -> Option<Vec<(&crate::bloscpack::dtype::Field, usize)>> {
        let crate::bloscpack::dtype::Dtype::Record(fields) = d else {
            return None;
        };
        let mut at = 0usize;
        let mut out = Vec::new();
        for f in fields {
            if !f.name.is_empty() {
                out.push((f, at));
            }
            at += f.dtype.itemsize() * f.shape.iter().product::<u64>() as usize;
        }
        Some(out)
    }

    #[cfg(feature = "bloscpack")]
    impl Dataset for Blp {
        fn format(&self) -> Format {
            Format::Bloscpack
        }
        fn version(&self) -> String {
            self.0.header().format_version.to_string()
        }
        fn columns(&self) -> Vec<Column> {
            match self.rows() {
                Some((m, _, _)) => {
                    let outer: Vec<u64> = m.shape.iter().skip(1).copied().collect();
                    match record_fields(&m.dtype) {
                        Some(fields) => fields
                            .into_iter()
                            .map(|(f, _)| Column {
                                name: f.name.clone(),
                                ty: f.dtype.to_string(),
                                shape: outer.iter().chain(&f.shape).copied().collect(),
                            })
                            .collect(),
                        None => vec![Column {
                            name: "row".into(),
                            ty: m.dtype.to_string(),
                            shape: outer,
                        }],
                    }
                }
                None => vec![Column {
                    name: "chunk".into(),
                    ty: "bytes".into(),
                    shape: vec![0],
                }],
            }
        }
        fn len(&self) -> u64 {
            match self.rows() {
                Some((_, n, _)) => n,
                None => self.0.nchunks() as u64,
            }
        }
        /// A row of a C-order array: one tensor, or for a structured dtype
        /// one tensor per named field (numpy's padding fields are left out).
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            let e = fe::<crate::bloscpack::Error>(Format::Bloscpack);
            if i >= self.len() {
                return Err(err(
                    Format::Bloscpack,
                    "invalid_argument",
                    format!("no record {i}"),
                ));
            }
            let Some((m, _, per_row)) = self.rows() else {
                return Ok(vec![Value::Bytes(
                    self.0.read_chunk(i as usize).map_err(e)?,
                )]);
            };
            let mut data = crate::core::Limits::default()
                .alloc_zeroed("Bloscpack row", per_row)
                .map_err(|x| err(Format::Bloscpack, "limit_exceeded", x))?;
            self.read_row(i * per_row, &mut data).map_err(e)?;
            let outer: Vec<u64> = m.shape.iter().skip(1).copied().collect();
            let Some(fields) = record_fields(&m.dtype) else {
                return Ok(vec![Value::Tensor {
                    dtype: m.dtype.to_string(),
                    shape: outer,
                    data,
                }]);
            };
            let item = m.dtype.itemsize().max(1);
            Ok(fields
                .into_iter()
                .map(|(f, at)| {
                    let size = f.dtype.itemsize() * f.shape.iter().product::<u64>() as usize;
                    let part: Vec<u8> = data
                        .chunks_exact(item)
                        .flat_map(|rec| rec.get(at..at + size).unwrap_or_default().iter().copied())
                        .collect();
                    Value::Tensor {
                        dtype: f.dtype.to_string(),
                        shape: outer.iter().chain(&f.shape).copied().collect(),
                        data: part,
                    }
                })
                .collect())
        }
        fn validate(&self) -> Result<(), Error> {
            self.0.validate().map_err(fe(Format::Bloscpack))
        }
    }

    #[cfg(feature = "bloscpack")]
    pub(super) fn blz(path: &Path) -> Result<Box<dyn Dataset>, Error> {
        let d = crate::bloscpack::blz::BlzDir::open(path).map_err(fe(Format::Blz))?;
        Ok(Box::new(Blz {
            d,
            root: path.to_path_buf(),
        }))
    }

    /// A BLZ/bcolz array (one record per atom) or table (one per row, a
    /// value per column); atoms are handed out as 0-d tensors of their
    /// numpy type.
    #[cfg(feature = "bloscpack")]
    struct Blz {
        d: crate::bloscpack::blz::BlzDir,
        root: std::path::PathBuf,
    }

    #[cfg(feature = "bloscpack")]
    impl Blz {
        fn arrays(&self) -> Vec<(&str, &crate::bloscpack::blz::CArray)> {
            use crate::bloscpack::blz::BlzDir;
            match &self.d {
                BlzDir::Array(a) => vec![("value", a)],
                BlzDir::Table(t) => t
                    .names()
                    .iter()
                    .map(String::as_str)
                    .zip(t.columns())
                    .collect(),
            }
        }
    }

    #[cfg(feature = "bloscpack")]
    impl Dataset for Blz {
        fn format(&self) -> Format {
            Format::Blz
        }
        fn version(&self) -> String {
            use crate::bloscpack::blz::BlzDir;
            match &self.d {
                BlzDir::Array(a) => a.layout().name().to_string(),
                BlzDir::Table(t) => t.layout().name().to_string(),
            }
        }
        fn columns(&self) -> Vec<Column> {
            self.arrays()
                .into_iter()
                .map(|(n, a)| Column {
                    name: n.to_string(),
                    ty: a.dtype_storage_string().to_string(),
                    shape: a.shape().iter().skip(1).copied().collect(),
                })
                .collect()
        }
        fn len(&self) -> u64 {
            self.arrays().first().map_or(0, |(_, a)| a.len())
        }
        fn record(&self, i: u64) -> Result<Vec<Value>, Error> {
            let mut out = Vec::new();
            for (_, a) in self.arrays() {
                if i >= a.len() {
                    return Err(err(
                        Format::Blz,
                        "invalid_argument",
                        format!("no record {i}"),
                    ));
                }
                let mut data = crate::core::Limits::default()
                    .alloc_zeroed("BLZ row", a.atomsize())
                    .map_err(|x| err(Format::Blz, "limit_exceeded", x))?;
                a.read_atoms_into(i, &mut data).map_err(fe(Format::Blz))?;
                out.push(Value::Tensor {
                    dtype: a.dtype_storage_string().to_string(),
                    shape: a.shape().iter().skip(1).copied().collect(),
                    data,
                });
            }
            Ok(out)
        }
        fn records(&self, range: std::ops::Range<u64>) -> Result<Vec<Vec<Value>>, Error> {
            let end = range.end.min(self.len());
            let start = range.start.min(end);
            let n = usize::try_from(end - start).unwrap_or(0);
            let mut rows: Vec<Vec<Value>> = (0..n).map(|_| Vec::new()).collect();
            for (_, a) in self.arrays() {
                let atom = usize::try_from(a.atomsize()).unwrap_or(0);
                let mut data = crate::core::Limits::default()
                    .alloc_zeroed("BLZ rows", a.atomsize().saturating_mul(n as u64))
                    .map_err(|x| err(Format::Blz, "limit_exceeded", x))?;
                a.read_atoms_into(start, &mut data)
                    .map_err(fe(Format::Blz))?;
                let shape: Vec<u64> = a.shape().iter().skip(1).copied().collect();
                for (row, part) in rows.iter_mut().zip(data.chunks_exact(atom.max(1))) {
                    row.push(Value::Tensor {
                        dtype: a.dtype_storage_string().to_string(),
                        shape: shape.clone(),
                        data: part.to_vec(),
                    });
                }
            }
            Ok(rows)
        }
        fn validate(&self) -> Result<(), Error> {
            crate::bloscpack::blz::BlzDir::open_validated(
                &self.root,
                crate::core::Limits::default(),
            )
            .map(|_| ())
            .map_err(fe(Format::Blz))
        }
    }
}
