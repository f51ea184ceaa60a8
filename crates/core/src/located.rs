//! The one error type of the format crates: a kind of the crate's own, a
//! message, and where the fault is.
//!
//! Every format crate names its faults in its own words (the words of its
//! notes and its invalid vectors' sidecars), so each defines a
//! `#[non_exhaustive]` kind enum and implements [`Kind`] for it; its `Error`
//! is then `LocatedError<ThatKind>`. What is shared is everything else: the
//! byte offset, the record context (stage, chunk, block, sample, sequence,
//! row, column, field, stream, annotation, file), the rendering, and the
//! conversions from core and I/O errors, which keep the original as
//! [`std::error::Error::source`].
//!
//! Each context builder keeps the first value it is given: an error is
//! located where it is made, and callers further out only fill in what is
//! still unknown.
//!
//! ```
//! use dataformats_core::located::{Kind, LocatedError};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq)]
//! enum MyKind { Truncated, Io }
//!
//! impl Kind for MyKind {
//!     const IO: Self = MyKind::Io;
//!     const LIMIT_EXCEEDED: Self = MyKind::Truncated;
//!     const INVALID_ARGUMENT: Self = MyKind::Truncated;
//!     const MALFORMED: Self = MyKind::Truncated;
//!     fn name(self) -> &'static str {
//!         match self { MyKind::Truncated => "Truncated", MyKind::Io => "Io" }
//!     }
//! }
//!
//! let e = LocatedError::new(MyKind::Truncated, "record ends early").at(40).in_chunk(2).at(8);
//! assert_eq!(e.kind(), MyKind::Truncated);
//! assert_eq!(e.offset(), Some(40));
//! assert_eq!(e.to_string(), "Truncated: record ends early (chunk 2, offset 40)");
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a format crate's error kind provides to [`LocatedError`]: its name,
/// and which of its kinds core and I/O errors become.
pub trait Kind: Copy + Eq + fmt::Debug + Send + Sync + 'static {
    /// The kind of an operating-system error.
    const IO: Self;
    /// The kind of a refusal by [`crate::Limits`].
    const LIMIT_EXCEEDED: Self;
    /// The kind of a caller's argument that cannot work.
    const INVALID_ARGUMENT: Self;
    /// The kind any other core error becomes (a range past the end of the
    /// input, in most formats' words).
    const MALFORMED: Self;

    /// The kind's name, as the format's notes and sidecars spell it.
    fn name(self) -> &'static str;

    /// The kind a [`crate::Error`] becomes in this format: limits, I/O and
    /// argument errors keep their category, anything else is
    /// [`Kind::MALFORMED`].
    fn of_core(e: &crate::Error) -> Self {
        kind_of_core(e)
    }

    /// The kind an I/O error becomes in this format ([`Kind::IO`]).
    fn of_io(e: &io::Error) -> Self {
        let _ = e;
        Self::IO
    }
}

/// The kind a core error becomes by default (see [`Kind::of_core`]), for
/// implementations that name a few core errors their own way and leave the
/// rest as the default does.
pub fn kind_of_core<K: Kind>(e: &crate::Error) -> K {
    match e.kind() {
        crate::ErrorKind::LimitExceeded => K::LIMIT_EXCEEDED,
        crate::ErrorKind::Io => K::IO,
        crate::ErrorKind::InvalidArgument => K::INVALID_ARGUMENT,
        _ => K::MALFORMED,
    }
}

/// Where in the reading or writing process an error arose (TurboLoader's
/// words, used by TBL v2's sidecars).
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

/// The error an error was made from, shared so that errors stay `Clone`.
///
/// It dereferences to the original error, so `source()` hands out the
/// original itself (downcastable to its own type), not this wrapper.
#[derive(Debug, Clone)]
struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl std::ops::Deref for Cause {
    type Target = dyn std::error::Error + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

/// Where a fault is, beyond its byte offset. Every part is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Place {
    stage: Option<Stage>,
    column: Option<String>,
    annotation: Option<String>,
    chunk: Option<u64>,
    block: Option<u64>,
    sample: Option<u64>,
    sequence: Option<u64>,
    row: Option<u64>,
    field: Option<String>,
    stream: Option<String>,
    path: Option<PathBuf>,
}

