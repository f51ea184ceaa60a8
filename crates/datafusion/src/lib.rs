//! SQL over every file [`dataformats`] reads, through [DataFusion](datafusion).
//!
//! [`table`] turns a path or URL into a DataFusion [`TableProvider`]:
//!
//! - A format with a typed view (IDV, Bloscpack, BLZ/bcolz, CBF, MLDF,
//!   TBL v2, FFCV) becomes a [`DatasetTable`]: the file's Arrow schema; a
//!   scan decodes only the projected columns, reads only the records a
//!   `LIMIT` or a row-number filter leaves, and runs in partitions cut where
//!   the file's blocks or chunks start (see [`Dataset::splits`]), one per
//!   target partition of the session, each announcing its next batch to a
//!   remote source while the current one decodes.
//! - A stream input (CTF, a tar of samples, `.npy`, Parquet, Arrow IPC,
//!   CSV, JSON lines) becomes a [`StreamTable`]: read once per scan, in
//!   order, in one partition.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! let ctx = datafusion::prelude::SessionContext::new();
//! dataformats_datafusion::register(&ctx, "train", "train.idv".as_ref())?;
//! let df = ctx.sql("SELECT Label, COUNT(*) FROM train GROUP BY Label").await?;
//! df.show().await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`query::QueryResults`] runs a query without async code and gives its
//! result as a facade [`BatchStream`](dataformats::BatchStream), which
//! every writer of [`dataformats::convert`] and [`dataformats::export`]
//! takes.
//!
//! The crate is separate from the facade so that only programs that want
//! SQL build DataFusion; its arrow-rs version is the workspace's.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use dataformats::{Dataset, DatasetError, Format};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::SessionContext;

pub use datafusion;

pub mod query;

/// A facade error as a DataFusion error (the facade error is its source).
fn external(e: DatasetError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The table for `path` (a file, a BLZ/bcolz directory or a URL): a
/// [`DatasetTable`] for formats with a typed view, a [`StreamTable`] for
/// stream inputs (CTF, tar, `.npy`, Parquet, Arrow IPC, CSV, JSON lines).
pub fn table(path: &Path) -> Result<Arc<dyn TableProvider>, DatasetError> {
    if has_view(path)? {
        Ok(Arc::new(DatasetTable::open(path)?))
    } else {
        Ok(Arc::new(StreamTable::open(path)?))
    }
}

/// Whether `path` is of a format with a typed view (read as a
/// [`DatasetTable`]) rather than a stream input.
fn has_view(path: &Path) -> Result<bool, DatasetError> {
    let format = dataformats::detect(path).map_err(|e| DatasetError::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    Ok(format.is_some_and(|f| f != Format::Ctf))
}

/// [`table`], with a record number column `row_number` (see
/// [`DatasetTable::with_row_number`]) when given; stream inputs have no
/// record numbers, so asking for one is refused for them.
pub fn table_with_row_number(
    path: &Path,
    row_number: Option<&str>,
) -> Result<Arc<dyn TableProvider>, DataFusionError> {
    let Some(name) = row_number else {
        return table(path).map_err(external);
    };
    if has_view(path).map_err(external)? {
        Ok(Arc::new(
            DatasetTable::open(path)
                .map_err(external)?
                .with_row_number(name)?,
        ))
    } else {
        Err(DataFusionError::Plan(format!(
            "{}: a record number column needs a format with a typed view (not a stream \
             input such as CSV, Parquet, CTF or a tar)",
            path.display()
        )))
    }
}

/// Registers [`table`]`(path)` in `ctx` as `name`.
pub fn register(ctx: &SessionContext, name: &str, path: &Path) -> Result<(), DataFusionError> {
    let t = table(path).map_err(external)?;
    ctx.register_table(name, t)?;
    Ok(())
}

/// A table over one dataset of any format with a typed view.
///
/// Its schema is the dataset's [`schema`](Dataset::schema), plus a record
/// number column when [`with_row_number`](DatasetTable::with_row_number)
/// asks for one: filters on that column (`=`, `<`, `<=`, `>`, `>=`,
/// `BETWEEN` with constants) narrow the records read, and the rest of the
/// filter is still applied by DataFusion.
pub struct DatasetTable {
    ds: Arc<dyn Dataset>,
    schema: SchemaRef,
    /// The records the table holds (all unless narrowed).
    rows: Range<u64>,
    /// The record number column's name (the schema's last field).
    row_number: Option<String>,
}

impl fmt::Debug for DatasetTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatasetTable")
            .field("format", &self.ds.format())
            .field("rows", &self.rows)
            .field("row_number", &self.row_number)
            .finish_non_exhaustive()
    }
}

