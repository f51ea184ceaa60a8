//! The pairs [`super::convert`] does not take through typed batches,
//! because a direct path is byte-exact with the reference tool or reads
//! input that has no typed view:
//!
//! - CNTK text (CTF) → CNTK binary, as ctf2bin.py writes it (CTF names no
//!   stream types, so [`CtfOptions`] gives them), and CNTK binary → CTF;
//! - tar → TBL v2, as TurboLoader's converter writes it, and TBL v2 → tar;
//! - `.npy` → Bloscpack, Bloscpack → `.npy`, Bloscpack → Bloscpack (the
//!   payload re-packed with other settings), any other file → Bloscpack
//!   (its bytes as the payload), BLZ/bcolz → `.npy`;
//! - CSV → IDV with ML.NET TextLoader columns ([`super::text`]);
//! - JSON lines → MLDF with an MLDF schema ([`super::mldf_json`]).

use std::path::Path;

use super::{ConvertOptions, Report, Target};
use crate::Format;
use crate::dataset::Error;

/// CNTK text input settings: what ctf2bin.py takes besides the text.
#[cfg(feature = "cntk")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtfOptions {
    /// The streams, in the binary's order (CTF text carries no types).
    pub streams: Vec<crate::cntk::ctf::StreamSpec>,
    /// The element type of every stream.
    pub precision: crate::cntk::ElemType,
}

#[cfg(feature = "cntk")]
impl Default for CtfOptions {
    fn default() -> Self {
        CtfOptions {
            streams: Vec::new(),
            precision: crate::cntk::ElemType::F32,
        }
    }
}

