//! Replays every saved fuzz regression input of the CBF target.

#![allow(clippy::unwrap_used, clippy::panic)]

#[test]
fn cntk_file_regressions() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/cntk_file/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        dataformats_cntk::fuzzing::file(&std::fs::read(&p).unwrap());
        n += 1;
    }
    assert!(n > 0);
}

fn replay(target: &str, f: fn(&[u8])) {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
        .join("regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        f(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n > 0, "no saved inputs for {target}");
}

#[test]
fn cntk_header_regressions() {
    replay("cntk_header", dataformats_cntk::fuzzing::header);
}

#[test]
fn ctf_regressions() {
    replay("ctf", dataformats_cntk::fuzzing::ctf);
}
