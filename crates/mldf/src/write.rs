//! Writing MLDF 1.0 (`mldf.md` §11): layout A (sample count known first)
//! and the streaming layout B, atomic, header last.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use dataformats_core::codec::{self, Codec};
use dataformats_core::{AtomicFile, ChecksumKind};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{
    DESC_SIZE, FIELD_DESC_PTR, FLAG_CHECKSUMMED, FLAG_COMPRESSED, FLAG_LITTLE_ENDIAN, Field,
    FieldType, Header, MAGIC,
};
use crate::{image, json};

/// Where the metadata table goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Descriptors, metadata, data, allocation table: the sample count is
    /// given up front and every sample must then be written.
    A {
        /// Samples that will be written.
        num_samples: u64,
    },
    /// Descriptors, data, metadata, allocation table: nothing needed in
    /// advance (the streaming writer).
    B,
}

/// Writer settings (the defaults are the reference writer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Page size of the data region (power of two, 4096..=2^31; default 2 MiB).
    pub page_size: u32,
    /// Store each value as one zstd frame (level 3, content size, no checksum).
    pub compressed: bool,
    /// Store the data region's CRC-32.
    pub checksummed: bool,
    /// Layout A or B.
    pub layout: Layout,
    /// Start a sample's values on a new page when they would otherwise
    /// straddle one and fit in one (§11.4).
    pub page_packing: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            page_size: 2 << 20,
            compressed: false,
            checksummed: false,
            layout: Layout::B,
            page_packing: false,
        }
    }
}

impl WriterOptions {
    /// Refuses a page size MLDF does not allow: a power of two from 4096
    /// to 2^31 (§3.3).
    pub fn check_page_size(page_size: u64) -> Result<()> {
        if !page_size.is_power_of_two() || !(4096..=1 << 31).contains(&page_size) {
            return Err(arg(format!(
                "page size {page_size} is not a power of two in 4096..=2^31"
            )));
        }
        Ok(())
    }
}

