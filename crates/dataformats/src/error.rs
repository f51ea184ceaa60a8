//! The facade's error: a typed enum that wraps each format crate's error
//! (kept as its [`source`](std::error::Error::source)) and names what the
//! facade itself refuses.

use crate::Format;

/// An error from [`open`](crate::open), a [`Dataset`](crate::Dataset), its
/// batch reader or an export.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The ML.NET IDV reader refused the file.
    #[cfg(feature = "idv")]
    Idv(crate::idv::Error),
    /// The MLDF reader refused the file.
    #[cfg(feature = "mldf")]
    Mldf(crate::mldf::Error),
    /// The FFCV reader refused the file.
    #[cfg(feature = "ffcv")]
    Ffcv(crate::ffcv::Error),
    /// The CNTK reader refused the file.
    #[cfg(feature = "cntk")]
    Cntk(crate::cntk::Error),
    /// The TBL v2 reader refused the file.
    #[cfg(feature = "tbl2")]
    Tbl2(crate::tbl2::Error),
    /// The Bloscpack reader refused the file.
    #[cfg(feature = "bloscpack")]
    Bloscpack(crate::bloscpack::Error),
    /// The BLZ/bcolz reader refused the directory.
    #[cfg(feature = "bloscpack")]
    Blz(crate::bloscpack::Error),
    /// Reading or writing `path` failed.
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// No known magic number or layout.
    Unrecognized {
        /// What was looked at.
        what: String,
    },
    /// The format (or this operation on it) is not supported by this build.
    Unsupported {
        /// The format, when known.
        format: Option<Format>,
        /// What is not supported.
        message: String,
    },
    /// A size or count beyond the caller's [`Limits`](crate::core::Limits).
    Limit {
        /// The format, when known.
        format: Option<Format>,
        /// The refusal, with the limit.
        source: crate::core::Error,
    },
    /// The caller asked for something the dataset does not have (a column,
    /// a record, a range).
    InvalidArgument {
        /// The format, when known.
        format: Option<Format>,
        /// What was asked.
        message: String,
    },
    /// A value the typed view cannot represent, with where it is.
    Data {
        /// The format, when known.
        format: Option<Format>,
        /// What and where.
        message: String,
    },
    /// A conversion would change a value its target cannot hold, and
    /// lossy conversion was not asked for.
    Lossy {
        /// The first change, with its record and field.
        message: String,
    },
    /// Arrow refused a batch.
    Arrow(arrow_schema::ArrowError),
    /// The Parquet writer failed.
    #[cfg(feature = "export")]
    Parquet(parquet::errors::ParquetError),
}

impl Error {
    /// The format concerned, when known.
    pub fn format(&self) -> Option<Format> {
        match self {
            #[cfg(feature = "idv")]
            Error::Idv(_) => Some(Format::Idv),
            #[cfg(feature = "mldf")]
            Error::Mldf(_) => Some(Format::Mldf),
            #[cfg(feature = "ffcv")]
            Error::Ffcv(_) => Some(Format::Ffcv),
            #[cfg(feature = "cntk")]
            Error::Cntk(_) => Some(Format::Cntk),
            #[cfg(feature = "tbl2")]
            Error::Tbl2(_) => Some(Format::Tbl2),
            #[cfg(feature = "bloscpack")]
            Error::Bloscpack(_) => Some(Format::Bloscpack),
            #[cfg(feature = "bloscpack")]
            Error::Blz(_) => Some(Format::Blz),
            Error::Unsupported { format, .. }
            | Error::Limit { format, .. }
            | Error::InvalidArgument { format, .. }
            | Error::Data { format, .. } => *format,
            _ => None,
        }
    }

    /// The byte offset in the file the error concerns, when the format
    /// crate's error names one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            #[cfg(feature = "idv")]
            Error::Idv(e) => e.offset(),
            #[cfg(feature = "mldf")]
            Error::Mldf(e) => e.offset(),
            #[cfg(feature = "ffcv")]
            Error::Ffcv(e) => e.offset(),
            #[cfg(feature = "cntk")]
            Error::Cntk(e) => e.offset(),
            #[cfg(feature = "tbl2")]
            Error::Tbl2(e) => e.offset(),
            #[cfg(feature = "bloscpack")]
            Error::Bloscpack(e) | Error::Blz(e) => e.offset(),
            _ => None,
        }
    }

    /// A short word for the kind of error: the format crate's own error
    /// kind (`truncated`, `bad_magic`, ...) for a file it refused, else
    /// `io`, `unrecognized`, `unsupported`, `limit_exceeded`,
    /// `invalid_argument`, `data`, `lossy`, `arrow` or `parquet`.
    pub fn kind(&self) -> &'static str {
        match self {
            #[cfg(feature = "idv")]
            Error::Idv(e) => e.kind().as_str(),
            #[cfg(feature = "mldf")]
            Error::Mldf(e) => e.kind().as_str(),
            #[cfg(feature = "ffcv")]
            Error::Ffcv(e) => e.kind().as_str(),
            #[cfg(feature = "cntk")]
            Error::Cntk(e) => e.kind().as_str(),
            #[cfg(feature = "tbl2")]
            Error::Tbl2(e) => e.kind().as_str(),
            #[cfg(feature = "bloscpack")]
            Error::Bloscpack(e) | Error::Blz(e) => e.kind().as_str(),
            Error::Io { .. } => "io",
            Error::Unrecognized { .. } => "unrecognized",
            Error::Unsupported { .. } => "unsupported",
            Error::Limit { .. } => "limit_exceeded",
            Error::InvalidArgument { .. } => "invalid_argument",
            Error::Data { .. } => "data",
            Error::Lossy { .. } => "lossy",
            Error::Arrow(_) => "arrow",
            #[cfg(feature = "export")]
            Error::Parquet(_) => "parquet",
        }
    }

    /// Whether the input is of a kind this build cannot read at all
    /// (unrecognized or unsupported), as opposed to a damaged file.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::Unrecognized { .. } | Error::Unsupported { .. })
    }

    /// A value that cannot be represented.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::Data {
            format: None,
            message: message.into(),
        }
    }

    /// A limit refusal.
    pub(crate) fn limit(source: impl Into<LimitCause>) -> Self {
        Error::Limit {
            format: None,
            source: source.into().0,
        }
    }

    /// The same error, naming `format` where it did not.
    pub(crate) fn in_format(mut self, f: Format) -> Self {
        match &mut self {
            Error::Unsupported { format, .. }
            | Error::Limit { format, .. }
            | Error::InvalidArgument { format, .. }
            | Error::Data { format, .. } => {
                format.get_or_insert(f);
            }
            _ => {}
        }
        self
    }

    /// The same error with `context` (a column, a record) put before its message.
    pub(crate) fn context(self, context: &str) -> Self {
        match self {
            Error::Data { format, message } => Error::Data {
                format,
                message: format!("{context}: {message}"),
            },
            Error::InvalidArgument { format, message } => Error::InvalidArgument {
                format,
                message: format!("{context}: {message}"),
            },
            other => other,
        }
    }
}

