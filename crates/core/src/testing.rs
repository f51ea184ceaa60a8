//! Helpers for the workspace's tests. Not a stable API.

#![allow(clippy::panic)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A new file path in `dir` (created if missing), named from `stem`, the
/// process id and a counter: no two calls in one process return the same
/// path, so tests running on threads of one process never share a file.
pub fn fresh_path(dir: &std::path::Path, stem: &str, ext: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir.join(format!("{stem}-{}-{call}.{ext}", std::process::id()))
}

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
    proc_status_kib("VmHWM") / 1024
}

/// A memory figure of this process from `/proc/self/status` in KiB
/// (`VmHWM`, `RssAnon`, ...; 0 where unknown).
pub fn proc_status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
}

/// A memory figure (`Rss`, `AnonHugePages`, ...) in KiB, summed over every
/// mapping of this process that overlaps the addresses `at`, from
/// `/proc/self/smaps`; `None` off Linux or when no mapping overlaps.
pub fn smaps_kib(at: std::ops::Range<usize>, field: &str) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let (mut overlaps, mut found, mut kib) = (false, false, 0u64);
    for line in smaps.lines() {
        // A mapping's first line starts with its address range, `lo-hi`.
        let first = line.split_whitespace().next().unwrap_or_default();
        let range = first.split_once('-').and_then(|(lo, hi)| {
            Some(usize::from_str_radix(lo, 16).ok()?..usize::from_str_radix(hi, 16).ok()?)
        });
        if let Some(r) = range {
            overlaps = r.start < at.end && at.start < r.end;
            found |= overlaps;
        } else if overlaps
            && let Some(v) = line
                .strip_prefix(field)
                .and_then(|rest| rest.strip_prefix(':'))
        {
            kib += v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
        }
    }
    found.then_some(kib)
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

/// The vectors of `format` whose name ends in `.{ext}`, in every subfolder,
/// sorted, each with its sidecar's `valid` (the sidecar is `X.ext.json`, or
/// `X.json` as the Bloscpack vectors have it; files without one are left
/// out). Empty when the vectors folder is absent (outside CI).
pub fn vector_files(format: &str, ext: &str) -> Vec<(PathBuf, bool)> {
    let Some(dir) = vectors_dir(format) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                let side = [
                    PathBuf::from(format!("{}.json", p.display())),
                    p.with_extension("json"),
                ]
                .into_iter()
                .find_map(|s| std::fs::read_to_string(s).ok());
                if let Some(valid) = side.as_deref().and_then(sidecar_valid) {
                    out.push((p, valid));
                }
            }
        }
    }
    out.sort();
    out
}

/// The top-level `"valid": true|false` of a sidecar's text.
fn sidecar_valid(text: &str) -> Option<bool> {
    let at = text.find("\"valid\"")?;
    let rest = text
        .get(at + 7..)?
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    if rest.starts_with("true") {
        Some(true)
    } else if rest.starts_with("false") {
        Some(false)
    } else {
        None
    }
}

/// Every vector of every format, as `(format folder, path, valid)`: files
/// with a sidecar, and BLZ/bcolz directories (a folder with a sidecar
/// `X.json` beside it). Empty when the vectors folder is absent.
pub fn all_vectors() -> Vec<(&'static str, PathBuf, bool)> {
    let mut out = Vec::new();
    for (format, ext) in [
        ("idv", "idv"),
        ("mldf", "mldf"),
        ("cntk", "bin"),
        ("tbl2", "tbl"),
        ("ffcv", "beton"),
        ("bloscpack", "blp"),
    ] {
        out.extend(
            vector_files(format, ext)
                .into_iter()
                .map(|(p, v)| (format, p, v)),
        );
    }
    if let Some(dir) = vectors_dir("blz") {
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if !p.is_dir() {
                    continue;
                }
                match std::fs::read_to_string(p.with_extension("json")) {
                    Ok(side) => {
                        if let Some(valid) = sidecar_valid(&side) {
                            out.push(("blz", p, valid));
                        }
                    }
                    Err(_) => stack.push(p),
                }
            }
        }
    }
    out.sort();
    out
}

/// Asserts that `parser` (run on `whole`, which starts at absolute offset
/// `base`) parses the whole of it, and that every proper prefix of it is
/// `Truncated` at an offset inside it whose `needed` reaches past the prefix:
/// never a value, never another error. Returns the value; `what` names the
/// case in failure messages.
pub fn assert_prefixes_truncated<'a, O>(
    whole: &'a [u8],
    base: u64,
    parser: impl Fn(&'a [u8]) -> crate::parse::PResult<'a, O>,
    what: &str,
) -> O {
    let end = base + whole.len() as u64;
    for len in 0..whole.len() {
        match crate::parse::run(whole.get(..len).unwrap_or_default(), base, &parser) {
            Err(crate::Error::Truncated { at, needed }) => {
                assert!((base..end).contains(&at), "{what}, {len} bytes: at {at}");
                assert!(
                    at + needed > base + len as u64,
                    "{what}, {len} bytes: {needed} needed at {at}"
                );
            }
            Err(e) => panic!("{what}, {len} bytes: {e}"),
            Ok(_) => panic!("{what}: a value from {len} of {} bytes", whole.len()),
        }
    }
    match crate::parse::run(whole, base, &parser) {
        Ok(v) => v,
        Err(e) => panic!("{what}, all {} bytes: {e}", whole.len()),
    }
}

/// Asserts that `e`, made from `core`, keeps `core` as its `source()`.
pub fn assert_source_is(e: &dyn std::error::Error, core: &crate::Error) {
    let Some(source) = e.source() else {
        panic!("{e}: no source");
    };
    assert_eq!(source.to_string(), core.to_string(), "{e}");
    assert!(source.downcast_ref::<crate::Error>().is_some(), "{e}");
}

/// Counts of the threads that touched a [`ThreadExits`] and of those that
/// have since exited: a thread's touch leaves a thread-local value behind
/// whose drop (when the thread exits, after its closure has returned)
/// takes a while and is then counted. A function that starts threads and
/// joins them before it returns leaves `made() == exited()`; one that
/// returns when the threads' closures have returned (as a scope does)
/// leaves a thread-local value still being dropped.
#[derive(Debug, Default, Clone)]
pub struct ThreadExits(std::sync::Arc<(AtomicUsize, AtomicUsize)>);

/// The value a thread touching a [`ThreadExits`] keeps until it exits.
struct Probe(std::sync::Arc<(AtomicUsize, AtomicUsize)>);

impl Drop for Probe {
    fn drop(&mut self) {
        // Slow, so that a caller not waiting for it is caught.
        std::thread::sleep(std::time::Duration::from_millis(20));
        self.0.1.fetch_add(1, Ordering::SeqCst);
    }
}

thread_local!(static PROBE: std::cell::RefCell<Option<Probe>> = const { std::cell::RefCell::new(None) });

impl ThreadExits {
    /// New counts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Leaves a value on the calling thread (once per thread) that counts
    /// the thread's exit. Call it only on threads that exit.
    pub fn touch(&self) {
        PROBE.with(|p| {
            let mut p = p.borrow_mut();
            if p.is_none() {
                self.0.0.fetch_add(1, Ordering::SeqCst);
                *p = Some(Probe(self.0.clone()));
            }
        });
    }

    /// Threads that touched these counts.
    pub fn made(&self) -> usize {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Threads that touched these counts and have exited.
    pub fn exited(&self) -> usize {
        self.0.1.load(Ordering::SeqCst)
    }
}
