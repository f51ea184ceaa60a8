//! The idv adapter of the common view.

use crate::Format;
use crate::dataset::{Dataset, Error, err, fe};

pub(crate) fn open(
    src: crate::core::Source,
    opts: &crate::OpenOptions,
) -> Result<Box<dyn Dataset>, Error> {
    use crate::idv::Reader;
    let e = fe::<crate::idv::Error>(Format::Idv);
    let r = Reader::with_options(src, crate::core::ReadOptions::default().limits(opts.limits))
        .map_err(e)?;
    let live: Vec<usize> = (0..r.columns().len())
        .filter(|&k| r.columns().get(k).is_some_and(|c| !c.is_dead()))
        .collect();
    let mut fields: Vec<arrow_schema::Field> = Vec::new();
    let mut kinds = Vec::new();
    for &k in &live {
        let c = r.columns().get(k).ok_or_else(|| Error::invalid("column"))?;
        let (mut f, kind) = typed::column_field(c)?;
        // ML.NET lets a later column hide an earlier one of the same name;
        // Arrow tools want unique names: a repeated name gets `.1`, `.2`...
        // and the original name stays in the metadata.
        let mut n = 0;
        let base = f.name().clone();
        while fields.iter().any(|g| g.name() == f.name()) {
            n += 1;
            let mut md = f.metadata().clone();
            md.insert(crate::typed::NAME_KEY.into(), base.clone());
            f = f.with_name(format!("{base}.{n}")).with_metadata(md);
        }
        fields.push(f);
        kinds.push(kind);
    }
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(fields));
    let r_columns = r.columns().len();
    Ok(Box::new(Idv {
        r,
        live,
        kinds,
        schema,
        limits: opts.limits,
        text: opts.text.clone(),
        kept: (0..r_columns).map(|_| super::Last::new()).collect(),
    }))
}

/// Bytes per value of a plain numeric scalar column (stored as raw
/// little-endian values in its blocks), else `None`.
fn plain_width(c: Option<&crate::idv::Column>) -> Option<usize> {
    use crate::idv::{ColumnType, ItemType as I};
    match c?.ty()? {
        ColumnType::Scalar(
            t @ (I::I8
            | I::U8
            | I::I16
            | I::U16
            | I::I32
            | I::U32
            | I::I64
            | I::U64
            | I::F32
            | I::F64),
        ) => t.fixed_size(),
        _ => None,
    }
}

impl Idv {
    /// Rows per block: every column's blocks hold the same rows.
    fn rows_per_block(&self) -> u64 {
        u64::from(self.r.columns().first().map_or(1, |c| c.rows_per_block)).max(1)
    }

    /// Block `b` of column `k`, if it is the one kept for it.
    fn kept(&self, k: usize, b: u64) -> Option<Kept> {
        self.kept.get(k)?.get(&b)
    }

    /// Keeps block `b` of column `k` when a batch ending at record `end`
    /// ends inside it: the next batch starts in that block.
    fn keep_if_unfinished(&self, k: usize, b: u64, end: u64, block: impl FnOnce() -> Kept) {
        let block_end = b
            .saturating_add(1)
            .saturating_mul(self.rows_per_block())
            .min(self.r.len());
        if end < block_end
            && let Some(slot) = self.kept.get(k)
        {
            slot.put(b, block());
        }
    }

