//! The error type shared by the dataformats crates.
//!
//! Every variant says what is wrong and where: a byte offset into the file, and
//! where it matters the expected and found values. Format crates either return
//! this [`Error`] directly or wrap it in their own enum (with `#[from]`), adding
//! their vocabulary (block, chunk, sample, ...).

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::sync::Arc;

use crate::checksum::ChecksumKind;
use crate::codec::CodecError;

/// Shorthand for `Result<T, dataformats_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while reading or writing a file.
///
/// Offsets (`at`, `offset`) are absolute byte offsets in the file (or in the
/// buffer a parser was given, when the parser was not told where that buffer
/// starts; see [`Error::shifted`]).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input ended before a read of `needed` bytes starting at `at` could
    /// be satisfied.
    #[error("truncated: {needed} byte(s) needed at offset {at}, but the input ends first")]
    Truncated {
        /// Where the unsatisfied read starts.
        at: u64,
        /// How many bytes that read needs.
        needed: u64,
    },

    /// The bytes at `at` are not the magic number (signature) of the format.
    #[error(
        "bad magic at offset {at}: expected {expected}, found {}",
        HexBytes(found)
    )]
    BadMagic {
        /// Where the magic was expected.
        at: u64,
        /// What the format's magic looks like (human-readable).
        expected: &'static str,
        /// The bytes that were found there (at most 16 of them).
        found: Vec<u8>,
    },

    /// The file declares a version this reader does not read.
    #[error("unsupported version {found} at offset {at} (supported: {supported})")]
    UnsupportedVersion {
        /// Where the version field is.
        at: u64,
        /// The version found, as the format writes versions.
        found: String,
        /// The versions this reader supports.
        supported: &'static str,
    },

    /// A range declared by the file (or asked for by a caller) lies outside
    /// the bytes present.
    #[error("out of bounds: {len} byte(s) at offset {offset} do not fit in {size} byte(s)")]
    OutOfBounds {
        /// Start of the requested range.
        offset: u64,
        /// Length of the requested range.
        len: u64,
        /// Size of what the range should fit in (usually the file).
        size: u64,
    },

    /// A stored digest does not match the bytes it covers.
    #[error(
        "{kind} checksum mismatch at offset {at}: stored {}, computed {}",
        HexBytes(expected),
        HexBytes(found)
    )]
    ChecksumMismatch {
        /// Where the stored digest (or the checked region) is.
        at: u64,
        /// Which checksum.
        kind: ChecksumKind,
        /// The digest stored in the file.
        expected: Vec<u8>,
        /// The digest computed over the data.
        found: Vec<u8>,
    },

    /// A variable-length integer (LEB128, .NET 7-bit Int32) is malformed:
    /// it overflows, is longer than allowed, or encodes a negative length.
    #[error("bad variable-length integer at offset {at}: {why}")]
    BadVarint {
        /// Where the integer starts.
        at: u64,
        /// What is wrong with it.
        why: &'static str,
    },

    /// The file breaks a rule of its format.
    #[error("corrupt data at offset {at}: {why}")]
    Corrupt {
        /// Where the offending bytes are.
        at: u64,
        /// Which rule is broken, in words.
        why: Cow<'static, str>,
    },

    /// A count or size from the file exceeds a configured [`Limits`](crate::Limits) cap.
    #[error("limit exceeded: {what} is {requested}, the limit is {limit}")]
    LimitExceeded {
        /// What was being counted or allocated.
        what: &'static str,
        /// The amount the file asked for.
        requested: u64,
        /// The configured limit.
        limit: u64,
    },

    /// A compressed payload could not be decoded (or encoded).
    #[error("{source} (payload at offset {at})")]
    Codec {
        /// Where the compressed payload starts.
        at: u64,
        /// What the codec reported.
        #[source]
        source: CodecError,
    },

    /// The file is well-formed but uses a feature this library does not read.
    #[error("unsupported: {what}")]
    Unsupported {
        /// The feature, in words.
        what: Cow<'static, str>,
    },

    /// The caller passed an argument that cannot work.
    #[error("invalid argument: {0}")]
    InvalidArgument(Cow<'static, str>),

    /// The operating system reported an I/O error.
    #[error("I/O error: {0}")]
    Io(#[source] Arc<io::Error>),
}

/// The category of an [`Error`], for matching without the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Truncated`]
    Truncated,
    /// [`Error::BadMagic`]
    BadMagic,
    /// [`Error::UnsupportedVersion`]
    UnsupportedVersion,
    /// [`Error::OutOfBounds`]
    OutOfBounds,
    /// [`Error::ChecksumMismatch`]
    ChecksumMismatch,
    /// [`Error::BadVarint`]
    BadVarint,
    /// [`Error::Corrupt`]
    Corrupt,
    /// [`Error::LimitExceeded`]
    LimitExceeded,
    /// [`Error::Codec`]
    Codec,
    /// [`Error::Unsupported`]
    Unsupported,
    /// [`Error::InvalidArgument`]
    InvalidArgument,
    /// [`Error::Io`]
    Io,
}

