//! Criterion benches: random-access TBL v2 reads with and without CRC-16
//! verification, and the CRC-16 alone (`cargo xtask bench tbl2` prints the
//! full table against TurboLoader's numbers).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_core::{ChecksumKind, Source};
use dataformats_tbl2::{Compression, ReadOptions, Reader, SampleFormat, SampleInfo, Writer};

fn file() -> (std::path::PathBuf, u64) {
    let dir = std::env::temp_dir().join(format!("df-tbl2-crit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bench.tbl");
    let mut w = Writer::create(&p, Compression::Lz4).unwrap();
    let mut s = 1u64;
    let mut total = 0;
    for _ in 0..4000 {
        let n = 3000 + (s % 3000) as usize;
        let data: Vec<u8> = (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect();
        total += n as u64;
        w.add_sample(
            &data,
            SampleInfo {
                format: SampleFormat::JPEG,
                width: 64,
                height: 64,
            },
        )
        .unwrap();
    }
    w.finish().unwrap();
    (p, total)
}

fn reads(c: &mut Criterion) {
    let (p, total) = file();
    // SAFETY: the bench owns the file and does not change it while mapped.
    let src = unsafe { Source::map(&p) }.unwrap();
    let order: Vec<usize> = (0..4000).map(|i| (i * 2654435761usize) % 4000).collect();
    let mut g = c.benchmark_group("tbl2_random_reads");
    g.throughput(Throughput::Bytes(total));
    g.sample_size(20);
    for (name, verify) in [("crc16_on", true), ("crc16_off", false)] {
        let r = Reader::with_options(src.clone(), ReadOptions::default().verify_checksums(verify))
            .unwrap();
        let mut buf = Vec::new();
        g.bench_function(name, |b| {
            b.iter(|| {
                for &i in &order {
                    r.read_sample_into(i, &mut buf).unwrap();
                    black_box(&buf);
                }
            })
        });
    }
    g.finish();
    let data = vec![0x5au8; 1 << 20];
    let mut g = c.benchmark_group("crc16_modbus");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("table_driven", |b| {
        b.iter(|| ChecksumKind::Crc16Modbus.digest(black_box(&data)))
    });
    g.finish();
    // A sample's size: 256 buffers of 4 KiB, one digest each.
    let mut g = c.benchmark_group("crc16_modbus_4k");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("per_sample", |b| {
        b.iter(|| {
            for s in data.chunks(4096) {
                black_box(ChecksumKind::Crc16Modbus.digest(black_box(s)));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);
