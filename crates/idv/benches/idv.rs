//! Criterion benches: scanning a Single column, deflate and uncompressed.

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_idv::{
    ColumnSpec, ColumnType, Compression, ItemType, Reader, Values, Writer, WriterOptions,
};

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("df-idv-crit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = 1 << 20;
    let mut g = c.benchmark_group("idv");
    g.throughput(Throughput::Bytes(rows as u64 * 4));
    for (name, compression) in [
        ("deflate", Compression::Deflate),
        ("none", Compression::None),
    ] {
        let p = dir.join(format!("{name}.idv"));
        let mut w = Writer::create(
            &p,
            vec![ColumnSpec::new("x", ColumnType::Scalar(ItemType::F32))],
            WriterOptions {
                compression,
                ..WriterOptions::default()
            },
        )
        .unwrap();
        w.write_batch(&[Values::F32(
            (0..rows)
                .map(|i| ((i % 1000) as f32 * 0.01).sin())
                .collect(),
        )])
        .unwrap();
        w.finish().unwrap();
        // SAFETY: the bench owns the file and does not change it while mapped.
        let src = unsafe { dataformats_core::Source::map(&p) }.unwrap();
        let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
        let (mut out, mut scratch) = (Vec::<f32>::new(), Vec::new());
        g.bench_function(format!("scan_f32_{name}"), |b| {
            b.iter(|| {
                for k in 0..r.block_count() {
                    r.read_block_into(0, k, &mut out, &mut scratch).unwrap();
                    std::hint::black_box(&out);
                }
            })
        });
    }
    g.finish();
    std::fs::remove_dir_all(&dir).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
