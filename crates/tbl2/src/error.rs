//! Errors of the TBL v2 reader and writer, in the vocabulary of `tbl2.md` §3.1.

use std::borrow::Cow;
use std::fmt;

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

/// Where in the reading process an error arose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Opening the file (header and index).
    Open,
    /// Reading sample `i`.
    ReadSample(u64),
    /// Walking the metadata section.
    Metadata,
    /// Writing or converting.
    Write,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Open => f.write_str("open"),
            Stage::ReadSample(i) => write!(f, "read_sample({i})"),
            Stage::Metadata => f.write_str("metadata"),
            Stage::Write => f.write_str("write"),
        }
    }
}

/// An error with its kind, stage, and byte offset where known.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    stage: Stage,
    at: Option<u64>,
    message: Cow<'static, str>,
    /// The error this one was made from, if any.
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// A new error.
    pub fn new(kind: ErrorKind, stage: Stage, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            stage,
            at: None,
            message: message.into(),
            source: None,
        }
    }

    /// This error at byte offset `at`.
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.at = Some(at);
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stage.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The byte offset, when known.
    pub fn offset(&self) -> Option<u64> {
        self.at
    }

    /// The sample index, for `read_sample` errors.
    pub fn sample(&self) -> Option<u64> {
        match self.stage {
            Stage::ReadSample(i) => Some(i),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {}: {}",
            self.kind.as_str(),
            self.stage,
            self.message
        )?;
        if let Some(at) = self.at {
            write!(f, " (offset {at})")?;
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

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let mut out = Error::new(ErrorKind::Io, Stage::Write, e.to_string());
        out.source = Some(std::sync::Arc::new(e));
        out
    }
}

impl Error {
    pub(crate) fn from_core(e: dataformats_core::Error, stage: Stage) -> Self {
        let kind = match e.kind() {
            dataformats_core::ErrorKind::LimitExceeded => ErrorKind::LimitExceeded,
            dataformats_core::ErrorKind::Io => ErrorKind::Io,
            dataformats_core::ErrorKind::InvalidArgument => ErrorKind::InvalidArgument,
            _ => ErrorKind::DataOob,
        };
        let at = e.offset();
        let mut out = Error::new(kind, stage, e.to_string());
        out.at = at;
        out.source = Some(std::sync::Arc::new(e));
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
        let e = Error::from_core(core.clone(), crate::error::Stage::Open);
        assert_eq!(e.offset(), Some(77));
        dataformats_core::testing::assert_source_is(&e, &core);
        let e = Error::from(std::io::Error::other("disk on fire"));
        assert_eq!(e.source().unwrap().to_string(), "disk on fire");
    }
}
