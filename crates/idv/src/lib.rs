//! ML.NET binary dataview (`.idv`) files: a strict reader and a streaming
//! writer, following ML.NET's BinaryLoader and BinarySaver.
//!
//! An IDV file is a 256-byte header, column blocks (each compressed on its
//! own, in any order), per-column block lookup tables and annotation
//! ("metadata") tables, a column table of contents and an 8-byte tail
//! signature. Every codec of ML.NET's catalogue is read, current and legacy;
//! columns with an unknown codec or compression are reported as dead and
//! skipped, as ML.NET does.
//!
//! ```no_run
//! use dataformats_idv::Reader;
//! let r = Reader::open("data.idv").unwrap();
//! for c in r.columns() {
//!     let ty = c.ty().map(ToString::to_string).unwrap_or_else(|| "dead".into());
//!     println!("{}: {ty} ({} annotations)", c.name, c.annotations.len());
//! }
//! let x: Vec<f32> = r.column("x").unwrap();
//! let text: Vec<String> = r.column("label").unwrap();
//! # let _ = (x, text);
//! ```

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

mod cursor;
mod decode;
mod encode;
mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod parse;
mod read;
pub mod render;
mod types;
mod values;
mod write;

pub use dataformats_core::ReadOptions;
pub use decode::MAX_TICKS;
pub use error::{Error, ErrorKind, Result};
pub use read::{
    Annotation, BlockEntry, Column, Compression, HEADER_SIZE, Header, Reader, SIGNATURE,
    TAIL_SIGNATURE, VERSION_1_1_1_6, version_string,
};
pub use types::{Codec, ColumnType, ItemType, KeyWidth};
pub use values::{
    DateTimeOffset, PlainItem, Scalar, TextValues, Values, VectorRef, VectorValues,
    wtf8_to_str_lossy,
};
pub use write::{
    ColumnSpec, DEFAULT_MAX_BYTES_PER_BLOCK_GROUP, DEFAULT_MAX_ROWS_PER_BLOCK, Writer,
    WriterOptions,
};
