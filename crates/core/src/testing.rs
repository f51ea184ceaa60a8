//! Helpers for the workspace's tests. Not a stable API.

#![allow(clippy::panic)]

use std::path::PathBuf;

/// The shared vectors of `format`: `$DATAFORMATS_VECTORS/<format>`, or
/// `../shared/vectors/<format>` beside the project. `None` (with a message)
/// when the folder is missing; a panic when it is missing under `CI=true`,
/// where skipping would hide untested code.
pub fn vectors_dir(format: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("DATAFORMATS_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors")
        })
        .join(format);
    if dir.is_dir() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "vectors folder {} is missing under CI=true",
        dir.display()
    );
    eprintln!("skipping: vectors folder {} not found", dir.display());
    None
}

/// Runs `f` on every saved input in `fuzz/corpus/<target>/regressions/` (the
/// entry point the fuzz target uses), failing when there is none.
pub fn replay_regressions(target: &str, f: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
        .join("regressions");
    let mut n = 0;
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries.flatten() {
        let p = e.path();
        if p.is_file() {
            let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            f(&data);
            n += 1;
        }
    }
    assert!(n > 0, "no saved inputs for {target}");
}

/// Peak resident memory of this process in MiB (`VmHWM`; 0 where unknown),
/// for the benches that report memory.
pub fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

/// Panics unless the files `ours` and `reference` hold the same bytes,
/// naming the first differing offset and both lengths.
pub fn assert_same_file(ours: &std::path::Path, reference: &std::path::Path) {
    let read =
        |p: &std::path::Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let (a, b) = (read(ours), read(reference));
    assert!(
        a == b,
        "{}: differs at {:?} ({} vs {} bytes)",
        reference.display(),
        a.iter().zip(&b).position(|(x, y)| x != y),
        a.len(),
        b.len()
    );
}
