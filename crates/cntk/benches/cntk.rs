//! Criterion benches: CTF → CBF conversion and chunk decoding
//! (`cargo xtask bench cntk` prints the full table with the targets).

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_cntk::ctf::{StreamSpec, ctf_to_cbf};
use dataformats_cntk::{Chunking, ElemType, Reader, StreamKind};

fn text() -> String {
    let mut s = String::new();
    let mut x = 1u64;
    for q in 0..2000 {
        for _ in 0..10 {
            s.push_str(&format!("{q} |f"));
            for _ in 0..32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push_str(&format!(" {:.5}", (x % 100_000) as f64 / 1e5));
            }
            s.push_str(&format!(" |l {}:1\n", x % 10));
        }
    }
    s
}

fn bench(c: &mut Criterion) {
    let t = text();
    let specs = [
        StreamSpec {
            name: "f".into(),
            alias: "f".into(),
            kind: StreamKind::Dense,
            dim: 32,
        },
        StreamSpec {
            name: "l".into(),
            alias: "l".into(),
            kind: StreamKind::Sparse,
            dim: 10,
        },
    ];
    let dir = std::env::temp_dir().join(format!("df-cntk-crit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("b.bin");
    let convert = |threads: usize| {
        ctf_to_cbf(
            t.as_bytes(),
            &specs,
            ElemType::F32,
            Chunking::Target(1 << 20),
            threads,
            &out,
            |_| {},
        )
        .unwrap()
    };
    // The read benches read this file whichever benches a filter selects.
    convert(1);
    let mut g = c.benchmark_group("cntk");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(t.len() as u64));
    for (name, threads) in [("ctf_to_cbf", 1), ("ctf_to_cbf_2_threads", 2)] {
        g.bench_function(name, |b| b.iter(|| convert(threads)));
    }
    let r = Reader::open(&out).unwrap();
    let dense_bytes: u64 = 2000 * 10 * 32 * 4;
    g.throughput(Throughput::Bytes(dense_bytes));
    g.bench_function("read_all_chunks", |b| {
        b.iter(|| {
            for i in 0..r.chunks().len() {
                std::hint::black_box(r.read_chunk(i).unwrap());
            }
        })
    });
    // SAFETY: the bench owns the file and does not change it while mapped.
    let mapped = Reader::with_options(
        unsafe { dataformats_core::Source::map(&out) }.unwrap(),
        dataformats_core::ReadOptions::default(),
    )
    .unwrap();
    g.bench_function("read_all_chunks_into_caller_buffer", |b| {
        let mut buf = Vec::new();
        b.iter(|| {
            for i in 0..mapped.chunks().len() {
                let view = mapped.chunk_view(i).unwrap();
                for q in 0..view.num_sequences() {
                    if let Some(dataformats_cntk::RecordView::Dense(d)) = view.record(0, q) {
                        buf.resize(d.len(), 0f32);
                        d.read_f32_into(&mut buf).unwrap();
                        std::hint::black_box(&buf);
                    }
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
