//! The typed Arrow view over every valid shared vector: one fixed schema per
//! file, batches of any size that concatenate to the whole file, and
//! projection that equals the projected column of the whole batch.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use arrow_array::RecordBatch;
use dataformats::ReadOptions;

fn whole(d: &dyn dataformats::Dataset) -> RecordBatch {
    d.read_batch(None, 0..d.len()).unwrap()
}

#[test]
fn batches_of_every_size_equal_the_whole_file() {
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        let schema = d.schema();
        assert_eq!(schema, d.schema(), "{}: schema is fixed", p.display());
        let all = whole(d.as_ref());
        assert_eq!(all.num_rows() as u64, d.len(), "{}", p.display());
        assert_eq!(all.schema(), schema, "{}", p.display());
        for size in [1usize, 7, 1024] {
            // Batches of one and seven records over large files are slow in
            // a debug build: those read the first records only (still many
            // blocks and chunks) and compare them with the same slice.
            let cap = match size {
                1 => 3_000,
                7 => 20_000,
                _ => u64::MAX,
            };
            let rows = 0..d.len().min(cap);
            let all = all.slice(0, rows.end as usize);
            let opts = ReadOptions {
                batch_size: size,
                rows: Some(rows),
                ..Default::default()
            };
            let batches: Vec<RecordBatch> = d
                .reader(&opts)
                .unwrap()
                .map(|b| b.unwrap_or_else(|e| panic!("{}: {e}", p.display())))
                .collect();
            for b in &batches {
                assert_eq!(b.schema(), schema, "{} batch {size}", p.display());
                assert!(b.num_rows() <= size);
            }
            let joined = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            assert_eq!(joined, all, "{} in batches of {size}", p.display());
        }
        for (j, f) in schema.fields().iter().enumerate() {
            let one = d
                .read_batch(Some(std::slice::from_ref(f.name())), 0..d.len())
                .unwrap_or_else(|e| panic!("{} column {}: {e}", p.display(), f.name()));
            // Duplicate names (an IDV edge case) project the first of them.
            if schema.index_of(f.name()).unwrap() == j {
                assert_eq!(
                    one.column(0),
                    all.column(j),
                    "{} column {}",
                    p.display(),
                    f.name()
                );
            }
        }
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} valid vectors");
    }
}

#[test]
fn unknown_columns_are_refused_with_the_names_there_are() {
    for (_, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap();
        let e = d
            .read_batch(Some(&["no such column".to_string()]), 0..1)
            .unwrap_err();
        assert_eq!(e.kind(), "invalid_argument");
        assert!(e.to_string().contains("no such column"), "{e}");
        return;
    }
}
