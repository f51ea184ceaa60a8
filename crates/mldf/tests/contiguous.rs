//! `Reader::contiguous_values`: the one byte range of a run of NDARRAY
//! values stored back to back, or `None` whenever reading value by value
//! is needed.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_mldf::{Dtype, Field, FieldType, FieldValue, Reader, Value, Writer, WriterOptions};

const N: u64 = 300;

fn arr(i: u64) -> Vec<u8> {
    (0..6u32)
        .flat_map(|k| (i as f32 * 10.0 + k as f32).to_le_bytes())
        .collect()
}

/// A file of N samples: `id` (INT), `x` (f32[2,3], nullable; missing for
/// the samples in `missing`), written with `opts`.
fn file(missing: &[u64], opts: WriterOptions) -> Vec<u8> {
    let p = dataformats_core::testing::fresh_path(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "df-mldf-contig",
        "mldf",
    );
    let fields = vec![
        Field::new("id", FieldType::Int),
        Field::new(
            "x",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![2, 3],
            },
        )
        .with_nullable(true),
    ];
    let mut w = Writer::create(&p, fields, opts).unwrap();
    for i in 0..N {
        let a = arr(i);
        let x = if missing.contains(&i) {
            FieldValue::Missing
        } else {
            FieldValue::NdArray(&a)
        };
        w.add_sample(&[FieldValue::Int(i as i64), x]).unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    bytes
}

fn plain() -> WriterOptions {
    WriterOptions {
        page_size: 4096,
        ..WriterOptions::default()
    }
}

/// The bytes of `x` for samples `rows`, read value by value.
fn one_by_one(r: &Reader, rows: std::ops::Range<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    for i in rows {
        match r.value(i, 1).unwrap() {
            Value::NdArray(b) => out.extend_from_slice(&b),
            other => panic!("sample {i}: {other:?}"),
        }
    }
    out
}

#[test]
fn a_back_to_back_run_is_one_range_equal_to_its_values() {
    let bytes = file(&[], plain());
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    for rows in [0..N, 0..1, 17..18, 40..123, N - 5..N] {
        let span = r.contiguous_values(1, rows.clone()).unwrap().unwrap();
        assert_eq!(span.end - span.start, 24 * (rows.end - rows.start));
        let got = &bytes[span.start as usize..span.end as usize];
        assert_eq!(got, one_by_one(&r, rows.clone()).as_slice(), "{rows:?}");
        assert_eq!(&got[..24], arr(rows.start).as_slice());
    }
    // Nothing to point at, and INT fields have no value bytes of their own.
    assert_eq!(r.contiguous_values(1, 5..5).unwrap(), None);
    assert_eq!(r.contiguous_values(0, 0..N).unwrap(), None);
}

#[test]
fn requests_outside_the_file_are_errors() {
    let r = Reader::from_bytes(file(&[], plain())).unwrap();
    assert!(r.contiguous_values(1, 0..N + 1).is_err());
    assert!(r.contiguous_values(1, N..N + 1).is_err());
    assert!(r.contiguous_values(2, 0..1).is_err());
}

#[test]
fn a_missing_value_breaks_the_run_only_where_it_is() {
    let r = Reader::from_bytes(file(&[50], plain())).unwrap();
    assert_eq!(r.contiguous_values(1, 0..N).unwrap(), None);
    assert_eq!(r.contiguous_values(1, 45..55).unwrap(), None);
    assert!(r.contiguous_values(1, 0..50).unwrap().is_some());
    assert!(r.contiguous_values(1, 51..N).unwrap().is_some());
}

#[test]
fn compressed_files_are_read_value_by_value() {
    let opts = WriterOptions {
        compressed: true,
        ..plain()
    };
    let r = Reader::from_bytes(file(&[], opts)).unwrap();
    assert_eq!(r.contiguous_values(1, 0..N).unwrap(), None);
}

/// Where the metadata record of (sample i, field 1) starts in `bytes`.
fn record_at(bytes: &[u8], i: u64) -> usize {
    let r = Reader::from_bytes(bytes.to_vec()).unwrap();
    let rec = r.record(i, 1).unwrap();
    let sub = rec.as_ref();
    // Find the record's bytes: metadata rows are unique (each holds its
    // own data pointer).
    bytes.windows(sub.len()).position(|w| w == sub).unwrap()
}

#[test]
fn out_of_order_or_out_of_bounds_pointers_give_no_range() {
    let good = file(&[], plain());
    // Swap the pointers of samples 10 and 11: every value is still a
    // valid value, but the run is no longer in sample order.
    let (a, b) = (record_at(&good, 10), record_at(&good, 11));
    let mut swapped = good.clone();
    let (pa, pb) = (good[a..a + 8].to_vec(), good[b..b + 8].to_vec());
    swapped[a..a + 8].copy_from_slice(&pb);
    swapped[b..b + 8].copy_from_slice(&pa);
    let r = Reader::from_bytes(swapped).unwrap();
    assert_eq!(r.contiguous_values(1, 0..N).unwrap(), None);
    assert!(r.contiguous_values(1, 0..10).unwrap().is_some());
    assert_eq!(one_by_one(&r, 10..11), arr(11));
    // The last value's pointer moved past the data region: no range, and
    // reading that value is an error.
    let last = record_at(&good, N - 1);
    let mut past = good.clone();
    let end = u64::from_le_bytes(good[last..last + 8].try_into().unwrap()) + 24;
    past[last..last + 8].copy_from_slice(&end.to_le_bytes());
    let r = Reader::from_bytes(past).unwrap();
    assert_eq!(r.contiguous_values(1, N - 1..N).unwrap(), None);
    assert!(r.value(N - 1, 1).is_err());
    // A wrong data_size is never part of a range.
    let mut short = good;
    let at = record_at(&short, 7);
    short[at + 8..at + 12].copy_from_slice(&20u32.to_le_bytes());
    let r = Reader::from_bytes(short).unwrap();
    assert_eq!(r.contiguous_values(1, 0..N).unwrap(), None);
    assert!(r.value(7, 1).is_err());
}
