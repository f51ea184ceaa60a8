//! The loader's orders and shards, and the comparator.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;

use dataformats_mldf::diff::{DiffOptions, Difference, diff};
use dataformats_mldf::loader::epoch_order;
use dataformats_mldf::{
    Field, FieldType, FieldValue, Layout, Loader, LoaderOptions, Order, Reader, Value, Writer,
    WriterOptions,
};

fn write(path: &std::path::Path, n: u64, opts: WriterOptions, tweak: Option<u64>) {
    let fields = vec![
        Field::new("id", FieldType::Int),
        Field::new("blob", FieldType::Bytes),
    ];
    let mut w = Writer::create(path, fields, opts).unwrap();
    for i in 0..n {
        // 1000-byte values: four per 4 KiB page.
        let blob = vec![(i % 251) as u8; 1000];
        let id = if tweak == Some(i) { -1 } else { i as i64 };
        w.add_sample(&[FieldValue::Int(id), FieldValue::Bytes(&blob)])
            .unwrap();
    }
    w.finish().unwrap();
}

fn opts() -> WriterOptions {
    WriterOptions {
        page_size: 4096,
        ..WriterOptions::default()
    }
}

#[test]
fn orders_shards_and_batches() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("l.mldf");
    write(&p, 203, opts(), None);
    let r = Reader::open(&p).unwrap();
    for order in [
        Order::Sequential,
        Order::Random,
        Order::QuasiRandom { pages: 3 },
    ] {
        let o = LoaderOptions {
            order,
            seed: 11,
            ..LoaderOptions::default()
        };
        let e0 = epoch_order(&r, &o, 0).unwrap();
        assert_eq!(
            e0.iter().copied().collect::<BTreeSet<_>>().len(),
            203,
            "{order:?}: every sample once"
        );
        assert_eq!(e0, epoch_order(&r, &o, 0).unwrap(), "deterministic");
        if order != Order::Sequential {
            assert_ne!(
                e0,
                epoch_order(&r, &o, 1).unwrap(),
                "re-shuffled each epoch"
            );
            assert_ne!(e0, (0..203).collect::<Vec<_>>());
        }
        // Shards: disjoint, equal, covering all but the tail.
        let shards: Vec<Vec<u64>> = (0..4)
            .map(|k| {
                epoch_order(
                    &r,
                    &LoaderOptions {
                        shard: (k, 4),
                        ..o.clone()
                    },
                    0,
                )
                .unwrap()
            })
            .collect();
        let all: BTreeSet<u64> = shards.iter().flatten().copied().collect();
        assert!(shards.iter().all(|s| s.len() == 50));
        assert_eq!(all.len(), 200);
    }
    // Quasi-random: each window of 3 shuffled pages is served before the next,
    // so any 12 consecutive samples touch at most 6 pages.
    let o = LoaderOptions {
        order: Order::QuasiRandom { pages: 3 },
        seed: 5,
        ..LoaderOptions::default()
    };
    let order = epoch_order(&r, &o, 0).unwrap();
    let page = |i: u64| {
        let ptr = match r.record(i, 1).unwrap().get(..8) {
            Some(b) => u64::from_le_bytes(b.try_into().unwrap()),
            None => 0,
        };
        (ptr - r.header().data_ptr) / 4096
    };
    for w in order.windows(12) {
        let pages: BTreeSet<u64> = w.iter().map(|&i| page(i)).collect();
        assert!(pages.len() <= 6, "{pages:?}");
    }
    // Batches: sizes, field selection, values travel with their index.
    let lo = LoaderOptions {
        batch_size: 16,
        order: Order::Random,
        fields: vec!["id".into()],
        ..LoaderOptions::default()
    };
    let batches: Vec<_> = Loader::new(&r, &lo, 0)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(batches.len(), 13);
    assert_eq!(batches.last().unwrap().len(), 203 - 12 * 16);
    for (i, vals) in batches.iter().flatten() {
        assert_eq!(vals, &vec![Value::Int(*i as i64)]);
    }
    let dropped = Loader::new(
        &r,
        &LoaderOptions {
            drop_last: true,
            ..lo.clone()
        },
        0,
    )
    .unwrap()
    .count();
    assert_eq!(dropped, 12);
    assert!(
        Loader::new(
            &r,
            &LoaderOptions {
                fields: vec!["nope".into()],
                ..lo
            },
            0
        )
        .is_err()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn diff_reports_header_schema_and_values() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = (dir.join("a.mldf"), dir.join("b.mldf"), dir.join("c.mldf"));
    write(&a, 20, opts(), None);
    write(
        &b,
        20,
        WriterOptions {
            compressed: true,
            layout: Layout::A { num_samples: 20 },
            ..opts()
        },
        None,
    );
    write(&c, 20, opts(), Some(7));
    let (ra, rb, rc) = (
        Reader::open(&a).unwrap(),
        Reader::open(&b).unwrap(),
        Reader::open(&c).unwrap(),
    );
    assert!(
        diff(
            &ra,
            &ra,
            DiffOptions {
                content: true,
                max_values: 10
            }
        )
        .unwrap()
        .is_empty()
    );
    let d = diff(
        &ra,
        &rb,
        DiffOptions {
            content: true,
            max_values: 10,
        },
    )
    .unwrap();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d.iter()
            .all(|x| matches!(x, Difference::Header("flags" | "layout", ..)))
    );
    let d = diff(
        &ra,
        &rc,
        DiffOptions {
            content: true,
            max_values: 10,
        },
    )
    .unwrap();
    assert_eq!(
        d,
        vec![Difference::Value(7, "id".into(), "7".into(), "-1".into())]
    );
    assert!(
        diff(
            &ra,
            &rc,
            DiffOptions {
                content: false,
                max_values: 10
            }
        )
        .unwrap()
        .is_empty(),
        "content only on request"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
