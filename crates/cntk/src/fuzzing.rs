//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::read::Reader;

/// Arbitrary bytes as a CBF file: open, then decode every chunk.
pub fn file(data: &[u8]) {
    if let Ok(r) = Reader::with_options(
        Source::from_vec(data.to_vec()),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) {
        for i in 0..r.chunks().len().min(1024) {
            if let Ok(c) = r.read_chunk(i) {
                assert_eq!(
                    c.records.len(),
                    r.streams().len(),
                    "one record list per stream"
                );
            }
        }
    }
}

/// Arbitrary bytes as the header behind a valid preamble and footer: the
/// descriptor and chunk-table parsing, without the magic checks in the way.
pub fn header(data: &[u8]) {
    let mut f = Vec::with_capacity(data.len() + 28);
    f.extend_from_slice(crate::read::MAGIC);
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(crate::read::MAGIC);
    f.extend_from_slice(data);
    f.extend_from_slice(&12i64.to_le_bytes());
    file(&f);
}

/// Arbitrary text through the CTF converter (streams `a` dense 2 and `b`
/// sparse 5) in ctf2bin's compatible mode; whatever converts must read back
/// and validate, unless it holds a negative sparse index (which ctf2bin
/// writes as is and the converter reports), in which case the reader must
/// reject it.
pub fn ctf(data: &[u8]) {
    use crate::ctf::{StreamSpec, ctf_to_cbf};
    use crate::read::{ElemType, StreamKind};
    use crate::write::Chunking;
    let specs = [
        StreamSpec {
            name: "a".into(),
            alias: "a".into(),
            kind: StreamKind::Dense,
            dim: 2,
        },
        StreamSpec {
            name: "b".into(),
            alias: "b".into(),
            kind: StreamKind::Sparse,
            dim: 5,
        },
    ];
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let out = base.join(format!("df-fuzz-ctf-{}.bin", std::process::id()));
    // The same text in memory, cut into blocks of a few bytes and parsed in
    // place, gives the same file or the same error as the reader's path.
    // (One thread: the per-input leak check would count the thread-locals
    // of worker threads, which are freed only after the run.)
    let source = dataformats_core::Source::from_vec(data.to_vec());
    let text: crate::ctf::Text<'_, &[u8]> = crate::ctf::Text::Memory {
        all: source.as_slice().unwrap_or_default(),
        pos: 0,
        source: &source,
    };
    let in_memory = crate::ctf::ctf_to_cbf_in_blocks(
        text,
        &specs,
        ElemType::F32,
        Chunking::Ctf2bin(64),
        1,
        7,
        &out,
        |_| {},
    )
    .map(|report| (report, std::fs::read(&out).ok()))
    .map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&out);
    let converted = ctf_to_cbf(
        data,
        &specs,
        ElemType::F32,
        Chunking::Ctf2bin(64),
        1,
        &out,
        |_| {},
    );
    let read = converted
        .as_ref()
        .map(|report| (*report, std::fs::read(&out).ok()))
        .map_err(|e| e.to_string());
    assert_eq!(read, in_memory, "in memory in small blocks vs read");
    if let Ok(report) = converted {
        let valid = crate::read::Reader::open(&out).is_ok_and(|r| r.validate().is_ok());
        if report.negative_indices == 0 {
            assert!(valid, "converted CTF must read back");
        } else {
            assert!(
                !valid,
                "a file holding a negative sparse index must not validate"
            );
        }
    }
    let _ = std::fs::remove_file(&out);
}
