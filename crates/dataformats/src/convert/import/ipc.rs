//! Arrow IPC files, their stored batches decoded on every core.
//!
//! The file's footer lists where each record batch (a block) lies; each
//! block is read by a positioned read and decoded on any thread, and the
//! batches are handed on in the file's order, as stored. Everything the
//! footer says is checked before it is used: the footer inside the file, a
//! schema with fields, each block inside the file and within the caller's
//! cap on one allocation, and long enough to hold its message.

use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::Block;
use arrow_ipc::reader::FileDecoder;
use arrow_schema::SchemaRef;

use crate::core::{Limits, Source};
use crate::dataset::Error;

/// An Arrow IPC file's footer, dictionaries and blocks: any block decoded
/// through `&self`, on any thread.
pub(super) struct IpcFile {
    src: Source,
    limits: Limits,
    decoder: FileDecoder,
    blocks: Vec<Block>,
    /// The schema of the batches decoded (the columns selected).
    schema: SchemaRef,
    path: String,
}

fn bad(path: &str, m: impl std::fmt::Display) -> Error {
    Error::Data {
        format: None,
        message: format!("{path}: {m}"),
    }
}

/// A read of the file that failed: past the caller's cap, or the file's
/// own error.
fn failed(path: &str, e: crate::core::Error) -> Error {
    match e {
        e @ crate::core::Error::LimitExceeded { .. } => Error::limit(e),
        e => Error::Io {
            path: path.to_string(),
            source: std::io::Error::other(e),
        },
    }
}

impl IpcFile {
    /// Opens the Arrow IPC file `path`, its batches to hold the columns
    /// `columns` picks (indices into the file's schema, in that order).
    pub(super) fn open(
        path: &Path,
        limits: Limits,
        columns: impl FnOnce(&arrow_schema::Schema) -> Result<Vec<usize>, Error>,
    ) -> Result<IpcFile, Error> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(super::io(path))?;
        let src = Source::from_file(file).map_err(|e| super::io(path)(std::io::Error::other(e)))?;
        let len = src.len();
        let mut tail = [0u8; 10];
        if len < 10 + 8 {
            return Err(bad(
                &name,
                format!("{len} bytes are too few for an Arrow IPC file"),
            ));
        }
        src.read_at(len - 10, &mut tail)
            .map_err(|e| failed(&name, e))?;
        let footer_len = arrow_ipc::reader::read_footer_length(tail)? as u64;
        let Some(footer_at) = (len - 10).checked_sub(footer_len).filter(|&at| at >= 8) else {
            return Err(bad(
                &name,
                format!("the footer of {footer_len} bytes does not fit in the file's {len}"),
            ));
        };
        let footer_bytes = src
            .read_vec(footer_at, footer_len, &limits)
            .map_err(|e| failed(&name, e))?;
        let footer = arrow_ipc::root_as_footer(&footer_bytes)
            .map_err(|e| bad(&name, format!("the footer at offset {footer_at}: {e}")))?;
        let Some(fb_schema) = footer.schema().filter(|s| s.fields().is_some()) else {
            return Err(bad(&name, "the footer has no schema"));
        };
        if !fb_schema.endianness().equals_to_target_endianness() {
            return Err(bad(&name, "the file's byte order is not this machine's"));
        }
        let schema = Arc::new(guard(&name, "the footer's schema", || {
            Ok(arrow_ipc::convert::fb_to_schema(fb_schema))
        })?);
        let columns = columns(&schema)?;
        let projected = Arc::new(schema.project(&columns)?);
        let blocks: Vec<Block> = footer
            .recordBatches()
            .map(|b| b.iter().copied().collect())
            .unwrap_or_default();
        let mut me = IpcFile {
            src,
            limits,
            decoder: FileDecoder::new(schema.clone(), footer.version()).with_projection(columns),
            blocks,
            schema: projected,
            path: name,
        };
        for (k, block) in footer.dictionaries().into_iter().flatten().enumerate() {
            let buf = me.read(block, &format!("dictionary {k}"))?;
            guard(&me.path, &format!("dictionary {k}"), || {
                me.decoder.read_dictionary(block, &buf)
            })?;
        }
        Ok(me)
    }

    /// The schema of the batches.
    pub(super) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The number of record batches.
    pub(super) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// The bytes of `block` (`what`, for errors), checked to lie inside
    /// the file, within the caller's cap and to hold a message.
    fn read(&self, block: &Block, what: &str) -> Result<Buffer, Error> {
        let (at, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let (Ok(at), Ok(meta), Ok(body)) =
            (u64::try_from(at), u64::try_from(meta), u64::try_from(body))
        else {
            return Err(bad(
                &self.path,
                format!("{what}: a negative offset or length ({at}, {meta}, {body})"),
            ));
        };
        // A message starts with its length (and before it, in files since
        // Arrow 0.15, a continuation marker).
        if meta < 8 {
            return Err(bad(
                &self.path,
                format!("{what} at offset {at}: {meta} bytes of metadata cannot hold a message"),
            ));
        }
        let Some(len) = meta.checked_add(body) else {
            return Err(bad(
                &self.path,
                format!("{what} at offset {at}: its length overflows"),
            ));
        };
        let bytes = self
            .src
            .read_vec(at, len, &self.limits)
            .map_err(|e| match e {
                crate::core::Error::OutOfBounds { .. } => bad(
                    &self.path,
                    format!("{what}: its {len} bytes at offset {at} lie outside the file"),
                ),
                e => failed(&self.path, e),
            })?;
        Ok(Buffer::from_vec(bytes))
    }

    /// Record batch `k`, read and decoded.
    pub(super) fn batch(&self, k: usize) -> Result<RecordBatch, Error> {
        let what = format!("record batch {k}");
        let Some(block) = self.blocks.get(k) else {
            return Err(bad(
                &self.path,
                format!("{what}: the file has {}", self.len()),
            ));
        };
        let buf = self.read(block, &what)?;
        match guard(&self.path, &what, || {
            self.decoder.read_record_batch(block, &buf)
        })? {
            Some(b) => Ok(b),
            None => Err(bad(&self.path, format!("{what} holds no record batch"))),
        }
    }
}