impl Error {
    /// The category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Truncated { .. } => ErrorKind::Truncated,
            Error::BadMagic { .. } => ErrorKind::BadMagic,
            Error::UnsupportedVersion { .. } => ErrorKind::UnsupportedVersion,
            Error::OutOfBounds { .. } => ErrorKind::OutOfBounds,
            Error::ChecksumMismatch { .. } => ErrorKind::ChecksumMismatch,
            Error::BadVarint { .. } => ErrorKind::BadVarint,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::LimitExceeded { .. } => ErrorKind::LimitExceeded,
            Error::Codec { .. } => ErrorKind::Codec,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Io(_) => ErrorKind::Io,
        }
    }

    /// The byte offset this error points at, if it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Truncated { at, .. }
            | Error::BadMagic { at, .. }
            | Error::UnsupportedVersion { at, .. }
            | Error::ChecksumMismatch { at, .. }
            | Error::BadVarint { at, .. }
            | Error::Corrupt { at, .. }
            | Error::Codec { at, .. } => Some(*at),
            Error::OutOfBounds { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// Moves every offset in this error by `base` bytes.
    ///
    /// Parsers report offsets relative to the slice they were given; a caller
    /// that handed them a slice starting at file offset `base` calls this to
    /// make the offsets absolute. Saturates instead of overflowing.
    #[must_use]
    pub fn shifted(mut self, base: u64) -> Self {
        match &mut self {
            Error::Truncated { at, .. }
            | Error::BadMagic { at, .. }
            | Error::UnsupportedVersion { at, .. }
            | Error::ChecksumMismatch { at, .. }
            | Error::BadVarint { at, .. }
            | Error::Corrupt { at, .. }
            | Error::Codec { at, .. } => *at = at.saturating_add(base),
            Error::OutOfBounds { offset, .. } => *offset = offset.saturating_add(base),
            _ => {}
        }
        self
    }

    /// Builds [`Error::Corrupt`].
    pub fn corrupt(at: u64, why: impl Into<Cow<'static, str>>) -> Self {
        Error::Corrupt {
            at,
            why: why.into(),
        }
    }

    /// Builds [`Error::BadMagic`], keeping at most 16 of the found bytes.
    pub fn bad_magic(at: u64, expected: &'static str, found: &[u8]) -> Self {
        Error::BadMagic {
            at,
            expected,
            found: found.iter().take(16).copied().collect(),
        }
    }

    /// Builds [`Error::Unsupported`].
    pub fn unsupported(what: impl Into<Cow<'static, str>>) -> Self {
        Error::Unsupported { what: what.into() }
    }

    /// Builds [`Error::Codec`].
    pub fn codec(at: u64, source: CodecError) -> Self {
        Error::Codec { at, source }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

/// Formats bytes as lowercase hex (for error messages).
pub struct HexBytes<'a>(pub &'a [u8]);

impl fmt::Display for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(none)");
        }
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifted_moves_offsets_and_saturates() {
        let e = Error::Truncated { at: 4, needed: 8 }.shifted(100);
        assert!(matches!(e, Error::Truncated { at: 104, needed: 8 }));
        let e = Error::corrupt(u64::MAX - 1, "x").shifted(10);
        assert_eq!(e.offset(), Some(u64::MAX));
        let e = Error::OutOfBounds {
            offset: 1,
            len: 2,
            size: 3,
        }
        .shifted(5);
        assert_eq!(e.offset(), Some(6));
    }

    #[test]
    fn messages_name_the_offset() {
        let e = Error::bad_magic(0, "blpk", b"abcd");
        assert_eq!(
            e.to_string(),
            "bad magic at offset 0: expected blpk, found 61626364"
        );
        assert_eq!(e.kind(), ErrorKind::BadMagic);
        let e = Error::Truncated { at: 12, needed: 4 };
        assert!(e.to_string().contains("offset 12"));
    }

    #[test]
    fn error_is_send_sync_static() {
        fn check<T: Send + Sync + 'static + Clone>() {}
        check::<Error>();
    }
}
