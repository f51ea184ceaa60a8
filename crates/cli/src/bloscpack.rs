//! `dataformats` commands on Bloscpack files.

use std::path::Path;

use dataformats::bloscpack::format::checksum_name;
use dataformats::bloscpack::{ReadOptions, Reader, WriteOptions, npy, values};
use dataformats::core::Source;
use serde_json::{Value, json};

use crate::output::say;
use crate::{Failure, progress};

fn open(path: &Path) -> Result<Reader, Failure> {
    // SAFETY: the CLI only reads the file; it documents that files must not be
    // modified while it runs (a concurrent truncation could fault the map).
    let src = unsafe { Source::map(path) }
        .map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    Reader::with_options(src, ReadOptions::default()).map_err(|e| fail(path, &e))
}

pub(crate) fn fail(path: &Path, e: &dataformats::bloscpack::Error) -> Failure {
    Failure::new(1, e.kind().as_str(), Some(path), e.to_string())
}

fn summary(r: &Reader) -> Value {
    let h = r.header();
    let chunks: Vec<Value> = r
        .chunks()
        .iter()
        .map(|c| {
            let b = c.blosc;
            json!({
                "offset": c.offset, "cbytes": b.cbytes, "nbytes": b.nbytes, "typesize": b.typesize,
                "blocksize": b.blocksize, "codec": b.compressor().map_or("unknown", |c| c.name()),
                "shuffle": if b.is_memcpyed() { "memcpyed" } else { b.shuffle().name() },
            })
        })
        .collect();
    json!({
        "format": "bloscpack",
        "format_version": h.format_version,
        "file_size": r.source().len(),
        "payload_bytes": r.payload_len(),
        "nchunks": h.nchunks,
        "chunk_size": h.chunk_size,
        "last_chunk": h.last_chunk,
        "typesize": h.typesize,
        "checksum": checksum_name(h.checksum),
        "offsets": h.has_offsets(),
        "max_app_chunks": h.max_app_chunks,
        "trailing_bytes": r.trailing_bytes(),
        "metadata": r.metadata().map(|m| json!({
            "codec": m.header.meta_codec.name(),
            "checksum": checksum_name(m.header.meta_checksum),
            "meta_size": m.header.meta_size,
            "max_meta_size": m.header.max_meta_size,
            "value": m.value,
        })),
        "array": r.numpy().map(|n| json!({"dtype": n.dtype.descr_json(), "shape": n.shape, "order": n.order.as_str()})),
        "chunks": chunks,
    })
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    if as_json {
        say!("{}", summary(&r));
        return Ok(());
    }
    let h = r.header();
    say!(
        "{}: Bloscpack format {}, {} bytes",
        path.display(),
        h.format_version,
        r.source().len()
    );
    say!(
        "payload   {} bytes in {} chunk(s) of {} (last {}), typesize {}",
        r.payload_len(),
        h.nchunks,
        h.chunk_size,
        h.last_chunk,
        h.typesize
    );
    say!(
        "checksum  {}; offsets table: {}{}",
        checksum_name(h.checksum),
        if h.has_offsets() { "yes" } else { "no" },
        if h.has_offsets() {
            format!(", {} slot(s) free for appends", h.max_app_chunks)
        } else {
            String::new()
        }
    );
    if let Some(m) = r.metadata() {
        say!(
            "metadata  {} bytes ({}, {} digest, {} reserved): {}",
            m.header.meta_size,
            m.header.meta_codec.name(),
            checksum_name(m.header.meta_checksum),
            m.header.max_meta_size,
            m.json_text
        );
    }
    if let Some(n) = r.numpy() {
        say!(
            "array     dtype {} shape {:?} order {}",
            n.dtype,
            n.shape,
            n.order.as_str()
        );
    }
    if r.trailing_bytes() > 0 {
        say!(
            "trailing  {} byte(s) after the last chunk (left by an append; ignored)",
            r.trailing_bytes()
        );
    }
    say!();
    say!(
        "{:>6} {:>12} {:>10} {:>10} {:>8} {:>9}  {:<8} shuffle",
        "chunk",
        "offset",
        "cbytes",
        "nbytes",
        "typesize",
        "blocksize",
        "codec"
    );
    for (i, c) in r.chunks().iter().enumerate() {
        let b = c.blosc;
        say!(
            "{:>6} {:>12} {:>10} {:>10} {:>8} {:>9}  {:<8} {}",
            i,
            c.offset,
            b.cbytes,
            b.nbytes,
            b.typesize,
            b.blocksize,
            b.compressor().map_or("unknown", |c| c.name()),
            if b.is_memcpyed() {
                "memcpyed"
            } else {
                b.shuffle().name()
            }
        );
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let bar = progress::bytes(r.payload_len(), "validate", as_json);
    let result = r.validate_with(&mut progress::report(&bar));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "bloscpack", "nchunks": r.nchunks(), "payload_bytes": r.payload_len()})
        );
    } else {
        say!(
            "{}: ok: {} chunk(s), {} payload bytes, every {} digest and every chunk checked",
            path.display(),
            r.nchunks(),
            r.payload_len(),
            checksum_name(r.header().checksum)
        );
    }
    Ok(())
}

