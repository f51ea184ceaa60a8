//! The CNTK speed table (`cargo xtask bench cntk` runs this in release mode):
//! CTF → CBF conversion throughput, reading dense f32 sequences, and (with
//! `--convert-memory GB`) the converter's peak memory on a large CTF file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write;
use std::time::Instant;

use dataformats_cntk::ctf::{StreamSpec, ctf_to_cbf, ctf_to_cbf_source};
use dataformats_cntk::{Chunking, ElemType, Reader, Record, RecordView, StreamKind};

fn make_ctf(path: &std::path::Path, bytes: u64) -> u64 {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0u64;
    let mut s = 1u64;
    let mut seq = 0u64;
    while written < bytes {
        for _ in 0..20 {
            let mut line = format!("{seq} |features");
            for _ in 0..64 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                line.push_str(&format!(" {:.6}", (s % 2_000_000) as f64 / 1e6 - 1.0));
            }
            line.push_str(&format!(" |labels {}:1\n", s % 10));
            written += line.len() as u64;
            f.write_all(line.as_bytes()).unwrap();
        }
        seq += 1;
    }
    written
}

use dataformats_core::testing::peak_rss_mib;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = std::env::temp_dir().join(format!("df-cntk-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let specs = [
        StreamSpec {
            name: "features".into(),
            alias: "features".into(),
            kind: StreamKind::Dense,
            dim: 64,
        },
        StreamSpec {
            name: "labels".into(),
            alias: "labels".into(),
            kind: StreamKind::Sparse,
            dim: 10,
        },
    ];
    let mb = if args.first().map(String::as_str) == Some("--convert-memory") {
        args.get(1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(1) * 1024
    } else {
        200
    };
    let ctf = dir.join("data.ctf");
    let text_bytes = make_ctf(&ctf, mb << 20);
    let bin = dir.join("data.bin");
    let before = peak_rss_mib();
    // The text read through a BufRead, or mapped and parsed where it lies
    // (as the CLI does).
    let convert = |threads: usize, mapped: bool| {
        let t = Instant::now();
        let (specs, precision, chunking) = (&specs, ElemType::F32, Chunking::Target(32 << 20));
        let report = if mapped {
            // SAFETY: the bench owns the file and does not change it while mapped.
            let src = unsafe { dataformats_core::Source::map(&ctf) }.unwrap();
            ctf_to_cbf_source(&src, specs, precision, chunking, threads, &bin, |_| {})
        } else {
            let f = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&ctf).unwrap());
            ctf_to_cbf(f, specs, precision, chunking, threads, &bin, |_| {})
        };
        (report.unwrap(), t.elapsed().as_secs_f64())
    };
    let cores = dataformats_core::parallel::threads(0);
    let mbs = |secs: f64| text_bytes as f64 / 1e6 / secs;
    for (how, mapped) in [("read through a BufRead", false), ("mapped", true)] {
        let run = |threads| convert(threads, mapped);
        // One thread, then every core, alternating; the best of three each.
        let (mut one, mut all) = (f64::MAX, f64::MAX);
        let mut sequences = 0;
        for _ in 0..if mb > 200 { 1 } else { 3 } {
            let (report, secs) = run(1);
            one = one.min(secs);
            sequences = report.sequences;
            all = all.min(run(0).1);
        }
        println!(
            "CTF -> CBF, {how}: {:.0} MB of text, {sequences} sequences: {:.0} MB/s of CTF on \
             one thread, {:.0} MB/s on {cores} ({:.2}x; target 1.7x on 2)",
            text_bytes as f64 / 1e6,
            mbs(one),
            mbs(all),
            one / all
        );
        if args.first().map(String::as_str) == Some("--convert-memory") {
            break;
        }
    }
    if args.first().map(String::as_str) == Some("--convert-memory") {
        println!(
            "peak RSS before converting {before} MiB, after {} MiB (chunks of 32 MiB)",
            peak_rss_mib()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    // Reading: every chunk decoded; dense f32 payload bytes per second.
    // SAFETY: the bench owns the file and does not change it while mapped.
    let src = unsafe { dataformats_core::Source::map(&bin) }.unwrap();
    let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
    let mut best = f64::MAX;
    let mut dense_bytes = 0u64;
    for _ in 0..5 {
        let t = Instant::now();
        dense_bytes = 0;
        for c in 0..r.chunks().len() {
            let ch = r.read_chunk(c).unwrap();
            for rec in &ch.records[0] {
                if let Record::Dense { values, .. } = rec {
                    dense_bytes += values.len() as u64 * 4;
                }
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "read dense f32 as owned f64 records: {:.0} MB of values in {:.3} s: {:.2} GB/s, all checks on",
        dense_bytes as f64 / 1e6,
        best,
        dense_bytes as f64 / best / 1e9
    );
    // The same through borrowed views: zero-copy `&[f32]` from the map, and
    // copies into one reused caller buffer; every value is summed, so each
    // byte is touched.
    let mut fastest = f64::MAX;
    for (label, zero_copy) in [("zero-copy &[f32]", true), ("into a caller buffer", false)] {
        let mut best = f64::MAX;
        let mut buf: Vec<f32> = Vec::new();
        let mut sum = 0f64;
        for _ in 0..5 {
            let t = Instant::now();
            dense_bytes = 0;
            for c in 0..r.chunks().len() {
                let view = r.chunk_view(c).unwrap();
                for q in 0..view.num_sequences() {
                    if let Some(RecordView::Dense(d)) = view.record(0, q) {
                        if zero_copy {
                            let v = d.as_f32().unwrap();
                            sum += f64::from(v.iter().sum::<f32>());
                        } else {
                            buf.resize(d.len(), 0.0);
                            d.read_f32_into(&mut buf).unwrap();
                            sum += f64::from(buf.iter().sum::<f32>());
                        }
                        dense_bytes += d.raw().len() as u64;
                    }
                }
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        std::hint::black_box(sum);
        fastest = fastest.min(best);
        println!(
            "read dense f32, {label}: {:.0} MB in {:.3} s: {:.2} GB/s (target: 1 GB/s), all checks on",
            dense_bytes as f64 / 1e6,
            best,
            dense_bytes as f64 / best / 1e9
        );
    }
    // `validate` (what `dataformats validate` runs): every check of every
    // chunk, on every core, against the fastest read above.
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        r.validate().unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "validate: {:.3} s, {:.2}x the speed of the fastest read (target: 0.7x)",
        best,
        fastest / best
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
