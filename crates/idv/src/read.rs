//! Opening an IDV file: header, column table of contents, annotations
//! (`idv.md` §3–§9), then blocks on demand.

use std::path::Path;
use std::sync::OnceLock;

use dataformats_core::{Limits, ReadOptions, Source, codec};

use dataformats_core::parse::run;

use crate::cursor::Cursor;
use crate::decode::decode;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{BLOCK_ENTRY_SIZE, HEADER_FIELDS_SIZE, RawBlockEntry};
use crate::parse;
use crate::types::{Codec, ColumnType};
use crate::values::{Scalar, Values};

/// `CML\0DVB\0`.
pub const SIGNATURE: u64 = 0x0042_5644_004C_4D43;
/// The tail signature (the header signature byte-reversed).
pub const TAIL_SIGNATURE: u64 = 0x434D_4C00_4456_4200;
/// Header size.
pub const HEADER_SIZE: u64 = 256;
/// 1.1.1.6, what the current writer declares.
pub const VERSION_1_1_1_6: u64 = 0x0001_0001_0001_0006;
const READER_FIRST: u64 = 0x0001_0001_0001_0002;
const METADATA_VERSION: u64 = 0x0001_0001_0001_0004;

/// Renders a version as "a.b.c.d".
pub fn version_string(v: u64) -> String {
    format!(
        "{}.{}.{}.{}",
        v >> 48,
        (v >> 32) & 0xFFFF,
        (v >> 16) & 0xFFFF,
        v & 0xFFFF
    )
}

/// The header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Writer version.
    pub version: u64,
    /// Oldest reader version that can read the file.
    pub compatible_version: u64,
    /// Column table of contents offset.
    pub toc_offset: u64,
    /// Tail signature offset.
    pub tail_offset: u64,
    /// Rows.
    pub row_count: u64,
    /// Columns in the table of contents (dead ones included).
    pub column_count: u32,
}

/// Block compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as is.
    None,
    /// Raw deflate (RFC 1951).
    Deflate,
    /// A kind ML.NET does not know (the owner is dead).
    Unknown(u8),
}

impl Compression {
    pub(crate) fn from_byte(b: u8) -> Self {
        match b {
            0 => Compression::None,
            1 => Compression::Deflate,
            x => Compression::Unknown(x),
        }
    }

    /// `"none"`, `"deflate"` or `"unknown(N)"`.
    pub fn name(self) -> String {
        match self {
            Compression::None => "none".into(),
            Compression::Deflate => "deflate".into(),
            Compression::Unknown(x) => format!("unknown({x})"),
        }
    }
}

/// One entry of a column's annotation table of contents.
#[derive(Debug, Clone)]
pub struct Annotation {
    /// The kind (`SlotNames`, `KeyValues`, `IsNormalized`...).
    pub kind: String,
    /// Its codec.
    pub codec: Codec,
    /// How its block is stored.
    pub compression: Compression,
    /// Block offset.
    pub offset: u64,
    /// Block size in the file.
    pub size: u64,
    /// The value (one row), or `None` for a dead entry (unknown codec or compression).
    pub value: Option<Values>,
}

/// One column of the table of contents.
#[derive(Debug, Clone)]
pub struct Column {
    /// Name (may be empty or repeated).
    pub name: String,
    /// Codec.
    pub codec: Codec,
    /// Compression of its blocks.
    pub compression: Compression,
    /// Rows per block.
    pub rows_per_block: u32,
    /// Block lookup table offset.
    pub lookup_offset: u64,
    /// Annotation table offset (0 = none).
    pub annotation_offset: u64,
    /// Annotations (empty for a dead column, whose table is never read).
    pub annotations: Vec<Annotation>,
}

impl Column {
    /// Whether the column is unreadable (unknown codec or compression) and skipped.
    pub fn is_dead(&self) -> bool {
        self.codec.ty.is_none() || matches!(self.compression, Compression::Unknown(_))
    }

    /// The type, when the codec is known.
    pub fn ty(&self) -> Option<&ColumnType> {
        self.codec.ty.as_ref()
    }

    /// The annotation of `kind`, when present and readable.
    pub fn annotation(&self, kind: &str) -> Option<&Values> {
        self.annotations
            .iter()
            .find(|a| a.kind == kind)
            .and_then(|a| a.value.as_ref())
    }
}

/// One block lookup entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEntry {
    /// Offset of the stored block.
    pub offset: u64,
    /// Stored length.
    pub compressed_len: u32,
    /// Length after decompression.
    pub decompressed_len: u32,
}

