//! Errors of the CBF reader, in the vocabulary of `cntk.md` §4.2.

use std::borrow::Cow;
use std::fmt;

/// Shorthand for `Result<T, dataformats_cntk::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was wrong (the `error` kind of the conformance sidecars).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file (or a header field) ends too early.
    Truncated,
    /// No `cntk_bin` magic at offset 0.
    BadMagic,
    /// Version is not 1.
    BadVersion,
    /// The footer does not point at a possible header position.
    BadHeaderOffset,
    /// No magic at the header offset.
    BadHeaderMagic,
    /// A stream encoding other than dense (0) or sparse (1).
    BadEncoding,
    /// A stream name that is not UTF-8.
    BadName,
    /// An element type other than f32 (0) or f64 (1).
    BadElemType,
    /// A sparse stream dimension of 2^31 or more.
    BadSampleDim,
    /// Two streams with one name.
    DuplicateStream,
    /// Bytes between the chunk table and the footer.
    BadChunkTable,
    /// A chunk offset out of order or outside the data area.
    BadChunkOffset,
    /// A chunk's records run past its span.
    ChunkOverrun,
    /// Sample counts disagree (table, length prefix, records).
    SampleCountMismatch,
    /// A negative count.
    BadCount,
    /// Per-sample entry counts do not sum to nnz.
    NnzMismatch,
    /// A sparse index outside `0..dim`.
    IndexOutOfRange,
    /// Unused bytes at the end of a chunk.
    ChunkSizeMismatch,
    /// A count or size exceeds the configured limits.
    LimitExceeded,
    /// The caller's arguments cannot work.
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The sidecar word.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::BadMagic => "bad_magic",
            ErrorKind::BadVersion => "bad_version",
            ErrorKind::BadHeaderOffset => "bad_header_offset",
            ErrorKind::BadHeaderMagic => "bad_header_magic",
            ErrorKind::BadEncoding => "bad_encoding",
            ErrorKind::BadName => "bad_name",
            ErrorKind::BadElemType => "bad_elem_type",
            ErrorKind::BadSampleDim => "bad_sample_dim",
            ErrorKind::DuplicateStream => "duplicate_stream",
            ErrorKind::BadChunkTable => "bad_chunk_table",
            ErrorKind::BadChunkOffset => "bad_chunk_offset",
            ErrorKind::ChunkOverrun => "chunk_overrun",
            ErrorKind::SampleCountMismatch => "sample_count_mismatch",
            ErrorKind::BadCount => "bad_count",
            ErrorKind::NnzMismatch => "nnz_mismatch",
            ErrorKind::IndexOutOfRange => "index_out_of_range",
            ErrorKind::ChunkSizeMismatch => "chunk_size_mismatch",
            ErrorKind::LimitExceeded => "limit_exceeded",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Io => "io",
        }
    }
}

/// An error with its kind and location: byte offset, and where it applies
/// the chunk, sequence and stream.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    at: Option<u64>,
    chunk: Option<usize>,
    sequence: Option<usize>,
    stream: Option<String>,
    /// The error this one was made from, if any.
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
            at: None,
            chunk: None,
            sequence: None,
            stream: None,
        }
    }

    /// At byte offset `at`.
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.at = Some(at);
        self
    }

    /// In chunk `c`.
    #[must_use]
    pub fn in_chunk(mut self, c: usize) -> Self {
        self.chunk = Some(c);
        self
    }

    /// In sequence `s` (index within its chunk) of stream `name`.
    #[must_use]
    pub fn in_record(mut self, s: usize, name: &str) -> Self {
        self.sequence = Some(s);
        self.stream = Some(name.to_string());
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The byte offset, when known.
    pub fn offset(&self) -> Option<u64> {
        self.at
    }

    /// The chunk, when the error concerns one.
    pub fn chunk(&self) -> Option<usize> {
        self.chunk
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)?;
        let mut loc = Vec::new();
        if let Some(c) = self.chunk {
            loc.push(format!("chunk {c}"));
        }
        if let Some(s) = self.sequence {
            loc.push(format!("sequence {s}"));
        }
        if let Some(n) = &self.stream {
            loc.push(format!("stream {n:?}"));
        }
        if let Some(at) = self.at {
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
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<dataformats_core::Error> for Error {
    fn from(e: dataformats_core::Error) -> Self {
        let kind = match e.kind() {
            dataformats_core::ErrorKind::LimitExceeded => ErrorKind::LimitExceeded,
            dataformats_core::ErrorKind::Io => ErrorKind::Io,
            _ => ErrorKind::Truncated,
        };
        let at = e.offset();
        let mut out = Error::new(kind, e.to_string());
        out.at = at;
        out.source = Some(std::sync::Arc::new(e));
        out
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let mut out = Error::new(ErrorKind::Io, e.to_string());
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
        let e: Error = core.clone().into();
        assert_eq!(e.offset(), Some(77));
        dataformats_core::testing::assert_source_is(&e, &core);
        let e = Error::from(std::io::Error::other("disk on fire"));
        assert_eq!(e.source().unwrap().to_string(), "disk on fire");
    }
}
