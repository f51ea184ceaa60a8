//! The streaming IDV writer (`idv.md` §2, §16.4: ML.NET's layout and defaults).

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use dataformats_core::AtomicFile;
use dataformats_core::codec::{self, Codec};
use dataformats_core::parallel::OrderedPool;

use crate::encode::{check, encode};
use crate::error::{Error, ErrorKind, Result};
use crate::read::{
    BlockEntry, Compression, HEADER_SIZE, SIGNATURE, TAIL_SIGNATURE, VERSION_1_1_1_6,
};
use crate::types::{ColumnType, check_writable, put_leb128, put_string, write_codec};
use crate::values::Values;

/// ML.NET's cap on rows per block.
pub const DEFAULT_MAX_ROWS_PER_BLOCK: u32 = 8192;
/// From the first block group of this size (estimated from the column
/// types) on, blocks are deflated on every core.
const PARALLEL_GROUP_BYTES: u64 = 256 << 10;

/// Bytes of blocks handed to the deflating threads and not yet written, at
/// most (a larger block goes alone).
const DEFLATING_BYTES: usize = 64 << 20;

/// What a deflating thread gives back for a column's block: the column,
/// the block's decoded length and its deflated bytes.
type Deflated = (usize, usize, std::result::Result<Vec<u8>, String>);

/// ML.NET's cap on the bytes of one block group (one block of every column).
pub const DEFAULT_MAX_BYTES_PER_BLOCK_GROUP: u64 = 80 << 20;

/// One column to write: name, type and annotations.
#[derive(Debug, Clone)]
pub struct ColumnSpec {
    /// Name.
    pub name: String,
    /// Type.
    pub ty: ColumnType,
    /// Annotations: kind, type, and a one-row value.
    pub annotations: Vec<(String, ColumnType, Values)>,
}

impl ColumnSpec {
    /// A column without annotations.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Self {
        ColumnSpec {
            name: name.into(),
            ty,
            annotations: Vec::new(),
        }
    }

    /// Adds an annotation (`value` holds one row of `ty`).
    #[must_use]
    pub fn annotation(mut self, kind: impl Into<String>, ty: ColumnType, value: Values) -> Self {
        self.annotations.push((kind.into(), ty, value));
        self
    }
}

/// Writer settings; the defaults are ML.NET's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterOptions {
    /// Deflate (default) or none.
    pub compression: Compression,
    /// Rows per block; `None` picks ML.NET's heuristic (at most 8192, fewer
    /// when a block group of fixed-size columns would pass 80 MB).
    pub rows_per_block: Option<u32>,
    /// Deflate level 0–9.
    pub level: u32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: Compression::Deflate,
            rows_per_block: None,
            level: 6,
        }
    }
}

/// Writes an IDV file block by block: memory holds the block group being
/// filled (one block of every column), the blocks still being deflated
/// (at most 64 MiB of them) and 16 bytes per written block. Large files
/// are deflated on every core, blocks of several groups at once, and
/// written in order, so the file is the same whatever the number of
/// threads. The file appears at its path when [`Writer::finish`] succeeds.
#[derive(Debug)]
pub struct Writer {
    out: BufWriter<AtomicFile>,
    pos: u64,
    columns: Vec<ColumnSpec>,
    opts: WriterOptions,
    rpb: u32,
    pending: Vec<Values>,
    rows: u64,
    lookups: Vec<Vec<BlockEntry>>,
    /// Threads to deflate on (0: every core).
    threads: usize,
    /// The deflating threads, from the first large block group on.
    deflater: Option<OrderedPool<(usize, Vec<u8>), Deflated>>,
}

fn io(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, e.to_string())
}

fn arg(m: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, m)
}

