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

/// Times each of `fs` once per round, the functions taking turns (the
/// order rotated each round), after one warm-up round; per function the
/// seconds of every round. Alternating keeps a drift of the machine's speed
/// (other load, a frequency change) out of the ratios between them.
fn rounds<const N: usize>(runs: usize, fs: &mut [&mut dyn FnMut(); N]) -> [Vec<f64>; N] {
    for f in fs.iter_mut() {
        f();
    }
    let mut secs: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    for r in 0..runs {
        for k in 0..N {
            let j = (k + r) % N;
            let t = Instant::now();
            fs[j]();
            secs[j].push(t.elapsed().as_secs_f64());
        }
    }
    secs
}

/// The median over rounds of `a[r] / b[r]`.
fn median_ratio(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(x, y)| x / y).collect())
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
    let runs = 11;
    println!(
        "bloscpack unpack, {mb} MB of float64 ({n} values), median of {runs} runs, 1 MiB chunks, adler32 digests"
    );
    println!(
        "threads available: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!();
    println!(
        "{:<12} {:<8} {:>6} | {:>10} {:>10} {:>10} {:>10} {:>10} | {:>8} {:>8} {:>8}",
        "data",
        "codec",
        "ratio",
        "memcpy",
        "raw blosc",
        "unpack",
        "+digests",
        "parallel",
        "unp/raw",
        "dig/raw",
        "par/raw"
    );
    let mut validate_lines = Vec::new();
    let mut digest_lines = Vec::new();
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
            let out = vec![0u8; data.len()];
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
            let out = std::cell::RefCell::new(out);
            // Raw c-blosc, one thread, chunk after chunk.
            let raw_decode = || {
                let mut out = out.borrow_mut();
                for (src, dst) in &chunks {
                    blosc::decompress_into(&file[src.clone()], &mut out[dst.clone()], 1)
                        .expect("raw decode");
                }
            };
            let [memcpy, raw, unpack, digests, par] = rounds(
                runs,
                &mut [
                    &mut || out.borrow_mut().copy_from_slice(black_box(&data)),
                    &mut || raw_decode(),
                    &mut || fast.read_all_into(&mut out.borrow_mut()).expect("unpack"),
                    &mut || {
                        checked
                            .read_all_into(&mut out.borrow_mut())
                            .expect("unpack")
                    },
                    &mut || {
                        fast.read_all_into_parallel(&mut out.borrow_mut())
                            .expect("parallel")
                    },
                ],
            );
            let (t_memcpy, t_raw, t_unpack, t_checked, t_par) = (
                median(memcpy.clone()),
                median(raw.clone()),
                median(unpack.clone()),
                median(digests.clone()),
                median(par.clone()),
            );
            assert!(*out.borrow() == data, "the unpacked bytes differ");
            // `validate` (what `dataformats validate` runs: every chunk
            // decoded, every digest checked) against the fastest read with
            // the same checks, on one thread or on every core.
            // Digests checked on every core (chunks hashed and decoded in
            // parallel, as `validate` and the CLI's conversions read), and
            // `validate` itself.
            let [checked_par, validate] = rounds(
                runs,
                &mut [
                    &mut || {
                        checked
                            .read_all_into_parallel(&mut out.borrow_mut())
                            .expect("parallel")
                    },
                    &mut || checked.validate().expect("validate"),
                ],
            );
            // The fastest checked read: one thread or every core, whichever
            // has the lower median.
            let fastest = if median(checked_par.clone()) < t_checked {
                &checked_par
            } else {
                &digests
            };
            let t_validate = median(validate.clone());
            validate_lines.push(format!(
                "{name} {}: validate {t_validate:.3} s, fastest checked read {:.3} s: \
                 validate at {:.2}x the read's speed (target 0.7x)",
                codec.name(),
                median(fastest.clone()),
                median_ratio(fastest, &validate)
            ));
            // Rounds of their own, so raw c-blosc runs again beside it.
            let [raw2, checked_par2] = rounds(
                runs,
                &mut [&mut || raw_decode(), &mut || {
                    checked
                        .read_all_into_parallel(&mut out.borrow_mut())
                        .expect("parallel")
                }],
            );
            digest_lines.push(format!(
                "{name} {}: unpack with digests / raw c-blosc: {:.0}% on one thread plus the \
                 hashing core, {:.0}% with chunks hashed and decoded on every core (target 95%)",
                codec.name(),
                100.0 * median_ratio(&raw, &digests),
                100.0 * median_ratio(&raw2, &checked_par2)
            ));
            let gbps = |t: f64| data.len() as f64 / t / 1e9;
            println!(
                "{:<12} {:<8} {:>6.1} | {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s {:>7.2} GB/s | {:>7.0}% {:>7.0}% {:>7.0}%",
                name,
                codec.name(),
                ratio,
                gbps(t_memcpy),
                gbps(t_raw),
                gbps(t_unpack),
                gbps(t_checked),
                gbps(t_par),
                100.0 * median_ratio(&raw, &unpack),
                100.0 * median_ratio(&raw, &digests),
                100.0 * median_ratio(&raw, &par)
            );
        }
    }
    println!();
    for l in digest_lines {
        println!("{l}");
    }
    for l in validate_lines {
        println!("{l}");
    }
    println!(
        "unpack: Reader::read_all_into, one thread, digests off; +digests: digests checked (hashed on a second core); \
         parallel: rayon over chunks.\nspeeds: medians of {runs} rounds; x/raw: medians of the per-round ratios (raw c-blosc's time over x's; \
         each round runs every variant once, in rotating order). Target for dig/raw: 95%."
    );
    println!(
        "reference (research note, same machine class): python-bloscpack 1.2-1.5 GB/s, raw blosc 2.7-4.1 GB/s, memcpy ~12 GB/s on the random walk."
    );
    Ok(())
}
