//! The typed Arrow view over every valid shared vector: one fixed schema per
//! file, batches of any size that concatenate to the whole file, and
//! projection that equals the projected column of the whole batch.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use arrow_array::RecordBatch;
use dataformats::ReadOptions;

fn whole(d: &dyn dataformats::Dataset) -> RecordBatch {
    d.read_batch(None, 0..d.len()).unwrap()
}

#[test]
fn batches_of_every_size_equal_the_whole_file() {
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        let schema = d.schema();
        assert_eq!(schema, d.schema(), "{}: schema is fixed", p.display());
        let all = whole(d.as_ref());
        assert_eq!(all.num_rows() as u64, d.len(), "{}", p.display());
        assert_eq!(all.schema(), schema, "{}", p.display());
        for size in [1usize, 7, 1024] {
            // Batches of one and seven records over large files are slow in
            // a debug build: those read the first records only (still many
            // blocks and chunks) and compare them with the same slice.
            let cap = match size {
                1 => 3_000,
                7 => 20_000,
                _ => u64::MAX,
            };
            let rows = 0..d.len().min(cap);
            let all = all.slice(0, rows.end as usize);
            let opts = ReadOptions {
                batch_size: size,
                rows: Some(rows),
                ..Default::default()
            };
            let batches: Vec<RecordBatch> = d
                .reader(&opts)
                .unwrap()
                .map(|b| b.unwrap_or_else(|e| panic!("{}: {e}", p.display())))
                .collect();
            for b in &batches {
                assert_eq!(b.schema(), schema, "{} batch {size}", p.display());
                assert!(b.num_rows() <= size);
            }
            let joined = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
            assert_eq!(joined, all, "{} in batches of {size}", p.display());
        }
        for (j, f) in schema.fields().iter().enumerate() {
            let one = d
                .read_batch(Some(std::slice::from_ref(f.name())), 0..d.len())
                .unwrap_or_else(|e| panic!("{} column {}: {e}", p.display(), f.name()));
            // Duplicate names (an IDV edge case) project the first of them.
            if schema.index_of(f.name()).unwrap() == j {
                assert_eq!(
                    one.column(0),
                    all.column(j),
                    "{} column {}",
                    p.display(),
                    f.name()
                );
            }
        }
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} valid vectors");
    }
}

#[test]
fn unknown_columns_are_refused_with_the_names_there_are() {
    for (_, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap();
        let e = d
            .read_batch(Some(&["no such column".to_string()]), 0..1)
            .unwrap_err();
        assert_eq!(e.kind(), "invalid_argument");
        assert!(e.to_string().contains("no such column"), "{e}");
        return;
    }
}