    /// Rows `start..end` of a plain numeric column: a batch inside one
    /// uncompressed block shares the file's memory (no copy when the block
    /// is aligned for the type), a batch inside one inflated block shares
    /// that block's buffer; otherwise each block's part is copied once into
    /// the array's buffer. A block is decoded once however the batches cut
    /// it.
    fn plain(
        &self,
        k: usize,
        width: usize,
        dt: &arrow_schema::DataType,
        start: u64,
        end: u64,
    ) -> Result<arrow_array::ArrayRef, Error> {
        use std::borrow::Cow;
        let e = fe::<crate::idv::Error>(Format::Idv);
        let n = usize::try_from(end - start).unwrap_or(usize::MAX);
        let rpb = self.rows_per_block();
        let total = (width as u64).saturating_mul(n as u64);
        self.limits
            .check_alloc("IDV column", total)
            .map_err(|x| Error::limit(x).in_format(Format::Idv))?;
        let part =
            |bytes: &[u8], b: u64, from: u64, to: u64| -> Result<std::ops::Range<usize>, Error> {
                let a = ((from - b * rpb) as usize) * width;
                let z = ((to - b * rpb) as usize) * width;
                if bytes.len() < z {
                    return Err(err(
                        Format::Idv,
                        "truncated",
                        format!("block {b}: {} bytes, its rows need {z}", bytes.len()),
                    ));
                }
                Ok(a..z)
            };
        // Block `b`'s bytes: kept from the last batch, or read.
        let block = |b: u64| -> Result<BlockBytes<'_>, Error> {
            match self.kept(k, b) {
                Some(Kept::Plain(buf)) => Ok(BlockBytes::Kept(buf)),
                _ => Ok(BlockBytes::Read(self.r.block_bytes(k, b).map_err(e)?)),
            }
        };
        if n > 0 && start / rpb == (end - 1) / rpb {
            let b = start / rpb;
            let buf = match block(b)? {
                BlockBytes::Kept(buf) => buf,
                BlockBytes::Read(Cow::Borrowed(s)) => {
                    let range = part(s, b, start, end)?;
                    if let Some(buf) = s
                        .get(range)
                        .and_then(|sub| crate::typed::shared_buffer(self.r.source(), sub))
                    {
                        return crate::typed::fixed_array(dt, buf, n, None);
                    }
                    // Not shareable: copied below.
                    arrow_buffer::Buffer::from_slice_ref(s)
                }
                // An inflated (or fetched) block: its buffer becomes the
                // array's, never copied.
                BlockBytes::Read(Cow::Owned(v)) => arrow_buffer::Buffer::from_vec(v),
            };
            let range = part(buf.as_slice(), b, start, end)?;
            self.keep_if_unfinished(k, b, end, || Kept::Plain(buf.clone()));
            let slice = buf.slice_with_length(range.start, range.end - range.start);
            return crate::typed::fixed_array(dt, slice, n, None);
        }
        let mut out = arrow_buffer::MutableBuffer::new(total as usize);
        let mut row = start;
        while row < end {
            let b = row / rpb;
            let to = end.min((b + 1) * rpb);
            match block(b)? {
                BlockBytes::Kept(buf) => {
                    let range = part(buf.as_slice(), b, row, to)?;
                    out.extend_from_slice(buf.as_slice().get(range).unwrap_or_default());
                }
                BlockBytes::Read(bytes) => {
                    let range = part(&bytes, b, row, to)?;
                    out.extend_from_slice(bytes.get(range).unwrap_or_default());
                    if to == end
                        && let Cow::Owned(v) = bytes
                    {
                        self.keep_if_unfinished(k, b, end, || {
                            Kept::Plain(arrow_buffer::Buffer::from_vec(v))
                        });
                    }
                }
            }
            row = to;
        }
        crate::typed::fixed_array(dt, out.into(), n, None)
    }

    /// Rows `start..end` of any other column, decoded: a batch that is one
    /// whole block is that block's values, uncopied; a block is decoded
    /// once however the batches cut it.
    fn values(
        &self,
        k: usize,
        start: u64,
        end: u64,
    ) -> Result<std::sync::Arc<crate::idv::Values>, Error> {
        use std::sync::Arc;
        let e = fe::<crate::idv::Error>(Format::Idv);
        if start >= end {
            return Ok(Arc::new(self.r.read_rows(k, start..end).map_err(e)?));
        }
        let rpb = self.rows_per_block();
        let block = |b: u64| -> Result<Arc<crate::idv::Values>, Error> {
            match self.kept(k, b) {
                Some(Kept::Values(v)) => Ok(v),
                _ => Ok(Arc::new(self.r.read_block(k, b).map_err(e)?)),
            }
        };
        let (first, last) = (start / rpb, (end - 1) / rpb);
        let ty = self
            .r
            .columns()
            .get(k)
            .and_then(|c| c.ty())
            .ok_or_else(|| err(Format::Idv, "invalid_argument", format!("no column {k}")))?;
        let mut out = crate::idv::Values::empty_of(ty);
        for b in first..=last {
            let v = block(b)?;
            let lo = (start.max(b * rpb) - b * rpb) as usize;
            let hi = (end.min((b + 1) * rpb) - b * rpb) as usize;
            if b == last {
                self.keep_if_unfinished(k, b, end, || Kept::Values(v.clone()));
            }
            if first == last && lo == 0 && hi == v.len() {
                return Ok(v);
            }
            if !out.append_from(&v, lo..hi) {
                return Err(err(
                    Format::Idv,
                    "truncated",
                    format!("block {b}: {} values, its rows need {hi}", v.len()),
                ));
            }
        }
        Ok(Arc::new(out))
    }
}

