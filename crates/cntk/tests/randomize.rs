//! Randomization and minibatches over a file we write.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;

use dataformats_cntk::randomize::{Mt19937_64, chunk_plan, sweep_order};
use dataformats_cntk::{
    BatchSize, Chunking, ElemType, Minibatches, Reader, ReaderConfig, RecordData, StreamDesc,
    StreamKind, Window, Writer,
};

fn file() -> Reader {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-rand-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("r.bin");
    let streams = [StreamDesc {
        name: "x".into(),
        kind: StreamKind::Dense,
        elem: ElemType::F32,
        dim: 1,
    }];
    // Small chunks: 5 sequences of 1..=4 samples each.
    let mut w = Writer::create(&p, &streams, Chunking::Target(40)).unwrap();
    for q in 0..120u32 {
        let len = 1 + q % 4;
        let vals: Vec<f64> = (0..len).map(|_| f64::from(q)).collect();
        w.add_sequence(&[RecordData::Dense {
            samples: len,
            values: &vals,
        }])
        .unwrap();
    }
    w.finish().unwrap();
    Reader::open(&p).unwrap()
}

#[test]
fn every_sweep_serves_every_sequence_once_deterministically() {
    let r = file();
    assert!(r.chunks().len() > 10);
    let cfg = ReaderConfig::default().seed(7).window(Window::Chunks(4));
    let a = sweep_order(&r, &cfg, 0);
    assert_eq!(a.len(), 120);
    assert_eq!(a.iter().copied().collect::<BTreeSet<_>>().len(), 120);
    assert_eq!(
        a,
        sweep_order(&r, &cfg, 0),
        "same seed and sweep, same order"
    );
    assert_ne!(a, sweep_order(&r, &cfg, 1), "each sweep is re-randomized");
    assert_eq!(
        sweep_order(&r, &cfg, 1),
        sweep_order(&r, &cfg.clone().seed(8), 0),
        "sweep k uses seed + k"
    );
    let plain = sweep_order(&r, &ReaderConfig::default().no_randomize(), 0);
    assert!(
        plain.windows(2).all(|w| w[0] < w[1]),
        "file order without randomization"
    );
    assert_ne!(a, plain);
}

#[test]
fn minibatches_by_samples_and_sequences_with_aliases() {
    let r = file();
    let cfg = ReaderConfig::default()
        .no_randomize()
        .alias("features", "x");
    let mb = Minibatches::new(&r, &cfg, 0, BatchSize::Samples(10)).unwrap();
    assert_eq!(mb.stream_names(), ["features"]);
    let batches: Vec<_> = mb.map(Result::unwrap).collect();
    let total: u32 = batches.iter().flatten().map(|s| s.length).sum();
    assert_eq!(total, (0..120u32).map(|q| 1 + q % 4).sum::<u32>());
    for b in &batches[..batches.len() - 1] {
        let n: u32 = b.iter().map(|s| s.length).sum();
        let without_last: u32 = b[..b.len() - 1].iter().map(|s| s.length).sum();
        assert!(
            n >= 10 && without_last < 10,
            "closed as soon as 10 samples are reached"
        );
    }
    let seqs: Vec<_> = Minibatches::new(
        &r,
        &ReaderConfig::default().seed(3),
        0,
        BatchSize::Sequences(16),
    )
    .unwrap()
    .map(Result::unwrap)
    .collect();
    assert_eq!(
        seqs.iter().map(Vec::len).collect::<Vec<_>>(),
        [vec![16; 7], vec![8]].concat()
    );
    // Values travel with their sequence: sequence q holds the value q.
    for s in seqs.iter().flatten() {
        let q = r.chunks()[..s.chunk]
            .iter()
            .map(|c| c.num_sequences as usize)
            .sum::<usize>()
            + s.index;
        match &s.records[0] {
            dataformats_cntk::Record::Dense { values, .. } => {
                assert!(values.iter().all(|&v| v == q as f64))
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        Minibatches::new(
            &r,
            &ReaderConfig::default().alias("a", "nope"),
            0,
            BatchSize::Sequences(1)
        )
        .is_err()
    );
}

/// CNTK's own post-condition: the sequence served at each position comes
/// from a chunk inside the window of the chunk occupying that position.
#[test]
fn every_sequence_stays_inside_its_positions_window() {
    let r = file();
    for (window, seed) in [
        (Window::Chunks(1), 0u64),
        (Window::Chunks(3), 11),
        (Window::Chunks(128), 5),
        (Window::Samples(100), 2),
        (Window::Samples(1000), 9),
    ] {
        let cfg = ReaderConfig::default().seed(seed).window(window);
        for sweep in 0..3 {
            let (perm, win) = chunk_plan(&r, &cfg, sweep);
            let mut pos_of_file_chunk = vec![0; perm.len()];
            for (p, &c) in perm.iter().enumerate() {
                pos_of_file_chunk[c] = p;
            }
            let order = sweep_order(&r, &cfg, sweep);
            let mut t = 0;
            let mut moved = 0;
            for (p, &c) in perm.iter().enumerate() {
                for _ in 0..r.chunks()[c].num_sequences {
                    let src = pos_of_file_chunk[order[t].0];
                    assert!(
                        win[p].0 <= src && src < win[p].1 && win[p].0 <= p && p < win[p].1,
                        "{window:?} seed {seed} sweep {sweep}: position {t} in chunk position {p} \
                         window {:?} serves a sequence of chunk position {src}",
                        win[p]
                    );
                    moved += usize::from(src != p);
                    t += 1;
                }
            }
            assert_eq!(t, order.len());
            if window == Window::Chunks(1) {
                assert_eq!(
                    moved, 0,
                    "a one-chunk window keeps sequences in their chunk"
                );
            } else {
                assert!(moved > 0, "{window:?}: sequences cross chunks");
            }
        }
    }
}

#[test]
fn chunk_shuffle_uses_the_low_32_bits_of_the_seed() {
    let r = file();
    let n = r.chunks().len();
    let cfg = |s: u64| ReaderConfig::default().seed(s).window(Window::Chunks(4));
    let (a, _) = chunk_plan(&r, &cfg(3), 0);
    let (b, _) = chunk_plan(&r, &cfg(3 + (1 << 32)), 0);
    assert_eq!(a, b);
    // The sequence generator takes the whole seed.
    assert_ne!(
        sweep_order(&r, &cfg(3), 0),
        sweep_order(&r, &cfg(3 + (1 << 32)), 0)
    );
    // The shuffle itself: position i swapped with mt19937_64() mod n, in order.
    let mut rng = Mt19937_64::new(3);
    let mut expect: Vec<usize> = (0..n).collect();
    for i in 0..n {
        let j = (rng.next_u64() % n as u64) as usize;
        expect.swap(i, j);
    }
    assert_eq!(a, expect);
}
