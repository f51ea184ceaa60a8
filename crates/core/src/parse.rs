//! nom helpers for little-endian binary formats.
//!
//! The parsers here work on `&[u8]`, allocate nothing, and fail with a
//! [`ParseError`] that remembers the input position, so [`finish`] can turn any
//! failure into an [`Error`] carrying an absolute byte offset: short input
//! becomes [`Error::Truncated`] `{ at, needed }` (also when a streaming nom
//! parser reports `Incomplete`), a wrong signature [`Error::BadMagic`], a
//! malformed variable-length integer [`Error::BadVarint`], and anything else
//! [`Error::Corrupt`].
//!
//! ```
//! use dataformats_core::parse::{self, le_u16, le_u32, tag};
//!
//! // A made-up header: magic "DF", a u16 version, a u32 count.
//! fn header(i: &[u8]) -> parse::PResult<'_, (u16, u32)> {
//!     let (i, _) = tag(b"DF", "\"DF\"")(i)?;
//!     let (i, version) = le_u16(i)?;
//!     let (i, count) = le_u32(i)?;
//!     Ok((i, (version, count)))
//! }
//!
//! let bytes = [b'D', b'F', 1, 0, 7, 0, 0, 0];
//! let (_, (v, n)) = parse::finish(&bytes, 0, header(&bytes)).unwrap();
//! assert_eq!((v, n), (1, 7));
//!
//! // Cut short: the error says which read failed and where.
//! let err = parse::finish(&bytes[..6], 100, header(&bytes[..6])).unwrap_err();
//! assert_eq!(err.to_string(), "truncated: 4 byte(s) needed at offset 104, but the input ends first");
//! ```

use nom::error::ErrorKind as NomKind;
use nom::{Err as NomErr, IResult, Needed};

use crate::error::{Error, Result};

/// What a parser in this module (or any nom combinator) failed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// Fewer than `needed` bytes were left.
    Truncated {
        /// How many bytes the failed read needed.
        needed: u64,
    },
    /// The bytes were not the expected signature.
    BadMagic {
        /// A human-readable form of the expected signature.
        expected: &'static str,
    },
    /// A variable-length integer was malformed (overflow, too long, negative).
    BadVarint(&'static str),
    /// The bytes break a rule of the format (stated in words).
    Invalid(&'static str),
    /// A nom combinator failed.
    Nom(NomKind),
}

/// A parse failure: what went wrong, and the input that was left at that point
/// (its position gives the offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError<'a> {
    /// The remaining input where the failure happened.
    pub input: &'a [u8],
    /// What went wrong.
    pub kind: ParseErrorKind,
}

impl<'a> ParseError<'a> {
    /// A failure of `kind` at `input`.
    pub fn new(input: &'a [u8], kind: ParseErrorKind) -> Self {
        ParseError { input, kind }
    }

    /// A failure of `kind` at `input`, wrapped as a recoverable nom error.
    pub fn err<O>(input: &'a [u8], kind: ParseErrorKind) -> PResult<'a, O> {
        Err(NomErr::Error(ParseError::new(input, kind)))
    }

    /// Converts to an [`Error`], given the buffer the parse started on and the
    /// absolute offset of that buffer.
    pub fn into_error(self, whole: &[u8], base: u64) -> Error {
        let at = base.saturating_add(position(whole, self.input));
        match self.kind {
            ParseErrorKind::Truncated { needed } => Error::Truncated { at, needed },
            ParseErrorKind::BadMagic { expected } => Error::bad_magic(at, expected, self.input),
            ParseErrorKind::BadVarint(why) => Error::BadVarint { at, why },
            ParseErrorKind::Invalid(why) => Error::corrupt(at, why),
            ParseErrorKind::Nom(kind) => Error::corrupt(at, format!("parse failed ({kind:?})")),
        }
    }
}

impl<'a> nom::error::ParseError<&'a [u8]> for ParseError<'a> {
    fn from_error_kind(input: &'a [u8], kind: NomKind) -> Self {
        let kind = if kind == NomKind::Eof {
            ParseErrorKind::Truncated { needed: 1 }
        } else {
            ParseErrorKind::Nom(kind)
        };
        ParseError { input, kind }
    }

