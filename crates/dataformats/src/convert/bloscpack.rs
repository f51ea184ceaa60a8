//! Typed batches into a Bloscpack file holding a numpy array.
//!
//! One column gives an array of shape `[records, ...]` of its element
//! type; several give a 1-d array of records (a numpy structured dtype,
//! one named field per column). A field whose `dataformats.type` is a numpy
//! dtype string (`<f8`, `>i4`, `|S10`, `<U5`, `<M8[us]`, ...) and whose
//! Arrow type is the one the Bloscpack view gives it is written as that
//! dtype (big-endian stays big-endian); other fields take the dtype of
//! their Arrow type (numbers, booleans, timestamps and durations, fixed-size
//! lists of those as subarrays, FixedSizeBinary as `V<n>`). A raw file's
//! view (one `chunk` of bytes per record) gives the same payload back.
//! numpy has no missing values: a null (other than NaT in a datetime
//! column) is refused, or with `lossy` written as zero and reported.

use std::io::{Read, Seek, SeekFrom, Write};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field, TimeUnit};

use super::{ChangeKind, Report, all_bytes};
use crate::bloscpack::dtype::{ByteOrder, Dtype, Field as NpField, Scalar};
use crate::bloscpack::{NumpyMeta, Order, WriteOptions, Writer};
use crate::dataset::{BatchStream, Error};

/// Bloscpack target settings: the writer's (codec, level, shuffle, chunk
/// size, checksum, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BloscpackOptions {
    /// The Bloscpack writer's settings.
    pub write: WriteOptions,
}

