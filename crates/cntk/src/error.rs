//! Errors of the CBF reader, in the vocabulary of `cntk.md` §4.2.

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

impl dataformats_core::located::Kind for ErrorKind {
    const IO: Self = ErrorKind::Io;
    const LIMIT_EXCEEDED: Self = ErrorKind::LimitExceeded;
    const INVALID_ARGUMENT: Self = ErrorKind::InvalidArgument;
    const MALFORMED: Self = ErrorKind::Truncated;

    fn name(self) -> &'static str {
        self.as_str()
    }
}

/// A CBF or CTF error: its kind, message, byte offset and, where they apply,
/// the chunk, sequence and stream; core and I/O errors it was made from stay
/// its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;
