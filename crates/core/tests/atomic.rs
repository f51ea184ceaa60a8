//! `AtomicFile`: nothing behind when dropped, a complete file after `finish()`.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use dataformats_core::AtomicFile;

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-core-atomic-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn dropped_unfinished_leaves_nothing() {
    let dir = fresh_dir("drop");
    let target = dir.join("out.idv");
    {
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(&[1u8; 10_000]).unwrap();
        assert!(f.temp_path().exists());
        assert_eq!(entries(&dir).len(), 1, "only the temp file while writing");
        assert!(!target.exists());
    }
    assert!(entries(&dir).is_empty(), "left behind: {:?}", entries(&dir));
}

#[test]
fn dropped_unfinished_keeps_the_old_target() {
    let dir = fresh_dir("keep");
    let target = dir.join("out.bin");
    std::fs::write(&target, b"old").unwrap();
    {
        let mut f = AtomicFile::create(&target).unwrap();
        f.write_all(b"new but unfinished").unwrap();
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    assert_eq!(entries(&dir), vec!["out.bin".to_string()]);
}

#[test]
fn finish_makes_the_complete_file_appear() {
    let dir = fresh_dir("finish");
    let target = dir.join("out.bin");
    std::fs::write(&target, b"previous contents").unwrap();
    let mut f = AtomicFile::create(&target).unwrap();
    f.write_all(b"HEADER__").unwrap();
    f.write_all(&[0xabu8; 4096]).unwrap();
    // Writers patch their header last.
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(b"PATCHED!").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"previous contents");
    f.finish().unwrap();
    let got = std::fs::read(&target).unwrap();
    assert_eq!(got.len(), 8 + 4096);
    assert_eq!(&got[..8], b"PATCHED!");
    assert!(got[8..].iter().all(|&b| b == 0xab));
    assert_eq!(entries(&dir), vec!["out.bin".to_string()]);
}

#[test]
fn relative_target_in_current_directory_works() {
    let dir = fresh_dir("relative");
    // A bare file name: the temp file goes in ".".
    let prev = std::env::current_dir().unwrap();
    std::env::set_current_dir(&dir).unwrap();
    let r = (|| {
        let mut f = AtomicFile::create("bare.bin")?;
        f.write_all(b"x")?;
        f.finish()
    })();
    std::env::set_current_dir(prev).unwrap();
    r.unwrap();
    assert_eq!(std::fs::read(dir.join("bare.bin")).unwrap(), b"x");
}

#[test]
fn a_missing_directory_is_an_error() {
    let e = AtomicFile::create("/nonexistent/dir/out.bin").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

/// Large files (past several early write-backs) come out whole, with
/// writes after a seek back landing where they should.
#[test]
fn large_files_written_back_early_are_whole() {
    let dir = fresh_dir("large");
    let target = dir.join("big.bin");
    let mut f = AtomicFile::create(&target).unwrap();
    let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    for _ in 0..30 {
        f.write_all(&block).unwrap();
    }
    f.seek(SeekFrom::Start(5)).unwrap();
    f.write_all(b"patched").unwrap();
    assert!(!target.exists());
    f.finish().unwrap();
    let got = std::fs::read(&target).unwrap();
    assert_eq!(got.len(), 30 << 20);
    assert_eq!(&got[5..12], b"patched");
    for (i, chunk) in got.chunks(1 << 20).enumerate() {
        if i > 0 {
            assert!(chunk == block.as_slice(), "MiB {i} differs");
        }
    }
    assert_eq!(entries(&dir), vec!["big.bin".to_string()]);
}
