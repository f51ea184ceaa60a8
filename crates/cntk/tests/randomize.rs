//! Randomization and minibatches over a file we write.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;

use dataformats_cntk::randomize::sweep_order;
use dataformats_cntk::{
    BatchSize, Chunking, ElemType, Minibatches, Reader, ReaderConfig, RecordData, StreamDesc,
    StreamKind, Window, Writer,
};

fn file() -> Reader {
    let dir = std::env::temp_dir().join(format!("df-cntk-rand-{}", std::process::id()));
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
