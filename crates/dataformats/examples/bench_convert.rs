//! Peak memory of conversions (`cargo xtask bench convert` runs it, one
//! process per conversion):
//!
//! - `bench_convert make OUT --mb N`: writes a synthetic data set of about
//!   N MB in OUT's format (records of an Int64 id, 64 float32 features and
//!   64 bytes of blob) through the library's writers;
//! - `bench_convert convert IN OUT [--columns A,B,...]`: converts IN (those
//!   columns of it) to OUT (lossy), then prints
//!   one JSON line: records, seconds, the peak resident set (`VmHWM`, which
//!   counts the pages of memory-mapped inputs the kernel keeps cached) and
//!   the peak of anonymous memory (`RssAnon`, sampled every 5 ms: what the
//!   conversion itself holds);
//! - `bench_convert validate IN`: validates IN as `dataformats validate`
//!   does and prints the same JSON line (records are those of the
//!   description, where it has them).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use arrow_array::builder::{BinaryBuilder, FixedSizeListBuilder, Float32Builder};
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use dataformats::DatasetError;
use dataformats::convert::{ConvertOptions, Report, Target, convert};
use dataformats::dataset::BatchStream;

const FEATURES: i32 = 64;
const BLOB: usize = 64;
/// Bytes of one record's values.
const RECORD: u64 = 8 + 4 * FEATURES as u64 + BLOB as u64;
const BATCH: u64 = 4096;

/// Synthetic batches, made as they are asked for.
struct Synthetic {
    schema: SchemaRef,
    next: u64,
    end: u64,
}

impl Synthetic {
    fn new(records: u64) -> Self {
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        Synthetic {
            schema: Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("x", DataType::FixedSizeList(item, FEATURES), false),
                Field::new("data", DataType::Binary, false),
            ])),
            next: 0,
            end: records,
        }
    }
}

impl BatchStream for Synthetic {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, DatasetError>> {
        if self.next >= self.end {
            return None;
        }
        let n = BATCH.min(self.end - self.next);
        let ids: Vec<i64> = (self.next..self.next + n).map(|i| i as i64).collect();
        let mut x = FixedSizeListBuilder::new(Float32Builder::new(), FEATURES)
            .with_field(Arc::new(Field::new("item", DataType::Float32, false)));
        let mut data = BinaryBuilder::new();
        for &i in &ids {
            for k in 0..FEATURES {
                x.values()
                    .append_value(((i as f32) * 0.001 + k as f32).sin());
            }
            x.append(true);
            let blob: Vec<u8> = (0..BLOB).map(|k| (i as usize * 31 + k) as u8).collect();
            data.append_value(&blob);
        }
        self.next += n;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(x.finish()),
            Arc::new(data.finish()),
        ];
        Some(RecordBatch::try_new(self.schema.clone(), cols).map_err(DatasetError::from))
    }
}

/// `RssAnon` of this process in KiB.
fn rss_anon_kib() -> u64 {
    dataformats::core::testing::proc_status_kib("RssAnon")
}

/// Runs `work` with a thread sampling `RssAnon` every 5 ms: its result,
/// the seconds it took and the peak of anonymous memory in KiB.
fn measured<T, E>(work: impl FnOnce() -> Result<T, E>) -> Result<(T, f64, u64), E> {
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_anon_kib(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let start = std::time::Instant::now();
    let r = work();
    let secs = start.elapsed().as_secs_f64();
    peak.fetch_max(rss_anon_kib(), Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    Ok((r?, secs, peak.load(Ordering::Relaxed)))
}

/// The JSON line `cargo xtask bench convert` reads.
fn print_line(records: u64, secs: f64, anon_kib: u64) {
    println!(
        "{{\"records\": {records}, \"seconds\": {secs:.2}, \"peak_rss_mib\": {}, \"peak_anon_mib\": {}}}",
        dataformats::core::testing::peak_rss_mib(),
        anon_kib / 1024
    );
}

fn lossy() -> ConvertOptions {
    let mut o = ConvertOptions {
        lossy: true,
        ..Default::default()
    };
    // Bench files of TBL v2 keep their blobs raw (LZ4 would not shrink them).
    o.tbl2.compress = false;
    o
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The allocator as the command line sets it.
    dataformats::core::alloc::keep_freed_blocks();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["make", out, "--mb", mb] => {
            let mb: u64 = mb.parse()?;
            let path = std::path::Path::new(out);
            let target = Target::from_path(path).ok_or("unknown output extension")?;
            let mut src = Synthetic::new((mb << 20) / RECORD);
            let opts = lossy();
            let mut report = Report::default();
            dataformats::convert::write(target, &mut src, path, &opts, &mut report, &mut |_| {})?;
            println!("{{\"records\": {}}}", report.records);
        }
        ["convert", input, output, rest @ ..] => {
            let mut opts = lossy();
            match rest {
                [] => {}
                ["--columns", names] => {
                    opts.columns = Some(names.split(',').map(str::to_string).collect());
                }
                _ => return Err("convert IN OUT takes only --columns A,B,...".into()),
            }
            let (r, secs, anon) = measured(|| convert(input.as_ref(), output.as_ref(), &opts))?;
            print_line(r.records, secs, anon);
        }
        ["validate", input] => {
            let (d, secs, anon) = measured(|| {
                dataformats::describe::validate(
                    input.as_ref(),
                    &mut dataformats::core::progress::none(),
                )
            })?;
            let records = ["samples", "records", "rows", "sequences"]
                .iter()
                .find_map(|k| d.json.get(k).and_then(serde_json::Value::as_u64))
                .unwrap_or(0);
            print_line(records, secs, anon);
        }
        _ => {
            eprintln!(
                "usage: bench_convert make OUT --mb N | bench_convert convert IN OUT [--columns A,B,...] | bench_convert validate IN"
            );
            std::process::exit(2);
        }
    }
    Ok(())
}
