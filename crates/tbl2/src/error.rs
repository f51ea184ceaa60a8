//! Errors of the TBL v2 reader and writer, in the vocabulary of `tbl2.md` §3.1.

/// Shorthand for `Result<T, dataformats_tbl2::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was wrong (`expected.kind` in the conformance sidecars).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// File shorter than the 64-byte header.
    TooSmall,
    /// Not `TBL\x02`.
    BadMagic,
    /// Version is not 2.
    BadVersion,
    /// Header CRC-32 mismatch.
    HeaderCrc,
    /// The index passes the end of the file.
    IndexOob,
    /// A sample index past the last sample (API misuse).
    IndexRange,
    /// An entry's `offset + size` overflows.
    IndexOverflow,
    /// An entry's payload passes the end of the file.
    DataOob,
    /// A compressed sample without an uncompressed size.
    NoUsize,
    /// A malformed LZ4 block, or one that decodes past `uncompressed_size`.
    Lz4Error,
    /// A sample decodes to a different size than `uncompressed_size` says.
    UsizeMismatch,
    /// CRC-16 mismatch.
    Crc16,
    /// The metadata blocks do not tile their section inside the file.
    MetadataOob,
    /// A tar archive is cut short or malformed.
    Tar,
    /// A count or size exceeds the configured limits.
    LimitExceeded,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The sidecar word (`too_small`, `bad_magic`, ..., `metadata_oob`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::TooSmall => "too_small",
            ErrorKind::BadMagic => "bad_magic",
            ErrorKind::BadVersion => "bad_version",
            ErrorKind::HeaderCrc => "header_crc",
            ErrorKind::IndexOob => "index_oob",
            ErrorKind::IndexRange => "index_range",
            ErrorKind::IndexOverflow => "index_overflow",
            ErrorKind::DataOob => "data_oob",
            ErrorKind::NoUsize => "no_usize",
            ErrorKind::Lz4Error => "lz4_error",
            ErrorKind::UsizeMismatch => "usize_mismatch",
            ErrorKind::Crc16 => "crc16",
            ErrorKind::MetadataOob => "metadata_oob",
            ErrorKind::Tar => "tar",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Io => "io",
        }
    }
}

pub use dataformats_core::located::Stage;

impl dataformats_core::located::Kind for ErrorKind {
    const IO: Self = ErrorKind::Io;
    const LIMIT_EXCEEDED: Self = ErrorKind::LimitExceeded;
    const INVALID_ARGUMENT: Self = ErrorKind::InvalidArgument;
    const MALFORMED: Self = ErrorKind::DataOob;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A TBL v2 error: its kind, the [`Stage`] it arose in (every error the
/// reader and writer make has one), its message and byte offset; core and
/// I/O errors it was made from stay its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;