pub(crate) fn dump(path: &Path, range: Option<(u64, u64)>, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let dtype = r.numpy().map(|n| n.dtype.clone());
    let itemsize = dtype.as_ref().map_or(1, |d| d.itemsize().max(1)) as u64;
    let count = r.payload_len() / itemsize;
    let (a, b) = range.unwrap_or((0, count));
    let b = b.min(count);
    let a = a.min(b);
    // Decode in slices of at most 1 MiB worth of elements.
    let step = ((1u64 << 20) / itemsize).max(1);
    let mut buf = Vec::new();
    let mut first = true;
    if as_json {
        crate::output::raw("[");
    }
    let mut i = a;
    while i < b {
        let n = step.min(b - i);
        buf.resize((n * itemsize) as usize, 0);
        r.read_range_into(i * itemsize, &mut buf)
            .map_err(|e| fail(path, &e))?;
        for (k, e) in buf.chunks_exact(itemsize as usize).enumerate() {
            let idx = i + k as u64;
            match &dtype {
                Some(d) => {
                    let v = values::element(d, e);
                    if as_json {
                        crate::output::raw(&format!("{}{v}", if first { "" } else { "," }));
                    } else {
                        say!("{idx}\t{v}");
                    }
                }
                None => {
                    if as_json {
                        crate::output::raw(&format!(
                            "{}{}",
                            if first { "" } else { "," },
                            e.first().copied().unwrap_or(0)
                        ));
                    }
                }
            }
            first = false;
        }
        if dtype.is_none() && !as_json {
            for (row, line) in buf.chunks(16).enumerate() {
                let hex: Vec<String> = line.iter().map(|x| format!("{x:02x}")).collect();
                let text: String = line
                    .iter()
                    .map(|&c| {
                        if (0x20..0x7f).contains(&c) {
                            char::from(c)
                        } else {
                            '.'
                        }
                    })
                    .collect();
                say!(
                    "{:08x}  {:<47}  {}",
                    i + row as u64 * 16,
                    hex.join(" "),
                    text
                );
            }
        }
        i += n;
    }
    if as_json {
        say!("]");
    }
    Ok(())
}

/// Settings for writing Bloscpack files from the command line.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct PackArgs {
    /// Blosc compressor.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    codec: Option<crate::args::Codec>,
    /// Compression level 0..=9.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=9), help_heading = "Bloscpack output")]
    clevel: Option<u8>,
    /// Shuffle filter.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    shuffle: Option<crate::args::ShuffleArg>,
    /// Uncompressed bytes per chunk (suffixes K, M, G allowed); CNTK: bytes per chunk.
    #[arg(long, help_heading = "Bloscpack output")]
    pub(crate) chunk_size: Option<String>,
    /// Per-chunk checksum.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    checksum: Option<crate::args::Checksum>,
    /// Blosc typesize (default: the array's itemsize, 8 for raw bytes).
    #[arg(long, help_heading = "Bloscpack output")]
    typesize: Option<usize>,
    /// Write no offsets table.
    #[arg(long, help_heading = "Bloscpack output")]
    no_offsets: bool,
    /// Offset slots reserved for appends (default 10 × nchunks).
    #[arg(long, help_heading = "Bloscpack output")]
    max_app_chunks: Option<u64>,
    /// Append IN's bytes to the existing Bloscpack file OUT instead of writing a new file.
    #[arg(long, help_heading = "Bloscpack output")]
    pub(crate) append: bool,
}

