//! tar ↔ TBL v2 conversion, with TurboLoader's converter rules (`tbl2.md` §4)
//! so that the output is byte-identical to `tar_to_tbl_v2`'s.

use std::io::{self, Read, Seek, Write};
use std::path::Path;

use dataformats_core::AtomicFile;

use crate::dims;
use crate::error::{Error, ErrorKind, Result, Stage};
use crate::format::SampleFormat;
use crate::read::Reader;
use crate::write::{Compression, SampleInfo, Writer, wfail};

/// One member's header, as the converter reads it.
struct MemberHeader {
    name: String,
    size: u64,
    /// The size rounded up to whole 512-byte records.
    padded: u64,
    /// The sample format of a regular file with a sample's extension.
    format: Option<SampleFormat>,
}

/// The next member's header; `None` at the end (a zero block or a short
/// read).
fn next_header(tar: &mut impl Read) -> Result<Option<MemberHeader>> {
    let mut header = [0u8; 512];
    let n = read_full(tar, &mut header).map_err(wfail)?;
    if n < 512 || header[0] == 0 {
        return Ok(None);
    }
    let size = parse_size(header.get(124..136).unwrap_or_default());
    let name = member_name(&header);
    let format = if matches!(header[156], b'0' | 0) {
        format_of(&name)
    } else {
        None
    };
    Ok(Some(MemberHeader {
        name,
        size,
        padded: size.div_ceil(512) * 512,
        format,
    }))
}

/// What a tar holds, as the converter sees it ([`scan_tar`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TarScan {
    /// Members (headers) read.
    pub members: u64,
    /// Members that become samples, per sample format.
    pub samples: std::collections::BTreeMap<String, u64>,
    /// Their bytes.
    pub sample_bytes: u64,
    /// Members skipped (not regular files, unknown extensions, empty files).
    pub skipped: u64,
    /// The member the tar ends inside, if it is cut short.
    pub truncated_member: Option<String>,
}

/// Walks a tar's headers as [`tar_to_tbl`] does, without reading the
/// members' bytes into memory: what a conversion would make of it.
pub fn scan_tar(tar: &mut impl Read) -> Result<TarScan> {
    scan_with(tar, pass)
}

/// [`scan_tar`] of the tar file at `path`, seeking past the members'
/// bytes instead of reading them: only the headers are read.
pub fn scan_tar_file(path: impl AsRef<Path>) -> Result<TarScan> {
    let f = std::fs::File::open(path).map_err(wfail)?;
    let len = f.metadata().map_err(wfail)?.len();
    let mut r = io::BufReader::with_capacity(8192, f);
    scan_with(&mut r, |r, n| {
        let k = n.min(len.saturating_sub(r.stream_position()?));
        r.seek_relative(i64::try_from(k).unwrap_or(i64::MAX))?;
        Ok(k)
    })
}

