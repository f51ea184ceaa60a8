//! The tbl2 adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    let mut ro = crate::tbl2::ReadOptions::default();
    ro.limits = opts.limits;
    let r = crate::tbl2::Reader::with_options(src, ro).map_err(fe(Format::Tbl2))?;
    Ok(Box::new(Tbl2(r, schema(), opts.limits)))
}

struct Tbl2(
    crate::tbl2::Reader,
    arrow_schema::SchemaRef,
    crate::core::Limits,
);

/// The fixed schema of every TBL v2 file.
fn schema() -> arrow_schema::SchemaRef {
    use crate::typed::field;
    use arrow_schema::{DataType as A, Field, Schema};
    let meta = A::Struct(
        vec![
            Field::new("type", A::UInt16, false),
            Field::new("data", A::Binary, false),
        ]
        .into(),
    );
    std::sync::Arc::new(Schema::new(vec![
        field("data", A::Binary, false, "sample"),
        field(
            "format",
            A::Dictionary(Box::new(A::UInt8), Box::new(A::Utf8)),
            false,
            "SampleFormat",
        ),
        field("width", A::UInt16, false, "u16"),
        field("height", A::UInt16, false, "u16"),
        field("metadata", meta, true, "MetadataBlock"),
    ]))
}

/// The names of all 256 sample format codes: the dictionary of `format`.
fn format_names() -> arrow_array::ArrayRef {
    std::sync::Arc::new(arrow_array::StringArray::from_iter_values(
        (0..=255u8).map(|c| crate::tbl2::SampleFormat(c).name()),
    ))
}

impl Dataset for Tbl2 {
    fn limits(&self) -> crate::core::Limits {
        self.2
    }

    fn format(&self) -> Format {
        Format::Tbl2
    }
    fn version(&self) -> String {
        self.0.header().version.to_string()
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.0.validate_with(progress).map_err(fe(Format::Tbl2))
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.1.clone()
    }
    fn prefetch(&self, columns: &[usize], rows: std::ops::Range<u64>) {
        let end = rows.end.min(self.len());
        self.announce(columns, rows.start.min(end)..end);
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let end = rows.end.min(self.len());
        let start = rows.start.min(end);
        self.arrays(columns, start..end, (end - start) as usize)
    }
    /// Samples are found through the index, so every requested sample is
    /// decoded straight into its place in the batch.
    fn take_arrays(
        &self,
        columns: &[usize],
        indices: &[u64],
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        crate::dataset::check_indices(self, indices)?;
        self.arrays(columns, indices.iter().copied(), indices.len())
    }
}

impl Tbl2 {
    /// Tells a remote source where the stored samples `rows` are when the
    /// data column is asked for (the index is in memory; nothing to do for
    /// local files).
    fn announce(&self, columns: &[usize], rows: impl Iterator<Item = u64>) {
        let src = self.0.source();
        if !src.is_remote() || !columns.contains(&0) {
            return;
        }
        let index = self.0.index();
        let ranges: Vec<_> = rows
            .filter_map(|i| index.get(usize::try_from(i).ok()?))
            .map(|x| x.offset..x.offset.saturating_add(u64::from(x.size)))
            .collect();
        src.prefetch(&ranges);
    }

    /// Columns `columns` of the `n` samples `rows` (each below `len()`),
    /// in that order.
    fn arrays(
        &self,
        columns: &[usize],
        rows: impl Iterator<Item = u64> + Clone,
        n: usize,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        use arrow_array::{ArrayRef, DictionaryArray, StructArray, UInt8Array, UInt16Array};
        use std::sync::Arc;
        let e = fe::<crate::tbl2::Error>(Format::Tbl2);
        let at = |i: u64| usize::try_from(i).unwrap_or(usize::MAX);
        self.announce(columns, rows.clone());
        let mut out: Vec<ArrayRef> = Vec::with_capacity(columns.len());
        for &j in columns {
            let a: ArrayRef = match j {
                0 => {
                    let mut cells = crate::typed::VarCells::new(n, &self.2);
                    // Each sample's length looked up once: the batch's
                    // buffer grows once, then every sample decodes into it.
                    let lens = rows
                        .clone()
                        .map(|i| self.0.sample_len(at(i)).map_err(e))
                        .collect::<Result<Vec<usize>, _>>()?;
                    cells.reserve(lens.iter().map(|&l| l as u64).sum());
                    for (i, len) in rows.clone().zip(lens) {
                        cells
                            .push_with(len, |buf| self.0.append_sample(at(i), buf).map_err(e))
                            .map_err(|x| {
                                x.in_format(Format::Tbl2).context(&format!("sample {i}"))
                            })?;
                    }
                    cells.finish(&arrow_schema::DataType::Binary)?
                }
                1 => {
                    let mut keys = Vec::with_capacity(n);
                    for i in rows.clone() {
                        keys.push(self.0.entry(at(i)).map_err(e)?.format.0);
                    }
                    Arc::new(DictionaryArray::try_new(
                        UInt8Array::from(keys),
                        format_names(),
                    )?)
                }
                2 | 3 => {
                    let mut v = Vec::with_capacity(n);
                    for i in rows.clone() {
                        let x = self.0.entry(at(i)).map_err(e)?;
                        v.push(if j == 2 { x.width } else { x.height });
                    }
                    Arc::new(UInt16Array::from(v))
                }
                4 => {
                    let mut types = Vec::with_capacity(n);
                    let mut data = crate::typed::VarCells::new(n, &self.2);
                    let mut valid = Vec::with_capacity(n);
                    for i in rows.clone() {
                        match self.0.read_metadata(at(i)).map_err(e)? {
                            Some((t, b)) => {
                                types.push(t.0);
                                data.push(Some(&b))?;
                                valid.push(true);
                            }
                            None => {
                                types.push(0);
                                data.push(Some(&[]))?;
                                valid.push(false);
                            }
                        }
                    }
                    let arrow_schema::DataType::Struct(fields) =
                        self.1.field(4).data_type().clone()
                    else {
                        return Err(Error::invalid("metadata is not a struct"));
                    };
                    Arc::new(StructArray::try_new(
                        fields,
                        vec![
                            Arc::new(UInt16Array::from(types)),
                            data.finish(&arrow_schema::DataType::Binary)?,
                        ],
                        crate::typed::nulls(&valid),
                    )?)
                }
                _ => {
                    return Err(err(
                        Format::Tbl2,
                        "invalid_argument",
                        format!("no column {j}"),
                    ));
                }
            };
            out.push(a);
        }
        Ok(out)
    }
}