/// An error of kind `K`, with its message, byte offset, context and cause.
///
/// Rendered as `Kind[ at stage]: message[ (context…, offset N)][ in path]`.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct LocatedError<K: Kind>(Box<Inner<K>>);

#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", Render(self))]
struct Inner<K: Kind> {
    kind: K,
    message: Cow<'static, str>,
    at: Option<u64>,
    place: Place,
    #[source]
    source: Option<Cause>,
}

impl<K: Kind> LocatedError<K> {
    /// An error of `kind` saying `message`, not yet located.
    #[cold]
    pub fn new(kind: K, message: impl Into<Cow<'static, str>>) -> Self {
        LocatedError(Box::new(Inner {
            kind,
            message: message.into(),
            at: None,
            place: Place::default(),
            source: None,
        }))
    }

    /// The kind.
    pub fn kind(&self) -> K {
        self.0.kind
    }

    /// The message, without kind or location.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The byte offset in the file, when known.
    pub fn offset(&self) -> Option<u64> {
        self.0.at
    }

    /// The stage, when the format reports one.
    pub fn stage(&self) -> Option<Stage> {
        self.0.place.stage
    }

    /// The chunk index, when the error concerns one chunk.
    pub fn chunk(&self) -> Option<u64> {
        self.0.place.chunk
    }

    /// The block index, when the error concerns one block.
    pub fn block(&self) -> Option<u64> {
        self.0.place.block
    }

    /// The sample (record) index, when the error concerns one.
    pub fn sample(&self) -> Option<u64> {
        let p = &self.0.place;
        p.sample.or(match p.stage {
            Some(Stage::ReadSample(i)) => Some(i),
            _ => None,
        })
    }

    /// The sequence index within its chunk, when the error concerns one.
    pub fn sequence(&self) -> Option<u64> {
        self.0.place.sequence
    }

    /// The row of the file, when the error concerns one.
    pub fn row(&self) -> Option<u64> {
        self.0.place.row
    }

    /// The column, when the error concerns one.
    pub fn column(&self) -> Option<&str> {
        self.0.place.column.as_deref()
    }

    /// The field, when the error concerns a value of one.
    pub fn field(&self) -> Option<&str> {
        self.0.place.field.as_deref()
    }

    /// The stream, when the error concerns one.
    pub fn stream(&self) -> Option<&str> {
        self.0.place.stream.as_deref()
    }

    /// The annotation kind, when the error concerns one.
    pub fn annotation(&self) -> Option<&str> {
        self.0.place.annotation.as_deref()
    }

    /// The file (inside a directory format), when known.
    pub fn path(&self) -> Option<&Path> {
        self.0.place.path.as_deref()
    }

    /// At byte offset `at`.
    #[must_use]
    pub fn at(mut self, at: u64) -> Self {
        self.0.at.get_or_insert(at);
        self
    }

    /// In `stage` of the process.
    #[must_use]
    pub fn in_stage(mut self, stage: Stage) -> Self {
        self.0.place.stage.get_or_insert(stage);
        self
    }

    /// In chunk `c`.
    #[must_use]
    pub fn in_chunk(mut self, c: u64) -> Self {
        self.0.place.chunk.get_or_insert(c);
        self
    }

    /// In block `b`.
    #[must_use]
    pub fn in_block(mut self, b: u64) -> Self {
        self.0.place.block.get_or_insert(b);
        self
    }

    /// In sample `s`.
    #[must_use]
    pub fn in_sample(mut self, s: u64) -> Self {
        self.0.place.sample.get_or_insert(s);
        self
    }

    /// Its sample counted `base` samples further on: for samples numbered
    /// within a block (encoded on another thread) whose place in the whole
    /// is known only when the block is written.
    #[must_use]
    pub fn after_samples(mut self, base: u64) -> Self {
        if let Some(s) = self.0.place.sample.as_mut() {
            *s = s.saturating_add(base);
        }
        self
    }

