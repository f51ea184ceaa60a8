//! Anything the writer accepts reads back identical, for any mix of dense
//! and sparse streams, element types and sequence lengths.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use dataformats_cntk::{
    Chunking, ElemType, Reader, Record, RecordData, StreamDesc, StreamKind, Writer,
};
use proptest::prelude::*;

fn stream() -> impl Strategy<Value = (bool, bool, u32)> {
    (any::<bool>(), any::<bool>(), 1u32..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn writer_round_trips(
        kinds in prop::collection::vec(stream(), 1..4),
        seqs in prop::collection::vec(prop::collection::vec((0u32..4, any::<i16>()), 1..4), 0..25),
        target in 0u64..400,
    ) {
        let streams: Vec<StreamDesc> = kinds
            .iter()
            .enumerate()
            .map(|(i, &(sparse, f64_, dim))| StreamDesc {
                name: format!("s{i}"),
                kind: if sparse { StreamKind::Sparse } else { StreamKind::Dense },
                elem: if f64_ { ElemType::F64 } else { ElemType::F32 },
                dim,
            })
            .collect();
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("df-cntk-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("p{}-{}.bin", kinds.len(), seqs.len()));
        let mut w = Writer::create(&p, &streams, Chunking::Target(target)).unwrap();
        let mut expected: Vec<Vec<Record>> = Vec::new();
        for seq in &seqs {
            let mut dense_vals: Vec<Vec<f64>> = Vec::new();
            let mut sparse_vals: Vec<Vec<Vec<(u32, f64)>>> = Vec::new();
            for (si, s) in streams.iter().enumerate() {
                let (k, v) = seq[si % seq.len()];
                let v = f64::from(v) / 8.0; // exact in f32 and f64
                dense_vals.push((0..k * s.dim).map(|j| v + f64::from(j)).collect());
                sparse_vals.push((0..k).map(|j| vec![(j % s.dim, v), ((j + 1) % s.dim, -v)]).collect());
            }
            let data: Vec<RecordData<'_>> = streams
                .iter()
                .enumerate()
                .map(|(si, s)| match s.kind {
                    StreamKind::Dense => RecordData::Dense { samples: (dense_vals[si].len() as u32) / s.dim, values: &dense_vals[si] },
                    StreamKind::Sparse => RecordData::Sparse(&sparse_vals[si]),
                })
                .collect();
            w.add_sequence(&data).unwrap();
            expected.push(
                streams
                    .iter()
                    .enumerate()
                    .map(|(si, s)| match s.kind {
                        StreamKind::Dense => Record::Dense { samples: (dense_vals[si].len() as u32) / s.dim, values: dense_vals[si].clone() },
                        StreamKind::Sparse => Record::Sparse {
                            samples: sparse_vals[si].len() as u32,
                            values: sparse_vals[si].iter().flatten().map(|e| e.1).collect(),
                            indices: sparse_vals[si].iter().flatten().map(|e| e.0).collect(),
                            sizes: sparse_vals[si].iter().map(|x| x.len() as u32).collect(),
                        },
                    })
                    .collect(),
            );
        }
        w.finish().unwrap();
        let r = Reader::open(&p).unwrap();
        r.validate().unwrap();
        let mut got: Vec<Vec<Record>> = Vec::new();
        for c in 0..r.chunks().len() {
            let ch = r.read_chunk(c).unwrap();
            for q in 0..ch.sequence_lengths.len() {
                got.push(ch.records.iter().map(|per| per[q].clone()).collect());
            }
        }
        if seqs.is_empty() {
            prop_assert_eq!(r.chunks().len(), 1, "empty input: one empty chunk");
        }
        prop_assert_eq!(got, expected);
    }
}
