//! Reading a file by byte ranges from a loopback object server against
//! reading it locally with the same reader (positioned reads, no memory
//! map), alternating in one process:
//!
//! ```sh
//! cargo bench -p dataformats --features remote --bench remote
//! DATAFORMATS_BENCH_MB=256 DATAFORMATS_BENCH_DIR=/var/tmp cargo bench ...
//! ```
//!
//! The file (DATAFORMATS_BENCH_MB megabytes, default 1024, of uncompressed
//! float64 columns as IDV) is written into a temporary directory (under
//! DATAFORMATS_BENCH_DIR when set) and served from there by the loopback
//! object server of `dataformats_remote::testing`: it answers the S3 GET and
//! HEAD requests of one bucket, by path, with byte ranges read from the file
//! (threads, positioned reads). It checks no signatures, keeps no state and
//! so costs little per request, unlike moto (Python; each ranged GET costs time in proportion to
//! the object), which the Python bench `python/bench/bench_remote.py` uses.
//! What this measures is the client: request planning, concurrency and
//! copies. It reads whole `s3://` and `http://` URLs through
//! `dataformats::open` and prints the median throughput of each and the
//! ratio to the local read (target for `s3://`: at least 0.8).

#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use dataformats::convert::{self, ConvertOptions, Report, Target};
use dataformats::dataset::BatchStream;
use dataformats_remote::testing::ObjectServer;

const COLUMNS: usize = 8;
const BATCH: u64 = 65536;
const RUNS: usize = 5;

/// `rows` records of COLUMNS float64 columns, made batch by batch.
struct Floats {
    schema: SchemaRef,
    next: u64,
    rows: u64,
}

impl BatchStream for Floats {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, dataformats::DatasetError>> {
        if self.next >= self.rows {
            return None;
        }
        let n = BATCH.min(self.rows - self.next);
        let start = self.next;
        self.next += n;
        let columns: Vec<ArrayRef> = (0..COLUMNS as u64)
            .map(|c| {
                let values = (start..start + n).map(|i| ((i * 31 + c * 7) % 1009) as f64 * 0.25);
                Arc::new(Float64Array::from_iter_values(values)) as ArrayRef
            })
            .collect();
        Some(RecordBatch::try_new(self.schema.clone(), columns).map_err(Into::into))
    }
}

fn write_file(path: &Path, megabytes: u64) {
    let fields: Vec<Field> = (0..COLUMNS)
        .map(|c| Field::new(format!("c{c}"), DataType::Float64, false))
        .collect();
    let mut input = Floats {
        schema: Arc::new(Schema::new(fields)),
        next: 0,
        rows: (megabytes << 20) / (8 * COLUMNS as u64),
    };
    let mut opts = ConvertOptions::default();
    opts.idv.writer.compression = dataformats::idv::Compression::None;
    let mut report = Report::default();
    convert::write(
        Target::Idv,
        &mut input,
        path,
        &opts,
        &mut report,
        &mut |_| {},
    )
    .expect("write the bench file");
}

/// Reads every column of every record in batches (as `iter_batches` in
/// Python does); the bytes of the arrays.
fn scan(url: &str) -> usize {
    let d = dataformats::open(Path::new(url)).expect("open");
    let opts = dataformats::ReadOptions {
        batch_size: BATCH as usize,
        ..Default::default()
    };
    let mut bytes = 0;
    let mut reader = d.reader(&opts).expect("reader");
    while let Some(b) = reader.next_batch() {
        bytes += b.expect("read").get_array_memory_size();
    }
    bytes
}

/// The transport alone: the object fetched by plain HTTP GETs of 8 MiB
/// ranges on `streams` connections at once, each answer read into one
/// reused buffer (no parsing beyond the header, nothing kept). What a
/// client could get from this server on this machine at best.
fn raw(port: u16, key: &str, size: u64, streams: u64) -> u64 {
    const PART: u64 = 8 << 20;
    let parts = size.div_ceil(PART);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..streams)
            .map(|t| {
                s.spawn(move || {
                    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                    let mut reader =
                        BufReader::with_capacity(1 << 20, conn.try_clone().expect("clone"));
                    let mut buf = vec![0u8; PART as usize];
                    let mut got = 0;
                    for p in (t..parts).step_by(streams as usize) {
                        let (a, b) = (p * PART, ((p + 1) * PART).min(size) - 1);
                        let req = format!(
                            "GET /{key} HTTP/1.1\r\nHost: x\r\nRange: bytes={a}-{b}\r\n\r\n"
                        );
                        conn.write_all(req.as_bytes()).expect("request");
                        let mut line = String::new();
                        loop {
                            line.clear();
                            reader.read_line(&mut line).expect("header");
                            if line.trim_end().is_empty() {
                                break;
                            }
                        }
                        let n = (b + 1 - a) as usize;
                        reader.read_exact(&mut buf[..n]).expect("body");
                        got += n as u64;
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).sum()
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let megabytes: u64 = std::env::var("DATAFORMATS_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = match std::env::var_os("DATAFORMATS_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .expect("temporary directory");
    let bucket = dir.path().join("bench");
    std::fs::create_dir(&bucket).expect("bucket directory");
    let file = bucket.join("f.idv");
    write_file(&file, megabytes);
    let size = std::fs::metadata(&file).expect("bench file").len();
    let server = ObjectServer::directory(dir.path()).expect("object server");
    let port = server.port();
    // SAFETY: set before any other thread of this process reads the
    // environment (the server threads do not).
    unsafe {
        std::env::set_var("AWS_ENDPOINT_URL", server.endpoint());
        std::env::set_var("AWS_ALLOW_HTTP", "true");
        std::env::set_var("AWS_ACCESS_KEY_ID", "bench");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "bench");
        std::env::set_var("AWS_REGION", "us-east-1");
    }
    let local = format!("file://{}", file.display());
    let s3 = "s3://bench/f.idv".to_string();
    let http = server.url("bench/f.idv");
    let expect = scan(&local);
    assert_eq!(scan(&s3), expect, "s3:// reads what the file holds");
    assert_eq!(scan(&http), expect, "http:// reads what the file holds");
    let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..RUNS {
        for (k, url) in [&local, &s3, &http].into_iter().enumerate() {
            let t = Instant::now();
            std::hint::black_box(scan(url));
            times[k].push(t.elapsed().as_secs_f64());
        }
        for (k, streams) in [(3, 1), (4, 4)] {
            let t = Instant::now();
            assert_eq!(raw(port, "bench/f.idv", size, streams), size);
            times[k].push(t.elapsed().as_secs_f64());
        }
    }
    let [l, s, h, r1, r4] = times.map(median);
    let mb = size as f64 / 1e6;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "remote: IDV, {mb:.0} MB, uncompressed float64; load average {load}; median of {RUNS}"
    );
    println!("  local (positioned reads)   {:8.0} MB/s", mb / l);
    println!(
        "  s3:// (loopback server)    {:8.0} MB/s   ratio {:.2} (target >= 0.8)",
        mb / s,
        l / s
    );
    println!(
        "  http:// (loopback server)  {:8.0} MB/s   ratio {:.2}",
        mb / h,
        l / h
    );
    println!(
        "  transport alone, 1 stream  {:8.0} MB/s   ratio {:.2}",
        mb / r1,
        l / r1
    );
    println!(
        "  transport alone, 4 streams {:8.0} MB/s   ratio {:.2}",
        mb / r4,
        l / r4
    );
}
