//! The FFCV reader: header, descriptors, metadata rows, allocation table,
//! values and validation.

use std::borrow::Cow;
use std::path::Path;

use dataformats_core::parse::{run, take_u64};
use dataformats_core::{Limits, ReadOptions, Source};

use crate::error::{Error, ErrorKind, Result};
pub use crate::format::{ALLOC_ENTRY_SIZE, Alloc, DESC_SIZE, HEADER_SIZE, MIN_PAGE_SIZE, VERSION};
use crate::format::{Column, DESCR_AT, Header, MAX_DESCR_LEN, RawDescriptor};
use crate::parse;

/// A field's type, with the arguments that matter for reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `FloatField` (id 0): an `f64` in the metadata row.
    Float,
    /// `IntField` (id 1): an `i64` in the metadata row.
    Int,
    /// `RGBImageField` (id 2): raw HWC RGB bytes or a JPEG, per sample.
    RgbImage,
    /// `BytesField` (id 3): a byte string.
    Bytes,
    /// `NDArrayField` (id 4): a fixed-shape array.
    NdArray {
        /// The numpy type string (`<f4`, `|u1`, ...).
        dtype: String,
        /// Bytes per element.
        itemsize: u64,
        /// Dimensions (trailing zeros stripped, as FFCV does).
        shape: Vec<u64>,
    },
    /// `JSONField` (id 5): UTF-8 JSON text stored with a NUL terminator.
    Json,
    /// `TorchTensorField` (id 6): stored like an NDArray field.
    TorchTensor {
        /// The numpy type string.
        dtype: String,
        /// Bytes per element.
        itemsize: u64,
        /// Dimensions.
        shape: Vec<u64>,
    },
}

impl FieldType {
    /// FFCV's class name (`IntField`, `NDArrayField`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            FieldType::Float => "FloatField",
            FieldType::Int => "IntField",
            FieldType::RgbImage => "RGBImageField",
            FieldType::Bytes => "BytesField",
            FieldType::NdArray { .. } => "NDArrayField",
            FieldType::Json => "JSONField",
            FieldType::TorchTensor { .. } => "TorchTensorField",
        }
    }

    /// FFCV's type id.
    pub fn type_id(&self) -> u8 {
        match self {
            FieldType::Float => 0,
            FieldType::Int => 1,
            FieldType::RgbImage => 2,
            FieldType::Bytes => 3,
            FieldType::NdArray { .. } => 4,
            FieldType::Json => 5,
            FieldType::TorchTensor { .. } => 6,
        }
    }

    /// (size, alignment) of the field's metadata column.
    fn column(&self) -> (u64, u64) {
        match self {
            FieldType::Float
            | FieldType::Int
            | FieldType::NdArray { .. }
            | FieldType::TorchTensor { .. } => (8, 8),
            FieldType::Bytes | FieldType::Json => (16, 1),
            FieldType::RgbImage => (13, 1),
        }
    }

    /// Element type, bytes per element and shape of an array field.
    pub fn array(&self) -> Option<(&str, u64, &[u64])> {
        match self {
            FieldType::NdArray {
                dtype,
                itemsize,
                shape,
            }
            | FieldType::TorchTensor {
                dtype,
                itemsize,
                shape,
            } => Some((dtype, *itemsize, shape)),
            _ => None,
        }
    }
}

/// One field: name, type, and where its column sits in a metadata row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The name (at most 16 bytes; FFCV cuts longer names).
    pub name: String,
    /// The type.
    pub ty: FieldType,
    /// The numpy `dtype.descr` JSON of an array field, as stored.
    pub dtype_descr_json: Option<String>,
    /// Byte offset of the field's column within a metadata row.
    pub column_offset: u64,
}

/// How an image sample is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageMode {
    /// Mode byte 0: a JPEG file.
    Jpeg,
    /// Mode byte 1: height x width x 3 RGB bytes.
    Raw,
}

