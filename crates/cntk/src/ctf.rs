//! CNTK text format (CTF) to CBF, with ctf2bin's rules (`cntk.md` §5), so
//! that `--compat ctf2bin` output is byte-identical to ctf2bin.py's.

use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::read::{ElemType, StreamDesc, StreamKind};
use crate::write::{Chunking, RecordData, Writer};

/// A stream of a conversion: the name stored in the binary, the alias used
/// after `|` in the text, dense or sparse, and the dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Name in the binary.
    pub name: String,
    /// Field name in the CTF text.
    pub alias: String,
    /// Dense or sparse.
    pub kind: StreamKind,
    /// Sample dimension.
    pub dim: u32,
}

/// Python's `str.isspace()`: Rust's whitespace plus U+001C..U+001F.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn perr(line: usize, col: usize, msg: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("line {line}, column {col}: {}", msg.into()),
    )
}

/// Python `int()` on a token: optional sign, ASCII digits with single `_`
/// between digits.
pub fn py_int(t: &str) -> Option<i64> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if !clean.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: i64 = clean.parse().ok()?;
    Some(if neg { -v } else { v })
}

/// Python `float()` on a token: decimal numbers (correctly rounded),
/// `inf`/`infinity`/`nan` in any case with an optional sign (the sign of a
/// NaN is kept), `_` between digits.
pub fn py_float(t: &str) -> Option<f64> {
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = body.to_ascii_lowercase();
    let special = match lower.as_str() {
        "inf" | "infinity" => Some(f64::INFINITY),
        "nan" => Some(f64::NAN),
        _ => None,
    };
    if let Some(v) = special {
        return Some(if neg { -v } else { v });
    }
    // Underscores only between digits.
    let b = body.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let ok = i > 0
                && b.get(i - 1).is_some_and(u8::is_ascii_digit)
                && b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !ok {
                return None;
            }
        } else if !(c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')) {
            return None;
        }
    }
    let clean: String = body.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || !clean.bytes().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: f64 = clean.parse().ok()?;
    Some(if neg { -v } else { v })
}

fn py_split(s: &str) -> Vec<&str> {
    s.split(is_py_space).filter(|t| !t.is_empty()).collect()
}

/// Parses a ctf2bin stream file: one `name alias dense|sparse dim` per line.
pub fn parse_streams_file(text: &str) -> Result<Vec<StreamSpec>> {
    let text = universal_newlines(text);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut out = Vec::new();
    for (n, line) in body.split('\n').enumerate() {
        let f = py_split(line);
        let [name, alias, kind, dim] = f.as_slice() else {
            return Err(perr(
                n + 1,
                1,
                format!(
                    "a stream line needs 4 fields (name alias dense|sparse dim), found {}",
                    f.len()
                ),
            ));
        };
        if !name.is_ascii() {
            return Err(perr(n + 1, 1, format!("stream name {name:?} is not ASCII")));
        }
        let kind = match kind.to_ascii_lowercase().as_str() {
            "dense" => StreamKind::Dense,
            "sparse" => StreamKind::Sparse,
            k => {
                return Err(perr(
                    n + 1,
                    1,
                    format!("stream type {k:?} is neither dense nor sparse"),
                ));
            }
        };
        let dim = py_int(dim)
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| perr(n + 1, 1, format!("dimension {dim:?} is not a u32")))?;
        out.push(StreamSpec {
            name: (*name).to_string(),
            alias: (*alias).to_string(),
            kind,
            dim,
        });
    }
    Ok(out)
}

/// Parses `NAME:dense|sparse:DIM[:ALIAS]` (the alias defaults to the name).
pub fn parse_stream_arg(s: &str) -> Result<StreamSpec> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("stream {s:?} is not NAME:dense|sparse:DIM[:ALIAS]"),
        )
    };
    let (name, kind, dim, alias) = match parts.as_slice() {
        [n, k, d] => (*n, *k, *d, *n),
        [n, k, d, a] => (*n, *k, *d, *a),
        _ => return Err(bad()),
    };
    let kind = match kind {
        "dense" => StreamKind::Dense,
        "sparse" => StreamKind::Sparse,
        _ => return Err(bad()),
    };
    let dim = dim.parse().map_err(|_| bad())?;
    Ok(StreamSpec {
        name: name.into(),
        alias: alias.into(),
        kind,
        dim,
    })
}

/// CRLF and lone CR become LF (Python's text mode).
fn universal_newlines(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "\n")
}

/// Reads text lines with Python's universal newlines (CRLF, LF and a lone CR
/// end a line; nothing else does), strict UTF-8, one line at a time.
struct Lines<R> {
    r: R,
    pending: std::collections::VecDeque<String>,
    buf: Vec<u8>,
    number: usize,
}

