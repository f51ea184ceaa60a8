//! Replays every saved fuzz regression input of the TBL v2 targets.

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
fn tbl2_header_regressions() {
    replay("tbl2_header", dataformats_tbl2::fuzzing::header);
}

#[test]
fn tbl2_index_regressions() {
    replay("tbl2_index", dataformats_tbl2::fuzzing::index);
}

#[test]
fn tbl2_file_regressions() {
    replay("tbl2_file", dataformats_tbl2::fuzzing::file);
}
