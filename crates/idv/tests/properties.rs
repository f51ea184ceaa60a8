//! Round trips through the writer and reader for every codec: scalars,
//! fixed and variable vectors, dense and sparse, several blocks, with and
//! without compression.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use dataformats_idv::{
    ColumnSpec, ColumnType, Compression, DateTimeOffset, ItemType, KeyWidth, MAX_TICKS, Reader,
    TextValues, Values, VectorValues, Writer, WriterOptions,
};
use proptest::prelude::*;

fn item_types() -> impl Strategy<Value = ItemType> {
    prop_oneof![
        Just(ItemType::I8),
        Just(ItemType::U8),
        Just(ItemType::I16),
        Just(ItemType::U16),
        Just(ItemType::I32),
        Just(ItemType::U32),
        Just(ItemType::I64),
        Just(ItemType::U64),
        Just(ItemType::F32),
        Just(ItemType::F64),
        Just(ItemType::Bool),
        Just(ItemType::Text),
        Just(ItemType::TimeSpan),
        Just(ItemType::DateTime),
        Just(ItemType::DateTimeOffset),
        Just(ItemType::RowId),
        (0usize..4, 1u64..1000).prop_map(|(w, count)| ItemType::Key {
            width: [KeyWidth::U8, KeyWidth::U16, KeyWidth::U32, KeyWidth::U64][w],
            count: count.min(255),
        }),
    ]
}

/// `n` values of `t`, from `seed` (a cheap generator keeps the strategy small).
fn values(t: ItemType, n: usize, seed: u64) -> Values {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    macro_rules! v {
        ($var:ident, $e:expr) => {
            Values::$var((0..n).map(|_| $e).collect())
        };
    }
    match t {
        ItemType::I8 => v!(I8, next() as i8),
        ItemType::U8 => v!(U8, next() as u8),
        ItemType::I16 => v!(I16, next() as i16),
        ItemType::U16 => v!(U16, next() as u16),
        ItemType::I32 => v!(I32, next() as i32),
        ItemType::U32 => v!(U32, next() as u32),
        ItemType::I64 => v!(I64, next() as i64),
        ItemType::U64 => v!(U64, next()),
        ItemType::F32 => v!(F32, f32::from_bits(next() as u32)),
        ItemType::F64 => v!(F64, f64::from_bits(next())),
        ItemType::Bool => v!(Bool, next() % 2 == 0),
        ItemType::TimeSpan => v!(TimeSpan, (next() as i64).max(i64::MIN + 1)),
        ItemType::DateTime => v!(DateTime, (next() % (MAX_TICKS as u64 + 1)) as i64),
        ItemType::DateTimeOffset => v!(
            DateTimeOffset,
            DateTimeOffset {
                ticks: (next() % (MAX_TICKS as u64 - 2_000_000_000_000) + 1_000_000_000_000) as i64,
                offset_minutes: (next() % 1681) as i16 - 840,
            }
        ),
        ItemType::RowId => v!(RowId, u128::from(next()) << 64 | u128::from(next())),
        ItemType::Key { count, .. } => v!(Key, next() % (count + 1)),
        ItemType::Text => {
            let pool = ["", "a", "héllo", "日本語", "😀 grin", "x,y\"z", "\u{0}nul"];
            Values::Text(
                (0..n)
                    .map(|_| pool[(next() % pool.len() as u64) as usize])
                    .collect::<TextValues>(),
            )
        }
    }
}

