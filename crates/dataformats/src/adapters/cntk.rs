//! The CNTK adapter: one record per sample. A sequence of `n` samples
//! gives `n` records that share their `_sequence` number; a stream with
//! fewer samples in that sequence is null in the records past its end.
//! Dense streams are `FixedSizeList`s of their `dim` values, sparse ones
//! `{indices, values}` structs with `dim` in the field metadata.

use std::sync::Arc;

use arrow_array::{ArrayRef, ListArray, StructArray, UInt32Array, UInt64Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};
use crate::typed::{DIM_KEY, FixedCells, TYPE_KEY, field, item};

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let r = crate::cntk::Reader::with_options(
        src,
        crate::core::ReadOptions::default().limits(opts.limits),
    )
    .map_err(fe(Format::Cntk))?;
    let mut seq_starts = Vec::with_capacity(r.chunks().len());
    let mut sample_starts = Vec::with_capacity(r.chunks().len());
    let (mut seqs, mut samples) = (0u64, 0u64);
    for c in r.chunks() {
        seq_starts.push(seqs);
        sample_starts.push(samples);
        seqs += u64::from(c.num_sequences);
        samples += u64::from(c.num_samples);
    }
    let mut fields = vec![field("_sequence", DataType::UInt64, false, "sequence")];
    for s in r.streams() {
        fields.push(stream_field(s)?);
    }
    Ok(Box::new(Cntk {
        r,
        seq_starts,
        sample_starts,
        samples,
        schema: Arc::new(Schema::new(fields)),
        limits: opts.limits,
        last: super::Last::new(),
    }))
}

fn elem_type(e: crate::cntk::ElemType) -> DataType {
    if e.size() == 4 {
        DataType::Float32
    } else {
        DataType::Float64
    }
}

fn stream_field(s: &crate::cntk::StreamDesc) -> Result<Field, Error> {
    use crate::cntk::StreamKind;
    let et = elem_type(s.elem);
    let dense = s.kind == StreamKind::Dense;
    let ty = format!(
        "{} {}",
        if dense { "dense" } else { "sparse" },
        s.elem.name()
    );
    if dense {
        let dim = i32::try_from(s.dim).map_err(|_| {
            err(
                Format::Cntk,
                "unsupported",
                format!(
                    "stream {:?}: dimension {} is too large for Arrow",
                    s.name, s.dim
                ),
            )
        })?;
        let mut f = field(
            &s.name,
            DataType::FixedSizeList(item(et, false), dim),
            true,
            &ty,
        );
        let mut md = f.metadata().clone();
        md.insert(DIM_KEY.into(), s.dim.to_string());
        f = f.with_metadata(md);
        return Ok(f);
    }
    let dt = DataType::Struct(Fields::from(vec![
        Field::new(
            "indices",
            DataType::List(item(DataType::UInt32, false)),
            false,
        ),
        Field::new("values", DataType::List(item(et, false)), false),
    ]));
    let f = field(&s.name, dt, true, &ty);
    let mut md = f.metadata().clone();
    md.insert(DIM_KEY.into(), s.dim.to_string());
    debug_assert!(md.contains_key(TYPE_KEY));
    Ok(f.with_metadata(md))
}

struct Cntk {
    r: crate::cntk::Reader,
    /// First sequence number of each chunk.
    seq_starts: Vec<u64>,
    /// First record (sample) of each chunk.
    sample_starts: Vec<u64>,
    samples: u64,
    schema: SchemaRef,
    limits: crate::core::Limits,
    /// The chunk checked last: batches read a chunk a few records at a
    /// time, and each would otherwise check the whole chunk again.
    last: super::Last<usize, crate::cntk::CheckedChunk>,
}

/// One stream's sparse values under construction.
struct Sparse {
    idx: Vec<u32>,
    idx_off: Vec<i32>,
    vals: Vec<u8>,
    val_off: Vec<i32>,
    valid: Vec<bool>,
    width: usize,
    /// The CSC column starts of the sequence read last `(chunk, sequence,
    /// starts)`: computed once per sequence, not once per sample.
    starts: Option<(usize, usize, Vec<u32>)>,
}

