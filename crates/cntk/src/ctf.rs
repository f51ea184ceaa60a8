//! CNTK text format (CTF) to CBF, with ctf2bin's rules (`cntk.md` §5), so
//! that `--compat ctf2bin` output is byte-identical to ctf2bin.py's.

use std::path::Path;

use dataformats_core::Source;

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

/// The zero of every run of ten decimal digits outside ASCII (Unicode
/// category Nd, as Python 3.11's Unicode 14 database has them): Python's
/// `int()` and `float()` read each such digit as its ASCII digit.
const DECIMAL_ZEROS: [u32; 65] = [
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50,
    0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0, 0x16B50,
    0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
];

/// `t` with each non-ASCII decimal digit made its ASCII digit, or `None`
/// when some other non-ASCII character is in it (no number then).
fn ascii_digits(t: &str) -> Option<String> {
    t.chars()
        .map(|c| {
            if c.is_ascii() {
                return Some(c);
            }
            let u = u32::from(c);
            let k = DECIMAL_ZEROS.partition_point(|&z| z <= u).checked_sub(1)?;
            let d = u - DECIMAL_ZEROS.get(k)?;
            (d < 10).then(|| char::from(b'0' + d as u8))
        })
        .collect()
}

/// Python `int()` on a token: optional sign, decimal digits (any script's)
/// with single `_` between digits.
pub fn py_int(t: &str) -> Option<i64> {
    if !t.is_ascii() {
        return py_int(&ascii_digits(t)?);
    }
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty() || !underscores_between_digits(digits.as_bytes()) {
        return None;
    }
    if !digits.bytes().all(|c| c.is_ascii_digit() || c == b'_') {
        return None;
    }
    let v: i64 = if digits.contains('_') {
        digits.replace('_', "").parse().ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

/// Every `_` in `b` has an ASCII digit on each side.
fn underscores_between_digits(b: &[u8]) -> bool {
    b.iter().enumerate().all(|(i, &c)| {
        c != b'_'
            || (i > 0
                && b.get(i - 1).is_some_and(u8::is_ascii_digit)
                && b.get(i + 1).is_some_and(u8::is_ascii_digit))
    })
}

/// Python `float()` on a token: decimal numbers (correctly rounded),
/// `inf`/`infinity`/`nan` in any case with an optional sign (the sign of a
/// NaN is kept), `_` between digits, digits of any script. One sign at
/// most. Allocates only for a token with `_` or a non-ASCII digit in it.
pub fn py_float(t: &str) -> Option<f64> {
    if !t.is_ascii() {
        return py_float(&ascii_digits(t)?);
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if let Some(v) = plain_decimal(body.as_bytes()) {
        return Some(if neg { -v } else { v });
    }
    let v = match body.as_bytes().first()? {
        b'0'..=b'9' | b'.' => {
            if !body
                .bytes()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
            {
                return None;
            }
            if body.contains('_') {
                if !underscores_between_digits(body.as_bytes()) {
                    return None;
                }
                body.replace('_', "").parse().ok()?
            } else {
                // Rust's parse is correctly rounded, as Python's is, and
                // takes the same decimal forms once the sign is gone
                // (`1.`, `.5`, `1e5`, `1E+05`; not `.`, `e5`, `1e`).
                body.parse().ok()?
            }
        }
        _ if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") => {
            f64::INFINITY
        }
        _ if body.eq_ignore_ascii_case("nan") => f64::NAN,
        _ => return None,
    };
    Some(if neg { -v } else { v })
}

/// Powers of ten that a double holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The common case of CNTK text, fast: `DIGITS[.DIGITS]` (or `.DIGITS`,
/// `DIGITS.`) with at most 15 digits in all and no exponent. Such a number
/// is `m / 10^k` with `m < 2^53` and `k <= 22`, both exact as doubles, so
/// the one division is correctly rounded (Clinger's fast path) and gives
/// what a full parse gives. Anything else is `None`, for the full parse.
fn plain_decimal(b: &[u8]) -> Option<f64> {
    let (end, value) = scan_decimal(b);
    if end != b.len() {
        return None;
    }
    value
}

/// Reads `DIGITS[.DIGITS]` from the start of `b`: where it stops, and the
/// value when it is a [`plain_decimal`] (1 to 15 digits).
fn scan_decimal(b: &[u8]) -> (usize, Option<f64>) {
    let mut m = 0u64;
    let mut end = 0;
    // The digits before the point, then (after a point) those after it.
    let digits = |m: &mut u64, end: &mut usize| {
        let start = *end;
        while let Some(&c) = b.get(*end) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            *m = m.wrapping_mul(10).wrapping_add(u64::from(d));
            *end += 1;
        }
        *end - start
    };
    let whole = digits(&mut m, &mut end);
    let mut frac = 0;
    if b.get(end) == Some(&b'.') {
        end += 1;
        frac = digits(&mut m, &mut end);
    }
    if !(1..=15).contains(&(whole + frac)) {
        return (end, None);
    }
    // m < 10^15 < 2^53 (exact in an f64, and in an i64, whose conversion
    // is the cheaper one) and the power is exact: one rounding.
    let value = EXACT_POWERS.get(frac).map(|p| m as i64 as f64 / p);
    (end, value)
}

/// Every token of `s` (as [`py_tokens`] splits it) read by [`py_float`]
/// into `values`: the number of tokens, and the first token that is no
/// number (nothing is pushed from it on). One pass over the bytes for the
/// common tokens, plain decimals of up to 15 digits between ASCII spaces
/// (the same one-division reading as [`plain_decimal`]); any other token
/// goes through [`py_float`] itself, and a non-ASCII byte between tokens
/// hands the rest to [`py_tokens`].
fn dense_values<'a>(s: &'a str, values: &mut Vec<f64>) -> (usize, Option<&'a str>) {
    let b = s.as_bytes();
    let (mut i, mut count, mut bad) = (0usize, 0usize, None);
    fn general<'a>(
        t: &'a str,
        values: &mut Vec<f64>,
        count: &mut usize,
        bad: &mut Option<&'a str>,
    ) {
        *count += 1;
        if bad.is_none() {
            match py_float(t) {
                Some(v) => values.push(v),
                None => *bad = Some(t),
            }
        }
    }
    loop {
        while b.get(i).is_some_and(|&c| ascii_py_space(c)) {
            i += 1;
        }
        let Some(&c) = b.get(i) else { break };
        if !c.is_ascii() {
            for t in (Tokens { s, at: i }) {
                general(t, values, &mut count, &mut bad);
            }
            break;
        }
        let start = i;
        let neg = c == b'-';
        if matches!(c, b'-' | b'+') {
            i += 1;
        }
        let (len, value) = scan_decimal(b.get(i..).unwrap_or_default());
        i += len;
        let ends = b.get(i).is_none_or(|&d| ascii_py_space(d));
        if ends && let Some(v) = value {
            count += 1;
            if bad.is_none() {
                values.push(if neg { -v } else { v });
            }
            continue;
        }
        let mut rest = Tokens { s, at: start };
        let Some(t) = rest.next() else { break };
        i = rest.at;
        general(t, values, &mut count, &mut bad);
    }
    (count, bad)
}

