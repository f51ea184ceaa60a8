//! Every prefix and every single-byte flip of every valid shared vector opens
//! and reads (every sample, then the metadata) to `Ok` or a clean `Err`,
//! never a panic.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::{Limits, Source};
use dataformats_tbl2::{ReadOptions, Reader};

fn check(bytes: Vec<u8>) {
    if let Ok(r) = Reader::with_options(
        Source::from_vec(bytes),
        ReadOptions::default().limits(Limits::fuzzing()),
    ) {
        let _ = r.validate();
    }
}

#[test]
fn valid_vectors_survive_prefixes_and_flips() {
    let Some(dir) = dataformats_core::testing::vectors_dir("tbl2") else {
        return;
    };
    let mut swept = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "tbl") {
            continue;
        }
        let sidecar: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("tbl.json")).unwrap()).unwrap();
        if sidecar["valid"] != true {
            continue;
        }
        let f = std::fs::read(&p).unwrap();
        for n in 0..f.len() {
            check(f[..n].to_vec());
        }
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0xff;
            check(g);
        }
        swept += 1;
    }
    assert_eq!(swept, 17);
}