impl Writer {
    /// Starts a file at `path` with `columns`.
    pub fn create(
        path: impl AsRef<Path>,
        columns: Vec<ColumnSpec>,
        opts: WriterOptions,
    ) -> Result<Self> {
        if matches!(opts.compression, Compression::Unknown(_)) {
            return Err(arg("compression must be none or deflate".into()));
        }
        if opts.level > 9 {
            return Err(arg(format!("deflate level {} not in 0..=9", opts.level)));
        }
        if columns.len() > i32::MAX as usize {
            return Err(arg("too many columns".into()));
        }
        for c in &columns {
            check_writable(&c.ty).map_err(|e| e.in_column(&c.name))?;
            let mut kinds = std::collections::HashSet::new();
            for (kind, ty, v) in &c.annotations {
                let loc = |e: Error| e.in_column(&c.name).in_annotation(kind);
                if kind.is_empty() || !kinds.insert(kind) {
                    return Err(loc(arg(
                        "annotation kinds must be non-empty and unique".into()
                    )));
                }
                check_writable(ty).map_err(loc)?;
                if v.len() != 1 {
                    return Err(loc(arg(format!(
                        "an annotation holds one value, not {}",
                        v.len()
                    ))));
                }
                check(ty, v).map_err(loc)?;
            }
        }
        let rpb = match opts.rows_per_block {
            Some(0) => return Err(arg("rows per block must be at least 1".into())),
            Some(r) if r > i32::MAX as u32 => {
                return Err(arg("rows per block above 2^31-1".into()));
            }
            Some(r) => r,
            None => {
                let row_bytes: u64 = columns
                    .iter()
                    .map(|c| fixed_row_bytes(&c.ty))
                    .sum::<u64>()
                    .max(1);
                (DEFAULT_MAX_BYTES_PER_BLOCK_GROUP / row_bytes)
                    .clamp(1, u64::from(DEFAULT_MAX_ROWS_PER_BLOCK)) as u32
            }
        };
        let f = AtomicFile::create(path).map_err(io)?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(&[0u8; HEADER_SIZE as usize]).map_err(io)?;
        Ok(Writer {
            out,
            pos: HEADER_SIZE,
            pending: columns.iter().map(|c| Values::empty_of(&c.ty)).collect(),
            lookups: vec![Vec::new(); columns.len()],
            columns,
            opts,
            rpb,
            rows: 0,
            threads: 0,
            deflater: None,
        })
    }