/// An open IDV file. Opening reads the header, the column table and the
/// annotations (cost O(columns)); block lookup tables and blocks are read
/// when a column is first read.
#[derive(Debug)]
pub struct Reader {
    src: Source,
    limits: Limits,
    header: Header,
    columns: Vec<Column>,
    lookups: Vec<OnceLock<std::result::Result<Vec<BlockEntry>, Error>>>,
}

fn read_at<'a>(
    src: &'a Source,
    offset: u64,
    len: u64,
    what: &str,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    src.bytes(offset, len).map_err(|_| {
        Error::new(
            ErrorKind::Truncated,
            format!(
                "{what}: {len} byte(s) at {offset} pass the end of the file ({})",
                src.len()
            ),
        )
        .at(offset)
    })
}

/// Runs `parse` over the bytes from `offset` on: a window of the file
/// (all of it when mapped), grown and retried while the parse runs out of
/// bytes before the end of the file.
fn windowed<T>(src: &Source, offset: u64, mut parse: impl FnMut(&[u8]) -> Result<T>) -> Result<T> {
    let avail = src.len().saturating_sub(offset);
    let mut window = if src.as_slice().is_some() {
        avail
    } else {
        avail.min(1 << 20)
    };
    loop {
        let bytes = read_at(src, offset, window, "table")?;
        match parse(&bytes) {
            Err(e) if e.kind() == ErrorKind::Truncated && window < avail => {
                window = window.saturating_mul(4).min(avail);
            }
            r => return r,
        }
    }
}