#[cfg(feature = "export")]
#[test]
fn json_lines_export_is_lossless() {
    use arrow_array::{BinaryArray, Float32Array, Float64Array, Int64Array, UInt64Array};
    use std::sync::Arc;
    let mut rng = dataformats::core::rng::SplitMix64::new(3);
    let mut f64s = vec![
        0.0,
        -0.0,
        f64::from_bits(1),
        f64::MAX,
        f64::MIN,
        f64::NAN,
        f64::INFINITY,
    ];
    let mut f32s = vec![
        0.0f32,
        -0.0,
        f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        f32::NAN,
        f32::NEG_INFINITY,
    ];
    let mut u64s = vec![0, u64::MAX, 1 << 53, (1 << 53) + 1, u64::MAX - 1, 1, 2];
    let mut i64s = vec![i64::MIN, i64::MAX, -1, 0, (1 << 53) + 1, -(1 << 53) - 1, 7];
    while f64s.len() < 100_000 {
        let x = f64::from_bits(rng.next_u64());
        let y = f32::from_bits(rng.next_u64() as u32);
        if x.is_finite() && y.is_finite() {
            f64s.push(x);
            f32s.push(y);
            u64s.push(rng.next_u64());
            i64s.push(rng.next_u64() as i64);
        }
    }
    let bytes: Vec<Vec<u8>> = (0..f64s.len())
        .map(|i| (i as u32).to_le_bytes().to_vec())
        .collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("f", Arc::new(Float64Array::from(f64s.clone())) as _),
        ("g", Arc::new(Float32Array::from(f32s.clone())) as _),
        ("u", Arc::new(UInt64Array::from(u64s.clone())) as _),
        ("i", Arc::new(Int64Array::from(i64s.clone())) as _),
        (
            "b",
            Arc::new(BinaryArray::from_iter_values(bytes.iter())) as _,
        ),
    ])
    .unwrap();
    let mut out = Vec::new();
    dataformats::export::write_json_lines(&batch, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let float = |v: &serde_json::Value| match v.as_str() {
        Some("NaN") => f64::NAN,
        Some("Infinity") => f64::INFINITY,
        Some("-Infinity") => f64::NEG_INFINITY,
        _ => v.as_f64().unwrap(),
    };
    for (k, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let f = float(&v["f"]);
        assert!(
            f.to_bits() == f64s[k].to_bits() || (f.is_nan() && f64s[k].is_nan()),
            "{line}"
        );
        let g = float(&v["g"]) as f32;
        assert!(
            g.to_bits() == f32s[k].to_bits() || (g.is_nan() && f32s[k].is_nan()),
            "{line}"
        );
        assert_eq!(v["u"].as_u64(), Some(u64s[k]), "{line}");
        assert_eq!(v["i"].as_i64(), Some(i64s[k]), "{line}");
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD
            .decode(v["b"].as_str().unwrap())
            .unwrap();
        assert_eq!(b, bytes[k]);
    }
    assert_eq!(text.lines().count(), f64s.len());
}

#[test]
fn take_arrays_equals_taking_from_the_whole_file() {
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        let n = d.len().min(5_000);
        if n == 0 {
            assert!(d.take_arrays(&[], &[0]).is_err(), "{}", p.display());
            continue;
        }
        let all = d.read_batch(None, 0..n).unwrap();
        let columns: Vec<usize> = (0..all.num_columns()).collect();
        // Backwards, strided, repeated, a run, and the first and last.
        let mut idx: Vec<u64> = (0..n).rev().step_by(3).collect();
        idx.extend([0, n - 1, 0, n / 2]);
        idx.extend(n / 3..(n / 3 + 5).min(n));
        let got = d
            .take_arrays(&columns, &idx)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let take = arrow_array::UInt64Array::from(idx.clone());
        for (j, a) in got.iter().enumerate() {
            let want = arrow_select::take::take(all.column(j).as_ref(), &take, None).unwrap();
            assert_eq!(a.as_ref(), want.as_ref(), "{} column {j}", p.display());
        }
        // As a batch: the schema follows the asked columns, and a batch
        // with no columns keeps its length.
        let back: Vec<usize> = columns.iter().rev().copied().collect();
        let b = d
            .take_batch(&back, &idx)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(b.num_rows(), idx.len(), "{}", p.display());
        for (j, &c) in back.iter().enumerate() {
            assert_eq!(
                b.schema().field(j),
                all.schema().field(c),
                "{}",
                p.display()
            );
            assert_eq!(b.column(j).as_ref(), got[c].as_ref(), "{}", p.display());
        }
        let bare = d.take_batch(&[], &idx).unwrap();
        assert_eq!((bare.num_columns(), bare.num_rows()), (0, idx.len()));
        let none = d
            .take_arrays(&columns, &[])
            .unwrap_or_else(|e| panic!("{} no indices: {e}", p.display()));
        assert!(none.iter().all(|a| a.is_empty()), "{}", p.display());
        let bad = d.take_arrays(&columns, &[0, d.len()]).unwrap_err();
        assert!(
            bad.to_string().contains("position 1"),
            "{}: {bad}",
            p.display()
        );
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} valid vectors");
    }
}