fn ext(p: &Path) -> String {
    p.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The size of `p` in bytes (0 if unknown), the total of byte progress.
fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Converts `input` to `output` on a direct path when `(from, target)` is
/// one; `None` when the pair goes through typed batches.
pub(crate) fn convert(
    input: &Path,
    output: &Path,
    from: Option<Format>,
    target: Target,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Option<Result<Report, Error>> {
    let in_ext = ext(input);
    let mut report = Report {
        from: from.map_or_else(|| in_ext.clone(), |f| f.name().to_string()),
        to: target.name().to_string(),
        ..Report::default()
    };
    let records = match (from, target) {
        #[cfg(feature = "cntk")]
        (Some(Format::Ctf), t) => match t {
            Target::Cntk => ctf_to_cbf(input, output, opts, &mut report, progress),
            _ => Err(Error::Unsupported {
                format: Some(Format::Ctf),
                message: "CNTK text (CTF) converts only to CNTK binary (.bin): it names no \
                          stream types, which the conversion takes as options"
                    .into(),
            }),
        },
        #[cfg(feature = "cntk")]
        (Some(Format::Cntk), Target::Ctf) => cbf_to_ctf(input, output),
        #[cfg(feature = "tbl2")]
        (None, Target::Tbl2) if in_ext == "tar" => {
            tar_to_tbl(input, output, opts, &mut report, progress)
        }
        #[cfg(feature = "tbl2")]
        (Some(Format::Tbl2), Target::Tar) => tbl_to_tar(input, output, progress),
        #[cfg(feature = "bloscpack")]
        (None, Target::Bloscpack) if in_ext == "npy" => {
            let o = &opts.bloscpack.write;
            crate::bloscpack::npy::npy_to_bloscpack(input, output, o)
                .map(|m| m.shape.first().copied().unwrap_or(1))
                .map_err(Error::Bloscpack)
        }
        #[cfg(feature = "bloscpack")]
        (None, Target::Bloscpack) if !super::is_table(input) => {
            // Any other file: its bytes are the payload.
            crate::bloscpack::pack_file(input, output, None, &opts.bloscpack.write)
                .map(|_| size(input))
                .map_err(Error::Bloscpack)
        }
        #[cfg(feature = "bloscpack")]
        (Some(Format::Bloscpack), Target::Npy) => blp_to_npy(input, output),
        #[cfg(feature = "bloscpack")]
        (Some(Format::Bloscpack), Target::Bloscpack) => repack(input, output, opts, progress),
        #[cfg(feature = "bloscpack")]
        (Some(Format::Blz), Target::Npy) => blz_to_npy(input, output, progress),
        #[cfg(feature = "idv")]
        (None, Target::Idv) if in_ext == "csv" && opts.idv.text.is_some() => {
            let text = opts.idv.text.as_ref()?;
            let total = size(input);
            super::text::write(input, output, text, opts.idv.writer, &mut |n| {
                progress(n, total)
            })
        }
        #[cfg(feature = "mldf")]
        (None, Target::Mldf)
            if matches!(in_ext.as_str(), "jsonl" | "ndjson") && opts.mldf.json_schema.is_some() =>
        {
            let schema = opts.mldf.json_schema.as_ref()?;
            let total = size(input);
            super::mldf_json::write(input, output, schema, opts.threads, &mut |n| {
                progress(n, total)
            })
        }
        (_, Target::Ctf | Target::Tar | Target::Npy) => Err(Error::Unsupported {
            format: from,
            message: format!(
                "{} converts to .{} only from {}",
                report.from,
                target.extension(),
                match target {
                    Target::Ctf => "CNTK binary",
                    Target::Tar => "TBL v2",
                    _ => "Bloscpack and BLZ/bcolz",
                }
            ),
        }),
        _ => return None,
    };
    Some(records.map(|n| {
        report.records = n;
        report
    }))
}

#[cfg(feature = "cntk")]
fn ctf_to_cbf(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, Error> {
    if opts.ctf.streams.is_empty() {
        return Err(Error::invalid(
            "CNTK text (CTF) carries no stream definitions: give them \
             (CLI: --stream NAME:dense|sparse:DIM[:ALIAS] or --streams FILE)",
        ));
    }
    let total = size(input);
    // A local file is mapped: each thread parses its blocks in place.
    let text = crate::remote::source(input)?;
    let mut done = 0u64;
    let r = crate::cntk::ctf::ctf_to_cbf_source(
        &text,
        &opts.ctf.streams,
        opts.ctf.precision,
        opts.cntk.chunking,
        opts.threads,
        output,
        |n| {
            done += n as u64;
            progress(done, total);
        },
    )
    .map_err(Error::Cntk)?;
    if r.negative_indices > 0 {
        report.warnings.push(format!(
            "{} negative sparse index(es) written as they are (ctf2bin's chunking keeps them); \
             the output is not a valid CBF file",
            r.negative_indices
        ));
        return Ok(r.samples);
    }
    // Records as the CNTK view counts them (a sequence spans as many as its
    // longest stream has samples), without opening the file again.
    Ok(r.records)
}

#[cfg(feature = "cntk")]
fn cbf_to_ctf(input: &Path, output: &Path) -> Result<u64, Error> {
    let src = crate::dataset::map_file(input)?;
    let r = crate::cntk::Reader::with_options(src, crate::core::ReadOptions::default())
        .map_err(Error::Cntk)?;
    let mut f =
        std::io::BufWriter::new(crate::core::AtomicFile::create(output).map_err(io(output))?);
    let n = crate::cntk::ctf::cbf_to_ctf(&r, &mut f).map_err(Error::Cntk)?;
    f.into_inner()
        .map_err(|e| io(output)(e.into_error()))?
        .finish()
        .map_err(io(output))?;
    Ok(n)
}

#[cfg(feature = "tbl2")]
fn tar_to_tbl(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    report: &mut Report,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, Error> {
    let total = size(input);
    let mut done = 0u64;
    let r = crate::tbl2::tar::convert_tar_file(
        input,
        output,
        if opts.tbl2.compress {
            crate::tbl2::Compression::Lz4
        } else {
            crate::tbl2::Compression::None
        },
        crate::core::parallel::threads(opts.threads),
        |n| {
            done += n;
            progress(done, total);
        },
    )
    .map_err(Error::Tbl2)?;
    if r.skipped > 0 {
        report.warnings.push(format!(
            "{} tar member(s) skipped (not regular files with a sample's extension, or empty)",
            r.skipped
        ));
    }
    if let Some(name) = r.truncated_member {
        let message = format!(
            "the tar ends inside member {name:?}: the output holds the {} sample(s) before it",
            r.samples
        );
        if !opts.lossy {
            // TurboLoader's converter leaves that file and exits 1; here
            // nothing partial is left unless asked for.
            let _ = std::fs::remove_file(output);
            return Err(Error::Data {
                format: None,
                message: format!(
                    "{}: {message}; pass --lossy (ConvertOptions::lossy) to keep them",
                    input.display()
                ),
            });
        }
        report.warnings.push(message);
    }
    Ok(r.samples)
}

#[cfg(feature = "tbl2")]
fn tbl_to_tar(
    input: &Path,
    output: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, Error> {
    let src = crate::dataset::map_file(input)?;
    let r = crate::tbl2::Reader::with_options(src, crate::tbl2::ReadOptions::default())
        .map_err(Error::Tbl2)?;
    let total = r.len() as u64;
    let mut done = 0u64;
    crate::tbl2::tar::tbl_to_tar(&r, output, |_| {
        done += 1;
        progress(done.min(total), total);
    })
    .map_err(Error::Tbl2)
}

#[cfg(feature = "bloscpack")]
fn blp_to_npy(input: &Path, output: &Path) -> Result<u64, Error> {
    let src = crate::remote::source_for_copies(input)?;
    let r = crate::bloscpack::Reader::with_options(src, crate::bloscpack::ReadOptions::default())
        .map_err(Error::Bloscpack)?;
    crate::bloscpack::npy::bloscpack_to_npy(&r, output).map_err(Error::Bloscpack)?;
    Ok(r.numpy()
        .and_then(|m| m.shape.first().copied())
        .unwrap_or(1))
}

#[cfg(feature = "bloscpack")]
fn repack(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, Error> {
    let src = crate::dataset::map_file(input)?;
    let r = crate::bloscpack::Reader::with_options(src, crate::bloscpack::ReadOptions::default())
        .map_err(Error::Bloscpack)?;
    let mut w = crate::bloscpack::Writer::create(
        output,
        r.payload_len(),
        r.metadata().map(|m| &m.value),
        &opts.bloscpack.write,
    )
    .map_err(Error::Bloscpack)?;
    let total = r.payload_len();
    let mut done = 0u64;
    for i in 0..r.nchunks() {
        let c = r.read_chunk(i).map_err(Error::Bloscpack)?;
        w.write_payload(&c).map_err(Error::Bloscpack)?;
        done += c.len() as u64;
        progress(done, total);
    }
    w.finish().map_err(Error::Bloscpack)?;
    Ok(total)
}

#[cfg(feature = "bloscpack")]
fn blz_to_npy(
    input: &Path,
    output: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, Error> {
    use crate::bloscpack::blz::BlzDir;
    use crate::bloscpack::{NumpyMeta, Order};
    let d = crate::remote::open_blz(input, Default::default(), false)?;
    let limits = crate::core::Limits::default();
    let (meta, sizes, rows) = match &d {
        BlzDir::Array(a) => (
            NumpyMeta {
                dtype: a.dtype().clone(),
                shape: a.shape().to_vec(),
                order: Order::C,
            },
            a.chunks()
                .iter()
                .map(|c| c.items.saturating_mul(a.atomsize()))
                .collect::<Vec<_>>(),
            Vec::new(),
        ),
        BlzDir::Table(t) => {
            let meta = NumpyMeta {
                dtype: t.row_dtype(),
                shape: vec![t.len()],
                order: Order::C,
            };
            let parts: Vec<_> = table_parts(t).collect();
            let sizes = parts
                .iter()
                .map(|&(_, rows)| rows.saturating_mul(meta.dtype.itemsize() as u64))
                .collect();
            (meta, sizes, parts)
        }
    };
    let parts = sizes.len() as u64;
    crate::bloscpack::npy::write_npy_parts(
        output,
        &meta,
        &sizes,
        &limits,
        |i, dst| match &d {
            BlzDir::Array(a) => a.read_chunk_into(i, dst),
            BlzDir::Table(t) => {
                let (first, rows) = rows.get(i).copied().unwrap_or_default();
                t.read_rows_into(first, rows, dst)
            }
        },
        |n| progress(n as u64, parts),
    )
    .map_err(Error::Blz)?;
    Ok(meta.shape.first().copied().unwrap_or(1))
}

/// A table's rows in parts for `.npy` output, `(first row, rows)` each: a
/// whole number of its longest column chunk, and about 1 MiB of rows or
/// more, so that parts go to every core and few column chunks are decoded
/// for two neighbouring parts.
#[cfg(feature = "bloscpack")]
fn table_parts(t: &crate::bloscpack::blz::CTable) -> impl Iterator<Item = (u64, u64)> + '_ {
    let row: u64 = t.columns().iter().map(|c| c.atomsize()).sum();
    let chunk = t
        .columns()
        .iter()
        .map(|c| c.chunklen())
        .max()
        .unwrap_or(1)
        .max(1);
    let per = chunk.saturating_mul(
        (1u64 << 20)
            .div_ceil(chunk.saturating_mul(row).max(1))
            .max(1),
    );
    let len = t.len();
    (0..len.div_ceil(per)).map(move |i| {
        let first = i * per;
        (first, per.min(len - first))
    })
}

/// What [`append`] did to a Bloscpack file.
#[cfg(feature = "bloscpack")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Appended {
    /// Bytes added to the payload.
    pub bytes: u64,
    /// Chunks written for them.
    pub new_chunks: u64,
    /// The file's chunks now.
    pub nchunks: u64,
    /// The file's payload bytes now.
    pub payload_bytes: u64,
    /// Offset slots still free for appends.
    pub slots_left: u64,
}

#[cfg(feature = "bloscpack")]
impl Appended {
    /// As JSON: `appended`, `new_chunks`, `nchunks`, `payload_bytes` and
    /// `max_app_chunks` (the slots left), the command line's `--json` form.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"appended": self.bytes, "new_chunks": self.new_chunks,
            "nchunks": self.nchunks, "payload_bytes": self.payload_bytes,
            "max_app_chunks": self.slots_left})
    }
}

/// In words: bytes and chunks appended, the file's chunks, payload and
/// slots left now.
#[cfg(feature = "bloscpack")]
impl std::fmt::Display for Appended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "appended {} bytes ({} new chunk(s)); now {} chunk(s), {} payload bytes, {} slot(s) left",
            self.bytes, self.new_chunks, self.nchunks, self.payload_bytes, self.slots_left
        )
    }
}

