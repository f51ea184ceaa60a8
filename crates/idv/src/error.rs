//! Errors of the IDV reader and writer, in the kinds of `idv.md` §10.1.

/// Shorthand for `Result<T, dataformats_idv::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was wrong (the `error_kind` of the conformance sidecars, plus the
/// reader's own refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bytes a reader needs are not in the file or the block.
    Truncated,
    /// The header signature is wrong.
    BadSignature,
    /// The version fields are outside what can be read.
    BadVersion,
    /// A negative row, column or block-length count.
    NegativeCount,
    /// An offset points outside where its structure can be.
    OffsetOutOfRange,
    /// The tail signature is wrong.
    BadTail,
    /// A codec description breaks its rules.
    BadCodecParams,
    /// Rows per block are zero, negative, unequal, or give too many blocks.
    RowsPerBlock,
    /// An annotation table of contents breaks its rules.
    BadAnnotation,
    /// A block does not inflate to its declared length.
    DecompressFailed,
    /// A stored value outside its codec's domain.
    ValueOutOfRange,
    /// A text block breaks its rules.
    BadText,
    /// A vector block breaks its rules.
    BadVbuffer,
    /// A malformed variable-length integer.
    BadVarint,
    /// A count or size exceeds the configured limits (a refusal, not a format error).
    LimitExceeded,
    /// The caller asked for something the file cannot give (unknown column, wrong type...).
    InvalidArgument,
    /// The operating system reported an error.
    Io,
}

impl ErrorKind {
    /// The sidecar word.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::BadSignature => "bad_signature",
            ErrorKind::BadVersion => "bad_version",
            ErrorKind::NegativeCount => "negative_count",
            ErrorKind::OffsetOutOfRange => "offset_out_of_range",
            ErrorKind::BadTail => "bad_tail",
            ErrorKind::BadCodecParams => "bad_codec_params",
            ErrorKind::RowsPerBlock => "rows_per_block",
            ErrorKind::BadAnnotation => "bad_annotation",
            ErrorKind::DecompressFailed => "decompress_failed",
            ErrorKind::ValueOutOfRange => "value_out_of_range",
            ErrorKind::BadText => "bad_text",
            ErrorKind::BadVbuffer => "bad_vbuffer",
            ErrorKind::BadVarint => "bad_varint",
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

    /// A malformed varint is `bad_varint`; any other core error as
    /// [`kind_of_core`](dataformats_core::located::kind_of_core) says.
    fn of_core(e: &dataformats_core::Error) -> Self {
        match e.kind() {
            dataformats_core::ErrorKind::BadVarint => ErrorKind::BadVarint,
            _ => dataformats_core::located::kind_of_core(e),
        }
    }
}

/// An IDV error: its kind, message, byte offset and, where they apply, the
/// column, annotation, block and row; core and I/O errors it was made from
/// stay its `source()`.
pub type Error = dataformats_core::LocatedError<ErrorKind>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Core errors become the kinds of idv.md §10.1.
    #[test]
    fn core_errors_take_idv_kinds() {
        let short = dataformats_core::Error::Truncated { at: 77, needed: 4 };
        let e = Error::from(short.clone());
        assert_eq!((e.kind(), e.offset()), (ErrorKind::Truncated, Some(77)));
        dataformats_core::testing::assert_source_is(&e, &short);
        let varint = dataformats_core::Error::BadVarint {
            at: 3,
            why: "too long",
        };
        assert_eq!(Error::from(varint).kind(), ErrorKind::BadVarint);
        assert_eq!(
            Error::from(std::io::Error::other("disk")).kind(),
            ErrorKind::Io
        );
    }
}