#[test]
fn splits_cover_every_record_once_and_read_back_the_whole_file() {
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        for parts in [1usize, 2, 3, 8, 1000] {
            let s = d.splits(parts);
            assert!(s.len() <= parts, "{} {parts}: {s:?}", p.display());
            if d.is_empty() {
                assert!(s.is_empty(), "{}", p.display());
                continue;
            }
            assert_eq!(s.first().unwrap().start, 0, "{}", p.display());
            assert_eq!(s.last().unwrap().end, d.len(), "{}", p.display());
            for w in s.windows(2) {
                assert_eq!(w[0].end, w[1].start, "{} {parts}: {s:?}", p.display());
            }
            assert!(s.iter().all(|r| r.start < r.end), "{}: {s:?}", p.display());
        }
        // Reading split by split gives the whole file.
        let parts = d.splits(3);
        let schema = d.schema();
        let batches: Vec<RecordBatch> = parts
            .iter()
            .map(|r| d.read_batch(None, r.clone()).unwrap())
            .collect();
        let joined = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
        assert_eq!(
            joined,
            whole(d.as_ref()),
            "{} read split by split",
            p.display()
        );
    }
}

/// `read_all` on one thread and on several gives the records of the
/// selected rows and columns in order, whatever the batch size asked; a
/// file whose records fail to read fails there too.
#[test]
fn read_all_on_threads_equals_reading_in_one_batch() {
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        let Ok(d) = dataformats::open(&p) else {
            assert!(!valid, "{format} {}", p.display());
            continue;
        };
        let names: Vec<String> = d
            .schema()
            .fields()
            .iter()
            .rev()
            .map(|f| f.name().clone())
            .collect();
        let n = d.len();
        let rows = n.min(1)..n.saturating_sub(1).min(20_000);
        let want = d.read_batch(Some(&names), rows.clone());
        for (size, threads) in [(7usize, 1usize), (7, 2), (1024, 3), (1 << 20, 2)] {
            let opts = ReadOptions {
                columns: Some(names.clone()),
                rows: Some(rows.clone()),
                batch_size: size,
            };
            let got = d.read_all(&opts, threads);
            let (want, got) = match (&want, got) {
                (Ok(w), Ok(g)) => (w, g),
                (Err(_), Err(_)) => continue,
                (w, g) => panic!(
                    "{} size {size} threads {threads}: one batch {:?}, read_all {:?}",
                    p.display(),
                    w.as_ref().map(|b| b.num_rows()),
                    g.map(|b| b.len())
                ),
            };
            assert!(got.iter().all(|b| b.num_rows() > 0), "{}", p.display());
            assert!(
                got.iter().all(|b| b.schema() == want.schema()),
                "{}",
                p.display()
            );
            let joined = arrow_select::concat::concat_batches(&want.schema(), &got).unwrap();
            assert_eq!(
                &joined,
                want,
                "{} size {size} threads {threads}",
                p.display()
            );
            seen += 1;
        }
    }
    assert!(seen > 0);
}

/// Where the values of `a` (a fixed-width array, or a fixed-size list of
/// one) start in memory.
fn values_at(a: &arrow_data::ArrayData) -> Option<usize> {
    match a.data_type() {
        arrow_schema::DataType::FixedSizeList(..) => values_at(a.child_data().first()?),
        _ => Some(a.buffers().first()?.as_ptr() as usize),
    }
}