    fn append(_input: &'a [u8], _kind: NomKind, other: Self) -> Self {
        // Keep the innermost (most precise) failure.
        other
    }
}

/// The result type of the parsers in this module.
pub type PResult<'a, O> = IResult<&'a [u8], O, ParseError<'a>>;

/// Offset of `part` within `whole`, when `part` is a sub-slice of it (the end
/// of `whole` otherwise). Compares addresses only; never dereferences.
#[inline]
pub fn position(whole: &[u8], part: &[u8]) -> u64 {
    let start = whole.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    match p.checked_sub(start) {
        Some(d) if d <= whole.len() => d as u64,
        _ => whole.len() as u64,
    }
}

/// Turns the result of a parser run on `whole` (which starts at absolute
/// offset `base`) into `Result<(rest, value)>` with absolute offsets.
///
/// A streaming parser's `Incomplete(n)` becomes `Truncated { at: end of
/// whole, needed: n }`.
#[inline]
pub fn finish<'a, O>(whole: &'a [u8], base: u64, r: PResult<'a, O>) -> Result<(&'a [u8], O)> {
    match r {
        Ok(v) => Ok(v),
        Err(NomErr::Incomplete(needed)) => Err(Error::Truncated {
            at: base.saturating_add(whole.len() as u64),
            needed: match needed {
                Needed::Size(n) => n.get() as u64,
                Needed::Unknown => 1,
            },
        }),
        Err(NomErr::Error(e) | NomErr::Failure(e)) => Err(e.into_error(whole, base)),
    }
}

/// Runs `parser` on `whole` (at absolute offset `base`) and returns its value,
/// ignoring any bytes it leaves.
pub fn run<'a, O>(
    whole: &'a [u8],
    base: u64,
    parser: impl FnOnce(&'a [u8]) -> PResult<'a, O>,
) -> Result<O> {
    finish(whole, base, parser(whole)).map(|(_, v)| v)
}

/// Takes exactly `n` bytes.
#[inline]
pub fn take<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    move |i: &'a [u8]| match (i.get(..n), i.get(n..)) {
        (Some(head), Some(rest)) => Ok((rest, head)),
        _ => ParseError::err(i, ParseErrorKind::Truncated { needed: n as u64 }),
    }
}

/// Takes exactly `n` bytes, where `n` comes from the file as a `u64`.
#[inline]
pub fn take_u64<'a>(n: u64) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    move |i: &'a [u8]| match usize::try_from(n) {
        Ok(n) => take(n)(i),
        Err(_) => ParseError::err(i, ParseErrorKind::Truncated { needed: n }),
    }
}

/// Takes exactly `N` bytes as an array.
#[inline]
pub fn array<const N: usize>(i: &[u8]) -> PResult<'_, [u8; N]> {
    match i.split_first_chunk::<N>() {
        Some((head, rest)) => Ok((rest, *head)),
        None => ParseError::err(i, ParseErrorKind::Truncated { needed: N as u64 }),
    }
}

/// Matches the exact bytes `magic`; on mismatch fails with `BadMagic`
/// (described as `expected` in the error), on short input with `Truncated`.
pub fn tag<'a>(
    magic: &'static [u8],
    expected: &'static str,
) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    move |i: &'a [u8]| {
        let (rest, head) = take(magic.len())(i)?;
        if head == magic {
            Ok((rest, head))
        } else {
            ParseError::err(i, ParseErrorKind::BadMagic { expected })
        }
    }
}