/// The tokens of `s` between runs of Python whitespace.
fn py_tokens(s: &str) -> Tokens<'_> {
    Tokens { s, at: 0 }
}

/// [`py_tokens`]: ASCII bytes are looked at one by one, only a non-ASCII
/// character is decoded.
struct Tokens<'a> {
    s: &'a str,
    at: usize,
}

impl Tokens<'_> {
    /// Whether the non-ASCII character at byte `i` is a Python space, and
    /// its length; `None` at the end.
    #[cold]
    fn other_space_at(&self, i: usize) -> Option<(bool, usize)> {
        let ch = self.s.get(i..)?.chars().next()?;
        Some((is_py_space(ch), ch.len_utf8()))
    }
}

/// Python's ASCII spaces: Rust's ASCII whitespace, U+000B and U+001C..U+001F.
#[inline]
fn ascii_py_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1c..=0x1f | b' ')
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        loop {
            let c = *b.get(self.at)?;
            let (space, len) = if c.is_ascii() {
                (ascii_py_space(c), 1)
            } else {
                self.other_space_at(self.at)?
            };
            if !space {
                break;
            }
            self.at += len;
        }
        let start = self.at;
        while let Some(&c) = b.get(self.at) {
            let (space, len) = if c.is_ascii() {
                (ascii_py_space(c), 1)
            } else {
                match self.other_space_at(self.at) {
                    Some(x) => x,
                    None => break,
                }
            };
            if space {
                break;
            }
            self.at += len;
        }
        self.s.get(start..self.at)
    }
}