impl Reader {
    /// Opens the file at `path` with positioned reads.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::with_options(Source::open(path)?, ReadOptions::default())
    }

    /// Opens an in-memory file.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        Self::with_options(Source::from_vec(bytes), ReadOptions::default())
    }

    /// Opens `src` with allocation `limits`.
    pub fn with_options(src: Source, opts: ReadOptions) -> Result<Self> {
        let limits = opts.limits;
        let header = read_header(&src)?;
        let columns = read_toc(&src, &header, &limits)?;
        let lookups = columns.iter().map(|_| OnceLock::new()).collect();
        Ok(Reader {
            src,
            limits,
            header,
            columns,
            lookups,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The number of rows (records).
    pub fn len(&self) -> u64 {
        self.header.row_count
    }

    /// True when the file holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every column of the table of contents, dead ones included.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// Index of the first live column named `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name && !c.is_dead())
    }

    /// Blocks per column.
    pub fn block_count(&self) -> u64 {
        block_count(
            self.header.row_count,
            self.columns.first().map_or(1, |c| c.rows_per_block),
        )
    }

    /// Rows in block `b`.
    pub fn rows_in_block(&self, b: u64) -> u64 {
        let rpb = u64::from(self.columns.first().map_or(1, |c| c.rows_per_block)).max(1);
        self.header
            .row_count
            .saturating_sub(b.saturating_mul(rpb))
            .min(rpb)
    }

    fn live(&self, col: usize) -> Result<&Column> {
        let c = self
            .columns
            .get(col)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("no column {col}")))?;
        if c.is_dead() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "column {col} ({:?}) is unreadable: codec {:?}, compression {}",
                    c.name,
                    c.codec.name,
                    c.compression.name()
                ),
            ));
        }
        Ok(c)
    }

    /// The block lookup table of live column `col` (read once, then kept).
    pub fn lookup(&self, col: usize) -> Result<&[BlockEntry]> {
        let c = self.live(col)?;
        let slot = self
            .lookups
            .get(col)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "column"))?;
        let r = slot.get_or_init(|| {
            read_lookup(&self.src, &self.header, c.lookup_offset, self.block_count())
                .map_err(|e| e.in_column(&c.name))
        });
        match r {
            Ok(v) => Ok(v),
            Err(e) => Err(e.clone()),
        }
    }

    /// The decompressed bytes of block `b` of live column `col`.
    pub fn block_bytes(&self, col: usize, b: u64) -> Result<std::borrow::Cow<'_, [u8]>> {
        let c = self.live(col)?;
        let e = *self
            .lookup(col)?
            .get(usize::try_from(b).unwrap_or(usize::MAX))
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("no block {b}")))?;
        let loc = |err: Error| err.in_column(&c.name).in_block(b);
        let stored =
            read_at(&self.src, e.offset, u64::from(e.compressed_len), "block").map_err(loc)?;
        let want = u64::from(e.decompressed_len);
        match c.compression {
            Compression::None => {
                if e.decompressed_len > e.compressed_len {
                    return Err(loc(Error::new(
                        ErrorKind::DecompressFailed,
                        format!(
                            "uncompressed block: {} byte(s) declared, {} stored",
                            e.decompressed_len, e.compressed_len
                        ),
                    )
                    .at(e.offset)));
                }
                Ok(match stored {
                    std::borrow::Cow::Borrowed(s) => {
                        std::borrow::Cow::Borrowed(s.get(..want as usize).unwrap_or_default())
                    }
                    std::borrow::Cow::Owned(mut v) => {
                        v.truncate(want as usize);
                        std::borrow::Cow::Owned(v)
                    }
                })
            }
            Compression::Deflate => {
                inflatable(stored.len() as u64, want).map_err(|err| loc(err.at(e.offset)))?;
                self.limits
                    .check_alloc("decompressed block", want)
                    .map_err(|e| loc(e.into()))?;
                let mut out = vec![0u8; want as usize];
                self.inflate_into(&stored, &mut out)
                    .map_err(|err| loc(err.at(e.offset)))?;
                Ok(std::borrow::Cow::Owned(out))
            }
            Compression::Unknown(_) => {
                Err(loc(Error::new(ErrorKind::InvalidArgument, "dead column")))
            }
        }
    }

    /// Inflates a deflate block into `out`, which must come out full.
    pub(crate) fn inflate_into(&self, stored: &[u8], out: &mut [u8]) -> Result<()> {
        inflatable(stored.len() as u64, out.len() as u64)?;
        let n = codec::inflate_prefix(stored, out).map_err(|e| {
            Error::new(
                ErrorKind::DecompressFailed,
                format!("corrupt deflate data: {e}"),
            )
        })?;
        if n != out.len() {
            return Err(Error::new(
                ErrorKind::DecompressFailed,
                format!("deflate stream ends after {n} of {} byte(s)", out.len()),
            ));
        }
        Ok(())
    }

    /// Decodes block `b` of a plain numeric scalar column (`Single`,
    /// `Int32`, ...) into `out` (resized to the block's rows), inflating
    /// through `scratch`; both buffers are reused across calls, so a scan
    /// allocates nothing once they have grown. An uncompressed block is
    /// copied straight from the file.
    pub fn read_block_into<T: crate::values::PlainItem>(
        &self,
        col: usize,
        b: u64,
        out: &mut Vec<T>,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let c = self.live(col)?;
        if c.ty() != Some(&ColumnType::Scalar(T::ITEM)) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "column {:?} is {}, not {}",
                    c.name,
                    c.ty().map(ToString::to_string).unwrap_or_default(),
                    T::ITEM
                ),
            ));
        }
        let e = *self
            .lookup(col)?
            .get(usize::try_from(b).unwrap_or(usize::MAX))
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("no block {b}")))?;
        let loc = |err: Error| err.in_column(&c.name).in_block(b);
        let n = self.rows_in_block(b) as usize;
        let need = n as u64 * T::SIZE as u64;
        if u64::from(e.decompressed_len) < need {
            return Err(loc(Error::new(
                ErrorKind::Truncated,
                format!(
                    "{n} values need {need} bytes, the block decodes to {}",
                    e.decompressed_len
                ),
            )
            .at(e.offset)));
        }
        let stored =
            read_at(&self.src, e.offset, u64::from(e.compressed_len), "block").map_err(loc)?;
        out.clear();
        out.resize(n, T::default());
        if c.compression == Compression::Deflate && u64::from(e.decompressed_len) == need {
            // The common case: the block is exactly the values; inflate
            // straight into the caller's buffer.
            if let Some(dst) = dataformats_core::plain::bytes_of_mut(out.as_mut_slice()) {
                return self
                    .inflate_into(&stored, dst)
                    .map_err(|err| loc(err.at(e.offset)));
            }
        }
        let bytes: &[u8] = match c.compression {
            Compression::Deflate => {
                inflatable(stored.len() as u64, u64::from(e.decompressed_len))
                    .map_err(|err| loc(err.at(e.offset)))?;
                let want = self
                    .limits
                    .check_alloc("decompressed block", u64::from(e.decompressed_len))
                    .map_err(|err| loc(err.into()))?;
                scratch.clear();
                scratch.resize(want, 0);
                self.inflate_into(&stored, scratch)
                    .map_err(|err| loc(err.at(e.offset)))?;
                scratch
            }
            _ => {
                if e.decompressed_len > e.compressed_len {
                    return Err(loc(Error::new(
                        ErrorKind::DecompressFailed,
                        "uncompressed block: more bytes declared than stored",
                    )
                    .at(e.offset)));
                }
                &stored
            }
        };
        dataformats_core::plain::copy_into(bytes.get(..need as usize).unwrap_or_default(), out)
            .map_err(|err| loc(Error::new(ErrorKind::Truncated, err.to_string())))
    }

    /// Decodes block `b` of live column `col`.
    pub fn read_block(&self, col: usize, b: u64) -> Result<Values> {
        let c = self.live(col)?;
        let ty = c
            .ty()
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "dead column"))?;
        let bytes = self.block_bytes(col, b)?;
        let e = self.lookup(col)?.get(b as usize).copied();
        let base = e.map_or(0, |e| e.offset);
        let n = self.rows_in_block(b) as usize;
        // Offsets inside a compressed block are given relative to the block start.
        let mut cur = Cursor::new(
            &bytes,
            if c.compression == Compression::None {
                base
            } else {
                0
            },
        );
        decode(ty, c.codec.dvbool, &mut cur, n).map_err(|err| {
            let err = err.in_column(&c.name).in_block(b);
            if c.compression == Compression::None {
                err
            } else {
                err.at(base)
            }
        })
    }

    /// Decodes rows `rows` of live column `col`, touching only the blocks
    /// that hold them.
    pub fn read_rows(&self, col: usize, rows: std::ops::Range<u64>) -> Result<Values> {
        let c = self.live(col)?;
        let ty = c
            .ty()
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "dead column"))?;
        if rows.start > rows.end || rows.end > self.header.row_count {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("rows {rows:?} outside 0..{}", self.header.row_count),
            ));
        }
        let mut out = Values::empty_of(ty);
        if rows.is_empty() {
            return Ok(out);
        }
        let rpb = u64::from(c.rows_per_block.max(1));
        for b in rows.start / rpb..=(rows.end - 1) / rpb {
            let v = self.read_block(col, b)?;
            let first = b * rpb;
            let lo = rows.start.max(first) - first;
            let hi = rows.end.min(first + rpb) - first;
            out.append_from(&v, lo as usize..hi as usize);
        }
        Ok(out)
    }

    /// Every value of live column `col`.
    pub fn read_column(&self, col: usize) -> Result<Values> {
        self.read_rows(col, 0..self.header.row_count)
    }

    /// Every value of the live column named `name`, as `T` (for example
    /// `column::<f32>("x")`, `column::<String>("text")`, `column::<u64>`
    /// for keys).
    pub fn column<T: Scalar>(&self, name: &str) -> Result<Vec<T>> {
        let i = self.column_index(name).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("no live column {name:?}"),
            )
        })?;
        let ty = self
            .columns
            .get(i)
            .and_then(Column::ty)
            .map(ToString::to_string);
        T::from_values(self.read_column(i)?).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "column {name:?} is {}, not {}",
                    ty.unwrap_or_default(),
                    std::any::type_name::<T>()
                ),
            )
        })
    }

    /// Decodes every block of every live column in the order of `idv.md`
    /// §10.1 step 4; the first failure is reported.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&mut dataformats_core::progress::none())
    }

    /// [`Reader::validate`], reporting the blocks decoded so far out of
    /// all blocks of the live columns. Blocks are decoded on every core
    /// (files from 4 MB); the first failure in file order is reported.
    pub fn validate_with(&self, progress: &mut dyn dataformats_core::Progress) -> Result<()> {
        if self.header.row_count == 0 {
            return Ok(());
        }
        // Mapped pages go back as the pass goes on: a file of gigabytes
        // checked with tens of megabytes resident.
        let mut releasing = dataformats_core::progress::Releasing::new(&self.src, progress);
        let progress: &mut dyn dataformats_core::Progress = &mut releasing;
        let live = self.columns.iter().filter(|c| !c.is_dead()).count() as u64;
        let total = live.saturating_mul(self.block_count());
        // Each live column's block table, then its blocks, in file order;
        // decoded on every core for files of a few MB, checked in order.
        // Blocks go to the threads in runs of `RUN` (one block each would
        // cost more in hand-overs than decoding a small or stored block).
        const RUN: u64 = 16;
        let blocks = self.block_count();
        let mut work = (0..self.columns.len())
            .filter(|&c| self.columns.get(c).is_some_and(|c| !c.is_dead()))
            .flat_map(|c| {
                let runs = (0..blocks.div_ceil(RUN)).map(move |r| {
                    let start = r * RUN;
                    (c, Some(start..(start + RUN).min(blocks)))
                });
                std::iter::once((c, None)).chain(runs)
            });
        let threads = dataformats_core::parallel::threads_for(self.src.len(), 0);
        let mut done = 0u64;
        dataformats_core::parallel::ordered(
            threads,
            || Ok(work.next()),
            |(col, run)| match run {
                None => self.lookup(col).map(|_| 0),
                Some(run) => {
                    let n = run.end - run.start;
                    for b in run {
                        self.read_block(col, b)?;
                    }
                    Ok(n)
                }
            },
            |checked| {
                let n = checked?;
                if n > 0 {
                    done += n;
                    progress.advance(done, total);
                }
                Ok(())
            },
        )
    }

    /// Decodes blocks of live column `col` on the rayon pool and returns
    /// them in order.
    #[cfg(feature = "rayon")]
    pub fn read_blocks_parallel(&self, col: usize) -> Result<Vec<Values>> {
        use rayon::prelude::*;
        self.lookup(col)?;
        (0..self.block_count())
            .into_par_iter()
            .map(|b| self.read_block(col, b))
            .collect()
    }
}