macro_rules! le_number {
    ($($(#[$doc:meta])* $name:ident => $t:ty;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub fn $name(i: &[u8]) -> PResult<'_, $t> {
            let (rest, b) = array::<{ std::mem::size_of::<$t>() }>(i)?;
            Ok((rest, <$t>::from_le_bytes(b)))
        }
    )*};
}

le_number! {
    /// A `u8`.
    le_u8 => u8;
    /// A little-endian `u16`.
    le_u16 => u16;
    /// A little-endian `u32`.
    le_u32 => u32;
    /// A little-endian `u64`.
    le_u64 => u64;
    /// An `i8`.
    le_i8 => i8;
    /// A little-endian `i16`.
    le_i16 => i16;
    /// A little-endian `i32`.
    le_i32 => i32;
    /// A little-endian `i64`.
    le_i64 => i64;
    /// A little-endian IEEE 754 `f32` (bit pattern preserved, NaN payloads included).
    le_f32 => f32;
    /// A little-endian IEEE 754 `f64` (bit pattern preserved, NaN payloads included).
    le_f64 => f64;
}

/// An unsigned LEB128 integer (7 bits a byte, low group first, high bit set
/// on every byte but the last) decoded into a `u64`.
///
/// At most 10 bytes; the 10th byte carries bit 63 only, so it must be `0x00`
/// or `0x01`: a larger value is an overflow, and a continuation bit there is
/// an over-long encoding (both `BadVarint`). Non-minimal encodings such as
/// `85 80 00` (= 5) are accepted; use [`uleb128_minimal`] to refuse them.
pub fn uleb128(i: &[u8]) -> PResult<'_, u64> {
    let mut value: u64 = 0;
    for (n, &b) in i.iter().enumerate().take(10) {
        if n == 9 {
            if b & 0x80 != 0 {
                return ParseError::err(
                    i,
                    ParseErrorKind::BadVarint("LEB128 longer than 10 bytes"),
                );
            }
            if b > 1 {
                return ParseError::err(i, ParseErrorKind::BadVarint("LEB128 value overflows u64"));
            }
        }
        value |= u64::from(b & 0x7f) << (7 * n);
        if b & 0x80 == 0 {
            let rest = i.get(n + 1..).unwrap_or_default();
            return Ok((rest, value));
        }
    }
    ParseError::err(
        i,
        ParseErrorKind::Truncated {
            needed: i.len() as u64 + 1,
        },
    )
}

/// Like [`uleb128`], but also rejects non-minimal encodings (a final byte of
/// `0x00` after at least one continuation byte).
pub fn uleb128_minimal(i: &[u8]) -> PResult<'_, u64> {
    let (rest, v) = uleb128(i)?;
    let used = i.len() - rest.len();
    if used > 1 && i.get(used - 1) == Some(&0) {
        return ParseError::err(i, ParseErrorKind::BadVarint("non-minimal LEB128 encoding"));
    }
    Ok((rest, v))
}

/// The .NET "7-bit encoded Int32" (`BinaryWriter.Write7BitEncodedInt`): the
/// LEB128 byte format limited to 5 bytes.
///
/// The 5th byte may carry only the top 4 bits (so it must be at most `0x0F`,
/// and in particular has no continuation bit); anything else is `BadVarint`.
/// Values with bit 31 set come back negative, as .NET returns them.
pub fn dotnet_7bit_i32(i: &[u8]) -> PResult<'_, i32> {
    let mut value: u32 = 0;
    for (n, &b) in i.iter().enumerate().take(5) {
        if n == 4 && b > 0x0f {
            return ParseError::err(
                i,
                ParseErrorKind::BadVarint("7-bit encoded Int32: 5th byte above 0x0F"),
            );
        }
        value |= u32::from(b & 0x7f) << (7 * n);
        if b & 0x80 == 0 {
            let rest = i.get(n + 1..).unwrap_or_default();
            return Ok((rest, value as i32));
        }
    }
    ParseError::err(
        i,
        ParseErrorKind::Truncated {
            needed: i.len() as u64 + 1,
        },
    )
}

