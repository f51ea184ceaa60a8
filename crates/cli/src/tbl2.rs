//! `dataformats` commands on TurboLoader TBL v2 files.

use std::path::Path;

use dataformats::core::Source;
use dataformats::tbl2::{ReadOptions, Reader};
use serde_json::json;

use crate::output::say;
use crate::{Failure, progress};

pub(crate) fn fail(path: &Path, e: &dataformats::tbl2::Error) -> Failure {
    Failure::new(1, e.kind().as_str(), Some(path), e.to_string())
}

fn open(path: &Path) -> Result<Reader, Failure> {
    // SAFETY: the CLI only reads the file and documents that it must not be
    // modified while the command runs.
    let src = unsafe { Source::map(path) }
        .map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    Reader::with_options(src, ReadOptions::default()).map_err(|e| fail(path, &e))
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let h = r.header();
    let blocks = r.metadata_blocks().map_err(|e| fail(path, &e))?;
    if as_json {
        let samples: Vec<_> = r
            .index()
            .iter()
            .map(|e| json!({"offset": e.offset, "size": e.size, "uncompressed_size": e.uncompressed_size, "width": e.width, "height": e.height, "format": e.format.name(), "compressed": e.is_compressed(), "has_metadata": e.has_metadata(), "crc16": e.checksum}))
            .collect();
        let meta: Vec<_> = blocks
            .iter()
            .map(|b| json!({"sample_index": b.sample_index, "type": b.kind.name(), "size": b.size}))
            .collect();
        say!(
            "{}",
            json!({"format": "tbl2", "version": h.version, "num_samples": h.num_samples, "flags": h.flags, "file_size": r.source().len(), "metadata_blocks": meta, "samples": samples})
        );
        return Ok(());
    }
    say!(
        "{}: TBL v2, {} sample(s), {} bytes, flags 0x{:x}",
        path.display(),
        h.num_samples,
        r.source().len(),
        h.flags
    );
    say!(
        "metadata: {} block(s), {} bytes",
        blocks.len(),
        h.metadata_size
    );
    say!();
    say!(
        "{:>8} {:>12} {:>10} {:>12} {:>6} {:>6}  {:<7} {:<4} crc16",
        "sample",
        "offset",
        "stored",
        "decoded",
        "width",
        "height",
        "format",
        "lz4"
    );
    for (i, e) in r.index().iter().enumerate() {
        say!(
            "{:>8} {:>12} {:>10} {:>12} {:>6} {:>6}  {:<7} {:<4} {:04x}{}",
            i,
            e.offset,
            e.size,
            e.uncompressed_size,
            e.width,
            e.height,
            e.format.name(),
            if e.is_compressed() { "yes" } else { "no" },
            e.checksum,
            if e.has_metadata() { "  +metadata" } else { "" }
        );
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let total: u64 = (0..r.len())
        .filter_map(|i| r.sample_len(i).ok())
        .map(|n| n as u64)
        .sum();
    let bar = progress::bytes(total, "validate", as_json);
    let result = r.validate_with(|n| bar.inc(n));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "tbl2", "samples": r.len(), "bytes": total})
        );
    } else {
        say!(
            "{}: ok: {} sample(s), {total} bytes decoded, header CRC-32 and every CRC-16 checked, metadata walked",
            path.display(),
            r.len()
        );
    }
    Ok(())
}

/// `dump FILE [--range A..B]`: the index table rows (and metadata) as lines or JSON.
pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let n = r.len() as u64;
    let (a, b) = range.unwrap_or((0, n));
    let (a, b) = (a.min(n), b.min(n));
    let mut rows = Vec::new();
    for i in a..b {
        let e = *r.entry(i as usize).map_err(|e| fail(path, &e))?;
        let meta = r.read_metadata(i as usize).map_err(|e| fail(path, &e))?;
        let meta =
            meta.map(|(k, d)| json!({"type": k.name(), "text": String::from_utf8_lossy(&d)}));
        let row = json!({"sample": i, "format": e.format.name(), "width": e.width, "height": e.height, "bytes": r.sample_len(i as usize).unwrap_or(0), "metadata": meta});
        if as_json {
            rows.push(row);
        } else {
            say!("{i}\t{row}");
        }
    }
    if as_json {
        say!("{}", serde_json::Value::Array(rows));
    }
    Ok(())
}

/// `dump FILE --sample I --out PATH`: one sample's decoded bytes to a file.
pub(crate) fn extract(path: &Path, sample: u64, out: &Path) -> Result<(), Failure> {
    let r = open(path)?;
    let data = r.read_sample(sample as usize).map_err(|e| fail(path, &e))?;
    std::fs::write(out, &data).map_err(|e| Failure::new(1, "io", Some(out), e.to_string()))?;
    say!(
        "sample {sample}: {} bytes written to {}",
        data.len(),
        out.display()
    );
    Ok(())
}