pub(crate) fn block_count(rows: u64, rpb: u32) -> u64 {
    if rows == 0 || rpb == 0 {
        0
    } else {
        (rows - 1) / u64::from(rpb) + 1
    }
}

pub(crate) fn bad(kind: ErrorKind, m: String, at: u64) -> Error {
    Error::new(kind, m).at(at)
}

/// The header checks of §3, in their order.
fn read_header(src: &Source) -> Result<Header> {
    if src.len() < HEADER_SIZE {
        return Err(bad(
            ErrorKind::Truncated,
            format!("{} byte(s), the header needs 256", src.len()),
            0,
        ));
    }
    let h = run(
        &read_at(src, 0, HEADER_FIELDS_SIZE, "header")?,
        0,
        parse::header,
    )?;
    if h.signature != SIGNATURE {
        return Err(bad(
            ErrorKind::BadSignature,
            "not a binary dataview file (signature)".into(),
            0,
        ));
    }
    let (version, compat) = (h.version, h.compatible_version);
    if compat > version {
        return Err(bad(
            ErrorKind::BadVersion,
            format!(
                "compatible version {} above version {}",
                version_string(compat),
                version_string(version)
            ),
            16,
        ));
    }
    if version < READER_FIRST {
        return Err(bad(
            ErrorKind::BadVersion,
            format!("version {} below 1.1.1.2", version_string(version)),
            8,
        ));
    }
    if !(METADATA_VERSION..=VERSION_1_1_1_6).contains(&compat) {
        return Err(bad(
            ErrorKind::BadVersion,
            format!(
                "compatible version {} not in 1.1.1.4..=1.1.1.6",
                version_string(compat)
            ),
            16,
        ));
    }
    let (toc, tail, rows, cols) = (h.toc_offset, h.tail_offset, h.row_count, h.column_count);
    if rows < 0 {
        return Err(bad(
            ErrorKind::NegativeCount,
            format!("row count {rows}"),
            40,
        ));
    }
    if cols < 0 {
        return Err(bad(
            ErrorKind::NegativeCount,
            format!("column count {cols}"),
            48,
        ));
    }
    if cols != 0 && toc < HEADER_SIZE as i64 {
        return Err(bad(
            ErrorKind::OffsetOutOfRange,
            format!("table of contents offset {toc} inside the header"),
            24,
        ));
    }
    if tail < HEADER_SIZE as i64 {
        return Err(bad(
            ErrorKind::OffsetOutOfRange,
            format!("tail offset {tail} inside the header"),
            32,
        ));
    }
    let tail = tail as u64;
    let t = run(&read_at(src, tail, 8, "tail signature")?, tail, parse::tail)?;
    if t != TAIL_SIGNATURE {
        return Err(bad(ErrorKind::BadTail, "wrong tail signature".into(), tail));
    }
    Ok(Header {
        version,
        compatible_version: compat,
        toc_offset: toc.max(0) as u64,
        tail_offset: tail,
        row_count: rows as u64,
        column_count: cols as u32,
    })
}

