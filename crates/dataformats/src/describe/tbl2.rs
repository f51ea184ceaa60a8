//! TurboLoader TBL v2 files, and tar archives as its converter sees them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::{Description, DumpOptions, Listing, put};
use crate::core::Progress;
use crate::dataset::Error;
use crate::tbl2::{ErrorKind, ReadOptions, Reader, Stage};

fn open(path: &Path) -> Result<Reader, Error> {
    Reader::with_options(crate::dataset::map_file(path)?, ReadOptions::default())
        .map_err(Error::Tbl2)
}

/// `name n, name n, ...`
fn counts(m: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}

/// The header and a summary of the index (counts per format, sizes,
/// dimensions, metadata); `all` lists every sample and metadata block too.
pub(super) fn inspect(path: &Path, all: bool) -> Result<Description, Error> {
    let r = open(path)?;
    let h = r.header();
    let blocks = r.metadata_blocks().map_err(Error::Tbl2)?;
    let index = r.index();
    let mut formats: BTreeMap<String, u64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let (mut stored, mut decoded, mut lz4, mut with_dims) = (0u64, 0u64, 0u64, 0u64);
    let mut dims: Option<((u16, u16), (u16, u16))> = None;
    for e in index.iter() {
        *formats.entry(e.format.name()).or_default() += 1;
        stored += u64::from(e.size);
        decoded += u64::from(e.uncompressed_size);
        lz4 += u64::from(e.is_compressed());
        if e.width > 0 || e.height > 0 {
            with_dims += 1;
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
    let mut json = json!({"format": "tbl2", "version": h.version, "num_samples": h.num_samples,
        "flags": h.flags, "file_size": r.source().len(), "stored_bytes": stored,
        "decoded_bytes": decoded, "lz4_samples": lz4, "formats": formats,
        "metadata_types": kinds, "samples_with_dimensions": with_dims,
        "width": dims.map(|d| [d.0.0, d.0.1]), "height": dims.map(|d| [d.1.0, d.1.1])});
    let mut t = String::new();
    put!(
        t,
        "{}: TBL v2, {} sample(s), {} bytes, flags 0x{:x}",
        path.display(),
        h.num_samples,
        r.source().len(),
        h.flags
    );
    put!(
        t,
        "samples: {stored} bytes stored, {decoded} decoded, {lz4} LZ4-compressed"
    );
    put!(t, "formats: {}", counts(&formats));
    match dims {
        Some(((w0, w1), (h0, h1))) => put!(
            t,
            "dimensions: {with_dims} sample(s), width {w0}..={w1}, height {h0}..={h1}"
        ),
        None => put!(t, "dimensions: none cached"),
    }
    let kinds_text = if kinds.is_empty() {
        String::new()
    } else {
        format!(" ({})", counts(&kinds))
    };
    put!(
        t,
        "metadata: {} block(s), {} bytes{kinds_text}",
        blocks.len(),
        h.metadata_size
    );
    if !all {
        if !index.is_empty() {
            put!(t, "(--all lists every sample)");
        }
        return Ok(Description::new("tbl2", json, t));
    }
    if let Some(o) = json.as_object_mut() {
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
    put!(t);
    put!(
        t,
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
        put!(
            t,
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
    Ok(Description::new("tbl2", json, t))
}

pub(super) fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let r = open(path)?;
    let total: u64 = (0..r.len())
        .filter_map(|i| r.sample_len(i).ok())
        .map(|n| n as u64)
        .sum();
    r.validate_with(progress).map_err(Error::Tbl2)?;
    let json = json!({"valid": true, "format": "tbl2", "samples": r.len(), "bytes": total});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} sample(s), {total} bytes decoded, header CRC-32 and every CRC-16 checked, metadata walked",
        path.display(),
        r.len()
    );
    Ok(Description::new("tbl2", json, t))
}

/// The index entries of `opts.rows` (with their metadata), one
/// `index<TAB>json` line each, or with `as_json` one JSON array.
pub(super) fn dump(
    path: &Path,
    opts: &DumpOptions,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let r = open(path)?;
    let range = opts.clamp(r.len() as u64);
    let mut list = Listing::new(out, as_json)?;
    for i in range {
        let e = r.entry(i as usize).map_err(Error::Tbl2)?;
        let meta = r.read_metadata(i as usize).map_err(Error::Tbl2)?;
        let meta =
            meta.map(|(k, d)| json!({"type": k.name(), "text": String::from_utf8_lossy(&d)}));
        let bytes = r.sample_len(i as usize).map_err(Error::Tbl2)?;
        let row = json!({"sample": i, "format": e.format.name(), "width": e.width, "height": e.height, "bytes": bytes, "metadata": meta});
        list.item(i, &row)?;
    }
    list.finish()
}

/// A tar's members as TurboLoader's converter sees them (read through,
/// nothing kept); `validated`: a tar cut short inside a member is an error.
pub(super) fn tar(path: &Path, validated: bool) -> Result<Description, Error> {
    let f = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let scan = crate::tbl2::tar::scan_tar(&mut r).map_err(Error::Tbl2)?;
    if let (true, Some(name)) = (validated, &scan.truncated_member) {
        return Err(Error::Tbl2(
            crate::tbl2::Error::new(
                ErrorKind::Tar,
                format!("the tar ends inside member {name:?}"),
            )
            .in_stage(Stage::Open),
        ));
    }
    let samples: u64 = scan.samples.values().sum();
    let json = json!({"format": "tar", "valid": scan.truncated_member.is_none(), "members": scan.members,
        "samples": scan.samples, "sample_bytes": scan.sample_bytes,
        "skipped": scan.skipped, "truncated_member": scan.truncated_member});
    let mut t = String::new();
    put!(
        t,
        "{}: {}tar, {} member(s): {samples} sample(s) for TBL v2 ({}; {} bytes), {} skipped{}",
        path.display(),
        if validated { "ok: " } else { "" },
        scan.members,
        counts(&scan.samples),
        scan.sample_bytes,
        scan.skipped,
        scan.truncated_member
            .as_ref()
            .map(|n| format!("; cut short inside {n:?}"))
            .unwrap_or_default()
    );
    Ok(Description::new("tar", json, t))
}
