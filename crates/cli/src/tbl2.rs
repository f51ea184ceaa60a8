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

/// `inspect`: header and a summary of the index (counts per format, sizes,
/// dimensions, metadata); `all` lists every sample too.
pub(crate) fn inspect(path: &Path, all: bool, as_json: bool) -> Result<(), Failure> {
    use std::collections::BTreeMap;
    let r = open(path)?;
    let h = r.header();
    let blocks = r.metadata_blocks().map_err(|e| fail(path, &e))?;
    let index = r.index();
    let mut formats: BTreeMap<String, u64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let (mut stored, mut decoded, mut lz4) = (0u64, 0u64, 0u64);
    let mut dims: Option<((u16, u16), (u16, u16))> = None;
    for e in index {
        *formats.entry(e.format.name()).or_default() += 1;
        stored += u64::from(e.size);
        decoded += u64::from(e.uncompressed_size);
        lz4 += u64::from(e.is_compressed());
        if e.width > 0 || e.height > 0 {
            let ((w0, w1), (h0, h1)) = dims.unwrap_or(((e.width, e.width), (e.height, e.height)));
            dims = Some((
                (w0.min(e.width), w1.max(e.width)),
                (h0.min(e.height), h1.max(e.height)),
            ));
        }
    }
    for b in blocks.iter() {
        *kinds.entry(b.kind.name()).or_default() += 1;
    }
    let with_dims = index.iter().filter(|e| e.width > 0 || e.height > 0).count();
    if as_json {
        let mut v = json!({"format": "tbl2", "version": h.version, "num_samples": h.num_samples,
            "flags": h.flags, "file_size": r.source().len(), "stored_bytes": stored,
            "decoded_bytes": decoded, "lz4_samples": lz4, "formats": formats,
            "metadata_types": kinds, "samples_with_dimensions": with_dims,
            "width": dims.map(|d| [d.0.0, d.0.1]), "height": dims.map(|d| [d.1.0, d.1.1])});
        if let (true, Some(o)) = (all, v.as_object_mut()) {
            o.insert(
                "samples".into(),
                index
                    .iter()
                    .map(|e| json!({"offset": e.offset, "size": e.size, "uncompressed_size": e.uncompressed_size, "width": e.width, "height": e.height, "format": e.format.name(), "compressed": e.is_compressed(), "has_metadata": e.has_metadata(), "crc16": e.checksum}))
                    .collect(),
            );
            o.insert(
                "metadata_blocks".into(),
                blocks
                    .iter()
                    .map(|b| json!({"sample_index": b.sample_index, "type": b.kind.name(), "size": b.size}))
                    .collect(),
            );
        }
        say!("{v}");
        return Ok(());
    }
    let counts = |m: &BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    say!(
        "{}: TBL v2, {} sample(s), {} bytes, flags 0x{:x}",
        path.display(),
        h.num_samples,
        r.source().len(),
        h.flags
    );
    say!("samples: {stored} bytes stored, {decoded} decoded, {lz4} LZ4-compressed");
    say!("formats: {}", counts(&formats));
    match dims {
        Some(((w0, w1), (h0, h1))) => {
            say!("dimensions: {with_dims} sample(s), width {w0}..={w1}, height {h0}..={h1}")
        }
        None => say!("dimensions: none cached"),
    }
    say!(
        "metadata: {} block(s), {} bytes{}",
        blocks.len(),
        h.metadata_size,
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts(&kinds))
        }
    );
    if !all {
        if !index.is_empty() {
            say!("(--all lists every sample)");
        }
        return Ok(());
    }
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
    for (i, e) in index.iter().enumerate() {
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
    let result = r.validate_with(&mut progress::report(&bar));
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

/// `inspect`/`validate` on a tar (which `convert` turns into TBL v2): its
/// members as TurboLoader's converter sees them; a tar cut short inside a
/// member is invalid.
pub(crate) fn tar_file(path: &Path, validate: bool, as_json: bool) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::new(1, "io", Some(path), e.to_string());
    let f = std::fs::File::open(path).map_err(io)?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let scan = dataformats::tbl2::tar::scan_tar(&mut r).map_err(|e| fail(path, &e))?;
    if validate {
        if let Some(name) = &scan.truncated_member {
            return Err(Failure::new(
                1,
                "Truncated",
                Some(path),
                format!("the tar ends inside member {name:?}"),
            ));
        }
    }
    let samples: u64 = scan.samples.values().sum();
    if as_json {
        say!(
            "{}",
            json!({"format": "tar", "valid": scan.truncated_member.is_none(), "members": scan.members,
                "samples": scan.samples, "sample_bytes": scan.sample_bytes,
                "skipped": scan.skipped, "truncated_member": scan.truncated_member})
        );
        return Ok(());
    }
    let formats: Vec<String> = scan
        .samples
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    say!(
        "{}: {}tar, {} member(s): {samples} sample(s) for TBL v2 ({}; {} bytes), {} skipped{}",
        path.display(),
        if validate { "ok: " } else { "" },
        scan.members,
        formats.join(", "),
        scan.sample_bytes,
        scan.skipped,
        scan.truncated_member
            .as_ref()
            .map(|n| format!("; cut short inside {n:?}"))
            .unwrap_or_default()
    );
    Ok(())
}