/// Appends `input`'s bytes (an `.npy` file's array bytes, any other file
/// whole) to the Bloscpack file `output` in place, using the offset slots
/// its writer reserved (`WriteOptions::max_app_chunks`); the chunk
/// settings of `opts` apply to the new chunks.
#[cfg(feature = "bloscpack")]
pub fn append(
    input: &Path,
    output: &Path,
    opts: &crate::bloscpack::WriteOptions,
) -> Result<Appended, Error> {
    let bytes = if ext(input) == "npy" {
        let src = crate::dataset::map_file(input)?;
        let h = crate::bloscpack::npy::read_header(&src).map_err(Error::Bloscpack)?;
        let len = src.len().saturating_sub(h.data_offset);
        src.read_vec(h.data_offset, len, &crate::core::Limits::default())
            .map_err(Error::limit)?
    } else {
        std::fs::read(input).map_err(io(input))?
    };
    let new_chunks = crate::bloscpack::append(output, &bytes, opts).map_err(Error::Bloscpack)?;
    let r = crate::bloscpack::Reader::open(output).map_err(Error::Bloscpack)?;
    Ok(Appended {
        bytes: bytes.len() as u64,
        new_chunks,
        nchunks: r.nchunks() as u64,
        payload_bytes: r.payload_len(),
        slots_left: u64::try_from(r.header().max_app_chunks).unwrap_or(0),
    })
}
