//! Every prefix and every single-byte change of small valid files opens and
//! validates to `Ok` or a clean `Err`, never a panic.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use dataformats_bloscpack::{ReadOptions, Reader, WriteOptions, pack_array, pack_bytes};
use dataformats_core::{Limits, Source};
use serde_json::json;

fn files() -> Vec<Vec<u8>> {
    let v: Vec<f32> = (0..300).map(|i| i as f32 * 0.25).collect();
    vec![
        pack_array(&v, &WriteOptions::default().chunk_size(400)).unwrap(),
        pack_bytes(
            b"hello hello hello",
            Some(&json!({"a": [1, 2]})),
            &WriteOptions::default().offsets(false),
        )
        .unwrap(),
        pack_bytes(&[], None, &WriteOptions::default()).unwrap(),
    ]
}

fn check(bytes: Vec<u8>) {
    let opts = ReadOptions::default().limits(Limits::fuzzing());
    if let Ok(r) = Reader::with_options(Source::from_vec(bytes), opts) {
        let _ = r.validate();
        let _ = r.read_all();
    }
}

#[test]
fn every_prefix_is_handled() {
    for f in files() {
        for n in 0..f.len() {
            let r = Reader::from_bytes(f[..n].to_vec());
            assert!(
                r.is_err() || n == f.len(),
                "prefix {n} of {} opened",
                f.len()
            );
        }
    }
}

#[test]
fn every_byte_flip_is_handled() {
    for f in files() {
        for i in 0..f.len() {
            for bit in [0x01u8, 0x80] {
                let mut g = f.clone();
                g[i] ^= bit;
                check(g);
            }
        }
    }
}
