//! A query run without async code: its result as a facade [`BatchStream`],
//! so any writer of [`dataformats::convert`] or [`dataformats::export`]
//! takes it batch by batch, in memory that does not grow with the result.
//!
//! ```no_run
//! use dataformats::BatchStream;
//! use dataformats_datafusion::query::QueryResults;
//!
//! let ctx = datafusion::prelude::SessionContext::new();
//! dataformats_datafusion::register(&ctx, "train", "train.idv".as_ref())?;
//! let mut rows = QueryResults::run(&ctx, "SELECT Label FROM train WHERE Label > 0")?;
//! while let Some(batch) = rows.next_batch() {
//!     println!("{} rows", batch?.num_rows());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use dataformats::{BatchStream, DatasetError};
use datafusion::common::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

/// The facade error behind a DataFusion error, when one caused it (a table
/// of this crate that could not be read).
pub fn dataset_error(e: &DataFusionError) -> Option<&DatasetError> {
    match e.find_root() {
        DataFusionError::External(x) => x.downcast_ref::<DatasetError>(),
        _ => None,
    }
}

/// The result of a query, batch by batch; the query runs on a runtime of
/// its own, on every core.
pub struct QueryResults {
    rt: tokio::runtime::Runtime,
    stream: SendableRecordBatchStream,
    /// The first error, kept in DataFusion's words (see [`QueryResults::take_error`]).
    failed: Option<DataFusionError>,
}

impl std::fmt::Debug for QueryResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryResults")
            .field("schema", &self.stream.schema())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl QueryResults {
    /// Plans `sql` in `ctx` and starts it. Planning errors (an unknown
    /// table or column, bad SQL) and a runtime that cannot start fail here;
    /// errors while the result is read come from [`BatchStream::next_batch`].
    pub fn run(ctx: &SessionContext, sql: &str) -> Result<Self, DataFusionError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| DataFusionError::IoError(e).context("starting the query runtime"))?;
        let stream = rt.block_on(async {
            let df = ctx.sql(sql).await?;
            df.execute_stream().await
        })?;
        Ok(QueryResults {
            rt,
            stream,
            failed: None,
        })
    }

    /// The error that ended the stream, as DataFusion reported it (the
    /// stream gives it as a facade `Data` error carrying only its message).
    pub fn take_error(&mut self) -> Option<DataFusionError> {
        self.failed.take()
    }
}

impl BatchStream for QueryResults {
    fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, DatasetError>> {
        if self.failed.is_some() {
            return None;
        }
        match self.rt.block_on(self.stream.next())? {
            Ok(b) => Some(Ok(b)),
            Err(e) => {
                let message = e.to_string();
                self.failed = Some(e);
                Some(Err(DatasetError::Data {
                    format: None,
                    message,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;

    fn ctx() -> SessionContext {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(0..100))],
        )
        .unwrap();
        let ctx = SessionContext::new();
        let t = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        ctx
    }

    /// The result comes batch by batch with the query's schema.
    #[test]
    fn results_stream_as_batches() {
        let ctx = ctx();
        let mut r = QueryResults::run(&ctx, "SELECT x * 2 AS y FROM t WHERE x >= 90").unwrap();
        assert_eq!(r.schema().field(0).name(), "y");
        let mut got = Vec::new();
        while let Some(b) = r.next_batch() {
            let b = b.unwrap();
            let y = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            got.extend(y.values().iter().copied());
        }
        got.sort_unstable();
        assert_eq!(got, (180..200).step_by(2).collect::<Vec<i64>>());
        assert!(r.take_error().is_none());
    }

    /// Planning errors fail at once; an error while running ends the
    /// stream and is kept in DataFusion's words.
    #[test]
    fn errors_are_reported() {
        let ctx = ctx();
        let e = QueryResults::run(&ctx, "SELECT nope FROM t").unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        assert!(dataset_error(&e).is_none());
        let mut r = QueryResults::run(&ctx, "SELECT CAST('a' || x AS INT) FROM t").unwrap();
        let mut failed = false;
        while let Some(b) = r.next_batch() {
            if let Err(e) = b {
                assert!(matches!(e, DatasetError::Data { .. }));
                failed = true;
            }
        }
        assert!(failed);
        assert!(r.next_batch().is_none(), "the stream ends at its error");
        assert!(r.take_error().is_some());
    }

    /// A facade error inside a DataFusion error is found again.
    #[test]
    fn the_facade_error_is_found() {
        let d = DatasetError::Unsupported {
            format: None,
            message: "this".into(),
        };
        let e = DataFusionError::External(Box::new(d)).context("reading");
        assert!(matches!(
            dataset_error(&e),
            Some(DatasetError::Unsupported { .. })
        ));
    }
}
