//! A bounds-checked little-endian reader over a byte slice at a known file
//! offset; every failure carries the absolute offset.

use dataformats_core::parse;

use crate::error::{Error, ErrorKind, Result};

/// Reads fields front to back from `data`, which starts at file offset `base`.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    base: u64,
    pos: usize,
    /// The kind reported when a read runs past the end.
    short: ErrorKind,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: u64) -> Self {
        Cursor {
            data,
            base,
            pos: 0,
            short: ErrorKind::Truncated,
        }
    }

    /// Reports running past the end as `kind` instead of `truncated`.
    pub(crate) fn short_is(mut self, kind: ErrorKind) -> Self {
        self.short = kind;
        self
    }

    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(Error::new(
                self.short,
                format!(
                    "{what} needs {n} byte(s), {} left",
                    self.data.len() - self.pos
                ),
            )
            .at(self.offset()));
        };
        let out = self.data.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    fn arr<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let b = self.bytes(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.arr::<1>(what)?[0])
    }

    #[allow(dead_code)]
    pub(crate) fn i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_le_bytes(self.arr(what)?))
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.arr(what)?))
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.arr(what)?))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.arr(what)?))
    }

    /// An unsigned LEB128 (at most 10 bytes; non-minimal forms accepted).
    pub(crate) fn leb128(&mut self, what: &str) -> Result<u64> {
        let at = self.offset();
        let rest = self.data.get(self.pos..).unwrap_or_default();
        match parse::finish(rest, at, parse::uleb128(rest)) {
            Ok((left, v)) => {
                self.pos = self.data.len() - left.len();
                Ok(v)
            }
            Err(e) => Err(self.map_parse(e, what)),
        }
    }

    /// A .NET `BinaryWriter` string's bytes (7-bit Int32 length, then UTF-8).
    pub(crate) fn string_bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let at = self.offset();
        let rest = self.data.get(self.pos..).unwrap_or_default();
        match parse::finish(rest, at, parse::dotnet_string_bytes(rest)) {
            Ok((left, v)) => {
                self.pos = self.data.len() - left.len();
                Ok(v)
            }
            Err(e) => Err(self.map_parse(e, what)),
        }
    }

    /// A string, invalid UTF-8 replaced as ML.NET does.
    pub(crate) fn string(&mut self, what: &str) -> Result<String> {
        Ok(String::from_utf8_lossy(self.string_bytes(what)?).into_owned())
    }

    fn map_parse(&self, e: dataformats_core::Error, what: &str) -> Error {
        let at = e.offset().unwrap_or_else(|| self.offset());
        let kind = match e.kind() {
            dataformats_core::ErrorKind::BadVarint => ErrorKind::BadVarint,
            _ => self.short,
        };
        Error::new(kind, format!("{what}: {e}")).at(at)
    }
}