/// What [`Error::limit`] accepts: a core limit error, or a message.
pub(crate) struct LimitCause(crate::core::Error);

impl From<crate::core::Error> for LimitCause {
    fn from(e: crate::core::Error) -> Self {
        LimitCause(e)
    }
}

impl From<String> for LimitCause {
    fn from(s: String) -> Self {
        LimitCause(crate::core::Error::corrupt(0, s))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "idv")]
            Error::Idv(e) => e.fmt(f),
            #[cfg(feature = "mldf")]
            Error::Mldf(e) => e.fmt(f),
            #[cfg(feature = "ffcv")]
            Error::Ffcv(e) => e.fmt(f),
            #[cfg(feature = "cntk")]
            Error::Cntk(e) => e.fmt(f),
            #[cfg(feature = "tbl2")]
            Error::Tbl2(e) => e.fmt(f),
            #[cfg(feature = "bloscpack")]
            Error::Bloscpack(e) | Error::Blz(e) => e.fmt(f),
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Unrecognized { what } => {
                write!(f, "{what}: no known magic number or layout")
            }
            Error::Unsupported { message, .. }
            | Error::InvalidArgument { message, .. }
            | Error::Data { message, .. }
            | Error::Lossy { message } => f.write_str(message),
            Error::Limit { source, .. } => source.fmt(f),
            Error::Arrow(e) => write!(f, "arrow: {e}"),
            #[cfg(feature = "export")]
            Error::Parquet(e) => write!(f, "parquet: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            #[cfg(feature = "idv")]
            Error::Idv(e) => Some(e),
            #[cfg(feature = "mldf")]
            Error::Mldf(e) => Some(e),
            #[cfg(feature = "ffcv")]
            Error::Ffcv(e) => Some(e),
            #[cfg(feature = "cntk")]
            Error::Cntk(e) => Some(e),
            #[cfg(feature = "tbl2")]
            Error::Tbl2(e) => Some(e),
            #[cfg(feature = "bloscpack")]
            Error::Bloscpack(e) | Error::Blz(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::Limit { source, .. } => Some(source),
            Error::Arrow(e) => Some(e),
            #[cfg(feature = "export")]
            Error::Parquet(e) => Some(e),
            _ => None,
        }
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::Arrow(e)
    }
}

#[cfg(feature = "export")]
impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Self {
        Error::Parquet(e)
    }
}

/// A format crate's error, wrapped as the facade's error of `format`.
pub(crate) trait FormatError {
    /// The facade error of `format`.
    fn into_facade(self, format: Format) -> Error;
}

#[cfg(feature = "idv")]
impl FormatError for crate::idv::Error {
    fn into_facade(self, _: Format) -> Error {
        Error::Idv(self)
    }
}

#[cfg(feature = "mldf")]
impl FormatError for crate::mldf::Error {
    fn into_facade(self, _: Format) -> Error {
        Error::Mldf(self)
    }
}

#[cfg(feature = "ffcv")]
impl FormatError for crate::ffcv::Error {
    fn into_facade(self, _: Format) -> Error {
        Error::Ffcv(self)
    }
}

#[cfg(feature = "cntk")]
impl FormatError for crate::cntk::Error {
    fn into_facade(self, _: Format) -> Error {
        Error::Cntk(self)
    }
}

#[cfg(feature = "tbl2")]
impl FormatError for crate::tbl2::Error {
    fn into_facade(self, _: Format) -> Error {
        Error::Tbl2(self)
    }
}

#[cfg(feature = "bloscpack")]
impl FormatError for crate::bloscpack::Error {
    fn into_facade(self, format: Format) -> Error {
        if format == Format::Blz {
            Error::Blz(self)
        } else {
            Error::Bloscpack(self)
        }
    }
}

impl FormatError for crate::core::Error {
    fn into_facade(self, format: Format) -> Error {
        Error::Limit {
            format: Some(format),
            source: self,
        }
    }
}
