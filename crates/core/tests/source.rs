//! `Source` reads the same bytes on every backend and refuses every
//! out-of-bounds range with an error that names the offset.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use std::path::PathBuf;

use dataformats_core::{Error, ErrorKind, Limits, Source};

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-core-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn backends(name: &str, bytes: &[u8]) -> Vec<(&'static str, Source)> {
    let path = temp_file(name, bytes);
    vec![
        ("owned", Source::from_vec(bytes.to_vec())),
        // SAFETY: the test owns this file and does not change it while mapped.
        ("mmap", unsafe { Source::map(&path) }.unwrap()),
        ("file", Source::open(&path).unwrap()),
        ("read", Source::read(&path, &Limits::default()).unwrap()),
    ]
}

#[test]
fn every_backend_reads_the_same_bytes() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    for (name, src) in backends("same.bin", &bytes) {
        assert_eq!(src.len(), 5000, "{name}");
        assert_eq!(&*src.bytes(0, 5000).unwrap(), &bytes[..], "{name}");
        assert_eq!(&*src.bytes(4990, 10).unwrap(), &bytes[4990..], "{name}");
        assert_eq!(&*src.bytes(5000, 0).unwrap(), b"", "{name}");
        let mut buf = [0u8; 7];
        src.read_at(300, &mut buf).unwrap();
        assert_eq!(buf, bytes[300..307], "{name}");
        assert_eq!(src.is_in_memory(), name != "file", "{name}");
    }
}

#[test]
fn out_of_bounds_is_an_error_with_the_offset_on_every_backend() {
    let bytes = vec![7u8; 100];
    for (name, src) in backends("oob.bin", &bytes) {
        for (offset, len) in [
            (100u64, 1u64),
            (99, 2),
            (0, 101),
            (u64::MAX, 1),
            (1, u64::MAX),
        ] {
            let e = src.bytes(offset, len).unwrap_err();
            assert!(
                matches!(e, Error::OutOfBounds { offset: o, len: l, size: 100 } if o == offset && l == len),
                "{name} bytes({offset}, {len}): {e}"
            );
            assert!(
                e.to_string().contains(&format!("offset {offset}")),
                "{name}: {e}"
            );
        }
        let mut buf = [0u8; 8];
        let e = src.read_at(95, &mut buf).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfBounds {
                    offset: 95,
                    len: 8,
                    size: 100
                }
            ),
            "{name}: {e}"
        );
        // The buffer is untouched by a refused read.
        assert_eq!(buf, [0u8; 8], "{name}");
        let e = src.read_vec(50, 51, &Limits::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfBounds, "{name}");
    }
}

#[test]
fn read_vec_honours_limits() {
    let bytes = vec![1u8; 1000];
    let src = Source::from_vec(bytes);
    let tight = Limits::default().with_max_alloc(100);
    assert_eq!(src.read_vec(0, 100, &tight).unwrap().len(), 100);
    let e = src.read_vec(0, 101, &tight).unwrap_err();
    assert!(matches!(
        e,
        Error::LimitExceeded {
            requested: 101,
            limit: 100,
            ..
        }
    ));
    let path = temp_file("big.bin", &[0u8; 1000]);
    assert_eq!(
        Source::read(&path, &tight).unwrap_err().kind(),
        ErrorKind::LimitExceeded
    );
}

#[test]
fn a_file_that_shrinks_after_open_is_reported_not_read_short() {
    let path = temp_file("shrink.bin", &[9u8; 64]);
    let src = Source::open(&path).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(10)
        .unwrap();
    let mut buf = [0u8; 16];
    let e = src.read_at(32, &mut buf).unwrap_err();
    assert!(matches!(e, Error::Truncated { at: 32, needed: 16 }), "{e}");
}

#[test]
fn missing_file_is_an_io_error() {
    let e = Source::open("/nonexistent/dataformats/file").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

#[test]
fn sources_are_shared_across_threads() {
    let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 256) as u8).collect();
    let src = Source::from_vec(bytes.clone());
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let src = &src;
            let bytes = &bytes;
            s.spawn(move || {
                for k in 0..100u64 {
                    let off = (t * 1000 + k * 7) % 9000;
                    let got = src.bytes(off, 100).unwrap();
                    assert_eq!(&*got, &bytes[off as usize..off as usize + 100]);
                }
            });
        }
    });
}

/// `bytes` written to a file in a directory of its own (`prefix` and the
/// process id) and mapped: the directory, to remove, and the mapping.
#[cfg(target_os = "linux")]
fn mapped(prefix: &str, bytes: Vec<u8>) -> (std::path::PathBuf, Source) {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.bin");
    std::fs::write(&path, bytes).unwrap();
    // SAFETY: the test owns the file and does not change it while mapped.
    let src = unsafe { Source::map(&path) }.unwrap();
    (dir, src)
}

