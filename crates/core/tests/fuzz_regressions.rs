//! Replays every saved fuzz regression input through the same entry points
//! the fuzz targets use, so stable-only machines re-check them on every test
//! run (`fuzz/corpus/<target>/regressions/`).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use std::path::PathBuf;

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
        .join("regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn core_varint_regressions() {
    let files = regressions("core_varint");
    assert!(!files.is_empty(), "no saved inputs for core_varint");
    for f in files {
        dataformats_core::fuzzing::varints(&std::fs::read(&f).unwrap());
    }
}

#[test]
fn core_blosc_chunk_regressions() {
    let files = regressions("core_blosc_chunk");
    assert!(!files.is_empty(), "no saved inputs for core_blosc_chunk");
    for f in files {
        dataformats_core::fuzzing::blosc_chunk(&std::fs::read(&f).unwrap());
    }
}
