//! `cargo xtask bench arrow`: the typed Arrow view and its Parquet export,
//! as ratios against baselines measured in the same run.
//!
//! - Reading a 1 GB uncompressed fixed-width IDV column (Single) and an MLDF
//!   NDARRAY field as Arrow batches, against memcpy of the same bytes.
//! - Reading a deflate IDV of four Single columns and a text column in
//!   batches of 1,024 records (the default), which cut its blocks, against
//!   batches of 65,536 (whole blocks).
//! - Parquet export of the IDV file, against arrow-rs's Parquet writer
//!   writing the same batches already held in memory.
//! - Peak RSS of the export (`--export-memory`, run in its own process).
//!
//! `--mb N` sets the size (default 1024).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Instant;

use dataformats::ReadOptions;

fn best(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn write_idv(path: &std::path::Path, rows: usize) {
    use dataformats::idv::{
        ColumnSpec, ColumnType, Compression, ItemType, Values, Writer, WriterOptions,
    };
    let mut w = Writer::create(
        path,
        vec![ColumnSpec::new("x", ColumnType::Scalar(ItemType::F32))],
        WriterOptions {
            compression: Compression::None,
            rows_per_block: None,
            level: 6,
        },
    )
    .unwrap();
    let chunk = 1 << 20;
    let mut done = 0;
    while done < rows {
        let n = chunk.min(rows - done);
        let col: Vec<f32> = (done..done + n).map(|i| (i as f32 * 0.001).sin()).collect();
        w.write_batch(&[Values::F32(col)]).unwrap();
        done += n;
    }
    w.finish().unwrap();
}

/// A deflate IDV of `rows` records: four Single columns and a text one.
fn write_idv_deflate(path: &std::path::Path, rows: usize) {
    use dataformats::idv::{
        ColumnSpec, ColumnType, Compression, ItemType, TextValues, Values, Writer, WriterOptions,
    };
    let mut specs: Vec<ColumnSpec> = (0..4)
        .map(|k| ColumnSpec::new(format!("x{k}"), ColumnType::Scalar(ItemType::F32)))
        .collect();
    specs.push(ColumnSpec::new("s", ColumnType::Scalar(ItemType::Text)));
    let mut w = Writer::create(
        path,
        specs,
        WriterOptions {
            compression: Compression::Deflate,
            rows_per_block: None,
            level: 1,
        },
    )
    .unwrap();
    let chunk = 1 << 18;
    let mut done = 0;
    while done < rows {
        let n = chunk.min(rows - done);
        let mut cols: Vec<Values> = (0..4)
            .map(|k| {
                Values::F32(
                    (done..done + n)
                        .map(|i| (i as f32 * 0.001 + k as f32).sin())
                        .collect(),
                )
            })
            .collect();
        let mut text = TextValues::default();
        for i in done..done + n {
            text.push(&format!("record {i}"));
        }
        cols.push(Values::Text(text));
        w.write_batch(&cols).unwrap();
        done += n;
    }
    w.finish().unwrap();
}

fn write_mldf(path: &std::path::Path, samples: usize, dim: usize) {
    use dataformats::mldf::{Dtype, Field, FieldType, FieldValue, Writer, WriterOptions};
    let f = Field::new(
        "x",
        FieldType::NdArray {
            dtype: Dtype::F32,
            shape: vec![dim as u64],
        },
    );
    let mut w = Writer::create(path, vec![f], WriterOptions::default()).unwrap();
    let mut v = vec![0u8; dim * 4];
    for i in 0..samples {
        for (k, c) in v.chunks_exact_mut(4).enumerate() {
            c.copy_from_slice(&((i * dim + k) as f32).to_le_bytes());
        }
        w.add_sample(&[FieldValue::NdArray(&v)]).unwrap();
    }
    w.finish().unwrap();
}

/// Reads every batch of `path` (every value touched through a checksum, as
/// a consumer would), returning the bytes of values read.
fn scan(path: &std::path::Path) -> usize {
    scan_in(path, 1 << 16)
}

/// [`scan`] in batches of `batch` records.
fn scan_in(path: &std::path::Path, batch: usize) -> usize {
    let d = dataformats::open(path).unwrap();
    let opts = ReadOptions {
        batch_size: batch,
        ..Default::default()
    };
    let mut bytes = 0;
    let mut sum = 0u64;
    for b in d.reader(&opts).unwrap() {
        let b = b.unwrap();
        for c in b.columns() {
            let data = c.to_data();
            let data = if data.child_data().is_empty() {
                data
            } else {
                data.child_data()[0].clone()
            };
            let buf = &data.buffers()[0];
            bytes += buf.len();
            sum = sum.wrapping_add(
                buf.as_slice()
                    .iter()
                    .step_by(4096)
                    .map(|&x| u64::from(x))
                    .sum::<u64>(),
            );
        }
    }
    std::hint::black_box(sum);
    bytes
}

/// This process's anonymous resident memory in MiB (the heap; pages of
/// the memory-mapped input are the page cache's, not ours, and are left out).
fn anon_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("RssAnon:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .map_or(0, |kb| kb / 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb: usize = args
        .iter()
        .position(|a| a == "--mb")
        .and_then(|i| args.get(i + 1))
        .map_or(1024, |s| s.parse().unwrap());
    let dir = std::env::temp_dir().join(format!("df-arrow-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = (mb << 20) / 4;
    let idv = dir.join("x.idv");
    write_idv(&idv, rows);

    if args.iter().any(|a| a == "--export-memory") {
        // Peak anonymous memory, sampled every 5 ms while exporting.
        let before = anon_mib();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut peak = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    peak = peak.max(anon_mib());
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                peak
            })
        };
        for format in [
            dataformats::export::ExportFormat::Parquet,
            dataformats::export::ExportFormat::ArrowFile,
            dataformats::export::ExportFormat::Csv,
        ] {
            let d = dataformats::open(&idv).unwrap();
            dataformats::export::export(
                d.as_ref(),
                &ReadOptions::default(),
                &dir.join(format!("x.{}", format.name())),
                format,
            )
            .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let peak = sampler.join().unwrap();
        println!(
            "parquet, arrow and csv exports of {mb} MiB: peak heap {peak} MiB (before {before} MiB; target < 200 MB)"
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }

    // memcpy of the same bytes, from a buffer already in memory.
    let src = vec![1u8; rows * 4];
    let mut dst = vec![0u8; rows * 4];
    let t_copy = best(3, || {
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
    });
    drop(dst);
    drop(src);
    let gb = (rows * 4) as f64 / 1e9;
    let t_idv = best(3, || {
        assert_eq!(scan(&idv), rows * 4);
    });
    println!(
        "IDV Single column as Arrow: {:.2} GB/s; memcpy {:.2} GB/s; ratio {:.2} (target >= 0.8)",
        gb / t_idv,
        gb / t_copy,
        t_copy / t_idv
    );
    let mldf = dir.join("x.mldf");
    let dim = 1024;
    write_mldf(&mldf, rows / dim, dim);
    let t_mldf = best(3, || {
        assert_eq!(scan(&mldf), rows * 4);
    });
    println!(
        "MLDF NDARRAY<float32>[{dim}] as Arrow: {:.2} GB/s; ratio to memcpy {:.2} (target >= 0.8)",
        gb / t_mldf,
        t_copy / t_mldf
    );
    let _ = std::fs::remove_file(&mldf);

    // Batches that cut a deflate file's blocks, against whole blocks.
    let deflate = dir.join("d.idv");
    write_idv_deflate(&deflate, rows / 16);
    let whole = best(3, || {
        std::hint::black_box(scan_in(&deflate, 1 << 16));
    });
    let cut = best(3, || {
        std::hint::black_box(scan_in(&deflate, ReadOptions::default().batch_size));
    });
    println!(
        "IDV deflate, 4 Single + 1 text column, {} records: batches of {} {:.0} ms; of 65,536 {:.0} ms; ratio {:.2} (target >= 0.9)",
        rows / 16,
        ReadOptions::default().batch_size,
        cut * 1e3,
        whole * 1e3,
        whole / cut
    );
    let _ = std::fs::remove_file(&deflate);

    // Parquet: our export against arrow-rs writing the same batches from memory.
    let d = dataformats::open(&idv).unwrap();
    let opts = ReadOptions {
        batch_size: 8192,
        ..Default::default()
    };
    let batches: Vec<_> = d.reader(&opts).unwrap().map(Result::unwrap).collect();
    let schema = d.schema();
    let props = || {
        parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::ZSTD(
                parquet::basic::ZstdLevel::try_new(3).unwrap(),
            ))
            .set_max_row_group_row_count(Some(1 << 20))
            .build()
    };
    let t_arrow = best(2, || {
        let f = std::fs::File::create(dir.join("ref.parquet")).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, schema.clone(), Some(props())).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();
    });
    drop(batches);
    let t_ours = best(2, || {
        dataformats::export::export(
            d.as_ref(),
            &ReadOptions::default(),
            &dir.join("x.parquet"),
            dataformats::export::ExportFormat::Parquet,
        )
        .unwrap();
    });
    println!(
        "Parquet export: {:.2} GB/s; arrow-rs from memory {:.2} GB/s; ratio {:.2} (target >= 0.5)",
        gb / t_ours,
        gb / t_arrow,
        t_arrow / t_ours
    );
    let _ = std::fs::remove_dir_all(&dir);
}
