//! The nom parsers on the real header, tail and block lookup bytes of every
//! valid shared IDV vector: each whole structure parses to what the reader
//! reports, and every proper prefix of it is `Truncated` at an offset inside
//! it, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::testing::assert_prefixes_truncated;
use dataformats_idv::format::{BLOCK_ENTRY_SIZE, HEADER_FIELDS_SIZE};
use dataformats_idv::{Reader, SIGNATURE, TAIL_SIGNATURE, parse};

#[test]
fn every_proper_prefix_of_every_vector_table_is_truncated() {
    let mut checked = 0;
    for (path, valid) in dataformats_core::testing::vector_files("idv", "idv") {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let h =
            assert_prefixes_truncated(&b[..HEADER_FIELDS_SIZE as usize], 0, parse::header, &name);
        assert_eq!(h.signature, SIGNATURE, "{name}");
        let want = r.header();
        assert_eq!(
            (h.version, h.compatible_version),
            (want.version, want.compatible_version),
            "{name}"
        );
        assert_eq!(h.tail_offset as u64, want.tail_offset, "{name}");
        assert_eq!(h.row_count as u64, want.row_count, "{name}");
        assert_eq!(h.column_count as u32, want.column_count, "{name}");
        let t = want.tail_offset as usize;
        let tail = assert_prefixes_truncated(&b[t..t + 8], t as u64, parse::tail, &name);
        assert_eq!(tail, TAIL_SIGNATURE, "{name}");
        for (j, col) in r.columns().iter().enumerate() {
            let Ok(entries) = r.lookup(j) else {
                continue; // a dead column
            };
            for (k, e) in entries.iter().enumerate().take(4) {
                let at = col.lookup_offset as usize + BLOCK_ENTRY_SIZE as usize * k;
                let raw = assert_prefixes_truncated(
                    &b[at..at + BLOCK_ENTRY_SIZE as usize],
                    at as u64,
                    parse::block_entry,
                    &name,
                );
                assert_eq!(raw.offset as u64, e.offset, "{name}: column {j} block {k}");
                assert_eq!(
                    (raw.compressed_len as u32, raw.decompressed_len as u32),
                    (e.compressed_len, e.decompressed_len),
                    "{name}: column {j} block {k}"
                );
            }
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("idv").is_some() {
        assert!(checked > 0, "no valid IDV vector was checked");
    }
}
