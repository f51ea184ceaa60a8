//! `cargo xtask bench idv`: IDV scan speeds against raw inflate and memcpy
//! on the same blocks, parallel block decode, and the cost of opening.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Instant;

use dataformats_core::codec;
use dataformats_idv::{
    ColumnSpec, ColumnType, Compression, ItemType, Reader, Values, Writer, WriterOptions,
};

fn best(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn write(path: &std::path::Path, rows: usize, compression: Compression, columns: usize) {
    let specs: Vec<ColumnSpec> = (0..columns)
        .map(|i| ColumnSpec::new(format!("x{i}"), ColumnType::Scalar(ItemType::F32)))
        .collect();
    let mut w = Writer::create(
        path,
        specs,
        WriterOptions {
            compression,
            rows_per_block: None,
            level: 6,
        },
    )
    .unwrap();
    let chunk = 1 << 16;
    let mut done = 0;
    while done < rows {
        let n = chunk.min(rows - done);
        // Smooth features with 16 bits of noise in the low mantissa: deflate
        // gets well under 2:1, as on real float columns.
        let col: Vec<f32> = (done..done + n)
            .map(|i| {
                let noise = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48;
                (i as f32 * 0.001).sin() + noise as f32 * 1e-6
            })
            .collect();
        let batch: Vec<Values> = (0..columns).map(|_| Values::F32(col.clone())).collect();
        w.write_batch(&batch).unwrap();
        done += n;
    }
    w.finish().unwrap();
}

fn main() {
    let dir = std::env::temp_dir().join(format!("df-idv-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = 64 << 20 >> 2; // 64 MiB of f32
    let mb = (rows * 4) as f64 / 1e6;
    println!("IDV, one Single column of {rows} rows ({mb:.0} MB), blocks of 8192 rows");
    for (name, compression) in [
        ("deflate", Compression::Deflate),
        ("none", Compression::None),
    ] {
        let p = dir.join(format!("{name}.idv"));
        write(&p, rows, compression, 1);
        // SAFETY: the bench owns the file and does not change it while mapped.
        let src = unsafe { dataformats_core::Source::map(&p) }.unwrap();
        let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
        let blocks = r.block_count();
        let stored: u64 = r
            .lookup(0)
            .unwrap()
            .iter()
            .map(|e| u64::from(e.compressed_len))
            .sum();
        println!(
            "{name}: {} blocks, {:.1} MB stored ({:.2}:1)",
            blocks,
            stored as f64 / 1e6,
            mb * 1e6 / stored as f64
        );
        let lookup = r.lookup(0).unwrap().to_vec();
        let (mut out, mut scratch) = (Vec::<f32>::new(), Vec::new());
        let ours = best(5, || {
            let mut sum = 0f32;
            for b in 0..blocks {
                r.read_block_into(0, b, &mut out, &mut scratch).unwrap();
                sum += out.iter().sum::<f32>();
            }
            std::hint::black_box(sum);
        });
        // The baseline on the same stored blocks: raw inflate (or memcpy) into one buffer.
        let bytes = std::fs::read(&p).unwrap();
        let mut buf = Vec::new();
        let base = best(5, || {
            let mut sum = 0f32;
            for e in &lookup {
                let s = &bytes[e.offset as usize..e.offset as usize + e.compressed_len as usize];
                buf.resize(e.decompressed_len as usize, 0u8);
                if compression == Compression::Deflate {
                    codec::inflate_prefix(s, &mut buf).unwrap();
                } else {
                    buf.copy_from_slice(&s[..e.decompressed_len as usize]);
                }
                // Read the values, as any consumer of the inflated bytes must.
                sum += buf
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .sum::<f32>();
            }
            std::hint::black_box(sum);
        });
        let mut fastest = ours;
        let target = if compression == Compression::Deflate {
            "target ≥ 90% of raw inflate"
        } else {
            "target ≥ 2 GB/s"
        };
        println!(
            "scan {name:<8} ours {:>7.2} GB/s   raw {} {:>7.2} GB/s   ratio {:>5.1}%   ({target})",
            mb / ours / 1e3,
            if compression == Compression::Deflate {
                "inflate"
            } else {
                "memcpy "
            },
            mb / base / 1e3,
            base / ours * 100.0
        );
        if compression == Compression::Deflate {
            use rayon::prelude::*;
            let scan = |b: u64, out: &mut Vec<f32>, scratch: &mut Vec<u8>| {
                r.read_block_into(0, b, out, scratch).unwrap();
                out.iter().sum::<f32>()
            };
            let serial = best(5, || {
                let (mut out, mut scratch) = (Vec::new(), Vec::new());
                let s: f32 = (0..blocks).map(|b| scan(b, &mut out, &mut scratch)).sum();
                std::hint::black_box(s);
            });
            let parallel = best(5, || {
                let s: f32 = (0..blocks)
                    .into_par_iter()
                    .map_init(|| (Vec::new(), Vec::new()), |(o, sc), b| scan(b, o, sc))
                    .sum();
                std::hint::black_box(s);
            });
            println!(
                "scan all blocks: serial {:.3} s, parallel ({} threads, a buffer each) {:.3} s: {:.2}x",
                serial,
                rayon::current_num_threads(),
                parallel,
                serial / parallel
            );
            fastest = fastest.min(parallel);
        }
        // `validate` (what `dataformats validate` runs: every block of
        // every column decoded) against the fastest scan above.
        let validate = best(5, || r.validate().unwrap());
        println!(
            "validate {name}: {validate:.3} s, {:.2}x the speed of the fastest scan (target 0.7x)",
            fastest / validate
        );
    }
    // Opening costs O(columns): the same 8 columns with 1x and 64x the rows.
    for rows in [1 << 14, 1 << 20] {
        let p = dir.join(format!("open-{rows}.idv"));
        write(&p, rows, Compression::Deflate, 8);
        let t = best(20, || {
            std::hint::black_box(Reader::open(&p).unwrap());
        });
        println!("open 8 columns x {rows:>8} rows: {:>8.1} µs", t * 1e6);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
