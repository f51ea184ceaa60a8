//! The command line's option groups and fixed choices (`clap::ValueEnum`s,
//! so that `--help` and shell completions list their values), turned into
//! the library's typed options.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use dataformats::bloscpack::WriteOptions;
use dataformats::convert::mldf_json::JsonSchema;
use dataformats::convert::{ConvertOptions, Target};
use dataformats::core::ChecksumKind;
use dataformats::core::codec::blosc::{BloscCompressor, Shuffle};

use crate::Failure;

/// A Blosc compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Codec {
    /// BloscLZ, Blosc's own (the default).
    Blosclz,
    /// LZ4.
    Lz4,
    /// LZ4 high compression.
    Lz4hc,
    /// Snappy.
    Snappy,
    /// zlib (deflate).
    Zlib,
    /// Zstandard.
    Zstd,
}

impl Codec {
    /// The Blosc compressor it names.
    pub fn compressor(self) -> BloscCompressor {
        match self {
            Codec::Blosclz => BloscCompressor::BloscLz,
            Codec::Lz4 => BloscCompressor::Lz4,
            Codec::Lz4hc => BloscCompressor::Lz4Hc,
            Codec::Snappy => BloscCompressor::Snappy,
            Codec::Zlib => BloscCompressor::Zlib,
            Codec::Zstd => BloscCompressor::Zstd,
        }
    }
}

/// A Blosc shuffle filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShuffleArg {
    /// No shuffle.
    None,
    /// Byte shuffle (the default).
    Byte,
    /// Bit shuffle.
    Bit,
}

impl ShuffleArg {
    /// The Blosc filter it names.
    pub fn shuffle(self) -> Shuffle {
        match self {
            ShuffleArg::None => Shuffle::None,
            ShuffleArg::Byte => Shuffle::Byte,
            ShuffleArg::Bit => Shuffle::Bit,
        }
    }
}

/// A Bloscpack per-chunk checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Checksum {
    /// No checksum.
    #[value(alias = "None")]
    None,
    /// Adler-32 (the default).
    Adler32,
    /// CRC-32.
    Crc32,
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Checksum {
    /// The checksum it names.
    pub fn kind(self) -> ChecksumKind {
        match self {
            Checksum::None => ChecksumKind::None,
            Checksum::Adler32 => ChecksumKind::Adler32,
            Checksum::Crc32 => ChecksumKind::Crc32,
            Checksum::Md5 => ChecksumKind::Md5,
            Checksum::Sha1 => ChecksumKind::Sha1,
            Checksum::Sha224 => ChecksumKind::Sha224,
            Checksum::Sha256 => ChecksumKind::Sha256,
            Checksum::Sha384 => ChecksumKind::Sha384,
            Checksum::Sha512 => ChecksumKind::Sha512,
        }
    }
}

/// The element type of CNTK streams written from CTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Precision {
    /// float32 (the default).
    #[default]
    #[value(alias = "float")]
    F32,
    /// float64.
    #[value(alias = "double")]
    F64,
}

/// Byte-for-byte compatibility with a reference tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compat {
    /// ctf2bin.py's chunking rule.
    Ctf2bin,
}

/// The text form of `dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// JSON lines (IDV: in ML.NET's text forms; others: the typed view's).
    Jsonl,
    /// CSV (IDV: in ML.NET's text forms; others: the typed view's).
    Csv,
}

/// A conversion target, when the output's extension does not say it (or
/// the output is `-`, stdout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum To {
    /// MLDF 1.0.
    Mldf,
    /// TurboLoader TBL v2.
    Tbl,
    /// CNTK binary (CBF).
    Cntk,
    /// ML.NET binary dataview.
    Idv,
    /// Bloscpack.
    Blp,
    /// A bcolz/BLZ directory.
    Bcolz,
    /// Parquet.
    Parquet,
    /// Arrow IPC file.
    Arrow,
    /// Arrow IPC stream.
    Arrows,
    /// CSV.
    Csv,
    /// JSON lines.
    Jsonl,
    /// CNTK text format.
    Ctf,
    /// A tar of samples.
    Tar,
    /// A NumPy .npy file.
    Npy,
}

