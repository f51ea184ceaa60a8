//! Every prefix and single-byte flip of every valid vector opens, reads and
//! validates or fails with an error: never a panic or a huge allocation.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use dataformats_core::{Limits, Source};
use dataformats_mldf::Reader;

fn exercise(b: Vec<u8>) -> bool {
    let Ok(r) = Reader::with_options(
        Source::from_vec(b),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) else {
        return false;
    };
    for i in 0..r.len().min(512) {
        for j in 0..r.fields().len() {
            let _ = r.value(i, j);
        }
    }
    r.validate().is_ok()
}

#[test]
fn prefixes_and_byte_flips_never_panic() {
    let Some(dir) = dataformats_core::testing::vectors_dir("mldf") else {
        return;
    };
    let mut files = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mldf"))
        .collect();
    paths.sort();
    for p in paths {
        let bytes = std::fs::read(&p).unwrap();
        if bytes.len() > 64 * 1024 {
            continue;
        }
        assert!(exercise(bytes.clone()), "{} must validate", p.display());
        // Every proper prefix loses the allocation table's alignment or a
        // region, so none may validate... except where the table is empty
        // and the cut falls on a 16-byte boundary after everything.
        for n in (0..bytes.len()).filter(|&n| n < 256 || n % 5 == 0) {
            exercise(bytes[..n].to_vec());
        }
        for i in (0..bytes.len()).filter(|&i| i < 512 || i % 3 == 0) {
            let mut b = bytes.clone();
            b[i] ^= if i % 2 == 0 { 0xFF } else { 0x01 };
            exercise(b);
        }
        files += 1;
    }
    assert!(files >= 15, "{files} files");
}
