//! Every prefix and every single-byte flip of every valid vector either
//! opens and decodes or fails with an error: never a panic, hang or huge
//! allocation (tight limits).

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use dataformats_core::{Limits, Source};
use dataformats_idv::Reader;

fn exercise(bytes: Vec<u8>) -> bool {
    let Ok(r) = Reader::with_options(
        Source::from_vec(bytes),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) else {
        return false;
    };
    let mut ok = true;
    for i in 0..r.columns().len() {
        if !r.columns()[i].is_dead() {
            ok &= r.read_column(i).is_ok();
        }
    }
    ok
}

#[test]
fn prefixes_and_byte_flips_never_panic() {
    let mut files = 0;
    let mut cases = 0u64;
    for p in common::valid_vectors() {
        let bytes = std::fs::read(&p).unwrap();
        if bytes.len() > 64 * 1024 {
            continue;
        }
        assert!(exercise(bytes.clone()), "{} must decode", p.display());
        let tail_end = Reader::from_bytes(bytes.clone())
            .unwrap()
            .header()
            .tail_offset as usize
            + 8;
        // Every prefix in the first 512 bytes, then every 7th.
        for n in (0..bytes.len()).filter(|&n| n < 512 || n % 7 == 0) {
            let decoded = exercise(bytes[..n].to_vec());
            assert!(
                n >= tail_end || !decoded,
                "{}: a {n}-byte prefix decoded",
                p.display()
            );
            cases += 1;
        }
        // Flips: every byte of small files, every 3rd byte of larger ones.
        let step = if bytes.len() <= 4096 { 1 } else { 3 };
        for i in (0..bytes.len()).step_by(step) {
            let mut b = bytes.clone();
            b[i] ^= if i % 2 == 0 { 0xFF } else { 0x01 };
            exercise(b);
            cases += 1;
        }
        files += 1;
    }
    if files > 0 {
        assert!(
            files >= 45 && cases > 50_000,
            "{files} files, {cases} cases"
        );
    }
}
