//! Typed batches into TurboLoader TBL v2: one sample per record.
//!
//! The columns of the TBL v2 view ([`crate::typed`], `docs/arrow.md`) give
//! each sample: `data` (Binary or an image struct as MLDF's view gives it;
//! or `image`, or the only such column), `format` (the format's name as
//! text or dictionary, or its code as an integer; without it, the image
//! type, or JPEG and PNG recognised by their signature), `width` and
//! `height` (integers up to 65535; else the image's; 0 when absent) and
//! `metadata` (struct {type, data}, or the block as bytes or text typed by
//! a `metadata_type` column; null for none). Any other column has no place
//! in TBL v2: refused, or with `lossy` left out and reported.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::{ChangeKind, Report};
use crate::dataset::{BatchStream, Error};
use crate::tbl2::{MetadataType, SampleFormat, SampleInfo, Writer};

/// TBL v2 target settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tbl2Options {
    /// LZ4-compress each sample when that makes it smaller (TurboLoader's
    /// default; off is its `--no-compress`).
    pub compress: bool,
}

impl Default for Tbl2Options {
    fn default() -> Self {
        Tbl2Options { compress: true }
    }
}

fn data_err(message: String) -> Error {
    Error::Data {
        format: Some(crate::Format::Tbl2),
        message,
    }
}

/// The code of a format name (`jpeg`, `png`, ..., as the TBL view names them).
fn format_code(name: &str) -> Option<u8> {
    (0..=255u8).find(|&c| SampleFormat(c).name().eq_ignore_ascii_case(name))
}

/// JPEG and PNG by their first bytes.
fn sniff(data: &[u8]) -> SampleFormat {
    if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        SampleFormat::JPEG
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        SampleFormat::PNG
    } else {
        SampleFormat::UNKNOWN
    }
}

