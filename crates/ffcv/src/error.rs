//! The FFCV reader's errors: a kind (named as MLDF names the same fault)
//! and where: byte offset, sample and field.

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

impl dataformats_core::located::Kind for ErrorKind {
    const IO: Self = ErrorKind::Io;
    const LIMIT_EXCEEDED: Self = ErrorKind::LimitExceeded;
    const INVALID_ARGUMENT: Self = ErrorKind::InvalidArgument;
    const MALFORMED: Self = ErrorKind::OutOfBounds;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// An FFCV error: its kind, message, byte offset and, for values, the sample
/// and field; core and I/O errors it was made from stay its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;
