//! The error type of the Bloscpack and BLZ/bcolz readers and writers.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

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

/// An error with its kind and where it happened: byte offset, chunk index,
/// and (for BLZ/bcolz directories) the file.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    at: Option<u64>,
    chunk: Option<u64>,
    path: Option<PathBuf>,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
            at: None,
            chunk: None,
            path: None,
            source: None,
        }
    }

    /// The category (and sidecar word) of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The byte offset in the file, when known.
    pub fn offset(&self) -> Option<u64> {
        self.at
    }

    /// The chunk index, when the error concerns one chunk.
    pub fn chunk(&self) -> Option<u64> {
        self.chunk
    }

    /// The file (inside a BLZ/bcolz directory), when known.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The message without the location.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// This error at byte offset `at`.
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.at = Some(at);
        self
    }

    /// This error concerning chunk `i`.
    #[must_use]
    pub fn in_chunk(mut self, i: u64) -> Self {
        self.chunk = Some(i);
        self
    }

    /// This error concerning the file at `path` (kept if already set).
    #[must_use]
    pub fn in_file(mut self, path: &Path) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }

    pub(crate) fn with_source(mut self, e: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(e));
        self
    }

    pub(crate) fn codec(e: CodecError, chunk: u64, at: u64) -> Self {
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
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(c) = self.chunk {
            write!(f, " (chunk {c}")?;
            if let Some(at) = self.at {
                write!(f, ", offset {at}")?;
            }
            f.write_str(")")?;
        } else if let Some(at) = self.at {
            write!(f, " (offset {at})")?;
        }
        if let Some(p) = &self.path {
            write!(f, " in {}", p.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<dataformats_core::Error> for Error {
    fn from(e: dataformats_core::Error) -> Self {
        use dataformats_core::Error as C;
        let (kind, at) = match &e {
            C::Truncated { at, .. } => (ErrorKind::Truncated, Some(*at)),
            C::OutOfBounds { offset, .. } => (ErrorKind::Truncated, Some(*offset)),
            C::BadMagic { at, .. } => (ErrorKind::BadMagic, Some(*at)),
            C::UnsupportedVersion { at, .. } => (ErrorKind::BadVersion, Some(*at)),
            C::ChecksumMismatch { at, .. } => (ErrorKind::ChecksumMismatch, Some(*at)),
            C::LimitExceeded { .. } => (ErrorKind::LimitExceeded, None),
            C::Io(_) => (ErrorKind::Io, None),
            C::Unsupported { .. } => (ErrorKind::Unsupported, None),
            C::InvalidArgument(_) => (ErrorKind::InvalidArgument, None),
            other => (ErrorKind::BadHeaderField, other.offset()),
        };
        let mut out = Error::new(kind, e.to_string());
        out.at = at;
        out.with_source(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorKind::MissingFile
        } else {
            ErrorKind::Io
        };
        Error::new(kind, e.to_string()).with_source(e)
    }
}