    /// In the value of field `name` of sample `s`.
    #[must_use]
    pub fn in_value(mut self, s: u64, name: &str) -> Self {
        self = self.in_sample(s);
        self.0.place.field.get_or_insert_with(|| name.to_owned());
        self
    }

    /// In sequence `s` (its index within the chunk) of stream `name`.
    #[must_use]
    pub fn in_record(mut self, s: u64, name: &str) -> Self {
        let p = &mut self.0.place;
        p.sequence.get_or_insert(s);
        p.stream.get_or_insert_with(|| name.to_owned());
        self
    }

    /// At row `r` of the file.
    #[must_use]
    pub fn in_row(mut self, r: u64) -> Self {
        self.0.place.row.get_or_insert(r);
        self
    }

    /// In column `name`.
    #[must_use]
    pub fn in_column(mut self, name: &str) -> Self {
        self.0.place.column.get_or_insert_with(|| name.to_owned());
        self
    }

    /// In the annotation of kind `kind`.
    #[must_use]
    pub fn in_annotation(mut self, kind: &str) -> Self {
        self.0
            .place
            .annotation
            .get_or_insert_with(|| kind.to_owned());
        self
    }

    /// In the file at `path`.
    #[must_use]
    pub fn in_file(mut self, path: &Path) -> Self {
        self.0.place.path.get_or_insert_with(|| path.to_path_buf());
        self
    }

    /// Made from `cause`, which [`std::error::Error::source`] then returns.
    #[must_use]
    pub fn with_source(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.0.source = Some(Cause(Arc::new(cause)));
        self
    }
}

impl<K: Kind> From<crate::Error> for LocatedError<K> {
    /// The kind `K::of_core` names, the core error's offset, and the core
    /// error itself as the source.
    fn from(e: crate::Error) -> Self {
        let mut out = LocatedError::new(K::of_core(&e), e.to_string());
        out.0.at = e.offset();
        out.with_source(e)
    }
}

impl<K: Kind> From<io::Error> for LocatedError<K> {
    /// The kind `K::of_io` names, with the I/O error as the source.
    fn from(e: io::Error) -> Self {
        LocatedError::new(K::of_io(&e), e.to_string()).with_source(e)
    }
}

/// Renders an [`Inner`].
struct Render<'a, K: Kind>(&'a Inner<K>);

