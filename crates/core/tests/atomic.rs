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

/// Bytes `1 MiB .. len` in pieces of 4 MiB: (start, end) of each.
fn pieces(len: u64) -> Vec<(u64, u64)> {
    let starts = ((1u64 << 20)..len).step_by(4 << 20);
    starts.map(|s| (s, (s + (4 << 20)).min(len))).collect()
}

#[test]
fn sized_files_reserve_the_disk_just_ahead_of_the_writes() {
    use dataformats_core::atomic::RESERVE_AHEAD;
    let dir = fresh_dir("sized");
    let target = dir.join("out.bin");
    let len = 3 * RESERVE_AHEAD + 12_345;
    let mut f = AtomicFile::create(&target).unwrap();
    let temp = f.temp_path().to_path_buf();
    {
        let out = f.shared_sized(len).unwrap();
        out.write_all_at(&[1u8; 1 << 20], 0).unwrap();
        // One window reserved, not the whole length.
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(&temp).unwrap();
            assert_eq!(m.len(), RESERVE_AHEAD);
            assert!(m.blocks() * 512 >= RESERVE_AHEAD, "{} blocks", m.blocks());
        }
        // The rest, in pieces of 4 MiB from the end backwards (the file
        // grows past its reserved part, then fills in).
        for (from, to) in pieces(len).into_iter().rev() {
            let piece = vec![(from % 251) as u8; (to - from) as usize];
            out.write_all_at(&piece, from).unwrap();
        }
    }
    assert_eq!(std::fs::metadata(&temp).unwrap().len(), len);
    f.finish().unwrap();
    let got = std::fs::read(&target).unwrap();
    assert_eq!(got.len() as u64, len);
    assert!(got[..1 << 20].iter().all(|&b| b == 1));
    for (from, to) in pieces(len) {
        let part = &got[from as usize..to as usize];
        assert!(
            part.iter().all(|&b| b == (from % 251) as u8),
            "{from}..{to}"
        );
    }

    // A length no disk here holds (a petabyte): nothing is reserved past
    // the window ahead of the writes, so writing its start works; a write
    // near its end needs the disk it cannot have, and fails cleanly.
    let huge = dir.join("huge.bin");
    {
        let mut f = AtomicFile::create(&huge).unwrap();
        let temp = f.temp_path().to_path_buf();
        let out = f.shared_sized(1 << 50).unwrap();
        out.write_all_at(&[2u8; 4096], 0).unwrap();
        #[cfg(target_os = "linux")]
        {
            assert_eq!(std::fs::metadata(&temp).unwrap().len(), RESERVE_AHEAD);
            assert!(out.write_all_at(&[2u8; 4096], (1 << 50) - 4096).is_err());
        }
    }
    assert_eq!(entries(&dir), vec!["out.bin".to_string()]);
}
