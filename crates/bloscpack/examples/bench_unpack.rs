//! The Bloscpack speed table (`cargo xtask bench bloscpack` runs this in
//! release mode): whole-file unpack of a ~200 MB float64 file against raw
//! c-blosc decompression of the same chunks and a plain memcpy, all measured
//! in this one run (median of several runs each).
//!
//! `cargo run --release -p dataformats-bloscpack --features rayon --example bench_unpack [-- MB]`
//! `... --example bench_unpack -- --pack-memory GB` packs a GB-sized file
//! through the streaming writer and reports the peak resident memory.

#![allow(clippy::indexing_slicing, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use dataformats_bloscpack::{ReadOptions, Reader, WriteOptions, pack_bytes};
use dataformats_core::codec::blosc::{self, BloscCompressor};
use dataformats_core::{Limits, Source};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds for `f`, median of `runs` after one warm-up.
fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn random_walk(n: usize) -> Vec<u8> {
    // xorshift64*: deterministic, no dependency.
    let mut s: u64 = 12345;
    let mut x = 0f64;
    let mut out = Vec::with_capacity(n * 8);
    for _ in 0..n {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let r = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        x += r - 0.5;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

fn arange(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f64).to_le_bytes()).collect()
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn pack_memory(gb: u64) -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("df-pack-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let input = dir.join("input.raw");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input)?);
        let block = random_walk(1 << 17); // 1 MiB
        for _ in 0..gb * 1024 {
            f.write_all(&block)?;
        }
    }
    let before = peak_rss_kib().unwrap_or(0);
    let t = Instant::now();
    dataformats_bloscpack::pack_file(&input, dir.join("out.blp"), None, &WriteOptions::default())?;
    let secs = t.elapsed().as_secs_f64();
    let after = peak_rss_kib().unwrap_or(0);
    let out_len = std::fs::metadata(dir.join("out.blp"))?.len();
    println!("packed {gb} GiB (1 MiB chunks, defaults) in {secs:.1} s -> {out_len} bytes");
    println!(
        "peak RSS before packing {} MiB, after {} MiB",
        before / 1024,
        after / 1024
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--pack-memory") {
        let gb = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
        return pack_memory(gb);
    }
    let mb: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(200);
    let n = mb * 1_000_000 / 8;
    let runs = 7;
    println!(
        "bloscpack unpack, {mb} MB of float64 ({n} values), median of {runs} runs, 1 MiB chunks, adler32 digests"
    );
    println!(
        "threads available: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!();
    println!(
        "{:<12} {:<8} {:>6} | {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8} {:>8}",
        "data",
        "codec",
        "ratio",
        "memcpy",
        "raw blosc",
        "unpack",
        "+digests",
        "parallel",
        "unp/raw",
        "par/raw"
    );
    let mut validate_lines = Vec::new();
    for (name, data) in [("random walk", random_walk(n)), ("arange", arange(n))] {
        for codec in [BloscCompressor::BloscLz, BloscCompressor::Lz4] {
            let file = pack_bytes(&data, None, &WriteOptions::default().codec(codec))?;
            let ratio = data.len() as f64 / file.len() as f64;
            let fast = Reader::with_options(
                Source::from_vec(file.clone()),
                ReadOptions::default()
                    .verify_checksums(false)
                    .limits(Limits::none()),
            )?;
            let checked = Reader::with_options(
                Source::from_vec(file.clone()),
                ReadOptions::default().limits(Limits::none()),
            )?;
            let mut out = vec![0u8; data.len()];
            let t_memcpy = time(runs, || out.copy_from_slice(black_box(&data)));
            // Raw c-blosc over the same chunks, each straight into its place.
            let chunks: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = fast
                .chunks()
                .iter()
                .map(|c| {
                    let s = c.offset as usize;
                    (
                        s..s + c.blosc.cbytes as usize,
                        c.payload_start as usize..(c.payload_start + c.nbytes()) as usize,
                    )
                })
                .collect();
            let t_raw = time(runs, || {
                for (src, dst) in &chunks {
                    blosc::decompress_into(&file[src.clone()], &mut out[dst.clone()], 1)
                        .expect("raw decode");
                }
            });
            let t_unpack = time(runs, || fast.read_all_into(&mut out).expect("unpack"));
            let t_checked = time(runs, || checked.read_all_into(&mut out).expect("unpack"));
            let t_par = time(runs, || {
                fast.read_all_into_parallel(&mut out).expect("parallel")
            });
            assert_eq!(out, data);
            // `validate` (what `dataformats validate` runs: every chunk
            // decoded, every digest checked) against the fastest read with
            // the same checks, on one thread or on every core.
            let t_checked_par = time(runs, || {
                checked.read_all_into_parallel(&mut out).expect("parallel")
            });
            let t_validate = time(runs, || checked.validate().expect("validate"));
            validate_lines.push(format!(
                "{name} {}: validate {t_validate:.3} s, fastest checked read {:.3} s: \
                 validate at {:.2}x the read's speed (target 0.7x)",
                codec.name(),
                t_checked.min(t_checked_par),
                t_checked.min(t_checked_par) / t_validate
            ));
            let gbps = |t: f64| data.len() as f64 / t / 1e9;
            println!(
                "{:<12} {:<8} {:>6.1} | {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s | {:>7.0}% {:>7.0}%",
                name,
                codec.name(),
                ratio,
                gbps(t_memcpy),
                gbps(t_raw),
                gbps(t_unpack),
                gbps(t_checked),
                gbps(t_par),
                100.0 * t_raw / t_unpack,
                100.0 * t_raw / t_par
            );
        }
    }
    println!();
    for l in validate_lines {
        println!("{l}");
    }
    println!(
        "unpack: Reader::read_all_into, one thread, digests off; +digests: digests checked; parallel: rayon over chunks."
    );
    println!(
        "reference (research note, same machine class): python-bloscpack 1.2-1.5 GB/s, raw blosc 2.7-4.1 GB/s, memcpy ~12 GB/s on the random walk."
    );
    Ok(())
}
