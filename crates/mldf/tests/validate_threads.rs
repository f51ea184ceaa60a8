//! `validate` of a file large enough to be checked on every core finds
//! what one thread finds, and names the same first fault: a value that
//! does not fit its allocation, or an allocation two values share (where
//! the later value, in sample order, is the one named).

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use dataformats_mldf::{Field, FieldType, FieldValue, Reader, Writer, WriterOptions};

/// Samples: more than several runs of the parallel check.
const N: u64 = 40_000;

/// A file of `N` BYTES values of 160 bytes (6.4 MB, past the size where
/// checks use threads); its bytes.
fn file(dir: &std::path::Path) -> Vec<u8> {
    let p = dir.join("v.mldf");
    let mut w = Writer::create(
        &p,
        vec![Field::new("b", FieldType::Bytes)],
        WriterOptions::default(),
    )
    .unwrap();
    let mut v = vec![0u8; 160];
    for i in 0..N {
        v[..8].copy_from_slice(&i.to_le_bytes());
        w.add_sample(&[FieldValue::Bytes(&v)]).unwrap();
    }
    w.finish().unwrap();
    std::fs::read(&p).unwrap()
}

fn validate(bytes: &[u8]) -> Result<(), String> {
    let r = Reader::from_bytes(bytes.to_vec()).map_err(|e| e.to_string())?;
    r.validate().map_err(|e| e.to_string())
}

/// Where sample `i`'s record (data_ptr u64, data_size u32) is.
fn record(bytes: &[u8], i: u64) -> usize {
    let r = Reader::from_bytes(bytes.to_vec()).unwrap();
    (r.header().metadata_ptr + 16 * i) as usize
}

#[test]
fn faults_found_on_threads_are_named_as_one_thread_names_them() {
    let dir = std::env::temp_dir().join(format!("df-mldf-vt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = file(&dir);
    assert!(good.len() > 6_000_000);
    validate(&good).unwrap();

    // Sample 35,000 says 161 bytes, its allocation holds 160.
    let mut bad = good.clone();
    let at = record(&bad, 35_000);
    bad[at + 8..at + 12].copy_from_slice(&161u32.to_le_bytes());
    let e = validate(&bad).unwrap_err();
    assert!(e.contains("35000"), "{e}");
    assert!(e.contains("data_size 161"), "{e}");

    // Sample 30,000 points at sample 100's allocation: sample 30,000 is
    // named (its reference is the second in sample order), whichever
    // thread saw which reference first.
    for (first, second) in [(100u64, 30_000u64), (20_000, 39_999), (16_383, 16_384)] {
        let mut bad = good.clone();
        let (a, b) = (record(&bad, first), record(&bad, second));
        let ptr: [u8; 8] = bad[a..a + 8].try_into().unwrap();
        bad[b..b + 8].copy_from_slice(&ptr);
        let e = validate(&bad).unwrap_err();
        assert!(e.contains("referenced twice"), "{e}");
        assert!(
            e.contains(&format!("sample {second}")),
            "{first}/{second}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The file's bytes read through ranges, as from remote storage: not in
/// memory, so every lookup goes through reads.
#[derive(Debug)]
struct Ranges(Vec<u8>);

impl dataformats_core::source::RangeRead for Ranges {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_range(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let at = offset as usize;
        buf.copy_from_slice(&self.0[at..at + buf.len()]);
        Ok(())
    }
}

/// `validate` of `bytes` held in memory and read through ranges: the two
/// must agree, and the answer is returned.
fn validate_both(bytes: &[u8]) -> Result<(), String> {
    let in_memory = validate(bytes);
    let src = dataformats_core::Source::from_ranges(std::sync::Arc::new(Ranges(bytes.to_vec())));
    let ranged = Reader::with_options(src, Default::default())
        .and_then(|r| r.validate())
        .map_err(|e| e.to_string());
    assert_eq!(in_memory, ranged);
    in_memory
}

#[test]
fn allocations_out_of_sample_order_are_found_in_memory_and_through_ranges() {
    let dir = std::env::temp_dir().join(format!("df-mldf-vo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = file(&dir);
    validate_both(&good).unwrap();

    // Samples swap their (equal-sized) allocations: the file stays valid,
    // though the allocation after the last one found is no longer the one
    // the next value points at.
    for (a, b) in [(0u64, N - 1), (17, 18), (20_000, 3)] {
        let mut swapped = good.clone();
        let (ra, rb) = (record(&swapped, a), record(&swapped, b));
        let pa: [u8; 8] = swapped[ra..ra + 8].try_into().unwrap();
        let pb: [u8; 8] = swapped[rb..rb + 8].try_into().unwrap();
        swapped[ra..ra + 8].copy_from_slice(&pb);
        swapped[rb..rb + 8].copy_from_slice(&pa);
        validate_both(&swapped).unwrap_or_else(|e| panic!("{a} <-> {b}: {e}"));
    }

    // A pointer into the middle of an allocation, and one past the last:
    // no allocation starts there.
    for (i, shift) in [(5u64, 8i64), (N - 1, 160 + 16)] {
        let mut bad = good.clone();
        let at = record(&bad, i);
        let p = u64::from_le_bytes(bad[at..at + 8].try_into().unwrap());
        bad[at..at + 8].copy_from_slice(&((p as i64 + shift) as u64).to_le_bytes());
        let e = validate_both(&bad).unwrap_err();
        assert!(e.contains(&format!("sample {i}")), "{e}");
        assert!(
            e.contains("is no allocation") || e.contains("outside the data region"),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
