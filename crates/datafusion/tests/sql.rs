//! SQL over the shared vectors: a table gives exactly the typed view's
//! records, and projection, `LIMIT` and record number filters reach the
//! reads (a logging dataset records what was read).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, RecordBatch, UInt64Array};
use dataformats::{Dataset, DatasetError, Format};
use dataformats_datafusion::DatasetTable;
use dataformats_datafusion::datafusion::prelude::{SessionConfig, SessionContext};

/// A dataset that logs every `read_arrays` call.
struct Logged {
    inner: Box<dyn Dataset>,
    reads: Mutex<Vec<(Vec<usize>, Range<u64>)>>,
}

impl Dataset for Logged {
    fn format(&self) -> Format {
        self.inner.format()
    }
    fn version(&self) -> String {
        self.inner.version()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn validate_with(
        &self,
        progress: &mut dyn dataformats::core::Progress,
    ) -> Result<(), DatasetError> {
        self.inner.validate_with(progress)
    }
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.inner.schema()
    }
    fn splits(&self, parts: usize) -> Vec<Range<u64>> {
        self.inner.splits(parts)
    }
    fn read_arrays(
        &self,
        columns: &[usize],
        rows: Range<u64>,
    ) -> Result<Vec<arrow_array::ArrayRef>, DatasetError> {
        self.reads
            .lock()
            .unwrap()
            .push((columns.to_vec(), rows.clone()));
        self.inner.read_arrays(columns, rows)
    }
}

fn logged(path: &std::path::Path) -> Arc<Logged> {
    Arc::new(Logged {
        inner: dataformats::open(path).unwrap(),
        reads: Mutex::new(Vec::new()),
    })
}

fn ctx(partitions: usize) -> SessionContext {
    SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(partitions)
            .with_batch_size(100),
    )
}

async fn query(ctx: &SessionContext, sql: &str) -> RecordBatch {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

fn vector(format: &str, name: &str) -> std::path::PathBuf {
    dataformats::core::testing::all_vectors()
        .into_iter()
        .find(|(f, p, _)| *f == format && p.file_name().is_some_and(|n| n == name))
        .map(|(_, p, _)| p)
        .unwrap_or_else(|| panic!("vector {format}/{name} is missing"))
}

#[test]
fn every_valid_vector_reads_back_whole_and_counts() {
    let rt = rt();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d: Arc<dyn Dataset> = Arc::from(dataformats::open(&p).unwrap());
        let whole = d.read_batch(None, 0..d.len()).unwrap();
        // Duplicate column names (an IDV edge case) are not a SQL table.
        let names: std::collections::HashSet<_> = whole
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if names.len() != whole.num_columns() {
            continue;
        }
        for partitions in [1, 3] {
            let ctx = ctx(partitions);
            ctx.register_table("t", Arc::new(DatasetTable::new(d.clone())))
                .unwrap();
            if partitions == 1 {
                // One partition: the records in file order.
                let all = rt.block_on(query(&ctx, "SELECT * FROM t"));
                assert_eq!(all, whole, "{format} {}", p.display());
            }
            // Partitions end in any order: sorted by record number, the
            // same records.
            let t = DatasetTable::new(d.clone())
                .with_row_number("__record")
                .unwrap();
            ctx.register_table("n", Arc::new(t)).unwrap();
            let all = rt.block_on(query(&ctx, "SELECT * FROM n ORDER BY __record"));
            let last = all.num_columns() - 1;
            let numbers = all.column(last).as_any().downcast_ref::<UInt64Array>();
            assert_eq!(
                numbers.unwrap().values().to_vec(),
                (0..d.len()).collect::<Vec<_>>(),
                "{}",
                p.display()
            );
            let all = all.project(&(0..last).collect::<Vec<_>>()).unwrap();
            assert_eq!(
                all,
                whole,
                "{format} {} in {partitions} part(s)",
                p.display()
            );
            let n = rt.block_on(query(&ctx, "SELECT COUNT(*) AS n FROM t"));
            let n = n
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>();
            assert_eq!(n.unwrap().value(0) as u64, d.len(), "{}", p.display());
        }
        seen += 1;
    }
    assert!(seen >= 30, "only {seen} vectors");
}

