//! The nom parsers on the real preamble, header and chunk-table bytes of
//! every valid shared CBF vector: each whole structure parses to what the
//! reader reports, and every proper prefix of it is `Truncated` at an offset
//! inside it, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_cntk::format::{CHUNK_ENTRY_SIZE, FOOTER_SIZE, PREAMBLE_SIZE};
use dataformats_cntk::{MAGIC, Reader, VERSION, parse};
use dataformats_core::testing::assert_prefixes_truncated;

#[test]
fn every_proper_prefix_of_every_vector_header_is_truncated() {
    let mut checked = 0;
    for (path, valid) in dataformats_core::testing::vector_files("cntk", "bin") {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let (magic, version) =
            assert_prefixes_truncated(&b[..PREAMBLE_SIZE as usize], 0, parse::preamble, &name);
        assert_eq!((&magic, version), (MAGIC, VERSION), "{name}");
        let footer_at = b.len() - FOOTER_SIZE as usize;
        let h = assert_prefixes_truncated(&b[footer_at..], footer_at as u64, parse::footer, &name);
        assert_eq!(h as u64, r.header_offset(), "{name}");
        let counts_at = h as usize + 8;
        let (chunks, streams) = assert_prefixes_truncated(
            &b[counts_at..counts_at + 8],
            counts_at as u64,
            parse::counts,
            &name,
        );
        assert_eq!(chunks as usize, r.chunks().len(), "{name}");
        assert_eq!(streams as usize, r.streams().len(), "{name}");
        if let Some(first) = r.streams().first() {
            // After the count words and the first stream's encoding byte.
            let at = counts_at + 9;
            let whole = &b[at..at + 4 + first.name.len()];
            let got = assert_prefixes_truncated(whole, at as u64, parse::stream_name, &name);
            assert_eq!(got, first.name.as_bytes(), "{name}");
        }
        let table_at = footer_at - CHUNK_ENTRY_SIZE as usize * r.chunks().len();
        for (k, c) in r.chunks().iter().enumerate().take(8) {
            let at = table_at + CHUNK_ENTRY_SIZE as usize * k;
            let e = assert_prefixes_truncated(
                &b[at..at + CHUNK_ENTRY_SIZE as usize],
                at as u64,
                parse::chunk_entry,
                &name,
            );
            assert_eq!(e.offset as u64, c.offset, "{name}: chunk {k}");
            assert_eq!(
                (e.num_sequences, e.num_samples),
                (c.num_sequences, c.num_samples),
                "{name}: chunk {k}"
            );
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("cntk").is_some() {
        assert!(checked > 0, "no valid CBF vector was checked");
    }
}
