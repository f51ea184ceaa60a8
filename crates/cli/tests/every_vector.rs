//! `dataformats inspect` and `dataformats validate` on every shared vector
//! of every format: valid ones succeed, invalid ones fail with a one-line
//! `error:` message and a non-panic exit code.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every (vector, valid) pair: each sidecar `X.json` beside its vector `X`
/// or `X.<ext>` (a BLZ/bcolz vector is a directory).
fn vectors(root: &Path) -> Vec<(PathBuf, bool, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in &entries {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                if !dir.join(format!("{name}.json")).is_file() {
                    stack.push(p.clone());
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            if name.starts_with("MANIFEST") {
                continue;
            }
            let side: serde_json::Value =
                serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            let (Some(valid), Some(format)) = (side["valid"].as_bool(), side["format"].as_str())
            else {
                continue;
            };
            let direct = dir.join(stem);
            let vector = if direct.exists() {
                direct
            } else {
                let prefix = format!("{stem}.");
                let c: Vec<&PathBuf> = entries
                    .iter()
                    .filter(|q| {
                        let n = q.file_name().unwrap().to_string_lossy();
                        n.starts_with(&prefix) && !n.ends_with(".json")
                    })
                    .collect();
                assert_eq!(c.len(), 1, "{}", p.display());
                c[0].clone()
            };
            out.push((vector, valid, format.to_string()));
        }
    }
    out
}

#[test]
fn inspect_and_validate_every_vector() {
    let Some(root) = dataformats::core::testing::vectors_dir("") else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_dataformats");
    let all = vectors(&root);
    let mut by_format = std::collections::BTreeMap::<String, usize>::new();
    for (p, valid, format) in &all {
        for cmd in ["inspect", "validate"] {
            if !valid && cmd == "inspect" {
                // Inspecting a damaged file may succeed (it shows what it
                // can); it must still not crash.
                let out = Command::new(bin)
                    .args([cmd, p.to_str().unwrap()])
                    .output()
                    .unwrap();
                assert_ne!(
                    out.status.code(),
                    Some(101),
                    "{cmd} {} panicked",
                    p.display()
                );
                assert!(
                    out.status.code().is_some(),
                    "{cmd} {} was killed",
                    p.display()
                );
                continue;
            }
            let out = Command::new(bin)
                .args([cmd, p.to_str().unwrap()])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            if *valid {
                assert!(out.status.success(), "{cmd} {}: {err}", p.display());
            } else {
                let code = out.status.code();
                assert!(
                    matches!(code, Some(1 | 3)),
                    "{cmd} {}: exit {code:?} {err}",
                    p.display()
                );
                let last = err.lines().last().unwrap_or("");
                assert!(last.starts_with("error: "), "{cmd} {}: {err}", p.display());
                assert!(!err.contains("panicked"), "{}", p.display());
            }
        }
        *by_format.entry(format.clone()).or_default() += 1;
    }
    for f in [
        "bloscpack",
        "blz",
        "tbl2",
        "cntk",
        "idv",
        "mldf",
        "ffcv-beton",
    ] {
        assert!(
            by_format.get(f).copied().unwrap_or(0) > 0,
            "no {f} vectors: {by_format:?}"
        );
    }
    assert!(all.len() > 350, "{}", all.len());
}