#[test]
fn projection_and_limit_reach_the_reads() {
    let rt = rt();
    let p = vector("idv", "mlnet15_large_default.idv");
    let d = logged(&p);
    let ctx = ctx(2);
    ctx.register_table("t", Arc::new(DatasetTable::new(d.clone())))
        .unwrap();
    let schema = d.schema();
    let name = schema.field(1).name();
    let got = rt.block_on(query(&ctx, &format!("SELECT \"{name}\" FROM t LIMIT 250")));
    assert_eq!(got.num_rows(), 250);
    let reads = d.reads.lock().unwrap().clone();
    assert!(!reads.is_empty());
    for (cols, rows) in &reads {
        assert_eq!(cols, &[1], "only the projected column is decoded");
        assert!(rows.end <= 250, "a read past the limit: {rows:?}");
    }
    let whole = d
        .inner
        .read_batch(Some(std::slice::from_ref(name)), 0..250)
        .unwrap();
    assert_eq!(got.column(0), whole.column(0));
}

#[test]
fn record_number_filters_read_only_those_records() {
    let rt = rt();
    let p = vector("idv", "mlnet15_large_default.idv");
    let d = logged(&p);
    let ctx = ctx(2);
    let t = DatasetTable::new(d.clone())
        .with_row_number("_row")
        .unwrap();
    ctx.register_table("t", Arc::new(t)).unwrap();
    let got = rt.block_on(query(
        &ctx,
        "SELECT * FROM t WHERE _row >= 9000 AND _row < 9100 ORDER BY _row",
    ));
    assert_eq!(got.num_rows(), 100);
    let whole = d.inner.read_batch(None, 9000..9100).unwrap();
    // The record number is the last column.
    let last = whole.num_columns();
    let rows = got.column(last).as_any().downcast_ref::<UInt64Array>();
    assert_eq!(
        rows.unwrap().values().to_vec(),
        (9000..9100).collect::<Vec<u64>>()
    );
    for j in 0..last {
        assert_eq!(got.column(j), whole.column(j), "column {j}");
    }
    for (_, rows) in d.reads.lock().unwrap().iter() {
        assert!(
            rows.start >= 9000 && rows.end <= 9100,
            "a read outside the filter: {rows:?}"
        );
    }
    // BETWEEN and a filter on another column too: the other filter still applies.
    let got = rt.block_on(query(
        &ctx,
        "SELECT COUNT(*) FROM t WHERE _row BETWEEN 10 AND 19 AND _row <> 15",
    ));
    let n = got
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>();
    assert_eq!(n.unwrap().value(0), 9);
    // A name the file has already is refused.
    let first = d.schema().field(0).name().clone();
    let e = DatasetTable::new(d.clone())
        .with_row_number(&first)
        .unwrap_err();
    assert!(e.to_string().contains(&first), "{e}");
}

#[test]
fn partitions_follow_the_files_blocks() {
    let rt = rt();
    // 20,000 records in blocks of 8,192: three partitions cut at blocks.
    let p = vector("idv", "mlnet15_large_default.idv");
    let d = logged(&p);
    let ctx = ctx(3);
    ctx.register_table("t", Arc::new(DatasetTable::new(d.clone())))
        .unwrap();
    let got = rt.block_on(query(&ctx, "SELECT COUNT(*) FROM t"));
    let n = got
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>();
    assert_eq!(n.unwrap().value(0), 20_000);
    for (_, rows) in d.reads.lock().unwrap().iter() {
        // No read crosses the block starts the partitions begin at.
        for cut in [8_192u64, 16_384] {
            assert!(
                !(rows.start < cut && rows.end > cut),
                "{rows:?} crosses {cut}"
            );
        }
    }
}

#[test]
fn stream_inputs_and_errors() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    // A CSV made from an IDV vector by the facade, queried as a stream table.
    let p = vector("idv", "mlnet15_large_default.idv");
    let csv = dir.path().join("t.csv");
    dataformats::convert::convert(&p, &csv, &Default::default()).unwrap();
    let ctx = ctx(2);
    dataformats_datafusion::register(&ctx, "c", &csv).unwrap();
    let got = rt.block_on(query(&ctx, "SELECT COUNT(*) FROM c"));
    let n = got
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>();
    assert_eq!(n.unwrap().value(0), 20_000);
    // A stream input has no record numbers.
    let e = dataformats_datafusion::table_with_row_number(&csv, Some("_row")).unwrap_err();
    assert!(e.to_string().contains("typed view"), "{e}");
    // A damaged file is refused when registered, naming what is wrong.
    let bad = dir.path().join("bad.idv");
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(100);
    std::fs::write(&bad, &bytes).unwrap();
    let e = dataformats_datafusion::register(&ctx, "b", &bad).unwrap_err();
    assert!(!e.to_string().is_empty());
    assert!(
        matches!(
            e,
            dataformats_datafusion::datafusion::error::DataFusionError::External(_)
        ),
        "{e:?}"
    );
    // A missing file too.
    let e = dataformats_datafusion::register(&ctx, "m", &dir.path().join("no.idv")).unwrap_err();
    assert!(e.to_string().contains("no.idv"), "{e}");
}