impl PackArgs {
    pub(crate) fn options(&self) -> Result<WriteOptions, Failure> {
        let usage = |m: String| Failure::new(2, "usage", None, m);
        let mut o = WriteOptions::default();
        if let Some(c) = self.codec {
            o = o.codec(c.compressor());
        }
        if let Some(l) = self.clevel {
            o = o.clevel(l);
        }
        if let Some(s) = self.shuffle {
            o = o.shuffle(s.shuffle());
        }
        if let Some(s) = &self.chunk_size {
            o = o.chunk_size(parse_size(s).ok_or_else(|| usage(format!("bad chunk size `{s}`")))?);
        }
        if let Some(c) = self.checksum {
            o = o.checksum(c.kind());
        }
        if let Some(t) = self.typesize {
            o = o.typesize(t);
        }
        if self.no_offsets {
            o = o.offsets(false);
        }
        if let Some(m) = self.max_app_chunks {
            o = o.max_app_chunks(m);
        }
        Ok(o)
    }
}

pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1usize << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}

/// `convert IN OUT --append`: appends IN's bytes (an `.npy` file's array bytes,
/// or the raw file) to the Bloscpack file OUT in place.
pub(crate) fn append(
    input: &Path,
    output: &Path,
    args: &PackArgs,
    as_json: bool,
) -> Result<(), Failure> {
    let opts = args.options()?;
    let in_ext = input
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let bytes = if in_ext == "npy" {
        let src =
            Source::open(input).map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
        let h = npy::read_header(&src).map_err(|e| fail(input, &e))?;
        src.read_vec(
            h.data_offset,
            src.len() - h.data_offset,
            &dataformats::core::Limits::default(),
        )
        .map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?
    } else {
        std::fs::read(input).map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?
    };
    let n = dataformats::bloscpack::append(output, &bytes, &opts).map_err(|e| fail(output, &e))?;
    let r = open(output)?;
    if as_json {
        say!(
            "{}",
            json!({"appended": bytes.len(), "new_chunks": n, "nchunks": r.nchunks(), "payload_bytes": r.payload_len(), "max_app_chunks": r.header().max_app_chunks})
        );
    } else {
        say!(
            "{}: appended {} bytes ({n} new chunk(s)); now {} chunk(s), {} payload bytes, {} slot(s) left",
            output.display(),
            bytes.len(),
            r.nchunks(),
            r.payload_len(),
            r.header().max_app_chunks
        );
    }
    Ok(())
}

/// `inspect`/`validate` on an `.npy` file (which `convert` reads): its
/// header, and whether the array bytes it promises are all there.
pub(crate) fn npy_file(path: &Path, validate: bool, as_json: bool) -> Result<(), Failure> {
    let src = Source::open(path).map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    let h = npy::read_header(&src).map_err(|e| fail(path, &e))?;
    let nbytes = h.array.nbytes().unwrap_or(0);
    let trailing = src.len().saturating_sub(h.data_offset + nbytes);
    if as_json {
        say!(
            "{}",
            json!({"format": "npy", "valid": true, "version": [h.version.0, h.version.1],
                "dtype": h.array.dtype.to_string(), "shape": h.array.shape,
                "fortran_order": h.array.order == dataformats::bloscpack::Order::F,
                "data_offset": h.data_offset, "data_bytes": nbytes, "trailing_bytes": trailing})
        );
        return Ok(());
    }
    say!(
        "{}: {}numpy .npy {}.{}: dtype {}, shape {:?}, {} order, {nbytes} bytes at {}{}",
        path.display(),
        if validate { "ok: " } else { "" },
        h.version.0,
        h.version.1,
        h.array.dtype,
        h.array.shape,
        if h.array.order == dataformats::bloscpack::Order::F {
            "Fortran"
        } else {
            "C"
        },
        h.data_offset,
        if trailing > 0 {
            format!(" ({trailing} bytes after the array)")
        } else {
            String::new()
        }
    );
    Ok(())
}
