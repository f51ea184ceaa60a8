//! `dataformats::open` on every vector of the formats with a common view:
//! valid files open, give their records and validate; invalid ones fail
//! cleanly with their format named.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats::Format;
use dataformats::core::testing::vectors_dir;

fn files(format: &str, ext: &str) -> Vec<(std::path::PathBuf, bool)> {
    dataformats::core::testing::vector_files(format, ext)
}

#[test]
fn every_vector_through_the_common_view() {
    let mut seen = 0;
    for (format, ext, kind) in [
        ("idv", "idv", Format::Idv),
        ("mldf", "mldf", Format::Mldf),
        ("cntk", "bin", Format::Cntk),
        ("tbl2", "tbl", Format::Tbl2),
        ("ffcv", "beton", Format::Ffcv),
    ] {
        for (p, valid) in files(format, ext) {
            let opened = dataformats::open(&p);
            if valid {
                let d = opened.unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                assert_eq!(d.format(), kind);
                // The same file from memory: same format, records and values.
                let b = dataformats::open_bytes(std::fs::read(&p).unwrap())
                    .unwrap_or_else(|e| panic!("{} from bytes: {e}", p.display()));
                assert_eq!((b.format(), b.len()), (kind, d.len()), "{}", p.display());
                if !d.is_empty() {
                    // (compared as JSON: NaN equals NaN there)
                    let json = |r: Vec<dataformats::dataset::Value>| {
                        r.iter().map(|v| v.to_json()).collect::<Vec<_>>()
                    };
                    assert_eq!(json(b.record(0).unwrap()), json(d.record(0).unwrap()));
                }
                d.validate()
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                let cols = d.columns().len();
                for i in 0..d.len().min(20) {
                    let r = d
                        .record(i)
                        .unwrap_or_else(|e| panic!("{} record {i}: {e}", p.display()));
                    assert_eq!(r.len(), cols, "{}", p.display());
                    for v in &r {
                        let j = v.to_json();
                        assert!(serde_json::from_str::<serde_json::Value>(&j).is_ok(), "{j}");
                    }
                }
                let s: serde_json::Value = serde_json::from_str(&d.summary_json()).unwrap();
                assert_eq!(s["records"], d.len());
            } else {
                match opened {
                    Err(e) => assert!(
                        e.format().is_none() || e.format() == Some(kind),
                        "{}",
                        p.display()
                    ),
                    Ok(d) => {
                        let bad = d.validate().is_err()
                            || (0..d.len().min(1000)).any(|i| d.record(i).is_err());
                        assert!(bad, "{}: accepted", p.display());
                    }
                }
            }
            seen += 1;
        }
    }
    if vectors_dir("idv").is_some() {
        assert!(seen > 250, "{seen}");
    }
}

#[test]
fn blz_directories_through_the_common_view() {
    let Some(dir) = vectors_dir("blz") else {
        return;
    };
    let mut n = 0;
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let side = p.with_extension("json");
            if !p.is_dir() {
                continue;
            }
            if !side.is_file() {
                stack.push(p);
                continue;
            }
            let valid = serde_json::from_slice::<serde_json::Value>(&std::fs::read(&side).unwrap())
                .unwrap()["valid"]
                == true;
            match dataformats::open(&p) {
                Ok(ds) if valid => {
                    ds.validate()
                        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                    for i in 0..ds.len().min(10) {
                        assert_eq!(ds.record(i).unwrap().len(), ds.columns().len());
                    }
                }
                Ok(ds) => assert!(ds.validate().is_err(), "{}: accepted", p.display()),
                Err(e) => assert!(!valid, "{}: {e}", p.display()),
            }
            n += 1;
        }
    }
    assert!(n >= 30, "{n}");
}

