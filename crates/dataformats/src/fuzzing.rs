//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

/// Arbitrary bytes through [`crate::open_bytes_with`] under
/// [`Limits::fuzzing`](crate::core::Limits::fuzzing) (64 MiB, below the
/// fuzzer's 256 MiB allocation limit): the typed schema, every batch of
/// every column (and each column alone) of the first records, their JSON
/// lines, each whole column read on two threads, then the convenience
/// view's records one by one and in batches, validation and the summary.
/// Nothing may panic or allocate without bound.
pub fn open_bytes(data: &[u8]) {
    let opts = crate::OpenOptions::with_limits(crate::core::Limits::fuzzing());
    let Ok(d) = crate::open_bytes_with(data.to_vec(), &opts) else {
        return;
    };
    let schema = d.schema();
    let read = crate::ReadOptions {
        columns: None,
        rows: Some(0..4096),
        batch_size: 512,
    };
    if let Ok(mut r) = d.reader(&read) {
        while let Some(b) = r.next_batch() {
            let Ok(b) = b else { break };
            assert_eq!(b.schema(), schema, "every batch has the file's schema");
            #[cfg(feature = "export")]
            {
                let mut sink = std::io::sink();
                let _ = crate::export::write_json_lines(&b, &mut sink);
            }
        }
    }
    for f in schema.fields() {
        let _ = d.read_batch(Some(std::slice::from_ref(f.name())), 0..64);
    }
    for j in 0..schema.fields().len() {
        // On two threads: in pieces where the values are decoded.
        let _ = d.read_column(j, 2);
    }
    let _ = d.columns();
    let _ = d.summary_json();
    let n = d.len().min(256);
    if let Ok(rows) = d.records(0..n) {
        for r in rows {
            for v in r {
                let _ = v.to_json();
            }
        }
    }
    for i in 0..n.min(16) {
        let _ = d.record(i);
    }
    for r in d.iter().take(64) {
        let _ = r;
    }
    let _ = d.validate();
}

/// Arbitrary bytes opened as in [`open_bytes`], then their first records
/// (at most 256) converted with `lossy` into every target this build
/// writes, each written file opened and read again. Nothing may panic or
/// allocate without bound; a refused conversion is fine. Files go to a
/// folder of this process under the system's temporary directory.
#[cfg(all(
    feature = "export",
    feature = "mldf",
    feature = "idv",
    feature = "cntk",
    feature = "tbl2",
    feature = "bloscpack"
))]
pub fn convert_bytes(data: &[u8]) {
    use crate::convert::{ConvertOptions, Report, Target};
    let opts = crate::OpenOptions::with_limits(crate::core::Limits::fuzzing());
    let Ok(d) = crate::open_bytes_with(data.to_vec(), &opts) else {
        return;
    };
    let schema = d.schema();
    let n = d.len().min(256);
    let Ok(batch) = d.read_batch(None, 0..n) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("df-fuzz-convert-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let copts = ConvertOptions {
        lossy: true,
        open: opts,
        ..Default::default()
    };
    for t in [
        Target::Mldf,
        Target::Idv,
        Target::Cntk,
        Target::Tbl2,
        Target::Bloscpack,
        Target::Blz,
        Target::Parquet,
        Target::ArrowStream,
        Target::JsonLines,
    ] {
        let out = dir.join(format!("out.{}", t.extension()));
        if out.is_dir() {
            let _ = std::fs::remove_dir_all(&out);
        } else {
            let _ = std::fs::remove_file(&out);
        }
        let mut stream = crate::BatchIter::from_batches(schema.clone(), vec![batch.clone()]);
        let mut report = Report::default();
        if crate::convert::write(t, &mut stream, &out, &copts, &mut report, &mut |_| {}).is_err() {
            continue;
        }
        // What was written reads again (tables through the import).
        if let Ok(mut back) = crate::convert::open_input(&out, &copts) {
            while let Some(b) = back.stream.next_batch() {
                if b.is_err() {
                    break;
                }
            }
        }
    }
}

/// Arbitrary bytes as a table file the conversions import: the first byte
/// picks the kind (Parquet, Arrow IPC file, Arrow IPC stream, CSV, JSON
/// lines), the rest is the file. Opened under
/// [`Limits::fuzzing`](crate::core::Limits::fuzzing) (a Parquet file in
/// runs of 512 bytes of values, so that small files make several) and
/// read to its end or its first error one batch after the other, then
/// again on three threads (runs side by side where the kind reads so).
/// Nothing may panic or allocate without bound, and reads that both end
/// without an error give the same records: on three threads as on one,
/// and a Parquet file's runs that follow its offset index as those that
/// do not. The file goes to a folder of this process under the system's
/// temporary directory.
#[cfg(feature = "export")]
pub fn import_bytes(data: &[u8]) {
    use crate::convert::import::{Table, open_in_runs};
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let kinds = [
        Table::Parquet,
        Table::ArrowFile,
        Table::ArrowStream,
        Table::Csv,
        Table::JsonLines,
    ];
    let Some(&kind) = kinds.get(usize::from(pick) % kinds.len()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("df-fuzz-import-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("in.{}", kind.name()));
    if std::fs::write(&path, file).is_err() {
        return;
    }
    let opts = crate::convert::ConvertOptions {
        open: crate::OpenOptions::with_limits(crate::core::Limits::fuzzing()),
        batch_size: 16,
        ..Default::default()
    };
    // The records as JSON lines (nulls and NaNs compare as written), or
    // `None` when the read ended in an error.
    let lines = |index: bool, threads: usize| -> Option<Vec<u8>> {
        let mut input = open_in_runs(&path, kind, &opts, 512, index).ok()?;
        let mut text = Vec::new();
        let mut ok = true;
        let mut take = |b: Result<arrow_array::RecordBatch, crate::dataset::Error>| {
            ok = b.is_ok_and(|b| crate::export::write_json_lines(&b, &mut text).is_ok());
            ok
        };
        if threads > 1 {
            let active = crate::core::parallel::Active::new(threads);
            input.stream.send_all(threads, &active, &mut take);
        } else {
            while let Some(b) = input.stream.next_batch() {
                if !take(b) {
                    break;
                }
            }
        }
        ok.then_some(text)
    };
    let one = lines(true, 1);
    let many = lines(true, 3);
    if let (Some(a), Some(b)) = (&one, &many) {
        assert!(a == b, "three threads read other records than one");
    }
    if kind == Table::Parquet
        && let (Some(a), Some(b)) = (&one, lines(false, 1))
    {
        assert!(
            *a == b,
            "the runs following the offset index read other records"
        );
    }
}