/// An integer of any integer type, as u64 (negative: `None`).
fn uint(a: &dyn Array, i: usize) -> Option<u64> {
    use arrow_array::types::*;
    Some(match a.data_type() {
        DataType::UInt8 => u64::from(a.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => u64::from(a.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => u64::from(a.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i),
        DataType::Int8 => u64::try_from(a.as_primitive::<Int8Type>().value(i)).ok()?,
        DataType::Int16 => u64::try_from(a.as_primitive::<Int16Type>().value(i)).ok()?,
        DataType::Int32 => u64::try_from(a.as_primitive::<Int32Type>().value(i)).ok()?,
        DataType::Int64 => u64::try_from(a.as_primitive::<Int64Type>().value(i)).ok()?,
        _ => return None,
    })
}

fn text_at(a: &dyn Array, i: usize) -> Option<&str> {
    match a.data_type() {
        DataType::Utf8 => Some(a.as_string::<i32>().value(i)),
        DataType::Dictionary(..) => {
            let d = a.as_any_dictionary();
            let k = crate::typed::dict_key(a, i)?;
            let v = d.values().as_string_opt::<i32>()?;
            (k < v.len()).then(|| v.value(k))
        }
        _ => None,
    }
}

/// Which column plays which part.
struct Plan {
    data: usize,
    /// The sample column is an image struct {data, height, width, ...}
    /// (MLDF's IMAGE fields), with the format its field type names.
    image: Option<SampleFormat>,
    format: Option<usize>,
    width: Option<usize>,
    height: Option<usize>,
    metadata: Option<usize>,
    /// The metadata column holds the bytes themselves (Binary or text),
    /// typed by this column's names (`json` when absent or null).
    metadata_type: Option<usize>,
}

impl Plan {
    /// The columns the plan reads, ascending.
    fn used(&self) -> Vec<usize> {
        let mut used: Vec<usize> = [
            Some(self.data),
            self.format,
            self.width,
            self.height,
            self.metadata,
            self.metadata_type,
        ]
        .into_iter()
        .flatten()
        .collect();
        used.sort_unstable();
        used.dedup();
        used
    }
}

/// The columns of `schema` a TBL v2 file is written from (ascending), the
/// others noted in `report` as dropped (refused without `lossy`).
pub(super) fn columns_used(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
) -> Result<Vec<usize>, Error> {
    Ok(plan(schema, report, lossy)?.used())
}

/// Whether `dt` is an image struct: a Binary `data` child and integer
/// `height` and `width`.
fn is_image(dt: &DataType) -> bool {
    let DataType::Struct(fs) = dt else {
        return false;
    };
    let has = |n: &str, ok: &dyn Fn(&DataType) -> bool| {
        fs.find(n).is_some_and(|(_, f)| ok(f.data_type()))
    };
    has("data", &|d| d == &DataType::Binary)
        && has("height", &DataType::is_integer)
        && has("width", &DataType::is_integer)
}

fn is_text(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 => true,
        DataType::Dictionary(_, v) => **v == DataType::Utf8,
        _ => false,
    }
}

/// The sample format an image field's type names (its `dataformats.type`).
fn image_format(f: &arrow_schema::Field) -> SampleFormat {
    match f.metadata().get(crate::typed::TYPE_KEY).map(String::as_str) {
        Some(t) if t.starts_with("IMAGE_JPEG") => SampleFormat::JPEG,
        Some("IMAGE_PNG") => SampleFormat::PNG,
        Some("IMAGE_RAW") => SampleFormat::RAW_U8,
        _ => SampleFormat::UNKNOWN,
    }
}

fn plan(schema: &arrow_schema::Schema, report: &mut Report, lossy: bool) -> Result<Plan, Error> {
    let find = |n: &str| schema.index_of(n).ok();
    let blob = |k: usize| {
        let dt = schema.field(k).data_type();
        dt == &DataType::Binary || is_image(dt)
    };
    let blobs: Vec<usize> = (0..schema.fields().len()).filter(|&k| blob(k)).collect();
    let data = find("data")
        .filter(|&k| blob(k))
        .or_else(|| find("image").filter(|&k| blob(k)))
        .or(match blobs.as_slice() {
            [only] => Some(*only),
            _ => None,
        })
        .ok_or_else(|| {
            Error::invalid(
                "TBL v2 needs the sample bytes: a Binary or image column named data or image, \
                 or a single such column",
            )
        })?;
    let image = is_image(schema.field(data).data_type()).then(|| image_format(schema.field(data)));
    let int_col = |n: &str| -> Result<Option<usize>, Error> {
        match find(n) {
            Some(k) if schema.field(k).data_type().is_integer() => Ok(Some(k)),
            Some(k) => Err(Error::invalid(format!(
                "column {n:?} is {}, TBL v2 needs an integer",
                schema.field(k).data_type()
            ))),
            None => Ok(None),
        }
    };
    let format = match find("format") {
        Some(k) => match schema.field(k).data_type() {
            d if is_text(d) || d.is_integer() => Some(k),
            d => {
                return Err(Error::invalid(format!(
                    "column \"format\" is {d}, TBL v2 needs a name or code"
                )));
            }
        },
        None => None,
    };
    let (metadata, raw_metadata) = match find("metadata") {
        Some(k) => match schema.field(k).data_type() {
            DataType::Struct(fs)
                if matches!(fs.iter().map(|f| f.data_type()).collect::<Vec<_>>().as_slice(),
                    [t, DataType::Binary] if t.is_integer()) =>
            {
                (Some(k), false)
            }
            d if d == &DataType::Binary || is_text(d) => (Some(k), true),
            d => {
                return Err(Error::invalid(format!(
                    "column \"metadata\" is {d}, TBL v2 needs struct {{type: integer, data: \
                     binary}}, or the block's bytes as binary or text"
                )));
            }
        },
        None => (None, false),
    };
    let metadata_type = match find("metadata_type") {
        Some(k) if raw_metadata && is_text(schema.field(k).data_type()) => Some(k),
        Some(k) if raw_metadata => {
            return Err(Error::invalid(format!(
                "column \"metadata_type\" is {}, TBL v2 needs a metadata type name",
                schema.field(k).data_type()
            )));
        }
        _ => None,
    };
    let p = Plan {
        data,
        image,
        format,
        width: int_col("width")?,
        height: int_col("height")?,
        metadata,
        metadata_type,
    };
    let used = p.used();
    for (k, f) in schema.fields().iter().enumerate() {
        if !used.contains(&k) {
            report.column(
                ChangeKind::Dropped,
                f.name(),
                "TBL v2 has no place for this column",
            );
        }
    }
    report.check(lossy)?;
    Ok(p)
}

/// The code of a metadata type name (`json`, `protobuf`, ..., or a number).
fn metadata_code(name: &str) -> Option<u16> {
    name.parse().ok().or_else(|| {
        [0, 1, 2, 3, 255]
            .into_iter()
            .find(|&c| MetadataType(c).name().eq_ignore_ascii_case(name))
    })
}

/// Writes every batch of `input` to the TBL v2 file `output`, samples
/// compressed on `threads` threads (0: every core). A TBL v2 file has no
/// schema of its own, so a source without records becomes an empty file
/// whatever its columns.
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &Tbl2Options,
    threads: usize,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let mut first = None;
    let p = match plan(&schema, report, lossy) {
        Ok(p) => Some(p),
        Err(e) => {
            // Nothing to lose when there is nothing to write.
            loop {
                match input.next_batch() {
                    None => break,
                    Some(Ok(b)) if b.num_rows() == 0 => continue,
                    Some(Ok(b)) => {
                        first = Some(b);
                        break;
                    }
                    Some(Err(e)) => return Err(e),
                }
            }
            if first.is_some() {
                return Err(e);
            }
            report.changes.clear();
            None
        }
    };
    let compression = if opts.compress {
        crate::tbl2::Compression::Lz4
    } else {
        crate::tbl2::Compression::None
    };
    // A stream that knows its records has its samples written once, in
    // place after their index.
    let mut w = match input.records_left().filter(|_| p.is_some()) {
        Some(n) => Writer::create_sized(output, compression, n),
        None => Writer::create(output, compression),
    }
    .map_err(Error::Tbl2)?;
    w.set_threads(threads);
    let mut written = 0u64;
    if let Some(p) = p {
        while let Some(b) = input.next_batch() {
            let b = b?;
            write_batch(&mut w, &p, &b, written)?;
            written += b.num_rows() as u64;
            progress(written);
        }
    }
    w.finish().map_err(Error::Tbl2)?;
    report.records = written;
    Ok(())
}

