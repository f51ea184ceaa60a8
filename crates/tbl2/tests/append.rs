//! `Reader::append_sample`: samples decoded back to back into one buffer
//! equal `read_sample`, and a failed sample leaves the buffer as it was.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_tbl2::Reader;

#[test]
fn appended_samples_equal_read_samples() {
    let Some(dir) = dataformats_core::testing::vectors_dir("tbl2") else {
        return;
    };
    let mut seen = 0;
    for name in ["mixed_lz4.tbl", "mixed_none.tbl", "many200_lz4.tbl"] {
        let Ok(r) = Reader::open(dir.join(name)) else {
            continue;
        };
        let mut all = b"kept".to_vec();
        let mut want = b"kept".to_vec();
        for i in (0..r.len()).rev() {
            r.append_sample(i, &mut all).unwrap();
            want.extend_from_slice(&r.read_sample(i).unwrap());
        }
        assert_eq!(all, want, "{name}");
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert_eq!(seen, 3);
    }
}

#[test]
fn a_failed_sample_appends_nothing() {
    let Some(dir) = dataformats_core::testing::vectors_dir("tbl2") else {
        return;
    };
    // Sample 0's LZ4 block decodes to the right length with a wrong CRC-16;
    // in data_flip_raw, stored sample 2 has a wrong CRC-16.
    for (name, bad, good) in [("data_flip_lz4.tbl", 0, 1), ("data_flip_raw.tbl", 2, 0)] {
        let Ok(r) = Reader::open(dir.join("invalid").join(name)) else {
            continue;
        };
        let mut out = b"before".to_vec();
        let e = r.append_sample(bad, &mut out).unwrap_err();
        assert_eq!(e.kind(), dataformats_tbl2::ErrorKind::Crc16, "{name}: {e}");
        assert_eq!(out, b"before", "{name}");
        r.append_sample(good, &mut out).unwrap();
        assert_eq!(&out[6..], &*r.read_sample(good).unwrap(), "{name}");
    }
}
