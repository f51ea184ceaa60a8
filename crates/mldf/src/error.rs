//! Errors, in the codes of `mldf.md` §10.

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

impl dataformats_core::located::Kind for ErrorKind {
    const IO: Self = ErrorKind::Io;
    const LIMIT_EXCEEDED: Self = ErrorKind::LimitExceeded;
    const INVALID_ARGUMENT: Self = ErrorKind::InvalidArgument;
    const MALFORMED: Self = ErrorKind::OutOfBounds;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// An MLDF error: its kind, message, byte offset and, for values, the sample
/// and field; core and I/O errors it was made from stay its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;
