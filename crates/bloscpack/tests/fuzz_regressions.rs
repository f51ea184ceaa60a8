//! Replays every saved fuzz regression input of the Bloscpack/BLZ targets
//! through the entry points the fuzz targets use.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;

fn replay(target: &str, f: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
        .join("regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_file() {
            f(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "no saved inputs for {target}");
}

#[test]
fn bloscpack_header_regressions() {
    replay("bloscpack_header", dataformats_bloscpack::fuzzing::header);
}

#[test]
fn bloscpack_file_regressions() {
    replay("bloscpack_file", dataformats_bloscpack::fuzzing::file);
}

#[test]
fn blz_meta_regressions() {
    replay("blz_meta", dataformats_bloscpack::fuzzing::blz);
}