#[test]
fn read_column_on_threads_equals_reading_the_column_whole() {
    let (mut seen, mut views) = (0, 0);
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        let Ok(d) = dataformats::open(&p) else {
            assert!(!valid, "{format} {}", p.display());
            continue;
        };
        for (j, f) in d.schema().fields().iter().enumerate() {
            let want = d
                .read_arrays(&[j], 0..d.len())
                .map(|mut a| a.pop().unwrap());
            // A whole read that is a view of the file's memory.
            let view = want.as_ref().ok().and_then(|a| {
                let (at, m) = (values_at(&a.to_data())?, d.memory()?);
                let m = m.as_ptr() as usize..m.as_ptr() as usize + m.len();
                (d.len() > 1 && m.contains(&at)).then_some(at)
            });
            for threads in [1usize, 2, 3] {
                let got = d.read_column(j, threads);
                let (want, got) = match (&want, got) {
                    (Ok(w), Ok(g)) => (w, g),
                    (Err(_), Err(_)) => continue,
                    (w, g) => panic!(
                        "{} column {} threads {threads}: whole {:?}, read_column {:?}",
                        p.display(),
                        f.name(),
                        w.as_ref().map(|a| a.len()),
                        g.map(|a| a.len())
                    ),
                };
                assert_eq!(got.data_type(), f.data_type(), "{}", p.display());
                assert_eq!(
                    got.to_data(),
                    want.to_data(),
                    "{} column {} threads {threads}",
                    p.display(),
                    f.name()
                );
                if let Some(at) = view {
                    assert_eq!(
                        values_at(&got.to_data()),
                        Some(at),
                        "{}: a view stays one",
                        p.display()
                    );
                    views += 1;
                }
                seen += 1;
            }
        }
    }
    assert!(seen > 0 && views > 0, "{seen} columns, {views} views");
}