/// Parses a ctf2bin stream file: one `name alias dense|sparse dim` per line.
pub fn parse_streams_file(text: &str) -> Result<Vec<StreamSpec>> {
    let text = universal_newlines(text);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut out = Vec::new();
    for (n, line) in body.split('\n').enumerate() {
        let f: Vec<&str> = py_tokens(line).collect();
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

/// The lines of a block of text with Python's universal newlines (CRLF, LF
/// and a lone CR end a line; nothing else does), each given to `each` with
/// its 0-based index in the block. A piece between two `\n` that is not
/// UTF-8 stops the walk: its index and the 1-based column of the first bad
/// byte.
fn block_lines<E>(
    block: &[u8],
    mut each: impl FnMut(usize, &str) -> std::result::Result<(), E>,
    bad_utf8: impl FnOnce(usize, usize) -> E,
) -> std::result::Result<usize, E> {
    let mut n = 0;
    // The common block: UTF-8 throughout, no CR. Checked once, then split
    // at each LF (the search is the standard library's word-at-a-time one).
    if let Ok(text) = std::str::from_utf8(block)
        && !text.contains('\r')
    {
        if text.is_empty() {
            return Ok(0);
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', body.as_bytes()).chain([body.len()]) {
            // Both ends are at a '\n' (ASCII) or the end, so on char boundaries.
            each(n, body.get(start..end).unwrap_or_default())?;
            n += 1;
            start = end + 1;
        }
        return Ok(n);
    }
    for piece in block.split_inclusive(|&b| b == b'\n') {
        let (mut body, had_nl) = match piece.split_last() {
            Some((b'\n', body)) => (body, true),
            _ => (piece, false),
        };
        if had_nl && let Some((b'\r', rest)) = body.split_last() {
            body = rest;
        }
        let text = match std::str::from_utf8(body) {
            Ok(t) => t,
            Err(e) => return Err(bad_utf8(n, e.valid_up_to() + 1)),
        };
        let mut parts = text.split('\r').peekable();
        while let Some(line) = parts.next() {
            // A lone CR ending the text ends its last line; it starts none.
            if !had_nl && parts.peek().is_none() && text.ends_with('\r') {
                break;
            }
            each(n, line)?;
            n += 1;
        }
    }
    Ok(n)
}

/// What a conversion produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConvertReport {
    /// Sequences written.
    pub sequences: u64,
    /// Samples over all streams.
    pub samples: u64,
    /// Samples as the file's chunk table counts them: each sequence as
    /// many as its longest stream has (what a reader gives as the
    /// number of sample rows).
    pub records: u64,
    /// Negative sparse indices written as is (only with
    /// [`Chunking::Ctf2bin`]); a file with any is invalid.
    pub negative_indices: u64,
}

/// Text is parsed in blocks of whole lines of about this many bytes.
const BLOCK: usize = 256 << 10;

/// Reads the next block of whole lines (the last one may lack its end);
/// `None` at the end of the input.
/// Reads the next block of about `size` bytes into `buf` (emptied first):
/// `size` bytes and the rest of the line they end in. False at the end of
/// the input.
fn read_block(r: &mut impl std::io::BufRead, size: usize, buf: &mut Vec<u8>) -> Result<bool> {
    use std::io::Read;
    let io = Error::from;
    buf.clear();
    buf.reserve(size.min(BLOCK) + 4096);
    r.by_ref().take(size as u64).read_to_end(buf).map_err(io)?;
    if buf.len() == size && buf.last() != Some(&b'\n') {
        r.read_until(b'\n', buf).map_err(io)?;
    }
    Ok(!buf.is_empty())
}

/// Where a block's parse stopped: a line (0-based in the block), a column
/// and the message. A line stopped in its fields is in [`Parsed::lines`]
/// (its id may end the sequence before, which writes that one first, as
/// when reading line by line); a line stopped before (no `|`, not UTF-8) is
/// not.
struct Stop {
    line: usize,
    col: usize,
    msg: String,
}

/// A field's samples: a range of [`Parsed::dense`] (dense) or of
/// [`Parsed::entries`] (sparse, sorted as ctf2bin sorts).
enum FieldData {
    Dense(std::ops::Range<usize>),
    Sparse(std::ops::Range<usize>),
}

/// A line: its id (a range of [`Parsed::ids`]) and fields (of
/// [`Parsed::fields`]).
struct ParsedLine {
    id: std::ops::Range<usize>,
    fields: std::ops::Range<usize>,
}

/// A block of text and what parsing it found, independently of every
/// other block. Its buffers are used again for later blocks.
struct Parsed {
    /// The block's text (whole lines), when it was read into a buffer.
    text: Vec<u8>,
    /// The block's place in the input, when the whole input is in memory
    /// (then `text` is unused).
    range: Option<std::ops::Range<usize>>,
    /// Bytes of text in the block.
    len: usize,
    ids: String,
    lines: Vec<ParsedLine>,
    fields: Vec<(usize, FieldData)>,
    /// The element type dense values are stored as.
    elem: ElemType,
    /// One dense field's values as parsed (reused).
    values: Vec<f64>,
    /// Dense values as the stream's little-endian element bytes, converted
    /// as the writer converts them.
    dense: Vec<u8>,
    entries: Vec<(u32, f64)>,
    /// Lines in the block.
    line_count: usize,
    negative_indices: u64,
    stop: Option<Stop>,
}

impl Parsed {
    /// No text yet; dense values to be stored as `elem`.
    fn new(elem: ElemType) -> Parsed {
        Parsed {
            text: Vec::new(),
            range: None,
            len: 0,
            ids: String::new(),
            lines: Vec::new(),
            fields: Vec::new(),
            elem,
            values: Vec::new(),
            dense: Vec::new(),
            entries: Vec::new(),
            line_count: 0,
            negative_indices: 0,
            stop: None,
        }
    }

    /// Parses the block: `input[range]` when the block is a range of the
    /// whole input in memory, else its own `text`.
    fn parse_block(&mut self, input: &[u8], specs: &[StreamSpec], compat: bool) {
        match self.range.clone() {
            Some(r) => self.parse(input.get(r).unwrap_or_default(), specs, compat),
            None => {
                let text = std::mem::take(&mut self.text);
                self.parse(&text, specs, compat);
                self.text = text;
            }
        }
    }

    /// Parses `text`, a block of whole lines, replacing what an earlier block
    /// left.
    fn parse(&mut self, text: &[u8], specs: &[StreamSpec], compat: bool) {
        self.ids.clear();
        self.lines.clear();
        self.fields.clear();
        self.dense.clear();
        self.entries.clear();
        self.line_count = 0;
        self.negative_indices = 0;
        self.stop = None;
        let walked = block_lines(
            text,
            |n, line| self.line(n, line, specs, compat),
            |line, col| Stop {
                line,
                col,
                msg: "the text is not UTF-8".into(),
            },
        );
        match walked {
            Ok(n) => self.line_count = n,
            Err(stop) => self.stop = Some(stop),
        }
    }

    /// Parses line `n` of the block.
    fn line(
        &mut self,
        n: usize,
        line: &str,
        specs: &[StreamSpec],
        compat: bool,
    ) -> std::result::Result<(), Stop> {
        let stop = |col: usize, msg: String| Stop { line: n, col, msg };
        let Some(bar) = memchr::memchr(b'|', line.as_bytes()) else {
            return Err(stop(
                1,
                "a line without '|' (blank lines are not allowed)".into(),
            ));
        };
        let id_start = self.ids.len();
        self.ids.push_str(
            line.get(..bar)
                .unwrap_or_default()
                .trim_matches(is_py_space),
        );
        let first_field = self.fields.len();
        self.lines.push(ParsedLine {
            id: id_start..self.ids.len(),
            fields: first_field..first_field,
        });
        let mut col = bar + 1;
        let result = (|| {
            let rest = line.get(bar + 1..).unwrap_or_default();
            let mut from = 0;
            // Each part ends at a '|' (ASCII) or the end: char boundaries.
            for to in memchr::memchr_iter(b'|', rest.as_bytes()).chain([rest.len()]) {
                let part = rest.get(from..to).unwrap_or_default();
                from = to + 1;
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
                let Some((si, spec)) = specs.iter().enumerate().find(|(_, s)| s.alias == alias)
                else {
                    return Err(stop(here, format!("unknown input {alias:?}")));
                };
                let data = match spec.kind {
                    StreamKind::Dense => {
                        // One pass; a wrong count is reported before a
                        // token that is no number.
                        self.values.clear();
                        let (count, bad) = dense_values(after, &mut self.values);
                        if count != spec.dim as usize {
                            return Err(stop(
                                here,
                                format!("{alias}: {count} values, the dimension is {}", spec.dim),
                            ));
                        }
                        if let Some(t) = bad {
                            return Err(stop(here, format!("{alias}: {t:?} is not a number")));
                        }
                        let start = self.dense.len();
                        for &v in &self.values {
                            crate::write::put_value(&mut self.dense, self.elem, v);
                        }
                        FieldData::Dense(start..self.dense.len())
                    }
                    StreamKind::Sparse => {
                        let start = self.entries.len();
                        for t in py_tokens(after) {
                            let (i, v) = t.split_once(':').ok_or_else(|| {
                                stop(here, format!("{alias}: {t:?} is not index:value"))
                            })?;
                            let i = py_int(i).ok_or_else(|| {
                                stop(here, format!("{alias}: index {i:?} is not an integer"))
                            })?;
                            let v = py_float(v).ok_or_else(|| {
                                stop(here, format!("{alias}: {v:?} is not a number"))
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
                                stop(
                                    here,
                                    format!("{alias}: index {i} is outside 0..{}", spec.dim),
                                )
                            })?;
                            if i >= 1 << 31 {
                                self.negative_indices += 1;
                            }
                            self.entries.push((i, v));
                        }
                        let sample = self.entries.get_mut(start..).unwrap_or_default();
                        if compat {
                            sample.sort_by_key(|&(i, _)| i as i32);
                        } else {
                            sample.sort_by_key(|&(i, _)| i);
                        }
                        FieldData::Sparse(start..self.entries.len())
                    }
                };
                self.fields.push((si, data));
            }
            Ok(())
        })();
        if let Some(l) = self.lines.last_mut() {
            l.fields.end = self.fields.len();
        }
        result
    }
}

/// A stream's samples in the open sequence. The buffers are kept from one
/// sequence to the next (only their contents are cleared).
enum Acc {
    Dense {
        samples: u32,
        /// The element bytes.
        bytes: Vec<u8>,
    },
    /// The first `used` sample vectors are this sequence's.
    Sparse {
        samples: Vec<Vec<(u32, f64)>>,
        used: usize,
    },
}

/// Puts parsed blocks together in order: sequences grouped by id, written
/// as they end.
struct Assembler {
    w: Writer,
    acc: Vec<Acc>,
    /// Whether a sequence is open (its samples are in `acc`).
    open: bool,
    current_id: Option<String>,
    report: ConvertReport,
    /// Lines before the block being assembled.
    lines_before: usize,
}

impl Assembler {
    /// Writes the open sequence, if any, and empties the accumulators.
    fn flush(&mut self) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let data: Vec<RecordData<'_>> = self
            .acc
            .iter()
            .map(|x| match x {
                Acc::Dense { samples, bytes } => RecordData::DenseBytes {
                    samples: *samples,
                    bytes,
                },
                Acc::Sparse { samples, used } => {
                    RecordData::Sparse(samples.get(..*used).unwrap_or_default())
                }
            })
            .collect();
        let rows = self
            .acc
            .iter()
            .map(|x| match x {
                Acc::Dense { samples, .. } => u64::from(*samples),
                Acc::Sparse { used, .. } => *used as u64,
            })
            .max()
            .unwrap_or(0);
        self.w.add_sequence(&data)?;
        self.report.sequences += 1;
        self.report.records += rows;
        for a in &mut self.acc {
            match a {
                Acc::Dense { samples, bytes } => {
                    *samples = 0;
                    bytes.clear();
                }
                Acc::Sparse { used, .. } => *used = 0,
            }
        }
        Ok(())
    }

    fn block(&mut self, p: &Parsed) -> Result<()> {
        for line in &p.lines {
            let prefix = p.ids.get(line.id.clone()).unwrap_or_default();
            let starts_new = if prefix.is_empty() {
                self.current_id.is_none()
            } else {
                self.current_id.as_deref() != Some(prefix)
            };
            if starts_new && !prefix.is_empty() {
                let id = self.current_id.get_or_insert_with(String::new);
                id.clear();
                id.push_str(prefix);
            }
            if starts_new || !self.open {
                self.flush()?;
                self.open = true;
            }
            for (si, data) in p.fields.get(line.fields.clone()).unwrap_or_default() {
                match (self.acc.get_mut(*si), data) {
                    (Some(Acc::Dense { samples, bytes }), FieldData::Dense(r)) => {
                        bytes.extend_from_slice(p.dense.get(r.clone()).unwrap_or_default());
                        *samples += 1;
                    }
                    (Some(Acc::Sparse { samples, used }), FieldData::Sparse(r)) => {
                        let entries = p.entries.get(r.clone()).unwrap_or_default();
                        match samples.get_mut(*used) {
                            Some(v) => {
                                v.clear();
                                v.extend_from_slice(entries);
                            }
                            None => samples.push(entries.to_vec()),
                        }
                        *used += 1;
                    }
                    _ => continue,
                }
                self.report.samples += 1;
            }
        }
        if let Some(s) = &p.stop {
            return Err(perr(self.lines_before + s.line + 1, s.col, s.msg.clone()));
        }
        self.report.negative_indices += p.negative_indices;
        self.lines_before += p.line_count;
        Ok(())
    }
}

