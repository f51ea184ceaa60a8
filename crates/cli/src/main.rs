//! `dataformats`: inspect, validate, dump and convert ML dataset files.
//!
//! Exit status: 0 success; 1 the file is invalid or an operation failed;
//! 2 bad command line; 3 the format is not recognised or not supported by
//! this build.

mod demo;
mod output;
mod progress;
mod sql;
mod typed;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dataformats::DatasetError;
use dataformats::describe::{self, Description, DumpForm, DumpOptions, InspectOptions};
use serde_json::json;

use dataformats_cli::Failure;
use dataformats_cli::args::{self, DumpFormat, Select, parse_range};

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
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://) to inspect.
        path: PathBuf,
        /// TBL v2: list every sample, not only the summary.
        #[arg(long)]
        all: bool,
    },
    /// Check a whole file: every structure, every checksum, every payload.
    Validate {
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://) to validate.
        path: PathBuf,
    },
    /// Print the Arrow schema of a file's typed view (one fixed schema per file).
    Schema {
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://).
        path: PathBuf,
    },
    /// Print the number of records, alone on one line.
    Count {
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://).
        path: PathBuf,
    },
    /// Print the first records of the typed view as JSON lines.
    Head {
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://).
        path: PathBuf,
        /// How many records.
        #[arg(short = 'n', default_value_t = 10)]
        n: u64,
        /// Only these columns, in this order (comma-separated names).
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Start at records of this range (`A..B`, `A..`, `..B`).
        #[arg(long, value_parser = parse_range)]
        range: Option<Range<u64>>,
    },
    /// Print a file's records.
    Dump {
        /// The file, BLZ/bcolz directory, or URL (s3://, gs://, az://, http(s)://) to dump.
        path: PathBuf,
        /// Only records in this range, `A..B` (end exclusive), `A..` or `..B`.
        #[arg(long, value_parser = parse_range)]
        range: Option<Range<u64>>,
        /// Columns and a record limit: the typed view's records as JSON lines.
        #[command(flatten)]
        select: Select,
        /// TBL v2: write this sample's decoded bytes to `--out`.
        #[arg(long, requires = "out")]
        sample: Option<u64>,
        /// Where `--sample` goes.
        #[arg(long, requires = "sample")]
        out: Option<PathBuf>,
        /// `csv` or `jsonl`: IDV in ML.NET's text forms, other formats the
        /// typed view's CSV or JSON lines (default: each format's own text,
        /// or its own JSON with --json).
        #[arg(long, value_enum)]
        format: Option<DumpFormat>,
    },
    /// Convert a file to another format (chosen by the output's extension).
    Convert(args::ConvertArgs),
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
    /// Run a SQL query over files of any format (`--table NAME=PATH`); needs
    /// a build with the `sql` feature.
    Sql(sql::SqlArgs),
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

/// The failure of a facade error on `path`, its exit code taken from the
/// error: 3 for input this build cannot read, 2 for a bad request (an
/// unknown column, a range), 1 for a damaged file or a failed operation;
/// its kind is the format crate's own word for a file it refused.
pub(crate) fn fail(path: &Path, e: &DatasetError) -> Failure {
    match e {
        DatasetError::Unrecognized { .. } => Failure::new(
            3,
            "unrecognized",
            Some(path),
            "unrecognized format: no known magic number or layout",
        ),
        DatasetError::Unsupported { .. } => Failure::new(3, "unsupported", None, e.to_string()),
        DatasetError::InvalidArgument { .. } => Failure::new(2, "usage", Some(path), e.to_string()),
        DatasetError::Io { .. } => Failure::new(1, "io", None, e.to_string()),
        _ => Failure::new(1, e.kind(), Some(path), e.to_string()),
    }
}

/// A write to stdout that ended because its reader went away
/// (`dataformats dump x | head`) is a success.
pub(crate) fn stdout_result(path: &Path, r: Result<(), DatasetError>) -> Result<(), Failure> {
    match r {
        Err(DatasetError::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(())
        }
        r => r.map_err(|e| fail(path, &e)),
    }
}

/// Prints a description (its warnings on stderr).
fn show(path: &Path, d: &Description, json: bool) {
    for w in &d.warnings {
        eprintln!("warning: {}: {w}", path.display());
    }
    if json {
        say!("{}", d.json);
    } else {
        say!("{d}");
    }
}

