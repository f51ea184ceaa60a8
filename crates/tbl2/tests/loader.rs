//! The loader: batches, seeded shuffles, shards and filters.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;

use dataformats_tbl2::{
    Compression, Loader, LoaderOptions, Reader, SampleFormat, SampleInfo, Writer,
};

fn file(n: usize) -> Reader {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-tbl-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("l{n}.tbl"));
    let mut w = Writer::create(&p, Compression::Lz4).unwrap();
    for i in 0..n {
        let side = if i % 3 == 0 { 224 } else { 64 };
        w.add_sample(
            &vec![(i % 251) as u8; 10 + i],
            SampleInfo {
                format: SampleFormat::RAW_U8,
                width: side,
                height: side,
            },
        )
        .unwrap();
    }
    w.finish().unwrap();
    Reader::open(&p).unwrap()
}

#[test]
fn batches_cover_every_sample_once_in_order() {
    let r = file(50);
    let batches: Vec<_> = Loader::new(&r, &LoaderOptions::default().batch_size(16))
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        batches.iter().map(|b| b.indices.len()).collect::<Vec<_>>(),
        vec![16, 16, 16, 2]
    );
    let all: Vec<usize> = batches.iter().flat_map(|b| b.indices.clone()).collect();
    assert_eq!(all, (0..50).collect::<Vec<_>>());
    assert_eq!(batches[1].samples[0], vec![16u8; 26]);
    let dropped: Vec<_> =
        Loader::new(&r, &LoaderOptions::default().batch_size(16).drop_last(true)).collect();
    assert_eq!(dropped.len(), 3);
}

#[test]
fn shuffles_are_seeded_and_per_epoch() {
    let r = file(100);
    let order = |seed, epoch| -> Vec<usize> {
        Loader::new(
            &r,
            &LoaderOptions::default().batch_size(7).shuffle(seed, epoch),
        )
        .flat_map(|b| b.unwrap().indices)
        .collect()
    };
    let a = order(42, 0);
    assert_eq!(a, order(42, 0), "same seed, same order");
    assert_ne!(a, order(42, 1), "a new epoch reshuffles");
    assert_ne!(a, order(43, 0));
    assert_ne!(a, (0..100).collect::<Vec<_>>());
    assert_eq!(
        a.iter().copied().collect::<BTreeSet<_>>(),
        (0..100).collect()
    );
}

#[test]
fn shards_partition_the_data() {
    let r = file(101);
    let mut seen = BTreeSet::new();
    for rank in 0..4 {
        let l = Loader::new(&r, &LoaderOptions::default().shuffle(7, 3).shard(rank, 4));
        assert!(l.len() == 25 || l.len() == 26);
        for b in l {
            for i in b.unwrap().indices {
                assert!(seen.insert(i), "sample {i} served twice");
            }
        }
    }
    assert_eq!(seen.len(), 101);
}

#[test]
fn filters_read_only_the_index() {
    let r = file(30);
    let l = Loader::new(
        &r,
        &LoaderOptions::default().filter(|e| e.width == 224 && e.height == 224),
    );
    let got: Vec<usize> = l.flat_map(|b| b.unwrap().indices).collect();
    assert_eq!(got, (0..30).filter(|i| i % 3 == 0).collect::<Vec<_>>());
    assert_eq!(r.filter_by_dimensions(224, 224), got);
}
