//! Every valid vector rewritten by our writer reads back to the same values
//! (canonical hashes of every live column and annotation), with and without
//! compression and with other block sizes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use dataformats_idv::{ColumnSpec, Compression, Reader, Writer, WriterOptions};

#[test]
fn every_valid_vector_survives_our_writer() {
    let vectors = common::valid_vectors();
    if vectors.is_empty() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-idv-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = 0;
    for p in &vectors {
        let r = Reader::open(p).unwrap();
        let live: Vec<usize> = (0..r.columns().len())
            .filter(|&i| !r.columns()[i].is_dead())
            .collect();
        let specs: Vec<ColumnSpec> = live
            .iter()
            .map(|&i| {
                let c = &r.columns()[i];
                let mut s = ColumnSpec::new(c.name.clone(), c.ty().unwrap().clone());
                for a in &c.annotations {
                    if let (Some(t), Some(v)) = (&a.codec.ty, &a.value) {
                        s = s.annotation(a.kind.clone(), t.clone(), v.clone());
                    }
                }
                s
            })
            .collect();
        let data: Vec<_> = live.iter().map(|&i| r.read_column(i).unwrap()).collect();
        for (compression, rpb) in [(Compression::Deflate, None), (Compression::None, Some(3))] {
            let out = dir.join("x.idv");
            let mut w = Writer::create(
                &out,
                specs.clone(),
                WriterOptions {
                    compression,
                    rows_per_block: rpb,
                    level: 6,
                },
            )
            .unwrap();
            if live.is_empty() {
                w.add_empty_rows(r.len()).unwrap();
            } else {
                w.write_batch(&data).unwrap();
            }
            w.finish().unwrap();
            let back = Reader::open(&out).unwrap();
            back.validate().unwrap();
            assert_eq!(back.len(), r.len(), "{}", p.display());
            assert_eq!(back.columns().len(), live.len());
            for (k, &i) in live.iter().enumerate() {
                let (a, b) = (&r.columns()[i], &back.columns()[k]);
                let ty = a.ty().unwrap();
                assert_eq!(b.ty(), Some(ty));
                assert_eq!(
                    common::hash(ty, &back.read_column(k).unwrap()),
                    common::hash(ty, &data[k]),
                    "{} column {}",
                    p.display(),
                    a.name
                );
                let live_ann: Vec<_> = a.annotations.iter().filter(|x| x.value.is_some()).collect();
                assert_eq!(b.annotations.len(), live_ann.len());
                for (x, y) in live_ann.iter().zip(&b.annotations) {
                    assert_eq!(x.kind, y.kind);
                    let t = x.codec.ty.as_ref().unwrap();
                    assert_eq!(
                        common::hash(t, x.value.as_ref().unwrap()),
                        common::hash(t, y.value.as_ref().unwrap())
                    );
                }
            }
        }
        files += 1;
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(files >= 50, "only {files} vectors");
}
