//! The TBL v2 speed table (`cargo xtask bench tbl2` runs this in release
//! mode), on the same kinds of data as the research note's TurboLoader
//! numbers: ~100 MB of small incompressible samples (JPEG-like, 22,600 of
//! them) and ~100 MB of compressible ones (posterised-BMP-like, 3,600).
//!
//! `--convert-memory GB` converts a generated tar of that size and reports
//! the peak resident memory. `--reads FILE ORDER [--hash]` reads the
//! samples of FILE in the order of the indices in ORDER (one per line) with
//! CRC-16 checks, once to warm up and once timed, and prints the seconds of
//! the timed pass (or, with `--hash`, the SHA-256 of the samples in that
//! order): `cargo xtask bench --compare tbl2` runs it against TurboLoader.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::hint::black_box;
use std::io::Write;
use std::time::Instant;

use dataformats_core::Source;
use dataformats_tbl2::Compression;
use dataformats_tbl2::tar::convert_tar_file;
use dataformats_tbl2::{ReadOptions, Reader};

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// A tar of `n` members made by `make`.
fn tar(path: &std::path::Path, n: usize, ext: &str, mut make: impl FnMut(usize) -> Vec<u8>) -> u64 {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut total = 0;
    for i in 0..n {
        let data = make(i);
        total += data.len() as u64;
        let mut h = [0u8; 512];
        let name = format!("s/{i:07}.{ext}");
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
        h[156] = b'0';
        f.write_all(&h).unwrap();
        f.write_all(&data).unwrap();
        f.write_all(&vec![0u8; (512 - data.len() % 512) % 512])
            .unwrap();
    }
    f.write_all(&[0u8; 1024]).unwrap();
    total
}

fn jpeg_like(seed: &mut u64, i: usize) -> Vec<u8> {
    let len = 3000 + (rng(seed) % 3000) as usize;
    let mut v: Vec<u8> = (0..len).map(|_| rng(seed) as u8).collect();
    // A real SOF0 header so dimensions are sniffed: 64..128 px.
    let side = 64 + (i % 64) as u16;
    v[..11].copy_from_slice(&[
        0xFF,
        0xD8,
        0xFF,
        0xC0,
        0,
        17,
        8,
        (side >> 8) as u8,
        side as u8,
        (side >> 8) as u8,
        side as u8,
    ]);
    v
}

fn bmp_like(seed: &mut u64) -> Vec<u8> {
    let (w, h) = (96usize, 96usize);
    let mut v = vec![0u8; 54 + w * h * 3];
    v[..2].copy_from_slice(b"BM");
    v[18..22].copy_from_slice(&(w as u32).to_le_bytes());
    v[22..26].copy_from_slice(&(h as u32).to_le_bytes());
    let mut c = rng(seed) as u8 & 0xE0;
    for (k, b) in v[54..].iter_mut().enumerate() {
        if k % 97 == 0 {
            c = rng(seed) as u8 & 0xE0; // posterised: few levels, long runs
        }
        *b = c;
    }
    v
}

/// Alternating CRC-on/CRC-off passes per data set.
const PAIRS: usize = 9;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

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