/// `f`, a call of arrow-ipc's decoder on a block of the file: its error as
/// ours, and a panic (the decoder asserts some of what a block says) as an
/// error naming `what`, not a crash.
fn guard<T>(
    path: &str,
    what: &str,
    f: impl FnOnce() -> Result<T, arrow_schema::ArrowError>,
) -> Result<T, Error> {
    super::caught(
        path,
        || what.to_string(),
        "Arrow IPC decoder",
        || f().map_err(|e| bad(path, format!("{what}: {e}"))),
    )
}

/// The bytes of an Arrow IPC stream handed to the decoder at a time.
const STREAM_PIECE: usize = 1 << 20;

/// An Arrow IPC stream's batches, read in order: the file is handed to
/// arrow-ipc's push decoder a piece at a time, so that what it holds grows
/// only with the bytes the file has (arrow-ipc's stream reader allocates
/// what a message's header asks for before reading it), and a panic of
/// the decoder on a malformed message is an error naming the batch.
pub(super) struct IpcStream {
    file: std::fs::File,
    decoder: arrow_ipc::reader::StreamDecoder,
    /// Bytes read and not yet decoded.
    pending: Buffer,
    /// A batch decoded while looking for the schema.
    held: Option<RecordBatch>,
    schema: SchemaRef,
    path: String,
    next: usize,
}

impl IpcStream {
    /// Opens the Arrow IPC stream `path`, reading up to its schema.
    pub(super) fn open(path: &Path) -> Result<IpcStream, Error> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(super::io(path))?;
        let mut me = IpcStream {
            file,
            decoder: arrow_ipc::reader::StreamDecoder::new(),
            pending: Buffer::from_vec(Vec::<u8>::new()),
            held: None,
            schema: Arc::new(arrow_schema::Schema::empty()),
            path: name,
            next: 0,
        };
        loop {
            if let Some(schema) = me.decoder.schema() {
                me.schema = schema;
                return Ok(me);
            }
            if me.pending.is_empty() && !me.fill()? {
                return Err(bad(&me.path, "the stream ends before its schema"));
            }
            let (decoder, pending) = (&mut me.decoder, &mut me.pending);
            // The decoder goes on past the schema to the first batch.
            me.held = guard(&me.path, "the schema message", || decoder.decode(pending))?;
        }
    }

    /// The stream's schema.
    pub(super) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Reads the next piece of the file into `pending`; false at its end.
    fn fill(&mut self) -> Result<bool, Error> {
        use std::io::Read;
        let mut piece = vec![0u8; STREAM_PIECE];
        let n = loop {
            match self.file.read(&mut piece) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(Error::Io {
                        path: self.path.clone(),
                        source: e,
                    });
                }
            }
        };
        piece.truncate(n);
        self.pending = Buffer::from_vec(piece);
        Ok(n > 0)
    }
}

