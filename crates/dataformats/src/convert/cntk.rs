//! Typed batches into the CNTK binary format (CBF).
//!
//! The CNTK view has one record per sample: consecutive records with the
//! same `_sequence` form one sequence (without that column every record is
//! a sequence of one sample). Each other column is a stream: a fixed-size
//! list of Float32 or Float64 a dense stream of that dimension, a struct
//! {indices: list of integers, values: list of Float32/Float64} with the
//! dimension in `dataformats.dim` a sparse stream. Inside a sequence a
//! stream's samples are its non-null values, which must come first (CNTK
//! has no gaps). Numbers that `_sequence` skips (increasing) become
//! sequences without samples, as the CNTK view numbers them. Other numbers
//! (scalars, tensors of other element types) become dense float streams
//! only with `lossy` (reported as retyped, and as rounded where an integer
//! is not exact); other columns have no place in CNTK: refused, or with
//! `lossy` left out and reported.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field};

use super::{ChangeKind, Report, all_bytes};
use crate::cntk::{Chunking, ElemType, RecordData, StreamDesc, StreamKind, Writer};
use crate::dataset::{BatchStream, Error};

/// CNTK target settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CntkOptions {
    /// How sequences are grouped into chunks (default: chunks of about
    /// 32 MiB).
    pub chunking: Chunking,
}

impl Default for CntkOptions {
    fn default() -> Self {
        CntkOptions {
            chunking: Chunking::Target(32 << 20),
        }
    }
}

fn data_err(message: String) -> Error {
    Error::Data {
        format: Some(crate::Format::Cntk),
        message,
    }
}

fn elem(dt: &DataType) -> Option<ElemType> {
    match dt {
        DataType::Float32 => Some(ElemType::F32),
        DataType::Float64 => Some(ElemType::F64),
        _ => None,
    }
}

/// A numeric leaf type that a dense stream can hold as floats.
fn numeric(dt: &DataType) -> bool {
    dt.is_integer() || dt.is_floating()
}

/// A column that is a dense stream only after a change of type: numbers
/// (a scalar, or a fixed-size list, nested for a tensor) of a type other
/// than the stream's, its `dim` values per record in row-major order.
fn retyped(f: &Field) -> Option<StreamDesc> {
    let mut dim = 1u64;
    let mut dt = f.data_type();
    while let DataType::FixedSizeList(item, n) = dt {
        dim = dim.checked_mul(u64::try_from(*n).ok()?)?;
        dt = item.data_type();
    }
    if !numeric(dt) || dim == 0 {
        return None;
    }
    Some(StreamDesc {
        name: f.name().clone(),
        kind: StreamKind::Dense,
        elem: match dt {
            DataType::Float16 | DataType::Float32 => ElemType::F32,
            _ => ElemType::F64,
        },
        dim: u32::try_from(dim).ok()?,
    })
}

/// The stream a column is, if it is one: `(stream, retyped)`.
fn plan(f: &Field) -> Result<Option<(StreamDesc, bool)>, Error> {
    Ok(match stream(f)? {
        Some(s) => Some((s, false)),
        None => retyped(f).map(|s| (s, true)),
    })
}

/// The stream a column is as it is, if it is one.
fn stream(f: &Field) -> Result<Option<StreamDesc>, Error> {
    let name = f.name().clone();
    match f.data_type() {
        DataType::FixedSizeList(item, n) => match elem(item.data_type()) {
            Some(e) if *n > 0 => {
                let dim = u32::try_from(*n)
                    .map_err(|_| Error::invalid(format!("{name:?}: bad dimension {n}")))?;
                Ok(Some(StreamDesc {
                    name,
                    kind: StreamKind::Dense,
                    elem: e,
                    dim,
                }))
            }
            _ => Ok(None),
        },
        DataType::Struct(fs) => {
            let (Some(ix), Some(vals)) = (fs.find("indices"), fs.find("values")) else {
                return Ok(None);
            };
            let e = match (ix.1.data_type(), vals.1.data_type()) {
                (DataType::List(i), DataType::List(v)) if i.data_type().is_integer() => {
                    elem(v.data_type())
                }
                _ => None,
            };
            let Some(e) = e.filter(|_| fs.len() == 2) else {
                return Ok(None);
            };
            let dim = f
                .metadata()
                .get(crate::typed::DIM_KEY)
                .and_then(|d| d.parse::<u32>().ok())
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "sparse stream {name:?} needs its dimension in the field metadata {:?}",
                        crate::typed::DIM_KEY
                    ))
                })?;
            Ok(Some(StreamDesc {
                name,
                kind: StreamKind::Sparse,
                elem: e,
                dim,
            }))
        }
        _ => Ok(None),
    }
}

