//! The blz adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};
use std::path::Path;

pub(crate) fn open(path: &Path, opts: &crate::OpenOptions) -> Result<Box<dyn Dataset>, Error> {
    use crate::bloscpack::blz::BlzDir;
    let d = crate::remote::open_blz(path, opts.limits, false)?;
    let mut b = Blz {
        d,
        root: path.to_path_buf(),
        cols: Vec::new(),
        schema: std::sync::Arc::new(arrow_schema::Schema::empty()),
        limits: opts.limits,
    };
    let mut fields = Vec::new();
    let mut cols = Vec::new();
    for (k, (name, a)) in b.arrays().into_iter().enumerate() {
        let outer: Vec<u64> = a.shape().iter().skip(1).copied().collect();
        for c in
            super::numpy::columns(a.dtype(), &outer, name).map_err(|e| e.in_format(Format::Blz))?
        {
            fields.push(super::numpy::field(&c).map_err(|e| e.in_format(Format::Blz))?);
            cols.push((k, c));
        }
    }
    b.cols = cols;
    let attrs = match &b.d {
        BlzDir::Array(a) => a.attrs().to_string(),
        BlzDir::Table(t) => t.attrs().to_string(),
    };
    let md = std::collections::HashMap::from([("dataformats.attrs".to_string(), attrs)]);
    b.schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(fields, md));
    Ok(Box::new(b))
}

/// A BLZ/bcolz array (one record per atom) or table (one per row, a
/// value per column); atoms are handed out as 0-d tensors of their
/// numpy type.
struct Blz {
    d: crate::bloscpack::blz::BlzDir,
    root: std::path::PathBuf,
    /// Each typed column: its array (in [`Blz::arrays`] order) and field.
    cols: Vec<(usize, super::numpy::NpColumn)>,
    schema: arrow_schema::SchemaRef,
    limits: crate::core::Limits,
}

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

impl Dataset for Blz {
    fn limits(&self) -> crate::core::Limits {
        self.limits
    }

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
    fn len(&self) -> u64 {
        self.arrays().first().map_or(0, |(_, a)| a.len())
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let end = rows.end.min(self.len());
        let start = rows.start.min(end);
        let n = end - start;
        let arrays = self.arrays();
        // Each carray a column needs is decoded once (a structured carray
        // gives several columns); carrays not asked for are not read.
        let mut decoded: std::collections::HashMap<usize, arrow_buffer::Buffer> =
            Default::default();
        let mut out = Vec::with_capacity(columns.len());
        for &j in columns {
            let (Some((k, c)), Some(f)) = (self.cols.get(j), self.schema.fields().get(j)) else {
                return Err(err(
                    Format::Blz,
                    "invalid_argument",
                    format!("no column {j}"),
                ));
            };
            let Some((_, a)) = arrays.get(*k) else {
                return Err(err(
                    Format::Blz,
                    "invalid_argument",
                    format!("no column {j}"),
                ));
            };
            if !decoded.contains_key(k) {
                let mut data = self
                    .limits
                    .alloc_zeroed("BLZ rows", a.atomsize().saturating_mul(n))
                    .map_err(|x| Error::limit(x).in_format(Format::Blz))?;
                if !data.is_empty() {
                    a.read_atoms_into(start, &mut data)
                        .map_err(fe(Format::Blz))?;
                }
                decoded.insert(*k, arrow_buffer::Buffer::from_vec(data));
            }
            let Some(data) = decoded.get(k) else {
                return Err(Error::invalid(format!("column {j} was not decoded")));
            };
            out.push(
                super::numpy::array(c, f.data_type(), data, n as usize, &self.limits).map_err(
                    |x| {
                        x.in_format(Format::Blz)
                            .context(&format!("column {:?}", c.name))
                    },
                )?,
            );
        }
        Ok(out)
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        // One step: the directory is checked as a whole.
        progress.advance(0, 1);
        crate::remote::open_blz(&self.root, self.limits, true).map(|_| progress.advance(1, 1))
    }
}