impl DatasetTable {
    /// A table over `ds`, every record.
    pub fn new(ds: Arc<dyn Dataset>) -> Self {
        let rows = 0..ds.len();
        DatasetTable {
            schema: ds.schema(),
            ds,
            rows,
            row_number: None,
        }
    }

    /// Opens `path` (a file, a directory or a URL) with [`dataformats::open`].
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        Ok(DatasetTable::new(Arc::from(dataformats::open(path)?)))
    }

    /// Only records `rows` (clamped to the records there are).
    pub fn with_rows(mut self, rows: Range<u64>) -> Self {
        let end = rows.end.min(self.ds.len());
        self.rows = rows.start.min(end)..end;
        self
    }

    /// Adds a `UInt64` column `name` holding each record's number in the
    /// file (from 0), whose range filters are pushed into the scan.
    /// Refused when the dataset has a column of that name.
    pub fn with_row_number(mut self, name: &str) -> Result<Self, DataFusionError> {
        if self.row_number.is_some() || self.ds.schema().field_with_name(name).is_ok() {
            return Err(DataFusionError::Plan(format!(
                "the table already has a column {name:?}; choose another name for the record number"
            )));
        }
        let mut fields: Vec<Arc<Field>> = self.ds.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(name, DataType::UInt64, false)));
        self.schema = Arc::new(Schema::new_with_metadata(
            fields,
            self.ds.schema().metadata().clone(),
        ));
        self.row_number = Some(name.to_string());
        Ok(self)
    }

    /// The dataset read.
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.ds
    }

    /// The records of `rows` in at most about `parts` consecutive groups,
    /// cut only where the file's stored units start.
    fn groups(&self, rows: &Range<u64>, parts: usize) -> Vec<Range<u64>> {
        let want = rows.end.saturating_sub(rows.start);
        if want == 0 {
            return Vec::new();
        }
        let parts = parts.max(1);
        // Enough of the file's splits that about `parts` fall inside `rows`.
        let len = self.ds.len().max(1);
        let asked =
            (parts as u128 * u128::from(len) / u128::from(want)).clamp(parts as u128, 65_536);
        let pieces = self
            .ds
            .splits(usize::try_from(asked).unwrap_or(65_536))
            .into_iter()
            .filter_map(|s| {
                let (a, z) = (s.start.max(rows.start), s.end.min(rows.end));
                (a < z).then_some(a..z)
            });
        let target = want.div_ceil(parts as u64);
        let mut out = Vec::new();
        let mut cur: Option<Range<u64>> = None;
        for p in pieces {
            let g = match cur.take() {
                None => p,
                Some(c) => c.start..p.end,
            };
            if g.end - g.start >= target {
                out.push(g);
            } else {
                cur = Some(g);
            }
        }
        out.extend(cur);
        out
    }
}

/// The records a filter on the record number column `name` leaves, when it
/// is one this table understands (`None`: any other filter).
fn row_bounds(e: &Expr, name: &str) -> Option<Range<u64>> {
    fn is_col(e: &Expr, name: &str) -> bool {
        match e {
            Expr::Column(c) => c.name == name,
            Expr::Cast(c) => is_col(&c.expr, name),
            Expr::TryCast(c) => is_col(&c.expr, name),
            _ => false,
        }
    }
    fn int(e: &Expr) -> Option<i128> {
        let Expr::Literal(v, _) = e else { return None };
        Some(match v {
            ScalarValue::Int8(Some(x)) => i128::from(*x),
            ScalarValue::Int16(Some(x)) => i128::from(*x),
            ScalarValue::Int32(Some(x)) => i128::from(*x),
            ScalarValue::Int64(Some(x)) => i128::from(*x),
            ScalarValue::UInt8(Some(x)) => i128::from(*x),
            ScalarValue::UInt16(Some(x)) => i128::from(*x),
            ScalarValue::UInt32(Some(x)) => i128::from(*x),
            ScalarValue::UInt64(Some(x)) => i128::from(*x),
            _ => return None,
        })
    }
    // `[lo, hi)` in i128, then clamped to u64.
    let (lo, hi): (i128, i128) = match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, v) = if is_col(left, name) {
                (*op, int(right)?)
            } else if is_col(right, name) {
                (op.swap()?, int(left)?)
            } else {
                return None;
            };
            match op {
                Operator::Eq => (v, v + 1),
                Operator::Lt => (i128::MIN, v),
                Operator::LtEq => (i128::MIN, v + 1),
                Operator::Gt => (v + 1, i128::MAX),
                Operator::GtEq => (v, i128::MAX),
                _ => return None,
            }
        }
        Expr::Between(b) if !b.negated && is_col(&b.expr, name) => {
            (int(&b.low)?, int(&b.high)?.saturating_add(1))
        }
        _ => return None,
    };
    let clamp = |x: i128| u64::try_from(x.max(0)).unwrap_or(u64::MAX);
    let (a, z) = (clamp(lo), clamp(hi));
    Some(a..z.max(a))
}

