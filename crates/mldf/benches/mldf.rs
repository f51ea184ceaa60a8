//! Criterion benches: random-order reads and writing.

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_core::Source;
use dataformats_mldf::{Dtype, Field, FieldType, FieldValue, Reader, Value, Writer, WriterOptions};

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("df-mldf-crit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("b.mldf");
    let fields = vec![
        Field::new("label", FieldType::Int),
        Field::new(
            "x",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![64],
            },
        ),
    ];
    let arr: Vec<u8> = (0..64).flat_map(|k| (k as f32).to_le_bytes()).collect();
    let n = 100_000u64;
    let mut g = c.benchmark_group("mldf");
    g.throughput(Throughput::Bytes(n * (256 + 8)));
    g.sample_size(10);
    g.bench_function("write_100k_samples", |b| {
        b.iter(|| {
            let mut w = Writer::create(&p, fields.clone(), WriterOptions::default()).unwrap();
            for i in 0..n {
                w.add_sample(&[FieldValue::Int(i as i64), FieldValue::NdArray(&arr)])
                    .unwrap();
            }
            w.finish().unwrap();
        })
    });
    // SAFETY: the bench owns the file and does not change it while mapped.
    let r = Reader::with_options(
        unsafe { Source::map(&p) }.unwrap(),
        dataformats_core::ReadOptions::default(),
    )
    .unwrap();
    g.throughput(Throughput::Elements(n));
    g.bench_function("random_int_reads", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            let mut i = 0u64;
            for _ in 0..n {
                i = (i + 7919) % n;
                if let Value::Int(x) = r.value(i, 0).unwrap() {
                    sum = sum.wrapping_add(x);
                }
            }
            std::hint::black_box(sum)
        })
    });
    g.finish();
    std::fs::remove_dir_all(&dir).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
