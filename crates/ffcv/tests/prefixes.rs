//! The nom parsers on the real header and table bytes of every valid shared
//! vector: the whole structure parses to what the reader reports, and every
//! proper prefix of it is `Truncated` at an offset inside it, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::testing::assert_prefixes_truncated;
use dataformats_ffcv::format::{ALLOC_ENTRY_SIZE, DESC_SIZE, HEADER_SIZE};
use dataformats_ffcv::{Reader, parse};

#[test]
fn every_proper_prefix_of_every_vector_table_is_truncated() {
    let mut checked = 0;
    for (path, valid) in dataformats_core::testing::vector_files("ffcv", "beton") {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let l = r.layout();
        let h = assert_prefixes_truncated(&b[..HEADER_SIZE as usize], 0, parse::header, &name);
        assert_eq!(
            (h.version, h.num_fields, h.page_size),
            (l.version, l.num_fields, l.page_size),
            "{name}"
        );
        assert_eq!(
            (h.num_samples, h.alloc_table_ptr),
            (l.num_samples, l.alloc_table_ptr),
            "{name}"
        );
        for (k, f) in r.fields().iter().enumerate() {
            let at = HEADER_SIZE + DESC_SIZE * k as u64;
            let d = &b[at as usize..(at + DESC_SIZE) as usize];
            let raw = assert_prefixes_truncated(d, at, parse::descriptor, &name);
            assert_eq!(raw.type_id, f.ty.type_id(), "{name}: field {k}");
            if f.ty.array().is_some() {
                let a = assert_prefixes_truncated(raw.arguments, at + 17, parse::array_args, &name);
                assert!(a.descr_len > 0, "{name}: field {k}");
            }
            if !r.is_empty() {
                let row = r.row(0).unwrap();
                let col_at = l.metadata_ptr + f.column_offset;
                let o = f.column_offset as usize;
                let next = r
                    .fields()
                    .iter()
                    .map(|g| g.column_offset)
                    .filter(|&c| c > f.column_offset)
                    .min()
                    .unwrap_or(l.row_size) as usize;
                let width = match f.ty.type_id() {
                    2 => 13,
                    3 | 5 => 16,
                    _ => 8,
                };
                assert!(o + width <= next, "{name}: field {k}");
                assert_prefixes_truncated(&row[o..o + width], col_at, parse::column(&f.ty), &name);
            }
        }
        for k in 0..l.num_allocations.min(8) {
            let at = l.alloc_table_ptr + ALLOC_ENTRY_SIZE * k;
            let e = &b[at as usize..(at + ALLOC_ENTRY_SIZE) as usize];
            let a = assert_prefixes_truncated(e, at, parse::alloc_entry, &name);
            assert!(
                (0..l.num_allocations).any(|j| r.allocation(j).unwrap() == a),
                "{name}: entry {k}"
            );
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("ffcv").is_some() {
        assert!(checked > 0, "no valid FFCV vector was checked");
    }
}
