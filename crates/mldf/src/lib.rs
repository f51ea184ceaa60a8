//! MLDF 1.0, an FFCV-style ML data format: a strict reader with partial
//! (one field of one sample) reads and full validation, following
//! `mldf.md` exactly.
//!
//! A file is a 9-byte magic, a 64-byte header, 208-byte field descriptors,
//! a metadata table with one fixed-size row per sample, a page-aligned data
//! region, and an allocation table that runs to the end of the file.
//!
//! ```no_run
//! use dataformats_mldf::{Reader, Value};
//! let r = Reader::open("data.mldf").unwrap();
//! for f in r.fields() {
//!     println!("{}: {}", f.name, f.ty.name());
//! }
//! if let Value::NdArray(bytes) = r.value_of(0, "features").unwrap() {
//!     println!("{} bytes, zero-copy from the file when uncompressed", bytes.len());
//! }
//! r.validate().unwrap();
//! ```

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

pub mod diff;
mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
/// Image header checks (shared with FFCV, in the core).
pub use dataformats_core::image;
/// Strict JSON verdicts (shared with FFCV, in the core).
pub use dataformats_core::json;
pub mod loader;
pub mod parse;
mod read;
pub mod render;
mod write;

pub use dataformats_core::ReadOptions;
pub use error::{Error, ErrorKind, Result};
pub use format::{Alloc, Dtype, Field, FieldType, Header, MAGIC};
pub use loader::{Loader, LoaderOptions, Order};
pub use read::{Reader, Value};
pub use write::{Encoded, FieldValue, Layout, SampleEncoder, Writer, WriterOptions};