impl Sparse {
    fn push(&mut self, entries: Option<(Vec<u32>, &[u8])>) -> Result<(), Error> {
        if let Some((ix, v)) = &entries {
            self.idx.extend_from_slice(ix);
            self.vals.extend_from_slice(v);
        }
        self.valid.push(entries.is_some());
        let n_idx =
            i32::try_from(self.idx.len()).map_err(|_| Error::invalid("too many entries"))?;
        let n_val = i32::try_from(self.vals.len() / self.width.max(1))
            .map_err(|_| Error::invalid("too many entries"))?;
        self.idx_off.push(n_idx);
        self.val_off.push(n_val);
        Ok(())
    }

    fn finish(self, dt: &DataType) -> Result<ArrayRef, Error> {
        let DataType::Struct(fields) = dt else {
            return Err(Error::invalid("sparse stream is not a struct"));
        };
        let child = |f: Option<&Arc<Field>>| match f.map(|f| f.data_type()) {
            Some(DataType::List(c)) => Ok(c.clone()),
            _ => Err(Error::invalid("sparse stream fields")),
        };
        let fi = child(fields.first())?;
        let fv = child(fields.get(1))?;
        let n = self.vals.len() / self.width.max(1);
        let values = crate::typed::fixed_array(
            fv.data_type(),
            arrow_buffer::Buffer::from_vec(self.vals),
            n,
            None,
        )?;
        let indices = ListArray::try_new(
            fi,
            OffsetBuffer::new(self.idx_off.into()),
            Arc::new(UInt32Array::from(self.idx)),
            None,
        )?;
        let values = ListArray::try_new(fv, OffsetBuffer::new(self.val_off.into()), values, None)?;
        Ok(Arc::new(StructArray::try_new(
            fields.clone(),
            vec![Arc::new(indices), Arc::new(values)],
            crate::typed::nulls(&self.valid),
        )?))
    }
}

enum Builder {
    Sequence(Vec<u64>),
    Dense(FixedCells),
    Sparse(Sparse),
}

impl Cntk {
    /// Chunk `c`, checked once however many batches read it.
    fn chunk_view(&self, c: usize) -> Result<crate::cntk::ChunkView<'_>, Error> {
        let checked = self
            .last
            .get_or_make(c, || self.r.checked_chunk(c).map_err(fe(Format::Cntk)))?;
        self.r.view(&checked).map_err(fe(Format::Cntk))
    }

    /// Records `start..end` of dense streams (and `_sequence`) when they
    /// all lie in one sequence where every asked stream has them: each
    /// stream's samples are stored back to back there, so its array shares
    /// the file's memory instead of copying it.
    fn within_one_sequence(
        &self,
        columns: &[usize],
        start: u64,
        end: u64,
    ) -> Result<Option<Vec<ArrayRef>>, Error> {
        use crate::cntk::RecordView;
        if start >= end || self.sample_starts.is_empty() {
            return Ok(None);
        }
        let c = self.sample_starts.partition_point(|&s| s <= start) - 1;
        let view = self.chunk_view(c)?;
        let chunk_first = self.sample_starts.get(c).copied().unwrap_or(0);
        // Straight to the sequence of `start`; from the chunk's first
        // sequence when the chunk does not hold it (the walk then fails).
        let (q0, first) = view
            .sequence_of_sample(start - chunk_first)
            .unwrap_or((0, 0));
        let mut at = chunk_first + first;
        let mut found = None;
        for (q, &len) in view.sequence_lengths().iter().enumerate().skip(q0) {
            let len = u64::from(len);
            if start < at + len {
                found = Some((q, at, len));
                break;
            }
            at += len;
        }
        let Some((q, first, len)) = found else {
            return Ok(None);
        };
        let (k0, k1) = (start - first, end - first);
        if k1 > len {
            return Ok(None);
        }
        let seq = self.seq_starts.get(c).copied().unwrap_or(0) + q as u64;
        let mut out: Vec<ArrayRef> = Vec::with_capacity(columns.len());
        for &j in columns {
            if j == 0 {
                out.push(Arc::new(UInt64Array::from(vec![
                    seq;
                    (end - start) as usize
                ])));
                continue;
            }
            let Some(RecordView::Dense(d)) = view.record(j - 1, q) else {
                return Ok(None);
            };
            if k1 > u64::from(d.samples) {
                return Ok(None);
            }
            let per = u64::from(d.dim) * d.elem.size();
            let raw = d.raw();
            let Some(sub) = raw.get((k0 * per) as usize..(k1 * per) as usize) else {
                return Ok(None);
            };
            let Some(buf) = crate::typed::shared_buffer(self.r.source(), sub) else {
                return Ok(None);
            };
            let dt = self.schema.field(j).data_type();
            out.push(crate::typed::fixed_array(
                dt,
                buf,
                (end - start) as usize,
                None,
            )?);
        }
        Ok(Some(out))
    }
}

