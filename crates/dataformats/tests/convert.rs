//! Conversions as a library: every valid shared vector through MLDF (and
//! the typed exports) gives back its schema and values.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use arrow_array::RecordBatch;
use dataformats::convert::{ChangeKind, ConvertOptions, Target, convert, open_input};

/// The first field or column where two batches differ.
fn first_difference(a: &RecordBatch, b: &RecordBatch) -> String {
    let (sa, sb) = (a.schema(), b.schema());
    for (k, (fa, fb)) in sa.fields().iter().zip(sb.fields()).enumerate() {
        if fa != fb {
            return format!("field {k}: {fa:?} != {fb:?}");
        }
        if a.column(k) != b.column(k) {
            return format!(
                "column {:?}: {:?} != {:?}",
                fa.name(),
                a.column(k),
                b.column(k)
            );
        }
    }
    format!(
        "{} vs {} rows, {} vs {} fields",
        a.num_rows(),
        b.num_rows(),
        sa.fields().len(),
        sb.fields().len()
    )
}

/// Removes what a vector's conversions wrote (files and directories), so
/// a test holds at most one vector's outputs on disk.
fn clear(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
}

fn read_all(path: &std::path::Path) -> RecordBatch {
    let mut inp = open_input(path, &ConvertOptions::default()).unwrap();
    let schema = inp.stream.schema();
    let mut batches = Vec::new();
    while let Some(b) = inp.stream.next_batch() {
        batches.push(b.unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    }
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

#[test]
fn every_vector_through_mldf_keeps_schema_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let original = read_all(&p);
        let out = dir.path().join(format!("{seen}.mldf"));
        let r = convert(&p, &out, &ConvertOptions::default())
            .unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        assert_eq!(r.records, original.num_rows() as u64, "{}", p.display());
        if original.num_rows() == 0 && !original.schema().fields().is_empty() {
            // A file without records has no record to carry its schema in:
            // converted anyway (no value changed), and reported.
            let reported = r
                .changes
                .iter()
                .any(|c| c.kind == ChangeKind::SchemaNotCarried);
            let needed = read_all(&out).schema() != original.schema();
            assert_eq!(reported, needed, "{}: {:?}", p.display(), r.changes);
            clear(dir.path());
            seen += 1;
            continue;
        }
        let back = read_all(&out);
        assert_eq!(back.schema(), original.schema(), "{format} {}", p.display());
        assert_eq!(back, original, "{format} {}", p.display());
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} vectors");
    }
}

#[test]
fn every_vector_through_parquet_and_arrow_keeps_schema_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let original = read_all(&p);
        for ext in ["parquet", "arrow", "arrows"] {
            let out = dir.path().join(format!("{seen}.{ext}"));
            let r = convert(&p, &out, &ConvertOptions::default())
                .unwrap_or_else(|e| panic!("{format} {} -> {ext}: {e}", p.display()));
            assert_eq!(r.records, original.num_rows() as u64);
            let back = read_all(&out);
            assert_eq!(
                back.schema(),
                original.schema(),
                "{format} {} via {ext}",
                p.display()
            );
            assert_eq!(back, original, "{format} {} via {ext}", p.display());
        }
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} vectors");
    }
}

/// The target that writes a vector folder's format back.
fn own_target(format: &str) -> Option<Target> {
    Some(match format {
        "mldf" => Target::Mldf,
        "tbl2" => Target::Tbl2,
        "cntk" => Target::Cntk,
        "idv" => Target::Idv,
        "bloscpack" => Target::Bloscpack,
        "blz" => Target::Blz,
        _ => return None,
    })
}

#[test]
fn every_vector_back_to_its_format_through_mldf_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        let Some(target) = own_target(format).filter(|_| valid) else {
            continue;
        };
        let original = read_all(&p);
        for hub in ["mldf", "parquet"] {
            let mid = dir.path().join(format!("{seen}.{hub}"));
            // A file without records carries no schema through MLDF (the
            // first test checks that this is reported).
            if original.num_rows() == 0 && hub == "mldf" {
                continue;
            }
            convert(&p, &mid, &ConvertOptions::default())
                .unwrap_or_else(|e| panic!("{} -> {hub}: {e}", p.display()));
            let out = dir.path().join(format!("{seen}.{hub}.back"));
            let opts = ConvertOptions {
                to: Some(target),
                ..Default::default()
            };
            convert(&mid, &out, &opts)
                .unwrap_or_else(|e| panic!("{} -> {hub} -> {format}: {e}", p.display()));
            let back = read_all(&out);
            assert!(
                back == original,
                "{} via {hub}: {}",
                p.display(),
                first_difference(&back, &original)
            );
        }
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 20, "only {seen} vectors");
    }
}

#[test]
fn exports_name_their_target() {
    assert_eq!(
        Target::from_path("x.parquet".as_ref()),
        Some(Target::Parquet)
    );
    assert_eq!(Target::from_path("x.MLDF".as_ref()), Some(Target::Mldf));
    assert_eq!(Target::from_path("x.unknown".as_ref()), None);
}
