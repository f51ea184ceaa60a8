//! `Reader::fixed_cells`: the values of INT, FLOAT and NDARRAY fields read
//! in place give what `Reader::value` gives, and a bad record the error it
//! gives, after the values before it.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

use dataformats_mldf::{Dtype, Field, FieldType, FieldValue, Reader, Value, Writer, WriterOptions};

const N: u64 = 200;

/// N samples: `id` (INT), `y` (FLOAT, nullable), `x` (f32[2,3], nullable);
/// `y` and `x` are missing in every seventh sample.
fn file(compressed: bool) -> Vec<u8> {
    let p = dataformats_core::testing::fresh_path(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "df-mldf-cells",
        "mldf",
    );
    let fields = vec![
        Field::new("id", FieldType::Int),
        Field::new("y", FieldType::Float).with_nullable(true),
        Field::new(
            "x",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![2, 3],
            },
        )
        .with_nullable(true),
    ];
    let opts = WriterOptions {
        compressed,
        ..WriterOptions::default()
    };
    let mut w = Writer::create(&p, fields, opts).unwrap();
    for i in 0..N {
        let a: Vec<u8> = (0..6u32)
            .flat_map(|k| (i as f32 * 10.0 + k as f32).to_le_bytes())
            .collect();
        let (y, x) = if i % 7 == 3 {
            (FieldValue::Missing, FieldValue::Missing)
        } else {
            (FieldValue::Float(i as f64 / 4.0), FieldValue::NdArray(&a))
        };
        w.add_sample(&[FieldValue::Int(i as i64 - 50), y, x])
            .unwrap();
    }
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::remove_file(&p).unwrap();
    bytes
}

/// Field `j` of `rows` through `fixed_cells`: the cells before the first
/// error, and that error's text.
fn cells(
    r: &Reader,
    j: usize,
    rows: std::ops::Range<u64>,
) -> (Vec<Option<Vec<u8>>>, Option<String>) {
    let mut got = Vec::new();
    let e = r
        .fixed_cells(
            j,
            rows,
            |e| e.to_string(),
            |c| {
                got.push(c.map(<[u8]>::to_vec));
                Ok(())
            },
        )
        .err();
    (got, e)
}

/// The same through `value`, one sample at a time.
fn values(
    r: &Reader,
    j: usize,
    rows: std::ops::Range<u64>,
) -> (Vec<Option<Vec<u8>>>, Option<String>) {
    let mut got = Vec::new();
    for i in rows {
        match r.value(i, j) {
            Ok(Value::Missing) => got.push(None),
            Ok(Value::Int(x)) => got.push(Some(x.to_le_bytes().to_vec())),
            Ok(Value::Float(x)) => got.push(Some(x.to_le_bytes().to_vec())),
            Ok(Value::NdArray(b)) => got.push(Some(b.to_vec())),
            Ok(other) => panic!("sample {i}: {other:?}"),
            Err(e) => return (got, Some(e.to_string())),
        }
    }
    (got, None)
}

#[test]
fn every_field_reads_as_value_by_value_in_memory_and_compressed() {
    for compressed in [false, true] {
        let r = Reader::from_bytes(file(compressed)).unwrap();
        for j in 0..3 {
            for rows in [0..N, 0..0, 3..4, 17..150, N - 1..N] {
                let (got, e) = cells(&r, j, rows.clone());
                assert_eq!(e, None);
                assert_eq!(got.len() as u64, rows.end - rows.start);
                assert_eq!((got, None), values(&r, j, rows));
            }
        }
        let (got, _) = cells(&r, 2, 0..N);
        assert_eq!(got[3], None);
        assert_eq!(got[4].as_deref().unwrap()[..4], 40f32.to_le_bytes());
    }
}

#[test]
fn a_bad_record_gives_values_errors_after_the_values_before_it() {
    let good = file(false);
    let r = Reader::from_bytes(good.clone()).unwrap();
    let (base, row) = (r.header().metadata_ptr as usize, r.row_size() as usize);
    // `x` starts at 24 in each row (INT 8, nullable FLOAT 16): its
    // data_ptr at +0, data_size at +8, presence byte at +16.
    let x = |i: usize| base + i * row + 24;
    assert_eq!(r.record(10, 2).unwrap()[..], good[x(10)..x(10) + 24]);
    let cases: Vec<(&str, Box<dyn Fn(&mut Vec<u8>)>)> = vec![
        ("data_size", Box::new(|b| b[x(9) + 8] = 20)),
        ("presence byte", Box::new(|b| b[x(9) + 16] = 2)),
        (
            "missing with a record",
            Box::new(|b| {
                b[x(9) + 16] = 0;
                b[x(9) + 3] = 0;
            }),
        ),
        ("pointer past the data", Box::new(|b| b[x(9) + 6] = 0x7f)),
        (
            "pointer before the data",
            Box::new(|b| b[x(9)..x(9) + 8].fill(0)),
        ),
    ];
    for (what, spoil) in cases {
        let mut bytes = good.clone();
        spoil(&mut bytes);
        let r = Reader::from_bytes(bytes).unwrap();
        let (got, e) = cells(&r, 2, 0..N);
        let want = values(&r, 2, 0..N);
        assert!(e.is_some(), "{what}: no error");
        assert_eq!((got, e), want, "{what}");
    }
    // A missing value's zero record read in place: sample 3 is missing.
    let (got, _) = cells(&r, 1, 0..N);
    assert_eq!(got[3], None);
    assert_eq!(got[5], Some((5f64 / 4.0).to_le_bytes().to_vec()));
}

#[test]
fn other_types_and_fields_are_refused() {
    let r = Reader::from_bytes(file(false)).unwrap();
    let (_, e) = cells(&r, 3, 0..1);
    assert!(e.unwrap().contains("no field 3"));
}