/// The column table of contents (§5) and the live columns' annotations (§9).
fn read_toc(src: &Source, h: &Header, limits: &Limits) -> Result<Vec<Column>> {
    if h.column_count == 0 {
        return Ok(Vec::new());
    }
    let start = h.toc_offset;
    let mut cols = windowed(src, start, |bytes| parse::toc(bytes, start, h))?;
    for col in &mut cols {
        if col.is_dead() || col.annotation_offset == 0 {
            continue;
        }
        let at = col.annotation_offset;
        let entries = windowed(src, at, |bytes| parse::annotation_toc(bytes, at, h))
            .map_err(|e| e.in_column(&col.name))?;
        col.annotations =
            read_annotation_values(src, entries, limits).map_err(|e| e.in_column(&col.name))?;
    }
    Ok(cols)
}

fn read_annotation_values(
    src: &Source,
    mut out: Vec<Annotation>,
    limits: &Limits,
) -> Result<Vec<Annotation>> {
    for a in &mut out {
        let Some(ty) = a.codec.ty.clone() else {
            continue;
        };
        let loc = |e: Error| e.in_annotation(&a.kind);
        let stored = read_at(src, a.offset, a.size, "annotation block").map_err(loc)?;
        let value = match a.compression {
            Compression::Unknown(_) => continue,
            Compression::None => {
                let mut cur = Cursor::new(&stored, a.offset);
                decode(&ty, a.codec.dvbool, &mut cur, 1).map_err(loc)?
            }
            Compression::Deflate => {
                let max = limits.max_alloc.min(usize::MAX as u64) as usize;
                let (inflated, err) = codec::inflate_lenient(&stored, max);
                let mut cur = Cursor::new(&inflated, 0);
                match decode(&ty, a.codec.dvbool, &mut cur, 1) {
                    Ok(v) => v,
                    Err(e) if e.kind() == ErrorKind::Truncated && err.is_some() => {
                        return Err(loc(Error::new(
                            ErrorKind::DecompressFailed,
                            format!(
                                "corrupt deflate data before the value is complete: {}",
                                err.map(|e| e.to_string()).unwrap_or_default()
                            ),
                        )
                        .at(a.offset)));
                    }
                    Err(e) => return Err(loc(e.at(a.offset))),
                }
            }
        };
        a.value = Some(value);
    }
    Ok(out)
}

