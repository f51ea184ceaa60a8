//! Opening, reading one value, and validating (`mldf.md` §8, §9).

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use dataformats_core::{ChecksumKind, Limits, ReadOptions, Source, codec};

use crate::error::{Error, ErrorKind, Result};
use dataformats_core::parse::run;
use dataformats_core::plain;

use crate::format::{
    ALLOC_ENTRY_SIZE, Alloc, DESC_SIZE, FLAG_CHECKSUMMED, FLAG_COMPRESSED, Field, FieldType,
    Header, Record, TRAILER_SIZE, check_header, parse_field,
};
use crate::parse;
use crate::{image, json};

/// One value as read.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// A NULLABLE field's missing value.
    Missing,
    /// INT.
    Int(i64),
    /// FLOAT (bits kept).
    Float(f64),
    /// BYTES.
    Bytes(Cow<'a, [u8]>),
    /// NDARRAY: the C-order little-endian element bytes (borrowed from the
    /// file when uncompressed; 8-aligned there).
    NdArray(Cow<'a, [u8]>),
    /// JSON text (checked).
    Json(Cow<'a, str>),
    /// An image: the record's dimensions and the payload.
    Image {
        /// Height.
        height: u16,
        /// Width.
        width: u16,
        /// Channels (1, 3 or 4).
        channels: u8,
        /// 0 raw, 1 JPEG, 2 PNG.
        mode: u8,
        /// Pixels (raw) or the encoded file.
        data: Cow<'a, [u8]>,
    },
    /// Audio: the record's parameters and the payload.
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
        /// PCM frames or the stream.
        data: Cow<'a, [u8]>,
    },
    /// TEXT_RAW.
    Text(Cow<'a, str>),
    /// TEXT_TOKENIZED: the encoding (1 = i32, 2 = i16), the stored count and the id bytes.
    Tokens {
        /// 1 (i32 ids) or 2 (i16 ids).
        encoding: u8,
        /// As stored (saturates at 65535).
        num_tokens: u16,
        /// Little-endian ids.
        data: Cow<'a, [u8]>,
    },
    /// A present value of an opaque field: its record bytes.
    Opaque(Cow<'a, [u8]>),
}

impl Value<'_> {
    /// The value with its bytes copied, free of the reader's borrow.
    pub fn into_owned(self) -> Value<'static> {
        let o = |c: Cow<'_, [u8]>| Cow::Owned(c.into_owned());
        match self {
            Value::Missing => Value::Missing,
            Value::Int(x) => Value::Int(x),
            Value::Float(x) => Value::Float(x),
            Value::Bytes(b) => Value::Bytes(o(b)),
            Value::NdArray(b) => Value::NdArray(o(b)),
            Value::Json(t) => Value::Json(Cow::Owned(t.into_owned())),
            Value::Image {
                height,
                width,
                channels,
                mode,
                data,
            } => Value::Image {
                height,
                width,
                channels,
                mode,
                data: o(data),
            },
            Value::Audio {
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
                data,
            } => Value::Audio {
                num_samples,
                sample_rate,
                num_channels,
                bit_depth,
                codec,
                data: o(data),
            },
            Value::Text(t) => Value::Text(Cow::Owned(t.into_owned())),
            Value::Tokens {
                encoding,
                num_tokens,
                data,
            } => Value::Tokens {
                encoding,
                num_tokens,
                data: o(data),
            },
            Value::Opaque(b) => Value::Opaque(o(b)),
        }
    }

    /// TEXT_TOKENIZED ids; `None` for another value, or one whose bytes
    /// are not whole ids (the reader never returns such a value).
    pub fn token_ids(&self) -> Option<Vec<i32>> {
        match self {
            Value::Tokens {
                encoding: 1, data, ..
            } => plain::to_vec::<i32>(data).ok(),
            Value::Tokens {
                encoding: 2, data, ..
            } => plain::to_vec::<i16>(data)
                .ok()
                .map(|v| v.into_iter().map(i32::from).collect()),
            _ => None,
        }
    }
}

/// An open MLDF file (`mldf.md` §9.1 done: header, descriptors, regions).
#[derive(Debug)]
pub struct Reader {
    src: Source,
    header: Header,
    fields: Vec<Field>,
    offsets: Vec<u32>,
    row_size: u64,
    num_allocs: u64,
    data_end: u64,
    newer: bool,
    warnings: Vec<String>,
    limits: Limits,
}

/// `data` as text, or a `BadValue` at `at` naming the first bad byte.
fn utf8(data: Cow<'_, [u8]>, at: u64) -> Result<Cow<'_, str>> {
    let bad = |e: std::str::Utf8Error| bad_value(format!("text is not UTF-8: {e}")).at(at);
    Ok(match data {
        Cow::Borrowed(b) => Cow::Borrowed(std::str::from_utf8(b).map_err(bad)?),
        Cow::Owned(v) => Cow::Owned(String::from_utf8(v).map_err(|e| bad(e.utf8_error()))?),
    })
}

/// What [`Reader::fixed_cells`] hands each value to.
type Each<'a, E> = dyn FnMut(Option<&[u8]>) -> std::result::Result<(), E> + 'a;

fn bad_value(m: impl Into<Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::BadValue, m)
}

impl Reader {
    /// Opens the file at `path` (positioned reads).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(Source::open(path)?, ReadOptions::default())
    }

    /// Opens an in-memory file.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src` (§9.1).
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        let limits = opts.limits;
        let n = src.len();
        let first = src.bytes(0, n.min(73))?;
        let (header, mut warnings) = check_header(&first, n)?;
        let h = header;
        let newer = h.version_minor > 0;
        let descs_end = u64::from(h.num_fields)
            .checked_mul(DESC_SIZE)
            .and_then(|x| x.checked_add(h.field_desc_ptr))
            .unwrap_or(u64::MAX);
        if descs_end > h.alloc_table_ptr {
            return Err(Error::new(
                ErrorKind::OutOfBounds,
                format!(
                    "{} descriptors from {} pass the allocation table at {}",
                    h.num_fields, h.field_desc_ptr, h.alloc_table_ptr
                ),
            )
            .at(h.field_desc_ptr));
        }
        let descs = src.bytes(h.field_desc_ptr, descs_end - h.field_desc_ptr)?;
        let mut fields: Vec<Field> = Vec::with_capacity(usize::from(h.num_fields));
        for (k, d) in descs.chunks_exact(DESC_SIZE as usize).enumerate() {
            let at = h.field_desc_ptr + DESC_SIZE * k as u64;
            let (f, warn) = parse_field(d, at, newer)?;
            if fields.iter().any(|g| g.name == f.name) {
                return Err(Error::new(
                    ErrorKind::BadFieldDescriptor,
                    format!("field name {:?} used twice", f.name),
                )
                .at(at));
            }
            warnings.extend(warn);
            fields.push(f);
        }
        let mut offsets = Vec::with_capacity(fields.len());
        let mut row_size = 0u64;
        for f in &fields {
            offsets.push(row_size as u32);
            row_size += u64::from(f.metadata_size);
        }
        let meta_end = h
            .num_samples
            .checked_mul(row_size)
            .and_then(|x| x.checked_add(h.metadata_ptr))
            .filter(|&e| e <= h.alloc_table_ptr)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "{} rows of {row_size} bytes from {} pass the allocation table at {}",
                        h.num_samples, h.metadata_ptr, h.alloc_table_ptr
                    ),
                )
                .at(h.metadata_ptr)
            })?;
        let num_allocs = (n - h.alloc_table_ptr) / ALLOC_ENTRY_SIZE;
        let data_end = if num_allocs == 0 {
            h.data_ptr
        } else {
            let at = n - ALLOC_ENTRY_SIZE;
            let Alloc { ptr, size } =
                run(&src.bytes(at, ALLOC_ENTRY_SIZE)?, at, parse::alloc_entry)?;
            let end = ptr.saturating_add(u64::from(size));
            if ptr < h.data_ptr || end > h.alloc_table_ptr {
                return Err(Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "last allocation [{ptr}, {end}) outside [{}, {})",
                        h.data_ptr, h.alloc_table_ptr
                    ),
                )
                .at(at));
            }
            end
        };
        let regions = [
            ("field descriptors", h.field_desc_ptr, descs_end),
            ("metadata table", h.metadata_ptr, meta_end),
            ("data region", h.data_ptr, data_end),
        ];
        for (i, a) in regions.iter().enumerate() {
            for b in regions.iter().skip(i + 1) {
                if a.1 < a.2 && b.1 < b.2 && a.1 < b.2 && b.1 < a.2 {
                    return Err(Error::new(
                        ErrorKind::Overlap,
                        format!(
                            "{} [{}, {}) and {} [{}, {}) overlap",
                            a.0, a.1, a.2, b.0, b.1, b.2
                        ),
                    )
                    .at(b.1));
                }
            }
        }
        Ok(Reader {
            src,
            header: h,
            fields,
            offsets,
            row_size,
            num_allocs,
            data_end,
            newer,
            warnings,
            limits,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The fields, in column order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Index of the field named `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// The number of samples (records).
    pub fn len(&self) -> u64 {
        self.header.num_samples
    }

    /// True when the file holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per metadata row.
    pub fn row_size(&self) -> u64 {
        self.row_size
    }

    /// Allocation-table entries.
    pub fn num_allocations(&self) -> u64 {
        self.num_allocs
    }

    /// End of the data region.
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Warnings from opening (newer minor version, undefined flags, opaque fields).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// Allocation-table entry `k`.
    pub fn allocation(&self, k: u64) -> Result<Alloc> {
        let at = self.header.alloc_table_ptr + ALLOC_ENTRY_SIZE * k;
        Ok(run(
            &self.src.bytes(at, ALLOC_ENTRY_SIZE)?,
            at,
            parse::alloc_entry,
        )?)
    }

    /// The allocation whose pointer is `ptr`, and its index: entry `hint`
    /// is tried first (validation passes the entry after the last one
    /// found, which is the one a file written in sample order holds next),
    /// then a binary search of the table, on the bytes in place when the
    /// file is in memory.
    fn find_alloc(&self, ptr: u64, hint: u64) -> Result<Option<(u64, Alloc)>> {
        if hint < self.num_allocs {
            let a = self.allocation(hint)?;
            if a.ptr == ptr {
                return Ok(Some((hint, a)));
            }
        }
        let table = usize::try_from(self.header.alloc_table_ptr)
            .ok()
            .zip(usize::try_from(self.num_allocs * ALLOC_ENTRY_SIZE).ok())
            .and_then(|(at, len)| self.src.as_slice()?.get(at..at.checked_add(len)?));
        let (mut lo, mut hi) = (0u64, self.num_allocs);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // An entry's pointer is its first eight bytes.
            let in_place = table.and_then(|t| {
                let at = usize::try_from(mid * ALLOC_ENTRY_SIZE).ok()?;
                Some(u64::from_le_bytes(t.get(at..at + 8)?.try_into().ok()?))
            });
            let at = match in_place {
                Some(p) => p,
                None => self.allocation(mid)?.ptr,
            };
            match at.cmp(&ptr) {
                std::cmp::Ordering::Equal => return Ok(Some((mid, self.allocation(mid)?))),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }

    /// The metadata record of field `j` in sample `i` (trailer included).
    pub fn record(&self, i: u64, j: usize) -> Result<Cow<'_, [u8]>> {
        let (f, at) = self.record_at(i, j)?;
        Ok(self.src.bytes(at, u64::from(f.metadata_size))?)
    }

    /// Field `j` and the offset of its record in sample `i`.
    pub(crate) fn record_at(&self, i: u64, j: usize) -> Result<(&Field, u64)> {
        let (Some(f), Some(&offset)) = (self.fields.get(j), self.offsets.get(j)) else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("no field {j}"),
            ));
        };
        if i >= self.header.num_samples {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("no sample {i}"),
            ));
        }
        // In the file: open checked that every row ends before the allocation table.
        Ok((
            f,
            self.header.metadata_ptr + i * self.row_size + u64::from(offset),
        ))
    }

    /// The file bytes holding the values of NDARRAY field `j` for samples
    /// `rows`, when the file is in memory, uncompressed, and those values
    /// are all present, non-empty and stored back to back in sample order:
    /// the values are then that one range, split evenly. `None` otherwise
    /// (read them one by one with [`value`](Reader::value), which also says
    /// what is wrong with a bad one).
    ///
    /// One pass over the field's metadata records; no value byte is read.
    /// The per-value checks that apply to such values (presence byte,
    /// `data_size` against the shape, the data region's bounds) all hold
    /// when this returns a range.
    pub fn contiguous_values(&self, j: usize, rows: Range<u64>) -> Result<Option<Range<u64>>> {
        let (Some(f), Some(&offset)) = (self.fields.get(j), self.offsets.get(j)) else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("no field {j}"),
            ));
        };
        let offset = u64::from(offset);
        if rows.start > rows.end || rows.end > self.header.num_samples {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "samples {}..{} are not all in the file's {}",
                    rows.start, rows.end, self.header.num_samples
                ),
            ));
        }
        let (FieldType::NdArray { .. }, Some(nb), Some(all)) =
            (&f.ty, f.nbytes(), self.src.as_slice())
        else {
            return Ok(None);
        };
        if rows.is_empty() || nb == 0 || self.header.flags & FLAG_COMPRESSED != 0 {
            return Ok(None);
        }
        let mut start = None;
        let mut end = 0u64;
        for i in rows {
            let at = i
                .checked_mul(self.row_size)
                .and_then(|x| x.checked_add(self.header.metadata_ptr + offset));
            let Some(rec) = at
                .and_then(|a| usize::try_from(a).ok())
                .and_then(|a| all.get(a..a.checked_add(f.metadata_size as usize)?))
            else {
                return Ok(None);
            };
            // An NDARRAY row is a BytesMeta, then the trailer if NULLABLE.
            let Ok((trailer, meta)) = parse::bytes_meta(rec) else {
                return Ok(None);
            };
            if f.nullable && !matches!(parse::trailer(trailer), Ok((_, 1))) {
                return Ok(None);
            }
            let (ptr, size) = (meta.data_ptr, meta.data_size);
            if u64::from(size) != nb || (start.is_some() && ptr != end) {
                return Ok(None);
            }
            start.get_or_insert(ptr);
            end = ptr.saturating_add(nb);
        }
        Ok(start
            .filter(|&s| s >= self.header.data_ptr && end <= self.data_end)
            .map(|s| s..end))
    }

    /// Reads field `j` of sample `i` with the per-value checks of §8: one
    /// metadata read and at most one data read.
    pub fn value(&self, i: u64, j: usize) -> Result<Value<'_>> {
        // No allocation on the way to a value: the name is looked up only on error.
        self.value_checked(i, j, None).map_err(|e| {
            let name = self.fields.get(j).map_or("", |f| f.name.as_str());
            e.in_value(i, name)
        })
    }

    /// Reads field `named` of sample `i`.
    pub fn value_of(&self, i: u64, named: &str) -> Result<Value<'_>> {
        let j = self
            .field_index(named)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("no field {named:?}")))?;
        self.value(i, j)
    }

    /// The values of INT, FLOAT or NDARRAY field `j` for samples `rows`, in
    /// order, each handed to `each` as its bytes (`None` for a missing
    /// value; INT and FLOAT as their 8 little-endian bytes): the values
    /// [`value`](Reader::value) gives, and on a bad one the error it gives
    /// (passed through `fail`), after the values before it.
    ///
    /// In an uncompressed file held in memory, a record whose bytes plainly
    /// pass the checks (presence byte 1, or 0 with a zero record; an
    /// NDARRAY's `data_size` as its shape needs and its bytes inside the
    /// data region) is read in place with no further work; any other
    /// record, and every record of other files, goes through
    /// [`value`](Reader::value).
    pub fn fixed_cells<E>(
        &self,
        j: usize,
        rows: Range<u64>,
        fail: impl Fn(Error) -> E,
        mut each: impl FnMut(Option<&[u8]>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let Some(f) = self.fields.get(j) else {
            return Err(fail(Error::new(
                ErrorKind::InvalidArgument,
                format!("no field {j}"),
            )));
        };
        // What a record in place must hold: an 8-byte scalar, or an
        // NDARRAY's pointer to `nb` bytes.
        let (need, nb) = match (&f.ty, f.nbytes()) {
            (FieldType::Int | FieldType::Float, _) => (8, None),
            (FieldType::NdArray { .. }, Some(nb)) if nb > 0 => (16, Some(nb)),
            (FieldType::NdArray { .. }, _) => (usize::MAX, None),
            (ty, _) => {
                return Err(fail(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("field {j} is {}, not a fixed-width type", ty.name()),
                )));
            }
        };
        let slow = |i: u64, each: &mut Each<'_, E>| match self.value(i, j).map_err(&fail)? {
            Value::Missing => each(None),
            Value::Int(x) => each(Some(&x.to_le_bytes())),
            Value::Float(x) => each(Some(&x.to_le_bytes())),
            Value::NdArray(b) => each(Some(&b)),
            other => Err(fail(bad_value(format!(
                "sample {i}: {other:?} in a {} field",
                f.ty.name()
            )))),
        };
        let size = f.metadata_size as usize;
        let rec_len = size.saturating_sub(if f.nullable { TRAILER_SIZE as usize } else { 0 });
        let in_place = self
            .src
            .as_slice()
            .filter(|_| self.header.flags & FLAG_COMPRESSED == 0 && rec_len >= need);
        let (Some(all), Some(&offset)) = (in_place, self.offsets.get(j)) else {
            for i in rows {
                slow(i, &mut each)?;
            }
            return Ok(());
        };
        let first = self.header.metadata_ptr + u64::from(offset);
        let (lo, hi) = (self.header.data_ptr, self.data_end);
        for i in rows {
            let at = (i < self.header.num_samples)
                .then(|| usize::try_from(first + i * self.row_size).ok())
                .flatten();
            let Some(row) = at.and_then(|a| all.get(a..a.checked_add(size)?)) else {
                slow(i, &mut each)?;
                continue;
            };
            let (rec, trailer) = row.split_at(rec_len);
            if f.nullable {
                match trailer.first() {
                    Some(1) => {}
                    Some(0) if rec.iter().all(|&b| b == 0) => {
                        each(None)?;
                        continue;
                    }
                    _ => {
                        slow(i, &mut each)?;
                        continue;
                    }
                }
            }
            let cell = match nb {
                None => rec.get(..8),
                Some(nb) => {
                    let ptr = rec.first_chunk::<8>().map(|b| u64::from_le_bytes(*b));
                    let n = rec
                        .get(8..12)
                        .and_then(|b| <[u8; 4]>::try_from(b).ok())
                        .map(|b| u64::from(u32::from_le_bytes(b)));
                    match (ptr, n) {
                        (Some(ptr), Some(n)) if n == nb && ptr >= lo => ptr
                            .checked_add(nb)
                            .filter(|&end| end <= hi)
                            .and_then(|end| {
                                all.get(usize::try_from(ptr).ok()?..usize::try_from(end).ok()?)
                            }),
                        _ => None,
                    }
                }
            };
            match cell {
                Some(c) => each(Some(c))?,
                None => slow(i, &mut each)?,
            }
        }
        Ok(())
    }

    /// The value with the checks of §9.2 step 3; `seen` (validation) tracks
    /// referenced allocations.
    fn value_checked(
        &self,
        i: u64,
        j: usize,
        mut seen: Option<&mut Seen<'_>>,
    ) -> Result<Value<'_>> {
        let (f, rec_at) = self.record_at(i, j)?;
        let full = self.src.bytes(rec_at, u64::from(f.metadata_size))?;
        let rec_len = u64::from(f.metadata_size) - if f.nullable { TRAILER_SIZE } else { 0 };
        let rec = full.get(..rec_len as usize).ok_or_else(|| {
            Error::new(ErrorKind::OutOfBounds, "record shorter than its trailer").at(rec_at)
        })?;
        // a. The trailer.
        if f.nullable {
            let trailer_at = rec_at + rec_len;
            let rest = full.get(rec_len as usize..).unwrap_or_default();
            match run(rest, trailer_at, parse::trailer)? {
                0 => {
                    if rec.iter().any(|&b| b != 0) {
                        return Err(bad_value("a missing value with a non-zero record").at(rec_at));
                    }
                    return Ok(Value::Missing);
                }
                1 => {}
                other => return Err(bad_value(format!("presence byte {other}")).at(trailer_at)),
            }
        }
        let Some(layout) = parse::record(&f.ty) else {
            return Ok(Value::Opaque(Cow::Owned(rec.to_vec())));
        };
        let record = run(rec, rec_at, layout)?;
        let (data_ptr, data_size) = match record {
            Record::Scalar(v) if matches!(f.ty, FieldType::Float) => {
                return Ok(Value::Float(f64::from_bits(v)));
            }
            Record::Scalar(v) => return Ok(Value::Int(v as i64)),
            Record::Bytes(m) => (m.data_ptr, m.data_size),
            Record::Image(m) => (m.data_ptr, m.data_size),
            Record::Audio(m) => (m.data_ptr, m.data_size),
            Record::Text(m) => (m.data_ptr, m.data_size),
        };
        let disc = |allowed: &[u8], v: u8, what: &str| -> Result<()> {
            if allowed.contains(&v) {
                Ok(())
            } else {
                let kind = if self.newer {
                    ErrorKind::Unsupported
                } else {
                    ErrorKind::BadValue
                };
                Err(Error::new(
                    kind,
                    format!("{what} {v} is not defined for {}", f.ty.name()),
                )
                .at(rec_at))
            }
        };
        let rule = |ok: bool, m: &dyn Fn() -> String| -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(bad_value(m()).at(rec_at))
            }
        };
        // b. Record rules, discriminator first.
        match (&f.ty, record) {
            (FieldType::NdArray { .. }, _) => {
                let nb = f.nbytes();
                rule(nb == Some(u64::from(data_size)), &|| {
                    format!(
                        "NDARRAY data_size {data_size}, the shape needs {}",
                        nb.map_or_else(|| "more than 2^64".into(), |n| n.to_string())
                    )
                })?;
            }
            (FieldType::Json, _) => rule(data_size >= 1, &|| "empty JSON text".into())?,
            (ty, Record::Image(m)) => {
                let want = match ty {
                    FieldType::ImageRaw => 0,
                    FieldType::ImageJpeg { .. } => 1,
                    _ => 2,
                };
                disc(&[want], m.mode, "image mode")?;
                let (h, w, c) = (m.height, m.width, m.channels);
                rule(h >= 1 && w >= 1 && matches!(c, 1 | 3 | 4), &|| {
                    format!("image {w}x{h} with {c} channels")
                })?;
                if want == 0 {
                    let px = u64::from(h) * u64::from(w) * u64::from(c);
                    rule(u64::from(data_size) == px, &|| {
                        format!("raw image data_size {data_size}, {w}x{h}x{c} needs {px}")
                    })?;
                } else {
                    rule(data_size >= 1, &|| "empty encoded image".into())?;
                }
            }
            (FieldType::AudioWaveform { float }, Record::Audio(m)) => {
                disc(&[0], m.codec, "audio codec")?;
                let (frames, rate, ch, bits) =
                    (m.num_samples, m.sample_rate, m.num_channels, m.bit_depth);
                rule(ch >= 1, &|| format!("{ch} audio channels"))?;
                rule(rate >= 1, &|| format!("sample rate {rate}"))?;
                let bits_ok = if *float {
                    bits == 32
                } else {
                    matches!(bits, 8 | 16 | 24 | 32)
                };
                rule(bits_ok, &|| format!("bit depth {bits}"))?;
                let need = u64::from(frames) * u64::from(ch) * u64::from(bits / 8);
                rule(u64::from(data_size) == need, &|| {
                    format!("PCM data_size {data_size}, the record needs {need}")
                })?;
            }
            (_, Record::Audio(m)) => {
                disc(&[1, 2, 3], m.codec, "audio codec")?;
                rule(data_size >= 1, &|| "empty compressed audio".into())?;
            }
            (FieldType::TextRaw, Record::Text(m)) => {
                disc(&[0], m.encoding, "text encoding")?;
                rule(m.num_tokens == 0, &|| {
                    format!("TEXT_RAW num_tokens {}", m.num_tokens)
                })?;
            }
            (_, Record::Text(m)) => {
                disc(&[1, 2], m.encoding, "token encoding")?;
                let width = if m.encoding == 1 { 4 } else { 2 };
                rule(data_size.is_multiple_of(width), &|| {
                    format!("{data_size} token bytes are not whole ids of {width}")
                })?;
                let count = (data_size / width).min(65535) as u16;
                rule(m.num_tokens == count, &|| {
                    format!("num_tokens {}, the data holds {count}", m.num_tokens)
                })?;
            }
            _ => {}
        }
        // c. Pointer rules.
        let data: Cow<'_, [u8]> = if data_size == 0 {
            if data_ptr != 0 {
                return Err(
                    bad_value(format!("an empty value with data_ptr {data_ptr}")).at(rec_at),
                );
            }
            Cow::Borrowed(&[])
        } else {
            let compressed = self.header.flags & FLAG_COMPRESSED != 0;
            let entry = if compressed || seen.is_some() {
                let hint = seen.as_ref().map_or(u64::MAX, |s| s.next);
                match self.find_alloc(data_ptr, hint)? {
                    Some(e) => Some(e),
                    None => {
                        return Err(
                            bad_value(format!("data_ptr {data_ptr} is no allocation")).at(rec_at)
                        );
                    }
                }
            } else {
                None
            };
            if let (Some(seen), Some((k, _))) = (seen.as_mut(), entry)
                && !seen.mark(k)
            {
                return Err(Error::new(
                    ErrorKind::BadAllocTable,
                    format!("allocation {k} at {data_ptr} is referenced twice"),
                )
                .at(rec_at));
            }
            let stored = entry.map_or(u64::from(data_size), |(_, a)| u64::from(a.size));
            if !compressed && stored != u64::from(data_size) {
                return Err(
                    bad_value(format!("allocation size {stored}, data_size {data_size}"))
                        .at(rec_at),
                );
            }
            let end = data_ptr.saturating_add(stored);
            if data_ptr < self.header.data_ptr || end > self.data_end {
                return Err(Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "value bytes [{data_ptr}, {end}) outside the data region [{}, {})",
                        self.header.data_ptr, self.data_end
                    ),
                )
                .at(rec_at));
            }
            let raw = self.src.bytes(data_ptr, stored)?;
            if compressed {
                let frame = codec::zstd_frame_size(&raw)
                    .map_err(|e| bad_value(format!("zstd frame: {e}")).at(data_ptr))?;
                if frame as u64 != stored {
                    return Err(bad_value(format!(
                        "allocation of {stored} bytes holds a zstd frame of {frame} and more"
                    ))
                    .at(data_ptr));
                }
                if let Some(declared) = codec::zstd_content_size(&raw)
                    && declared != u64::from(data_size)
                {
                    return Err(bad_value(format!(
                        "zstd frame: its header declares {declared} byte(s), the record {data_size}"
                    ))
                    .at(data_ptr));
                }
                let want = self
                    .limits
                    .check_alloc("decompressed value", u64::from(data_size))?;
                let mut out = vec![0u8; want];
                codec::decompress_into(codec::Codec::Zstd, &raw, &mut out)
                    .map_err(|e| bad_value(format!("zstd frame: {e}")).at(data_ptr))?;
                Cow::Owned(out)
            } else {
                raw
            }
        };
        // d. Payload rules.
        let payload = |r: std::result::Result<(), String>| r.map_err(|m| bad_value(m).at(data_ptr));
        Ok(match (&f.ty, record) {
            (FieldType::NdArray { .. }, _) => Value::NdArray(data),
            (FieldType::Json, _) => {
                payload(json::check(&data))?;
                Value::Json(utf8(data, data_ptr)?)
            }
            (ty, Record::Image(m)) => {
                let (h, w, c) = (m.height, m.width, m.channels);
                match ty {
                    FieldType::ImageJpeg { .. } => payload(image::check_jpeg(&data, h, w, c))?,
                    FieldType::ImagePng => payload(image::check_png(&data, h, w, c))?,
                    _ => {}
                }
                Value::Image {
                    height: h,
                    width: w,
                    channels: c,
                    mode: m.mode,
                    data,
                }
            }
            (_, Record::Audio(m)) => {
                if m.codec == 1 && !data.starts_with(b"fLaC") {
                    payload(Err("FLAC stream without its fLaC signature".into()))?;
                }
                Value::Audio {
                    num_samples: m.num_samples,
                    sample_rate: m.sample_rate,
                    num_channels: m.num_channels,
                    bit_depth: m.bit_depth,
                    codec: m.codec,
                    data,
                }
            }
            (FieldType::TextRaw, _) => Value::Text(utf8(data, data_ptr)?),
            (_, Record::Text(m)) => Value::Tokens {
                encoding: m.encoding,
                num_tokens: m.num_tokens,
                data,
            },
            // BYTES (the scalars returned above).
            _ => Value::Bytes(data),
        })
    }

    /// Full validation (§9.2): the allocation table, the CRC, every value,
    /// then every allocation referenced.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the samples whose values were
    /// checked so far out of all samples.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        let h = &self.header;
        // Mapped pages go back as the passes go on: a file of gigabytes
        // checked with tens of megabytes resident.
        let mut releasing = dataformats_core::progress::Releasing::new(&self.src, progress);
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let mut prev: Option<Alloc> = None;
        for k in 0..self.num_allocs {
            let at = h.alloc_table_ptr + 16 * k;
            let a = self.allocation(k)?;
            let end = a.ptr.saturating_add(u64::from(a.size));
            if a.size == 0 {
                return Err(Error::new(
                    ErrorKind::BadAllocTable,
                    format!("allocation {k} has size 0"),
                )
                .at(at));
            }
            if a.ptr < h.data_ptr || end > h.alloc_table_ptr {
                return Err(Error::new(
                    ErrorKind::OutOfBounds,
                    format!(
                        "allocation {k} [{}, {end}) outside [{}, {})",
                        a.ptr, h.data_ptr, h.alloc_table_ptr
                    ),
                )
                .at(at));
            }
            if a.ptr % 8 != 0 {
                return Err(Error::new(
                    ErrorKind::Misaligned,
                    format!("allocation {k} at {} is not 8-aligned", a.ptr),
                )
                .at(at));
            }
            if let Some(p) = prev {
                if a.ptr <= p.ptr {
                    return Err(Error::new(
                        ErrorKind::BadAllocTable,
                        format!("allocation {k} at {} is not after {}", a.ptr, p.ptr),
                    )
                    .at(at));
                }
                if a.ptr < p.ptr + u64::from(p.size) {
                    return Err(Error::new(
                        ErrorKind::Overlap,
                        format!("allocation {k} at {} overlaps the previous one", a.ptr),
                    )
                    .at(at));
                }
            }
            prev = Some(a);
        }
        if h.flags & FLAG_CHECKSUMMED != 0 {
            let mut c = ChecksumKind::Crc32.hasher();
            let mut at = h.data_ptr;
            let mut released = at;
            while at < self.data_end {
                let n = (self.data_end - at).min(1 << 20);
                c.update(&self.src.bytes(at, n)?);
                at += n;
                if at - released >= dataformats_core::progress::RELEASE_STEP {
                    self.src.release_range(released..at);
                    released = at;
                }
            }
            self.src.release_range(released..at);
            let got = c.finish().value().unwrap_or(0) as u32;
            if got != h.data_crc32 {
                return Err(Error::new(
                    ErrorKind::ChecksumMismatch,
                    format!(
                        "data region CRC-32 0x{got:08x}, the header says 0x{:08x}",
                        h.data_crc32
                    ),
                )
                .at(65));
            }
        }
        let count = self.limits.check_count("allocations", self.num_allocs)?;
        // Every value on every core first; if that finds anything wrong,
        // again one sample after the other, which names the first fault as
        // it always has (which of two references to one allocation comes
        // second depends on the order the values are checked in).
        let unseen = match self.values_on_threads(count, progress) {
            Some(Ok(unseen)) => unseen,
            _ => {
                let mut flags = vec![false; count];
                let mut seen = Seen::new(Marks::Serial(&mut flags));
                for i in 0..h.num_samples {
                    for (j, f) in self.fields.iter().enumerate() {
                        self.value_checked(i, j, Some(&mut seen))
                            .map_err(|e| e.in_value(i, &f.name))?;
                    }
                    progress.advance(i + 1, h.num_samples);
                }
                flags.iter().position(|s| !s)
            }
        };
        let opaque = self
            .fields
            .iter()
            .any(|f| matches!(f.ty, FieldType::Opaque { .. }));
        if !opaque && let Some(k) = unseen {
            return Err(Error::new(
                ErrorKind::BadAllocTable,
                format!("allocation {k} is referenced by no value"),
            )
            .at(h.alloc_table_ptr + 16 * k as u64));
        }
        Ok(())
    }

    /// Checks every value of every sample on every core, in runs of
    /// samples: `None` when one thread would do (small files, one core),
    /// else the first allocation no value referenced, or the error one of
    /// the runs met (not necessarily the first in sample order).
    fn values_on_threads(
        &self,
        count: usize,
        progress: &mut dyn dataformats_core::Progress,
    ) -> Option<Result<Option<usize>>> {
        use std::sync::atomic::{AtomicU64, Ordering};
        const RUN: u64 = 16_384;
        let n = self.header.num_samples;
        let threads = dataformats_core::parallel::threads_for(self.data_end, 0);
        if threads < 2 || n <= RUN {
            return None;
        }
        let bits: Vec<AtomicU64> = (0..count.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let mut runs = (0..n.div_ceil(RUN)).map(|r| r * RUN..((r + 1) * RUN).min(n));
        let checked = dataformats_core::parallel::ordered(
            threads,
            || Ok(runs.next()),
            |run: std::ops::Range<u64>| -> Result<u64> {
                let end = run.end;
                let mut seen = Seen::new(Marks::Shared(&bits));
                for i in run {
                    for (j, f) in self.fields.iter().enumerate() {
                        self.value_checked(i, j, Some(&mut seen))
                            .map_err(|e| e.in_value(i, &f.name))?;
                    }
                }
                Ok(end)
            },
            |done| {
                progress.advance(done?, n);
                Ok(())
            },
        );
        Some(checked.map(|()| {
            (0..count).find(|&k| {
                let word = bits.get(k / 64).map_or(0, |w| w.load(Ordering::Relaxed));
                word & (1 << (k % 64)) == 0
            })
        }))
    }
}

/// What validation keeps as it checks values: the allocations referenced
/// so far, and the entry to look at first for the next one.
struct Seen<'a> {
    marks: Marks<'a>,
    /// The entry after the last allocation found.
    next: u64,
}

/// The allocations values referenced so far: one flag each on one thread,
/// or bits shared by the threads.
enum Marks<'a> {
    Serial(&'a mut Vec<bool>),
    Shared(&'a [std::sync::atomic::AtomicU64]),
}

impl<'a> Seen<'a> {
    fn new(marks: Marks<'a>) -> Self {
        Seen { marks, next: 0 }
    }

    /// Marks allocation `k` referenced (and looks after it for the next
    /// one): false if it already was (an index past the table is left
    /// alone; the table check refuses it before).
    fn mark(&mut self, k: u64) -> bool {
        self.next = k.saturating_add(1);
        let Ok(k) = usize::try_from(k) else {
            return true;
        };
        match &mut self.marks {
            Marks::Serial(v) => v.get_mut(k).is_none_or(|s| !std::mem::replace(s, true)),
            Marks::Shared(bits) => bits.get(k / 64).is_none_or(|w| {
                let bit = 1u64 << (k % 64);
                w.fetch_or(bit, std::sync::atomic::Ordering::Relaxed) & bit == 0
            }),
        }
    }
}