    /// Deflates on `threads` threads (0, the default: every core; 1: only
    /// the calling thread). The file is the same either way. Takes effect
    /// for the block groups not yet started on threads.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads;
    }

    /// Rows per block in use.
    pub fn rows_per_block(&self) -> u32 {
        self.rpb
    }

    /// Appends rows: one [`Values`] per column, in column order, all of the
    /// same length. Nothing is written if any column is refused.
    pub fn write_batch(&mut self, batch: &[Values]) -> Result<()> {
        if batch.len() != self.columns.len() {
            return Err(arg(format!(
                "{} column(s) given, the file has {}",
                batch.len(),
                self.columns.len()
            )));
        }
        let n = batch.first().map_or(0, Values::len);
        for (c, v) in self.columns.iter().zip(batch) {
            if v.len() != n {
                return Err(arg(format!(
                    "column {:?}: {} rows, the first column has {n}",
                    c.name,
                    v.len()
                )));
            }
            check(&c.ty, v).map_err(|e| e.in_column(&c.name))?;
        }
        let mut done = 0usize;
        while done < n {
            let room = (self.rpb as usize)
                .saturating_sub(self.pending.first().map_or(0, Values::len))
                .max(1);
            let take = room.min(n - done);
            for (p, v) in self.pending.iter_mut().zip(batch) {
                p.append_from(v, done..done + take);
            }
            done += take;
            self.rows += take as u64;
            if self.pending.first().map_or(0, Values::len) >= self.rpb as usize {
                self.flush_group()?;
            }
        }
        if self.columns.is_empty() {
            self.rows += n as u64;
        }
        Ok(())
    }

    /// Appends rows to a file without columns (only the row count is kept).
    pub fn add_empty_rows(&mut self, n: u64) -> Result<()> {
        if !self.columns.is_empty() {
            return Err(arg("the file has columns; use write_batch".into()));
        }
        self.rows += n;
        Ok(())
    }

    fn flush_group(&mut self) -> Result<()> {
        let rows = match self.pending.first() {
            Some(p) if !p.is_empty() => p.len() as u64,
            _ => return Ok(()),
        };
        let deflate = self.opts.compression == Compression::Deflate;
        let level = self.opts.level as i32;
        let group_bytes: u64 = self
            .columns
            .iter()
            .map(|c| fixed_row_bytes(&c.ty).saturating_mul(rows))
            .sum();
        // Deflating 256 KiB takes milliseconds, far more than handing it
        // to a thread; files of small groups (every small file) stay on
        // this one. Once the threads are there, every later block goes
        // through them, so the blocks come out in order.
        if deflate && self.deflater.is_none() && group_bytes >= PARALLEL_GROUP_BYTES {
            let threads = dataformats_core::parallel::threads(self.threads);
            if threads > 1 {
                let pool = OrderedPool::new(
                    threads,
                    4 * threads,
                    DEFLATING_BYTES,
                    move |(i, raw): (usize, Vec<u8>)| -> Deflated {
                        let stored = codec::compress(Codec::Deflate, &raw, Some(level))
                            .map_err(|e| e.to_string());
                        (i, raw.len(), stored)
                    },
                )
                .map_err(io)?;
                self.deflater = Some(pool);
            }
        }
        let Writer {
            out,
            pos,
            columns,
            pending,
            lookups,
            deflater,
            ..
        } = self;
        for (i, (c, p)) in columns.iter().zip(pending.iter_mut()).enumerate() {
            let mut raw = Vec::new();
            encode(&c.ty, p, &mut raw);
            *p = p.empty_like();
            let mut put = |d: Deflated| put_block(out, pos, lookups, columns, d);
            match deflater {
                Some(pool) => {
                    let n = raw.len();
                    pool.push((i, raw), n, put)?;
                }
                None if deflate => {
                    let stored = codec::compress(Codec::Deflate, &raw, Some(level))
                        .map_err(|e| e.to_string());
                    put((i, raw.len(), stored))?;
                }
                None => put((i, raw.len(), Ok(raw)))?,
            }
        }
        Ok(())
    }

    /// Writes every block still being deflated.
    fn drain(&mut self) -> Result<()> {
        let Writer {
            out,
            pos,
            columns,
            lookups,
            deflater,
            ..
        } = self;
        match deflater {
            Some(pool) => pool.finish(|d| put_block(out, pos, lookups, columns, d)),
            None => Ok(()),
        }
    }

    /// Writes the last block group, lookup tables, annotations, the table of
    /// contents, the tail and the header, and moves the file into place.
    pub fn finish(mut self) -> Result<()> {
        self.flush_group()?;
        self.drain()?;
        let comp_byte = match self.opts.compression {
            Compression::Deflate => 1u8,
            _ => 0u8,
        };
        let mut lookup_offsets = Vec::with_capacity(self.columns.len());
        for l in &self.lookups {
            lookup_offsets.push(self.pos);
            for e in l {
                self.out
                    .write_all(&(e.offset as i64).to_le_bytes())
                    .map_err(io)?;
                self.out
                    .write_all(&(e.compressed_len as i32).to_le_bytes())
                    .map_err(io)?;
                self.out
                    .write_all(&(e.decompressed_len as i32).to_le_bytes())
                    .map_err(io)?;
                self.pos += 16;
            }
        }
        let mut ann_offsets = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            if c.annotations.is_empty() {
                ann_offsets.push(0u64);
                continue;
            }
            let mut toc = Vec::new();
            put_leb128(&mut toc, c.annotations.len() as u64);
            for (kind, ty, v) in &c.annotations {
                let mut raw = Vec::new();
                encode(ty, v, &mut raw);
                let packed = codec::compress(Codec::Deflate, &raw, Some(self.opts.level as i32))
                    .map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
                // Compressed only when strictly shorter, as ML.NET does.
                let (bytes, kind_byte) = if comp_byte == 1 && packed.len() < raw.len() {
                    (packed, 1u8)
                } else {
                    (raw, 0u8)
                };
                put_string(&mut toc, kind);
                write_codec(&mut toc, ty);
                toc.push(kind_byte);
                toc.extend_from_slice(&(self.pos as i64).to_le_bytes());
                put_leb128(&mut toc, bytes.len() as u64);
                self.out.write_all(&bytes).map_err(io)?;
                self.pos += bytes.len() as u64;
            }
            ann_offsets.push(self.pos);
            self.out.write_all(&toc).map_err(io)?;
            self.pos += toc.len() as u64;
        }
        let toc_offset = self.pos;
        let rpb_written = if self.rows == 0 {
            1
        } else {
            u64::from(self.rpb).min(self.rows)
        };
        let mut toc = Vec::new();
        for (i, c) in self.columns.iter().enumerate() {
            put_string(&mut toc, &c.name);
            write_codec(&mut toc, &c.ty);
            toc.push(comp_byte);
            put_leb128(&mut toc, rpb_written);
            toc.extend_from_slice(
                &(lookup_offsets.get(i).copied().unwrap_or(0) as i64).to_le_bytes(),
            );
            toc.extend_from_slice(&(ann_offsets.get(i).copied().unwrap_or(0) as i64).to_le_bytes());
        }
        self.out.write_all(&toc).map_err(io)?;
        self.pos += toc.len() as u64;
        let tail = self.pos;
        self.out
            .write_all(&TAIL_SIGNATURE.to_le_bytes())
            .map_err(io)?;
        let mut header = Vec::with_capacity(HEADER_SIZE as usize);
        header.extend_from_slice(&SIGNATURE.to_le_bytes());
        header.extend_from_slice(&VERSION_1_1_1_6.to_le_bytes());
        header.extend_from_slice(&VERSION_1_1_1_6.to_le_bytes());
        header.extend_from_slice(&(toc_offset as i64).to_le_bytes());
        header.extend_from_slice(&(tail as i64).to_le_bytes());
        header.extend_from_slice(&(self.rows as i64).to_le_bytes());
        header.extend_from_slice(&(self.columns.len() as i32).to_le_bytes());
        self.out.seek(SeekFrom::Start(0)).map_err(io)?;
        self.out.write_all(&header).map_err(io)?;
        let f = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        f.finish().map_err(io)
    }
}