impl Cntk {
    /// Tells a remote source the chunks that hold records `rows` (every
    /// stream of a sample lies in its chunk), so that they are fetched at
    /// once; nothing for local files.
    fn announce(&self, rows: std::ops::Range<u64>) {
        let src = self.r.source();
        if !src.is_remote() || rows.start >= rows.end {
            return;
        }
        // The chunk holding the first record, to the last chunk starting
        // before the end.
        let first = self
            .sample_starts
            .partition_point(|&s| s <= rows.start)
            .saturating_sub(1);
        let last = self.sample_starts.partition_point(|&s| s < rows.end);
        let ranges: Vec<_> = self
            .r
            .chunks()
            .get(first..last.max(first))
            .unwrap_or_default()
            .iter()
            .map(|c| c.offset..c.end)
            .collect();
        src.prefetch(&ranges);
    }
}

impl Dataset for Cntk {
    fn memory(&self) -> Option<&[u8]> {
        self.r.source().as_slice()
    }

    fn limits(&self) -> crate::core::Limits {
        self.limits
    }

    fn format(&self) -> Format {
        Format::Cntk
    }
    fn version(&self) -> String {
        crate::cntk::VERSION.to_string()
    }
    fn len(&self) -> u64 {
        self.samples
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.r.validate_with(progress).map_err(fe(Format::Cntk))
    }
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn splits(&self, parts: usize) -> Vec<std::ops::Range<u64>> {
        crate::dataset::split_at_starts(self.samples, &self.sample_starts, 1, parts)
    }
    fn prefetch(&self, _columns: &[usize], rows: std::ops::Range<u64>) {
        let end = rows.end.min(self.samples);
        self.announce(rows.start.min(end)..end);
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<ArrayRef>, Error> {
        use crate::cntk::RecordView;
        let end = rows.end.min(self.samples);
        let start = rows.start.min(end);
        let n = usize::try_from(end - start).unwrap_or(usize::MAX);
        if !columns.is_empty() {
            self.announce(start..end);
        }
        self.limits
            .check_count("CNTK samples", n as u64)
            .map_err(|e| Error::limit(e).in_format(Format::Cntk))?;
        if let Some(arrays) = self.within_one_sequence(columns, start, end)? {
            return Ok(arrays);
        }
        let mut builders = Vec::with_capacity(columns.len());
        for &j in columns {
            let f =
                self.schema.fields().get(j).ok_or_else(|| {
                    err(Format::Cntk, "invalid_argument", format!("no column {j}"))
                })?;
            builders.push(match (j, f.data_type()) {
                (0, _) => Builder::Sequence(Vec::with_capacity(n)),
                (_, dt @ DataType::FixedSizeList(..)) => {
                    Builder::Dense(FixedCells::new(dt, n, &self.limits)?)
                }
                (_, DataType::Struct(fs)) => Builder::Sparse(Sparse {
                    idx: Vec::new(),
                    idx_off: vec![0],
                    vals: Vec::new(),
                    val_off: vec![0],
                    valid: Vec::with_capacity(n),
                    starts: None,
                    width: match fs.get(1).map(|f| f.data_type()) {
                        Some(DataType::List(c)) if *c.data_type() == DataType::Float32 => 4,
                        _ => 8,
                    },
                }),
                (_, other) => return Err(Error::invalid(format!("unexpected type {other}"))),
            });
        }
        let mut row = start;
        while row < end {
            let c = self.sample_starts.partition_point(|&s| s <= row) - 1;
            let view = self.chunk_view(c)?;
            let chunk_first = self.sample_starts.get(c).copied().unwrap_or(0);
            let (q0, first) = view.sequence_of_sample(row - chunk_first).unwrap_or((0, 0));
            let mut at = chunk_first + first;
            let first_seq = self.seq_starts.get(c).copied().unwrap_or(0);
            let mut progressed = false;
            for (q, &len) in view.sequence_lengths().iter().enumerate().skip(q0) {
                let len = u64::from(len);
                if at + len <= row {
                    at += len;
                    continue;
                }
                while row < end && row < at + len {
                    let k = row - at;
                    for (b, &j) in builders.iter_mut().zip(columns) {
                        match b {
                            Builder::Sequence(v) => v.push(first_seq + q as u64),
                            Builder::Dense(cells) => {
                                let s = j - 1;
                                match view.record(s, q) {
                                    Some(RecordView::Dense(d)) if k < u64::from(d.samples) => {
                                        cells.push(d.sample_raw(k as u32))?
                                    }
                                    _ => cells.push(None)?,
                                }
                            }
                            Builder::Sparse(sp) => {
                                let s = j - 1;
                                match view.record(s, q) {
                                    Some(RecordView::Sparse(v)) if k < u64::from(v.samples) => {
                                        if sp.starts.as_ref().is_none_or(|x| (x.0, x.1) != (c, q)) {
                                            sp.starts = Some((c, q, v.column_starts()));
                                        }
                                        let starts = sp
                                            .starts
                                            .as_ref()
                                            .map(|x| x.2.as_slice())
                                            .unwrap_or_default();
                                        let (a, z) = (
                                            starts.get(k as usize).copied().unwrap_or(0) as usize,
                                            starts.get(k as usize + 1).copied().unwrap_or(0)
                                                as usize,
                                        );
                                        let ix: Vec<u32> =
                                            v.indices().skip(a).take(z.saturating_sub(a)).collect();
                                        let w = sp.width;
                                        let raw = v
                                            .raw_values()
                                            .get(a * w..z * w)
                                            .ok_or_else(|| Error::invalid("sparse values"))?;
                                        sp.push(Some((ix, raw)))?
                                    }
                                    _ => sp.push(None)?,
                                }
                            }
                        }
                    }
                    row += 1;
                    progressed = true;
                }
                at += len;
                if row >= end {
                    break;
                }
            }
            let chunk_end = self
                .sample_starts
                .get(c + 1)
                .copied()
                .unwrap_or(self.samples);
            if !progressed || (row < end && at != chunk_end) {
                return Err(err(
                    Format::Cntk,
                    "corrupt",
                    format!(
                        "chunk {c}: its sequences hold {} samples, the chunk table says {}",
                        at - self.sample_starts.get(c).copied().unwrap_or(0),
                        chunk_end - self.sample_starts.get(c).copied().unwrap_or(0)
                    ),
                ));
            }
        }
        builders
            .into_iter()
            .zip(columns)
            .map(|(b, &j)| {
                let dt = self.schema.field(j).data_type();
                match b {
                    Builder::Sequence(v) => Ok(Arc::new(UInt64Array::from(v)) as ArrayRef),
                    Builder::Dense(cells) => cells.finish(dt),
                    Builder::Sparse(sp) => sp.finish(dt),
                }
            })
            .collect()
    }
}
