//! Reading FFCV `.beton` files (FFCV 1.0.x, file version 2), the format
//! MLDF is modelled on.
//!
//! FFCV files have no magic number, no checksum and a writer that trusts
//! every number; this reader checks each count, offset and size against the
//! file before it uses it, and reports damage with the kinds of
//! [`ErrorKind`] (named as MLDF names the same faults, so both readers
//! speak one vocabulary). It reads; it does not write (write MLDF instead,
//! or convert with `dataformats convert x.beton x.mldf`).
//!
//! ```no_run
//! use dataformats_ffcv::{Reader, Value};
//! let r = Reader::open("data.beton").unwrap();
//! for f in r.fields() {
//!     println!("{}: {}", f.name, f.ty.name());
//! }
//! if let Value::Int(label) = r.value(0, 0).unwrap() {
//!     println!("first label {label}");
//! }
//! r.validate().unwrap();
//! ```
//!
//! Layout (all little-endian): a 24-byte header, 1041-byte field
//! descriptors, a metadata table of fixed-size rows (numpy's aligned struct
//! layout), page-aligned data pages, and an allocation table of
//! `{sample_id, ptr, size}` entries that runs to the end of the file.

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod parse;
mod read;

pub use dataformats_core::ReadOptions;
pub use error::{Error, ErrorKind, Result};
pub use read::*;