/// Ends with the first error (the stream it feeds stops there).
impl Iterator for IpcStream {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let what = format!("record batch {}", self.next);
        if let Some(b) = self.held.take() {
            self.next += 1;
            return Some(Ok(b));
        }
        loop {
            if self.pending.is_empty() {
                match self.fill() {
                    Ok(true) => {}
                    Ok(false) => {
                        // The end of the file: a message cut short is an error.
                        return match self.decoder.finish() {
                            Ok(()) => None,
                            Err(e) => Some(Err(bad(&self.path, format!("{what}: {e}")))),
                        };
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            let (decoder, pending) = (&mut self.decoder, &mut self.pending);
            match guard(&self.path, &what, || decoder.decode(pending)) {
                Ok(Some(b)) => {
                    self.next += 1;
                    return Some(Ok(b));
                }
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// The batches of an [`IpcFile`], read in order.
pub(super) struct IpcBatches {
    pub(super) file: Arc<IpcFile>,
    /// The next batch to hand out.
    next: usize,
}

impl IpcBatches {
    pub(super) fn new(file: IpcFile) -> Self {
        IpcBatches {
            file: Arc::new(file),
            next: 0,
        }
    }

    /// The next batch's index, to be decoded on any thread.
    pub(super) fn next_index(&mut self) -> Option<Result<usize, Error>> {
        if self.next >= self.file.len() {
            return None;
        }
        self.next += 1;
        Some(Ok(self.next - 1))
    }
}

/// Ends with the first error (the stream it feeds stops there).
impl Iterator for IpcBatches {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let k = match self.next_index()? {
            Ok(k) => k,
            Err(e) => return Some(Err(e)),
        };
        Some(self.file.batch(k))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{
        ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
    };
    use arrow_ipc::CompressionType;
    use arrow_ipc::writer::{FileWriter, IpcWriteOptions};

    use crate::convert::ConvertOptions;
    use crate::dataset::Error;

    /// Batches of `sizes` records: an Int64 numbering them, a text, a
    /// dictionary of three words and a Float64.
    fn batches(sizes: &[usize]) -> Vec<RecordBatch> {
        let mut at = 0i64;
        sizes
            .iter()
            .map(|&n| {
                let ids: Vec<i64> = (at..at + n as i64).collect();
                at += n as i64;
                let text = StringArray::from_iter_values(
                    ids.iter().map(|i| format!("t{i}").repeat((i % 4) as usize)),
                );
                // One dictionary for every batch (as a file must have).
                let keys =
                    arrow_array::Int32Array::from_iter_values(ids.iter().map(|i| (i % 3) as i32));
                let values = Arc::new(StringArray::from(vec!["a", "bb", "ccc"]));
                let words = DictionaryArray::<Int32Type>::try_new(keys, values).unwrap();
                let x = Float64Array::from_iter_values(ids.iter().map(|&i| i as f64 * 0.5));
                RecordBatch::try_from_iter([
                    ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
                    ("text", Arc::new(text) as ArrayRef),
                    ("word", Arc::new(words) as ArrayRef),
                    ("x", Arc::new(x) as ArrayRef),
                ])
                .unwrap()
            })
            .collect()
    }

    fn write(path: &std::path::Path, batches: &[RecordBatch], codec: Option<CompressionType>) {
        let options = IpcWriteOptions::default()
            .try_with_compression(codec)
            .unwrap();
        let file = std::fs::File::create(path).unwrap();
        let mut w = FileWriter::try_new_with_options(file, &batches[0].schema(), options).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    }

    type Read = Vec<Result<RecordBatch, Error>>;

    /// `path`'s batches read one after the other, and on three threads.
    fn both_ways(path: &std::path::Path, opts: &ConvertOptions) -> Option<(Read, Read)> {
        let mut one = super::super::open_ipc(path, opts).ok()?;
        let mut serial = Vec::new();
        while let Some(b) = one.stream.next_batch() {
            serial.push(b);
        }
        let mut many = super::super::open_ipc(path, opts).ok()?;
        let mut parallel = Vec::new();
        many.stream
            .send_all(3, &crate::core::parallel::Active::new(3), &mut |b| {
                parallel.push(b);
                true
            });
        Some((serial, parallel))
    }

    /// Uncompressed, LZ4 (Feather's default) and Zstandard files give their
    /// stored batches, on three threads as on one, holding the columns
    /// selected in the order asked and the records selected.
    #[test]
    fn stored_batches_on_threads_as_on_one() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [1, 700, 33, 2048, 5, 999];
        let want = batches(&sizes);
        let all = arrow_select::concat::concat_batches(&want[0].schema(), &want).unwrap();
        for codec in [
            None,
            Some(CompressionType::LZ4_FRAME),
            Some(CompressionType::ZSTD),
        ] {
            let path = dir.path().join("t.arrow");
            write(&path, &want, codec);
            for (columns, rows) in [(None, None), (Some(vec!["x", "id", "x"]), Some(30..3000))] {
                let opts = ConvertOptions {
                    columns: columns
                        .clone()
                        .map(|c| c.iter().map(|n| n.to_string()).collect()),
                    rows: rows.clone(),
                    ..Default::default()
                };
                let (serial, parallel) = both_ways(&path, &opts).unwrap();
                let serial: Vec<RecordBatch> = serial.into_iter().map(Result::unwrap).collect();
                let parallel: Vec<RecordBatch> = parallel.into_iter().map(Result::unwrap).collect();
                assert_eq!(serial, parallel, "{codec:?} {columns:?}");
                let range = rows.unwrap_or(0..all.num_rows() as u64);
                let names = columns.unwrap_or(vec!["id", "text", "word", "x"]);
                let idx: Vec<usize> = names
                    .iter()
                    .map(|n| all.schema().index_of(n).unwrap())
                    .collect();
                let expect = all
                    .project(&idx)
                    .unwrap()
                    .slice(range.start as usize, (range.end - range.start) as usize);
                let got = arrow_select::concat::concat_batches(&expect.schema(), &serial).unwrap();
                assert_eq!(got, expect, "{codec:?}");
                if range.start == 0 {
                    let lens: Vec<usize> = serial.iter().map(RecordBatch::num_rows).collect();
                    assert_eq!(lens, sizes, "the stored batches");
                }
            }
        }
    }

    /// Every byte of a small file changed (its top bit flipped): opening
    /// and reading it on one thread and on three ends in its records or in
    /// one error, never a panic or an allocation the file's numbers ask
    /// for.
    #[test]
    fn damaged_files_end_in_an_error_or_in_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("good.arrow");
        write(&path, &batches(&[3, 4]), None);
        let bytes = std::fs::read(&path).unwrap();
        let bad = dir.path().join("bad.arrow");
        let opts = ConvertOptions::default();
        let (mut opened, mut failed) = (0, 0);
        for at in 0..bytes.len() {
            for v in [bytes[at] ^ 0x80] {
                let mut b = bytes.clone();
                b[at] = v;
                std::fs::write(&bad, &b).unwrap();
                let Some((serial, parallel)) = both_ways(&bad, &opts) else {
                    continue;
                };
                opened += 1;
                for got in [serial, parallel] {
                    let errors = got.iter().filter(|b| b.is_err()).count();
                    assert!(errors <= 1 && got.iter().skip_while(|b| b.is_ok()).count() == errors);
                    failed += errors;
                }
            }
        }
        assert!(opened > 0 && failed > 0, "{opened} opened, {failed} failed");
    }

    /// The same for an Arrow IPC stream, read in order by arrow-ipc's
    /// reader: every byte's top bit flipped ends in the records or in one
    /// error.
    #[test]
    fn damaged_streams_end_in_an_error_or_in_records() {
        let dir = tempfile::tempdir().unwrap();
        let want = batches(&[3, 4]);
        let mut bytes = Vec::new();
        {
            let mut w =
                arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &want[0].schema()).unwrap();
            for b in &want {
                w.write(b).unwrap();
            }
            w.finish().unwrap();
        }
        let good = dir.path().join("good.arrows");
        std::fs::write(&good, &bytes).unwrap();
        let read = |path: &std::path::Path| -> Option<Read> {
            let opts = ConvertOptions::default();
            let mut inp = super::super::open(path, super::super::Table::ArrowStream, &opts).ok()?;
            let mut got = Vec::new();
            while let Some(b) = inp.stream.next_batch() {
                got.push(b);
            }
            Some(got)
        };
        let got: Vec<RecordBatch> = read(&good)
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want);
        let bad = dir.path().join("bad.arrows");
        let mut failed = 0;
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x80;
            std::fs::write(&bad, &b).unwrap();
            let Some(got) = read(&bad) else { continue };
            let errors = got.iter().filter(|b| b.is_err()).count();
            assert!(errors <= 1 && got.iter().skip_while(|b| b.is_ok()).count() == errors);
            failed += errors;
        }
        assert!(failed > 0);
    }
}
