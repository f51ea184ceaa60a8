//! A numpy `.npy` file as an input of typed batches: one record per row
//! (first axis), typed as the Bloscpack view types numpy arrays
//! (`docs/arrow.md`), read from the memory-mapped file a batch at a time.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{ConvertOptions, Input, PageRelease};
use crate::Format;
use crate::adapters::numpy::{self, NpColumn};
use crate::dataset::{BatchStream, Error};

struct Npy {
    src: crate::core::Source,
    pages: PageRelease,
    cols: Vec<NpColumn>,
    /// Indices into `cols` of the selected columns.
    pick: Vec<usize>,
    schema: SchemaRef,
    data_offset: u64,
    row_size: u64,
    next: u64,
    end: u64,
    batch: u64,
    limits: crate::core::Limits,
    failed: bool,
}

impl BatchStream for Npy {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, Error>> {
        if self.failed || self.next >= self.end {
            return None;
        }
        let end = self.end.min(self.next.saturating_add(self.batch));
        let n = end - self.next;
        let r = (|| {
            let at = self.data_offset + self.next * self.row_size;
            let bytes = self
                .src
                .bytes(at, n * self.row_size)
                .map_err(|e| Error::invalid(format!(".npy rows {}..{end}: {e}", self.next)))?;
            let arrays = self
                .pick
                .iter()
                .zip(self.schema.fields())
                .map(|(&k, f)| match self.cols.get(k) {
                    Some(c) => numpy::array(c, f.data_type(), &bytes, n as usize, &self.limits),
                    None => Err(Error::invalid("no such column")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(n as usize));
            Ok(RecordBatch::try_new_with_options(
                self.schema.clone(),
                arrays,
                &opts,
            )?)
        })();
        self.failed = r.is_err();
        self.next = end;
        self.pages.read_to(end);
        Some(r)
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
            pages: PageRelease::new(src.clone(), start),
            src,
            cols,
            pick,
            schema,
            data_offset: h.data_offset,
            row_size,
            next: start,
            end,
            batch: opts.batch_size.max(1) as u64,
            limits: opts.open.limits,
            failed: false,
        }),
        repaired: None,
    })
}
