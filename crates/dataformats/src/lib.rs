//! One crate for every dataset format the workspace reads and writes.
//!
//! `dataformats` re-exports the shared core as [`core`] and each format crate
//! as a module behind a feature of the same name. [`detect`] sniffs a file (or
//! a BLZ/bcolz directory) by its magic number or layout, and [`open`] gives a
//! [`Dataset`] for any of them: schema, records as dynamic values,
//! validation.
//!
//! ```no_run
//! let d = dataformats::open("data.idv").unwrap();
//! println!("{} records of {}", d.len(), d.format().name());
//! for c in d.columns() {
//!     println!("{}: {} {:?}", c.name, c.ty, c.shape);
//! }
//! let first = d.record(0).unwrap();
//! // Every record, read in batches (each compressed block decoded once).
//! for r in d.iter() {
//!     let values = r.unwrap();
//!     println!("{}", values[0].to_json());
//! }
//! d.validate().unwrap();
//! # let _ = first;
//! ```
//!
//! [`open_bytes`] does the same for a file held in memory. Optional
//! features: `arrow` (`arrow::record_batch` turns any dataset into an
//! Arrow `RecordBatch`) and `ndarray` (views and arrays of numeric data,
//! borrowed from the memory map where the format allows it). The
//! conversions of the `dataformats convert` command are [`convert`] calls
//! (described in `docs/conversions.md`), and its `inspect`, `validate` and
//! `dump` are [`describe`]'s.
//!
//! ```
//! use dataformats::{Format, detect_bytes};
//! assert_eq!(detect_bytes(b"blpk\x03\x00\x00\x00"), Some(Format::Bloscpack));
//! assert_eq!(detect_bytes(b"TBL\x02\x02\x00\x00\x00"), Some(Format::Tbl2));
//! assert_eq!(detect_bytes(b"\x89MLDF\r\n\x1a\n"), Some(Format::Mldf));
//! assert_eq!(detect_bytes(b"plain text"), None);
//! ```

#![deny(missing_docs)]
// With formats left out, helpers their adapters share (typed columns,
// error conversions, the describe module's) go unused; the build with every format (CI's) is
// where dead code is refused.
#![cfg_attr(
    not(all(
        feature = "bloscpack",
        feature = "tbl2",
        feature = "cntk",
        feature = "idv",
        feature = "mldf",
        feature = "ffcv"
    )),
    allow(dead_code, unused_imports, unused_variables)
)]

mod adapters;
mod column;
pub mod compare;
pub mod convert;
pub mod dataset;
pub mod describe;
mod detect;
pub mod error;
#[cfg(feature = "export")]
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "ndarray")]
pub mod ndarray;
pub mod remote;
pub mod typed;

pub use dataformats_core as core;
pub use dataset::{
    BatchIter, BatchReader, BatchStream, Dataset, OpenOptions, Parts, ReadOptions, TextRepair,
    open, open_as, open_as_with, open_bytes, open_bytes_as, open_bytes_as_with, open_bytes_with,
    open_source, open_source_as, open_with,
};
pub use error::Error as DatasetError;

/// Bloscpack files and BLZ/bcolz directories ([`dataformats_bloscpack`]).
#[cfg(feature = "bloscpack")]
pub use dataformats_bloscpack as bloscpack;

/// CNTK binary format ([`dataformats_cntk`]).
#[cfg(feature = "cntk")]
pub use dataformats_cntk as cntk;
pub use dataformats_core::{Error, ErrorKind, Result};
/// FFCV `.beton` files, read only ([`dataformats_ffcv`]).
#[cfg(feature = "ffcv")]
pub use dataformats_ffcv as ffcv;
/// ML.NET binary dataview ([`dataformats_idv`]).
#[cfg(feature = "idv")]
pub use dataformats_idv as idv;
/// MLDF 1.0 ([`dataformats_mldf`]).
#[cfg(feature = "mldf")]
pub use dataformats_mldf as mldf;

/// TurboLoader TBL v2 ([`dataformats_tbl2`]).
#[cfg(feature = "tbl2")]
pub use dataformats_tbl2 as tbl2;
pub use detect::{Format, SNIFF_LEN, detect, detect_bytes, detect_dir, looks_like_ffcv};

/// The examples in the project README, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
