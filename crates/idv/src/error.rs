//! Errors of the IDV reader and writer, in the kinds of `idv.md` §10.1.

use std::borrow::Cow;
use std::fmt;

/// Shorthand for `Result<T, dataformats_idv::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was wrong (the `error_kind` of the conformance sidecars, plus the
/// reader's own refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bytes a reader needs are not in the file or the block.
    Truncated,
    /// The header signature is wrong.
    BadSignature,
    /// The version fields are outside what can be read.
    BadVersion,
    /// A negative row, column or block-length count.
    NegativeCount,
    /// An offset points outside where its structure can be.
    OffsetOutOfRange,
    /// The tail signature is wrong.
    BadTail,
    /// A codec description breaks its rules.
    BadCodecParams,
    /// Rows per block are zero, negative, unequal, or give too many blocks.
    RowsPerBlock,
    /// An annotation table of contents breaks its rules.
    BadAnnotation,
    /// A block does not inflate to its declared length.
    DecompressFailed,
    /// A stored value outside its codec's domain.
    ValueOutOfRange,
    /// A text block breaks its rules.
    BadText,
    /// A vector block breaks its rules.
    BadVbuffer,
    /// A malformed variable-length integer.
    BadVarint,
    /// A count or size exceeds the configured limits (a refusal, not a format error).
    LimitExceeded,
    /// The caller asked for something the file cannot give (unknown column, wrong type...).
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The sidecar word.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::BadSignature => "bad_signature",
            ErrorKind::BadVersion => "bad_version",
            ErrorKind::NegativeCount => "negative_count",
            ErrorKind::OffsetOutOfRange => "offset_out_of_range",
            ErrorKind::BadTail => "bad_tail",
            ErrorKind::BadCodecParams => "bad_codec_params",
            ErrorKind::RowsPerBlock => "rows_per_block",
            ErrorKind::BadAnnotation => "bad_annotation",
            ErrorKind::DecompressFailed => "decompress_failed",
            ErrorKind::ValueOutOfRange => "value_out_of_range",
            ErrorKind::BadText => "bad_text",
            ErrorKind::BadVbuffer => "bad_vbuffer",
            ErrorKind::BadVarint => "bad_varint",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Io => "io",
        }
    }
}

/// An error with its kind and location: byte offset and, where they apply,
/// the column, block, row and annotation.
#[derive(Debug, Clone)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone)]
struct Inner {
    kind: ErrorKind,
    message: Cow<'static, str>,
    at: Option<u64>,
    column: Option<String>,
    block: Option<u64>,
    row: Option<u64>,
    annotation: Option<String>,
    /// The error this one was made from, if any.
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            source: None,
            at: None,
            column: None,
            block: None,
            row: None,
            annotation: None,
        }))
    }

    /// At byte offset `at` (kept if one is already set).
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.0.at.get_or_insert(at);
        self
    }

    /// In column `name`.
    #[must_use]
    pub fn in_column(mut self, name: &str) -> Self {
        self.0.column.get_or_insert_with(|| name.to_string());
        self
    }

    /// In block `b`.
    #[must_use]
    pub fn in_block(mut self, b: u64) -> Self {
        self.0.block.get_or_insert(b);
        self
    }

    /// At row `r` (of the file).
    #[must_use]
    pub fn in_row(mut self, r: u64) -> Self {
        self.0.row.get_or_insert(r);
        self
    }

    /// In the annotation of kind `kind`.
    #[must_use]
    pub fn in_annotation(mut self, kind: &str) -> Self {
        self.0.annotation.get_or_insert_with(|| kind.to_string());
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The byte offset, when known.
    pub fn offset(&self) -> Option<u64> {
        self.0.at
    }

    /// The column, when the error concerns one.
    pub fn column(&self) -> Option<&str> {
        self.0.column.as_deref()
    }

    /// The block, when the error concerns one.
    pub fn block(&self) -> Option<u64> {
        self.0.block
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}: {}", e.kind.as_str(), e.message)?;
        let mut loc = Vec::new();
        if let Some(c) = &e.column {
            loc.push(format!("column {c:?}"));
        }
        if let Some(a) = &e.annotation {
            loc.push(format!("annotation {a:?}"));
        }
        if let Some(b) = e.block {
            loc.push(format!("block {b}"));
        }
        if let Some(r) = e.row {
            loc.push(format!("row {r}"));
        }
        if let Some(at) = e.at {
            loc.push(format!("offset {at}"));
        }
        if !loc.is_empty() {
            write!(f, " ({})", loc.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<dataformats_core::Error> for Error {
    fn from(e: dataformats_core::Error) -> Self {
        use dataformats_core::ErrorKind as K;
        let kind = match e.kind() {
            K::LimitExceeded => ErrorKind::LimitExceeded,
            K::Io => ErrorKind::Io,
            K::BadVarint => ErrorKind::BadVarint,
            K::InvalidArgument => ErrorKind::InvalidArgument,
            _ => ErrorKind::Truncated,
        };
        let at = e.offset();
        let mut out = Error::new(kind, e.to_string());
        out.0.at = at;
        out.0.source = Some(std::sync::Arc::new(e));
        out
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let mut out = Error::new(ErrorKind::Io, e.to_string());
        out.0.source = Some(std::sync::Arc::new(e));
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::error::Error as _;

    /// A core error converted keeps its offset and stays reachable as the source.
    #[test]
    fn a_core_error_is_kept_as_the_source() {
        let core = dataformats_core::Error::Truncated { at: 77, needed: 4 };
        let e: Error = core.clone().into();
        assert_eq!(e.offset(), Some(77));
        dataformats_core::testing::assert_source_is(&e, &core);
        let e = Error::from(std::io::Error::other("disk on fire"));
        assert_eq!(e.source().unwrap().to_string(), "disk on fire");
    }
}
