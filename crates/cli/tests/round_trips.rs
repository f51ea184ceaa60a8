//! Cross-format round trips through MLDF, on the real files of the shared
//! vectors: A -> MLDF -> A must give A's data back (and, where our writer is
//! byte-compatible with the reference writer, A's bytes).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dataformats::core::testing::vectors_dir;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataformats"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The valid vectors of `format` with extension `ext`.
fn valid(format: &str, ext: &str) -> Vec<PathBuf> {
    dataformats::core::testing::vector_files(format, ext)
        .into_iter()
        .filter_map(|(p, ok)| ok.then_some(p))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn tbl2_to_mldf_and_back() {
    use dataformats::tbl2::Reader;
    let files = valid("tbl2", "tbl");
    let dir = scratch("tbl2");
    let mut identical = 0;
    for src in &files {
        let name = src.file_stem().unwrap().to_str().unwrap();
        let (m, back) = (
            dir.join(format!("{name}.mldf")),
            dir.join(format!("{name}.tbl")),
        );
        ok(&["convert", s(src), s(&m)]);
        ok(&["validate", s(&m)]);
        let a = Reader::open(src).unwrap();
        let compressed = a.header().flags & dataformats::tbl2::format::FLAG_COMPRESSED != 0;
        let mut args = vec!["convert", s(&m), s(&back)];
        if !compressed {
            args.push("--no-compress");
        }
        ok(&args);
        let b = Reader::open(&back).unwrap();
        b.validate().unwrap();
        assert_eq!(a.len(), b.len(), "{name}");
        for i in 0..a.len() {
            let (ea, eb) = (a.entry(i).unwrap(), b.entry(i).unwrap());
            assert_eq!(
                (ea.format, ea.width, ea.height),
                (eb.format, eb.width, eb.height),
                "{name} sample {i}"
            );
            assert_eq!(
                a.read_sample(i).unwrap(),
                b.read_sample(i).unwrap(),
                "{name} {i}"
            );
            assert_eq!(
                a.read_metadata(i).unwrap(),
                b.read_metadata(i).unwrap(),
                "{name} metadata {i}"
            );
        }
        if std::fs::read(src).unwrap() == std::fs::read(&back).unwrap() {
            identical += 1;
        }
    }
    if !files.is_empty() {
        // Only a file with several metadata blocks for one sample, out of
        // sample order, comes back with different (equivalent) bytes.
        assert!(
            identical + 1 >= files.len(),
            "{identical} of {}",
            files.len()
        );
    }
}

/// Every sequence of a CBF file, as printable records (NaN compares equal
/// to NaN this way).
fn cntk_sequences(p: &Path) -> (Vec<dataformats::cntk::StreamDesc>, Vec<String>) {
    let r = dataformats::cntk::Reader::open(p).unwrap();
    let mut out = Vec::new();
    for c in 0..r.chunks().len() {
        let v = r.chunk_view(c).unwrap();
        for q in 0..v.num_sequences() {
            let recs: Vec<_> = (0..r.streams().len())
                .map(|s| v.record(s, q).map(|x| x.to_record()))
                .collect();
            out.push(format!("{recs:?}"));
        }
    }
    (r.streams().to_vec(), out)
}

#[test]
fn cntk_to_mldf_and_back() {
    let files = valid("cntk", "bin");
    let dir = scratch("cntk");
    let mut skipped = Vec::new();
    for src in &files {
        let name = src.file_stem().unwrap().to_str().unwrap();
        let m = dir.join(format!("{name}.mldf"));
        let back = dir.join(format!("{name}.bin"));
        ok(&["convert", s(src), s(&m)]);
        ok(&["validate", s(&m)]);
        let (streams, seqs) = cntk_sequences(src);
        let out = run(&["convert", s(&m), s(&back)]);
        if !out.status.success() {
            // A file without records leaves no record to carry its schema
            // in MLDF: a sparse stream comes back as JSON text, which CNTK
            // cannot hold, and the converter refuses to guess.
            assert!(seqs.is_empty(), "{name}: {seqs:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("dropped in field") && err.contains("--lossy"),
                "{err}"
            );
            skipped.push(name.to_string());
            continue;
        }
        let (streams2, seqs2) = cntk_sequences(&back);
        assert_eq!(streams, streams2, "{name}");
        assert_eq!(seqs, seqs2, "{name}");
        // And the other way: MLDF (in the CNTK shape) -> CNTK -> MLDF is
        // the same MLDF content.
        let again = dir.join(format!("{name}.again.mldf"));
        ok(&["convert", s(&back), s(&again)]);
        ok(&["diff", "--content", s(&m), s(&again)]);
    }
    assert!(skipped.len() <= 1, "{skipped:?}");
    if !files.is_empty() {
        assert!(files.len() > 40, "{}", files.len());
    }
}

#[test]
fn plain_mldf_to_cntk_needs_lossy_for_scalars() {
    let Some(dir) = vectors_dir("mldf") else {
        return;
    };
    let out = scratch("mldf-cntk");
    // int_basic.mldf: INT fields only, which CNTK holds as dense f64 only.
    let src = dir.join("int_basic.mldf");
    let bin = out.join("x.bin");
    let refused = run(&["convert", s(&src), s(&bin)]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--lossy"));
    assert!(!bin.exists());
    ok(&["convert", s(&src), s(&bin), "--lossy"]);
    let m = dataformats::mldf::Reader::open(&src).unwrap();
    let r = dataformats::cntk::Reader::open(&bin).unwrap();
    let seqs: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    assert_eq!(seqs, m.len(), "one sequence per row");
    let (_, recs) = cntk_sequences(&bin);
    for (i, rec) in recs.iter().enumerate() {
        if let Ok(dataformats::mldf::Value::Int(x)) = m.value(i as u64, 0) {
            assert!(rec.contains(&format!("{:?}", x as f64)), "{rec} {x}");
        }
    }
}

#[test]
fn bloscpack_to_mldf_and_back() {
    use dataformats::bloscpack::Reader;
    let dir = scratch("blp");
    let mut exact = 0;
    for src in valid("bloscpack", "blp") {
        let name = src.file_stem().unwrap().to_str().unwrap().to_string();
        let m = dir.join(format!("{name}.mldf"));
        let back = dir.join(format!("{name}.blp"));
        let a = Reader::open(&src).unwrap();
        let out = run(&["convert", s(&src), s(&m)]);
        // Every numpy dtype (strings, complex numbers and records included)
        // travels through MLDF: nothing is refused.
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ok(&["convert", s(&m), s(&back)]);
        let b = Reader::open(&back).unwrap();
        b.validate().unwrap();
        match a.numpy() {
            Some(meta) if meta.order == dataformats::bloscpack::Order::C => {
                let got = b.numpy().unwrap();
                assert_eq!(got.shape, meta.shape, "{name}");
                // The same dtype (big-endian stays big-endian) and bytes.
                assert_eq!(got.dtype, meta.dtype, "{name}");
                assert_eq!(a.read_all().unwrap(), b.read_all().unwrap(), "{name}");
            }
            // Fortran order: the common view reads rows, so the array comes
            // back in C order with the same shape and the same elements.
            Some(meta) => {
                let got = b.numpy().unwrap();
                assert_eq!(got.shape, meta.shape, "{name}");
                assert_eq!(got.order, dataformats::bloscpack::Order::C, "{name}");
                assert_eq!(meta.shape.len(), 2, "{name}: a 2-d vector");
                let (r, c) = (meta.shape[0] as usize, meta.shape[1] as usize);
                let n = meta.dtype.itemsize();
                let (pa, pb) = (a.read_all().unwrap(), b.read_all().unwrap());
                for i in 0..r {
                    for j in 0..c {
                        let f = (j * r + i) * n;
                        let k = (i * c + j) * n;
                        assert_eq!(pa[f..f + n], pb[k..k + n], "{name} [{i}, {j}]");
                    }
                }
            }
            // Raw bytes: the same payload.
            None => assert_eq!(a.read_all().unwrap(), b.read_all().unwrap(), "{name}"),
        }
        exact += 1;
    }
    if vectors_dir("bloscpack").is_some() {
        assert!(exact >= 34, "{exact} round trips");
    }
}

#[test]
fn blz_to_mldf_and_back() {
    let Some(vdir) = vectors_dir("blz") else {
        return;
    };
    let dir = scratch("blz");
    let mut exact = 0;
    let mut names: Vec<PathBuf> = std::fs::read_dir(&vdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    for src in names {
        let valid = std::fs::read(src.with_extension("json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v["valid"] == true);
        if !valid {
            continue;
        }
        let name = src.file_name().unwrap().to_str().unwrap().to_string();
        let ext = if name.starts_with("blz") {
            "blz"
        } else {
            "bcolz"
        };
        let m = dir.join(format!("{name}.mldf"));
        let back = dir.join(format!("{name}.{ext}"));
        let out = run(&["convert", s(&src), s(&m)]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ok(&["convert", s(&m), s(&back)]);
        let a = dataformats::open(&src).unwrap();
        let b = dataformats::open(&back).unwrap();
        b.validate().unwrap();
        assert_eq!(a.format(), b.format());
        // The same typed view: schema (numpy types, attrs) and every value.
        // (A carray of records comes back as a ctable of its fields, which
        // the view does not tell apart.)
        assert_eq!(a.schema(), b.schema(), "{name}");
        assert_eq!(a.len(), b.len(), "{name}");
        assert_eq!(
            a.read_batch(None, 0..a.len()).unwrap(),
            b.read_batch(None, 0..b.len()).unwrap(),
            "{name}"
        );
        exact += 1;
    }
    assert!(exact >= 14, "{exact} round trips");
}

/// Every record of two files, as the typed view prints them, is the same.
fn same_rows(a: &Path, b: &Path) {
    let rows = |p: &Path| {
        let out = run(&["head", s(p), "-n", "1000000000"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let (x, y) = (rows(a), rows(b));
    assert!(!x.is_empty());
    assert!(x == y, "{} and {} differ", a.display(), b.display());
}

#[test]
fn mldf_tables_to_bcolz_and_back() {
    // An MLDF file with several numeric fields becomes a ctable and comes
    // back with the same values (the MLDF file made from the ctable
    // carries its numpy types, so its fields are not byte-equal MLDF ones).
    let dir = scratch("mldf-bcolz");
    let jsonl = dir.join("rows.jsonl");
    let schema = dir.join("schema.json");
    let mut text = String::new();
    for i in 0..70_000u32 {
        text.push_str(&format!(
            "{{\"id\": {i}, \"score\": {}, \"v\": [{}, {}]}}\n",
            f64::from(i) / 8.0,
            i % 7,
            i % 11
        ));
    }
    std::fs::write(&jsonl, text).unwrap();
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "id", "type": "INT"}, {"name": "score", "type": "FLOAT"}, {"name": "v", "type": "NDARRAY", "dtype": "int16", "shape": [2]}]}"#,
    )
    .unwrap();
    let m = dir.join("rows.mldf");
    ok(&["convert", s(&jsonl), s(&m), "--schema", s(&schema)]);
    let t = dir.join("rows.bcolz");
    ok(&["convert", s(&m), s(&t)]);
    let again = dir.join("again.mldf");
    ok(&["convert", s(&t), s(&again)]);
    same_rows(&m, &again);
    // Several fields go to a Bloscpack file as one array of records (a
    // numpy structured dtype) and come back as the same MLDF content.
    let recs = dir.join("rows.blp");
    ok(&["convert", s(&m), s(&recs)]);
    let r = dataformats::bloscpack::Reader::open(&recs).unwrap();
    let meta = r.numpy().unwrap();
    assert_eq!(meta.shape, vec![70_000]);
    assert_eq!(
        meta.dtype.to_string(),
        "[('id', '<i8'), ('score', '<f8'), ('v', '<i2', (2,))]"
    );
    let again = dir.join("again2.mldf");
    ok(&["convert", s(&recs), s(&again)]);
    same_rows(&m, &again);
}

#[test]
fn fields_numpy_cannot_hold_are_refused_unless_lossy() {
    let Some(dir) = vectors_dir("mldf") else {
        return;
    };
    let out = scratch("mldf-numpy-lossy");
    // nullable_missing.mldf: NULLABLE INT/BYTES/TEXT fields and one FLOAT.
    let src = dir.join("nullable_missing.mldf");
    for target in ["x.blp", "x.bcolz"] {
        let t = out.join(target);
        let refused = run(&["convert", s(&src), s(&t)]);
        assert_eq!(refused.status.code(), Some(1), "{target}");
        let err = String::from_utf8_lossy(&refused.stderr);
        // Every field numpy has no dtype for is named.
        assert!(
            err.contains("\"maybe_text\"")
                && err.contains("\"maybe_blob\"")
                && err.contains("dropped")
                && err.contains("--lossy"),
            "{err}"
        );
        assert!(!t.exists(), "{target} must not appear");
        let lossy = run(&["convert", s(&src), s(&t), "--lossy"]);
        assert!(
            lossy.status.success(),
            "{}",
            String::from_utf8_lossy(&lossy.stderr)
        );
        // Text and bytes are left out; a missing number is written as zero;
        // both are listed.
        let notes = String::from_utf8_lossy(&lossy.stderr);
        assert!(
            notes.contains("dropped") && notes.contains("null_filled"),
            "{notes}"
        );
        let d = dataformats::open(&t).unwrap();
        let names: Vec<String> = d
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["maybe_int", "always"], "{target}");
    }
}
