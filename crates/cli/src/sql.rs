//! `dataformats sql "SELECT ..." --table name=PATH ...`: a query over files
//! of any format (built with the `sql` feature), printed or written to any
//! output the CLI writes.

use std::path::PathBuf;

use clap::ValueEnum;

use dataformats_cli::Failure;

/// How `sql` prints its result on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum SqlFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// CSV: a header line, then one line per row.
    Csv,
    /// One JSON object per row.
    Jsonl,
}

/// The options of one `sql` run.
#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// The query (DataFusion's SQL dialect).
    pub query: String,
    /// A table the query names: `NAME=PATH` (a file, BLZ/bcolz directory or
    /// URL of any format the CLI reads). Repeat for more tables.
    #[arg(long = "table", value_name = "NAME=PATH", value_parser = parse_table, required = true)]
    pub tables: Vec<(String, PathBuf)>,
    /// How to print the result.
    #[arg(long, value_enum, default_value_t = SqlFormat::Table, conflicts_with = "out")]
    pub format: SqlFormat,
    /// Write the result to this file instead, in the format its extension
    /// names (any output `convert` writes).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Give every table a UInt64 column of this name holding each record's
    /// number; filters on it (`=`, `<`, `>`, `BETWEEN`, ...) read only those records.
    #[arg(long, value_name = "NAME")]
    pub row_number: Option<String>,
}

/// `NAME=PATH`.
fn parse_table(s: &str) -> Result<(String, PathBuf), String> {
    let (name, path) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: a table is NAME=PATH"))?;
    if name.is_empty() || path.is_empty() {
        return Err(format!("{s:?}: a table is NAME=PATH, both non-empty"));
    }
    Ok((name.to_string(), PathBuf::from(path)))
}

#[cfg(not(feature = "sql"))]
pub(crate) fn run(_args: SqlArgs, _json: bool) -> Result<(), Failure> {
    Err(Failure::new(
        3,
        "unsupported",
        None,
        "this build of dataformats has no SQL: build the CLI with `--features sql` \
         (it adds DataFusion)",
    ))
}

#[cfg(feature = "sql")]
pub(crate) fn run(args: SqlArgs, json: bool) -> Result<(), Failure> {
    imp::run(args, json)
}

#[cfg(feature = "sql")]
mod imp {
    use std::path::Path;
    use std::sync::Arc;

    use arrow_array::RecordBatch;
    use dataformats::BatchStream;
    use dataformats::convert::{ConvertOptions, Report, Target};
    use dataformats::export::ExportFormat;
    use dataformats_datafusion::datafusion::error::DataFusionError;
    use dataformats_datafusion::datafusion::prelude::SessionContext;
    use dataformats_datafusion::query::{QueryResults, dataset_error};

    use super::{SqlArgs, SqlFormat};
    use crate::output::say;
    use crate::{fail, stdout_result};
    use dataformats_cli::Failure;

    /// A query's error: the facade error (and its file) when one caused it,
    /// else DataFusion's message (exit status 2 for a query that cannot be
    /// planned).
    fn query_failure(e: &DataFusionError) -> Failure {
        if let Some(d) = dataset_error(e) {
            return Failure::new(1, d.kind(), None, d.to_string());
        }
        match e.find_root() {
            DataFusionError::Plan(_)
            | DataFusionError::SQL(..)
            | DataFusionError::SchemaError(..)
            | DataFusionError::NotImplemented(_) => Failure::new(2, "sql", None, e.to_string()),
            _ => Failure::new(1, "sql", None, e.to_string()),
        }
    }

    pub(super) fn run(args: SqlArgs, json: bool) -> Result<(), Failure> {
        let ctx = SessionContext::new();
        for (name, path) in &args.tables {
            let t = table(path, args.row_number.as_deref())?;
            ctx.register_table(name.as_str(), t)
                .map_err(|e| query_failure(&e))?;
        }
        let mut results = QueryResults::run(&ctx, &args.query).map_err(|e| query_failure(&e))?;
        let r = match &args.out {
            Some(out) => write_file(&mut results, out, json),
            None => print(&mut results, args.format),
        };
        match (r, results.take_error()) {
            (Err(_), Some(e)) => Err(query_failure(&e)),
            (r, _) => r,
        }
    }

    /// The table for `path`, with the record number column when asked.
    fn table(
        path: &Path,
        row_number: Option<&str>,
    ) -> Result<Arc<dyn dataformats_datafusion::datafusion::catalog::TableProvider>, Failure> {
        dataformats_datafusion::table_with_row_number(path, row_number).map_err(|e| {
            match (dataset_error(&e), &e) {
                (Some(d), _) => fail(path, d),
                (None, DataFusionError::External(_)) => {
                    Failure::new(1, "io", Some(path), e.to_string())
                }
                _ => Failure::new(2, "usage", Some(path), e.to_string()),
            }
        })
    }

    fn print(results: &mut QueryResults, format: SqlFormat) -> Result<(), Failure> {
        let stdout = std::io::stdout();
        let here = Path::new("the query result");
        match format {
            SqlFormat::Csv | SqlFormat::Jsonl => {
                let f = if format == SqlFormat::Csv {
                    ExportFormat::Csv
                } else {
                    ExportFormat::JsonLines
                };
                let out = std::io::BufWriter::new(stdout);
                let r = dataformats::export::write(results, f, out, &mut |_| {});
                stdout_result(here, r.map(|_| ()))
            }
            SqlFormat::Table => {
                let mut all = Vec::new();
                while let Some(b) = results.next_batch() {
                    all.push(b.map_err(|e| fail(here, &e))?);
                }
                if all.is_empty() {
                    all.push(RecordBatch::new_empty(results.schema()));
                }
                let text =
                    dataformats_datafusion::datafusion::arrow::util::pretty::pretty_format_batches(
                        &all,
                    )
                    .map_err(|e| Failure::new(1, "sql", None, e.to_string()))?;
                say!("{text}");
                Ok(())
            }
        }
    }

    fn write_file(results: &mut QueryResults, out: &Path, json: bool) -> Result<(), Failure> {
        if dataformats::remote::is_url(out) {
            return Err(Failure::new(
                2,
                "usage",
                Some(out),
                "--out writes a local file (convert it to a URL with `dataformats convert`)",
            ));
        }
        let target = Target::from_path(out).ok_or_else(|| {
            Failure::new(
                2,
                "usage",
                Some(out),
                "no output format for this extension (see `dataformats convert --help`)",
            )
        })?;
        let opts = ConvertOptions::default();
        let mut report = Report {
            from: "sql".into(),
            to: target.name().into(),
            ..Report::default()
        };
        dataformats::convert::write(target, results, out, &opts, &mut report, &mut |_| {})
            .map_err(|e| fail(out, &e))?;
        if json {
            say!(
                "{}",
                serde_json::json!({"output": out, "format": report.to, "records": report.records})
            );
        } else if !crate::progress::quiet() {
            say!(
                "{}: {} records written as {}",
                out.display(),
                report.records,
                report.to
            );
        }
        Ok(())
    }
}