/// The walk of [`scan_tar`], `skip(tar, n)` passing over at most `n`
/// bytes and saying how many there were.
fn scan_with<R: Read>(
    tar: &mut R,
    mut skip: impl FnMut(&mut R, u64) -> io::Result<u64>,
) -> Result<TarScan> {
    let mut scan = TarScan::default();
    while let Some(MemberHeader {
        name,
        size,
        padded,
        format,
    }) = next_header(tar)?
    {
        scan.members += 1;
        match format.filter(|_| size > 0) {
            Some(f) => {
                if skip(tar, size).map_err(wfail)? < size {
                    scan.truncated_member = Some(name);
                    break;
                }
                *scan.samples.entry(f.name()).or_default() += 1;
                scan.sample_bytes += size;
                if skip(tar, padded - size).map_err(wfail)? < padded - size {
                    break;
                }
            }
            None => {
                scan.skipped += 1;
                if skip(tar, padded).map_err(wfail)? < padded {
                    break;
                }
            }
        }
    }
    Ok(scan)
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertReport {
    /// Members converted into samples.
    pub samples: u64,
    /// Members skipped (not regular files, unknown extensions, empty files).
    pub skipped: u64,
    /// Sample bytes read from the tar.
    pub bytes: u64,
    /// Set when the tar ended inside a member that would have been kept: the
    /// output holds the members before it (TurboLoader's converter exits 1
    /// here and leaves the same file).
    pub truncated_member: Option<String>,
}

/// The size field as TurboLoader reads it: octal digits from the first byte,
/// stopping at NUL or space or after 12 bytes, other bytes skipped.
pub fn parse_size(field: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for &c in field.iter().take(12) {
        if c == 0 || c == b' ' {
            break;
        }
        if (b'0'..=b'7').contains(&c) {
            v = v.saturating_mul(8).saturating_add(u64::from(c - b'0'));
        }
    }
    v
}

/// The member name as TurboLoader sees it: the C string at the start of the
/// header (it may run into the following fields; ours: it stops at the
/// header's end).
pub fn member_name(header: &[u8; 512]) -> String {
    let end = header.iter().position(|&b| b == 0).unwrap_or(512);
    String::from_utf8_lossy(header.get(..end).unwrap_or_default()).into_owned()
}

/// The format from the extension after the last `.` of the whole name.
pub fn format_of(name: &str) -> Option<SampleFormat> {
    let (_, ext) = name.rsplit_once('.')?;
    SampleFormat::from_extension(ext)
}

/// Reads exactly `buf.len()` bytes unless the input ends; returns how many were read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(buf.get_mut(n..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads past at most `n` bytes; returns how many there were.
fn pass(r: &mut impl Read, n: u64) -> io::Result<u64> {
    io::copy(&mut r.take(n), &mut io::sink())
}

/// Skips `n` bytes; returns false when the input ended first.
fn skip(r: &mut impl Read, n: u64) -> io::Result<bool> {
    Ok(pass(r, n)? == n)
}

/// Converts a tar stream into a TBL v2 file at `output`.
///
/// `workers` threads compress samples in parallel (1 = on this thread; see
/// [`Writer::set_threads`]); the output does not depend on it. `progress`
/// is called with the bytes of each converted member. Memory holds the
/// member being read and at most 64 MiB of members being compressed.
pub fn tar_to_tbl(
    tar: &mut impl Read,
    output: impl AsRef<Path>,
    compression: Compression,
    workers: usize,
    progress: impl FnMut(u64),
) -> Result<ConvertReport> {
    let w = Writer::create(output, compression)?;
    convert_into(tar, w, workers, progress)
}

/// [`tar_to_tbl`] into the writer `w`.
fn convert_into(
    tar: &mut impl Read,
    mut w: Writer,
    workers: usize,
    mut progress: impl FnMut(u64),
) -> Result<ConvertReport> {
    w.set_threads(workers.max(1));
    let mut report = ConvertReport::default();
    let mut data = Vec::new();
    while let Some(MemberHeader {
        name,
        size,
        padded,
        format,
    }) = next_header(tar)?
    {
        let Some(format) = format.filter(|_| size > 0) else {
            report.skipped += 1;
            if !skip(tar, padded)? {
                break;
            }
            continue;
        };
        let len = usize::try_from(size)
            .map_err(|_| Error::new(ErrorKind::Tar, "member too large").in_stage(Stage::Write))?;
        // Grown as the bytes arrive: a header claiming more than the tar
        // holds costs no more memory than the bytes that are there.
        data.clear();
        tar.by_ref()
            .take(size)
            .read_to_end(&mut data)
            .map_err(wfail)?;
        if data.len() < len {
            report.truncated_member = Some(name);
            break;
        }
        let (width, height) = dims::sniff(format, &data);
        report.samples += 1;
        report.bytes += size;
        progress(size);
        let info = SampleInfo {
            format,
            width,
            height,
        };
        w.add_sample(&data, info)?;
        // Padding; a last member without it is still converted.
        if !skip(tar, padded - size)? {
            break;
        }
    }
    w.finish()?;
    Ok(report)
}

/// Converts the tar file at `input` (see [`tar_to_tbl`]). Its headers are
/// read first ([`scan_tar_file`]), so that the writer knows the number of
/// samples and writes their data once, in place after the index
/// ([`Writer::create_sized`]).
pub fn convert_tar_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    compression: Compression,
    workers: usize,
    progress: impl FnMut(u64),
) -> Result<ConvertReport> {
    let scan = scan_tar_file(&input)?;
    let w = Writer::create_sized(output, compression, scan.samples.values().sum())?;
    let f = std::fs::File::open(input).map_err(wfail)?;
    let mut r = io::BufReader::with_capacity(1 << 20, f);
    convert_into(&mut r, w, workers, progress)
}

fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    for (d, c) in field.iter_mut().zip(s.bytes()) {
        *d = c;
    }
    if let Some(last) = field.last_mut() {
        *last = 0;
    }
}

/// Writes every sample of `reader` to a ustar archive at `output`, named
/// `{index:08}.{extension of its format}` (TBL v2 stores no names).
pub fn tbl_to_tar(
    reader: &Reader,
    output: impl AsRef<Path>,
    mut progress: impl FnMut(u64),
) -> Result<u64> {
    let mut out = io::BufWriter::with_capacity(1 << 20, AtomicFile::create(output).map_err(wfail)?);
    let mut buf = Vec::new();
    for i in 0..reader.len() {
        reader.read_sample_into(i, &mut buf)?;
        let e = reader.entry(i)?;
        let mut h = [0u8; 512];
        let name = format!("{i:08}.{}", e.format.extension());
        for (d, c) in h.iter_mut().zip(name.bytes()) {
            *d = c;
        }
        octal(&mut h[100..108], 0o644);
        octal(&mut h[108..116], 0);
        octal(&mut h[116..124], 0);
        octal(&mut h[124..136], buf.len() as u64);
        octal(&mut h[136..148], 0);
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].fill(b' ');
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        let s = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(s.as_bytes());
        out.write_all(&h).map_err(wfail)?;
        out.write_all(&buf).map_err(wfail)?;
        let pad = (512 - buf.len() % 512) % 512;
        out.write_all(&vec![0u8; pad]).map_err(wfail)?;
        progress(buf.len() as u64);
    }
    out.write_all(&[0u8; 1024]).map_err(wfail)?;
    let f = out.into_inner().map_err(|e| wfail(e.into_error()))?;
    f.finish().map_err(wfail)?;
    Ok(reader.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_field_quirks() {
        assert_eq!(parse_size(b"00000001750\0"), 1000);
        assert_eq!(parse_size(b"00000001750 "), 1000);
        assert_eq!(parse_size(b"        1750"), 0, "leading spaces read as 0");
        assert_eq!(parse_size(b"0000x0001750"), 1000, "non-octal bytes skipped");
        assert_eq!(
            parse_size(b"777777777777777"),
            0o777777777777,
            "at most 12 bytes"
        );
    }

    #[test]
    fn extension_rules() {
        assert_eq!(format_of("a/b.JPG"), Some(SampleFormat::JPEG));
        assert_eq!(format_of("quirk/.png"), Some(SampleFormat::PNG));
        assert_eq!(format_of("a.d/file"), None);
        assert_eq!(format_of("x."), None);
        assert_eq!(format_of("noext"), None);
        assert_eq!(format_of("v.tiff"), Some(SampleFormat::TIFF));
    }
}