/// The most sequences without samples written for one jump of `_sequence`.
const MAX_GAP: u64 = 1 << 20;

/// One sequence being gathered: per stream, its samples so far.
struct Pending {
    id: Option<u64>,
    dense: Vec<(u32, Vec<u8>)>,
    sparse: Vec<Vec<Vec<(u32, u64)>>>,
    /// Per stream: a null was seen (so no more samples may follow).
    ended: Vec<bool>,
    first_record: u64,
}

impl Pending {
    fn new(n: usize) -> Self {
        Pending {
            id: None,
            dense: vec![(0, Vec::new()); n],
            sparse: vec![Vec::new(); n],
            ended: vec![false; n],
            first_record: 0,
        }
    }

    fn flush(&mut self, w: &mut Writer, streams: &[StreamDesc]) -> Result<(), Error> {
        if self.id.is_none() {
            return Ok(());
        }
        let data: Vec<RecordData<'_>> = streams
            .iter()
            .zip(self.dense.iter().zip(&self.sparse))
            .map(|(s, ((n, bytes), sp))| match s.kind {
                StreamKind::Dense => RecordData::DenseBytes { samples: *n, bytes },
                StreamKind::Sparse => RecordData::SparseBits(sp),
            })
            .collect();
        w.add_sequence(&data).map_err(|e| {
            data_err(format!(
                "the sequence starting at record {}: {e}",
                self.first_record
            ))
        })?;
        self.id = None;
        for d in &mut self.dense {
            *d = (0, Vec::new());
        }
        for s in &mut self.sparse {
            s.clear();
        }
        self.ended.iter_mut().for_each(|e| *e = false);
        Ok(())
    }
}

