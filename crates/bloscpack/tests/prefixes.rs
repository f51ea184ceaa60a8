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

/// Every chunk file of every valid BLZ/bcolz vector directory: its 16-byte
/// header and the Blosc header after it parse, and every proper prefix of
/// those 32 bytes is `truncated`.
#[test]
fn every_proper_prefix_of_every_blz_chunk_file_header_is_truncated() {
    let mut checked = 0;
    for (format, dir, valid) in dataformats_core::testing::all_vectors() {
        if format != "blz" || !valid {
            continue;
        }
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "blp") {
                    continue;
                }
                let name = p.display().to_string();
                let b = std::fs::read(&p).unwrap();
                let head = &b[..32];
                for n in 0..head.len() {
                    let e = parse::blz_chunk_file(&head[..n], 3).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Truncated, "{name}, {n} bytes: {e}");
                    assert_eq!(e.chunk(), Some(3), "{name}, {n} bytes");
                }
                let h = parse::blz_chunk_file(head, 3).unwrap();
                assert_eq!(
                    h,
                    dataformats_core::codec::blosc::BloscHeader::parse(&b[16..32]).unwrap(),
                    "{name}"
                );
                checked += 1;
            }
        }
    }
    if dataformats_core::testing::vectors_dir("blz").is_some() {
        assert!(checked >= 20, "only {checked} BLZ chunk files checked");
    }
}
