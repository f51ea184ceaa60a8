//! Errors, in the codes of `mldf.md` §10.

use std::borrow::Cow;
use std::fmt;

/// Shorthand for `Result<T, dataformats_mldf::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error codes of the spec (plus the reader's own refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bytes `[0, 9)` are not the magic.
    BadMagic,
    /// A proper prefix of the magic, or a file shorter than the header.
    Truncated,
    /// Major version other than 1.
    UnsupportedVersion,
    /// Big-endian, encrypted, or a discriminator outside its type's set in a newer-minor file.
    Unsupported,
    /// Page size, or fields missing while samples exist.
    BadHeader,
    /// A pointer or region outside the file or its place.
    OutOfBounds,
    /// A pointer or allocation not on its boundary.
    Misaligned,
    /// Regions or allocations that intersect.
    Overlap,
    /// A field descriptor breaks a rule (name, type, size, arguments).
    BadFieldDescriptor,
    /// The allocation table breaks a rule.
    BadAllocTable,
    /// A value breaks a per-value rule.
    BadValue,
    /// The data region's CRC-32 differs from the header's.
    ChecksumMismatch,
    /// A count or size exceeds the configured limits (a refusal, not a format error).
    LimitExceeded,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The spec's code.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BadMagic => "BadMagic",
            ErrorKind::Truncated => "Truncated",
            ErrorKind::UnsupportedVersion => "UnsupportedVersion",
            ErrorKind::Unsupported => "Unsupported",
            ErrorKind::BadHeader => "BadHeader",
            ErrorKind::OutOfBounds => "OutOfBounds",
            ErrorKind::Misaligned => "Misaligned",
            ErrorKind::Overlap => "Overlap",
            ErrorKind::BadFieldDescriptor => "BadFieldDescriptor",
            ErrorKind::BadAllocTable => "BadAllocTable",
            ErrorKind::BadValue => "BadValue",
            ErrorKind::ChecksumMismatch => "ChecksumMismatch",
            ErrorKind::LimitExceeded => "LimitExceeded",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::Io => "Io",
        }
    }
}

/// An error with its kind and location: byte offset and, for values, the
/// sample and field.
#[derive(Debug, Clone)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone)]
struct Inner {
    kind: ErrorKind,
    message: Cow<'static, str>,
    at: Option<u64>,
    sample: Option<u64>,
    field: Option<String>,
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
            sample: None,
            field: None,
        }))
    }

    /// At byte offset `at` (kept if one is already set).
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.0.at.get_or_insert(at);
        self
    }

    /// In sample `s`, field `name`.
    #[must_use]
    pub fn in_value(mut self, s: u64, name: &str) -> Self {
        self.0.sample.get_or_insert(s);
        self.0.field.get_or_insert_with(|| name.to_string());
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

    /// The sample, when the error concerns a value.
    pub fn sample(&self) -> Option<u64> {
        self.0.sample
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}: {}", e.kind.as_str(), e.message)?;
        let mut loc = Vec::new();
        if let Some(s) = e.sample {
            loc.push(format!("sample {s}"));
        }
        if let Some(n) = &e.field {
            loc.push(format!("field {n:?}"));
        }
        if let Some(at) = e.at {
            loc.push(format!("byte {at}"));
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
            K::InvalidArgument => ErrorKind::InvalidArgument,
            _ => ErrorKind::OutOfBounds,
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
