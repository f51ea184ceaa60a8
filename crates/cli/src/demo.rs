//! `dataformats demo`: write small files, read them back, say what happened.
//!
//! For every format this build supports, the demo writes a small file,
//! inspects and validates it. Until the first format crate lands it exercises
//! the shared core that every format reads through: each codec compresses a
//! small synthetic feature table into a file written atomically, and the file
//! is read back through both a memory map and positioned reads, decoded into a
//! buffer of the declared size, and checked against its CRC-32 and SHA-256.

use std::io::Write;
use std::path::{Path, PathBuf};

use dataformats::Format;
use dataformats::core::codec::{self, BloscCompressor, BloscParams, Codec, Shuffle, blosc};
use dataformats::core::{AtomicFile, ChecksumKind, Source};
use serde_json::json;

use crate::output::say;
use crate::{Failure, progress};

/// A synthetic feature table: `rows` rows of (id: u32, x: f32, y: f32, label: u8).
fn feature_table(rows: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows as usize * 13);
    for i in 0..rows {
        let x = (i as f32 * 0.01).sin();
        let y = (i % 97) as f32 / 97.0;
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&y.to_le_bytes());
        out.push((i % 10) as u8);
    }
    out
}

enum Packer {
    Stream(Codec),
    Blosc(BloscParams),
}

impl Packer {
    fn name(&self) -> String {
        match self {
            Packer::Stream(c) => c.name().to_string(),
            Packer::Blosc(p) => format!("blosc-{}-{}", p.compressor, p.shuffle.name()),
        }
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Packer::Stream(c) => codec::compress(*c, data, None).map_err(|e| e.to_string()),
            Packer::Blosc(p) => blosc::compress(data, p).map_err(|e| e.to_string()),
        }
    }

    fn unpack(&self, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        match self {
            Packer::Stream(c) => codec::decompress_into(*c, src, dst)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Packer::Blosc(_) => blosc::decompress_into(src, dst, 1)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

pub(crate) fn run(dir: Option<PathBuf>, json: bool) -> Result<(), Failure> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("dataformats-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::new(
            1,
            "io",
            Some(&dir),
            format!("cannot create the demo directory: {e}"),
        )
    })?;

    let landed: Vec<Format> = Format::ALL
        .into_iter()
        .filter(|f| f.is_available())
        .collect();
    let table = feature_table(20_000);
    let crc = ChecksumKind::Crc32.digest(&table);
    let sha = ChecksumKind::Sha256.digest(&table);

    let packers = {
        let mut v: Vec<Packer> = Codec::ALL.into_iter().map(Packer::Stream).collect();
        for (c, s) in [
            (BloscCompressor::BloscLz, Shuffle::Byte),
            (BloscCompressor::Lz4, Shuffle::Byte),
            (BloscCompressor::Zstd, Shuffle::Bit),
        ] {
            v.push(Packer::Blosc(BloscParams::new(c, 5, s, 13)));
        }
        v
    };

    if !json {
        say!("dataformats demo, writing to {}", dir.display());
        if landed.is_empty() {
            say!(
                "no format crate has landed in this build yet; exercising the shared core every format reads through"
            );
        }
        say!(
            "input: a feature table of 20000 rows x (u32, f32, f32, u8), {} bytes, crc32 {:08x}",
            table.len(),
            crc.value().unwrap_or(0)
        );
        say!();
        say!(
            "{:<22} {:>9} {:>7}  {:<12} result",
            "codec",
            "file size",
            "ratio",
            "read back"
        );
    }

    let bar = progress::bytes(table.len() as u64 * packers.len() as u64, "demo", json);
    let mut rows = Vec::new();
    let mut failures = 0usize;
    for p in &packers {
        let path = dir.join(format!("table.{}.bin", p.name()));
        let outcome = round_trip(p, &table, &path, crc.as_bytes(), sha.as_bytes());
        bar.inc(table.len() as u64);
        let (size, ok, why) = match &outcome {
            Ok(size) => (
                *size,
                true,
                String::from("ok: decoded size, crc32 and sha256 match"),
            ),
            Err(e) => (0, false, e.clone()),
        };
        if !ok {
            failures += 1;
        }
        let ratio = if size > 0 {
            table.len() as f64 / size as f64
        } else {
            0.0
        };
        if !json {
            bar.suspend(|| {
                say!(
                    "{:<22} {:>9} {:>6.2}x  {:<12} {}",
                    p.name(),
                    size,
                    ratio,
                    if ok { "mmap + pread" } else { "-" },
                    why
                );
            });
        }
        rows.push(json!({
            "codec": p.name(),
            "file": path.display().to_string(),
            "file_size": size,
            "ratio": ratio,
            "ok": ok,
            "result": why,
        }));
    }
    bar.finish_and_clear();

    if json {
        let v = json!({
            "dir": dir.display().to_string(),
            "formats_landed": landed.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "input_bytes": table.len(),
            "input_crc32": crc.to_hex(),
            "codecs": rows,
            "failures": failures,
        });
        say!("{v}");
    } else {
        say!();
        say!(
            "{} of {} round trips ok; files are in {}",
            packers.len() - failures,
            packers.len(),
            dir.display()
        );
        say!(
            "next: `dataformats formats` lists what this build reads; `dataformats inspect FILE` looks inside one"
        );
    }
    if failures > 0 {
        return Err(Failure::new(
            1,
            "demo",
            Some(&dir),
            format!("{failures} round trip(s) failed"),
        ));
    }
    Ok(())
}

/// Packs `data`, writes it atomically to `path` as `[u64 decoded size][payload]`,
/// then reads it back through a map and through positioned reads and checks it.
/// Returns the file size.
fn round_trip(p: &Packer, data: &[u8], path: &Path, crc: &[u8], sha: &[u8]) -> Result<u64, String> {
    let payload = p.pack(data)?;
    let mut f = AtomicFile::create(path).map_err(|e| e.to_string())?;
    f.write_all(&(data.len() as u64).to_le_bytes())
        .map_err(|e| e.to_string())?;
    f.write_all(&payload).map_err(|e| e.to_string())?;
    f.finish().map_err(|e| e.to_string())?;

    // SAFETY: the demo just wrote this file and nothing else modifies it while mapped.
    let mapped = unsafe { Source::map(path) }.map_err(|e| e.to_string())?;
    let positioned = Source::open(path).map_err(|e| e.to_string())?;
    for (how, src) in [("mmap", &mapped), ("positioned", &positioned)] {
        let mut size = [0u8; 8];
        src.read_at(0, &mut size)
            .map_err(|e| format!("{how}: {e}"))?;
        let declared = u64::from_le_bytes(size);
        let body = src
            .bytes(8, src.len() - 8)
            .map_err(|e| format!("{how}: {e}"))?;
        let mut out = dataformats::core::Limits::default()
            .alloc_zeroed("demo output", declared)
            .map_err(|e| format!("{how}: {e}"))?;
        p.unpack(&body, &mut out)
            .map_err(|e| format!("{how}: {e}"))?;
        if ChecksumKind::Crc32.digest(&out).as_bytes() != crc {
            return Err(format!("{how}: crc32 mismatch"));
        }
        if ChecksumKind::Sha256.digest(&out).as_bytes() != sha {
            return Err(format!("{how}: sha256 mismatch"));
        }
    }
    Ok(mapped.len())
}
