//! Throughput of the core codecs and checksums, with memcpy as the baseline.
//!
//! `cargo bench -p dataformats-core`; compare each decoder's bytes/s with the
//! `memcpy` line of the same run.

#![allow(missing_docs, clippy::expect_used, clippy::cast_possible_truncation)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_core::ChecksumKind;
use dataformats_core::codec::{self, BloscCompressor, BloscParams, Codec, Shuffle, blosc};

fn payload() -> Vec<u8> {
    // 4 MiB of slowly varying f32 values: compressible like real feature data.
    (0..(1u32 << 20))
        .flat_map(|i| ((i / 17) as f32 * 0.25).to_le_bytes())
        .collect()
}

fn decode(c: &mut Criterion) {
    let data = payload();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(data.len() as u64));
    let mut out = vec![0u8; data.len()];
    g.bench_function("memcpy", |b| {
        b.iter(|| out.copy_from_slice(black_box(&data)));
    });
    for codec in Codec::ALL {
        let packed = codec::compress(codec, &data, None).expect("compress");
        g.bench_function(codec.name(), |b| {
            b.iter(|| codec::decompress_into(codec, black_box(&packed), &mut out).expect("decode"));
        });
    }
    for comp in [
        BloscCompressor::BloscLz,
        BloscCompressor::Lz4,
        BloscCompressor::Zstd,
    ] {
        let chunk =
            blosc::compress(&data, &BloscParams::new(comp, 5, Shuffle::Byte, 4)).expect("blosc");
        g.bench_function(format!("blosc-{comp}"), |b| {
            b.iter(|| blosc::decompress_into(black_box(&chunk), &mut out, 1).expect("decode"));
        });
    }
    g.finish();
}

fn checksums(c: &mut Criterion) {
    let data = payload();
    let mut g = c.benchmark_group("checksum");
    g.throughput(Throughput::Bytes(data.len() as u64));
    for kind in ChecksumKind::ALL {
        g.bench_function(kind.name(), |b| b.iter(|| kind.digest(black_box(&data))));
    }
    g.finish();
}

criterion_group!(benches, decode, checksums);
criterion_main!(benches);