/// Converts CTF text to a CBF file at `out` with ctf2bin's rules:
/// sequence grouping by id prefix (string compare), `|alias values`
/// samples, `|#` comments, sparse `index:value` entries sorted per sample,
/// values parsed as f64 and cast to f32 for `precision` f32. Errors give the
/// line and column.
///
/// The text is parsed in blocks of lines on `threads` threads (0: every
/// core) and put together in order, so the output does not depend on the
/// number of threads. `progress` gets the bytes of text each block took.
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
    threads: usize,
    out: &Path,
    progress: impl FnMut(usize),
) -> Result<ConvertReport> {
    ctf_to_cbf_in_blocks(
        Text::Reader(input),
        specs,
        precision,
        chunking,
        threads,
        BLOCK,
        out,
        progress,
    )
}

/// [`ctf_to_cbf`] from the text in `input`. When its bytes are in memory
/// (a mapped file, a buffer), each thread parses its blocks in place and
/// nothing is copied before parsing; the pages of a mapped file are handed
/// back to the kernel every few megabytes of parsed text, so resident memory
/// does not grow with the input. Any other source is read in blocks.
pub fn ctf_to_cbf_source(
    input: &Source,
    specs: &[StreamSpec],
    precision: ElemType,
    chunking: Chunking,
    threads: usize,
    out: &Path,
    progress: impl FnMut(usize),
) -> Result<ConvertReport> {
    let text = match input.as_slice() {
        Some(all) => Text::Memory {
            all,
            pos: 0,
            source: input,
        },
        None => Text::Reader(std::io::BufReader::with_capacity(
            16 << 10,
            SourceReader { src: input, pos: 0 },
        )),
    };
    ctf_to_cbf_in_blocks(
        text, specs, precision, chunking, threads, BLOCK, out, progress,
    )
}