impl<R: std::io::BufRead> Lines<R> {
    fn new(r: R) -> Self {
        Lines {
            r,
            pending: Default::default(),
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next line (without its end) and its 1-based number, and the bytes it took.
    fn next(&mut self) -> Result<Option<(usize, String, usize)>> {
        if let Some(l) = self.pending.pop_front() {
            self.number += 1;
            return Ok(Some((self.number, l, 0)));
        }
        self.buf.clear();
        let n = self
            .r
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
        if n == 0 {
            return Ok(None);
        }
        let had_nl = self.buf.last() == Some(&b'\n');
        if had_nl {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        let text = std::str::from_utf8(&self.buf).map_err(|e| {
            perr(
                self.number + 1,
                e.valid_up_to() + 1,
                "the text is not UTF-8",
            )
        })?;
        let mut pieces: Vec<String> = text.split('\r').map(str::to_string).collect();
        if !had_nl && pieces.len() > 1 && pieces.last().is_some_and(String::is_empty) {
            pieces.pop();
        }
        self.pending.extend(pieces);
        let first = self.pending.pop_front().unwrap_or_default();
        self.number += 1;
        Ok(Some((self.number, first, n)))
    }
}

/// What a conversion produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConvertReport {
    /// Sequences written.
    pub sequences: u64,
    /// Samples over all streams.
    pub samples: u64,
    /// Negative sparse indices written as is (only with
    /// [`Chunking::Ctf2bin`]); a file with any is invalid.
    pub negative_indices: u64,
}

enum Acc {
    Dense { samples: u32, values: Vec<f64> },
    Sparse(Vec<Vec<(u32, f64)>>),
}

/// Converts CTF text to a CBF file at `out` with ctf2bin's rules:
/// sequence grouping by id prefix (string compare), `|alias values`
/// samples, `|#` comments, sparse `index:value` entries sorted per sample,
/// values parsed as f64 and cast to f32 for `precision` f32. Errors give the
/// line and column.
///
/// With [`Chunking::Ctf2bin`] the conversion is ctf2bin.py's in every
/// respect, including its one lax check: a negative sparse index is written
/// as is (counted in [`ConvertReport::negative_indices`]; the file is then
/// invalid, as ctf2bin's would be). Otherwise such an index is an error.
pub fn ctf_to_cbf(
    input: impl std::io::BufRead,
    specs: &[StreamSpec],
    precision: ElemType,
    chunking: Chunking,
    out: &Path,
    mut progress: impl FnMut(usize),
) -> Result<ConvertReport> {
    let streams: Vec<StreamDesc> = specs
        .iter()
        .map(|s| StreamDesc {
            name: s.name.clone(),
            kind: s.kind,
            elem: precision,
            dim: s.dim,
        })
        .collect();
    let compat = matches!(chunking, Chunking::Ctf2bin(_));
    let mut w = Writer::create(out, &streams, chunking)?;
    w.set_signed_indices(compat);
    let new_acc = || -> Vec<Acc> {
        specs
            .iter()
            .map(|s| match s.kind {
                StreamKind::Dense => Acc::Dense {
                    samples: 0,
                    values: Vec::new(),
                },
                StreamKind::Sparse => Acc::Sparse(Vec::new()),
            })
            .collect()
    };
    let mut report = ConvertReport::default();
    let mut acc: Option<Vec<Acc>> = None;
    let mut current_id: Option<String> = None;
    let mut lines = Lines::new(input);
    let flush =
        |w: &mut Writer, acc: &mut Option<Vec<Acc>>, report: &mut ConvertReport| -> Result<()> {
            if let Some(a) = acc.take() {
                let data: Vec<RecordData<'_>> = a
                    .iter()
                    .map(|x| match x {
                        Acc::Dense { samples, values } => RecordData::Dense {
                            samples: *samples,
                            values,
                        },
                        Acc::Sparse(s) => RecordData::Sparse(s),
                    })
                    .collect();
                w.add_sequence(&data)?;
                report.sequences += 1;
            }
            Ok(())
        };
    {
        while let Some((ln, line, taken)) = lines.next()? {
            progress(taken);
            let Some(bar) = line.find('|') else {
                return Err(perr(
                    ln,
                    1,
                    "a line without '|' (blank lines are not allowed)",
                ));
            };
            let prefix = line
                .get(..bar)
                .unwrap_or_default()
                .trim_matches(is_py_space);
            let starts_new = if prefix.is_empty() {
                current_id.is_none()
            } else {
                current_id.as_deref() != Some(prefix)
            };
            if !prefix.is_empty() {
                current_id = Some(prefix.to_string());
            }
            if starts_new || acc.is_none() {
                flush(&mut w, &mut acc, &mut report)?;
                acc = Some(new_acc());
            }
            let a = acc
                .as_mut()
                .ok_or_else(|| perr(ln, 1, "internal: no open sequence"))?;
            let mut col = bar + 1;
            for part in line.get(bar + 1..).unwrap_or_default().split('|') {
                let here = col;
                col += part.len() + 1;
                let trimmed = part.trim_start_matches(is_py_space);
                let alias_end = trimmed.find(is_py_space).unwrap_or(trimmed.len());
                let alias = trimmed.get(..alias_end).unwrap_or_default();
                let after = trimmed
                    .get(alias_end..)
                    .unwrap_or_default()
                    .trim_start_matches(is_py_space);
                if alias.is_empty() || after.is_empty() || alias.starts_with('#') {
                    continue;
                }
                let Some(si) = specs.iter().position(|s| s.alias == alias) else {
                    return Err(perr(ln, here, format!("unknown input {alias:?}")));
                };
                let spec = specs.get(si).ok_or_else(|| perr(ln, here, "stream"))?;
                let tokens = py_split(after);
                match a.get_mut(si) {
                    Some(Acc::Dense { samples, values }) => {
                        if tokens.len() != spec.dim as usize {
                            return Err(perr(
                                ln,
                                here,
                                format!(
                                    "{alias}: {} values, the dimension is {}",
                                    tokens.len(),
                                    spec.dim
                                ),
                            ));
                        }
                        for t in tokens {
                            values.push(py_float(t).ok_or_else(|| {
                                perr(ln, here, format!("{alias}: {t:?} is not a number"))
                            })?);
                        }
                        *samples += 1;
                        report.samples += 1;
                    }
                    Some(Acc::Sparse(samples)) => {
                        let mut entries = Vec::new();
                        for t in tokens {
                            let (i, v) = t.split_once(':').ok_or_else(|| {
                                perr(ln, here, format!("{alias}: {t:?} is not index:value"))
                            })?;
                            let i = py_int(i).ok_or_else(|| {
                                perr(ln, here, format!("{alias}: index {i:?} is not an integer"))
                            })?;
                            let v = py_float(v).ok_or_else(|| {
                                perr(ln, here, format!("{alias}: {v:?} is not a number"))
                            })?;
                            // ctf2bin only checks `index >= dim` and packs a C int, so
                            // in its compat mode a negative index is written as is.
                            let ok = if compat {
                                i32::try_from(i)
                                    .ok()
                                    .filter(|&i| i64::from(i) < i64::from(spec.dim))
                                    .map(|i| i as u32)
                            } else {
                                u32::try_from(i).ok().filter(|&i| i < spec.dim)
                            };
                            let i = ok.ok_or_else(|| {
                                perr(
                                    ln,
                                    here,
                                    format!("{alias}: index {i} is outside 0..{}", spec.dim),
                                )
                            })?;
                            if i >= 1 << 31 {
                                report.negative_indices += 1;
                            }
                            entries.push((i, v));
                        }
                        if compat {
                            entries.sort_by_key(|&(i, _)| i as i32);
                        } else {
                            entries.sort_by_key(|&(i, _)| i);
                        }
                        samples.push(entries);
                        report.samples += 1;
                    }
                    None => return Err(perr(ln, here, "stream")),
                }
            }
        }
    }
    flush(&mut w, &mut acc, &mut report)?;
    w.finish()?;
    Ok(report)
}

/// Writes every sequence of `reader` as CTF text: one line per sample row,
/// `id |name values` (dense) or `id |name index:value ...` (sparse), with
/// the sequence's global index as id and the binary's stream names as field
/// names; a sequence of length 0 becomes `id |#` so it survives a round trip.
/// Values use the shortest text that parses back to the same number.
pub fn cbf_to_ctf(reader: &crate::read::Reader, out: &mut impl std::io::Write) -> Result<u64> {
    use crate::read::Record;
    let io = |e: std::io::Error| Error::new(ErrorKind::Io, e.to_string());
    let mut id = 0u64;
    for c in 0..reader.chunks().len() {
        let ch = reader.read_chunk(c)?;
        for q in 0..ch.sequence_lengths.len() {
            let recs: Vec<&Record> = ch.records.iter().filter_map(|p| p.get(q)).collect();
            let rows = recs.iter().map(|r| r.samples()).max().unwrap_or(0);
            if rows == 0 {
                writeln!(out, "{id} |#").map_err(io)?;
            }
            for j in 0..rows as usize {
                let mut line = id.to_string();
                for (s, rec) in reader.streams().iter().zip(&recs) {
                    if j >= rec.samples() as usize {
                        continue;
                    }
                    line.push_str(" |");
                    line.push_str(&s.name);
                    match rec {
                        Record::Dense { values, .. } => {
                            let dim = s.dim as usize;
                            for v in values.get(j * dim..(j + 1) * dim).unwrap_or_default() {
                                line.push(' ');
                                line.push_str(&fmt_value(*v));
                            }
                        }
                        Record::Sparse {
                            values,
                            indices,
                            sizes,
                            ..
                        } => {
                            let start: usize = sizes.iter().take(j).map(|&n| n as usize).sum();
                            let n = sizes.get(j).copied().unwrap_or(0) as usize;
                            for k in start..start + n {
                                line.push_str(&format!(
                                    " {}:{}",
                                    indices.get(k).copied().unwrap_or(0),
                                    fmt_value(values.get(k).copied().unwrap_or(0.0))
                                ));
                            }
                        }
                    }
                }
                writeln!(out, "{line}").map_err(io)?;
            }
            id += 1;
        }
    }
    Ok(id)
}

fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        }
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v}")
    }
}
