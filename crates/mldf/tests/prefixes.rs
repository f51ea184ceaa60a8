//! The nom parsers on the real header and table bytes of every valid shared
//! vector: the whole structure parses to what the reader reports, and every
//! proper prefix of it is `Truncated` at an offset inside it, never a value.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::testing::assert_prefixes_truncated;
use dataformats_mldf::Reader;
use dataformats_mldf::format::{ALLOC_ENTRY_SIZE, DESC_SIZE};
use dataformats_mldf::parse;

#[test]
fn every_proper_prefix_of_every_vector_table_is_truncated() {
    let vectors = dataformats_core::testing::vector_files("mldf", "mldf");
    let mut checked = 0;
    for (path, valid) in vectors {
        if !valid {
            continue;
        }
        let name = path.display().to_string();
        let b = std::fs::read(&path).unwrap();
        let r = Reader::from_bytes(b.clone()).unwrap();
        let h = assert_prefixes_truncated(&b[9..73], 9, parse::header, &name);
        assert_eq!(&h, r.header(), "{name}");
        // Up to 8 descriptors, allocation entries and first-row records each.
        for (k, f) in r.fields().iter().enumerate().take(8) {
            let at = h.field_desc_ptr + DESC_SIZE * k as u64;
            let d = &b[at as usize..(at + DESC_SIZE) as usize];
            let raw = assert_prefixes_truncated(d, at, parse::descriptor, &name);
            assert_eq!(raw.type_id, f.ty.type_id(), "{name}: field {k}");
            assert_eq!(raw.metadata_size, f.metadata_size, "{name}: field {k}");
            if r.is_empty() {
                continue;
            }
            let Some(layout) = parse::record(&f.ty) else {
                continue;
            };
            let rec = r.record(0, k).unwrap();
            let len = f.ty.record_size().unwrap() as usize;
            let rec_at = h.metadata_ptr
                + r.fields()[..k]
                    .iter()
                    .map(|g| u64::from(g.metadata_size))
                    .sum::<u64>();
            assert_prefixes_truncated(&rec[..len], rec_at, layout, &name);
            if f.nullable {
                let present = assert_prefixes_truncated(
                    &rec[len..],
                    rec_at + len as u64,
                    parse::trailer,
                    &name,
                );
                assert!(present <= 1, "{name}: field {k}");
            }
        }
        for k in 0..r.num_allocations().min(8) {
            let at = h.alloc_table_ptr + ALLOC_ENTRY_SIZE * k;
            let e = &b[at as usize..(at + ALLOC_ENTRY_SIZE) as usize];
            let a = assert_prefixes_truncated(e, at, parse::alloc_entry, &name);
            assert_eq!(a, r.allocation(k).unwrap(), "{name}: allocation {k}");
        }
        checked += 1;
    }
    if dataformats_core::testing::vectors_dir("mldf").is_some() {
        assert!(checked > 0, "no valid MLDF vector was checked");
    }
}
