//! The fixed choices of the command line, as `clap::ValueEnum`s: `--help`
//! and shell completions list their values.

use clap::ValueEnum;
use dataformats::convert::Target;
use dataformats::core::ChecksumKind;
use dataformats::core::codec::blosc::{BloscCompressor, Shuffle};

/// A Blosc compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Codec {
    Blosclz,
    Lz4,
    Lz4hc,
    Snappy,
    Zlib,
    Zstd,
}

impl Codec {
    pub(crate) fn compressor(self) -> BloscCompressor {
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
pub(crate) enum ShuffleArg {
    None,
    Byte,
    Bit,
}

impl ShuffleArg {
    pub(crate) fn shuffle(self) -> Shuffle {
        match self {
            ShuffleArg::None => Shuffle::None,
            ShuffleArg::Byte => Shuffle::Byte,
            ShuffleArg::Bit => Shuffle::Bit,
        }
    }
}

/// A Bloscpack per-chunk checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Checksum {
    #[value(alias = "None")]
    None,
    Adler32,
    Crc32,
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Checksum {
    pub(crate) fn kind(self) -> ChecksumKind {
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
pub(crate) enum Precision {
    #[default]
    #[value(alias = "float")]
    F32,
    #[value(alias = "double")]
    F64,
}

/// Byte-for-byte compatibility with a reference tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Compat {
    /// ctf2bin.py's chunking rule.
    Ctf2bin,
}

/// The text form of `dump` for IDV files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DumpFormat {
    /// JSON lines.
    Jsonl,
    /// CSV (IDV: ML.NET's text forms).
    Csv,
}

/// A conversion target, when the output's extension does not say it (or
/// the output is `-`, stdout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum To {
    Mldf,
    Tbl,
    Cntk,
    Idv,
    Blp,
    Bcolz,
    Parquet,
    Arrow,
    Arrows,
    Csv,
    Jsonl,
    Ctf,
    Tar,
    Npy,
}

impl To {
    pub(crate) fn target(self) -> Target {
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