/// One value to write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue<'a> {
    /// A missing value (NULLABLE fields only).
    Missing,
    /// INT.
    Int(i64),
    /// FLOAT.
    Float(f64),
    /// BYTES.
    Bytes(&'a [u8]),
    /// NDARRAY: the C-order little-endian bytes, exactly the field's nbytes.
    NdArray(&'a [u8]),
    /// JSON text (checked against §5.5).
    Json(&'a str),
    /// IMAGE_*: pixels (raw) or the encoded file, with its dimensions.
    Image {
        /// Height.
        height: u16,
        /// Width.
        width: u16,
        /// 1, 3 or 4.
        channels: u8,
        /// The bytes.
        data: &'a [u8],
    },
    /// AUDIO_*: PCM frames (codec 0) or a FLAC/AAC/MP3 stream (1/2/3).
    Audio {
        /// Frames.
        num_samples: u32,
        /// Hz.
        sample_rate: u32,
        /// Channels.
        num_channels: u16,
        /// Bits per sample.
        bit_depth: u8,
        /// 0 PCM, 1 FLAC, 2 AAC, 3 MP3.
        codec: u8,
        /// The bytes.
        data: &'a [u8],
    },
    /// TEXT_RAW.
    Text(&'a str),
    /// TEXT_TOKENIZED with encoding 1 (i32 ids) or 2 (i16 ids).
    Tokens {
        /// 1 or 2.
        encoding: u8,
        /// The ids.
        ids: &'a [i32],
    },
}

/// A spill file beside the output, removed when dropped.
#[derive(Debug)]
struct Spill {
    path: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Spill {
    fn new(target: &Path, tag: &str) -> Result<Spill> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = target.with_file_name(format!(".{name}.{tag}-{}.spill", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        Ok(Spill {
            path,
            file: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    fn write(&mut self, b: &[u8]) -> Result<()> {
        if let Some(f) = self.file.as_mut() {
            f.write_all(b)?;
        }
        Ok(())
    }

    /// Copies everything written into `out`.
    fn copy_into(&mut self, out: &mut impl Write) -> Result<u64> {
        let Some(f) = self.file.take() else {
            return Ok(0);
        };
        let mut f = f.into_inner().map_err(|e| Error::from(e.into_error()))?;
        f.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            let k = f.read(&mut buf)?;
            if k == 0 {
                return Ok(n);
            }
            out.write_all(buf.get(..k).unwrap_or_default())?;
            n += k as u64;
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

fn arg(m: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::InvalidArgument, m)
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Writes an MLDF file sample by sample; the file appears when
/// [`Writer::finish`] succeeds (the header is written last).
#[derive(Debug)]
pub struct Writer {
    out: BufWriter<AtomicFile>,
    encoder: SampleEncoder,
    opts: WriterOptions,
    data_ptr: u64,
    metadata_ptr: u64,
    pos: u64,
    samples: u64,
    rows: Spill,
    allocs: Spill,
    crc: dataformats_core::checksum::Hasher,
    row: Vec<u8>,
}

impl Writer {
    /// Starts a file at `path` with `fields`.
    pub fn create(path: impl AsRef<Path>, fields: Vec<Field>, opts: WriterOptions) -> Result<Self> {
        let path = path.as_ref();
        WriterOptions::check_page_size(u64::from(opts.page_size))?;
        if fields.len() > 65535 {
            return Err(arg("more than 65535 fields"));
        }
        if fields.is_empty() && !matches!(opts.layout, Layout::A { num_samples: 0 } | Layout::B) {
            return Err(arg("samples need at least one field"));
        }
        for (k, f) in fields.iter().enumerate() {
            if f.name.is_empty() || f.name.len() > 63 || f.name.contains('\0') {
                return Err(arg(format!(
                    "field name {:?}: 1 to 63 bytes of UTF-8 without NUL",
                    f.name
                )));
            }
            if fields.iter().take(k).any(|g| g.name == f.name) {
                return Err(arg(format!("field name {:?} used twice", f.name)));
            }
            if let FieldType::Opaque { .. } = f.ty {
                return Err(arg(format!(
                    "field {:?}: a 1.0 writer cannot write an opaque field",
                    f.name
                )));
            }
            let want = f.ty.record_size().unwrap_or(0) + if f.nullable { 8 } else { 0 };
            if f.metadata_size != want {
                return Err(arg(format!(
                    "field {:?}: metadata_size {} (the type needs {want})",
                    f.name, f.metadata_size
                )));
            }
            if let FieldType::NdArray { shape, .. } = &f.ty
                && (shape.len() > 15 || f.nbytes().is_none_or(|n| n > u64::from(u32::MAX)))
            {
                return Err(arg(format!("field {:?}: NDARRAY shape {shape:?}", f.name)));
            }
        }
        let row_size: u64 = fields.iter().map(|f| u64::from(f.metadata_size)).sum();
        let descs_end = FIELD_DESC_PTR + DESC_SIZE * fields.len() as u64;
        let page = u64::from(opts.page_size);
        let (metadata_ptr, data_ptr) = match opts.layout {
            Layout::A { num_samples } => {
                let m = align_up(descs_end, 64);
                let end = num_samples
                    .checked_mul(row_size)
                    .and_then(|x| x.checked_add(m))
                    .ok_or_else(|| arg("the metadata table would pass 2^64 bytes"))?;
                (m, align_up(end, page))
            }
            Layout::B => (0, align_up(descs_end, page)),
        };
        let f = AtomicFile::create(path)?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(MAGIC)?;
        out.write_all(&[0u8; 71])?;
        for fd in &fields {
            out.write_all(&fd.to_bytes())?;
        }
        let mut pos = descs_end;
        zero_fill(&mut out, &mut pos, data_ptr)?;
        Ok(Writer {
            out,
            row: Vec::with_capacity(row_size as usize),
            encoder: SampleEncoder {
                fields: fields.into(),
                compressed: opts.compressed,
                row_size: row_size as usize,
            },
            opts,
            data_ptr,
            metadata_ptr,
            pos,
            samples: 0,
            rows: Spill::new(path, "rows")?,
            allocs: Spill::new(path, "allocs")?,
            crc: ChecksumKind::Crc32.hasher(),
        })
    }

    /// Samples written so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Appends one sample: one value per field, in field order. A refused
    /// sample writes nothing.
    pub fn add_sample(&mut self, values: &[FieldValue<'_>]) -> Result<()> {
        self.room_for(1)?;
        let mut row = std::mem::take(&mut self.row);
        row.clear();
        // Stored bytes (borrowed from the caller when not compressed) and
        // where their record sits in the row.
        let mut pending: Vec<(Cow<'_, [u8]>, usize)> = Vec::new();
        let compressed = self.opts.compressed;
        let encoded = self
            .encoder
            .encode_row(self.samples, values, &mut row, |payload, rec_at| {
                let s = if compressed {
                    let mut z = Vec::new();
                    codec::compress_append(Codec::Zstd, &payload, Some(ZSTD_LEVEL), &mut z)
                        .map_err(|e| arg(e.to_string()))?;
                    Cow::Owned(z)
                } else {
                    payload
                };
                stored_size(s.len())?;
                pending.push((s, rec_at));
                Ok(())
            });
        let placed = encoded
            .and_then(|()| self.place(&mut row, pending.iter().map(|(s, at)| (s.as_ref(), *at))));
        self.row = row;
        placed
    }

    /// A handle that encodes samples for this writer on any thread
    /// (checking, and compressing when the file is compressed), for
    /// [`Writer::add_encoded`] to write in order.
    pub fn encoder(&self) -> SampleEncoder {
        self.encoder.clone()
    }

    /// Appends the samples of `e`, made by this writer's
    /// [`SampleEncoder`], in their order. Samples made for other fields
    /// or another compression are refused, as are more samples than
    /// layout A has room for; a refusal writes nothing.
    pub fn add_encoded(&mut self, e: &Encoded) -> Result<()> {
        if e.is_empty() {
            return Ok(());
        }
        let enc = &self.encoder;
        if e.fields != enc.fields.len()
            || e.row_size != enc.row_size
            || e.compressed != enc.compressed
        {
            return Err(arg(
                "the samples were encoded for other fields or another compression",
            ));
        }
        self.room_for(e.len() as u64)?;
        let mut row = std::mem::take(&mut self.row);
        let mut first = 0usize;
        let mut result = Ok(());
        for (k, &end) in e.samples.iter().enumerate() {
            let rows = e.rows.get(k * e.row_size..(k + 1) * e.row_size);
            let values = e.values.get(first..end);
            let (Some(rows), Some(values)) = (rows, values) else {
                result = Err(arg("encoded samples out of step with their rows"));
                break;
            };
            row.clear();
            row.extend_from_slice(rows);
            let stored = values
                .iter()
                .map(|v| (e.data.get(v.start..v.end).unwrap_or_default(), v.rec_at));
            result = self.place(&mut row, stored);
            if result.is_err() {
                break;
            }
            first = end;
        }
        self.row = row;
        result
    }

    /// Refuses `n` more samples when layout A has no room for them.
    fn room_for(&self, n: u64) -> Result<()> {
        if let Layout::A { num_samples } = self.opts.layout
            && self.samples.saturating_add(n) > num_samples
        {
            return Err(arg(format!("layout A was given {num_samples} samples")));
        }
        Ok(())
    }

    /// Writes one sample whose record is `row` and whose stored values
    /// are `values` (each with where its record sits in `row`): the values
    /// in the data region, their pointers into `row`, `row` into the
    /// metadata table.
    fn place<'v>(
        &mut self,
        row: &mut [u8],
        values: impl Iterator<Item = (&'v [u8], usize)> + Clone,
    ) -> Result<()> {
        // Optional page packing (§11.4).
        let page = u64::from(self.opts.page_size);
        if self.opts.page_packing {
            let total: u64 = values
                .clone()
                .map(|(s, _)| align_up(s.len() as u64, 8))
                .sum();
            let used = (self.pos - self.data_ptr) % page;
            if total > 0 && total <= page && used != 0 && used + total > page {
                let to = self.pos + (page - used);
                self.pad_data(to)?;
            }
        }
        for (s, rec_at) in values {
            let at = align_up(self.pos, 8);
            self.pad_data(at)?;
            self.out.write_all(s)?;
            if self.opts.checksummed {
                self.crc.update(s);
            }
            self.pos += s.len() as u64;
            if let Some(d) = row.get_mut(rec_at..rec_at + 8) {
                d.copy_from_slice(&at.to_le_bytes());
            }
            let mut e = [0u8; 16];
            e[..8].copy_from_slice(&at.to_le_bytes());
            e[8..12].copy_from_slice(&(s.len() as u32).to_le_bytes());
            self.allocs.write(&e)?;
        }
        self.rows.write(row)?;
        self.samples += 1;
        Ok(())
    }

    /// Zero bytes in the data region up to `to` (they count in the CRC).
    fn pad_data(&mut self, to: u64) -> Result<()> {
        if to > self.pos {
            let z = vec![0u8; (to - self.pos) as usize];
            self.out.write_all(&z)?;
            if self.opts.checksummed {
                self.crc.update(&z);
            }
            self.pos = to;
        }
        Ok(())
    }

    /// Writes the metadata table and the allocation table, then the header,
    /// and moves the file into place.
    pub fn finish(mut self) -> Result<()> {
        let data_end = self.pos;
        let (metadata_ptr, alloc_table_ptr) = match self.opts.layout {
            Layout::A { num_samples } => {
                if self.samples != num_samples {
                    return Err(arg(format!(
                        "layout A expects {num_samples} samples, {} were written",
                        self.samples
                    )));
                }
                let alloc = align_up(data_end, 16);
                zero_fill(&mut self.out, &mut self.pos, alloc)?;
                self.allocs.copy_into(&mut self.out)?;
                // The rows go into the space reserved before the data.
                self.out.seek(SeekFrom::Start(self.metadata_ptr))?;
                self.rows.copy_into(&mut self.out)?;
                (self.metadata_ptr, alloc)
            }
            Layout::B => {
                let meta = align_up(data_end, 64);
                zero_fill(&mut self.out, &mut self.pos, meta)?;
                self.pos += self.rows.copy_into(&mut self.out)?;
                let alloc = align_up(self.pos, 16);
                zero_fill(&mut self.out, &mut self.pos, alloc)?;
                self.allocs.copy_into(&mut self.out)?;
                (meta, alloc)
            }
        };
        let mut flags = FLAG_LITTLE_ENDIAN;
        if self.opts.compressed {
            flags |= FLAG_COMPRESSED;
        }
        if self.opts.checksummed {
            flags |= FLAG_CHECKSUMMED;
        }
        let header = Header {
            version_major: 1,
            version_minor: 0,
            flags,
            num_samples: self.samples,
            num_fields: self.encoder.fields.len() as u16,
            page_size: self.opts.page_size,
            field_desc_ptr: FIELD_DESC_PTR,
            metadata_ptr,
            data_ptr: self.data_ptr,
            alloc_table_ptr,
            data_crc32: if self.opts.checksummed {
                self.crc.clone().finish().value().unwrap_or(0) as u32
            } else {
                0
            },
        };
        self.out.seek(SeekFrom::Start(9))?;
        self.out.write_all(&header.to_bytes())?;
        let f = self
            .out
            .into_inner()
            .map_err(|e| Error::from(e.into_error()))?;
        f.finish()?;
        Ok(())
    }
}

/// The zstd level of compressed values (the reference writer's).
const ZSTD_LEVEL: i32 = 3;

/// Refuses a stored value MLDF cannot point at (sizes are 32-bit).
fn stored_size(n: usize) -> Result<()> {
    if n > u32::MAX as usize {
        return Err(arg("a stored value above 2^32-1 bytes"));
    }
    Ok(())
}

/// Encodes samples for one [`Writer`] on any thread: checks each value
/// against its field, builds the sample's record and its stored values
/// (zstd frames when the file is compressed) into an [`Encoded`], which
/// the writer then writes with [`Writer::add_encoded`]. Cheap to clone;
/// made by [`Writer::encoder`].
///
/// ```no_run
/// use dataformats_mldf::{Encoded, Field, FieldType, FieldValue, Writer, WriterOptions};
/// let opts = WriterOptions { compressed: true, ..Default::default() };
/// let mut w = Writer::create("out.mldf", vec![Field::new("text", FieldType::TextRaw)], opts)?;
/// let enc = w.encoder();
/// // On another thread:
/// let mut block = Encoded::default();
/// for (i, t) in ["a", "bb", "ccc"].into_iter().enumerate() {
///     enc.encode(i as u64, &[FieldValue::Text(t)], &mut block)?;
/// }
/// // Back on the writer's thread, blocks in order:
/// w.add_encoded(&block)?;
/// w.finish()?;
/// # Ok::<(), dataformats_mldf::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SampleEncoder {
    fields: std::sync::Arc<[Field]>,
    compressed: bool,
    row_size: usize,
}

/// Where one stored value of an [`Encoded`] is.
#[derive(Debug, Clone, Copy)]
struct StoredValue {
    /// Its bytes in `data`.
    start: usize,
    end: usize,
    /// Its record's place in the sample's row.
    rec_at: usize,
}

/// Samples encoded by a [`SampleEncoder`], waiting to be written in
/// order by [`Writer::add_encoded`]; reusable after [`Encoded::clear`].
#[derive(Debug, Clone, Default)]
pub struct Encoded {
    fields: usize,
    row_size: usize,
    compressed: bool,
    /// The stored values, back to back.
    data: Vec<u8>,
    /// The records of every sample, back to back (pointers not yet set).
    rows: Vec<u8>,
    values: Vec<StoredValue>,
    /// Where each sample's values end in `values`.
    samples: Vec<usize>,
}

impl Encoded {
    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no sample is held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Bytes of values to store (after compression).
    pub fn stored_bytes(&self) -> usize {
        self.data.len()
    }

    /// Forgets every sample, keeping the memory.
    pub fn clear(&mut self) {
        self.data.clear();
        self.rows.clear();
        self.values.clear();
        self.samples.clear();
    }
}

impl SampleEncoder {
    /// Checks `values` (one per field, in field order) and adds them to
    /// `out` as one more sample; `sample` is the sample's number, for
    /// errors. A refused sample leaves `out` as it was.
    pub fn encode(&self, sample: u64, values: &[FieldValue<'_>], out: &mut Encoded) -> Result<()> {
        if out.is_empty() {
            out.fields = self.fields.len();
            out.row_size = self.row_size;
            out.compressed = self.compressed;
        } else if out.fields != self.fields.len()
            || out.row_size != self.row_size
            || out.compressed != self.compressed
        {
            return Err(arg("the block holds samples encoded for another writer"));
        }
        let (data, rows, stored) = (out.data.len(), out.rows.len(), out.values.len());
        let mut row = std::mem::take(&mut out.rows);
        let compressed = self.compressed;
        let (buf, list) = (&mut out.data, &mut out.values);
        let r = self.encode_row(sample, values, &mut row, |payload, rec_at| {
            let start = buf.len();
            if compressed {
                codec::compress_append(Codec::Zstd, &payload, Some(ZSTD_LEVEL), buf)
                    .map_err(|e| arg(e.to_string()))?;
            } else {
                buf.extend_from_slice(&payload);
            }
            stored_size(buf.len() - start)?;
            list.push(StoredValue {
                start,
                end: buf.len(),
                rec_at: rec_at - rows,
            });
            Ok(())
        });
        out.rows = row;
        match r {
            Ok(()) => {
                out.samples.push(out.values.len());
                Ok(())
            }
            Err(e) => {
                out.data.truncate(data);
                out.rows.truncate(rows);
                out.values.truncate(stored);
                Err(e)
            }
        }
    }

    /// Checks `values` against the fields and appends the sample's record
    /// to `row`; each value to store goes to `store` with where its record
    /// sits in `row`.
    fn encode_row<'v>(
        &self,
        sample: u64,
        values: &[FieldValue<'v>],
        row: &mut Vec<u8>,
        mut store: impl FnMut(Cow<'v, [u8]>, usize) -> Result<()>,
    ) -> Result<()> {
        if self.fields.is_empty() {
            // Readers refuse samples without fields (§9.1).
            return Err(arg("a file without fields cannot hold samples"));
        }
        if values.len() != self.fields.len() {
            return Err(arg(format!(
                "{} value(s) for {} field(s)",
                values.len(),
                self.fields.len()
            )));
        }
        for (f, v) in self.fields.iter().zip(values) {
            let loc = |e: Error| e.in_value(sample, &f.name);
            let rec_at = row.len();
            let size = f.ty.record_size().unwrap_or(0) as usize;
            row.resize(rec_at + size, 0);
            let rec = row.get_mut(rec_at..).unwrap_or_default();
            match encode(f, v, rec).map_err(loc)? {
                Some(p) if !p.is_empty() => store(p, rec_at).map_err(loc)?,
                _ => {}
            }
            if f.nullable {
                let present = u8::from(!matches!(v, FieldValue::Missing));
                row.push(present);
                row.extend_from_slice(&[0u8; 7]);
            }
        }
        Ok(())
    }
}

fn zero_fill(out: &mut impl Write, pos: &mut u64, to: u64) -> Result<()> {
    let z = [0u8; 4096];
    while *pos < to {
        let n = (to - *pos).min(4096) as usize;
        out.write_all(z.get(..n).unwrap_or_default())?;
        *pos += n as u64;
    }
    Ok(())
}

/// The record (without trailer) and the payload of one value, checked
/// against the field (§11.1's refusals).
/// A record and the payload it points at.
/// Checks `v` against field `f` and writes its record into `rec` (the
/// field's record size, zeroed); the payload to store, if any.
fn encode<'a>(f: &Field, v: &FieldValue<'a>, rec: &mut [u8]) -> Result<Option<Cow<'a, [u8]>>> {
    let bad = |m: String| Err(arg(format!("field {:?} ({}): {m}", f.name, f.ty.name())));
    let put = |rec: &mut [u8], at: usize, b: &[u8]| {
        if let Some(d) = rec.get_mut(at..at + b.len()) {
            d.copy_from_slice(b);
        }
    };
    let sized = |rec: &mut [u8], data: &[u8]| -> Result<()> {
        let n = u32::try_from(data.len()).map_err(|_| arg("a value above 2^32-1 bytes"))?;
        if let Some(d) = rec.get_mut(8..12) {
            d.copy_from_slice(&n.to_le_bytes());
        }
        Ok(())
    };
    let payload: Option<&'a [u8]> = match (&f.ty, *v) {
        (_, FieldValue::Missing) => {
            if !f.nullable {
                return bad("a missing value in a field that is not NULLABLE".into());
            }
            None
        }
        (FieldType::Int, FieldValue::Int(x)) => {
            put(rec, 0, &x.to_le_bytes());
            None
        }
        (FieldType::Float, FieldValue::Float(x)) => {
            put(rec, 0, &x.to_bits().to_le_bytes());
            None
        }
        (FieldType::Bytes, FieldValue::Bytes(b)) => Some(b),
        (FieldType::NdArray { .. }, FieldValue::NdArray(b)) => {
            let nb = f.nbytes().unwrap_or(0);
            if b.len() as u64 != nb {
                return bad(format!("{} bytes, the dtype and shape need {nb}", b.len()));
            }
            Some(b)
        }
        (FieldType::Json, FieldValue::Json(t)) => {
            if t.is_empty() {
                return bad("an empty JSON text".into());
            }
            if let Err(e) = json::check(t.as_bytes()) {
                return bad(format!("JSON: {e}"));
            }
            Some(t.as_bytes())
        }
        (
            FieldType::ImageRaw | FieldType::ImageJpeg { .. } | FieldType::ImagePng,
            FieldValue::Image {
                height,
                width,
                channels,
                data,
            },
        ) => {
            if height == 0 || width == 0 || !matches!(channels, 1 | 3 | 4) {
                return bad(format!("image {width}x{height} with {channels} channels"));
            }
            let mode = match f.ty {
                FieldType::ImageRaw => {
                    let need = u64::from(height) * u64::from(width) * u64::from(channels);
                    if data.len() as u64 != need {
                        return bad(format!(
                            "{} pixel bytes, {width}x{height}x{channels} needs {need}",
                            data.len()
                        ));
                    }
                    0
                }
                FieldType::ImageJpeg { .. } => {
                    if let Err(e) = image::check_jpeg(data, height, width, channels) {
                        return bad(e);
                    }
                    1
                }
                _ => {
                    if let Err(e) = image::check_png(data, height, width, channels) {
                        return bad(e);
                    }
                    2
                }
            };
            put(rec, 12, &height.to_le_bytes());
            put(rec, 14, &width.to_le_bytes());
            put(rec, 16, &[channels, mode]);
            Some(data)
        }
        (
            FieldType::AudioWaveform { float },
            FieldValue::Audio {
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
                data,
            },
        ) => {
            let bits_ok = if *float {
                bit_depth == 32
            } else {
                matches!(bit_depth, 8 | 16 | 24 | 32)
            };
            let need = u64::from(num_samples) * u64::from(num_channels) * u64::from(bit_depth / 8);
            if codec != 0
                || num_channels == 0
                || sample_rate == 0
                || !bits_ok
                || data.len() as u64 != need
            {
                return bad(format!(
                    "PCM codec {codec}, {num_channels} channels at {sample_rate} Hz, {bit_depth} bits, {} bytes for {num_samples} frames",
                    data.len()
                ));
            }
            audio(
                rec,
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
            );
            Some(data)
        }
        (
            FieldType::AudioCompressed,
            FieldValue::Audio {
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
                data,
            },
        ) => {
            if !matches!(codec, 1..=3)
                || data.is_empty()
                || (codec == 1 && !data.starts_with(b"fLaC"))
            {
                return bad(format!(
                    "compressed audio codec {codec} with {} bytes",
                    data.len()
                ));
            }
            audio(
                rec,
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
            );
            Some(data)
        }
        (FieldType::TextRaw, FieldValue::Text(t)) => Some(t.as_bytes()),
        (FieldType::TextTokenized { .. }, FieldValue::Tokens { encoding, ids }) => {
            let bytes: Vec<u8> = match encoding {
                1 => ids.iter().flat_map(|x| x.to_le_bytes()).collect(),
                2 => {
                    let mut b = Vec::with_capacity(ids.len() * 2);
                    for &x in ids {
                        let Ok(s) = i16::try_from(x) else {
                            return bad(format!("token id {x} does not fit encoding 2 (i16)"));
                        };
                        b.extend_from_slice(&s.to_le_bytes());
                    }
                    b
                }
                other => return bad(format!("token encoding {other}")),
            };
            put(rec, 12, &(ids.len().min(65535) as u16).to_le_bytes());
            put(rec, 14, &[encoding]);
            sized(rec, &bytes)?;
            return Ok(Some(Cow::Owned(bytes)));
        }
        _ => return bad("the value does not match the field's type".into()),
    };
    if let Some(p) = payload {
        sized(rec, p)?;
    }
    Ok(payload.map(Cow::Borrowed))
}

fn audio(rec: &mut [u8], frames: u32, rate: u32, ch: u16, bits: u8, codec: u8) {
    let mut put = |at: usize, b: &[u8]| {
        if let Some(d) = rec.get_mut(at..at + b.len()) {
            d.copy_from_slice(b);
        }
    };
    put(12, &frames.to_le_bytes());
    put(16, &rate.to_le_bytes());
    put(20, &ch.to_le_bytes());
    put(22, &[bits, codec]);
}