fn main() -> ExitCode {
    dataformats::core::alloc::keep_freed_blocks();
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
                eprintln!("error: {f}");
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
        Command::Inspect { path, all } => {
            let opts = InspectOptions::default().all_samples(all);
            let d = describe::inspect(&path, &opts).map_err(|e| fail(&path, &e))?;
            show(&path, &d, cli.json);
            Ok(())
        }
        Command::Validate { path } => {
            let bar = progress::units("validate", cli.json);
            let d = describe::validate(&path, &mut progress::report(&bar));
            bar.finish_and_clear();
            show(&path, &d.map_err(|e| fail(&path, &e))?, cli.json);
            Ok(())
        }
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
            &Select {
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
        Command::Dump {
            path,
            sample: Some(i),
            out: Some(out),
            ..
        } => extract(&path, i, &out),
        Command::Dump {
            path,
            range,
            format,
            ..
        } => {
            let form = match format {
                Some(DumpFormat::Csv) => DumpForm::Csv,
                Some(DumpFormat::Jsonl) => DumpForm::JsonLines,
                None if cli.json => DumpForm::Json,
                None => DumpForm::Text,
            };
            let mut opts = DumpOptions::new(form);
            opts.rows = range;
            let r = describe::dump(&path, &opts, &mut std::io::stdout());
            stdout_result(&path, r)
        }
        Command::Convert(c) if c.pack.append => {
            let a = dataformats::convert::direct::append(&c.input, &c.output, &c.pack.options()?)
                .map_err(|e| fail(&c.output, &e))?;
            if cli.json {
                say!("{}", a.json());
            } else if !progress::quiet() {
                say!("{}: {a}", c.output.display());
            }
            Ok(())
        }
        Command::Convert(c) => {
            let opts = c.options()?;
            if c.output == Path::new("-") {
                return typed::to_stdout(&c.input, &opts);
            }
            typed::library(&c.input, &c.output, &opts, cli.json)
        }
        Command::Diff { a, b, content } => diff(&a, &b, content, cli.json),
        Command::Sql(args) => sql::run(args, cli.json),
        Command::Formats => {
            show(Path::new("formats"), &describe::formats(), cli.json);
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

/// `dump FILE --sample I --out PATH`: one TBL v2 sample's decoded bytes
/// to a file.
fn extract(path: &Path, sample: u64, out: &Path) -> Result<(), Failure> {
    let data = describe::tbl2_sample(path, sample).map_err(|e| fail(path, &e))?;
    std::fs::write(out, &data).map_err(|e| Failure::new(1, "io", Some(out), e.to_string()))?;
    say!(
        "sample {sample}: {} bytes written to {}",
        data.len(),
        out.display()
    );
    Ok(())
}

/// `diff a.mldf b.mldf [--content]`: exit 0 when equal, 1 when different.
fn diff(a: &Path, b: &Path, content: bool, as_json: bool) -> Result<(), Failure> {
    let open = |p: &Path| {
        let src = dataformats::remote::source(p).map_err(|e| fail(p, &e))?;
        dataformats::mldf::Reader::with_options(src, Default::default())
            .map_err(|e| fail(p, &DatasetError::Mldf(e)))
    };
    let (ra, rb) = (open(a)?, open(b)?);
    let opts = dataformats::mldf::diff::DiffOptions {
        content,
        ..Default::default()
    };
    let d = dataformats::mldf::diff::diff(&ra, &rb, opts)
        .map_err(|e| fail(a, &DatasetError::Mldf(e)))?;
    if as_json {
        let list: Vec<String> = d.iter().map(ToString::to_string).collect();
        say!(
            "{}",
            json!({"same": d.is_empty(), "content_compared": content, "differences": list})
        );
    } else if d.is_empty() {
        say!(
            "{} and {}: same header, schema{}",
            a.display(),
            b.display(),
            if content {
                " and values"
            } else {
                " (values not compared; --content compares them)"
            }
        );
    }
    for x in d.iter().filter(|_| !as_json) {
        say!("{x}");
    }
    if d.is_empty() {
        return Ok(());
    }
    Err(Failure::new(
        1,
        "different",
        None,
        format!("{} difference(s)", d.len()),
    ))
}