struct Idv {
    r: crate::idv::Reader,
    /// The reader's index of each live (not dead) column, in schema order.
    live: Vec<usize>,
    kinds: Vec<typed::Kind>,
    schema: arrow_schema::SchemaRef,
    limits: crate::core::Limits,
    /// What to do with text that is not UTF-8.
    text: crate::dataset::TextRepair,
    /// Per column (the reader's index), the decoded block that the last
    /// batch ended inside: the next batch starts in it and takes its part
    /// from here instead of decoding the block again. One block per
    /// column, so columns do not evict each other.
    kept: Vec<super::Last<u64, Kept>>,
}

/// A decoded block kept for the next batch.
#[derive(Clone)]
enum Kept {
    /// The bytes of a plain numeric column's block.
    Plain(arrow_buffer::Buffer),
    /// The values of any other column's block.
    Values(std::sync::Arc<crate::idv::Values>),
}

/// The bytes of a plain numeric column's block, as `plain()` gets them.
enum BlockBytes<'a> {
    /// Kept from the last batch.
    Kept(arrow_buffer::Buffer),
    /// Read now: borrowed from the file when stored plain, else inflated
    /// or fetched.
    Read(std::borrow::Cow<'a, [u8]>),
}

impl Idv {
    /// Tells a remote source which stored blocks the rows `start..end` of
    /// `columns` are in, so that they are fetched together before they are
    /// decoded one by one (nothing to do for local files).
    fn announce(&self, columns: &[usize], start: u64, end: u64) {
        let src = self.r.source();
        if !src.is_remote() || start >= end {
            return;
        }
        let rpb = self.rows_per_block();
        let (first, last) = (start / rpb, (end - 1) / rpb);
        let mut ranges = Vec::new();
        for &j in columns {
            let Some(table) = self.live.get(j).and_then(|&k| self.r.lookup(k).ok()) else {
                continue; // the read itself reports it
            };
            let blocks = usize::try_from(first).unwrap_or(usize::MAX)
                ..usize::try_from(last.saturating_add(1)).unwrap_or(usize::MAX);
            for e in table.get(blocks).unwrap_or_default() {
                ranges.push(e.offset..e.offset.saturating_add(u64::from(e.compressed_len)));
            }
        }
        src.prefetch(&ranges);
    }
}

impl Dataset for Idv {
    fn memory(&self) -> Option<&[u8]> {
        self.r.source().as_slice()
    }

    fn limits(&self) -> crate::core::Limits {
        self.limits
    }