/// A [`Source`] read from start to end (for sources not in memory).
struct SourceReader<'a> {
    src: &'a Source,
    pos: u64,
}

impl std::io::Read for SourceReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.src.len().saturating_sub(self.pos);
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let Some(dst) = buf.get_mut(..n) else {
            return Ok(0);
        };
        self.src
            .read_at(self.pos, dst)
            .map_err(std::io::Error::other)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Where the text of a conversion comes from.
pub(crate) enum Text<'a, R> {
    /// Read in blocks from a reader.
    Reader(R),
    /// All in memory: blocks are ranges of `all`, the bytes of `source`.
    Memory {
        all: &'a [u8],
        pos: usize,
        source: &'a Source,
    },
}

/// The end of the block that starts at `pos`: `size` bytes on, then to the
/// end of the line they end in (as [`read_block`] reads).
fn block_end(all: &[u8], pos: usize, size: usize) -> usize {
    let end = pos.saturating_add(size).min(all.len());
    if end == all.len() || end.checked_sub(1).and_then(|i| all.get(i)) == Some(&b'\n') {
        return end;
    }
    match memchr::memchr(b'\n', all.get(end..).unwrap_or_default()) {
        Some(i) => end + i + 1,
        None => all.len(),
    }
}

/// Parsed mapped text is handed back to the kernel in steps of this many
/// bytes (measured on 2 cores, 100 MB: per 256 KiB block, released by the
/// parse threads, the two-thread conversion was 2 to 4 ms slower;
/// docs/performance.md).
const RELEASE_EVERY: usize = 4 << 20;

/// Blocks in flight at most (4 MiB of text): the workers go on parsing
/// while the assembling thread writes out a finished chunk. (Measured on 2
/// cores: 16 is 3% faster than 4 on 100 MB and the same on 20 MB; 32 is no
/// faster; docs/performance.md.)
const AHEAD: usize = 16;

