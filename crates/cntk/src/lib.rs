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
//!
//! In hot paths, borrow instead: [`Reader::chunk_view`] checks a chunk and
//! hands out each record in its stored type, as a zero-copy slice of the
//! memory map or copied into a buffer of yours.
//!
//! ```no_run
//! use dataformats_cntk::{Reader, RecordView};
//! // SAFETY: nothing modifies the file while it is mapped.
//! let src = unsafe { dataformats_core::Source::map("data.bin") }.unwrap();
//! let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
//! let view = r.chunk_view(0).unwrap();
//! let mut buf = Vec::new();
//! for q in 0..view.num_sequences() {
//!     match view.record(0, q) {
//!         Some(RecordView::Dense(d)) => match d.as_f32() {
//!             Some(values) => println!("{} values, zero-copy", values.len()),
//!             None => {
//!                 buf.resize(d.len(), 0.0);
//!                 d.read_f64_into(&mut buf).unwrap();
//!             }
//!         },
//!         Some(RecordView::Sparse(s)) => println!("{} entries, starts {:?}", s.nnz(), s.column_starts()),
//!         None => {}
//!     }
//! }
//! ```

#![deny(missing_docs)]
// Every unsafe block of the workspace lives in dataformats-core (memory maps,
// C codecs), each with its SAFETY note; format crates have none.
#![forbid(unsafe_code)]

pub mod ctf;
mod error;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod parse;
pub mod randomize;
mod read;
mod write;

pub use dataformats_core::ReadOptions;
pub use error::{Error, ErrorKind, Result};
pub use randomize::{BatchSize, Minibatches, ReaderConfig, Window};
pub use read::{
    CheckedChunk, Chunk, ChunkEntry, ChunkView, DenseView, ElemType, MAGIC, Reader, Record,
    RecordView, SparseView, StreamDesc, StreamKind, VERSION,
};
pub use write::{Chunking, RecordData, Writer};