    fn format(&self) -> Format {
        Format::Idv
    }
    fn version(&self) -> String {
        crate::idv::version_string(self.r.header().version)
    }
    fn len(&self) -> u64 {
        self.r.len()
    }
    fn validate_with(&self, progress: &mut dyn crate::core::Progress) -> Result<(), Error> {
        self.r.validate_with(progress).map_err(fe(Format::Idv))
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
    fn splits(&self, parts: usize) -> Vec<std::ops::Range<u64>> {
        // Every column's blocks hold the same rows.
        let rpb = self.r.columns().first().map_or(1, |c| c.rows_per_block);
        crate::dataset::split_at_starts(self.len(), &[], u64::from(rpb), parts)
    }
    fn prefetch(&self, columns: &[usize], rows: std::ops::Range<u64>) {
        let end = rows.end.min(self.r.len());
        self.announce(columns, rows.start.min(end), end);
    }

    fn read_arrays(
        &self,
        columns: &[usize],
        rows: std::ops::Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, Error> {
        let end = rows.end.min(self.r.len());
        let start = rows.start.min(end);
        self.announce(columns, start, end);
        let mut out = Vec::with_capacity(columns.len());
        for &j in columns {
            let (Some(&k), Some(kind), Some(f)) = (
                self.live.get(j),
                self.kinds.get(j),
                self.schema.fields().get(j),
            ) else {
                return Err(err(
                    Format::Idv,
                    "invalid_argument",
                    format!("no column {j}"),
                ));
            };
            if let Some(width) = plain_width(self.r.columns().get(k)) {
                out.push(
                    self.plain(k, width, f.data_type(), start, end)
                        .map_err(|e| e.context(&format!("column {:?}", f.name())))?,
                );
                continue;
            }
            let v = self
                .values(k, start, end)
                .map_err(|e| e.context(&format!("column {:?}", f.name())))?;
            if !matches!(self.text, crate::dataset::TextRepair::Replace) {
                self.text.check(f.name(), start, v.lone_surrogates())?;
            }
            let a = typed::array(kind, f.data_type(), &v, start, &self.limits).map_err(|e| {
                e.in_format(Format::Idv)
                    .context(&format!("column {:?}", f.name()))
            })?;
            out.push(a);
        }
        Ok(out)
    }
}

/// IDV columns as Arrow: the mapping of `docs/arrow.md`.
pub(crate) mod typed {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::types::*;
    use arrow_array::{
        Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeBinaryArray, FixedSizeListArray,
        ListArray, PrimitiveArray, StringArray, StructArray, UInt32Array,
    };
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, Field, Fields, TimeUnit};

    use crate::dataset::Error;
    use crate::idv::{Column, ColumnType, ItemType, KeyWidth, Values};
    use crate::typed::{
        ANNOTATION_PREFIX, ANNOTATION_TYPE_PREFIX, DIM_KEY, EXTENSION_METADATA, EXTENSION_NAME,
        TYPE_KEY,
    };

    /// Fixed-size vectors longer than this stay sparse (indices + values):
    /// ML.NET's hashed n-gram features declare 2^28 slots and store a few.
    pub(super) const MAX_DENSE_SLOTS: u32 = 1 << 20;

    /// Ticks (100 ns) between 0001-01-01 and the Unix epoch.
    const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;

    /// How a column becomes Arrow.
    #[derive(Debug, Clone)]
    pub(crate) enum Kind {
        Scalar(Option<Arc<StringArray>>),
        /// Fixed size, densified into a `FixedSizeList`.
        Fixed(ItemType, Option<Arc<StringArray>>, i32),
        /// Variable size, densified into a `List`.
        Var(ItemType, Option<Arc<StringArray>>),
        /// Fixed size too large to densify: `{indices, values}`.
        Sparse(Option<Arc<StringArray>>),
    }

    /// The text KeyValues of a key column (its dictionary).
    fn key_values(c: &Column) -> Option<Arc<StringArray>> {
        if !matches!(c.ty()?.item(), ItemType::Key { .. }) {
            return None;
        }
        match c.annotation("KeyValues")? {
            Values::Vector(vv) => match vv.dense(0)? {
                Values::Text(t) => Some(Arc::new(StringArray::from_iter_values(t.iter()))),
                _ => None,
            },
            _ => None,
        }
    }

    /// The Arrow type of one item.
    pub(crate) fn item_type(t: ItemType, dict: bool) -> DataType {
        match t {
            ItemType::I8 => DataType::Int8,
            ItemType::U8 => DataType::UInt8,
            ItemType::I16 => DataType::Int16,
            ItemType::U16 => DataType::UInt16,
            ItemType::I32 => DataType::Int32,
            ItemType::U32 => DataType::UInt32,
            ItemType::I64 => DataType::Int64,
            ItemType::U64 => DataType::UInt64,
            ItemType::F32 => DataType::Float32,
            ItemType::F64 => DataType::Float64,
            ItemType::Bool => DataType::Boolean,
            ItemType::Text => DataType::Utf8,
            ItemType::TimeSpan => DataType::Struct(Fields::from(vec![
                Field::new("duration", DataType::Duration(TimeUnit::Microsecond), false),
                Field::new("ticks", DataType::Int64, false),
            ])),
            ItemType::DateTime => DataType::Struct(Fields::from(vec![
                Field::new(
                    "timestamp",
                    DataType::Timestamp(TimeUnit::Microsecond, None),
                    false,
                ),
                Field::new("ticks", DataType::Int64, false),
            ])),
            ItemType::DateTimeOffset => DataType::Struct(Fields::from(vec![
                Field::new(
                    "timestamp",
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                    false,
                ),
                Field::new("offset_minutes", DataType::Int16, false),
                Field::new("ticks", DataType::Int64, false),
            ])),
            ItemType::RowId => DataType::FixedSizeBinary(16),
            ItemType::Key { width, .. } if dict => {
                let _ = width;
                DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
            }
            ItemType::Key { width, .. } => match width {
                KeyWidth::U64 => DataType::UInt64,
                _ => DataType::UInt32,
            },
        }
    }

    /// Keys are nullable (0 is missing); other items are never null.
    fn item_nullable(t: ItemType) -> bool {
        matches!(t, ItemType::Key { .. })
    }

    /// The schema field of a live column and how to fill it.
    pub(crate) fn column_field(c: &Column) -> Result<(Field, Kind), Error> {
        let ty = c
            .ty()
            .ok_or_else(|| Error::invalid(format!("column {:?} has no type", c.name)))?;
        let (f, kind) = type_field(&c.name, ty, key_values(c))?;
        let mut md = f.metadata().clone();
        let mut order = Vec::new();
        for a in &c.annotations {
            let (Some(v), Some(aty)) = (&a.value, a.codec.ty.as_ref()) else {
                continue;
            };
            order.push(serde_json::Value::String(a.kind.clone()));
            md.insert(
                format!("{ANNOTATION_PREFIX}{}", a.kind),
                annotation_json(aty, v)?,
            );
            md.insert(
                format!("{ANNOTATION_TYPE_PREFIX}{}", a.kind),
                aty.to_string(),
            );
        }
        if !order.is_empty() {
            md.insert(
                crate::typed::ANNOTATION_ORDER_KEY.to_string(),
                serde_json::Value::Array(order).to_string(),
            );
        }
        Ok((f.with_metadata(md), kind))
    }

    /// An annotation's value (one row of its type) as the lossless JSON of
    /// its typed view.
    fn annotation_json(ty: &ColumnType, v: &Values) -> Result<String, Error> {
        let (f, kind) = type_field("annotation", ty, None)?;
        let a = array(&kind, f.data_type(), v, 0, &crate::core::Limits::default())?;
        let mut out = String::new();
        if !a.is_empty() {
            crate::typed::json_value_exact(a.as_ref(), 0, &mut out);
        }
        Ok(out)
    }

    /// The Arrow field of a column of type `ty` (keys with `kv` as
    /// dictionary), and how to fill it.
    pub(crate) fn type_field(
        name: &str,
        ty: &ColumnType,
        kv: Option<Arc<StringArray>>,
    ) -> Result<(Field, Kind), Error> {
        let item = ty.item();
        let it = item_type(item, kv.is_some());
        let mut md = HashMap::from([(TYPE_KEY.to_string(), ty.to_string())]);
        let (dt, kind, nullable) = match ty {
            ColumnType::Scalar(_) => (it, Kind::Scalar(kv), item_nullable(item)),
            ColumnType::Vector { dims, .. } => match ty.vector_size().unwrap_or(0) {
                0 => (
                    DataType::List(Arc::new(Field::new("item", it, item_nullable(item)))),
                    Kind::Var(item, kv),
                    false,
                ),
                n if n > MAX_DENSE_SLOTS => {
                    md.insert(DIM_KEY.into(), n.to_string());
                    (
                        DataType::Struct(Fields::from(vec![
                            Field::new(
                                "indices",
                                DataType::List(Arc::new(Field::new(
                                    "item",
                                    DataType::UInt32,
                                    false,
                                ))),
                                false,
                            ),
                            Field::new(
                                "values",
                                DataType::List(Arc::new(Field::new(
                                    "item",
                                    it,
                                    item_nullable(item),
                                ))),
                                false,
                            ),
                        ])),
                        Kind::Sparse(kv),
                        false,
                    )
                }
                n => {
                    if dims.len() > 1 {
                        md.insert(EXTENSION_NAME.into(), "arrow.fixed_shape_tensor".into());
                        let d: Vec<String> = dims.iter().map(ToString::to_string).collect();
                        md.insert(
                            EXTENSION_METADATA.into(),
                            format!("{{\"shape\":[{}]}}", d.join(",")),
                        );
                    }
                    let n = i32::try_from(n).map_err(|_| Error::invalid("vector too long"))?;
                    // A tensor's items are nullable, as the canonical
                    // extension's storage has them.
                    let null_items = item_nullable(item) || dims.len() > 1;
                    (
                        DataType::FixedSizeList(Arc::new(Field::new("item", it, null_items)), n),
                        Kind::Fixed(item, kv, n),
                        false,
                    )
                }
            },
        };
        Ok((Field::new(name, dt, nullable).with_metadata(md), kind))
    }

    fn floor_div(a: i64, b: i64) -> i64 {
        a.div_euclid(b)
    }

    fn ticks_struct(
        dt: &DataType,
        ticks: Vec<i64>,
        offsets: Option<Vec<i16>>,
    ) -> Result<ArrayRef, Error> {
        let DataType::Struct(fields) = dt else {
            return Err(Error::invalid("time type is not a struct"));
        };
        let n = ticks.len();
        let mut cols: Vec<ArrayRef> = Vec::new();
        match &offsets {
            None => {
                let us: Vec<i64> = ticks
                    .iter()
                    .map(|&t| {
                        if matches!(
                            fields.first().map(|f| f.data_type()),
                            Some(DataType::Duration(_))
                        ) {
                            floor_div(t, 10)
                        } else {
                            floor_div(t.saturating_sub(UNIX_EPOCH_TICKS), 10)
                        }
                    })
                    .collect();
                match fields.first().map(|f| f.data_type()) {
                    Some(DataType::Duration(_)) => {
                        cols.push(Arc::new(PrimitiveArray::<DurationMicrosecondType>::from(
                            us,
                        )))
                    }
                    _ => cols.push(Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(
                        us,
                    ))),
                }
            }
            Some(off) => {
                // UTC = local clock - offset.
                let us: Vec<i64> = ticks
                    .iter()
                    .zip(off)
                    .map(|(&t, &m)| {
                        let utc = t.saturating_sub(i64::from(m) * 600_000_000);
                        floor_div(utc.saturating_sub(UNIX_EPOCH_TICKS), 10)
                    })
                    .collect();
                cols.push(Arc::new(
                    PrimitiveArray::<TimestampMicrosecondType>::from(us).with_timezone("UTC"),
                ));
                cols.push(Arc::new(PrimitiveArray::<Int16Type>::from(off.clone())));
            }
        }
        cols.push(Arc::new(PrimitiveArray::<Int64Type>::from(ticks)));
        let _ = n;
        Ok(Arc::new(StructArray::try_new(fields.clone(), cols, None)?))
    }

