//! Criterion benches: Bloscpack unpack against raw c-blosc on the same
//! chunks (32 MB of float64 random walk; `cargo xtask bench bloscpack` runs
//! the full 200 MB table).

#![allow(missing_docs, clippy::expect_used, clippy::indexing_slicing)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataformats_bloscpack::{ReadOptions, Reader, WriteOptions, pack_bytes};
use dataformats_core::codec::blosc;
use dataformats_core::{Limits, Source};

fn data() -> Vec<u8> {
    let mut s: u64 = 12345;
    let mut x = 0f64;
    (0..4_000_000)
        .flat_map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            x += (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            x.to_le_bytes()
        })
        .collect()
}

fn unpack(c: &mut Criterion) {
    let d = data();
    let file = pack_bytes(&d, None, &WriteOptions::default()).expect("pack");
    let r = Reader::with_options(
        Source::from_vec(file.clone()),
        ReadOptions::default()
            .verify_checksums(false)
            .limits(Limits::none()),
    )
    .expect("open");
    let mut out = vec![0u8; d.len()];
    let mut g = c.benchmark_group("bloscpack_unpack");
    g.throughput(Throughput::Bytes(d.len() as u64));
    g.sample_size(20);
    g.bench_function("raw_blosc_same_chunks", |b| {
        b.iter(|| {
            for ch in r.chunks() {
                let s = ch.offset as usize;
                let src = &file[s..s + ch.blosc.cbytes as usize];
                let dst =
                    &mut out[ch.payload_start as usize..(ch.payload_start + ch.nbytes()) as usize];
                blosc::decompress_into(black_box(src), dst, 1).expect("decode");
            }
        });
    });
    g.bench_function("reader_read_all_into", |b| {
        b.iter(|| r.read_all_into(&mut out).expect("unpack"))
    });
    let checked = Reader::from_bytes(file.clone()).expect("open");
    g.bench_function("reader_with_digests", |b| {
        b.iter(|| checked.read_all_into(&mut out).expect("unpack"))
    });
    g.finish();
}

/// zlib chunks: c-blosc's own decode (zlib inflate, its SSE2 unshuffle)
/// against ours (libdeflate per split, the unshuffle in Rust).
fn unpack_zlib(c: &mut Criterion) {
    let d = data();
    let mut opts = WriteOptions::default();
    opts.codec = blosc::BloscCompressor::Zlib;
    let file = pack_bytes(&d, None, &opts).expect("pack");
    let r = Reader::from_bytes(file.clone()).expect("open");
    let chunks: Vec<(&[u8], std::ops::Range<usize>)> = r
        .chunks()
        .iter()
        .map(|ch| {
            let s = ch.offset as usize;
            (
                &file[s..s + ch.blosc.cbytes as usize],
                ch.payload_start as usize..(ch.payload_start + ch.nbytes()) as usize,
            )
        })
        .collect();
    let mut out = vec![0u8; d.len()];
    let mut g = c.benchmark_group("bloscpack_unpack_zlib");
    g.throughput(Throughput::Bytes(d.len() as u64));
    g.sample_size(10);
    g.bench_function("c_blosc", |b| {
        b.iter(|| {
            for (src, at) in &chunks {
                blosc::decompress_into_c_blosc(black_box(src), &mut out[at.clone()], 1)
                    .expect("decode");
            }
        });
    });
    g.bench_function("libdeflate_splits", |b| {
        b.iter(|| {
            for (src, at) in &chunks {
                blosc::decompress_into(black_box(src), &mut out[at.clone()], 1).expect("decode");
            }
        });
    });
    g.finish();
}

criterion_group!(benches, unpack, unpack_zlib);
criterion_main!(benches);
