//! The bloscpack adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let ro = crate::bloscpack::ReadOptions::default().limits(opts.limits);
    let r = crate::bloscpack::Reader::with_options(src, ro).map_err(fe(Format::Bloscpack))?;
    let cols = match r.numpy() {
        Some(m) => {
            let outer: Vec<u64> = m.shape.iter().skip(1).copied().collect();
            super::numpy::columns(&m.dtype, &outer, "row")
                .map_err(|e| e.in_format(Format::Bloscpack))?
        }
        None => Vec::new(),
    };
    let schema = if r.numpy().is_some() {
        super::numpy::schema(&cols).map_err(|e| e.in_format(Format::Bloscpack))?
    } else {
        std::sync::Arc::new(arrow_schema::Schema::new(vec![crate::typed::field(
            "chunk",
            arrow_schema::DataType::Binary,
            false,
            "chunk",
        )]))
    };
    Ok(Box::new(Blp(
        r,
        super::Last::new(),
        cols,
        schema,
        opts.limits,
    )))
}

/// A Bloscpack file: a C-order numpy array gives one record per row
/// (first axis); anything else (raw bytes, Fortran order) one record
/// per chunk, as bytes.
struct Blp(
    crate::bloscpack::Reader,
    /// The last decoded chunk, so reading rows in order decodes each
    /// chunk once.
    super::Last<usize, std::sync::Arc<Vec<u8>>>,
    /// The typed columns of numpy rows (empty for raw chunks).
    Vec<super::numpy::NpColumn>,
    arrow_schema::SchemaRef,
    crate::core::Limits,
);

impl Blp {
    /// Records of the typed view: rows of a numpy array of any order, or chunks.
    fn typed_len(&self) -> u64 {
        match self.np_rows() {
            Some((_, n, _)) => n,
            None => self.0.nchunks() as u64,
        }
    }

    /// Rows of any numpy array (C or Fortran order): the metadata, the
    /// number of rows and the bytes of one row.
    fn np_rows(&self) -> Option<(&crate::bloscpack::numpy::NumpyMeta, u64, u64)> {
        let m = self.0.numpy()?;
        let rows = m.shape.first().copied().unwrap_or(1);
        let per_row = m
            .shape
            .iter()
            .skip(1)
            .product::<u64>()
            .saturating_mul(m.dtype.itemsize() as u64);
        Some((m, rows, per_row))
    }

    /// The bytes of rows `start..end` in C order (a Fortran-order array's
    /// rows gathered element by element).
    fn row_bytes(&self, start: u64, end: u64) -> Result<Vec<u8>, Error> {
        let e = fe::<crate::bloscpack::Error>(Format::Bloscpack);
        let Some((m, rows, per_row)) = self.np_rows() else {
            return Err(Error::invalid("not a numpy array"));
        };
        let n = end - start;
        let mut out = self
            .4
            .alloc_zeroed("Bloscpack rows", per_row.saturating_mul(n))
            .map_err(|x| Error::limit(x).in_format(Format::Bloscpack))?;
        if m.order == crate::bloscpack::numpy::Order::C {
            if !out.is_empty() {
                // Rows inside one chunk come from the decoded chunk kept
                // for the next batch: small batches decode each chunk once
                // (not one Blosc block per batch).
                self.read_row(start * per_row, &mut out).map_err(e)?;
            }
            return Ok(out);
        }
        // Fortran order: element (i, rest) is at (i + rows * flat(rest)) in
        // column-major order of the remaining axes.
        let item = m.dtype.itemsize() as u64;
        let rest: Vec<u64> = m.shape.iter().skip(1).copied().collect();
        let per = rest.iter().product::<u64>();
        for (k, i) in (start..end).enumerate() {
            for c in 0..per {
                // c is the C-order index of the element within the row; its
                // column-major index over `rest` is:
                let mut rem = c;
                let mut f_index = 0u64;
                let mut stride = 1u64;
                let mut idx = vec![0u64; rest.len()];
                for (slot, &len) in idx.iter_mut().zip(&rest).rev() {
                    *slot = rem % len.max(1);
                    rem /= len.max(1);
                }
                for (&x, &len) in idx.iter().zip(&rest) {
                    f_index += x * stride;
                    stride *= len;
                }
                let at = (i + rows * f_index) * item;
                let o = (k as u64 * per_row + c * item) as usize;
                let dst = out
                    .get_mut(o..o + item as usize)
                    .ok_or_else(|| Error::invalid("row buffer"))?;
                self.read_row(at, dst).map_err(e)?;
            }
        }
        Ok(out)
    }

    /// The bytes of rows `start..end` in C order as an Arrow buffer: the
    /// file's own memory when the rows lie in one chunk stored uncompressed
    /// (memcpyed) in a mapped file or a buffer, else decoded (or gathered)
    /// once by [`row_bytes`](Self::row_bytes).
    fn row_buffer(&self, start: u64, end: u64) -> Result<arrow_buffer::Buffer, Error> {
        if let Some((m, _, per_row)) = self.np_rows()
            && m.order == crate::bloscpack::numpy::Order::C
        {
            let stored = self
                .0
                .stored_range(
                    start.saturating_mul(per_row),
                    (end - start).saturating_mul(per_row),
                )
                .map_err(fe(Format::Bloscpack))?;
            if let Some(std::borrow::Cow::Borrowed(sub)) = stored
                && let Some(b) = crate::typed::shared_buffer(self.0.source(), sub)
            {
                return Ok(b);
            }
        }
        Ok(arrow_buffer::Buffer::from_vec(self.row_bytes(start, end)?))
    }