impl<K: Kind> fmt::Display for Render<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.0;
        let p = &e.place;
        f.write_str(e.kind.name())?;
        if let Some(s) = p.stage {
            write!(f, " at {s}")?;
        }
        write!(f, ": {}", e.message)?;
        let mut parts: Vec<String> = Vec::new();
        if let Some(c) = &p.column {
            parts.push(format!("column {c:?}"));
        }
        if let Some(a) = &p.annotation {
            parts.push(format!("annotation {a:?}"));
        }
        if let Some(c) = p.chunk {
            parts.push(format!("chunk {c}"));
        }
        if let Some(b) = p.block {
            parts.push(format!("block {b}"));
        }
        // A sample named by the stage is not repeated.
        if let Some(s) = p.sample
            && p.stage != Some(Stage::ReadSample(s))
        {
            parts.push(format!("sample {s}"));
        }
        if let Some(s) = p.sequence {
            parts.push(format!("sequence {s}"));
        }
        if let Some(r) = p.row {
            parts.push(format!("row {r}"));
        }
        if let Some(n) = &p.field {
            parts.push(format!("field {n:?}"));
        }
        if let Some(n) = &p.stream {
            parts.push(format!("stream {n:?}"));
        }
        if let Some(at) = e.at {
            parts.push(format!("offset {at}"));
        }
        if !parts.is_empty() {
            write!(f, " ({})", parts.join(", "))?;
        }
        if let Some(path) = &p.path {
            write!(f, " in {}", path.display())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::error::Error as _;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum K {
        Bad,
        Limit,
        Arg,
        Io,
        Missing,
    }

    impl Kind for K {
        const IO: Self = K::Io;
        const LIMIT_EXCEEDED: Self = K::Limit;
        const INVALID_ARGUMENT: Self = K::Arg;
        const MALFORMED: Self = K::Bad;

        fn name(self) -> &'static str {
            match self {
                K::Bad => "Bad",
                K::Limit => "Limit",
                K::Arg => "Arg",
                K::Io => "Io",
                K::Missing => "Missing",
            }
        }

        fn of_io(e: &io::Error) -> Self {
            if e.kind() == io::ErrorKind::NotFound {
                K::Missing
            } else {
                K::Io
            }
        }
    }

    /// Each builder keeps its first value: the innermost location wins.
    #[test]
    fn the_first_location_is_kept() {
        let e = LocatedError::new(K::Bad, "m")
            .at(5)
            .in_chunk(1)
            .in_value(7, "x")
            .at(9)
            .in_chunk(2)
            .in_value(8, "y")
            .in_column("c")
            .in_column("d");
        assert_eq!(e.offset(), Some(5));
        assert_eq!(e.chunk(), Some(1));
        assert_eq!(e.sample(), Some(7));
        assert_eq!(e.field(), Some("x"));
        assert_eq!(e.column(), Some("c"));
        assert_eq!(e.message(), "m");
    }

    /// Every part of the context is rendered, in one fixed order.
    #[test]
    fn the_whole_context_is_rendered() {
        let e = LocatedError::new(K::Bad, "broken")
            .in_file(Path::new("dir/x"))
            .in_row(4)
            .in_record(3, "s")
            .in_block(2)
            .in_chunk(1)
            .in_annotation("a")
            .in_column("c")
            .in_value(6, "f")
            .at(99);
        assert_eq!(
            e.to_string(),
            "Bad: broken (column \"c\", annotation \"a\", chunk 1, block 2, sample 6, \
             sequence 3, row 4, field \"f\", stream \"s\", offset 99) in dir/x"
        );
        assert_eq!(e.sequence(), Some(3));
        assert_eq!(e.stream(), Some("s"));
        assert_eq!(e.row(), Some(4));
        assert_eq!(e.block(), Some(2));
        assert_eq!(e.annotation(), Some("a"));
        assert_eq!(e.path(), Some(Path::new("dir/x")));
        assert_eq!(LocatedError::new(K::Bad, "plain").to_string(), "Bad: plain");
    }

    /// A stage goes before the message, and a sample it names is not repeated.
    #[test]
    fn a_stage_names_the_sample() {
        let e = LocatedError::new(K::Bad, "short")
            .in_stage(Stage::ReadSample(3))
            .at(12);
        assert_eq!(e.to_string(), "Bad at read_sample(3): short (offset 12)");
        assert_eq!(e.sample(), Some(3));
        assert_eq!(e.stage(), Some(Stage::ReadSample(3)));
        let e = LocatedError::new(K::Bad, "m")
            .in_stage(Stage::Open)
            .in_sample(1);
        assert_eq!(e.to_string(), "Bad at open: m (sample 1)");
    }

    /// Conversions name the format's kind, keep the offset, and keep the
    /// original (downcastable) as the source.
    #[test]
    fn conversions_keep_the_original() {
        let core = crate::Error::Truncated { at: 77, needed: 4 };
        let e: LocatedError<K> = core.clone().into();
        assert_eq!(e.kind(), K::Bad);
        assert_eq!(e.offset(), Some(77));
        crate::testing::assert_source_is(&e, &core);
        let limit = crate::Error::LimitExceeded {
            what: "x",
            requested: 2,
            limit: 1,
        };
        assert_eq!(LocatedError::<K>::from(limit).kind(), K::Limit);
        let arg = crate::Error::InvalidArgument("no".into());
        assert_eq!(LocatedError::<K>::from(arg).kind(), K::Arg);
        let io = crate::Error::Io(Arc::new(io::Error::other("gone")));
        assert_eq!(LocatedError::<K>::from(io).kind(), K::Io);

        let e = LocatedError::<K>::from(io::Error::other("disk on fire"));
        assert_eq!(e.kind(), K::Io);
        let source = e.source().unwrap();
        assert_eq!(source.to_string(), "disk on fire");
        assert!(source.downcast_ref::<io::Error>().is_some());
        let e = LocatedError::<K>::from(io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(e.kind(), K::Missing);
        assert!(LocatedError::new(K::Bad, "m").source().is_none());
    }
}
