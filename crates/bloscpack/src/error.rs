//! The error type of the Bloscpack and BLZ/bcolz readers and writers.

use std::fmt;

use dataformats_core::codec::CodecError;

/// Shorthand for `Result<T, dataformats_bloscpack::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a file was rejected (or an operation refused), in the vocabulary of
/// `bloscpack-blz.md` §6.3; [`ErrorKind::as_str`] gives the sidecar word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file ends before a structure that must be there.
    Truncated,
    /// Wrong magic (`blpk`).
    BadMagic,
    /// Wrong format version (Bloscpack 3; BLZ chunk file 1).
    BadVersion,
    /// Any other bad header value.
    BadHeaderField,
    /// The metadata section or BLZ meta content is malformed.
    BadMetadata,
    /// A JSON document does not parse.
    BadJson,
    /// A stored digest differs from the computed one.
    ChecksumMismatch,
    /// An offsets-table entry does not point at its chunk.
    BadOffset,
    /// A Blosc chunk header breaks the chunk rules.
    ChunkHeaderInvalid,
    /// A chunk does not decode.
    DecompressFailed,
    /// Two stated sizes, or a stated size and the data, disagree.
    SizeMismatch,
    /// A BLZ/bcolz file or directory is missing.
    MissingFile,
    /// Well-formed, but not supported (streaming files, object dtype, ...).
    Unsupported,
    /// A count or size exceeds the configured limits.
    LimitExceeded,
    /// An append needs more offset slots than the file reserved.
    NotEnoughSpace,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The word the conformance sidecars use (`truncated`, `bad_magic`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::BadMagic => "bad_magic",
            ErrorKind::BadVersion => "bad_version",
            ErrorKind::BadHeaderField => "bad_header_field",
            ErrorKind::BadMetadata => "bad_metadata",
            ErrorKind::BadJson => "bad_json",
            ErrorKind::ChecksumMismatch => "checksum_mismatch",
            ErrorKind::BadOffset => "bad_offset",
            ErrorKind::ChunkHeaderInvalid => "chunk_header_invalid",
            ErrorKind::DecompressFailed => "decompress_failed",
            ErrorKind::SizeMismatch => "size_mismatch",
            ErrorKind::MissingFile => "missing_file",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::NotEnoughSpace => "not_enough_space",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Io => "io",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl dataformats_core::located::Kind for ErrorKind {
    const IO: Self = ErrorKind::Io;
    const LIMIT_EXCEEDED: Self = ErrorKind::LimitExceeded;
    const INVALID_ARGUMENT: Self = ErrorKind::InvalidArgument;
    const MALFORMED: Self = ErrorKind::BadHeaderField;

    fn name(self) -> &'static str {
        self.as_str()
    }

    /// Each core fault in the words of §6.3: a range past the end is
    /// `truncated`, a version `bad_version`, and any other broken rule a bad
    /// header field.
    fn of_core(e: &dataformats_core::Error) -> Self {
        use dataformats_core::Error as C;
        match e {
            C::Truncated { .. } | C::OutOfBounds { .. } => ErrorKind::Truncated,
            C::BadMagic { .. } => ErrorKind::BadMagic,
            C::UnsupportedVersion { .. } => ErrorKind::BadVersion,
            C::ChecksumMismatch { .. } => ErrorKind::ChecksumMismatch,
            C::LimitExceeded { .. } => ErrorKind::LimitExceeded,
            C::Io(_) => ErrorKind::Io,
            C::Unsupported { .. } => ErrorKind::Unsupported,
            C::InvalidArgument(_) => ErrorKind::InvalidArgument,
            _ => Self::MALFORMED,
        }
    }

    /// A file that is not there is `missing_file` (a BLZ/bcolz directory
    /// lacks one of its parts); any other I/O error is `io`.
    fn of_io(e: &std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::MissingFile
        } else {
            ErrorKind::Io
        }
    }
}

/// A Bloscpack or BLZ/bcolz error: its kind, message, byte offset, chunk
/// index and (inside a directory) file; core, codec and I/O errors it was
/// made from stay its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;

/// The error of chunk `chunk`, whose payload starts at `at`, that the codec
/// refused: a bad Blosc header, an unsupported feature, or a failed
/// decompression.
pub(crate) fn codec(e: CodecError, chunk: u64, at: u64) -> Error {
    let kind = match &e {
        CodecError::InvalidHeader { .. } => ErrorKind::ChunkHeaderInvalid,
        CodecError::Unsupported { .. } => ErrorKind::Unsupported,
        CodecError::InvalidArgument { .. } => ErrorKind::InvalidArgument,
        _ => ErrorKind::DecompressFailed,
    };
    Error::new(kind, e.to_string())
        .at(at)
        .in_chunk(chunk)
        .with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Core and I/O errors become the words of bloscpack-blz.md §6.3.
    #[test]
    fn core_and_io_errors_take_bloscpack_kinds() {
        let short = dataformats_core::Error::OutOfBounds {
            offset: 9,
            len: 4,
            size: 10,
        };
        let e = Error::from(short.clone());
        assert_eq!((e.kind(), e.offset()), (ErrorKind::Truncated, Some(9)));
        dataformats_core::testing::assert_source_is(&e, &short);
        let version = dataformats_core::Error::UnsupportedVersion {
            at: 4,
            found: "9".into(),
            supported: "3",
        };
        assert_eq!(Error::from(version).kind(), ErrorKind::BadVersion);
        let varint = dataformats_core::Error::BadVarint {
            at: 3,
            why: "too long",
        };
        assert_eq!(Error::from(varint).kind(), ErrorKind::BadHeaderField);
        let gone = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(Error::from(gone).kind(), ErrorKind::MissingFile);
        assert_eq!(
            Error::from(std::io::Error::other("disk")).kind(),
            ErrorKind::Io
        );
    }
}