impl To {
    /// The library's target it names.
    pub fn target(self) -> Target {
        match self {
            To::Mldf => Target::Mldf,
            To::Tbl => Target::Tbl2,
            To::Cntk => Target::Cntk,
            To::Idv => Target::Idv,
            To::Blp => Target::Bloscpack,
            To::Bcolz => Target::Blz,
            To::Parquet => Target::Parquet,
            To::Arrow => Target::ArrowFile,
            To::Arrows => Target::ArrowStream,
            To::Csv => Target::Csv,
            To::Jsonl => Target::JsonLines,
            To::Ctf => Target::Ctf,
            To::Tar => Target::Tar,
            To::Npy => Target::Npy,
        }
    }
}

/// Which records and columns to read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Select {
    /// Only these columns, in this order (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// At most this many records.
    #[arg(long)]
    pub limit: Option<u64>,
}

impl Select {
    /// Whether anything is selected.
    pub fn is_set(&self) -> bool {
        self.columns.is_some() || self.limit.is_some()
    }
}

/// `A..B`, `A..` (to the end) or `..B` (from the start); end exclusive.
pub fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}` is not a range like 10..20, 10.. or ..20"))?;
    let a: u64 = match a.trim() {
        "" => 0,
        a => a.parse().map_err(|e| format!("range start `{a}`: {e}"))?,
    };
    let b: u64 = match b.trim() {
        "" => u64::MAX,
        b => b.parse().map_err(|e| format!("range end `{b}`: {e}"))?,
    };
    if b < a {
        return Err(format!("range end {b} is before its start {a}"));
    }
    Ok(a..b)
}

/// A byte size with an optional K, M or G suffix (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("bad size `{s}` (a number, optionally with K, M or G)");
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (t.get(..i), 10),
        Some((i, 'M' | 'm')) => (t.get(..i), 20),
        Some((i, 'G' | 'g')) => (t.get(..i), 30),
        _ => (Some(t), 0),
    };
    let n: u64 = num.and_then(|n| n.trim().parse().ok()).ok_or_else(bad)?;
    n.checked_mul(1 << shift).ok_or_else(bad)
}

/// `dataformats convert`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ConvertArgs {
    /// The input file, directory, or URL (s3://, gs://, az://, http(s)://).
    pub input: PathBuf,
    /// The output path or URL, its format named by its extension (or
    /// --to); it appears only when the conversion succeeded (a URL is
    /// uploaded then). `-`: stdout (with
    /// --to jsonl, csv, arrows, arrow or parquet).
    pub output: PathBuf,
    /// The output format, when the extension does not name it.
    #[arg(long, value_enum)]
    to: Option<To>,
    /// Typed exports: only records in this range (`A..B`, `A..`, `..B`).
    #[arg(long, value_parser = parse_range)]
    range: Option<std::ops::Range<u64>>,
    /// Typed exports: columns and a record limit.
    #[command(flatten)]
    select: Select,
    /// Settings when the output is a Bloscpack file.
    #[command(flatten)]
    pub pack: PackArgs,
    /// Settings for CNTK text -> binary.
    #[command(flatten)]
    ctf: CtfArgs,
    /// Settings for CSV -> IDV.
    #[command(flatten)]
    idv: IdvArgs,
    /// Settings when the output is an MLDF file.
    #[command(flatten)]
    mldf: MldfArgs,
    /// JSON lines -> MLDF: the fields and writer options (see docs/formats/mldf.md).
    #[arg(long)]
    schema: Option<PathBuf>,
    /// Convert even when the target cannot hold a value as it is (the changes are listed).
    #[arg(long)]
    lossy: bool,
    /// Threads the conversion may use (0: every core; the output does not
    /// depend on it): decoding the input's batches, CNTK text -> binary,
    /// JSON lines -> MLDF, deflating IDV output, compressing Bloscpack
    /// chunks and TBL v2 samples (tar -> TBL v2 too).
    #[arg(long, alias = "workers", default_value_t = 0)]
    threads: usize,
    /// TBL v2: store every sample raw (TurboLoader's --no-compress); IDV: no deflate.
    #[arg(long, help_heading = "TBL v2 output")]
    no_compress: bool,
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::new(2, "usage", None, m)
}

fn read_text(p: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(p).map_err(|e| Failure::new(1, "io", Some(p), e.to_string()))
}

impl ConvertArgs {
    /// The library's options for this command line.
    pub fn options(&self) -> Result<ConvertOptions, Failure> {
        let mut opts = ConvertOptions {
            to: self.to.map(To::target),
            columns: self.select.columns.clone(),
            rows: self.range.clone(),
            limit: self.select.limit,
            lossy: self.lossy,
            ..Default::default()
        };
        opts.tbl2.compress = !self.no_compress;
        opts.threads = self.threads;
        opts.bloscpack.write = self.pack.options()?;
        let chunk = self.pack.chunk_size.as_deref().map(parse_size).transpose();
        self.ctf.apply(&mut opts, chunk.map_err(usage)?)?;
        self.idv.apply(&mut opts, self.no_compress)?;
        if let Some(s) = &self.schema {
            let schema = JsonSchema::from_json(&read_text(s)?)
                .map_err(|e| Failure::new(2, "usage", Some(s), e.to_string()))?;
            opts.mldf.json_schema = Some(schema);
        }
        self.mldf.apply(&mut opts)?;
        Ok(opts)
    }
}

/// Settings for writing MLDF files from the command line.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct MldfArgs {
    /// Store every value as one zstd frame (the compressed flag).
    #[arg(long, help_heading = "MLDF output")]
    mldf_compress: bool,
    /// Store the data region's CRC-32 (the checksummed flag; `validate` checks it).
    #[arg(long, help_heading = "MLDF output")]
    mldf_checksum: bool,
    /// Data region page size: a power of two from 4K to 2G (suffixes K, M, G; default 2M).
    #[arg(long, help_heading = "MLDF output")]
    mldf_page_size: Option<String>,
    /// Start a sample's values on a new page when they would straddle one and fit in one.
    #[arg(long, help_heading = "MLDF output")]
    mldf_page_packing: bool,
}

impl MldfArgs {
    /// Puts the MLDF writer settings into `opts` (on top of a JSON lines
    /// `--schema`'s own).
    fn apply(&self, opts: &mut ConvertOptions) -> Result<(), Failure> {
        let bad = |e: String| usage(format!("--mldf-page-size: {e}"));
        let page_size = self.mldf_page_size.as_deref().map(parse_size).transpose();
        opts.mldf
            .apply(dataformats::convert::mldf::WriterFlags {
                compressed: self.mldf_compress,
                checksummed: self.mldf_checksum,
                page_packing: self.mldf_page_packing,
                page_size: page_size.map_err(bad)?,
            })
            .map_err(|e| bad(e.to_string()))
    }
}

/// Settings for writing Bloscpack files from the command line.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct PackArgs {
    /// Blosc compressor.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    codec: Option<Codec>,
    /// Compression level 0..=9.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=9), help_heading = "Bloscpack output")]
    clevel: Option<u8>,
    /// Shuffle filter.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    shuffle: Option<ShuffleArg>,
    /// Uncompressed bytes per chunk (suffixes K, M, G allowed); CNTK: bytes per chunk.
    #[arg(long, help_heading = "Bloscpack output")]
    chunk_size: Option<String>,
    /// Per-chunk checksum.
    #[arg(long, value_enum, help_heading = "Bloscpack output")]
    checksum: Option<Checksum>,
    /// Blosc typesize (default: the array's itemsize, 8 for raw bytes).
    #[arg(long, help_heading = "Bloscpack output")]
    typesize: Option<usize>,
    /// Write no offsets table.
    #[arg(long, help_heading = "Bloscpack output")]
    no_offsets: bool,
    /// Offset slots reserved for appends (default 10 × nchunks).
    #[arg(long, help_heading = "Bloscpack output")]
    max_app_chunks: Option<u64>,
    /// Append IN's bytes to the existing Bloscpack file OUT instead of writing a new file.
    #[arg(long, help_heading = "Bloscpack output")]
    pub append: bool,
}

impl PackArgs {
    /// The Bloscpack writer's options.
    pub fn options(&self) -> Result<WriteOptions, Failure> {
        let mut o = WriteOptions::default();
        if let Some(c) = self.codec {
            o = o.codec(c.compressor());
        }
        if let Some(l) = self.clevel {
            o = o.clevel(l);
        }
        if let Some(s) = self.shuffle {
            o = o.shuffle(s.shuffle());
        }
        if let Some(s) = &self.chunk_size {
            let n = parse_size(s).map_err(usage)?;
            o = o.chunk_size(usize::try_from(n).map_err(|_| usage(format!("chunk size {s}")))?);
        }
        if let Some(c) = self.checksum {
            o = o.checksum(c.kind());
        }
        if let Some(t) = self.typesize {
            o = o.typesize(t);
        }
        if self.no_offsets {
            o = o.offsets(false);
        }
        if let Some(m) = self.max_app_chunks {
            o = o.max_app_chunks(m);
        }
        Ok(o)
    }
}

/// Settings for CTF → CBF conversion.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct CtfArgs {
    /// A ctf2bin stream file (`name alias dense|sparse dim` per line).
    #[arg(long, help_heading = "CNTK text input")]
    streams: Option<PathBuf>,
    /// A stream as NAME:dense|sparse:DIM[:ALIAS] (repeatable; instead of --streams).
    #[arg(long = "stream", help_heading = "CNTK text input")]
    stream: Vec<String>,
    /// Element type of every stream.
    #[arg(
        long,
        value_enum,
        default_value = "f32",
        help_heading = "CNTK text input"
    )]
    precision: Precision,
    /// Reproduce a reference tool's output byte for byte (its chunking rule).
    #[arg(long, value_enum, help_heading = "CNTK text input")]
    compat: Option<Compat>,
}

impl CtfArgs {
    /// Puts the CTF input settings (and `--compat`'s chunking, with the
    /// chunk size `chunk`) into `opts`.
    fn apply(&self, opts: &mut ConvertOptions, chunk: Option<u64>) -> Result<(), Failure> {
        use dataformats::cntk::ctf::{parse_stream_arg, parse_streams_file};
        use dataformats::cntk::{Chunking, ElemType};
        opts.ctf.streams = match (&self.streams, self.stream.is_empty()) {
            (Some(p), true) => parse_streams_file(&read_text(p)?)
                .map_err(|e| Failure::new(2, "usage", Some(p), e.to_string()))?,
            (None, _) => self
                .stream
                .iter()
                .map(|s| parse_stream_arg(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| usage(e.to_string()))?,
            (Some(_), false) => {
                return Err(usage(
                    "give the streams with either --streams FILE or --stream NAME:dense|sparse:DIM[:ALIAS]",
                ));
            }
        };
        opts.ctf.precision = match self.precision {
            Precision::F32 => ElemType::F32,
            Precision::F64 => ElemType::F64,
        };
        let size = chunk.unwrap_or(32 << 20);
        opts.cntk.chunking = match self.compat {
            Some(Compat::Ctf2bin) => Chunking::Ctf2bin(size),
            None => Chunking::Target(size),
        };
        Ok(())
    }
}

/// Settings for CSV → IDV.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct IdvArgs {
    /// A column as NAME:TYPE[:SOURCE] (repeatable), ML.NET TextLoader style:
    /// TYPE is I1 U1 I2 U2 I4 U4 I8 U8 R4 R8 BL TX TS DT DZ, or a key
    /// U1[0-N] / U2[0-N] / U4[0-N] / U8[0-N]; SOURCE is a CSV column index
    /// or a range A-B (a vector), by default the next column.
    #[arg(long = "column", help_heading = "CSV -> IDV")]
    column: Vec<String>,
    /// The CSV has no header line.
    #[arg(long, help_heading = "CSV -> IDV")]
    no_header: bool,
    /// Field separator.
    #[arg(long, default_value = ",", help_heading = "CSV -> IDV")]
    separator: String,
    /// Rows per IDV block (default: ML.NET's heuristic).
    #[arg(long, help_heading = "IDV output")]
    rows_per_block: Option<u32>,
}

impl IdvArgs {
    /// Puts the CSV -> IDV settings into `opts` (TextLoader columns only
    /// when `--column` is given; otherwise the CSV's types are inferred).
    fn apply(&self, opts: &mut ConvertOptions, no_compress: bool) -> Result<(), Failure> {
        use dataformats::convert::text::{TextColumn, TextLoader};
        if no_compress {
            opts.idv.writer.compression = dataformats::idv::Compression::None;
        }
        opts.idv.writer.rows_per_block = self.rows_per_block;
        if self.column.is_empty() {
            return Ok(());
        }
        let separator = match self.separator.as_bytes() {
            [b] => *b,
            _ => return Err(usage("--separator takes one ASCII character")),
        };
        opts.idv.text = Some(TextLoader {
            columns: TextColumn::parse_all(&self.column).map_err(|e| usage(e.to_string()))?,
            header: !self.no_header,
            separator,
        });
        Ok(())
    }
}