/// Writes column `i`'s block (deflated, or stored as it is) at `pos` and
/// enters it in the column's lookup table.
fn put_block(
    out: &mut BufWriter<AtomicFile>,
    pos: &mut u64,
    lookups: &mut [Vec<BlockEntry>],
    columns: &[ColumnSpec],
    (i, raw_len, stored): Deflated,
) -> Result<()> {
    let stored = stored.map_err(|e| Error::new(ErrorKind::Io, e))?;
    if raw_len > i32::MAX as usize || stored.len() > i32::MAX as usize {
        let name = columns.get(i).map_or("", |c| c.name.as_str());
        return Err(arg(format!(
            "column {name:?}: a block above 2 GiB; use fewer rows per block"
        )));
    }
    out.write_all(&stored).map_err(io)?;
    if let Some(l) = lookups.get_mut(i) {
        l.push(BlockEntry {
            offset: *pos,
            compressed_len: stored.len() as u32,
            decompressed_len: raw_len as u32,
        });
    }
    *pos += stored.len() as u64;
    Ok(())
}

/// Bytes per row of a column whose values have a fixed size (text and
/// variable vectors count 16, a guess).
fn fixed_row_bytes(ty: &ColumnType) -> u64 {
    let item = ty.item().fixed_size().map_or(16, |s| s as u64);
    match ty {
        ColumnType::Scalar(_) => item,
        ColumnType::Vector { .. } => match ty.vector_size() {
            Some(n) if n > 0 => item * u64::from(n),
            _ => 16 * item,
        },
    }
}