/// A .NET `BinaryWriter` string: a 7-bit encoded Int32 byte count, then that
/// many bytes. Returns the raw bytes (the caller decides how to treat invalid
/// UTF-8). A negative length is `BadVarint`.
pub fn dotnet_string_bytes(i: &[u8]) -> PResult<'_, &[u8]> {
    let (rest, len) = dotnet_7bit_i32(i)?;
    let Ok(len) = usize::try_from(len) else {
        return ParseError::err(i, ParseErrorKind::BadVarint("negative string length"));
    };
    take(len)(rest)
}

/// A byte string prefixed by its length, read with `len` (for example
/// [`le_u32`] mapped to `u64`, or [`uleb128`]).
pub fn length_prefixed<'a, L>(mut len: L) -> impl FnMut(&'a [u8]) -> PResult<'a, &'a [u8]>
where
    L: FnMut(&'a [u8]) -> PResult<'a, u64>,
{
    move |i: &'a [u8]| {
        let (rest, n) = len(i)?;
        take_u64(n)(rest)
    }
}

/// A UTF-8 string prefixed by its byte length, read with `len`; invalid UTF-8
/// is `Corrupt` at the string's first byte.
pub fn length_prefixed_utf8<'a, L>(len: L) -> impl FnMut(&'a [u8]) -> PResult<'a, &'a str>
where
    L: FnMut(&'a [u8]) -> PResult<'a, u64>,
{
    let mut bytes = length_prefixed(len);
    move |i: &'a [u8]| {
        let (rest, b) = bytes(i)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok((rest, s)),
            Err(_) => ParseError::err(b, ParseErrorKind::Invalid("string is not valid UTF-8")),
        }
    }
}

/// [`le_u32`] widened to `u64`, for use as a length with [`length_prefixed`].
#[inline]
pub fn le_u32_len(i: &[u8]) -> PResult<'_, u64> {
    le_u32(i).map(|(r, v)| (r, u64::from(v)))
}

/// A fixed-size field of `n` bytes holding a name padded with NUL bytes.
///
/// Returns the bytes before the first NUL (all `n` if there is none). Every
/// byte after the first NUL must also be NUL; a stray byte there is `Corrupt`.
pub fn nul_padded<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, &'a [u8]> {
    move |i: &'a [u8]| {
        let (rest, field) = take(n)(i)?;
        let end = field.iter().position(|&b| b == 0).unwrap_or(n);
        let (name, pad) = field.split_at(end);
        if pad.iter().any(|&b| b != 0) {
            return ParseError::err(
                pad,
                ParseErrorKind::Invalid("non-NUL byte after the NUL padding of a name"),
            );
        }
        Ok((rest, name))
    }
}

/// [`nul_padded`], then UTF-8: a fixed-size NUL-padded text name.
pub fn nul_padded_str<'a>(n: usize) -> impl Fn(&'a [u8]) -> PResult<'a, &'a str> {
    let field = nul_padded(n);
    move |i: &'a [u8]| {
        let (rest, name) = field(i)?;
        match std::str::from_utf8(name) {
            Ok(s) => Ok((rest, s)),
            Err(_) => ParseError::err(name, ParseErrorKind::Invalid("name is not valid UTF-8")),
        }
    }
}

/// Bytes being parsed one structure after another, with the absolute file
/// offset of the point reached: for formats whose fields must be checked as
/// soon as each is read (a later field's absence must not hide an earlier
/// field's fault).
///
/// ```
/// use dataformats_core::parse::{Input, le_u8, le_u32};
/// let bytes = [1u8, 7, 0, 0, 0, 9];
/// let mut i = Input::new(&bytes, 100);
/// assert_eq!(i.parse(le_u8).unwrap(), 1);
/// assert_eq!(i.offset(), 101);
/// assert_eq!(i.parse(le_u32).unwrap(), 7);
/// // Cut short: nothing is consumed, and the error says where.
/// let e = i.parse(le_u32).unwrap_err();
/// assert_eq!(e.offset(), Some(105));
/// assert_eq!(i.remaining(), &[9]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    whole: &'a [u8],
    rest: &'a [u8],
    base: u64,
}