fn vectors(t: ItemType, n: usize, fixed: Option<u32>, seed: u64) -> Values {
    let mut vv = VectorValues::new(t);
    let mut s = seed | 1;
    for i in 0..n {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let len = fixed.unwrap_or((s >> 60) as u32);
        if (s >> 40).is_multiple_of(3) && len > 0 {
            // Sparse: every other slot, up to fewer than len.
            let idx: Vec<u32> = (0..len)
                .filter(|k| (k + i as u32).is_multiple_of(2))
                .take(len as usize - 1)
                .collect();
            let vals = values(t, idx.len(), s);
            assert!(vv.push_sparse(len, &idx, &vals));
        } else {
            assert!(vv.push_dense(&values(t, len as usize, s)));
        }
    }
    Values::Vector(vv)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_codec_round_trips(
        item in item_types(),
        shape in 0u8..3,
        rows in 0usize..40,
        rpb in 1u32..9,
        deflate in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let (ty, data) = match shape {
            0 => (ColumnType::Scalar(item), values(item, rows, seed)),
            1 => (ColumnType::vector(item, 5), vectors(item, rows, Some(5), seed)),
            _ => (ColumnType::var_vector(item), vectors(item, rows, None, seed)),
        };
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("df-idv-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{seed}.idv"));
        let compression = if deflate { Compression::Deflate } else { Compression::None };
        let spec = ColumnSpec::new("c", ty.clone())
            .annotation("First", ty.clone(), data.slice(0..rows.min(1)).filter(|v| v.len() == 1).unwrap_or_else(|| data.clone()))
            ;
        let spec = if rows == 0 { ColumnSpec::new("c", ty.clone()) } else { spec };
        let mut w = Writer::create(&path, vec![spec, ColumnSpec::new("n", ColumnType::Scalar(ItemType::I32))], WriterOptions { compression, rows_per_block: Some(rpb), level: 1 }).unwrap();
        // Two batches, to cross block boundaries mid-batch.
        let half = rows / 2;
        let idx = Values::I32((0..rows as i32).collect());
        w.write_batch(&[data.slice(0..half).unwrap(), idx.slice(0..half).unwrap()]).unwrap();
        w.write_batch(&[data.slice(half..rows).unwrap(), idx.slice(half..rows).unwrap()]).unwrap();
        w.finish().unwrap();
        let r = Reader::open(&path).unwrap();
        r.validate().unwrap();
        prop_assert_eq!(r.len(), rows as u64);
        prop_assert_eq!(r.columns()[0].ty(), Some(&ty));
        let back = r.read_column(0).unwrap();
        prop_assert_eq!(common::hash(&ty, &back), common::hash(&ty, &data));
        if rows > 0 {
            let a = r.columns()[0].annotation("First").unwrap();
            prop_assert_eq!(common::hash(&ty, a), common::hash(&ty, &data.slice(0..1).unwrap()));
            // A row range touches only its blocks and gives the same rows.
            let (lo, hi) = (rows as u64 / 3, rows as u64 - rows as u64 / 4);
            let part = r.read_rows(0, lo..hi).unwrap();
            prop_assert_eq!(common::hash(&ty, &part), common::hash(&ty, &data.slice(lo as usize..hi as usize).unwrap()));
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn sparse_vectors_densify_with_defaults() {
    let mut vv = VectorValues::new(ItemType::F32);
    assert!(vv.push_sparse(5, &[1, 3], &Values::F32(vec![2.5, -1.0])));
    assert!(vv.push_dense(&Values::F32(vec![1.0, 2.0])));
    assert!(
        !vv.push_sparse(2, &[1, 1], &Values::F32(vec![1.0, 1.0])),
        "indices must increase"
    );
    assert_eq!(
        vv.dense(0),
        Some(Values::F32(vec![0.0, 2.5, 0.0, -1.0, 0.0]))
    );
    assert_eq!(vv.dense(1), Some(Values::F32(vec![1.0, 2.0])));
    assert_eq!(vv.dense(2), None);
    let mut tv = VectorValues::new(ItemType::Text);
    assert!(tv.push_sparse(3, &[2], &Values::Text(["z"].iter().collect())));
    assert_eq!(
        tv.dense(0),
        Some(Values::Text(["", "", "z"].iter().collect()))
    );
}

/// `validate` decodes the blocks of a large file on every core; whatever
/// blocks are damaged, it reports what reading each column's block table
/// and blocks in file order meets first.
#[test]
fn validate_fails_where_a_read_in_file_order_fails_first() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-idv-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.idv");
    let rows = 700_000usize;
    let mut rng = dataformats_core::rng::SplitMix64::new(11);
    let f: Vec<f64> = (0..rows).map(|_| rng.next_u64() as f64).collect();
    let n: Vec<i32> = (0..rows).map(|_| rng.next_u64() as i32).collect();
    let mut w = Writer::create(
        &path,
        vec![
            ColumnSpec::new("f", ColumnType::Scalar(ItemType::F64)),
            ColumnSpec::new("n", ColumnType::Scalar(ItemType::I32)),
        ],
        WriterOptions {
            compression: Compression::Deflate,
            rows_per_block: Some(65_536),
            level: 1,
        },
    )
    .unwrap();
    w.write_batch(&[Values::F64(f), Values::I32(n)]).unwrap();
    w.finish().unwrap();
    let clean = std::fs::read(&path).unwrap();
    assert!(clean.len() > 5 << 20, "{} bytes", clean.len());
    let r = Reader::open(&path).unwrap();
    r.validate().unwrap();
    let blocks = r.block_count();
    assert!(blocks >= 10);
    let entries: Vec<Vec<u64>> = (0..2)
        .map(|c| r.lookup(c).unwrap().iter().map(|e| e.offset).collect())
        .collect();
    drop(r);
    for damaged in [
        vec![(0, 3)],
        vec![(1, 0)],
        vec![(1, 2), (0, 9)],
        vec![(0, 5), (0, 1)],
    ] {
        let mut bytes = clean.clone();
        for &(c, b) in &damaged {
            // Deflate block type 3 (reserved) at the block's start.
            let at = entries[c][b] as usize;
            bytes[at..at + 16].fill(0xFF);
        }
        let q = dir.join("damaged.idv");
        std::fs::write(&q, &bytes).unwrap();
        let r = Reader::open(&q).unwrap();
        let in_order = (|| {
            for c in 0..2 {
                r.lookup(c)?;
                for b in 0..blocks {
                    r.read_block(c, b)?;
                }
            }
            Ok::<_, dataformats_idv::Error>(())
        })()
        .unwrap_err();
        let got = r.validate().unwrap_err();
        assert_eq!(got.to_string(), in_order.to_string(), "{damaged:?}");
        let (c, b) = *damaged.iter().min().unwrap();
        let want = (c, b as u64);
        assert!(
            got.to_string().contains(&format!("block {}", want.1)),
            "{damaged:?}: {got}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Block groups large enough to be deflated on several threads: every
/// block lands at the offset its lookup entry gives, blocks follow each
/// other in group then column order without a gap, every value reads
/// back, and the file is byte for byte the one written on one thread, for
/// one column (blocks of several groups deflated at once) and for four.
#[test]
fn blocks_deflated_on_threads_are_written_in_order() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-idv-parallel-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = 900_000usize;
    let mut rng = dataformats_core::rng::SplitMix64::new(12);
    let all: Vec<Vec<f64>> = (0..4)
        .map(|k| {
            (0..rows)
                .map(|i| (i as f64 * 0.01 + k as f64).sin() + (rng.next_u64() % 1000) as f64)
                .collect()
        })
        .collect();
    for ncols in [1, 4] {
        let columns = &all[..ncols];
        let write = |threads: usize| {
            let path = dir.join(format!("groups-{ncols}-{threads}.idv"));
            let specs = (0..ncols)
                .map(|k| ColumnSpec::new(format!("x{k}"), ColumnType::Scalar(ItemType::F64)))
                .collect();
            let mut w = Writer::create(
                &path,
                specs,
                WriterOptions {
                    compression: Compression::Deflate,
                    rows_per_block: Some(200_000),
                    level: 1,
                },
            )
            .unwrap();
            w.set_threads(threads);
            // Uneven batches, so groups fill across calls.
            let mut at = 0;
            for n in [1, 150_000, 333_333, 416_666] {
                let batch: Vec<Values> = columns
                    .iter()
                    .map(|c| Values::F64(c[at..at + n].to_vec()))
                    .collect();
                w.write_batch(&batch).unwrap();
                at += n;
            }
            w.finish().unwrap();
            path
        };
        let path = write(3);
        let r = Reader::open(&path).unwrap();
        r.validate().unwrap();
        assert_eq!(r.block_count(), 5);
        let mut next = r.lookup(0).unwrap()[0].offset;
        for b in 0..r.block_count() as usize {
            for c in 0..ncols {
                let e = r.lookup(c).unwrap()[b];
                assert_eq!(e.offset, next, "{ncols} columns: column {c}, block {b}");
                next += u64::from(e.compressed_len);
            }
        }
        for (k, want) in columns.iter().enumerate() {
            assert_eq!(&r.column::<f64>(&format!("x{k}")).unwrap(), want, "x{k}");
        }
        let bytes = std::fs::read(&path).unwrap();
        for threads in [1, 2, 0] {
            assert!(
                std::fs::read(write(threads)).unwrap() == bytes,
                "{ncols} columns: the file written on {threads} thread(s) differs"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
