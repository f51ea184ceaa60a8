//! Typed batches into TurboLoader TBL v2: one sample per record.
//!
//! The columns of the TBL v2 view ([`crate::typed`], `docs/arrow.md`) give
//! each sample: `data` (Binary; or `image`, or the only Binary column),
//! `format` (the format's name as text or dictionary, or its code as an
//! integer; without it, JPEG and PNG are recognised by their signature),
//! `width` and `height` (integers up to 65535; 0 when absent) and
//! `metadata` (struct {type, data}, null for none). Any other column has no
//! place in TBL v2: refused, or with `lossy` left out and reported.

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
    format: Option<usize>,
    width: Option<usize>,
    height: Option<usize>,
    metadata: Option<usize>,
}

fn plan(schema: &arrow_schema::Schema, report: &mut Report, lossy: bool) -> Result<Plan, Error> {
    let find = |n: &str| schema.index_of(n).ok();
    let binaries: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.data_type() == &DataType::Binary)
        .map(|(k, _)| k)
        .collect();
    let data = find("data")
        .or_else(|| find("image"))
        .or(match binaries.as_slice() {
            [only] => Some(*only),
            _ => None,
        })
        .filter(|&k| schema.field(k).data_type() == &DataType::Binary)
        .ok_or_else(|| {
            Error::invalid(
                "TBL v2 needs the sample bytes: a Binary column named data or image, or a single Binary column",
            )
        })?;
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
            DataType::Utf8 => Some(k),
            DataType::Dictionary(_, v) if **v == DataType::Utf8 => Some(k),
            d if d.is_integer() => Some(k),
            d => {
                return Err(Error::invalid(format!(
                    "column \"format\" is {d}, TBL v2 needs a name or code"
                )));
            }
        },
        None => None,
    };
    let metadata = match find("metadata") {
        Some(k) => match schema.field(k).data_type() {
            DataType::Struct(fs)
                if matches!(fs.iter().map(|f| f.data_type()).collect::<Vec<_>>().as_slice(),
                    [t, DataType::Binary] if t.is_integer()) =>
            {
                Some(k)
            }
            d => {
                return Err(Error::invalid(format!(
                    "column \"metadata\" is {d}, TBL v2 needs struct {{type: integer, data: binary}}"
                )));
            }
        },
        None => None,
    };
    let p = Plan {
        data,
        format,
        width: int_col("width")?,
        height: int_col("height")?,
        metadata,
    };
    for (k, f) in schema.fields().iter().enumerate() {
        if ![Some(p.data), p.format, p.width, p.height, p.metadata].contains(&Some(k)) {
            report.change(
                ChangeKind::Dropped,
                f.name(),
                0,
                "TBL v2 has no place for this column",
            );
        }
    }
    report.check(lossy)?;
    Ok(p)
}

/// Writes every batch of `input` to the TBL v2 file `output`.
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &Tbl2Options,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let p = plan(&schema, report, lossy)?;
    let mut w = Writer::create(output, opts.compress).map_err(Error::Tbl2)?;
    let mut written = 0u64;
    let col = |b: &arrow_array::RecordBatch, k: Option<usize>| -> Option<ArrayRef> {
        k.map(|k| b.column(k).clone())
    };
    while let Some(b) = input.next_batch() {
        let b = b?;
        let data = b.column(p.data).as_binary::<i32>().clone();
        let (format, width, height, meta) = (
            col(&b, p.format),
            col(&b, p.width),
            col(&b, p.height),
            col(&b, p.metadata),
        );
        for i in 0..b.num_rows() {
            let record = written + i as u64;
            if data.is_null(i) {
                return Err(data_err(format!(
                    "record {record}: no sample bytes (null data)"
                )));
            }
            let bytes = data.value(i);
            let code = match &format {
                Some(f) if f.is_null(i) => sniff(bytes),
                Some(f) => match text_at(f.as_ref(), i) {
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
                None => sniff(bytes),
            };
            let dim = |a: &Option<ArrayRef>, what: &str| -> Result<u16, Error> {
                match a {
                    Some(a) if !a.is_null(i) => uint(a.as_ref(), i)
                        .and_then(|x| u16::try_from(x).ok())
                        .ok_or_else(|| {
                            data_err(format!("record {record}: {what} does not fit TBL v2's u16"))
                        }),
                    _ => Ok(0),
                }
            };
            let info = SampleInfo {
                format: code,
                width: dim(&width, "width")?,
                height: dim(&height, "height")?,
            };
            let at = w.add_sample(bytes, info).map_err(Error::Tbl2)?;
            if let Some(m) = meta.as_ref().filter(|m| !m.is_null(i)) {
                let s = m.as_struct();
                let kind = uint(s.column(0).as_ref(), i)
                    .and_then(|x| u16::try_from(x).ok())
                    .ok_or_else(|| {
                        data_err(format!("record {record}: metadata type out of range"))
                    })?;
                let payload = s.column(1).as_binary::<i32>().value(i);
                w.add_metadata(at, payload, MetadataType(kind))
                    .map_err(Error::Tbl2)?;
            }
        }
        written += b.num_rows() as u64;
        progress(written);
    }
    w.finish().map_err(Error::Tbl2)?;
    report.records = written;
    Ok(())
}