    /// A flat array of items (one per value of `v`) of Arrow type `dt`.
    fn items(
        v: &Values,
        dt: &DataType,
        dict: &Option<Arc<StringArray>>,
        first_row: u64,
    ) -> Result<ArrayRef, Error> {
        fn prim<T: arrow_array::ArrowPrimitiveType>(x: &[T::Native]) -> ArrayRef {
            Arc::new(PrimitiveArray::<T>::from_iter_values(x.iter().copied()))
        }
        Ok(match v {
            Values::I8(x) => prim::<Int8Type>(x),
            Values::U8(x) => prim::<UInt8Type>(x),
            Values::I16(x) => prim::<Int16Type>(x),
            Values::U16(x) => prim::<UInt16Type>(x),
            Values::I32(x) => prim::<Int32Type>(x),
            Values::U32(x) => prim::<UInt32Type>(x),
            Values::I64(x) => prim::<Int64Type>(x),
            Values::U64(x) => prim::<UInt64Type>(x),
            Values::F32(x) => prim::<Float32Type>(x),
            Values::F64(x) => prim::<Float64Type>(x),
            Values::Bool(x) => Arc::new(BooleanArray::from(x.clone())),
            // WTF-8 that is not UTF-8 (half of a surrogate pair, which ML.NET
            // allows) becomes U+FFFD: see docs/arrow.md.
            Values::Text(t) => Arc::new(StringArray::from_iter_values(t.iter())),
            Values::TimeSpan(x) | Values::DateTime(x) => ticks_struct(dt, x.clone(), None)?,
            Values::DateTimeOffset(x) => ticks_struct(
                dt,
                x.iter().map(|d| d.ticks).collect(),
                Some(x.iter().map(|d| d.offset_minutes).collect()),
            )?,
            // Built from its bytes (not `try_from_iter`, which cannot tell
            // the width of zero values).
            Values::RowId(x) => Arc::new(
                FixedSizeBinaryArray::try_new(
                    16,
                    arrow_buffer::Buffer::from_iter(x.iter().flat_map(|id| id.to_le_bytes())),
                    None,
                )
                .map_err(Error::Arrow)?,
            ),
            Values::Key(x) => match dict {
                Some(d) => {
                    let mut keys = Vec::with_capacity(x.len());
                    for (i, &k) in x.iter().enumerate() {
                        if k == 0 {
                            keys.push(None);
                        } else if k > d.len() as u64 {
                            return Err(Error::invalid(format!(
                                "value {} (from record {first_row}): key {k} has no KeyValues entry ({} entries)",
                                i,
                                d.len()
                            )));
                        } else {
                            keys.push(Some((k - 1) as u32));
                        }
                    }
                    Arc::new(DictionaryArray::<UInt32Type>::try_new(
                        UInt32Array::from(keys),
                        d.clone() as ArrayRef,
                    )?)
                }
                None => match dt {
                    DataType::UInt64 => Arc::new(PrimitiveArray::<UInt64Type>::from_iter(
                        x.iter().map(|&k| (k != 0).then_some(k)),
                    )),
                    _ => Arc::new(PrimitiveArray::<UInt32Type>::from_iter(
                        x.iter().map(|&k| (k != 0).then_some(k as u32)),
                    )),
                },
            },
            Values::Vector(_) => return Err(Error::invalid("nested vector")),
            _ => return Err(Error::invalid("a value type this view does not know")),
        })
    }