fn sequence_id(a: &dyn Array, i: usize) -> Option<u64> {
    use arrow_array::types::*;
    if a.is_null(i) {
        return None;
    }
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

fn index(a: &dyn Array, k: usize) -> Option<u32> {
    use arrow_array::types::*;
    match a.data_type() {
        DataType::UInt32 => Some(a.as_primitive::<UInt32Type>().value(k)),
        DataType::UInt64 => u32::try_from(a.as_primitive::<UInt64Type>().value(k)).ok(),
        DataType::Int32 => u32::try_from(a.as_primitive::<Int32Type>().value(k)).ok(),
        DataType::Int64 => u32::try_from(a.as_primitive::<Int64Type>().value(k)).ok(),
        DataType::UInt16 => Some(u32::from(a.as_primitive::<UInt16Type>().value(k))),
        DataType::UInt8 => Some(u32::from(a.as_primitive::<UInt8Type>().value(k))),
        DataType::Int16 => u32::try_from(a.as_primitive::<Int16Type>().value(k)).ok(),
        DataType::Int8 => u32::try_from(a.as_primitive::<Int8Type>().value(k)).ok(),
        _ => None,
    }
}

/// Appends record `i` of the numeric column `c` (a scalar or nested
/// fixed-size lists) as floats of `st.elem`, row-major; returns how many
/// are not exact.
fn push_floats(c: &dyn Array, i: usize, st: &StreamDesc, out: &mut Vec<u8>) -> Result<u64, String> {
    let before = out.len();
    let rounded = push_leaf(c, i, st.elem, out)?;
    let width = if st.elem == ElemType::F32 { 4 } else { 8 };
    if out.len() - before != st.dim as usize * width {
        return Err(format!(
            "{} values for a stream of dimension {}",
            (out.len() - before) / width,
            st.dim
        ));
    }
    Ok(rounded)
}

fn push_leaf(a: &dyn Array, i: usize, elem: ElemType, out: &mut Vec<u8>) -> Result<u64, String> {
    use arrow_array::types::*;
    if a.is_null(i) {
        return Err("a null inside a dense sample".into());
    }
    if let DataType::FixedSizeList(..) = a.data_type() {
        let v = a.as_fixed_size_list().value(i);
        let mut rounded = 0;
        for k in 0..v.len() {
            rounded += push_leaf(v.as_ref(), k, elem, out)?;
        }
        return Ok(rounded);
    }
    // The value as f64 and whether that is exact.
    let int = |x: i128| (x as f64, (x as f64) as i128 == x);
    let (x, exact) = match a.data_type() {
        DataType::Int8 => int(a.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => int(a.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => int(a.as_primitive::<Int32Type>().value(i).into()),
        DataType::Int64 => int(a.as_primitive::<Int64Type>().value(i).into()),
        DataType::UInt8 => int(a.as_primitive::<UInt8Type>().value(i).into()),
        DataType::UInt16 => int(a.as_primitive::<UInt16Type>().value(i).into()),
        DataType::UInt32 => int(a.as_primitive::<UInt32Type>().value(i).into()),
        DataType::UInt64 => int(a.as_primitive::<UInt64Type>().value(i).into()),
        DataType::Float16 => (a.as_primitive::<Float16Type>().value(i).to_f64(), true),
        DataType::Float32 => (f64::from(a.as_primitive::<Float32Type>().value(i)), true),
        DataType::Float64 => (a.as_primitive::<Float64Type>().value(i), true),
        d => return Err(format!("{d} is not a number")),
    };
    if elem == ElemType::F32 {
        // Only float16 and float32 leaves become float32 streams: exact.
        out.extend_from_slice(&(x as f32).to_le_bytes());
        Ok(0)
    } else {
        out.extend_from_slice(&x.to_le_bytes());
        Ok(u64::from(!exact))
    }
}

/// Value `k` as the bits of its own float type.
fn float_bits(a: &dyn Array, k: usize) -> u64 {
    use arrow_array::types::*;
    match a.data_type() {
        DataType::Float32 => u64::from(a.as_primitive::<Float32Type>().value(k).to_bits()),
        _ => a.as_primitive::<Float64Type>().value(k).to_bits(),
    }
}

/// The `_sequence` column of `schema` (if any) and the columns that become
/// streams, with their streams; the others noted in `report` as dropped
/// (refused without `lossy`).
#[allow(clippy::type_complexity)]
fn streams_of(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
) -> Result<(Option<usize>, Vec<(usize, (StreamDesc, bool))>), Error> {
    let seq_col = schema.index_of("_sequence").ok();
    if let Some(k) = seq_col
        && !schema.field(k).data_type().is_integer()
    {
        return Err(Error::invalid(format!(
            "_sequence is {}, CNTK needs an integer sequence number",
            schema.field(k).data_type()
        )));
    }
    let kept = super::keep_columns(
        schema,
        seq_col,
        report,
        lossy,
        "CNTK streams are numbers: fixed-size lists or sparse structs of float32/float64",
        "a CNTK stream",
        plan,
    )?;
    Ok((seq_col, kept))
}

/// The columns of `schema` a CBF file is written from (ascending): the
/// streams and `_sequence`; the others noted in `report` as dropped.
pub(super) fn columns_used(
    schema: &arrow_schema::Schema,
    report: &mut Report,
    lossy: bool,
) -> Result<Vec<usize>, Error> {
    let (seq_col, kept) = streams_of(schema, report, lossy)?;
    let mut used: Vec<usize> = kept.iter().map(|(k, _)| *k).chain(seq_col).collect();
    used.sort_unstable();
    Ok(used)
}

/// Writes every batch of `input` to the CBF file `output`.
pub(crate) fn write(
    input: &mut dyn BatchStream,
    output: &std::path::Path,
    opts: &CntkOptions,
    lossy: bool,
    report: &mut Report,
    progress: &mut dyn FnMut(u64),
) -> Result<(), Error> {
    let schema = input.schema();
    let (seq_col, kept) = streams_of(&schema, report, lossy)?;
    let mut cols = Vec::new();
    let mut streams = Vec::new();
    let mut retype = Vec::new();
    for (k, (s, r)) in kept {
        if r {
            report.column(
                ChangeKind::Retyped,
                &s.name,
                &format!(
                    "{} becomes a dense {} stream of dimension {}",
                    schema.field(k).data_type(),
                    s.elem.name(),
                    s.dim
                ),
            );
        }
        cols.push(k);
        streams.push(s);
        retype.push(r);
    }
    report.check(lossy)?;
    let mut w = Writer::create(output, &streams, opts.chunking).map_err(Error::Cntk)?;
    let mut seq = Pending::new(streams.len());
    let mut last: Option<u64> = None;
    let empty: Vec<RecordData<'_>> = streams
        .iter()
        .map(|s| match s.kind {
            StreamKind::Dense => RecordData::DenseBytes {
                samples: 0,
                bytes: &[],
            },
            StreamKind::Sparse => RecordData::SparseBits(&[]),
        })
        .collect();
    let mut written = 0u64;
    let mut next_id = 0u64;
    while let Some(b) = input.next_batch() {
        let b: RecordBatch = b?;
        for i in 0..b.num_rows() {
            let record = written + i as u64;
            let id = match seq_col {
                Some(k) => sequence_id(b.column(k).as_ref(), i).ok_or_else(|| {
                    data_err(format!("record {record}: _sequence is null or negative"))
                })?,
                None => {
                    next_id += 1;
                    next_id
                }
            };
            if seq.id != Some(id) {
                let prev = seq.id.or(last);
                seq.flush(&mut w, &streams)?;
                // Numbers skipped in _sequence are sequences without samples
                // (which have no record in the CNTK view): write them back.
                if seq_col.is_some() {
                    let from = prev.map_or(0, |p| p.saturating_add(1));
                    let gap = id.saturating_sub(from);
                    if id >= from && gap > MAX_GAP {
                        return Err(data_err(format!(
                            "record {record}: _sequence jumps from {from} to {id}; more than \
                             {MAX_GAP} empty sequences in a row are refused"
                        )));
                    }
                    if id >= from {
                        for _ in 0..gap {
                            w.add_sequence(&empty).map_err(Error::Cntk)?;
                        }
                    }
                }
                last = Some(id);
                seq.id = Some(id);
                seq.first_record = record;
            }
            let parts = streams.iter().zip(cols.iter()).zip(
                seq.ended
                    .iter_mut()
                    .zip(seq.dense.iter_mut().zip(seq.sparse.iter_mut())),
            );
            for (((st, &k), (ended, (dense, sparse))), &re) in parts.zip(&retype) {
                let c = b.column(k);
                if c.is_null(i) {
                    *ended = true;
                    continue;
                }
                if *ended {
                    return Err(data_err(format!(
                        "record {record}, stream {:?}: a sample after a missing one in the same \
                         sequence (CNTK streams have no gaps)",
                        st.name
                    )));
                }
                match st.kind {
                    StreamKind::Dense if re => {
                        dense.0 += 1;
                        let rounded =
                            push_floats(c.as_ref(), i, st, &mut dense.1).map_err(|m| {
                                data_err(format!("record {record}, stream {:?}: {m}", st.name))
                            })?;
                        if rounded > 0 {
                            report.change_n(
                                ChangeKind::Rounded,
                                &st.name,
                                record,
                                rounded,
                                "an integer beyond 2^53 (float64) or 2^24 (float32) is not exact",
                            );
                        }
                    }
                    StreamKind::Dense => {
                        let v = c.as_fixed_size_list().value(i);
                        if v.null_count() > 0 {
                            return Err(data_err(format!(
                                "record {record}, stream {:?}: a null inside a dense sample",
                                st.name
                            )));
                        }
                        dense.0 += 1;
                        dense.1.extend_from_slice(all_bytes(v.as_ref()));
                    }
                    StreamKind::Sparse => {
                        let sc = c.as_struct();
                        let (Some(ix), Some(vals)) = (
                            sc.column_by_name("indices")
                                .and_then(|c| c.as_list_opt::<i32>()),
                            sc.column_by_name("values")
                                .and_then(|c| c.as_list_opt::<i32>()),
                        ) else {
                            return Err(data_err(format!(
                                "stream {:?}: indices and values must be lists",
                                st.name
                            )));
                        };
                        let (ix, vals) = (ix.value(i), vals.value(i));
                        if ix.len() != vals.len() || ix.null_count() + vals.null_count() > 0 {
                            return Err(data_err(format!(
                                "record {record}, stream {:?}: {} indices for {} values",
                                st.name,
                                ix.len(),
                                vals.len()
                            )));
                        }
                        let mut entries = Vec::with_capacity(ix.len());
                        for e in 0..ix.len() {
                            let at = index(ix.as_ref(), e).ok_or_else(|| {
                                data_err(format!(
                                    "record {record}, stream {:?}: index out of range",
                                    st.name
                                ))
                            })?;
                            entries.push((at, float_bits(vals.as_ref(), e)));
                        }
                        sparse.push(entries);
                    }
                }
            }
        }
        written += b.num_rows() as u64;
        progress(written);
    }
    seq.flush(&mut w, &streams)?;
    w.finish().map_err(Error::Cntk)?;
    report.records = written;
    Ok(())
}
