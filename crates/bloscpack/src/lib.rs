//! Bloscpack files (`.blp`) and BLZ/bcolz directories.
//!
//! Bloscpack stores a byte payload (often a numpy array) as a sequence of
//! Blosc1-compressed chunks, with an optional JSON metadata section, an
//! optional table of chunk offsets (with spare slots for appends), and a
//! digest after every chunk. This crate reads every file python-bloscpack
//! writes, strictly: every size, offset and digest is checked, and a broken
//! file is an [`Error`] whose [`ErrorKind`] names the problem, with the chunk
//! and byte offset.
//!
//! ```
//! use dataformats_bloscpack::{Reader, WriteOptions, pack_array};
//!
//! let values: Vec<f64> = (0..10_000).map(|i| i as f64 * 0.5).collect();
//! let file = pack_array(&values, &WriteOptions::default().chunk_size(16 * 1024)).unwrap();
//!
//! let r = Reader::from_bytes(file).unwrap();
//! assert_eq!(r.nchunks(), 5);
//! assert_eq!(r.numpy().unwrap().shape, vec![10_000]);
//! r.validate().unwrap(); // every digest, every chunk
//! let back: Vec<f64> = r.read_array().unwrap();
//! assert_eq!(back, values);
//!
//! // Elements 5000..5003 only: decodes just the Blosc blocks that hold them.
//! let mut three = [0u8; 24];
//! r.read_elements_into(5000, 3, &mut three).unwrap();
//! assert_eq!(f64::from_le_bytes(three[..8].try_into().unwrap()), 2500.0);
//! ```

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

pub mod blz;
mod blz_write;
pub mod dtype;
mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod npy;
pub mod numpy;
pub mod parse;
mod read;
pub mod values;
mod write;

pub use error::{Error, ErrorKind, Result};
pub use format::{Header, MetaCodec, MetadataHeader};
pub use numpy::{NumpyMeta, Order};
pub use read::{ChunkInfo, Element, Metadata, ReadOptions, Reader};
pub use write::{
    AtomicSink, MetadataOptions, Sink, WriteOptions, Writer, append, chunking, metadata_json,
    pack_array, pack_bytes, pack_file,
};