/// [`ctf_to_cbf`] with blocks of `block` bytes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ctf_to_cbf_in_blocks<R: std::io::BufRead>(
    mut input: Text<'_, R>,
    specs: &[StreamSpec],
    precision: ElemType,
    chunking: Chunking,
    threads: usize,
    block: usize,
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
    let threads = dataformats_core::parallel::threads(threads);
    let mut w = Writer::create(out, &streams, chunking)?;
    w.set_signed_indices(compat);
    if threads > 1 {
        // The assembling thread hands each finished chunk to a writing
        // thread and goes on feeding the parse threads.
        w.write_behind()?;
    }
    let mut asm = Assembler {
        w,
        acc: specs
            .iter()
            .map(|s| match s.kind {
                StreamKind::Dense => Acc::Dense {
                    samples: 0,
                    bytes: Vec::new(),
                },
                StreamKind::Sparse => Acc::Sparse {
                    samples: Vec::new(),
                    used: 0,
                },
            })
            .collect(),
        open: false,
        current_id: None,
        report: ConvertReport::default(),
        lines_before: 0,
    };
    // Blocks done with come back here, so that their buffers (text and
    // values) are filled again instead of being allocated for each block.
    let spare: std::cell::RefCell<Vec<Parsed>> = std::cell::RefCell::new(Vec::new());
    // Mapped text before this is handed back to the kernel.
    let mut released = 0usize;
    let (memory, mapped): (&[u8], Option<&Source>) = match &input {
        Text::Memory { all, source, .. } => (all, Some(*source)),
        Text::Reader(_) => (&[], None),
    };
    dataformats_core::parallel::ordered_ahead(
        threads,
        AHEAD,
        || {
            let popped = spare.borrow_mut().pop();
            let mut p = popped.unwrap_or_else(|| Parsed::new(precision));
            match &mut input {
                Text::Reader(r) => {
                    if !read_block(r, block.max(1), &mut p.text)? {
                        return Ok(None);
                    }
                    p.range = None;
                    p.len = p.text.len();
                }
                Text::Memory { all, pos, .. } => {
                    if *pos >= all.len() {
                        return Ok(None);
                    }
                    let end = block_end(all, *pos, block.max(1));
                    p.range = Some(*pos..end);
                    p.len = end - *pos;
                    *pos = end;
                }
            }
            Ok(Some(p))
        },
        |mut p: Parsed| {
            p.parse_block(memory, specs, compat);
            p
        },
        |parsed: Parsed| -> Result<()> {
            // The mapped text taken in order goes back to the kernel a few
            // megabytes at a time: one call (and, with several threads, one
            // flush of the other cores' address caches) per 4 MiB rather
            // than per block, none long enough to hold up the parse threads.
            if let (Some(src), Some(r)) = (mapped, &parsed.range)
                && r.end.saturating_sub(released) >= RELEASE_EVERY
            {
                src.release_range(released as u64..r.end as u64);
                released = r.end;
            }
            progress(parsed.len);
            asm.block(&parsed)?;
            spare.borrow_mut().push(parsed);
            Ok(())
        },
    )?;
    asm.flush()?;
    asm.w.finish()?;
    Ok(asm.report)
}

