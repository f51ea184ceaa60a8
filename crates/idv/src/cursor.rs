//! Fields read front to back from a byte slice at a known file offset, one
//! nom parser per field (core's [`Input`]); every failure carries the
//! absolute offset and names the field.

use dataformats_core::parse::{
    self, Input, PResult, dotnet_string_bytes, le_i16, le_i32, le_i64, le_u8, le_u64, uleb128,
};

use crate::error::{Error, ErrorKind, Result};

/// Reads fields front to back from `data`, which starts at file offset `base`.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    input: Input<'a>,
    /// The kind reported when a read runs past the end.
    short: ErrorKind,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: u64) -> Self {
        Cursor {
            input: Input::new(data, base),
            short: ErrorKind::Truncated,
        }
    }

    /// Reports running past the end as `kind` instead of `truncated`.
    pub(crate) fn short_is(mut self, kind: ErrorKind) -> Self {
        self.short = kind;
        self
    }

    pub(crate) fn offset(&self) -> u64 {
        self.input.offset()
    }

    pub(crate) fn consumed(&self) -> usize {
        self.input.position()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.input.remaining().len()
    }

    /// Runs `parser` on what is left; a failure names `what`.
    pub(crate) fn read<O>(
        &mut self,
        parser: impl FnOnce(&'a [u8]) -> PResult<'a, O>,
        what: &str,
    ) -> Result<O> {
        let at = self.offset();
        self.input.parse(parser).map_err(|e| {
            let kind = match e.kind() {
                dataformats_core::ErrorKind::BadVarint => ErrorKind::BadVarint,
                _ => self.short,
            };
            let at = e.offset().unwrap_or(at);
            Error::new(kind, format!("{what}: {e}")).at(at)
        })
    }

    pub(crate) fn bytes(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        self.read(parse::take_u64(n), what)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        self.read(le_u8, what)
    }

    #[allow(dead_code)]
    pub(crate) fn i16(&mut self, what: &str) -> Result<i16> {
        self.read(le_i16, what)
    }

    pub(crate) fn i32(&mut self, what: &str) -> Result<i32> {
        self.read(le_i32, what)
    }

    pub(crate) fn i64(&mut self, what: &str) -> Result<i64> {
        self.read(le_i64, what)
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        self.read(le_u64, what)
    }

    /// An unsigned LEB128 (at most 10 bytes; non-minimal forms accepted).
    pub(crate) fn leb128(&mut self, what: &str) -> Result<u64> {
        self.read(uleb128, what)
    }

    /// A .NET `BinaryWriter` string's bytes (7-bit Int32 length, then UTF-8).
    pub(crate) fn string_bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        self.read(dotnet_string_bytes, what)
    }

    /// A string, invalid UTF-8 replaced as ML.NET does.
    pub(crate) fn string(&mut self, what: &str) -> Result<String> {
        Ok(String::from_utf8_lossy(self.string_bytes(what)?).into_owned())
    }
}