/// Released pages of a mapped file leave this process's resident memory:
/// all of them, or only the whole pages inside a part.
#[cfg(target_os = "linux")]
#[test]
fn released_pages_leave_the_resident_set() {
    // Four MiB and a partial page.
    let (dir, src) = mapped("df-release-rss", vec![3u8; (4 << 20) + 100]);
    let all = src.as_slice().unwrap();
    let at = all.as_ptr() as usize..all.as_ptr() as usize + all.len();
    let resident = || dataformats_core::testing::smaps_kib(at.clone(), "Rss").unwrap();
    let touch = || all.iter().step_by(4096).map(|b| u64::from(*b)).sum::<u64>();
    assert_eq!(touch(), 3 * 1025);
    assert_eq!(resident(), 4100, "every page touched is resident");
    // A part of the first 2 MiB, from and to addresses inside pages: at
    // least the whole pages inside leave. (The kernel may map a file's
    // page cache in 2 MiB blocks; releasing part of one drops the block's
    // whole mapping, and the pages come back on the next touch.) The
    // second 2 MiB, outside the part, stay.
    src.release_range(100_000..1_000_000);
    let inside = (1_000_000 / 4096 - 100_000u64.div_ceil(4096)) * 4;
    let after = resident();
    assert!(after <= 4100 - inside, "{after} KiB resident");
    assert!(after >= 2052, "{after} KiB resident");
    assert_eq!(touch(), 3 * 1025);
    assert_eq!(resident(), 4100);
    // To the end: the partial last page goes too.
    src.release_range(3 << 20..u64::MAX);
    let after = resident();
    assert!(after <= 3072, "{after} KiB resident");
    assert_eq!(touch(), 3 * 1025);
    src.release_pages();
    assert_eq!(resident(), 0);
    drop(src);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A pass reporting through `Releasing` keeps about one step of a mapped
/// file resident, and its reports reach the progress it wraps unchanged.
#[cfg(target_os = "linux")]
#[test]
fn a_releasing_pass_keeps_one_step_resident() {
    use dataformats_core::Progress;
    use dataformats_core::progress::Releasing;
    let (dir, src) = mapped("df-releasing", vec![5u8; 8 << 20]);
    let all = src.as_slice().unwrap();
    let at = all.as_ptr() as usize..all.as_ptr() as usize + all.len();
    let resident = || dataformats_core::testing::smaps_kib(at.clone(), "Rss").unwrap();
    let mut reports = Vec::new();
    let mut record = |d: u64, t: u64| reports.push((d, t));
    let mut progress = Releasing::with_step(&src, &mut record, 1 << 20);
    // Thirty-two parts of 256 KiB, each touched then reported done.
    let part = 256 << 10;
    let mut most = 0;
    for k in 0..32u64 {
        let bytes = &all[(k * part) as usize..((k + 1) * part) as usize];
        assert_eq!(
            bytes
                .iter()
                .step_by(4096)
                .map(|b| u64::from(*b))
                .sum::<u64>(),
            5 * 64
        );
        most = most.max(resident());
        progress.advance((k + 1) * part, 8 << 20);
    }
    // One step and the part being read, and what the kernel maps around
    // a fault; never the whole file.
    assert!(most >= 1024, "{most} KiB: the pass was not resident at all");
    assert!(most <= 2048, "{most} KiB resident at most, of 8192");
    let want: Vec<(u64, u64)> = (1..=32).map(|k| (k * part, 8 << 20)).collect();
    assert_eq!(reports, want);
    // Half the pass done with every page resident: all of them go back,
    // or, for a pass in file order, only those behind it.
    let touch = || all.iter().step_by(4096).map(|b| u64::from(*b)).sum::<u64>();
    let mut quiet = dataformats_core::progress::none();
    let mut progress = Releasing::with_step(&src, &mut quiet, 1 << 20);
    assert_eq!(touch(), 5 * 2048);
    progress.advance(4 << 20, 8 << 20);
    assert_eq!(resident(), 0);
    let mut progress = Releasing::with_step(&src, &mut quiet, 1 << 20).in_file_order();
    assert_eq!(touch(), 5 * 2048);
    progress.advance(4 << 20, 8 << 20);
    let after = resident();
    // (A release may take a whole 2 MiB block the kernel mapped at once.)
    assert!((2048..=6144).contains(&after), "{after} KiB resident");
    drop(src);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Releasing a source's pages changes nothing it reads: a mapped file's
/// pages come back from the file, other backends ignore the call, and
/// bytes shared before the release stay the same.
#[test]
fn released_pages_read_back_the_same_bytes() {
    let bytes: Vec<u8> = (0..3u32 << 20).map(|i| (i * 7 + i / 4096) as u8).collect();
    for (name, src) in backends("release.bin", &bytes) {
        let view = src.bytes(4096, 1 << 20).unwrap();
        let shared = src.share(&view);
        let before = src.read_vec(0, src.len(), &Limits::default()).unwrap();
        src.release_pages();
        assert_eq!(before, bytes, "{name}");
        assert_eq!(
            src.read_vec(0, src.len(), &Limits::default()).unwrap(),
            bytes,
            "{name}"
        );
        if let Some(shared) = shared {
            assert_eq!(&shared[..], &bytes[4096..4096 + (1 << 20)], "{name}");
        }
        src.release_pages();
        // Parts, page-aligned or not, empty, reversed or past the end.
        for (a, b) in [
            (0, 4096),
            (100, 70_000),
            (5000, 5001),
            (9, 3),
            (1 << 20, 1 << 40),
        ] {
            src.release_range(a..b);
            assert_eq!(
                src.read_vec(0, src.len(), &Limits::default()).unwrap(),
                bytes,
                "{name} {a}..{b}"
            );
        }
        assert_eq!(
            src.bytes(1 << 21, 16).unwrap().as_ref(),
            &bytes[1 << 21..(1 << 21) + 16],
            "{name}"
        );
    }
}