#[async_trait]
impl TableProvider for DatasetTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match &self.row_number {
                Some(n) if row_bounds(f, n).is_some() => TableProviderFilterPushDown::Inexact,
                _ => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let mut rows = self.rows.clone();
        if let Some(name) = &self.row_number {
            for f in filters {
                if let Some(b) = row_bounds(f, name) {
                    rows = rows.start.max(b.start)..rows.end.min(b.end);
                    rows.end = rows.end.max(rows.start);
                }
            }
        }
        // DataFusion passes a limit only when no filter is left for it to
        // apply after the scan, so the first `limit` records are the answer.
        if let Some(l) = limit {
            rows.end = rows.end.min(rows.start.saturating_add(l as u64));
        }
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let projection = projection.cloned().unwrap_or(all);
        let schema = Arc::new(self.schema.project(&projection)?);
        let file_columns = self.ds.schema().fields().len();
        let mut columns = Vec::new();
        let layout: Vec<Slot> = projection
            .iter()
            .map(|&i| {
                if i < file_columns {
                    columns.push(i);
                    Slot::File(columns.len() - 1)
                } else {
                    Slot::Row
                }
            })
            .collect();
        let layout = Arc::new(layout);
        let columns = Arc::new(columns);
        let mut partitions: Vec<Arc<dyn PartitionStream>> = self
            .groups(&rows, state.config().target_partitions())
            .into_iter()
            .map(|rows| {
                Arc::new(Part {
                    ds: self.ds.clone(),
                    columns: columns.clone(),
                    layout: layout.clone(),
                    schema: schema.clone(),
                    rows,
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        if partitions.is_empty() {
            partitions.push(Arc::new(Part {
                ds: self.ds.clone(),
                columns,
                layout,
                schema: schema.clone(),
                rows: 0..0,
            }));
        }
        let exec = StreamingTableExec::try_new(
            schema,
            partitions,
            None,
            Vec::<LexOrdering>::new(),
            false,
            limit,
        )?;
        Ok(Arc::new(exec))
    }
}

/// Where an output column comes from.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// The `k`th column read from the file.
    File(usize),
    /// The record number.
    Row,
}

/// One partition of a [`DatasetTable`] scan: records `rows`.
struct Part {
    ds: Arc<dyn Dataset>,
    columns: Arc<Vec<usize>>,
    layout: Arc<Vec<Slot>>,
    schema: SchemaRef,
    rows: Range<u64>,
}

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Part")
            .field("format", &self.ds.format())
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl Part {
    /// Records `rows` as one batch of the partition's schema.
    fn read(&self, rows: Range<u64>) -> Result<RecordBatch, DataFusionError> {
        let read = self
            .ds
            .read_arrays(&self.columns, rows.clone())
            .map_err(external)?;
        let arrays: Vec<ArrayRef> = self
            .layout
            .iter()
            .map(|s| match *s {
                Slot::File(k) => read.get(k).cloned().ok_or_else(|| {
                    DataFusionError::Internal(format!("column {k} missing from the read"))
                }),
                Slot::Row => Ok(Arc::new(UInt64Array::from_iter_values(rows.clone())) as ArrayRef),
            })
            .collect::<Result<_, _>>()?;
        let n = usize::try_from(rows.end - rows.start).unwrap_or(usize::MAX);
        let opts = RecordBatchOptions::new().with_row_count(Some(n));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &opts,
        )?)
    }
}

impl PartitionStream for Part {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let batch = ctx.session_config().batch_size().max(1) as u64;
        let me = Part {
            ds: self.ds.clone(),
            columns: self.columns.clone(),
            layout: self.layout.clone(),
            schema: self.schema.clone(),
            rows: self.rows.clone(),
        };
        let end = self.rows.end;
        let mut next = self.rows.start;
        let mut failed = false;
        let mut ahead = dataformats::dataset::LookAhead::default();
        let batches = std::iter::from_fn(move || {
            if failed || next >= end {
                return None;
            }
            let stop = end.min(next.saturating_add(batch));
            // The batches after this one start on their way while it decodes.
            ahead.announce(me.ds.as_ref(), &me.columns, next..stop, end, batch);
            let r = me.read(next..stop);
            failed = r.is_err();
            next = stop;
            Some(r)
        });
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(batches),
        ))
    }
}

