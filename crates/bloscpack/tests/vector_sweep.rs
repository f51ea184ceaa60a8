//! Every prefix and every single-byte flip of every valid shared vector under
//! 64 KiB opens and validates to `Ok` or a clean `Err`, never a panic; for
//! BLZ/bcolz directories, every file of the directory is swept the same way.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use dataformats_bloscpack::blz::{self, BlzDir};
use dataformats_bloscpack::{ReadOptions, Reader};
use dataformats_core::{Limits, Source};

fn valid(sidecar: &Path) -> bool {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(sidecar).unwrap()).unwrap();
    v["valid"] == true
}

fn check_blp(bytes: Vec<u8>) {
    let opts = ReadOptions::default().limits(Limits::fuzzing());
    let _ = Reader::open_validated(Source::from_vec(bytes), opts);
}

#[test]
fn bloscpack_vectors_survive_every_prefix_and_flip() {
    let Some(dir) = dataformats_core::testing::vectors_dir("bloscpack") else {
        return;
    };
    let mut swept = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "blp") || !valid(&p.with_extension("json")) {
            continue;
        }
        let f = std::fs::read(&p).unwrap();
        if f.len() >= 64 << 10 {
            continue;
        }
        for n in 0..f.len() {
            check_blp(f[..n].to_vec());
        }
        for i in 0..f.len() {
            let mut g = f.clone();
            g[i] ^= 0xff;
            check_blp(g);
        }
        swept += 1;
    }
    assert!(swept >= 20, "only {swept} files swept");
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out)
        } else {
            out.push(p)
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let t = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &t)
        } else {
            std::fs::copy(&p, &t).map(|_| ()).unwrap()
        }
    }
}

/// Sweeps one directory (copied to `work`): every file, prefixes and flips.
fn sweep_dir(root: &Path, work: &Path) {
    let mut fs = Vec::new();
    files(root, &mut fs);
    let _ = std::fs::remove_dir_all(work);
    copy_dir(root, work);
    for f in &fs {
        let target = work.join(f.strip_prefix(root).unwrap());
        let orig = std::fs::read(f).unwrap();
        // Every prefix of the header area, then every 7th.
        for n in (0..orig.len()).filter(|n| *n < 48 || n % 7 == 0) {
            std::fs::write(&target, &orig[..n]).unwrap();
            let _ = BlzDir::with_options(
                work,
                blz::ReadOptions::default()
                    .limits(Limits::fuzzing())
                    .checks(blz::Checks::EveryChunk),
            );
        }
        for i in 0..orig.len() {
            let mut g = orig.clone();
            g[i] ^= 0xff;
            std::fs::write(&target, &g).unwrap();
            let _ = BlzDir::with_options(
                work,
                blz::ReadOptions::default()
                    .limits(Limits::fuzzing())
                    .checks(blz::Checks::EveryChunk),
            );
        }
        std::fs::write(&target, &orig).unwrap();
    }
    BlzDir::with_options(
        work,
        blz::ReadOptions::default()
            .limits(Limits::default())
            .checks(blz::Checks::EveryChunk),
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(work);
}

#[test]
fn blz_vectors_survive_every_prefix_and_flip() {
    let Some(dir) = dataformats_core::testing::vectors_dir("blz") else {
        return;
    };
    // Thousands of small rewrites: use memory-backed storage where there is one.
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let mut roots = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let root = e.unwrap().path();
        if !root.is_dir()
            || root.file_name().unwrap() == "invalid"
            || !valid(&root.with_extension("json"))
        {
            continue;
        }
        let mut fs = Vec::new();
        files(&root, &mut fs);
        if fs.iter().map(|f| f.metadata().unwrap().len()).sum::<u64>() < 64 << 10 {
            roots.push(root);
        }
    }
    assert!(
        roots.len() >= 10,
        "only {} directories to sweep",
        roots.len()
    );
    std::thread::scope(|s| {
        for (t, part) in roots.chunks(roots.len().div_ceil(2)).enumerate() {
            let base = &base;
            s.spawn(move || {
                for (k, root) in part.iter().enumerate() {
                    sweep_dir(
                        root,
                        &base.join(format!("df-blz-sweep-{}-{t}-{k}", std::process::id())),
                    );
                }
            });
        }
    });
}
