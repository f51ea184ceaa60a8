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

#[test]
fn shared_writes_from_many_threads_make_one_whole_file() {
    let dir = fresh_dir("shared");
    let target = dir.join("out.bin");
    // 40 parts of 300 KiB (12 MiB, past a write-back request), each filled
    // with its own byte and written by whichever thread takes it, in no
    // set order; the header goes last.
    const PART: usize = 300 << 10;
    let mut f = AtomicFile::create(&target).unwrap();
    {
        let shared = f.shared().unwrap();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        if i >= 40 {
                            break;
                        }
                        // Backwards, so that the file grows by holes.
                        let part = 39 - i;
                        let bytes = vec![part as u8 + 1; PART];
                        shared
                            .write_all_at(&bytes, 16 + (part * PART) as u64)
                            .unwrap();
                    }
                });
            }
        });
        shared.write_all_at(b"HEADER--16 bytes", 0).unwrap();
    }
    assert!(!target.exists());
    f.finish().unwrap();
    let got = std::fs::read(&target).unwrap();
    assert_eq!(got.len(), 16 + 40 * PART);
    assert_eq!(&got[..16], b"HEADER--16 bytes");
    for (i, part) in got[16..].chunks(PART).enumerate() {
        assert!(part.iter().all(|&b| b == i as u8 + 1), "part {i}");
    }
    assert_eq!(entries(&dir), vec!["out.bin".to_string()]);
}

#[test]
fn shared_writes_dropped_unfinished_leave_nothing() {
    let dir = fresh_dir("shared-drop");
    let target = dir.join("out.bin");
    {
        let mut f = AtomicFile::create(&target).unwrap();
        f.shared().unwrap().write_all_at(&[7u8; 5000], 100).unwrap();
        assert_eq!(std::fs::metadata(f.temp_path()).unwrap().len(), 5100);
    }
    assert!(entries(&dir).is_empty(), "left behind: {:?}", entries(&dir));
}

#[test]
fn preallocated_files_have_their_length_and_refuse_what_the_disk_cannot_hold() {
    let dir = fresh_dir("prealloc");
    let target = dir.join("out.bin");
    let mut f = AtomicFile::create(&target).unwrap();
    f.preallocate(1 << 20).unwrap();
    #[cfg(target_os = "linux")]
    assert_eq!(std::fs::metadata(f.temp_path()).unwrap().len(), 1 << 20);
    f.shared()
        .unwrap()
        .write_all_at(&[9u8; 1 << 20], 0)
        .unwrap();
    f.finish().unwrap();
    let got = std::fs::read(&target).unwrap();
    assert!(got.len() == 1 << 20 && got.iter().all(|&b| b == 9));

    // More than any disk here holds (a petabyte), and more than a file
    // offset can say: errors at once, with nothing left behind.
    #[cfg(target_os = "linux")]
    {
        let mut f = AtomicFile::create(dir.join("huge.bin")).unwrap();
        assert!(f.preallocate(1 << 50).is_err());
        let e = f.preallocate(u64::MAX).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
    assert_eq!(entries(&dir), vec!["out.bin".to_string()]);
}