fn unit_str(u: &TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// numpy's typestr of an Arrow element type.
fn typestr(dt: &DataType) -> Option<String> {
    Some(match dt {
        DataType::Boolean => "|b1".into(),
        DataType::Int8 => "|i1".into(),
        DataType::UInt8 => "|u1".into(),
        DataType::Int16 => "<i2".into(),
        DataType::UInt16 => "<u2".into(),
        DataType::Int32 => "<i4".into(),
        DataType::UInt32 => "<u4".into(),
        DataType::Int64 => "<i8".into(),
        DataType::UInt64 => "<u8".into(),
        DataType::Float16 => "<f2".into(),
        DataType::Float32 => "<f4".into(),
        DataType::Float64 => "<f8".into(),
        DataType::Timestamp(u, None) => format!("<M8[{}]", unit_str(u)),
        DataType::Duration(u) => format!("<m8[{}]", unit_str(u)),
        DataType::FixedSizeBinary(n) if *n > 0 => format!("|V{n}"),
        _ => return None,
    })
}

/// One column as a numpy field: its dtype and the shape of one value.
#[derive(Debug, Clone)]
pub(crate) struct Col {
    pub(crate) name: String,
    pub(crate) dtype: Dtype,
    pub(crate) shape: Vec<u64>,
}

impl Col {
    fn scalar(&self) -> Option<&Scalar> {
        self.dtype.as_scalar()
    }
    /// Elements per value.
    fn count(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }
}

/// The tensor shape of a field (fixed-size lists), `[]` for a scalar.
fn shape_of(f: &Field) -> Option<(Vec<u64>, DataType)> {
    match f.data_type() {
        DataType::FixedSizeList(item, n) => {
            let ext = f
                .metadata()
                .get(crate::typed::EXTENSION_METADATA)
                .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
                .and_then(|v| {
                    v.get("shape")?
                        .as_array()?
                        .iter()
                        .map(serde_json::Value::as_u64)
                        .collect::<Option<Vec<u64>>>()
                })
                .filter(|s| s.iter().product::<u64>() == *n as u64);
            Some((
                ext.unwrap_or_else(|| vec![*n as u64]),
                item.data_type().clone(),
            ))
        }
        dt => Some((vec![], dt.clone())),
    }
}

fn plan(f: &Field) -> Option<Col> {
    let (shape, elem) = shape_of(f)?;
    // The field's own numpy type, when the view of it is this Arrow type.
    if let Some(ts) = f.metadata().get(crate::typed::TYPE_KEY) {
        let dtype = if ts.starts_with('[') || ts.starts_with('\'') {
            Dtype::parse_python_literal(ts).ok()
        } else {
            Scalar::parse_typestr(ts).ok().map(Dtype::Scalar)
        };
        if let Some(dtype) = dtype {
            // A complex scalar is itself a fixed-size list of two floats.
            for shape in [shape.clone(), vec![]] {
                let Ok(cols) = crate::adapters::numpy::columns(&dtype, &shape, f.name()) else {
                    continue;
                };
                if let [c] = cols.as_slice()
                    && crate::adapters::numpy::field(c)
                        .ok()
                        .as_ref()
                        .map(Field::data_type)
                        == Some(f.data_type())
                {
                    return Some(Col {
                        name: f.name().clone(),
                        dtype,
                        shape,
                    });
                }
            }
        }
    }
    let ts = typestr(&elem)?;
    Some(Col {
        name: f.name().clone(),
        dtype: Dtype::Scalar(Scalar::parse_typestr(&ts).ok()?),
        shape,
    })
}

/// Appends `count` elements starting at `start` of the leaf array `a` as
/// numpy elements of `s` (`itemsize` bytes each).
fn put(
    a: &dyn Array,
    start: usize,
    count: usize,
    s: Option<&Scalar>,
    itemsize: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let big = s.is_some_and(|s| s.order == ByteOrder::Big);
    let at = out.len();
    match a.data_type() {
        DataType::Boolean => {
            let b = a.as_boolean();
            out.extend((start..start + count).map(|j| u8::from(b.value(j))));
        }
        DataType::Timestamp(..) | DataType::Duration(_) => {
            for j in start..start + count {
                let x = if a.is_null(j) {
                    i64::MIN
                } else {
                    crate::typed::time_count(a, j).unwrap_or(i64::MIN)
                };
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            for j in start..start + count {
                let v = b.value(j);
                if v.len() > itemsize {
                    return Err(format!("{} bytes do not fit S{itemsize}", v.len()));
                }
                out.extend_from_slice(v);
                out.resize(out.len() + itemsize - v.len(), 0);
            }
            return Ok(());
        }
        DataType::Utf8 => {
            let t = a.as_string::<i32>();
            for j in start..start + count {
                let v = t.value(j);
                let chars = v.chars().count();
                if chars * 4 > itemsize {
                    return Err(format!("{chars} characters do not fit U{}", itemsize / 4));
                }
                for c in v.chars() {
                    let u = c as u32;
                    out.extend_from_slice(&if big {
                        u.to_be_bytes()
                    } else {
                        u.to_le_bytes()
                    });
                }
                out.resize(out.len() + itemsize - chars * 4, 0);
            }
            return Ok(());
        }
        DataType::FixedSizeBinary(w) => {
            let b = a.as_fixed_size_binary();
            if *w as usize != itemsize {
                return Err(format!("{w} bytes per value, the dtype has {itemsize}"));
            }
            for j in start..start + count {
                out.extend_from_slice(b.value(j));
            }
            return Ok(());
        }
        DataType::FixedSizeList(_, 2) => {
            // Complex numbers: (real, imaginary) pairs.
            let l = a.as_fixed_size_list();
            return put(
                l.values().as_ref(),
                start * 2,
                count * 2,
                s,
                itemsize / 2,
                out,
            );
        }
        _ => {
            let w = crate::typed::fixed_width(a.data_type()).ok_or("not a numpy element type")?;
            if w != itemsize {
                return Err(format!("{w}-byte values for a {itemsize}-byte dtype"));
            }
            let all = all_bytes(a);
            out.extend_from_slice(
                all.get(start * w..(start + count) * w)
                    .ok_or("out of range")?,
            );
        }
    }
    if big {
        let w = itemsize.max(1);
        for c in out.get_mut(at..).unwrap_or_default().chunks_exact_mut(w) {
            c.reverse();
        }
    }
    Ok(())
}

/// The bytes of record `i` of column `c` (`a` its array).
fn value(a: &dyn Array, i: usize, c: &Col, out: &mut Vec<u8>) -> Result<(), String> {
    let itemsize = c.dtype.itemsize();
    let n = c.count();
    match a.data_type() {
        DataType::FixedSizeList(..) if !c.shape.is_empty() => {
            let l = a.as_fixed_size_list();
            let v = l.values();
            let start = i * n;
            put(v.as_ref(), start, n, c.scalar(), itemsize, out)
        }
        _ => put(a, i, 1, c.scalar(), itemsize, out),
    }
}

/// The columns of `schema` numpy has a dtype for, with their indices (the
/// others dropped or, without `lossy`, refused).
pub(crate) fn numpy_columns(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
    target: &str,
) -> Result<Vec<(usize, Col)>, Error> {
    super::keep_columns(
        schema,
        None,
        report,
        lossy,
        "numpy has no dtype for this column",
        target,
        |f| Ok(plan(f)),
    )
}

/// The columns of `schema` a numpy record array is written from
/// (ascending), the others noted in `report` as dropped; `None` for a
/// Bloscpack target's raw chunks (a single Binary `chunk` column), which
/// are written whole.
pub(super) fn columns_used(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
    target: &str,
) -> Option<Result<Vec<usize>, Error>> {
    if target == NUMPY && raw_chunks(schema) {
        return None;
    }
    Some(numpy_columns(schema, report, lossy, target).map(|c| c.iter().map(|(k, _)| *k).collect()))
}

/// Whether `schema` is a Bloscpack file's raw chunks: a single Binary
/// column named `chunk`.
fn raw_chunks(schema: &arrow_schema::Schema) -> bool {
    schema.fields().len() == 1
        && schema.field(0).name() == "chunk"
        && schema.field(0).data_type() == &DataType::Binary
}

/// What a Bloscpack file's payload is (in errors).
pub(super) const NUMPY: &str = "a numpy array";

/// Appends record `i` of column `c` (`a` its array, `record` its number in
/// the whole input) to `out`. A null numpy cannot hold is refused, or with
/// `lossy` written as zero and counted.
pub(crate) fn put_cell(
    a: &dyn Array,
    i: usize,
    c: &Col,
    record: u64,
    lossy: bool,
    report: &mut Report,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if unholdable_null(a, i) {
        if !lossy {
            return Err(Error::Lossy {
                message: format!(
                    "record {record}, column {:?}: a missing value (numpy has none); pass \
                     --lossy to write zero",
                    c.name
                ),
            });
        }
        report.change(
            ChangeKind::NullFilled,
            &c.name,
            record,
            "a missing value written as zero",
        );
    }
    value(a, i, c, out).map_err(|m| Error::Data {
        format: None,
        message: format!("record {record}, column {:?}: {m}", c.name),
    })
}

/// Whether record `i` of `a` is null where numpy cannot say so (NaT can).
fn unholdable_null(a: &dyn Array, i: usize) -> bool {
    a.is_null(i)
        && !matches!(
            a.data_type(),
            DataType::Timestamp(..) | DataType::Duration(_)
        )
}

/// Writes every batch of `input` to the Bloscpack file `output`, its
/// chunks compressed on `threads` threads (0: every core).
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &BloscpackOptions,
    threads: usize,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let raw = raw_chunks(&schema);
    let cols = if raw {
        Vec::new()
    } else {
        numpy_columns(&schema, report, lossy, NUMPY)?
    };
    let io = |e: std::io::Error| Error::Io {
        path: output.display().to_string(),
        source: e,
    };
    // Bloscpack declares the payload's size (and so its chunk count) in
    // the header. When the records are known ahead, so is the size (each
    // record holds the same bytes): the payload goes straight to the
    // writer, unless the offsets table the writer reserves at once for
    // that size would be large (a count the input's reader has not yet
    // checked against its data could be false). Otherwise it goes to a
    // spool beside the output first.
    let record_bytes: u64 = cols
        .iter()
        .map(|(_, c)| (c.dtype.itemsize() * c.count()) as u64)
        .sum();
    let chunk = opts.write.chunk_size.max(1) as u64;
    let direct = input
        .records_left()
        .filter(|_| !raw)
        .and_then(|n| Some((n, n.checked_mul(record_bytes)?)))
        .filter(|&(_, total)| total.div_ceil(chunk) <= DIRECT_CHUNKS);
    if let Some((records, total)) = direct {
        let meta = numpy_meta(&cols, records);
        let mut w =
            Writer::create(output, total, Some(&meta), &opts.write).map_err(Error::Bloscpack)?;
        w.set_threads(threads);
        let mut written = 0u64;
        let mut buf = Vec::new();
        while let Some(b) = input.next_batch() {
            let b: RecordBatch = b?;
            if written + b.num_rows() as u64 > records {
                return Err(more_records(records));
            }
            buf.clear();
            put_records(&b, &cols, written, lossy, report, &mut buf)?;
            w.write_payload(&buf).map_err(Error::Bloscpack)?;
            written += b.num_rows() as u64;
            progress(written);
        }
        if written != records {
            return Err(more_records(records));
        }
        w.finish().map_err(Error::Bloscpack)?;
        report.records = written;
        return Ok(());
    }
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut spool = tempfile::tempfile_in(dir).map_err(io)?;
    let mut out = std::io::BufWriter::new(&mut spool);
    let mut written = 0u64;
    let mut chunk_len: Option<usize> = None;
    let mut buf = Vec::new();
    while let Some(b) = input.next_batch() {
        let b: RecordBatch = b?;
        buf.clear();
        if raw {
            let chunks = b.column(0).as_binary::<i32>();
            for i in 0..b.num_rows() {
                let v = chunks.value(i);
                chunk_len.get_or_insert(v.len());
                buf.extend_from_slice(v);
            }
        } else {
            put_records(&b, &cols, written, lossy, report, &mut buf)?;
        }
        out.write_all(&buf).map_err(io)?;
        written += b.num_rows() as u64;
        progress(written);
    }
    out.flush().map_err(io)?;
    drop(out);
    let total = spool.stream_position().map_err(io)?;
    let mut wopts = opts.write;
    let meta = if raw {
        if let Some(n) = chunk_len.filter(|&n| n > 0) {
            wopts.chunk_size = n;
        }
        None
    } else {
        Some(numpy_meta(&cols, written))
    };
    let mut w = Writer::create(output, total, meta.as_ref(), &wopts).map_err(Error::Bloscpack)?;
    w.set_threads(threads);
    spool.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut piece = vec![0u8; 1 << 20];
    loop {
        let n = spool.read(&mut piece).map_err(io)?;
        if n == 0 {
            break;
        }
        w.write_payload(piece.get(..n).unwrap_or_default())
            .map_err(Error::Bloscpack)?;
    }
    w.finish().map_err(Error::Bloscpack)?;
    report.records = written;
    Ok(())
}

/// Chunks of a payload written straight through at most: the writer
/// reserves eleven offsets per chunk (room to append ten times as many),
/// so 44 MiB of table for this many.
const DIRECT_CHUNKS: u64 = 1 << 19;

/// The input gave another number of records than it said it would.
fn more_records(records: u64) -> Error {
    Error::invalid(format!(
        "the input said it holds {records} records but gave another number"
    ))
}

/// Appends the numpy bytes of every record of `b` (the first being record
/// `base`) to `out`.
fn put_records(
    b: &RecordBatch,
    cols: &[(usize, Col)],
    base: u64,
    lossy: bool,
    report: &mut Report,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    for i in 0..b.num_rows() {
        for (k, c) in cols {
            put_cell(
                b.column(*k).as_ref(),
                i,
                c,
                base + i as u64,
                lossy,
                report,
                out,
            )
            .map_err(|e| e.in_format(crate::Format::Bloscpack))?;
        }
    }
    Ok(())
}

/// The numpy metadata of `records` records of `cols`: one column's dtype
/// and shape after the records, or a structured dtype of several.
fn numpy_meta(cols: &[(usize, Col)], records: u64) -> serde_json::Value {
    let dtype = match cols {
        [(_, c)] => c.dtype.clone(),
        _ => Dtype::Record(
            cols.iter()
                .map(|(_, c)| NpField {
                    name: c.name.clone(),
                    dtype: c.dtype.clone(),
                    shape: c.shape.clone(),
                })
                .collect(),
        ),
    };
    let mut shape = vec![records];
    if let [(_, c)] = cols {
        shape.extend(&c.shape);
    }
    NumpyMeta {
        dtype,
        shape,
        order: Order::C,
    }
    .to_value()
}