    /// The dense values of every vector of `vv`, back to back, with their
    /// offsets; refused beyond `limits` before anything is densified.
    fn densify(
        vv: &crate::idv::VectorValues,
        item: ItemType,
        limits: &crate::core::Limits,
    ) -> Result<(Values, Vec<i32>), Error> {
        let mut total = 0u64;
        for i in 0..vv.len() {
            total += u64::from(vv.get(i).map_or(0, |r| r.length));
        }
        let size = item.fixed_size().unwrap_or(16) as u64;
        limits
            .check_alloc("densified IDV vectors", total.saturating_mul(size))
            .map_err(Error::limit)?;
        if total > i32::MAX as u64 {
            return Err(Error::invalid(format!("{total} vector slots in one batch")));
        }
        let mut flat = vv.values().empty_like();
        let mut offsets = Vec::with_capacity(vv.len() + 1);
        offsets.push(0i32);
        for i in 0..vv.len() {
            let d = vv
                .dense(i)
                .ok_or_else(|| Error::invalid(format!("vector {i} is out of range")))?;
            let n = d.len();
            if !flat.append_from(&d, 0..n) {
                return Err(Error::invalid(format!(
                    "vector {i} has items of another type"
                )));
            }
            offsets.push(flat.len() as i32);
        }
        Ok((flat, offsets))
    }