    /// Payload bytes `[start, start + out.len())`, through the chunk
    /// cache when they lie in one chunk and are not all of it (whole chunks
    /// decode straight into `out`).
    fn read_row(&self, start: u64, out: &mut [u8]) -> crate::bloscpack::Result<()> {
        let chunk = u64::try_from(self.0.header().chunk_size).unwrap_or(0);
        let end = start + out.len() as u64;
        let c = chunk.max(1);
        let whole =
            start.is_multiple_of(c) && (end.is_multiple_of(c) || end == self.0.payload_len());
        if chunk == 0 || out.is_empty() || whole || start / chunk != (end - 1) / chunk {
            return self.0.read_range_into(start, out);
        }
        let k = usize::try_from(start / chunk).unwrap_or(usize::MAX);
        let decoded = self
            .1
            .get_or_make(k, || self.0.read_chunk(k).map(std::sync::Arc::new))?;
        let from = usize::try_from(start % chunk).unwrap_or(usize::MAX);
        match decoded.get(from..from + out.len()) {
            Some(src) => {
                out.copy_from_slice(src);
                Ok(())
            }
            None => self.0.read_range_into(start, out),
        }
    }
}

impl Blp {
    /// Tells a remote source the chunks (with their digests) that hold
    /// records `rows`, so that they are fetched at once; nothing for local
    /// files. A record is a chunk, or a numpy row whose bytes may span
    /// chunks (Fortran-order arrays read every chunk).
    fn announce(&self, rows: std::ops::Range<u64>) {
        let src = self.0.source();
        if !src.is_remote() || rows.start >= rows.end {
            return;
        }
        let chunks = self.0.chunks();
        let picked = match self.np_rows() {
            None => {
                usize::try_from(rows.start).unwrap_or(usize::MAX)
                    ..usize::try_from(rows.end).unwrap_or(usize::MAX)
            }
            Some((m, _, _)) if m.order != crate::bloscpack::numpy::Order::C => 0..chunks.len(),
            Some((_, _, per_row)) => {
                let (a, z) = (
                    rows.start.saturating_mul(per_row),
                    rows.end.saturating_mul(per_row),
                );
                let first = chunks
                    .partition_point(|c| c.payload_start <= a)
                    .saturating_sub(1);
                first..chunks.partition_point(|c| c.payload_start < z).max(first)
            }
        };
        let end = self.0.data_end();
        let ranges: Vec<_> = picked
            .filter_map(|k| {
                let c = chunks.get(k)?;
                // To the next chunk: the chunk and its digest.
                let stop = chunks.get(k + 1).map_or(end, |n| n.offset);
                Some(c.offset..stop.max(c.digest_offset()))
            })
            .collect();
        src.prefetch(&ranges);
    }
}

impl Dataset for Blp {
    fn memory(&self) -> Option<&[u8]> {
        self.0.source().as_slice()
    }

    fn limits(&self) -> crate::core::Limits {
        self.4
    }

    fn format(&self) -> Format {
        Format::Bloscpack
    }
    fn version(&self) -> String {
        self.0.header().format_version.to_string()
    }
    fn len(&self) -> u64 {
        self.typed_len()
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.0
            .validate_with(progress)
            .map_err(fe(Format::Bloscpack))
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.3.clone()
    }
    fn prefetch(&self, _columns: &[usize], rows: std::ops::Range<u64>) {
        let end = rows.end.min(self.typed_len());
        self.announce(rows.start.min(end)..end);
    }
    fn splits(&self, parts: usize) -> Vec<std::ops::Range<u64>> {
        // A numpy array's rows: a cut at row r lies on a chunk's start when
        // r * row bytes is a multiple of the chunk size. Records that are
        // chunks (no numpy metadata) cut anywhere.
        let chunk = u64::try_from(self.0.header().chunk_size).unwrap_or(0);
        let unit = match self.np_rows() {
            Some((_, _, per_row)) if per_row > 0 && chunk > 0 => chunk / gcd(chunk, per_row),
            _ => 1,
        };
        crate::dataset::split_at_starts(self.typed_len(), &[], unit, parts)
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let e = fe::<crate::bloscpack::Error>(Format::Bloscpack);
        let len = self.typed_len();
        let end = rows.end.min(len);
        let start = rows.start.min(end);
        let n = usize::try_from(end - start).unwrap_or(usize::MAX);
        if !columns.is_empty() {
            self.announce(start..end);
        }
        if self.0.numpy().is_none() {
            let mut cells = crate::typed::VarCells::new(n, &self.4);
            for i in start..end {
                if columns.is_empty() {
                    break;
                }
                cells.push(Some(&self.0.read_chunk(i as usize).map_err(e)?))?;
            }
            return columns
                .iter()
                .map(|&j| {
                    if j != 0 {
                        return Err(err(
                            Format::Bloscpack,
                            "invalid_argument",
                            format!("no column {j}"),
                        ));
                    }
                    Ok(())
                })
                .collect::<Result<Vec<()>, Error>>()
                .and_then(|_| match columns.len() {
                    0 => Ok(Vec::new()),
                    _ => {
                        let a = cells.finish(&arrow_schema::DataType::Binary)?;
                        Ok(columns.iter().map(|_| a.clone()).collect())
                    }
                });
        }
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        let bytes = self.row_buffer(start, end)?;
        columns
            .iter()
            .map(|&j| {
                let (Some(c), Some(f)) = (self.2.get(j), self.3.fields().get(j)) else {
                    return Err(err(
                        Format::Bloscpack,
                        "invalid_argument",
                        format!("no column {j}"),
                    ));
                };
                super::numpy::array(c, f.data_type(), &bytes, n, &self.4).map_err(|x| {
                    x.in_format(Format::Bloscpack)
                        .context(&format!("column {:?}", c.name))
                })
            })
            .collect()
    }
}

/// Greatest common divisor (`b > 0`).
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
