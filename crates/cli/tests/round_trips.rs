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
    let dir = std::env::temp_dir().join(format!("df-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The valid vectors of `format` with extension `ext` (sidecar `valid`).
fn valid(format: &str, ext: &str) -> Vec<PathBuf> {
    let Some(dir) = vectors_dir(format) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .filter(|p| {
            std::fs::read(format!("{}.json", p.display()))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["valid"] == true)
        })
        .collect();
    out.sort();
    out
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
            // A sparse stream without a single sample leaves no value to
            // carry its dimension in MLDF; the converter refuses to guess.
            assert!(seqs.iter().all(|q| !q.contains("samples: 1")) || seqs.is_empty());
            assert!(String::from_utf8_lossy(&out.stderr).contains("(JSON)"));
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
    assert_eq!(seqs, m.num_samples(), "one sequence per row");
    let (_, recs) = cntk_sequences(&bin);
    for (i, rec) in recs.iter().enumerate() {
        if let Ok(dataformats::mldf::Value::Int(x)) = m.value(i as u64, 0) {
            assert!(rec.contains(&format!("{:?}", x as f64)), "{rec} {x}");
        }
    }
}
