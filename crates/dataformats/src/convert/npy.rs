//! A numpy `.npy` file as an input of typed batches: one record per row
//! (first axis), typed as the Bloscpack view types numpy arrays
//! (`docs/arrow.md`), read from the memory-mapped file a batch at a time.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{Batches, ConvertOptions, Input, PageRelease};
use crate::Format;
use crate::adapters::numpy::{self, NpColumn};
use crate::dataset::{BatchStream, Error};

struct Npy {
    src: crate::core::Source,
    cols: Vec<NpColumn>,
    /// Indices into `cols` of the selected columns.
    pick: Vec<usize>,
    data_offset: u64,
    row_size: u64,
    limits: crate::core::Limits,
    batches: Batches,
}

impl BatchStream for Npy {
    fn schema(&self) -> SchemaRef {
        self.batches.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        let Npy {
            src,
            cols,
            pick,
            data_offset,
            row_size,
            limits,
            batches,
        } = self;
        let schema = batches.schema.clone();
        batches.next_with(|rows| {
            let n = rows.end - rows.start;
            let bytes = src
                .bytes(*data_offset + rows.start * *row_size, n * *row_size)
                .map_err(|e| Error::invalid(format!(".npy rows {rows:?}: {e}")))?;
            // The file's memory itself when it can be shared, else a copy.
            let bytes = match &bytes {
                std::borrow::Cow::Borrowed(sub) => crate::typed::shared_buffer(src, sub),
                std::borrow::Cow::Owned(_) => None,
            }
            .unwrap_or_else(|| arrow_buffer::Buffer::from_vec(bytes.into_owned()));
            pick.iter()
                .zip(schema.fields())
                .map(|(&k, f)| match cols.get(k) {
                    Some(c) => numpy::array(c, f.data_type(), &bytes, n as usize, limits),
                    None => Err(Error::invalid("no such column")),
                })
                .collect()
        })
    }
}

/// Opens the `.npy` file `input` with the columns and records `opts`
/// selects.
pub(crate) fn open(input: &Path, opts: &ConvertOptions) -> Result<Input, Error> {
    let bad = |e: crate::bloscpack::Error| Error::Bloscpack(e);
    let src = crate::dataset::map_file(input)?;
    let h = crate::bloscpack::npy::read_header(&src).map_err(bad)?;
    let m = &h.array;
    if m.order == crate::bloscpack::Order::F && m.shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(Error::Unsupported {
            format: Some(Format::Bloscpack),
            message: format!(
                "a Fortran-order array of shape {:?}: convert it to Bloscpack (.blp) first, \
                 whose typed view reads Fortran order",
                m.shape
            ),
        });
    }
    let rows = m.shape.first().copied().unwrap_or(1);
    let outer: Vec<u64> = m.shape.iter().skip(1).copied().collect();
    let row_size = outer
        .iter()
        .try_fold(m.dtype.itemsize() as u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::invalid("the array's row size overflows"))?;
    let cols =
        numpy::columns(&m.dtype, &outer, "row").map_err(|e| e.in_format(Format::Bloscpack))?;
    let all = numpy::schema(&cols).map_err(|e| e.in_format(Format::Bloscpack))?;
    let pick = opts.column_indices(&all, input)?;
    let schema = Arc::new(all.project(&pick)?);
    let std::ops::Range { start, end } = opts.record_range(rows);
    Ok(Input {
        from: "npy".into(),
        records: end - start,
        stream: Box::new(Npy {
            batches: Batches::new(
                schema.clone(),
                start..end,
                opts.batch_records(&schema),
                Some(PageRelease::new(src.clone(), start)),
            ),
            src,
            cols,
            pick,
            data_offset: h.data_offset,
            row_size,
            limits: opts.open.limits,
        }),
        repaired: None,
        staged: None,
    })
}