    /// The column's array for the records of `v` (a decoded row range
    /// starting at record `first_row`).
    pub(crate) fn array(
        kind: &Kind,
        dt: &DataType,
        v: &Values,
        first_row: u64,
        limits: &crate::core::Limits,
    ) -> Result<ArrayRef, Error> {
        let child = |dt: &DataType| match dt {
            DataType::List(f) | DataType::FixedSizeList(f, _) => Ok(f.clone()),
            other => Err(Error::invalid(format!("{other} is not a list"))),
        };
        match (kind, v) {
            (Kind::Scalar(kv), v) => items(v, dt, kv, first_row),
            (Kind::Fixed(item, kv, n), Values::Vector(vv)) => {
                let (flat, offsets) = densify(vv, *item, limits)?;
                for (i, w) in offsets.windows(2).enumerate() {
                    if let [a, b] = w
                        && b - a != *n
                    {
                        return Err(Error::invalid(format!(
                            "record {}: vector of {} items, the column's size is {n}",
                            first_row + i as u64,
                            b - a
                        )));
                    }
                }
                let f = child(dt)?;
                let values = items(&flat, f.data_type(), kv, first_row)?;
                Ok(Arc::new(FixedSizeListArray::try_new(f, *n, values, None)?))
            }
            (Kind::Var(item, kv), Values::Vector(vv)) => {
                let (flat, offsets) = densify(vv, *item, limits)?;
                let f = child(dt)?;
                let values = items(&flat, f.data_type(), kv, first_row)?;
                Ok(Arc::new(ListArray::try_new(
                    f,
                    OffsetBuffer::new(offsets.into()),
                    values,
                    None,
                )?))
            }
            (Kind::Sparse(kv), Values::Vector(vv)) => {
                let DataType::Struct(fields) = dt else {
                    return Err(Error::invalid("sparse column is not a struct"));
                };
                let mut idx = Vec::new();
                let mut idx_off = vec![0i32];
                let mut val_off = vec![0i32];
                let all = vv.values();
                let mut picked = all.empty_like();
                for i in 0..vv.len() {
                    let r = vv
                        .get(i)
                        .ok_or_else(|| Error::invalid(format!("vector {i} is out of range")))?;
                    match r.indices {
                        Some(ix) => idx.extend_from_slice(ix),
                        None => idx.extend(0..r.length),
                    }
                    if !picked.append_from(all, r.values.clone()) {
                        return Err(Error::invalid(format!("vector {i} is out of range")));
                    }
                    idx_off.push(
                        i32::try_from(idx.len()).map_err(|_| Error::invalid("too many indices"))?,
                    );
                    val_off.push(
                        i32::try_from(picked.len())
                            .map_err(|_| Error::invalid("too many values"))?,
                    );
                }
                let (Some(fi), Some(fv)) = (fields.first(), fields.get(1)) else {
                    return Err(Error::invalid("sparse struct fields"));
                };
                let fi_item = child(fi.data_type())?;
                let fv_item = child(fv.data_type())?;
                let indices = ListArray::try_new(
                    fi_item,
                    OffsetBuffer::new(idx_off.into()),
                    Arc::new(UInt32Array::from(idx)),
                    None,
                )?;
                let vals = items(&picked, fv_item.data_type(), kv, first_row)?;
                let values =
                    ListArray::try_new(fv_item, OffsetBuffer::new(val_off.into()), vals, None)?;
                Ok(Arc::new(StructArray::try_new(
                    fields.clone(),
                    vec![Arc::new(indices), Arc::new(values)],
                    None::<NullBuffer>,
                )?))
            }
            _ => Err(Error::invalid("a vector column decoded as scalars")),
        }
    }
}