#[test]
fn records_carry_the_values() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-facade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("x.mldf");
    use dataformats::mldf::{Dtype, Field, FieldType, FieldValue, Writer, WriterOptions};
    let mut w = Writer::create(
        &p,
        vec![
            Field::new("id", FieldType::Int),
            Field::new(
                "v",
                FieldType::NdArray {
                    dtype: Dtype::F32,
                    shape: vec![2],
                },
            )
            .with_nullable(true),
        ],
        WriterOptions::default(),
    )
    .unwrap();
    let arr: Vec<u8> = [1.5f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    w.add_sample(&[FieldValue::Int(4), FieldValue::NdArray(&arr)])
        .unwrap();
    w.add_sample(&[FieldValue::Int(5), FieldValue::Missing])
        .unwrap();
    w.finish().unwrap();
    let d = dataformats::open(&p).unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d.columns()[1].shape, vec![2]);
    let r0 = d.record(0).unwrap();
    assert_eq!(r0[0], dataformats::dataset::Value::Int(4));
    assert_eq!(
        r0[1],
        dataformats::dataset::Value::Tensor {
            dtype: "float32".into(),
            shape: vec![2],
            data: arr
        }
    );
    assert_eq!(d.record(1).unwrap()[1], dataformats::dataset::Value::Null);
    assert!(d.record(2).is_err());
    let e = dataformats::open(dir.join("missing.file")).err().unwrap();
    assert_eq!(e.kind(), "io");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn iteration_gives_every_record_in_order() {
    let Some(dir) = vectors_dir("idv") else {
        return;
    };
    // A file of several blocks: the iterator crosses batch and block ends.
    let p = dir.join("mlnet15_large_default.idv");
    let d = dataformats::open(&p).unwrap();
    assert!(d.len() > 2048, "{}", d.len());
    let mut n = 0u64;
    for (i, r) in d.iter().enumerate() {
        let r = r.unwrap();
        if i % 997 == 0 || i as u64 == d.len() - 1 {
            assert_eq!(r, d.record(i as u64).unwrap(), "record {i}");
        }
        n += 1;
    }
    assert_eq!(n, d.len());
    // A batch equals the records one by one.
    let batch = d.records(1000..1010).unwrap();
    assert_eq!(batch.len(), 10);
    for (k, r) in batch.iter().enumerate() {
        assert_eq!(r, &d.record(1000 + k as u64).unwrap());
    }
    assert!(
        d.records(d.len()..d.len() + 5).unwrap().is_empty(),
        "clamped"
    );
}

#[test]
fn blz_batches_equal_single_records() {
    let Some(dir) = vectors_dir("blz") else {
        return;
    };
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let Ok(d) = dataformats::open(&p) else {
            continue;
        };
        if !p.is_dir() || d.validate().is_err() {
            continue;
        }
        let n = d.len().min(1500);
        let batch = d.records(0..n).unwrap();
        assert_eq!(batch.len() as u64, n);
        for i in (0..n).step_by(37) {
            assert_eq!(
                batch[i as usize],
                d.record(i).unwrap(),
                "{} row {i}",
                p.display()
            );
        }
        seen += 1;
    }
    assert!(seen >= 10, "{seen}");
}

/// `validate_with` reports progress in order, never past its total, and
/// ends at the total, for every valid vector of every format.
#[test]
fn validate_with_reports_progress_to_the_end() {
    let mut reported = std::collections::BTreeSet::new();
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let Ok(d) = dataformats::open(&p) else {
            continue;
        };
        let mut last = (0u64, 0u64);
        let mut calls = 0;
        d.validate_with(&mut |done: u64, total: u64| {
            assert!(done >= last.0, "{}: {done} after {}", p.display(), last.0);
            assert!(done <= total, "{}: {done} of {total}", p.display());
            last = (done, total);
            calls += 1;
        })
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if calls > 0 {
            assert_eq!(last.0, last.1, "{}", p.display());
            reported.insert(format);
        }
    }
    if !reported.is_empty() {
        for f in ["idv", "mldf", "cntk", "tbl2", "bloscpack", "blz", "ffcv"] {
            assert!(reported.contains(f), "{f}: {reported:?}");
        }
    }
}
