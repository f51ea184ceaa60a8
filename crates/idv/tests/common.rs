//! Helpers shared by the IDV tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::PathBuf;

use dataformats_core::ChecksumKind;
use dataformats_idv::{ColumnType, Values, render};

/// Every valid vector (top level and `edge/`), sorted.
pub fn valid_vectors() -> Vec<PathBuf> {
    let Some(dir) = dataformats_core::testing::vectors_dir("idv") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in [dir.clone(), dir.join("edge")] {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "idv") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// SHA-256 of the canonical bytes.
pub fn hash(ty: &ColumnType, v: &Values) -> String {
    let mut h = ChecksumKind::Sha256.hasher();
    render::canonical_bytes(ty, v, &mut |b| h.update(b));
    h.finish()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
