//! `dataformats`: inspect, validate, dump and convert ML dataset files.
//!
//! Exit status: 0 success; 1 the file is invalid or an operation failed;
//! 2 bad command line; 3 the format is not recognised or not supported by
//! this build.

mod args;
mod bloscpack;
mod blz;
mod cntk;
mod common;
mod demo;
mod idv;
mod mldf;
mod output;
mod progress;
mod tbl2;
mod typed;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dataformats::convert::{ConvertOptions, Target};
use dataformats::{Format, detect};
use serde_json::json;

use crate::output::say;

/// Read, write, validate and convert the binary file formats ML datasets are stored in.
#[derive(Debug, Parser)]
#[command(name = "dataformats", version, about, long_about = None)]
struct Cli {
    /// Print machine-readable JSON on stdout (errors as JSON on stderr).
    #[arg(long, global = true)]
    json: bool,

    /// No progress bars, notes or summaries (errors and warnings still go to stderr).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,

    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Show a file's format, header, schema and layout.
    Inspect {
        /// The file (or BLZ/bcolz directory) to inspect.
        path: PathBuf,
        /// TBL v2: list every sample, not only the summary.
        #[arg(long)]
        all: bool,
    },
    /// Check a whole file: every structure, every checksum, every payload.
    Validate {
        /// The file (or BLZ/bcolz directory) to validate.
        path: PathBuf,
    },
    /// Print the Arrow schema of a file's typed view (one fixed schema per file).
    Schema {
        /// The file (or BLZ/bcolz directory).
        path: PathBuf,
    },
    /// Print the number of records, alone on one line.
    Count {
        /// The file (or BLZ/bcolz directory).
        path: PathBuf,
    },
    /// Print the first records of the typed view as JSON lines.
    Head {
        /// The file (or BLZ/bcolz directory).
        path: PathBuf,
        /// How many records.
        #[arg(short = 'n', default_value_t = 10)]
        n: u64,
        /// Only these columns, in this order (comma-separated names).
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Start at records of this range (`A..B`, `A..`, `..B`).
        #[arg(long, value_parser = parse_range)]
        range: Option<(u64, u64)>,
    },
    /// Print a file's records.
    Dump {
        /// The file (or BLZ/bcolz directory) to dump.
        path: PathBuf,
        /// Only records in this range, `A..B` (end exclusive), `A..` or `..B`.
        #[arg(long, value_parser = parse_range)]
        range: Option<(u64, u64)>,
        /// Columns and a record limit: the typed view's records as JSON lines.
        #[command(flatten)]
        select: typed::Select,
        /// TBL v2: write this sample's decoded bytes to `--out`.
        #[arg(long)]
        sample: Option<u64>,
        /// Where `--sample` goes.
        #[arg(long)]
        out: Option<PathBuf>,
        /// `jsonl`: JSON lines (IDV: in ML.NET's text forms; other formats: the
        /// typed view's records); IDV also `csv` (its default).
        #[arg(long, value_enum)]
        format: Option<args::DumpFormat>,
    },
    /// Convert a file to another format (chosen by the output's extension).
    Convert {
        /// The input file or directory.
        input: PathBuf,
        /// The output path, its format named by its extension (or --to); it
        /// appears only when the conversion succeeded. `-`: stdout (with
        /// --to jsonl, csv, arrows, arrow or parquet).
        output: PathBuf,
        /// The output format, when the extension does not name it.
        #[arg(long, value_enum)]
        to: Option<args::To>,
        /// Typed exports: only records in this range (`A..B`, `A..`, `..B`).
        #[arg(long, value_parser = parse_range)]
        range: Option<(u64, u64)>,
        /// Typed exports: columns and a record limit.
        #[command(flatten)]
        select: typed::Select,
        /// Settings when the output is a Bloscpack file.
        #[command(flatten)]
        pack: bloscpack::PackArgs,
        /// Settings for CNTK text -> binary.
        #[command(flatten)]
        ctf: cntk::CtfArgs,
        /// Settings for CSV -> IDV.
        #[command(flatten)]
        idv: idv::IdvArgs,
        /// JSON lines -> MLDF: the fields and writer options (see docs/formats/mldf.md).
        #[arg(long)]
        schema: Option<PathBuf>,
        /// Convert even when the target cannot hold a value as it is (the changes are listed).
        #[arg(long)]
        lossy: bool,
        /// tar -> TBL v2: threads compressing samples (the output does not depend on it).
        #[arg(long, default_value_t = 1, help_heading = "TBL v2 output")]
        workers: usize,
        /// TBL v2: store every sample raw (TurboLoader's --no-compress); IDV: no deflate.
        #[arg(long, help_heading = "TBL v2 output")]
        no_compress: bool,
    },
    /// Compare two MLDF files: header, schema and, with --content, every value.
    Diff {
        /// The first file.
        a: PathBuf,
        /// The second file.
        b: PathBuf,
        /// Compare every value too.
        #[arg(long)]
        content: bool,
    },
    /// List the formats this build knows and whether it reads them.
    Formats,
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write a small file of every supported format, read it back, and say what happened.
    Demo {
        /// Where to write the demo files (default: a new temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// `A..B`, `A..` (to the end) or `..B` (from the start); end exclusive.
fn parse_range(s: &str) -> Result<(u64, u64), String> {
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
    Ok((a, b))
}

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    kind: &'static str,
    path: Option<PathBuf>,
    message: String,
}

impl Failure {
    pub(crate) fn new(
        code: u8,
        kind: &'static str,
        path: Option<&Path>,
        message: impl Into<String>,
    ) -> Self {
        Failure {
            code,
            kind,
            path: path.map(Path::to_path_buf),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl From<dataformats::Error> for Failure {
    fn from(e: dataformats::Error) -> Self {
        Failure::new(1, "error", None, e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if json {
                let v = json!({
                    "error": {
                        "kind": f.kind,
                        "path": f.path.as_ref().map(|p| p.display().to_string()),
                        "message": f.message,
                    }
                });
                eprintln!("{v}");
            } else {
                match &f.path {
                    Some(p) => eprintln!("error: {}: {}", p.display(), f.message),
                    None => eprintln!("error: {}", f.message),
                }
            }
            ExitCode::from(f.code)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    if cli.quiet {
        progress::set_quiet();
    }
    match cli.command {
        Command::Inspect { path, .. } if unsniffed(&path, "npy") => {
            bloscpack::npy_file(&path, false, cli.json)
        }
        Command::Validate { path } if unsniffed(&path, "npy") => {
            bloscpack::npy_file(&path, true, cli.json)
        }
        Command::Inspect { path, .. } if unsniffed(&path, "tar") => {
            tbl2::tar_file(&path, false, cli.json)
        }
        Command::Validate { path } if unsniffed(&path, "tar") => {
            tbl2::tar_file(&path, true, cli.json)
        }
        Command::Inspect { path, all } => match sniff(&path)? {
            Format::Bloscpack => bloscpack::inspect(&path, cli.json),
            Format::Blz => blz::inspect(&path, cli.json),
            Format::Tbl2 => tbl2::inspect(&path, all, cli.json),
            Format::Cntk => cntk::inspect(&path, cli.json),
            Format::Idv => idv::inspect(&path, cli.json),
            Format::Mldf => mldf::inspect(&path, cli.json),
            Format::Ffcv => common::inspect(&path, cli.json),
            f => Err(not_supported(&path, f)),
        },
        Command::Validate { path } => match sniff(&path)? {
            Format::Bloscpack => bloscpack::validate(&path, cli.json),
            Format::Blz => blz::validate(&path, cli.json),
            Format::Tbl2 => tbl2::validate(&path, cli.json),
            Format::Cntk => cntk::validate(&path, cli.json),
            Format::Idv => idv::validate(&path, cli.json),
            Format::Mldf => mldf::validate(&path, cli.json),
            Format::Ffcv => common::validate(&path, cli.json),
            f => Err(not_supported(&path, f)),
        },
        Command::Schema { path } => typed::schema(&path, cli.json),
        Command::Count { path } => typed::count(&path, cli.json),
        Command::Head {
            path,
            n,
            columns,
            range,
        } => typed::rows(
            &path,
            range,
            &typed::Select {
                columns,
                limit: Some(n),
            },
        ),
        Command::Dump {
            path,
            range,
            select,
            ..
        } if select.is_set() => typed::rows(&path, range, &select),
        // JSON lines of any format other than IDV (whose own dump writes
        // them in ML.NET's text forms): the typed view's records.
        Command::Dump {
            path,
            range,
            format: Some(args::DumpFormat::Jsonl),
            ..
        } if !matches!(sniff(&path), Ok(Format::Idv)) => {
            typed::rows(&path, range, &typed::Select::default())
        }
        Command::Dump {
            path,
            range,
            sample,
            out,
            format,
            ..
        } => match sniff(&path)? {
            Format::Bloscpack => bloscpack::dump(&path, range, cli.json),
            Format::Blz => blz::dump(&path, range, cli.json),
            Format::Cntk => cntk::dump(&path, range, cli.json),
            Format::Idv => idv::dump(&path, range, format, cli.json),
            Format::Mldf => mldf::dump(&path, range),
            Format::Ffcv => common::dump(&path, range),
            Format::Tbl2 => match (sample, out) {
                (Some(i), Some(o)) => tbl2::extract(&path, i, &o),
                (None, None) => tbl2::dump(&path, range, cli.json),
                _ => Err(Failure::new(
                    2,
                    "usage",
                    None,
                    "--sample and --out go together",
                )),
            },
            f => Err(not_supported(&path, f)),
        },
        Command::Convert {
            input,
            output,
            pack,
            ..
        } if pack.append => bloscpack::append(&input, &output, &pack, cli.json),
        // JSON lines of a whole file keep the dump's JSON forms.
        Command::Convert {
            input,
            output,
            range: None,
            select,
            to: None,
            ..
        } if !select.is_set()
            && output != Path::new("-")
            && Target::from_path(&output) == Some(Target::JsonLines)
            && detect(&input).is_ok_and(|f| f.is_some_and(|f| f != Format::Ctf)) =>
        {
            match sniff(&input)? {
                Format::Mldf => mldf::to_jsonl(&input, &output),
                _ => common::to_jsonl(&input, &output, cli.json),
            }
        }
        Command::Convert {
            input,
            output,
            range,
            select,
            pack,
            ctf,
            idv,
            schema,
            lossy,
            workers,
            no_compress,
            to,
        } => {
            let usage = |m: String| Failure::new(2, "usage", None, m);
            let mut opts = ConvertOptions {
                to: to.map(args::To::target),
                columns: select.columns.clone(),
                rows: range.map(|(a, b)| a..b),
                limit: select.limit,
                lossy,
                ..Default::default()
            };
            opts.tbl2.compress = !no_compress;
            opts.tbl2.workers = workers;
            opts.bloscpack.write = pack.options()?;
            let chunk = match &pack.chunk_size {
                Some(s) => Some(
                    bloscpack::parse_size(s)
                        .ok_or_else(|| usage(format!("bad chunk size {s:?}")))?
                        as u64,
                ),
                None => None,
            };
            ctf.apply(&mut opts, chunk)?;
            idv.apply(&mut opts, no_compress)?;
            if let Some(s) = &schema {
                let text = std::fs::read_to_string(s)
                    .map_err(|e| Failure::new(1, "io", Some(s), e.to_string()))?;
                opts.mldf.json_schema = Some(
                    dataformats::convert::mldf_json::JsonSchema::from_json(&text)
                        .map_err(|e| Failure::new(2, "usage", Some(s), e.to_string()))?,
                );
            }
            if output == Path::new("-") {
                return typed::to_stdout(&input, &opts);
            }
            typed::library(&input, &output, &opts, cli.json)
        }
        Command::Diff { a, b, content } => mldf::diff(&a, &b, content, cli.json),
        Command::Formats => {
            formats(cli.json);
            Ok(())
        }
        Command::Demo { dir } => demo::run(dir, cli.json),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "dataformats", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// Whether `path` has no format `detect` knows and the extension `ext`
/// (`.npy` and `.tar`, which `convert` reads).
fn unsniffed(path: &Path, ext: &str) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
        && matches!(detect(path), Ok(None))
}

/// Detects `path`'s format, or fails with exit code 3 (unrecognised) / 1 (unreadable).
fn sniff(path: &Path) -> Result<Format, Failure> {
    match detect(path) {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(Failure::new(
            3,
            "unrecognized",
            Some(path),
            "unrecognized format: no known magic number or layout",
        )),
        Err(e) => Err(Failure::new(1, "io", Some(path), e.to_string())),
    }
}

fn not_supported(path: &Path, format: Format) -> Failure {
    if format == Format::Ctf && format.is_available() {
        return Failure::new(
            3,
            "unsupported",
            Some(path),
            "CTF text carries no stream definitions, so it is read by converting it: \
             `dataformats convert x.ctf x.bin --stream NAME:dense|sparse:DIM ...` (or --streams FILE)",
        );
    }
    if format.is_available() {
        return Failure::new(
            3,
            "unsupported",
            Some(path),
            format!(
                "this command does not handle {} ({}) yet",
                format.name(),
                format.description()
            ),
        );
    }
    Failure::new(
        3,
        "unsupported",
        Some(path),
        format!(
            "detected {} ({}), but this build does not support it yet: the {} crate has not landed",
            format.name(),
            format.description(),
            format.crate_name()
        ),
    )
}

fn formats(json: bool) {
    if json {
        let list: Vec<_> = Format::ALL
            .iter()
            .map(|f| {
                json!({
                    "name": f.name(),
                    "description": f.description(),
                    "crate": f.crate_name(),
                    "extension": f.extension(),
                    "supported": f.is_available(),
                })
            })
            .collect();
        say!("{}", json!({ "formats": list }));
        return;
    }
    say!(
        "{:<10} {:<9} {:<22} description",
        "format",
        "supported",
        "crate"
    );
    for f in Format::ALL {
        say!(
            "{:<10} {:<9} {:<22} {}",
            f.name(),
            if f.is_available() { "yes" } else { "not yet" },
            f.crate_name(),
            f.description()
        );
    }
}