#[test]
fn read_column_keeps_to_the_limits_the_file_was_opened_with() {
    // Each column read whole against the same column on threads, with room
    // for a piece of it but not for all of it: both fail, or both succeed
    // with the same values.
    let mut refused = 0;
    for (_, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let d = dataformats::open(&p).unwrap();
        for (j, f) in d.schema().fields().iter().enumerate() {
            let Ok(Some(full)) = d.read_column(j, 1).map(|a| {
                let bytes = a.to_data().get_slice_memory_size().ok()? as u64;
                (bytes > 64).then_some(bytes)
            }) else {
                continue;
            };
            let opts = dataformats::OpenOptions {
                limits: dataformats::core::Limits::default().with_max_alloc(full / 2),
                ..Default::default()
            };
            let Ok(small) = dataformats::open_with(&p, &opts) else {
                continue;
            };
            let want = small
                .read_arrays(&[j], 0..small.len())
                .map(|mut a| a.pop().unwrap());
            let got = small.read_column(j, 2);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(w.to_data(), g.to_data(), "{}", p.display()),
                (Err(_), Err(_)) => refused += 1,
                (w, g) => panic!(
                    "{} column {}: whole {:?}, read_column {:?}",
                    p.display(),
                    f.name(),
                    w.map(|a| a.len()),
                    g.map(|a| a.len())
                ),
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn read_column_refuses_a_column_it_does_not_have() {
    let (_, p, _) = dataformats::core::testing::all_vectors()
        .into_iter()
        .find(|(_, _, valid)| *valid)
        .unwrap();
    let d = dataformats::open(&p).unwrap();
    let n = d.schema().fields().len();
    let e = d.read_column(n, 2).unwrap_err().to_string();
    assert!(e.contains(&format!("no column {n}")), "{e}");
}

#[test]
fn splits_cut_where_stored_units_start() {
    use dataformats::dataset::split_at_starts;
    // The multiples of the unit nearest to the even cuts.
    assert_eq!(
        split_at_starts(100, &[], 30, 3),
        vec![0..30, 30..60, 60..100]
    );
    assert_eq!(split_at_starts(100, &[], 20, 2), vec![0..60, 60..100]);
    assert_eq!(split_at_starts(10, &[], 1, 3), vec![0..3, 3..6, 6..10]);
    // Chunk starts: the cut moves to the start nearest the even point.
    assert_eq!(
        split_at_starts(100, &[0, 10, 45, 80], 1, 2),
        vec![0..45, 45..100]
    );
    assert_eq!(
        split_at_starts(100, &[0, 10, 70, 80], 1, 2),
        vec![0..70, 70..100]
    );
    assert_eq!(
        split_at_starts(100, &[0, 10, 50, 80], 1, 2),
        vec![0..50, 50..100]
    );
    // Fewer units than parts: fewer ranges; one unit: one range.
    assert_eq!(split_at_starts(5, &[], 1, 10).len(), 5);
    assert_eq!(split_at_starts(5, &[], 100, 4), vec![0..5]);
    assert!(split_at_starts(0, &[], 1, 4).is_empty());
    assert_eq!(split_at_starts(7, &[], 0, 0), vec![0..7]);
}

/// A list value rendered as JSON in place (float lists in one loop) equals
/// the list's own slice rendered item by item: lists and fixed-size lists,
/// sliced, with null lists, null items, NaN, empty lists and nesting.
#[test]
fn json_of_lists_equals_their_items_one_by_one() {
    use arrow_array::types::{Float32Type, Float64Type, Int64Type};
    use arrow_array::{Array, ArrayRef, FixedSizeListArray, ListArray};
    use std::sync::Arc;
    let mut rng = dataformats::core::rng::SplitMix64::new(9);
    let mut f64_lists = Vec::new();
    let mut f32_items = Vec::new();
    for i in 0..300u64 {
        let n = rng.below(7) as usize;
        let v: Vec<Option<f64>> = (0..n)
            .map(|_| Some(f64::from_bits(rng.next_u64())))
            .collect();
        f64_lists.push((i % 11 != 3).then_some(v));
        f32_items.push(match rng.below(5) {
            0 => None,
            1 => Some(f32::NAN),
            _ => Some(rng.below(1 << 24) as f32 / 4096.0 - 2048.0),
        });
    }
    let nested_inner = ListArray::from_iter_primitive::<Float32Type, _, _>((0..40).map(|i| {
        Some(
            (0..i % 4)
                .map(|k| Some(k as f32 * 0.25))
                .collect::<Vec<_>>(),
        )
    }));
    let nested = ListArray::new(
        Arc::new(arrow_schema::Field::new_list_field(
            nested_inner.data_type().clone(),
            true,
        )),
        arrow_buffer::OffsetBuffer::from_lengths([3, 0, 5, 2, 10, 20]),
        Arc::new(nested_inner),
        None,
    );
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(
            f64_lists,
        )),
        Arc::new(ListArray::from_iter_primitive::<Float32Type, _, _>(
            f32_items
                .chunks(5)
                .enumerate()
                .map(|(i, c)| (i % 7 != 2).then(|| c.to_vec())),
        )),
        Arc::new(
            FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                f32_items.chunks(3).map(|c| Some(c.to_vec())),
                3,
            ),
        ),
        Arc::new(
            FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
                (0..50).map(|i| (i % 9 != 4).then(|| vec![Some(i as f64 / 3.0), Some(-0.0)])),
                2,
            ),
        ),
        Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
            (0..60i64).map(|i| Some((0..i % 5).map(|k| Some(k * i - 7)).collect::<Vec<_>>())),
        )),
        Arc::new(nested),
    ];
    let mut checked = 0;
    for a in arrays {
        for a in [
            a.clone(),
            a.slice(1, a.len() - 2),
            a.slice(a.len() / 2, a.len() / 2),
        ] {
            for i in 0..a.len() {
                let mut got = String::new();
                dataformats::typed::json_value(a.as_ref(), i, &mut got);
                let want = if a.is_null(i) {
                    "null".to_string()
                } else {
                    let v = match a.data_type() {
                        arrow_schema::DataType::List(_) => {
                            arrow_array::cast::AsArray::as_list::<i32>(&a).value(i)
                        }
                        _ => arrow_array::cast::AsArray::as_fixed_size_list(&a).value(i),
                    };
                    let items: Vec<String> = (0..v.len())
                        .map(|k| {
                            let mut s = String::new();
                            dataformats::typed::json_value(v.as_ref(), k, &mut s);
                            s
                        })
                        .collect();
                    format!("[{}]", items.join(","))
                };
                assert_eq!(got, want, "{} item {i}", a.data_type());
                serde_json::from_str::<serde_json::Value>(&got).unwrap();
                checked += 1;
            }
        }
    }
    assert!(checked > 800, "{checked}");
}
