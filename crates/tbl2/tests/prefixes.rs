//! The nom parsers on the real header, index and metadata bytes of every
//! valid shared vector: the whole structure parses to what the reader
//! reports, and every proper prefix of it is `Truncated` at an offset inside
//! it, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::testing::assert_prefixes_truncated;
use dataformats_tbl2::format::{BLOCK_HEADER_SIZE, ENTRY_SIZE, HEADER_SIZE};
use dataformats_tbl2::{Reader, parse};

#[test]
fn every_proper_prefix_of_every_vector_table_is_truncated() {
    let mut checked = 0;
    for (path, valid) in dataformats_core::testing::vector_files("tbl2", "tbl") {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let h = assert_prefixes_truncated(&b[..HEADER_SIZE as usize], 0, parse::header, &name);
        assert_eq!(&h, r.header(), "{name}");
        for k in 0..r.len().min(16) {
            let at = HEADER_SIZE + ENTRY_SIZE * k as u64;
            let e = &b[at as usize..(at + ENTRY_SIZE) as usize];
            let entry = assert_prefixes_truncated(e, at, parse::index_entry, &name);
            assert_eq!(entry, r.entry(k).unwrap(), "{name}: entry {k}");
        }
        for block in r.metadata_blocks().unwrap().iter().take(8) {
            let at = block.offset - BLOCK_HEADER_SIZE;
            let hb = &b[at as usize..(at + BLOCK_HEADER_SIZE) as usize];
            let (sample, size, kind) =
                assert_prefixes_truncated(hb, at, parse::block_header, &name);
            assert_eq!(
                (sample, size, kind),
                (block.sample_index, block.size, block.kind),
                "{name}: block at {at}"
            );
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("tbl2").is_some() {
        assert!(checked >= 10, "only {checked} valid TBL v2 vectors checked");
    }
}
