//! Every format read through a `RangeRead` source (bytes elsewhere, read by
//! byte ranges, as object storage is): the same batches as the local file,
//! only the bytes needed, and faulty answers are errors, never values.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::ErrorKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use dataformats::core::{RangeRead, Source};
use dataformats::{Dataset, OpenOptions};

/// A remote file in memory that counts requests and bytes, and answers
/// reads touching bytes at or past `fail_from` with `fault`.
#[derive(Debug)]
struct Remote {
    bytes: Vec<u8>,
    requests: AtomicU64,
    fetched: AtomicU64,
    fail_from: u64,
    fault: Fault,
    /// Every read, and every range announced by `prefetch`, in order.
    log: std::sync::Mutex<Vec<Logged>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Logged {
    Read(std::ops::Range<u64>),
    Prefetch(Vec<std::ops::Range<u64>>),
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The connection drops: an I/O error.
    Drop,
    /// The answer is short: only the bytes before `fail_from` come.
    Truncate,
}

impl Remote {
    fn new(bytes: Vec<u8>) -> Self {
        Remote {
            bytes,
            requests: AtomicU64::new(0),
            fetched: AtomicU64::new(0),
            fail_from: u64::MAX,
            fault: Fault::Drop,
            log: Default::default(),
        }
    }
}

impl RangeRead for Remote {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_range(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let end = offset + buf.len() as u64;
        self.log.lock().unwrap().push(Logged::Read(offset..end));
        if end > self.fail_from {
            return Err(match self.fault {
                Fault::Drop => std::io::Error::new(ErrorKind::ConnectionReset, "dropped"),
                Fault::Truncate => ErrorKind::UnexpectedEof.into(),
            });
        }
        buf.copy_from_slice(&self.bytes[offset as usize..end as usize]);
        self.fetched.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn prefetch(&self, ranges: &[std::ops::Range<u64>]) {
        self.log
            .lock()
            .unwrap()
            .push(Logged::Prefetch(ranges.to_vec()));
    }
}

fn read_all(d: &dyn Dataset) -> Result<RecordBatch, dataformats::DatasetError> {
    d.read_batch(None, 0..d.len())
}

/// Valid vectors that are files (BLZ/bcolz directories are prefixes, not
/// one object) with a typed view.
fn files() -> Vec<(&'static str, std::path::PathBuf)> {
    dataformats::core::testing::all_vectors()
        .into_iter()
        .filter(|(_, p, valid)| *valid && p.is_file())
        .filter(|(_, p, _)| dataformats::open(p).is_ok())
        .map(|(f, p, _)| (f, p))
        .collect()
}

#[test]
fn every_valid_vector_reads_the_same_by_ranges() {
    let mut seen = 0;
    for (format, p) in files() {
        let local = dataformats::open(&p).unwrap();
        let want = read_all(local.as_ref()).unwrap();
        let remote = Arc::new(Remote::new(std::fs::read(&p).unwrap()));
        let d =
            dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
                .unwrap_or_else(|e| panic!("{format} {}: {e}", p.display()));
        assert_eq!(d.format(), local.format(), "{}", p.display());
        assert_eq!(d.schema(), local.schema(), "{}", p.display());
        let got = read_all(d.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(got, want, "{}", p.display());
        d.validate()
            .unwrap_or_else(|e| panic!("{} validate: {e}", p.display()));
        assert!(remote.requests.load(Ordering::Relaxed) > 0);
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} vectors");
    }
}

#[test]
fn dropped_or_short_answers_are_errors_never_values() {
    let mut checked = 0;
    for (_, p) in files() {
        let bytes = std::fs::read(&p).unwrap();
        let want = read_all(dataformats::open(&p).unwrap().as_ref()).unwrap();
        let n = bytes.len() as u64;
        for fault in [Fault::Drop, Fault::Truncate] {
            for cut in [0, 1, n / 3, n / 2, n - n / 10, n.saturating_sub(1)] {
                let remote = Remote {
                    fail_from: cut,
                    fault,
                    ..Remote::new(bytes.clone())
                };
                let src = Source::from_ranges(Arc::new(remote));
                // Opening or reading fails, or (when the bytes past the cut
                // are not needed) gives exactly the local batches.
                if let Ok(d) = dataformats::open_source(src, &OpenOptions::default())
                    && let Ok(got) = read_all(d.as_ref())
                {
                    assert_eq!(got, want, "{} {fault:?} from {cut}", p.display());
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0 || dataformats::core::testing::vectors_dir("idv").is_none());
}

#[test]
fn a_failed_range_is_named_and_keeps_its_cause() {
    let remote = Remote {
        fail_from: 10,
        fault: Fault::Drop,
        ..Remote::new(vec![7u8; 100])
    };
    let src = Source::from_ranges(Arc::new(remote));
    let mut buf = [0u8; 20];
    src.read_at(0, &mut buf[..10]).unwrap();
    let e = src.read_at(5, &mut buf).unwrap_err();
    assert!(e.to_string().contains("5..25"), "{e}");
    let mut cause = std::error::Error::source(&e);
    let mut found = false;
    while let Some(c) = cause {
        found |= c.to_string().contains("dropped");
        cause = c.source();
    }
    assert!(found, "{e:?}");
    // A short answer is a truncation at the range's offset.
    let short = Remote {
        fail_from: 10,
        fault: Fault::Truncate,
        ..Remote::new(vec![7u8; 100])
    };
    let e = Source::from_ranges(Arc::new(short))
        .read_at(5, &mut buf)
        .unwrap_err();
    assert_eq!(e.kind(), dataformats::ErrorKind::Truncated, "{e}");
    // Past the length: refused before any request.
    let r = Arc::new(Remote::new(vec![1u8; 8]));
    assert!(
        Source::from_ranges(r.clone())
            .read_at(4, &mut buf[..8])
            .is_err()
    );
    assert_eq!(r.requests.load(Ordering::Relaxed), 0);
}

/// A TBL v2 file at `path` of `n` samples (format code 8), sample `i`
/// holding `payload(i)`, LZ4-compressed when `compress`.
fn write_tbl(path: &std::path::Path, compress: bool, n: u32, payload: impl Fn(u32) -> Vec<u8>) {
    let compression = if compress {
        dataformats::tbl2::Compression::Lz4
    } else {
        dataformats::tbl2::Compression::None
    };
    let mut w = dataformats::tbl2::Writer::create(path, compression).unwrap();
    for i in 0..n {
        let info = dataformats::tbl2::SampleInfo {
            format: dataformats::tbl2::SampleFormat(8),
            width: 0,
            height: 0,
        };
        w.add_sample(&payload(i), info).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn one_column_of_a_few_records_fetches_a_small_part_of_a_large_file() {
    // A TBL v2 file of 2,000 samples of 2 KB: reading 20 samples' data
    // fetches the header, the index and those samples only.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.tbl");
    write_tbl(&path, false, 2000, |i| {
        (0..2048u32)
            .map(|k| (k.wrapping_mul(31) ^ i) as u8)
            .collect()
    });
    let bytes = std::fs::read(&path).unwrap();
    let total = bytes.len() as u64;
    let remote = Arc::new(Remote::new(bytes));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    let before = remote.fetched.load(Ordering::Relaxed);
    let b = d.read_batch(Some(&["data".into()]), 1000..1020).unwrap();
    assert_eq!(b.num_rows(), 20);
    let fetched = remote.fetched.load(Ordering::Relaxed);
    assert!(
        fetched - before <= 20 * 2048 + 4096,
        "{} bytes for 20 samples",
        fetched - before
    );
    assert!(fetched * 20 < total, "{fetched} of {total} bytes fetched");
}

/// An uncompressed IDV of 4000 records in 3 columns and 40 blocks of 100.
fn idv_of_40_blocks(dir: &std::path::Path) -> std::path::PathBuf {
    let csv = dir.join("t.csv");
    let mut text = String::from("a,b,c\n");
    for i in 0..4000 {
        text.push_str(&format!("{i},{},{}\n", i * 2, i as f64 / 3.0));
    }
    std::fs::write(&csv, text).unwrap();
    let parquet = dir.join("t.parquet");
    dataformats::convert::convert(&csv, &parquet, &Default::default()).unwrap();
    let idv = dir.join("t.idv");
    let mut opts = dataformats::convert::ConvertOptions::default();
    opts.idv.writer.rows_per_block = Some(100);
    opts.idv.writer.compression = dataformats::idv::Compression::None;
    dataformats::convert::convert(&parquet, &idv, &opts).unwrap();
    idv
}

/// [`idv_of_40_blocks`] opened locally and through a logging ranged
/// source whose log starts empty after the open: (local, source, remote).
fn idv_of_40_blocks_by_ranges() -> (Box<dyn Dataset>, Arc<Remote>, Box<dyn Dataset>) {
    let dir = tempfile::tempdir().unwrap();
    let idv = idv_of_40_blocks(dir.path());
    let local = dataformats::open(&idv).unwrap();
    let remote = Arc::new(Remote::new(std::fs::read(&idv).unwrap()));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    remote.log.lock().unwrap().clear();
    (local, remote, d)
}

/// Every range announced by a `prefetch` in `log`, in order of first
/// announcement.
fn announced(log: &[Logged]) -> Vec<std::ops::Range<u64>> {
    let mut out: Vec<std::ops::Range<u64>> = Vec::new();
    for l in log {
        if let Logged::Prefetch(rs) = l {
            for r in rs {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
    }
    out
}

#[test]
fn batch_readers_announce_each_batch_before_it_is_read_four_ahead() {
    // A scan in batches of one block: when the first batch has been read,
    // its blocks and those of the next four batches have been announced;
    // by the end every block was, and each read came after the
    // announcement of what it reads.
    let (local, remote, d) = idv_of_40_blocks_by_ranges();
    let opts = dataformats::ReadOptions {
        batch_size: 100,
        ..Default::default()
    };
    let mut reader = d.reader(&opts).unwrap();
    let first = reader.next_batch().unwrap().unwrap();
    assert_eq!(first, local.read_batch(None, 0..100).unwrap());
    let after_first = announced(&remote.log.lock().unwrap());
    assert_eq!(
        after_first.len(),
        3 * (1 + dataformats::dataset::BATCHES_AHEAD as usize),
        "{after_first:?}"
    );
    let mut at = 100;
    while let Some(b) = reader.next_batch() {
        let b = b.unwrap();
        assert_eq!(b, local.read_batch(None, at..at + 100).unwrap());
        at += 100;
    }
    assert_eq!(at, 4000);
    let log = remote.log.lock().unwrap().clone();
    let all = announced(&log);
    assert_eq!(all.len(), 3 * 40, "every block of every column");
    // Reads of blocks (not the lazily read block tables) came after their
    // announcement.
    let within = |r: &std::ops::Range<u64>, rs: &[std::ops::Range<u64>]| {
        rs.iter().any(|a| a.start <= r.start && r.end <= a.end)
    };
    let mut blocks = 0;
    for (k, l) in log.iter().enumerate() {
        if let Logged::Read(r) = l
            && within(r, &all)
        {
            blocks += 1;
            assert!(
                within(r, &announced(&log[..k])),
                "read {r:?} came before its announcement"
            );
        }
    }
    assert_eq!(blocks, 3 * 40, "each block read once");
}

/// A deflate IDV of 4000 records and 40 blocks of 100 in five columns: two
/// plain numeric ones, text, a vector of 3 and a vector of any length.
fn deflate_idv_of_40_blocks(dir: &std::path::Path) -> std::path::PathBuf {
    use dataformats::idv::{
        ColumnSpec, ColumnType, Compression, ItemType, TextValues, Values, VectorValues, Writer,
        WriterOptions,
    };
    let vector = |dims: Vec<u32>| ColumnType::Vector {
        item: ItemType::F32,
        dims,
    };
    let path = dir.join("d.idv");
    let mut w = Writer::create(
        &path,
        vec![
            ColumnSpec::new("a", ColumnType::Scalar(ItemType::F32)),
            ColumnSpec::new("b", ColumnType::Scalar(ItemType::I64)),
            ColumnSpec::new("s", ColumnType::Scalar(ItemType::Text)),
            ColumnSpec::new("v", vector(vec![3])),
            ColumnSpec::new("w", vector(vec![])),
        ],
        WriterOptions {
            compression: Compression::Deflate,
            rows_per_block: Some(100),
            level: 6,
        },
    )
    .unwrap();
    let (mut text, mut v, mut w_) = (
        TextValues::default(),
        VectorValues::new(ItemType::F32),
        VectorValues::new(ItemType::F32),
    );
    for i in 0..4000u32 {
        text.push(&format!("row {i}"));
        let x = i as f32;
        assert!(v.push_dense(&Values::F32(vec![x, x + 0.5, -x])));
        assert!(w_.push_dense(&Values::F32(vec![x; (i % 5) as usize])));
    }
    w.write_batch(&[
        Values::F32((0..4000).map(|i| i as f32 / 7.0).collect()),
        Values::I64((0..4000).map(|i| i * 3 - 100).collect()),
        Values::Text(text),
        Values::Vector(v),
        Values::Vector(w_),
    ])
    .unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn idv_batches_that_cut_blocks_decode_each_block_once() {
    // Batches of 70 and of 250 records cut the 100-record blocks anywhere:
    // each block of each of the five columns is still fetched (and so
    // decoded) once, and the batches are the file's records.
    let dir = tempfile::tempdir().unwrap();
    let idv = deflate_idv_of_40_blocks(dir.path());
    let local = dataformats::open(&idv).unwrap();
    let want = read_all(local.as_ref()).unwrap();
    for batch in [70, 250, 100, 4000] {
        let remote = Arc::new(Remote::new(std::fs::read(&idv).unwrap()));
        let d =
            dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
                .unwrap();
        remote.log.lock().unwrap().clear();
        let opts = dataformats::ReadOptions {
            batch_size: batch,
            ..Default::default()
        };
        let mut at = 0;
        for b in d.reader(&opts).unwrap() {
            let b = b.unwrap();
            assert_eq!(b, want.slice(at, b.num_rows()), "batch of {batch} at {at}");
            at += b.num_rows();
        }
        assert_eq!(at, 4000);
        let log = remote.log.lock().unwrap().clone();
        let blocks = announced(&log);
        assert_eq!(blocks.len(), 5 * 40, "every block of every column");
        let mut reads: Vec<std::ops::Range<u64>> = log
            .iter()
            .filter_map(|l| match l {
                Logged::Read(r) if blocks.contains(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        reads.sort_by_key(|r| r.start);
        let n = reads.len();
        reads.dedup();
        assert_eq!(reads.len(), 5 * 40, "batches of {batch}: blocks never read");
        assert_eq!(n, 5 * 40, "batches of {batch}: blocks read again");
    }
}

#[test]
fn idv_reads_announce_the_blocks_they_then_read() {
    // A read of some rows tells the source every block it goes on to read,
    // before reading it.
    let (local, remote, d) = idv_of_40_blocks_by_ranges();
    let got = d.read_batch(None, 1050..2990).unwrap();
    assert_eq!(got, local.read_batch(None, 1050..2990).unwrap());
    // Blocks 10..=29 of each of the 3 columns.
    let announced = reads_were_announced(&remote);
    assert_eq!(announced.len(), 3 * 20, "{announced:?}");
}

/// The ranges of the last `prefetch` call in `remote`'s log, after
/// checking that every read logged after it lies within one of them.
fn reads_were_announced(remote: &Remote) -> Vec<std::ops::Range<u64>> {
    let log = remote.log.lock().unwrap().clone();
    let last = log
        .iter()
        .rposition(|l| matches!(l, Logged::Prefetch(_)))
        .expect("no prefetch");
    let Logged::Prefetch(announced) = &log[last] else {
        unreachable!()
    };
    let reads: Vec<_> = log[last + 1..]
        .iter()
        .filter_map(|l| match l {
            Logged::Read(r) => Some(r.clone()),
            Logged::Prefetch(_) => None,
        })
        .collect();
    assert!(!reads.is_empty());
    for r in &reads {
        assert!(
            announced
                .iter()
                .any(|a| a.start <= r.start && r.end <= a.end),
            "read {r:?} was not announced"
        );
    }
    announced.clone()
}

#[test]
fn tbl2_reads_in_any_order_announce_their_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.tbl");
    write_tbl(&path, true, 300, |i| {
        (0..(500 + i)).map(|k| (k ^ i) as u8).collect()
    });
    let local = dataformats::open(&path).unwrap();
    let remote = Arc::new(Remote::new(std::fs::read(&path).unwrap()));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    let picks = [250u64, 3, 77, 78, 12, 299, 0];
    remote.log.lock().unwrap().clear();
    let got = d.take_arrays(&[0], &picks).unwrap();
    assert_eq!(got, local.take_arrays(&[0], &picks).unwrap());
    assert_eq!(reads_were_announced(&remote).len(), picks.len());
    // Columns without sample bytes announce nothing.
    remote.log.lock().unwrap().clear();
    d.read_arrays(&[2, 3], 0..300).unwrap();
    assert!(remote.log.lock().unwrap().is_empty());
}

#[test]
fn mldf_reads_announce_the_metadata_rows_they_then_read() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let mut text = String::from("a,b\n");
    for i in 0..2000 {
        text.push_str(&format!("{i},{}\n", i as f64 / 7.0));
    }
    std::fs::write(&csv, text).unwrap();
    let path = dir.path().join("t.mldf");
    dataformats::convert::convert(&csv, &path, &Default::default()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let r = dataformats::mldf::Reader::from_bytes(bytes.clone()).unwrap();
    let (base, row) = (r.header().metadata_ptr, r.row_size());
    let meta = base..base + r.len() * row;
    let local = dataformats::open(&path).unwrap();
    let remote = Arc::new(Remote::new(bytes));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    remote.log.lock().unwrap().clear();
    let got = d.read_arrays(&[0, 1], 500..1500).unwrap();
    assert_eq!(got, local.read_arrays(&[0, 1], 500..1500).unwrap());
    let log = remote.log.lock().unwrap().clone();
    let want = base + 500 * row..base + 1500 * row;
    assert_eq!(log.first(), Some(&Logged::Prefetch(vec![want.clone()])));
    let mut metadata_reads = 0;
    for l in &log[1..] {
        if let Logged::Read(x) = l
            && x.start < meta.end
            && meta.start < x.end
        {
            metadata_reads += 1;
            assert!(
                want.start <= x.start && x.end <= want.end,
                "{x:?} not announced"
            );
        }
    }
    assert!(metadata_reads > 0);
}

fn vector(format: &str, name: &str) -> std::path::PathBuf {
    dataformats::core::testing::all_vectors()
        .into_iter()
        .find(|(f, p, _)| *f == format && p.file_name().is_some_and(|n| n == name))
        .map(|(_, p, _)| p)
        .unwrap_or_else(|| panic!("vector {format}/{name} is missing"))
}

#[test]
fn cbf_reads_announce_the_chunks_they_then_read() {
    let path = vector("cntk", "cntkrepo_seqcla_train.bin");
    let bytes = std::fs::read(&path).unwrap();
    let local = dataformats::open(&path).unwrap();
    let remote = Arc::new(Remote::new(bytes));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    let all: Vec<usize> = (0..d.schema().fields().len()).collect();
    remote.log.lock().unwrap().clear();
    let got = d.read_arrays(&all, 1000..2000).unwrap();
    assert_eq!(got, local.read_arrays(&all, 1000..2000).unwrap());
    let announced = reads_were_announced(&remote);
    // The chunks holding samples 1000..2000, not the whole file.
    let r = dataformats::cntk::Reader::open(&path).unwrap();
    let mut first = 0u64;
    let mut want = 0;
    for c in r.chunks() {
        let next = first + u64::from(c.num_samples);
        if first < 2000 && next > 1000 {
            want += 1;
        }
        first = next;
    }
    assert_eq!(announced.len(), want, "{announced:?}");
    assert!(want < r.chunks().len());
    // An announcement of the batch after: fetched early, read later.
    remote.log.lock().unwrap().clear();
    d.prefetch(&all, 3000..3100);
    assert!(matches!(
        remote.log.lock().unwrap().first(),
        Some(Logged::Prefetch(r)) if !r.is_empty()
    ));
}

#[test]
fn bloscpack_reads_announce_the_chunks_they_then_read() {
    // 13 chunks of 8,192 float64 values.
    let path = vector("bloscpack", "f8_default_args_64k_chunks.blp");
    let bytes = std::fs::read(&path).unwrap();
    let local = dataformats::open(&path).unwrap();
    let remote = Arc::new(Remote::new(bytes));
    let d = dataformats::open_source(Source::from_ranges(remote.clone()), &OpenOptions::default())
        .unwrap();
    remote.log.lock().unwrap().clear();
    let got = d.read_arrays(&[0], 10_000..30_000).unwrap();
    assert_eq!(got, local.read_arrays(&[0], 10_000..30_000).unwrap());
    // Rows 8,192..32,767: chunks 1, 2 and 3.
    let announced = reads_were_announced(&remote);
    assert_eq!(announced.len(), 3, "{announced:?}");
}
