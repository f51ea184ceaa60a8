//! TurboLoader TBL v2 files: read, write, convert from and to tar.
//!
//! A TBL v2 file is a 64-byte header (with its CRC-32), an index of 24-byte
//! entries (offset, sizes, cached width/height/format, flags, CRC-16 of the
//! decoded sample), the sample payloads (raw, or one LZ4 block when that was
//! smaller), and optional per-sample metadata blocks. This crate follows what
//! TurboLoader's code writes and reads (not its guide page), byte for byte,
//! and checks everything with overflow-checked arithmetic.
//!
//! ```
//! use dataformats_tbl2::{Compression, MetadataType, Reader, SampleFormat, SampleInfo, Writer};
//!
//! let dir = std::env::temp_dir().join(format!("tbl2-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("data.tbl");
//! let mut w = Writer::create(&path, Compression::Lz4).unwrap();
//! let img = vec![7u8; 4 * 4 * 3];
//! let info = SampleInfo { format: SampleFormat::RAW_U8, width: 4, height: 4 };
//! w.add_sample(&img, info).unwrap();
//! w.add_metadata(0, br#"{"label":"cat"}"#, MetadataType::JSON).unwrap();
//! w.finish().unwrap();
//!
//! let r = Reader::open(&path).unwrap();
//! assert_eq!((r.entry(0).unwrap().width, r.entry(0).unwrap().height), (4, 4)); // index only
//! assert_eq!(&*r.read_sample(0).unwrap(), &img[..]); // LZ4-decoded, CRC-16 checked
//! let (kind, meta) = r.read_metadata(0).unwrap().unwrap();
//! assert_eq!((kind, &*meta), (MetadataType::JSON, &br#"{"label":"cat"}"#[..]));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

pub mod dims;
mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod loader;
pub mod parse;
mod read;
pub mod tar;
mod write;

pub use error::{Error, ErrorKind, Result, Stage};
pub use format::{Header, IndexEntry, MetadataBlock, MetadataType, SampleFormat};
pub use loader::{Batch, Loader, LoaderOptions};
pub use read::{ReadOptions, Reader, parse_header};
pub use write::{Compression, SampleInfo, Writer, encode_sample};