impl<'a> Input<'a> {
    /// `bytes`, which start at absolute offset `base`.
    #[inline]
    pub fn new(bytes: &'a [u8], base: u64) -> Self {
        Input {
            whole: bytes,
            rest: bytes,
            base,
        }
    }

    /// The absolute offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base.saturating_add(self.position() as u64)
    }

    /// Where the next byte is, counted from the start of the bytes.
    #[inline]
    pub fn position(&self) -> usize {
        self.whole.len() - self.rest.len()
    }

    /// The absolute offset just past the last byte.
    #[inline]
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.whole.len() as u64)
    }

    /// The bytes not parsed yet.
    #[inline]
    pub fn remaining(&self) -> &'a [u8] {
        self.rest
    }

    /// Whether every byte was parsed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Runs `parser` on the remaining bytes; on success moves past what it
    /// consumed, on failure consumes nothing and returns the located error.
    #[inline]
    pub fn parse<O>(&mut self, parser: impl FnOnce(&'a [u8]) -> PResult<'a, O>) -> Result<O> {
        let (rest, v) = finish(self.whole, self.base, parser(self.rest))?;
        self.rest = rest;
        Ok(v)
    }

    /// Takes the next `n` bytes (a count from the file).
    #[inline]
    pub fn take(&mut self, n: u64) -> Result<&'a [u8]> {
        self.parse(take_u64(n))
    }

    /// Takes the next `n` bytes and returns where they lie, counted from
    /// the start of the bytes.
    #[inline]
    pub fn take_range(&mut self, n: u64) -> Result<std::ops::Range<usize>> {
        let start = self.position();
        self.take(n)?;
        Ok(start..self.position())
    }
}

/// Encodes `v` as minimal unsigned LEB128 into `out`; returns the number of
/// bytes written (at most 10).
pub fn write_uleb128(mut v: u64, out: &mut [u8; 10]) -> usize {
    let mut n = 0;
    for slot in out.iter_mut() {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        n += 1;
        if v == 0 {
            *slot = byte;
            break;
        }
        *slot = byte | 0x80;
    }
    n
}