use dataformats_core::testing::peak_rss_mib;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::env::temp_dir().join(format!("df-tbl2-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if args.first().map(String::as_str) == Some("--reads") {
        let r = Reader::open(&args[1]).unwrap();
        let order: Vec<usize> = std::fs::read_to_string(&args[2])
            .unwrap()
            .split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect();
        let mut buf = Vec::new();
        if args.get(3).map(String::as_str) == Some("--hash") {
            let mut h = dataformats_core::ChecksumKind::Sha256.hasher();
            for &i in &order {
                r.read_sample_into(i, &mut buf).unwrap();
                h.update(&buf);
            }
            println!("{}", h.finish().to_hex());
            return;
        }
        let secs = time(1, || {
            for &i in &order {
                r.read_sample_into(i, &mut buf).unwrap();
                black_box(&buf);
            }
        });
        println!("{secs}");
        return;
    }
    if args.first().map(String::as_str) == Some("--convert-memory") {
        let gb: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
        let mut seed = 7u64;
        let t = dir.join("big.tar");
        let n = gb * 1024 * 1024 * 1024 / 4500;
        let bytes = tar(&t, n, "jpg", |i| jpeg_like(&mut seed, i));
        let before = peak_rss_mib();
        let start = Instant::now();
        let r = convert_tar_file(&t, dir.join("big.tbl"), Compression::Lz4, 2, |_| {}).unwrap();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "converted a {:.2} GB tar ({} samples, {bytes} sample bytes) in {secs:.1} s, 2 workers",
            std::fs::metadata(&t).unwrap().len() as f64 / 1e9,
            r.samples
        );
        println!(
            "peak RSS before converting {before} MiB, after {} MiB",
            peak_rss_mib()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    println!(
        "TBL v2, median of 5 runs; TurboLoader 2.39 on this machine class in brackets (research note §5)"
    );
    println!();
    println!(
        "{:<10} {:>7} {:>8} | {:>22} {:>22} {:>22} {:>22}",
        "data",
        "samples",
        "MB",
        "random, CRC on",
        "random, CRC off",
        "tar->tbl 1 worker",
        "tar->tbl 2 workers"
    );
    let mut seed = 42u64;
    let mut ratio_lines = Vec::new();
    let sets: Vec<(&str, usize, &str, [&str; 4])> = vec![
        (
            "jpeg-like",
            22_600,
            "jpg",
            ["89 MB/s", "3996 MB/s", "13251/s", "13251/s"],
        ),
        (
            "bmp-like",
            3_600,
            "bmp",
            ["96 MB/s", "1465 MB/s", "1715/s", "1715/s"],
        ),
    ];
    for (name, n, ext, refs) in sets {
        let t = dir.join(format!("{name}.tar"));
        let total = if ext == "jpg" {
            tar(&t, n, ext, |i| jpeg_like(&mut seed, i))
        } else {
            tar(&t, n, ext, |_| bmp_like(&mut seed))
        };
        let out = dir.join(format!("{name}.tbl"));
        let conv1 = time(3, || {
            convert_tar_file(&t, &out, Compression::Lz4, 1, |_| {}).unwrap();
        });
        let conv2 = time(3, || {
            convert_tar_file(&t, &out, Compression::Lz4, 2, |_| {}).unwrap();
        });
        // SAFETY: the bench owns this file and does not modify it while mapped.
        let src = unsafe { Source::map(&out) }.unwrap();
        let on = Reader::with_options(src.clone(), ReadOptions::default()).unwrap();
        let off =
            Reader::with_options(src, ReadOptions::default().verify_checksums(false)).unwrap();
        let mut order: Vec<usize> = (0..on.len()).collect();
        let mut s = 99u64;
        for i in (1..order.len()).rev() {
            order.swap(i, (rng(&mut s) % (i as u64 + 1)) as usize);
        }
        let mut buf = Vec::new();
        let mut pass = |r: &Reader| {
            let t = Instant::now();
            for &i in &order {
                r.read_sample_into(i, &mut buf).unwrap();
                black_box(&buf);
            }
            t.elapsed().as_secs_f64()
        };
        pass(&on);
        pass(&off);
        // On and off alternate, so a change of load hits both alike.
        let (mut ons, mut offs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..PAIRS {
            let a = pass(&on);
            let b = pass(&off);
            ons.push(a);
            offs.push(b);
            ratios.push(b / a);
        }
        let (t_on, t_off) = (median(ons), median(offs));
        ratio_lines.push(format!(
            "{name}: CRC on / off {:.2} (median of {PAIRS} alternating pairs)",
            median(ratios)
        ));
        // `validate` (what `dataformats validate` runs: every sample
        // decoded and its CRC checked, on every core) against the fastest
        // read of every sample: in file order, CRC on.
        let in_order = time(5, || {
            for i in 0..on.len() {
                on.read_sample_into(i, &mut buf).unwrap();
                black_box(&buf);
            }
        });
        let validate = time(5, || on.validate().unwrap());
        ratio_lines.push(format!(
            "{name}: validate {validate:.3} s, every sample read in order {in_order:.3} s: \
             validate at {:.2}x the read's speed (target 0.7x)",
            in_order / validate
        ));
        let mb = total as f64 / 1e6;
        println!(
            "{:<10} {:>7} {:>8.1} | {:>9.0} MB/s ({:>8}) {:>9.0} MB/s ({:>9}) {:>9.0}/s ({:>7}) {:>9.0}/s ({:>7})",
            name,
            n,
            mb,
            mb / t_on,
            refs[0],
            mb / t_off,
            refs[1],
            n as f64 / conv1,
            refs[2],
            n as f64 / conv2,
            refs[3]
        );
    }
    println!();
    for l in ratio_lines {
        println!("{l}");
    }
    println!(
        "reads: read_sample_into over a random permutation (decoded bytes copied to a reused buffer), LZ4 on"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
