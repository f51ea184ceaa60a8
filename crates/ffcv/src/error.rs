//! The FFCV reader's errors: a kind (named as MLDF names the same fault)
//! and where: byte offset, sample and field.

use std::borrow::Cow;
use std::fmt;

/// Shorthand for `Result<T, dataformats_ffcv::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with an FFCV file (or the call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file is shorter than a structure it declares.
    Truncated,
    /// A file version other than 2.
    UnsupportedVersion,
    /// A field type or dtype this reader does not know.
    Unsupported,
    /// The header's counts or page size break a rule.
    BadHeader,
    /// A pointer or region outside the file.
    OutOfBounds,
    /// Regions that intersect.
    Overlap,
    /// A field descriptor breaks a rule.
    BadFieldDescriptor,
    /// The allocation table breaks a rule.
    BadAllocTable,
    /// A value breaks a rule.
    BadValue,
    /// A count or size beyond the configured limits (a refusal).
    LimitExceeded,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The kind's name (the word MLDF uses for the same fault).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "Truncated",
            ErrorKind::UnsupportedVersion => "UnsupportedVersion",
            ErrorKind::Unsupported => "Unsupported",
            ErrorKind::BadHeader => "BadHeader",
            ErrorKind::OutOfBounds => "OutOfBounds",
            ErrorKind::Overlap => "Overlap",
            ErrorKind::BadFieldDescriptor => "BadFieldDescriptor",
            ErrorKind::BadAllocTable => "BadAllocTable",
            ErrorKind::BadValue => "BadValue",
            ErrorKind::LimitExceeded => "LimitExceeded",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::Io => "Io",
        }
    }
}

/// An error: its kind, what happened, and where.
#[derive(Debug, Clone)]
pub struct Error(Box<Inner>);

#[derive(Debug, Clone)]
struct Inner {
    kind: ErrorKind,
    message: Cow<'static, str>,
    at: Option<u64>,
    value: Option<(u64, String)>,
    source: Option<dataformats_core::Error>,
}

impl Error {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            at: None,
            value: None,
            source: None,
        }))
    }

    /// At byte offset `at` (kept if one is already set).
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.0.at.get_or_insert(at);
        self
    }

    /// In sample `sample`, field `field`.
    #[must_use]
    pub fn in_value(mut self, sample: u64, field: &str) -> Self {
        self.0
            .value
            .get_or_insert_with(|| (sample, field.to_string()));
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
        self.0.value.as_ref().map(|v| v.0)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        write!(f, "{}: {}", e.kind.as_str(), e.message)?;
        match (&e.value, e.at) {
            (Some((s, n)), Some(at)) => write!(f, " (sample {s}, field {n:?}, byte {at})"),
            (Some((s, n)), None) => write!(f, " (sample {s}, field {n:?})"),
            (None, Some(at)) => write!(f, " (byte {at})"),
            (None, None) => Ok(()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
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
        Error(Box::new(Inner {
            kind,
            message: e.to_string().into(),
            at: e.offset(),
            value: None,
            source: Some(e),
        }))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string())
    }
}