/// The records of one batch, the first being record `base`.
fn write_batch(
    w: &mut Writer,
    p: &Plan,
    b: &arrow_array::RecordBatch,
    base: u64,
) -> Result<(), Error> {
    let col = |k: Option<usize>| -> Option<ArrayRef> { k.map(|k| b.column(k).clone()) };
    let (image, data) = match p.image {
        Some(_) => {
            let s = b.column(p.data).as_struct();
            let c = |n: &str| s.column_by_name(n).cloned();
            (
                Some((c("width"), c("height"))),
                c("data").unwrap_or_else(|| b.column(p.data).clone()),
            )
        }
        None => (None, b.column(p.data).clone()),
    };
    let data = data
        .as_binary_opt::<i32>()
        .ok_or_else(|| Error::invalid("the sample column's bytes are not Binary"))?;
    let (format, width, height, meta, meta_type) = (
        col(p.format),
        col(p.width),
        col(p.height),
        col(p.metadata),
        col(p.metadata_type),
    );
    for i in 0..b.num_rows() {
        let record = base + i as u64;
        if b.column(p.data).is_null(i) || data.is_null(i) {
            return Err(data_err(format!(
                "record {record}: no sample bytes (null data)"
            )));
        }
        let bytes = data.value(i);
        let code = match &format {
            Some(f) if !f.is_null(i) => match text_at(f.as_ref(), i) {
                Some(name) => SampleFormat(format_code(name).ok_or_else(|| {
                    data_err(format!(
                        "record {record}: {name:?} is not a TBL v2 sample format"
                    ))
                })?),
                None => SampleFormat(
                    uint(f.as_ref(), i)
                        .and_then(|c| u8::try_from(c).ok())
                        .ok_or_else(|| {
                            data_err(format!("record {record}: format code out of range"))
                        })?,
                ),
            },
            _ => match p.image {
                Some(f) if f != SampleFormat::UNKNOWN => f,
                _ => sniff(bytes),
            },
        };
        let dim = |a: &Option<ArrayRef>, from_image: Option<&ArrayRef>, what: &str| {
            let a = a.as_ref().filter(|a| !a.is_null(i)).or(from_image);
            match a {
                Some(a) => uint(a.as_ref(), i)
                    .and_then(|x| u16::try_from(x).ok())
                    .ok_or_else(|| {
                        data_err(format!("record {record}: {what} does not fit TBL v2's u16"))
                    }),
                None => Ok(0),
            }
        };
        let (iw, ih) = match &image {
            Some((w, h)) => (w.as_ref(), h.as_ref()),
            None => (None, None),
        };
        let info = SampleInfo {
            format: code,
            width: dim(&width, iw, "width")?,
            height: dim(&height, ih, "height")?,
        };
        let at = w.add_sample(bytes, info).map_err(Error::Tbl2)?;
        let Some(m) = meta.as_ref().filter(|m| !m.is_null(i)) else {
            continue;
        };
        let (kind, payload): (u16, &[u8]) = match m.data_type() {
            DataType::Struct(_) => {
                let s = m.as_struct();
                let kind = uint(s.column(0).as_ref(), i)
                    .and_then(|x| u16::try_from(x).ok())
                    .ok_or_else(|| {
                        data_err(format!("record {record}: metadata type out of range"))
                    })?;
                (kind, s.column(1).as_binary::<i32>().value(i))
            }
            dt => {
                let kind = match meta_type.as_ref().filter(|t| !t.is_null(i)) {
                    Some(t) => {
                        let name = text_at(t.as_ref(), i).unwrap_or_default();
                        metadata_code(name).ok_or_else(|| {
                            data_err(format!(
                                "record {record}: {name:?} is not a TBL v2 metadata type"
                            ))
                        })?
                    }
                    None => MetadataType::JSON.0,
                };
                let payload = if dt == &DataType::Binary {
                    m.as_binary::<i32>().value(i)
                } else {
                    text_at(m.as_ref(), i).unwrap_or_default().as_bytes()
                };
                (kind, payload)
            }
        };
        w.add_metadata(at, payload, MetadataType(kind))
            .map_err(Error::Tbl2)?;
    }
    Ok(())
}