/// One decoded value. Byte values borrow from the file when it is memory
/// mapped or in memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// An `IntField` value.
    Int(i64),
    /// A `FloatField` value.
    Float(f64),
    /// A `BytesField` value.
    Bytes(Cow<'a, [u8]>),
    /// A `JSONField` value: the JSON text, without the NUL terminator.
    Json(Cow<'a, str>),
    /// An NDArray/TorchTensor value: the elements' bytes, C order.
    Array(Cow<'a, [u8]>),
    /// An `RGBImageField` value.
    Image {
        /// Raw pixels or JPEG.
        mode: ImageMode,
        /// Width in pixels.
        width: u16,
        /// Height in pixels.
        height: u16,
        /// The stored bytes.
        data: Cow<'a, [u8]>,
    },
}

/// The header's numbers and the layout derived from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// File version (2).
    pub version: u16,
    /// Number of fields.
    pub num_fields: u16,
    /// Page size.
    pub page_size: u32,
    /// Number of samples.
    pub num_samples: u64,
    /// Start of the allocation table.
    pub alloc_table_ptr: u64,
    /// Start of the metadata table (right after the descriptors).
    pub metadata_ptr: u64,
    /// Size of one metadata row.
    pub row_size: u64,
    /// Start of the data region (the metadata end rounded up to a page).
    pub data_ptr: u64,
    /// Number of allocation table entries.
    pub num_allocations: u64,
    /// The file size.
    pub file_size: u64,
}

/// An FFCV file opened for reading: the header, descriptors and allocation
/// table are checked at open; values are checked as they are read.
#[derive(Debug)]
pub struct Reader {
    src: Source,
    layout: Layout,
    fields: Vec<Field>,
    /// Allocation entry indices in (pointer, size, sample) order when the
    /// table is not already in that order (FFCV writes it in the order its
    /// workers report).
    order: Option<Vec<u64>>,
    /// Whether the file's table is in pointer order.
    ptr_sorted: bool,
}

/// The order the reader keeps the allocation table in: by pointer, empty
/// allocations before the one that may start at the same pointer, then by
/// sample.
fn key(a: &Alloc) -> (u64, u64, u64) {
    (a.ptr, a.size, a.sample)
}

fn err(kind: ErrorKind, m: impl Into<Cow<'static, str>>) -> Error {
    Error::new(kind, m)
}

/// Parses numpy's `dtype.descr` JSON for a plain dtype: `[["", "<f4"]]`.
/// Returns the type string and the item size.
fn parse_descr(text: &str) -> std::result::Result<(String, u64), String> {
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = squeezed
        .strip_prefix("[[\"\",\"")
        .and_then(|s| s.strip_suffix("\"]]"))
        .ok_or_else(|| {
            format!("dtype {text:?} is not a plain numpy dtype (structured dtypes are not read)")
        })?;
    let mut chars = inner.chars();
    let order = chars.next().ok_or("empty dtype")?;
    let rest: String = chars.collect();
    match order {
        '<' | '|' | '=' => {}
        '>' => return Err(format!("big-endian dtype {inner:?} is not read")),
        _ => return Err(format!("dtype {inner:?} has no byte-order character")),
    }
    let kind = rest.chars().next().ok_or("dtype without a kind")?;
    let size: u64 = rest
        .get(1..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("dtype {inner:?} has no item size"))?;
    let ok = match kind {
        'b' => size == 1,
        'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
        'f' => matches!(size, 2 | 4 | 8),
        'c' => matches!(size, 8 | 16),
        _ => false,
    };
    if !ok {
        return Err(format!("dtype {inner:?} is not a numeric numpy dtype"));
    }
    Ok((inner.to_string(), size))
}

fn parse_field(d: &[u8], at: u64) -> Result<Field> {
    let bad = |m: String| err(ErrorKind::BadFieldDescriptor, m).at(at);
    let RawDescriptor {
        type_id,
        name: raw_name,
        arguments: args,
    } = run(d, at, parse::descriptor).map_err(|e| bad(e.to_string()))?;
    // A 16-byte name has no terminator.
    let end = raw_name
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(raw_name.len());
    let (name_bytes, pad) = raw_name.split_at(end);
    if name_bytes.is_empty() {
        return Err(bad("empty field name".into()));
    }
    if pad.iter().any(|&b| b != 0) {
        return Err(bad("field name has bytes after its NUL terminator".into()));
    }
    let name = std::str::from_utf8(name_bytes)
        .ok()
        .filter(|s| s.is_ascii())
        .ok_or_else(|| bad(format!("field name {name_bytes:?} is not ASCII")))?
        .to_string();
    let args_at = at + 17;
    let array = |args: &[u8]| -> Result<(String, u64, Vec<u64>, String)> {
        let a = run(args, args_at, parse::array_args).map_err(|e| bad(e.to_string()))?;
        let mut shape = a.dims.to_vec();
        while shape.last() == Some(&0) {
            shape.pop();
        }
        let len = a.descr_len;
        if len > MAX_DESCR_LEN {
            return Err(bad(format!(
                "field {name:?}: dtype text of {len} bytes does not fit the {MAX_DESCR_LEN} available"
            )));
        }
        let text =
            run(a.descr_area, args_at + DESCR_AT, take_u64(len)).map_err(|e| bad(e.to_string()))?;
        let text = std::str::from_utf8(text)
            .map_err(|_| bad(format!("field {name:?}: dtype text is not UTF-8")))?;
        let (dtype, itemsize) = parse_descr(text)
            .map_err(|m| err(ErrorKind::Unsupported, format!("field {name:?}: {m}")).at(at))?;
        Ok((dtype, itemsize, shape, text.to_string()))
    };
    let (ty, descr) = match type_id {
        0 => (FieldType::Float, None),
        1 => (FieldType::Int, None),
        2 => (FieldType::RgbImage, None),
        3 => (FieldType::Bytes, None),
        5 => (FieldType::Json, None),
        4 | 6 => {
            let (dtype, itemsize, shape, text) = array(args)?;
            let ty = if type_id == 4 {
                FieldType::NdArray {
                    dtype,
                    itemsize,
                    shape,
                }
            } else {
                FieldType::TorchTensor {
                    dtype,
                    itemsize,
                    shape,
                }
            };
            (ty, Some(text))
        }
        255 => {
            return Err(err(
                ErrorKind::Unsupported,
                format!("field {name:?} is a custom FFCV field (type 255); only its Python class can read it"),
            )
            .at(at));
        }
        t => return Err(bad(format!("field {name:?}: unknown type id {t}"))),
    };
    Ok(Field {
        name,
        ty,
        dtype_descr_json: descr,
        column_offset: 0,
    })
}

impl Reader {
    /// Opens the file at `path` (positioned reads; to read a memory map,
    /// pass a mapped [`Source`] to [`Reader::with_options`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(Source::open(path)?, ReadOptions::default())
    }

    /// Opens an in-memory file.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src`: header, descriptors, metadata bounds and the whole
    /// allocation table are checked here.
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        let limits = opts.limits;
        let n = src.len();
        if n < HEADER_SIZE {
            return Err(err(
                ErrorKind::Truncated,
                format!("{n} bytes: an FFCV header is {HEADER_SIZE}"),
            ));
        }
        let Header {
            version,
            num_fields,
            page_size,
            num_samples,
            alloc_table_ptr,
        } = run(&src.bytes(0, HEADER_SIZE)?, 0, parse::header)?;
        if version != VERSION {
            return Err(err(
                ErrorKind::UnsupportedVersion,
                format!("FFCV file version {version}; only version {VERSION} exists"),
            )
            .at(0));
        }
        if !page_size.is_power_of_two() || page_size < MIN_PAGE_SIZE {
            return Err(err(
                ErrorKind::BadHeader,
                format!("page size {page_size} is not a power of two of at least 2 MiB"),
            )
            .at(4));
        }
        if num_fields == 0 && num_samples > 0 {
            return Err(err(
                ErrorKind::BadHeader,
                format!("{num_samples} samples but no fields"),
            )
            .at(2));
        }
        let metadata_ptr = HEADER_SIZE + DESC_SIZE * u64::from(num_fields);
        if metadata_ptr > n {
            return Err(err(
                ErrorKind::Truncated,
                format!(
                    "{num_fields} field descriptors end at byte {metadata_ptr}, the file has {n}"
                ),
            )
            .at(HEADER_SIZE));
        }
        let descs = src.bytes(HEADER_SIZE, metadata_ptr - HEADER_SIZE)?;
        let mut fields: Vec<Field> = Vec::with_capacity(usize::from(num_fields));
        let (mut row, mut align) = (0u64, 1u64);
        for (k, d) in descs.chunks_exact(DESC_SIZE as usize).enumerate() {
            let at = HEADER_SIZE + DESC_SIZE * k as u64;
            let mut f = parse_field(d, at)?;
            if fields.iter().any(|g| g.name == f.name) {
                return Err(err(
                    ErrorKind::BadFieldDescriptor,
                    format!("field name {:?} used twice", f.name),
                )
                .at(at));
            }
            let (size, a) = f.ty.column();
            row = row.div_ceil(a) * a;
            f.column_offset = row;
            row += size;
            align = align.max(a);
            fields.push(f);
        }
        let row_size = row.div_ceil(align) * align;
        let metadata_end = num_samples
            .checked_mul(row_size)
            .and_then(|x| x.checked_add(metadata_ptr))
            .filter(|&e| e <= n)
            .ok_or_else(|| {
                err(
                    ErrorKind::Truncated,
                    format!(
                        "{num_samples} metadata rows of {row_size} bytes from byte {metadata_ptr} do not fit in the file's {n} bytes"
                    ),
                )
                .at(8)
            })?;
        let page = u64::from(page_size);
        let data_ptr = metadata_end.div_ceil(page) * page;
        if alloc_table_ptr == 0 {
            return Err(err(
                ErrorKind::BadHeader,
                "allocation table pointer 0: the FFCV writer did not finish this file",
            )
            .at(16));
        }
        if alloc_table_ptr < metadata_end || alloc_table_ptr > n {
            return Err(err(
                ErrorKind::OutOfBounds,
                format!(
                    "allocation table at {alloc_table_ptr} is outside [{metadata_end}, {n}] (after the metadata, inside the file)"
                ),
            )
            .at(16));
        }
        let table_len = n - alloc_table_ptr;
        if !table_len.is_multiple_of(ALLOC_ENTRY_SIZE) {
            return Err(err(
                ErrorKind::BadAllocTable,
                format!(
                    "allocation table of {table_len} bytes is not a whole number of {ALLOC_ENTRY_SIZE}-byte entries"
                ),
            )
            .at(alloc_table_ptr));
        }
        let num_allocations = table_len / ALLOC_ENTRY_SIZE;
        if num_allocations > 0
            && (alloc_table_ptr < data_ptr || !(alloc_table_ptr - data_ptr).is_multiple_of(page))
        {
            return Err(err(
                ErrorKind::BadAllocTable,
                format!(
                    "data region [{data_ptr}, {alloc_table_ptr}) is not a whole number of {page_size}-byte pages"
                ),
            )
            .at(16));
        }
        if num_allocations > limits.max_count {
            return Err(err(
                ErrorKind::LimitExceeded,
                format!(
                    "{num_allocations} allocations exceed the limit of {}",
                    limits.max_count
                ),
            ));
        }
        let layout = Layout {
            version,
            num_fields,
            page_size,
            num_samples,
            alloc_table_ptr,
            metadata_ptr,
            row_size,
            data_ptr,
            num_allocations,
            file_size: n,
        };
        let mut r = Reader {
            src,
            layout,
            fields,
            order: None,
            ptr_sorted: true,
        };
        r.check_allocations(&limits)?;
        Ok(r)
    }

    /// Every entry in the data region, within one page, of an existing
    /// sample; entries (in pointer order) do not overlap.
    fn check_allocations(&mut self, limits: &Limits) -> Result<()> {
        let l = self.layout;
        let shift = l.page_size.trailing_zeros();
        let mut sorted = true;
        let mut prev: Option<Alloc> = None;
        for k in 0..l.num_allocations {
            let a = self.entry(k)?;
            let at = l.alloc_table_ptr + k * ALLOC_ENTRY_SIZE;
            let bad = |m: String| err(ErrorKind::BadAllocTable, m).at(at);
            if a.sample >= l.num_samples {
                return Err(bad(format!(
                    "entry {k}: sample {} of {}",
                    a.sample, l.num_samples
                )));
            }
            let end = a.ptr.saturating_add(a.size);
            if a.ptr < l.data_ptr || end > l.alloc_table_ptr {
                return Err(err(
                    ErrorKind::OutOfBounds,
                    format!(
                        "entry {k}: bytes [{}, {end}) outside the data region [{}, {})",
                        a.ptr, l.data_ptr, l.alloc_table_ptr
                    ),
                )
                .at(at));
            }
            if a.size > 0 && a.ptr >> shift != (end - 1) >> shift {
                return Err(bad(format!(
                    "entry {k}: {} bytes at {} cross a page boundary (FFCV keeps each value in one page)",
                    a.size, a.ptr
                )));
            }
            if let Some(p) = prev {
                if key(&a) < key(&p) {
                    sorted = false;
                }
                if a.ptr < p.ptr {
                    self.ptr_sorted = false;
                }
            }
            prev = Some(a);
        }
        if !sorted {
            if l.num_allocations.saturating_mul(8) > limits.max_alloc {
                return Err(err(
                    ErrorKind::LimitExceeded,
                    "index of an unsorted allocation table exceeds the allocation limit",
                ));
            }
            let mut keys = Vec::with_capacity(l.num_allocations as usize);
            for k in 0..l.num_allocations {
                let a = self.entry(k)?;
                keys.push((key(&a), k));
            }
            keys.sort_unstable();
            self.order = Some(keys.into_iter().map(|(_, k)| k).collect());
        }
        // In key order: no overlaps (empty allocations come first at their
        // pointer), and no more empty allocations of one sample at one
        // pointer than the sample has fields (which bounds every lookup).
        let most_empty = u64::from(l.num_fields).max(1);
        let mut run = 0u64;
        let mut prev: Option<Alloc> = None;
        for k in 0..l.num_allocations {
            let a = self.allocation(k)?;
            run = match prev {
                Some(p) if key(&p) == key(&a) => run + 1,
                _ => 1,
            };
            if run > most_empty {
                return Err(err(
                    ErrorKind::BadAllocTable,
                    format!(
                        "more than {most_empty} allocation(s) of sample {} at {} (size {})",
                        a.sample, a.ptr, a.size
                    ),
                )
                .at(l.alloc_table_ptr));
            }
            if let Some(p) = prev
                && p.ptr + p.size > a.ptr
            {
                return Err(err(
                    ErrorKind::Overlap,
                    format!(
                        "allocations [{}, {}) and [{}, {}) overlap",
                        p.ptr,
                        p.ptr + p.size,
                        a.ptr,
                        a.ptr + a.size
                    ),
                )
                .at(a.ptr));
            }
            prev = Some(a);
        }
        Ok(())
    }

    /// Entry `k` in file order.
    fn entry(&self, k: u64) -> Result<Alloc> {
        let at = self.layout.alloc_table_ptr + k * ALLOC_ENTRY_SIZE;
        Ok(run(
            &self.src.bytes(at, ALLOC_ENTRY_SIZE)?,
            at,
            parse::alloc_entry,
        )?)
    }

    /// The `k`-th allocation in pointer order.
    pub fn allocation(&self, k: u64) -> Result<Alloc> {
        match &self.order {
            None => self.entry(k),
            Some(o) => {
                let j = o.get(k as usize).copied().ok_or_else(|| {
                    err(
                        ErrorKind::InvalidArgument,
                        format!("allocation {k} of {}", self.layout.num_allocations),
                    )
                })?;
                self.entry(j)
            }
        }
    }

    /// Whether the file's allocation table is already in pointer order.
    pub fn alloc_table_sorted(&self) -> bool {
        self.ptr_sorted
    }

    /// The first allocation (in key order) whose key is not below `k`.
    fn lower_bound(&self, k: (u64, u64, u64)) -> Result<u64> {
        let (mut lo, mut hi) = (0u64, self.layout.num_allocations);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key(&self.allocation(mid)?) < k {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The allocation with exactly key `k`, if any.
    fn exact(&self, k: (u64, u64, u64)) -> Result<Option<(u64, Alloc)>> {
        let i = self.lower_bound(k)?;
        if i < self.layout.num_allocations {
            let a = self.allocation(i)?;
            if key(&a) == k {
                return Ok(Some((i, a)));
            }
        }
        Ok(None)
    }

    /// The allocation (and its index in key order) at `ptr` for `sample`,
    /// with `size` when the caller knows it: O(log n) either way (at most
    /// one non-empty allocation starts at a pointer).
    fn find(&self, ptr: u64, sample: u64, size: Option<u64>) -> Result<Option<(u64, Alloc)>> {
        if let Some(size) = size {
            return self.exact((ptr, size, sample));
        }
        let i = self.lower_bound((ptr, 1, 0))?;
        if i < self.layout.num_allocations {
            let a = self.allocation(i)?;
            if a.ptr == ptr && a.sample == sample {
                return Ok(Some((i, a)));
            }
        }
        self.exact((ptr, 0, sample))
    }

    /// The header numbers and derived layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The fields, in file order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// The number of samples (records).
    pub fn len(&self) -> u64 {
        self.layout.num_samples
    }

    /// True when the file holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The metadata row of sample `i`.
    pub fn row(&self, i: u64) -> Result<Cow<'_, [u8]>> {
        if i >= self.layout.num_samples {
            return Err(err(
                ErrorKind::InvalidArgument,
                format!("sample {i} of {}", self.layout.num_samples),
            ));
        }
        let at = self.layout.metadata_ptr + i * self.layout.row_size;
        Ok(self.src.bytes(at, self.layout.row_size)?)
    }

    /// Field `j` of sample `i`, checked: pointers must name an allocation of
    /// this sample, sizes must match the field, JSON must end in its NUL,
    /// raw images must hold height x width x 3 bytes and JPEGs must carry
    /// the recorded dimensions.
    pub fn value(&self, i: u64, j: usize) -> Result<Value<'_>> {
        let f = self.fields.get(j).ok_or_else(|| {
            err(
                ErrorKind::InvalidArgument,
                format!("field {j} of {}", self.fields.len()),
            )
        })?;
        self.value_at(i, f).map(|(v, _)| v)
    }

    /// Field `name` of sample `i`.
    pub fn value_of(&self, i: u64, name: &str) -> Result<Value<'_>> {
        let j = self.field_index(name).ok_or_else(|| {
            err(
                ErrorKind::InvalidArgument,
                format!("no field called {name:?}"),
            )
        })?;
        self.value(i, j)
    }

    fn bytes_at(&self, a: Alloc) -> Result<Cow<'_, [u8]>> {
        Ok(self.src.bytes(a.ptr, a.size)?)
    }

    /// The value and the pointer-order index of its allocation.
    fn value_at(&self, i: u64, f: &Field) -> Result<(Value<'_>, Option<u64>)> {
        let row = self.row(i)?;
        let at = self.layout.metadata_ptr + i * self.layout.row_size + f.column_offset;
        let o = f.column_offset as usize;
        let ctx = |e: Error| e.in_value(i, &f.name).at(at);
        let need = |ptr: u64, size: Option<u64>, what: &str| -> Result<(u64, Alloc)> {
            self.find(ptr, i, size)?.ok_or_else(|| {
                ctx(err(
                    ErrorKind::BadValue,
                    format!(
                        "{what} pointer {ptr}{} names no allocation of this sample",
                        size.map(|s| format!(" (size {s})")).unwrap_or_default()
                    ),
                ))
            })
        };
        // A row shorter than its columns is cut short at this one.
        let col = run(row.get(o..).unwrap_or_default(), at, parse::column(&f.ty))
            .map_err(|e| ctx(e.into()))?;
        Ok(match (&f.ty, col) {
            (FieldType::Float, Column::Scalar(v)) => (Value::Float(f64::from_bits(v)), None),
            (_, Column::Scalar(v)) => (Value::Int(v as i64), None),
            (ty, Column::Sized { ptr, size }) => {
                let (k, a) = need(ptr, Some(size), "value")?;
                let b = self.bytes_at(a).map_err(ctx)?;
                if *ty == FieldType::Bytes {
                    return Ok((Value::Bytes(b), Some(k)));
                }
                let nul = b.iter().position(|&x| x == 0).ok_or_else(|| {
                    ctx(err(ErrorKind::BadValue, "JSON value has no NUL terminator"))
                })?;
                let not_utf8 = |e: std::str::Utf8Error| {
                    ctx(err(
                        ErrorKind::BadValue,
                        format!("JSON value is not UTF-8 ({e})"),
                    ))
                };
                let v = match b {
                    Cow::Borrowed(s) => {
                        let (text, _) = s.split_at(nul);
                        Cow::Borrowed(std::str::from_utf8(text).map_err(not_utf8)?)
                    }
                    Cow::Owned(mut v) => {
                        v.truncate(nul);
                        Cow::Owned(String::from_utf8(v).map_err(|e| not_utf8(e.utf8_error()))?)
                    }
                };
                (Value::Json(v), Some(k))
            }
            (ty, Column::Pointer(ptr)) => {
                let (_, itemsize, shape) = ty.array().ok_or_else(|| {
                    ctx(err(
                        ErrorKind::InvalidArgument,
                        "a pointer column of a non-array field",
                    ))
                })?;
                let want = shape
                    .iter()
                    .try_fold(itemsize, |acc, &d| acc.checked_mul(d))
                    .unwrap_or(u64::MAX);
                let (k, a) = need(ptr, None, "array")?;
                if a.size != want {
                    return Err(ctx(err(
                        ErrorKind::BadValue,
                        format!(
                            "array allocation holds {} bytes, shape {shape:?} of {itemsize}-byte items needs {want}",
                            a.size
                        ),
                    )));
                }
                (Value::Array(self.bytes_at(a).map_err(ctx)?), Some(k))
            }
            (_, Column::Image(c)) => {
                let (width, height, ptr) = (c.width, c.height, c.data_ptr);
                let mode = match c.mode {
                    0 => ImageMode::Jpeg,
                    1 => ImageMode::Raw,
                    m => {
                        return Err(ctx(err(
                            ErrorKind::BadValue,
                            format!("image mode byte {m} (0 is JPEG, 1 raw)"),
                        )));
                    }
                };
                let raw_size = u64::from(width) * u64::from(height) * 3;
                let size = (mode == ImageMode::Raw).then_some(raw_size);
                let (k, a) = need(ptr, size, "image")?;
                let data = self.bytes_at(a).map_err(ctx)?;
                if mode == ImageMode::Jpeg {
                    dataformats_core::image::check_jpeg(&data, height, width, 3)
                        .map_err(|m| ctx(err(ErrorKind::BadValue, m)))?;
                }
                (
                    Value::Image {
                        mode,
                        width,
                        height,
                        data,
                    },
                    Some(k),
                )
            }
        })
    }

    /// Reads every value of every sample, checks JSON values parse, and
    /// checks every allocation belongs to exactly one value.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the samples checked so far out of
    /// all samples.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        // Mapped pages go back as the pass goes on: a file of gigabytes
        // checked with tens of megabytes resident.
        let mut releasing = dataformats_core::progress::Releasing::new(&self.src, progress);
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let n = self.layout.num_allocations;
        let mut used = vec![0u64; n.div_ceil(64) as usize];
        let mut count = 0u64;
        for i in 0..self.layout.num_samples {
            for f in &self.fields {
                let (v, k) = self.value_at(i, f)?;
                if let Value::Json(t) = &v {
                    dataformats_core::json::check(t.as_bytes()).map_err(|m| {
                        err(ErrorKind::BadValue, format!("JSON value: {m}")).in_value(i, &f.name)
                    })?;
                }
                if let Some(mut k) = k {
                    // Several empty values of one sample may share a
                    // pointer: each takes the next unused empty allocation
                    // of that key (at most the sample's field count).
                    let a = self.allocation(k)?;
                    while a.size == 0
                        && k + 1 < n
                        && used
                            .get((k / 64) as usize)
                            .is_some_and(|w| w & (1 << (k % 64)) != 0)
                        && key(&self.allocation(k + 1)?) == key(&a)
                    {
                        k += 1;
                    }
                    let (w, bit) = ((k / 64) as usize, 1u64 << (k % 64));
                    let slot = used.get_mut(w).ok_or_else(|| {
                        err(ErrorKind::BadAllocTable, format!("allocation index {k}"))
                    })?;
                    if *slot & bit != 0 {
                        let a = self.allocation(k)?;
                        return Err(err(
                            ErrorKind::BadAllocTable,
                            format!("allocation at {} is used by two values", a.ptr),
                        )
                        .in_value(i, &f.name));
                    }
                    *slot |= bit;
                    count += 1;
                }
            }
            progress.advance(i + 1, self.layout.num_samples);
        }
        if count != n {
            return Err(err(
                ErrorKind::BadAllocTable,
                format!("{} of {n} allocations belong to no value", n - count),
            )
            .at(self.layout.alloc_table_ptr));
        }
        Ok(())
    }

    /// The underlying byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descr() {
        assert_eq!(parse_descr("[[\"\", \"<f4\"]]").unwrap(), ("<f4".into(), 4));
        assert_eq!(parse_descr("[[\"\",\"|u1\"]]").unwrap(), ("|u1".into(), 1));
        assert!(
            parse_descr("[[\"\", \">f4\"]]")
                .unwrap_err()
                .contains("big-endian")
        );
        assert!(parse_descr("[[\"a\", \"<f4\"], [\"b\", \"<i4\"]]").is_err());
        assert!(parse_descr("[[\"\", \"<f3\"]]").is_err());
        assert!(parse_descr("[[\"\", \"<U8\"]]").is_err());
    }
}