/// A table over a stream input (CTF, tar, `.npy`, Parquet, Arrow IPC, CSV,
/// JSON lines): every scan reads the input once, in order, in one
/// partition, on a thread of its own.
#[derive(Debug)]
pub struct StreamTable {
    path: PathBuf,
    schema: SchemaRef,
}

impl StreamTable {
    /// Opens `path` once to learn its schema.
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        let input = dataformats::convert::open_input(path, &Default::default())?;
        Ok(StreamTable {
            path: path.to_path_buf(),
            schema: input.stream.schema(),
        })
    }
}

#[async_trait]
impl TableProvider for StreamTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let projection = projection.cloned().unwrap_or(all);
        let part = StreamPart {
            path: self.path.clone(),
            schema: Arc::new(self.schema.project(&projection)?),
            file_schema: self.schema.clone(),
            projection,
        };
        let schema = part.schema.clone();
        let exec = StreamingTableExec::try_new(
            schema,
            vec![Arc::new(part) as Arc<dyn PartitionStream>],
            None,
            Vec::<LexOrdering>::new(),
            false,
            limit,
        )?;
        Ok(Arc::new(exec))
    }
}

/// The one partition of a [`StreamTable`] scan.
#[derive(Debug)]
struct StreamPart {
    path: PathBuf,
    schema: SchemaRef,
    file_schema: SchemaRef,
    projection: Vec<usize>,
}

impl PartitionStream for StreamPart {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch, DataFusionError>>(2);
        let (path, projection, file_schema) = (
            self.path.clone(),
            self.projection.clone(),
            self.file_schema.clone(),
        );
        // The reader is not Send: it lives on its thread, which stops when
        // the stream is dropped (the send fails) or the input ends.
        let spawned = std::thread::Builder::new()
            .name("dataformats-sql-input".into())
            .spawn(move || {
                let mut input = match dataformats::convert::open_input(&path, &Default::default()) {
                    Ok(i) => i,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(external(e)));
                        return;
                    }
                };
                if input.stream.schema() != file_schema {
                    let _ = tx.blocking_send(Err(DataFusionError::Execution(format!(
                        "{} changed since it was registered: its schema differs",
                        path.display()
                    ))));
                    return;
                }
                while let Some(b) = input.stream.next_batch() {
                    let b = b
                        .map_err(external)
                        .and_then(|b| Ok(b.project(&projection)?));
                    let stop = b.is_err();
                    if tx.blocking_send(b).is_err() || stop {
                        return;
                    }
                }
            });
        let rx = match spawned {
            Ok(_) => Some(rx),
            Err(e) => {
                let err = DataFusionError::External(Box::new(e));
                return Box::pin(RecordBatchStreamAdapter::new(
                    self.schema.clone(),
                    futures::stream::iter([Err(err)]),
                ));
            }
        };
        let stream = futures::stream::unfold(rx, |rx| async move {
            let mut rx = rx?;
            let b = rx.recv().await?;
            Some((b, Some(rx)))
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    #[test]
    fn row_filters_become_record_ranges() {
        let r = |e: Expr| row_bounds(&e, "_row");
        assert_eq!(r(col("_row").eq(lit(5u64))), Some(5..6));
        assert_eq!(r(col("_row").lt(lit(5i64))), Some(0..5));
        assert_eq!(r(col("_row").lt_eq(lit(5i32))), Some(0..6));
        assert_eq!(r(col("_row").gt(lit(5u64))), Some(6..u64::MAX));
        assert_eq!(r(col("_row").gt_eq(lit(5u64))), Some(5..u64::MAX));
        assert_eq!(r(lit(5u64).lt(col("_row"))), Some(6..u64::MAX));
        assert_eq!(r(col("_row").between(lit(3u64), lit(7u64))), Some(3..8));
        // Negative bounds leave nothing below zero.
        assert_eq!(r(col("_row").lt(lit(-3i64))), Some(0..0));
        assert_eq!(r(col("_row").gt_eq(lit(-3i64))), Some(0..u64::MAX));
        // Anything else is not a record range.
        assert_eq!(r(col("_row").not_eq(lit(5u64))), None);
        assert_eq!(r(col("other").eq(lit(5u64))), None);
        assert_eq!(r(col("_row").eq(lit(1.5f64))), None);
        assert_eq!(r(col("_row").not_between(lit(3u64), lit(7u64))), None);
    }
}
