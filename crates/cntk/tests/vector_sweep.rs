//! Every prefix and every single-byte flip of every valid shared CBF vector
//! under 64 KiB opens and decodes to `Ok` or a clean `Err`, never a panic;
//! and every invalid vector is rejected.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_cntk::Reader;
use dataformats_core::{Limits, Source};

fn check(bytes: Vec<u8>) -> bool {
    match Reader::with_options(
        Source::from_vec(bytes),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) {
        Ok(r) => r.validate().is_ok(),
        Err(_) => false,
    }
}

#[test]
fn valid_vectors_survive_every_prefix_and_flip() {
    let Some(dir) = dataformats_core::testing::vectors_dir("cntk") else {
        return;
    };
    let mut swept = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        let f = std::fs::read(&p).unwrap();
        if f.len() >= 64 << 10 {
            continue;
        }
        assert!(check(f.clone()), "{} must be valid", p.display());
        for n in 0..f.len() {
            assert!(
                !check(f[..n].to_vec()),
                "{}: prefix of {n} bytes accepted",
                p.display()
            );
        }
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0xff;
            let _ = check(g);
        }
        swept += 1;
    }
    assert!(swept >= 30, "only {swept} files swept");
}

#[test]
fn invalid_vectors_are_rejected() {
    let Some(dir) = dataformats_core::testing::vectors_dir("cntk") else {
        return;
    };
    let mut n = 0;
    for e in std::fs::read_dir(dir.join("invalid")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        assert!(
            !check(std::fs::read(&p).unwrap()),
            "{} accepted",
            p.display()
        );
        n += 1;
    }
    assert!(n >= 25);
}
