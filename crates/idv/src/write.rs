//! The streaming IDV writer (`idv.md` §2, §16.4: ML.NET's layout and defaults).

use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use dataformats_core::AtomicFile;
use dataformats_core::codec::{self, Codec};

use crate::encode::{check, encode};
use crate::error::{Error, ErrorKind, Result};
use crate::read::{
    BlockEntry, Compression, HEADER_SIZE, SIGNATURE, TAIL_SIGNATURE, VERSION_1_1_1_6,
};
use crate::types::{ColumnType, check_writable, put_leb128, put_string, write_codec};
use crate::values::Values;

/// ML.NET's cap on rows per block.
pub const DEFAULT_MAX_ROWS_PER_BLOCK: u32 = 8192;
/// Block groups from this size (estimated from the column types) are
/// deflated on every core.
const PARALLEL_GROUP_BYTES: u64 = 256 << 10;

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

/// Writes an IDV file block by block: memory holds one block group (one
/// block of every column) plus 16 bytes per written block. The file appears
/// at its path when [`Writer::finish`] succeeds.
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
        })
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
        // Columns are encoded here in order and deflated on every core
        // when the group is large enough to be worth threads; the blocks
        // are written in column order either way, so the file does not
        // depend on the number of threads.
        let deflate = self.opts.compression == Compression::Deflate;
        let level = self.opts.level as i32;
        let group_bytes: u64 = self
            .columns
            .iter()
            .map(|c| fixed_row_bytes(&c.ty).saturating_mul(rows))
            .sum();
        // Deflating 256 KiB takes milliseconds, far more than starting a
        // thread; smaller groups (and every small file) stay on this one.
        let threads = if deflate && self.columns.len() > 1 && group_bytes >= PARALLEL_GROUP_BYTES {
            dataformats_core::parallel::threads(0)
        } else {
            1
        };
        let Writer {
            out,
            pos,
            columns,
            pending,
            lookups,
            ..
        } = self;
        let mut next = columns.iter().zip(pending.iter_mut()).enumerate();
        dataformats_core::parallel::ordered(
            threads,
            || {
                let Some((i, (c, p))) = next.next() else {
                    return Ok(None);
                };
                let mut raw = Vec::new();
                encode(&c.ty, p, &mut raw);
                *p = p.empty_like();
                Ok(Some((i, raw)))
            },
            |(i, raw): (usize, Vec<u8>)| -> Result<(usize, usize, Vec<u8>)> {
                let raw_len = raw.len();
                if !deflate {
                    return Ok((i, raw_len, raw));
                }
                let stored = codec::compress(Codec::Deflate, &raw, Some(level))
                    .map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
                Ok((i, raw_len, stored))
            },
            |r| {
                let (i, raw_len, stored) = r?;
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
            },
        )
    }

    /// Writes the last block group, lookup tables, annotations, the table of
    /// contents, the tail and the header, and moves the file into place.
    pub fn finish(mut self) -> Result<()> {
        self.flush_group()?;
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