/// Encodes `v` as a .NET 7-bit encoded Int32 into `out`; returns the number of
/// bytes written (at most 5). Negative values take all 5 bytes, as in .NET.
pub fn write_dotnet_7bit_i32(v: i32, out: &mut [u8; 5]) -> usize {
    let mut u = v as u32;
    let mut n = 0;
    for slot in out.iter_mut() {
        let byte = (u & 0x7f) as u8;
        u >>= 7;
        n += 1;
        if u == 0 {
            *slot = byte;
            break;
        }
        *slot = byte | 0x80;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn leb(bytes: &[u8]) -> Result<u64> {
        run(bytes, 0, uleb128)
    }

    #[test]
    fn input_moves_only_on_success_and_locates_failures() {
        let bytes = [1u8, 2, 3, 4, 5, 6];
        let mut i = Input::new(&bytes, 1000);
        assert_eq!((i.offset(), i.position(), i.end()), (1000, 0, 1006));
        assert_eq!(i.take_range(2).unwrap(), 0..2);
        assert_eq!(i.parse(le_u16).unwrap(), u16::from_le_bytes([3, 4]));
        assert_eq!(i.offset(), 1004);
        match i.take(3) {
            Err(Error::Truncated { at, needed }) => assert_eq!((at, needed), (1004, 3)),
            other => panic!("{other:?}"),
        }
        assert_eq!(i.remaining(), &[5, 6]);
        assert!(matches!(
            i.take(u64::MAX),
            Err(Error::Truncated { at: 1004, .. })
        ));
        assert_eq!(i.take(2).unwrap(), &[5, 6]);
        assert!(i.is_empty());
        assert!(matches!(
            i.parse(le_u8),
            Err(Error::Truncated {
                at: 1006,
                needed: 1
            })
        ));
    }

    #[test]
    fn uleb128_edges() {
        assert_eq!(leb(&[0]).unwrap(), 0);
        assert_eq!(leb(&[0x7f]).unwrap(), 127);
        assert_eq!(leb(&[0x80, 0x01]).unwrap(), 128);
        assert_eq!(leb(&[0xe5, 0x8e, 0x26]).unwrap(), 624_485);
        // Non-minimal is accepted by uleb128, refused by uleb128_minimal.
        assert_eq!(leb(&[0x85, 0x80, 0x00]).unwrap(), 5);
        let e = run(&[0x85u8, 0x80, 0x00][..], 0, uleb128_minimal).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadVarint);
        assert_eq!(run(&[0x85u8, 0x00][..], 0, uleb128).unwrap(), 5);
        // u64::MAX: nine 0xff then 0x01.
        let mut max = [0xffu8; 10];
        max[9] = 0x01;
        assert_eq!(leb(&max).unwrap(), u64::MAX);
        let mut out = [0u8; 10];
        let n = write_uleb128(u64::MAX, &mut out);
        assert_eq!(&out[..n], &max[..]);
        // Overflow: 10th byte 0x02.
        let mut over = max;
        over[9] = 0x02;
        let e = leb(&over).unwrap_err();
        assert!(matches!(e, Error::BadVarint { at: 0, .. }), "{e}");
        // Over-long: continuation bit on the 10th byte.
        let mut long = [0x80u8; 11];
        long[10] = 0;
        let e = leb(&long).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadVarint);
        // Truncated: continuation and then nothing.
        let e = run(&[0x00u8, 0x80, 0x80][..], 10, |i| {
            let (i, _) = le_u8(i)?;
            uleb128(i)
        })
        .unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 11, needed: 3 }), "{e}");
        assert_eq!(leb(&[]).unwrap_err().kind(), ErrorKind::Truncated);
    }

    #[test]
    fn uleb128_round_trips() {
        for v in [
            0u64,
            1,
            127,
            128,
            255,
            16_383,
            16_384,
            1 << 35,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = [0u8; 10];
            let n = write_uleb128(v, &mut out);
            assert_eq!(run(&out[..n], 0, uleb128_minimal).unwrap(), v);
        }
    }

    #[test]
    fn dotnet_7bit_edges() {
        let p = |b: &[u8]| run(b, 0, dotnet_7bit_i32);
        assert_eq!(p(&[0]).unwrap(), 0);
        assert_eq!(p(&[0x7f]).unwrap(), 127);
        assert_eq!(p(&[0x80, 0x01]).unwrap(), 128);
        assert_eq!(p(&[0xff, 0xff, 0xff, 0xff, 0x07]).unwrap(), i32::MAX);
        assert_eq!(p(&[0xff, 0xff, 0xff, 0xff, 0x0f]).unwrap(), -1);
        assert_eq!(p(&[0x80, 0x80, 0x80, 0x80, 0x08]).unwrap(), i32::MIN);
        // 5th byte above 0x0F (includes a continuation bit): rejected.
        assert_eq!(
            p(&[0xff, 0xff, 0xff, 0xff, 0x10]).unwrap_err().kind(),
            ErrorKind::BadVarint
        );
        assert_eq!(
            p(&[0xff, 0xff, 0xff, 0xff, 0x80, 0x00]).unwrap_err().kind(),
            ErrorKind::BadVarint
        );
        // Truncated.
        let e = p(&[0x80, 0x80]).unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 0, needed: 3 }));
        for v in [0, 1, 127, 128, 300, i32::MAX, -1, i32::MIN] {
            let mut out = [0u8; 5];
            let n = write_dotnet_7bit_i32(v, &mut out);
            assert_eq!(p(&out[..n]).unwrap(), v);
        }
    }

    #[test]
    fn dotnet_strings() {
        let s = run(&b"\x05hello world"[..], 0, dotnet_string_bytes).unwrap();
        assert_eq!(s, b"hello");
        assert_eq!(run(&[0u8][..], 0, dotnet_string_bytes).unwrap(), b"");
        // Negative length (-1).
        let e = run(
            &[0xffu8, 0xff, 0xff, 0xff, 0x0f][..],
            0,
            dotnet_string_bytes,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadVarint);
        // Length past the end: truncated at the first string byte.
        let e = run(&b"\x09abc"[..], 50, dotnet_string_bytes).unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 51, needed: 9 }), "{e}");
    }

    #[test]
    fn length_prefixed_and_names() {
        let buf = b"\x03\x00\x00\x00abcZ";
        let (rest, s) = finish(buf, 0, length_prefixed_utf8(le_u32_len)(buf)).unwrap();
        assert_eq!((s, rest), ("abc", &b"Z"[..]));
        let bad = b"\x02\x00\x00\x00\xff\xfe";
        let e = finish(bad, 0, length_prefixed_utf8(le_u32_len)(bad)).unwrap_err();
        assert!(matches!(e, Error::Corrupt { at: 4, .. }), "{e}");
        let e = finish(b"\x02\x00", 0, length_prefixed(le_u32_len)(b"\x02\x00")).unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 0, needed: 4 }));

        assert_eq!(
            run(&b"JSON\0\0\0\0"[..], 0, nul_padded(8)).unwrap(),
            b"JSON"
        );
        assert_eq!(
            run(&b"ABCDEFGH"[..], 0, nul_padded(8)).unwrap(),
            b"ABCDEFGH"
        );
        assert_eq!(run(&b"\0\0\0\0"[..], 0, nul_padded_str(4)).unwrap(), "");
        let e = run(&b"AB\0C"[..], 0, nul_padded(4)).unwrap_err();
        assert!(matches!(e, Error::Corrupt { at: 2, .. }), "{e}");
        let e = run(&b"AB"[..], 0, nul_padded(4)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
    }

    #[test]
    fn numbers_and_magic() {
        let buf = [1u8, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0xff];
        let (rest, a) = le_u32(&buf).unwrap();
        assert_eq!(a, 1);
        let (rest, _) = le_u16(rest).unwrap();
        assert_eq!(rest.len(), 3);
        let (_, f) = le_f64(&[0, 0, 0, 0, 0, 0, 0xf0, 0x3f]).unwrap();
        assert_eq!(f, 1.0);
        assert_eq!(le_i8(&[0xff]).unwrap().1, -1);
        let e = run(&b"XXXX"[..], 7, tag(b"blpk", "\"blpk\"")).unwrap_err();
        assert!(matches!(e, Error::BadMagic { at: 7, .. }));
        assert_eq!(
            e.to_string(),
            "bad magic at offset 7: expected \"blpk\", found 58585858"
        );
    }

    #[test]
    fn incomplete_from_streaming_nom_becomes_truncated() {
        let buf = [1u8, 2];
        let r: PResult<'_, u32> = nom::number::streaming::le_u32(&buf[..]);
        let e = finish(&buf, 8, r).unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 10, needed: 2 }), "{e}");
    }

    #[test]
    fn nom_combinators_work_with_our_error() {
        use nom::Parser;
        use nom::multi::count;
        let buf = [1u8, 0, 2, 0, 3];
        let e = finish(&buf, 0, count(le_u16, 3).parse(&buf[..])).unwrap_err();
        assert!(matches!(e, Error::Truncated { at: 4, needed: 2 }), "{e}");
        let (_, v) = finish(&buf, 0, count(le_u16, 2).parse(&buf[..])).unwrap();
        assert_eq!(v, vec![1, 2]);
    }
}