/// Writes every sequence of `reader` as CTF text: one line per sample row,
/// `id |name values` (dense) or `id |name index:value ...` (sparse), with
/// the sequence's global index as id and the binary's stream names as field
/// names; a sequence of length 0 becomes `id |#` so it survives a round trip.
/// Values use the shortest text that parses back to the same number.
pub fn cbf_to_ctf(reader: &crate::read::Reader, out: &mut impl std::io::Write) -> Result<u64> {
    use crate::read::Record;
    let io = Error::from;
    let short = |chunk: usize, seq: usize, stream: &str, what: &str| {
        Error::new(
            ErrorKind::SampleCountMismatch,
            format!("the record holds fewer {what} than its samples need"),
        )
        .in_chunk(chunk as u64)
        .in_record(seq as u64, stream)
    };
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
                            let row = values
                                .get(j * dim..(j + 1) * dim)
                                .ok_or_else(|| short(c, q, &s.name, "dense values"))?;
                            for v in row {
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
                            let n = sizes
                                .get(j)
                                .copied()
                                .ok_or_else(|| short(c, q, &s.name, "sparse sample sizes"))?
                                as usize;
                            let range = start..start + n;
                            let (Some(idx), Some(vals)) =
                                (indices.get(range.clone()), values.get(range))
                            else {
                                return Err(short(c, q, &s.name, "sparse entries"));
                            };
                            for (i, v) in idx.iter().zip(vals) {
                                line.push_str(&format!(" {i}:{}", fmt_value(*v)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn py_float_takes_what_python_float_takes() {
        let bits = |t: &str| py_float(t).map(f64::to_bits);
        for (t, want) in [
            ("0", 0.0),
            ("-0", -0.0),
            ("+1.5", 1.5),
            ("1.", 1.0),
            (".5", 0.5),
            ("-.5e1", -5.0),
            ("1e5", 1e5),
            ("1E+05", 1e5),
            ("2.5e-3", 2.5e-3),
            ("1_000.2_5", 1000.25),
            ("1e1_0", 1e10),
            ("007", 7.0),
            ("1e400", f64::INFINITY),
            ("-1e400", f64::NEG_INFINITY),
            ("1e-400", 0.0),
            ("4.9406564584124654e-324", 5e-324),
            ("0.1", 0.1),
            ("9007199254740993", 9007199254740992.0),
            ("inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("+iNF", f64::INFINITY),
            // Digits of other scripts: Arabic-Indic, fullwidth, Devanagari,
            // mathematical bold (the first and last runs of the table).
            ("\u{661}.\u{665}", 1.5),
            ("-\u{FF11}\u{FF12}e\u{FF13}", -12e3),
            ("\u{966}\u{96F}", 9.0),
            ("\u{1D7CF}\u{1FBF9}", 19.0),
        ] {
            assert_eq!(bits(t), Some(want.to_bits()), "{t:?}");
        }
        assert!(py_float("nan").is_some_and(|v| v.is_nan() && v.is_sign_positive()));
        assert!(py_float("-NaN").is_some_and(|v| v.is_nan() && v.is_sign_negative()));
        for t in [
            "",
            "-",
            "+",
            ".",
            "e5",
            "1e",
            "1e+",
            "-+5",
            "+-5",
            "--5",
            "++5",
            "1.5.5",
            "1e5.5",
            "1+5",
            "_1",
            "1_",
            "1__0",
            "1_.5",
            "1._5",
            "1e_5",
            "0x10",
            "infinit",
            "infinityy",
            "nana",
            "-inf_",
            "1 2",
            "1,5",
            "\u{661}\u{B7}",
            "\u{660}x",
            "\u{2160}",
        ] {
            assert_eq!(py_float(t), None, "{t:?}");
        }
    }

    #[test]
    fn the_fast_path_gives_what_the_full_parse_gives() {
        // Random plain decimals of 1 to 17 digits with the point anywhere:
        // the fast path (up to 15 digits) or the full parse, always the
        // correctly rounded value Rust's parse gives.
        let mut rng = dataformats_core::rng::SplitMix64::new(20_261_126);
        for _ in 0..200_000 {
            let n = rng.below(17) as usize + 1;
            let mut t: String = (0..n)
                .map(|_| char::from(b'0' + rng.below(10) as u8))
                .collect();
            match rng.below(4) {
                0 => {}
                1 => t.insert(0, '.'),
                2 => t.push('.'),
                _ => t.insert(rng.below(n as u64 + 1) as usize, '.'),
            }
            let want: f64 = t.parse().unwrap();
            assert_eq!(py_float(&t).map(f64::to_bits), Some(want.to_bits()), "{t}");
            if n <= 15 {
                assert!(plain_decimal(t.as_bytes()).is_some(), "{t}");
            }
        }
        for t in [
            "",
            ".",
            "..5",
            "1.2.3",
            "1e5",
            "-1",
            "+1",
            "1_0",
            "1234567890123456",
        ] {
            assert_eq!(plain_decimal(t.as_bytes()), None, "{t}");
        }
    }

    #[test]
    fn tokens_split_at_every_python_space() {
        let t: Vec<&str> = py_tokens("  a\tb\u{1c}c\u{a0}d\u{3000}\u{e9}t\u{e9}\r\n").collect();
        assert_eq!(t, ["a", "b", "c", "d", "\u{e9}t\u{e9}"]);
        assert_eq!(py_tokens("").count(), 0);
        assert_eq!(py_tokens(" \u{2028} ").count(), 0);
        assert_eq!(py_tokens("x").collect::<Vec<_>>(), ["x"]);
    }

    #[test]
    fn py_int_takes_what_python_int_takes() {
        for (t, want) in [
            ("0", 0),
            ("-7", -7),
            ("+12", 12),
            ("1_000", 1000),
            ("007", 7),
            ("\u{663}_\u{664}", 34),
        ] {
            assert_eq!(py_int(t), Some(want), "{t:?}");
        }
        for t in [
            "",
            "-",
            "+-1",
            "1.0",
            "_1",
            "1_",
            "1__0",
            "1e3",
            "0x1",
            "99999999999999999999",
            "\u{2160}",
            "\u{B2}",
        ] {
            assert_eq!(py_int(t), None, "{t:?}");
        }
    }

    #[test]
    fn lines_end_at_lf_crlf_and_lone_cr_with_their_numbers() {
        let lines = |text: &[u8]| -> std::result::Result<Vec<(usize, String)>, (usize, usize)> {
            let mut got = Vec::new();
            block_lines(
                text,
                |n, l| {
                    got.push((n, l.to_string()));
                    Ok(())
                },
                |n, col| (n, col),
            )?;
            Ok(got)
        };
        let want = |w: &[(usize, &str)]| Ok(w.iter().map(|(n, l)| (*n, l.to_string())).collect());
        assert_eq!(
            lines(b"a |x 1\r\nb |x 2\rc |x 3\n\nd\r"),
            want(&[
                (0, "a |x 1"),
                (1, "b |x 2"),
                (2, "c |x 3"),
                (3, ""),
                (4, "d")
            ])
        );
        // A CR ending the text ends a line; before a LF it is part of CRLF;
        // two CRs before a LF leave an empty line.
        assert_eq!(lines(b"\r"), want(&[(0, "")]));
        assert_eq!(lines(b"x\r\r\n"), want(&[(0, "x"), (1, "")]));
        assert_eq!(lines(b"x\r\r"), want(&[(0, "x"), (1, "")]));
        assert_eq!(lines(b"x"), want(&[(0, "x")]));
        assert_eq!(lines(b"\n"), want(&[(0, "")]));
        assert_eq!(lines(b""), want(&[]));
        assert_eq!(lines(b"ok\nab\xff\n"), Err((1, 3)));
    }

    /// Random CTF text: ids that repeat, lines without ids, dense and
    /// sparse fields, comments, every newline style; with `damage`, a few
    /// lines broken in one of the ways the parser names.
    fn random_ctf(seed: u64, lines: usize, damage: bool) -> Vec<u8> {
        let mut r = dataformats_core::rng::SplitMix64::new(seed);
        let mut t = Vec::new();
        let mut id = 0u64;
        for _ in 0..lines {
            if r.below(4) == 0 {
                id += 1;
            }
            let mut l = match r.below(8) {
                0 => String::new(),
                _ => format!("{id} "),
            };
            for _ in 0..1 + r.below(3) {
                match r.below(5) {
                    0 => l.push_str("|# a comment "),
                    1 | 2 => {
                        l.push_str("|d");
                        for _ in 0..3 {
                            l.push_str(&format!(" {}.{:03}", r.below(100), r.below(1000)));
                        }
                        l.push(' ');
                    }
                    _ => {
                        l.push_str("|s");
                        for _ in 0..r.below(4) {
                            l.push_str(&format!(" {}:{}", r.below(7), r.below(9)));
                        }
                        l.push_str(" 0:1 ");
                    }
                }
            }
            if damage && r.below(300) == 0 {
                match r.below(6) {
                    0 => l = "no bar here".into(),
                    1 => l.push_str("|d 1 2"),
                    2 => l.push_str("|d 1 x 3"),
                    3 => l.push_str("|q 1"),
                    4 => l.push_str("|s 9:1"),
                    _ => l.push('\u{FFFF}'),
                }
            }
            t.extend_from_slice(l.as_bytes());
            if damage && r.below(500) == 0 {
                t.push(0xFF);
            }
            t.extend_from_slice(match r.below(10) {
                0 => b"\r\n",
                1 => b"\r",
                _ => b"\n",
            });
        }
        t
    }

    /// The streams `random_ctf` writes (`d` dense 3, `s` sparse 7) and a
    /// new scratch folder named after `what`.
    fn two_streams_and_dir(what: &str) -> ([StreamSpec; 2], std::path::PathBuf) {
        let specs = [
            parse_stream_arg("d:dense:3").unwrap(),
            parse_stream_arg("s:sparse:7").unwrap(),
        ];
        let dir = std::env::temp_dir().join(format!("df-cntk-ctf-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        (specs, dir)
    }

    #[test]
    fn blocks_on_threads_give_what_one_pass_gives() {
        let (specs, dir) = two_streams_and_dir("blocks");
        let convert = |text: &[u8], threads: usize, block: usize, memory: bool, name: &str| {
            let out = dir.join(name);
            let mut progress = 0;
            let src = Source::from_vec(text.to_vec());
            let input = match src.as_slice() {
                Some(all) if memory => Text::Memory {
                    all,
                    pos: 0,
                    source: &src,
                },
                _ => Text::Reader(text),
            };
            let r = ctf_to_cbf_in_blocks(
                input,
                &specs,
                ElemType::F32,
                Chunking::Target(4096),
                threads,
                block,
                &out,
                |n| progress += n,
            );
            let bytes = std::fs::read(&out).ok();
            let _ = std::fs::remove_file(&out);
            match r {
                Ok(rep) => {
                    assert_eq!(progress, text.len());
                    let bytes = bytes.expect("the output exists after success");
                    // The report counts the rows the file's chunk table gives.
                    let table = crate::read::Reader::from_bytes(bytes.clone()).unwrap();
                    let rows: u64 = table
                        .chunks()
                        .iter()
                        .map(|c| u64::from(c.num_samples))
                        .sum();
                    assert_eq!(rep.records, rows);
                    assert!(rep.records <= rep.samples);
                    Ok((rep, bytes))
                }
                Err(e) => {
                    assert!(bytes.is_none(), "no output after {e}");
                    Err(e.to_string())
                }
            }
        };
        let mut failures = 0;
        for seed in 0..40u64 {
            let damage = seed % 2 == 1;
            let text = random_ctf(seed, 400, damage);
            let whole = convert(&text, 1, usize::MAX >> 1, false, "one.bin");
            failures += usize::from(whole.is_err());
            for (threads, block) in [(1, 1), (2, 7), (3, 64), (4, 1000), (1, usize::MAX >> 1)] {
                for memory in [false, true] {
                    let parts = convert(&text, threads, block, memory, "parts.bin");
                    assert_eq!(
                        parts, whole,
                        "seed {seed}, {threads} threads, blocks of {block}, in memory {memory}"
                    );
                }
            }
        }
        // The damaged texts do fail, at different lines.
        assert!(failures >= 15, "{failures} of 40 failed");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A source in memory, a file read by positioned reads and a reader
    /// give the same file (and the same error).
    #[test]
    fn every_kind_of_source_gives_the_same_file() {
        let (specs, dir) = two_streams_and_dir("src");
        let out = dir.join("out.bin");
        let input = dir.join("in.ctf");
        let run = |f: &dyn Fn() -> Result<ConvertReport>| {
            let r = f().map_err(|e| e.to_string());
            let bytes = std::fs::read(&out).ok();
            let _ = std::fs::remove_file(&out);
            r.map(|rep| (rep, bytes.expect("output after success")))
        };
        for seed in [3u64, 4, 9, 10] {
            let text = random_ctf(seed, 3000, seed % 2 == 0);
            std::fs::write(&input, &text).unwrap();
            let chunking = Chunking::Target(4096);
            let from_reader =
                run(&|| ctf_to_cbf(&text[..], &specs, ElemType::F32, chunking, 2, &out, |_| {}));
            let in_memory = Source::from_vec(text.clone());
            let positioned = Source::open(&input).unwrap();
            assert!(positioned.as_slice().is_none());
            for src in [&in_memory, &positioned] {
                let got = run(&|| {
                    ctf_to_cbf_source(src, &specs, ElemType::F32, chunking, 2, &out, |_| {})
                });
                assert_eq!(got, from_reader, "seed {seed}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dense_values_are_what_tokens_and_py_float_give() {
        let pieces = [
            "0",
            "1",
            "7",
            "12",
            "3.25",
            ".",
            "-",
            "+",
            "e",
            "E5",
            "_",
            "1_0",
            "inf",
            "nan",
            " ",
            "  ",
            "\t",
            "\u{3000}",
            "\u{85}",
            "\u{661}",
            "\u{1c}",
            "x",
            "0.1234567890123",
            "12345678901234567",
            "-.5",
            "1.",
            "--1",
            "+-2",
            "1e-3",
            "é",
        ];
        let mut r = dataformats_core::rng::SplitMix64::new(5);
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..r.below(12) {
                s.push_str(pieces[r.below(pieces.len() as u64) as usize]);
            }
            let mut want = Vec::new();
            let (mut n, mut bad) = (0, None);
            for t in py_tokens(&s) {
                n += 1;
                if bad.is_none() {
                    match py_float(t) {
                        Some(v) => want.push(v.to_bits()),
                        None => bad = Some(t),
                    }
                }
            }
            let mut got = Vec::new();
            let (gn, gbad) = dense_values(&s, &mut got);
            let got: Vec<u64> = got.into_iter().map(f64::to_bits).collect();
            assert_eq!((gn, gbad, got), (n, bad, want), "{s:?}");
        }
    }
}