/// A column's lookup table (§8), entry by entry.
fn read_lookup(src: &Source, h: &Header, offset: u64, nblocks: u64) -> Result<Vec<BlockEntry>> {
    let bytes = read_at(
        src,
        offset,
        nblocks * BLOCK_ENTRY_SIZE,
        "block lookup table",
    )?;
    let mut c = Cursor::new(&bytes, offset);
    let mut out = Vec::with_capacity(nblocks as usize);
    for b in 0..nblocks {
        let at = c.offset();
        let RawBlockEntry {
            offset: off,
            compressed_len: clen,
            decompressed_len: dlen,
        } = c.read(parse::block_entry, "block lookup entry")?;
        let loc = |e: Error| e.in_block(b);
        if clen < 0 {
            return Err(loc(bad(
                ErrorKind::NegativeCount,
                format!("compressed length {clen}"),
                at + 8,
            )));
        }
        if dlen < 0 {
            return Err(loc(bad(
                ErrorKind::NegativeCount,
                format!("decompressed length {dlen}"),
                at + 12,
            )));
        }
        if off < HEADER_SIZE as i64 || off as i128 > h.tail_offset as i128 - i128::from(clen) {
            return Err(loc(bad(
                ErrorKind::OffsetOutOfRange,
                format!(
                    "block offset {off} outside 256..={}",
                    h.tail_offset as i128 - i128::from(clen)
                ),
                at,
            )));
        }
        out.push(BlockEntry {
            offset: off as u64,
            compressed_len: clen as u32,
            decompressed_len: dlen as u32,
        });
    }
    Ok(out)
}

/// Refuses a declared decompressed length that `stored` deflate bytes can
/// never produce (deflate expands at most 1032 times), before anything of
/// that size is allocated.
fn inflatable(stored: u64, want: u64) -> Result<()> {
    match codec::max_decoded_len(codec::Codec::Deflate, stored) {
        Some(most) if want > most => Err(Error::new(
            ErrorKind::DecompressFailed,
            format!("{stored} deflate byte(s) cannot produce the declared {want} (at most {most})"),
        )),
        _ => Ok(()),
    }
}
