//! CNTK binary format (CBF) files: a strict reader and a streaming writer.
//!
//! A CBF file is a 12-byte preamble (magic, version 1), chunks of sequences,
//! then a header at the end (stream descriptors and a chunk table) found
//! through an 8-byte footer. Every count, offset, size and sparse index is
//! checked (many more checks than CNTK's own reader makes), in the order of
//! `cntk.md` §4.2, and errors name the chunk, sequence and stream.
//!
//! ```no_run
//! use dataformats_cntk::{Reader, Record};
//! let r = Reader::open("data.bin").unwrap();
//! for s in r.streams() {
//!     println!("{} {:?} {:?} dim {}", s.name, s.kind, s.elem, s.dim);
//! }
//! let chunk = r.read_chunk(0).unwrap();
//! if let Record::Dense { samples, values } = &chunk.records[0][0] {
//!     println!("{samples} samples, first value {}", values[0]);
//! }
//! ```

#![deny(missing_docs)]

pub mod ctf;
mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod randomize;
mod read;
mod write;

pub use error::{Error, ErrorKind, Result};
pub use randomize::{BatchSize, Minibatches, ReaderConfig, Window};
pub use read::{
    Chunk, ChunkEntry, ElemType, MAGIC, Reader, Record, StreamDesc, StreamKind, VERSION,
};
pub use write::{Chunking, RecordData, Writer};
