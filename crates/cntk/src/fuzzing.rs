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
    if let Ok(report) = ctf_to_cbf(
        data,
        &specs,
        ElemType::F32,
        Chunking::Ctf2bin(64),
        1,
        &out,
        |_| {},
    ) {
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
