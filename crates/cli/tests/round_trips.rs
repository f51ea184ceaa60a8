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
