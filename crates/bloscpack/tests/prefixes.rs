//! The header parsers on the real bytes of every valid shared Bloscpack
//! vector: the whole header and metadata header parse to what the reader
//! reports, and every proper prefix of them is `truncated`, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_bloscpack::format::{HEADER_SIZE, METADATA_HEADER_SIZE};
use dataformats_bloscpack::{ErrorKind, Reader, parse};

#[test]
fn every_proper_prefix_of_every_vector_header_is_truncated() {
    let mut checked = 0;
    let mut with_metadata = 0;
    for (path, valid) in dataformats_core::testing::vector_files("bloscpack", "blp") {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let head = &b[..HEADER_SIZE as usize];
        for n in 0..head.len() {
            let e = parse::header(&head[..n]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Truncated, "{name}, {n} bytes: {e}");
        }
        assert_eq!(&parse::header(head).unwrap(), r.header(), "{name}");
        if let Some(m) = r.metadata() {
            let at = HEADER_SIZE;
            let mh = &b[at as usize..(at + METADATA_HEADER_SIZE) as usize];
            for n in 0..mh.len() {
                let e = parse::metadata_header(&mh[..n], at).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Truncated, "{name}, {n} bytes: {e}");
                assert_eq!(e.offset(), Some(at), "{name}, {n} bytes");
            }
            assert_eq!(parse::metadata_header(mh, at).unwrap(), m.header, "{name}");
            with_metadata += 1;
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("bloscpack").is_some() {
        assert!(
            checked >= 20,
            "only {checked} valid Bloscpack vectors checked"
        );
        assert!(with_metadata > 0, "no vector with metadata checked");
    }
}
