//! Commands on the typed Arrow view: `schema`, `count`, `head`, typed
//! `dump`, and `convert` to Parquet, Arrow IPC (file and stream) and CSV.

use std::path::Path;

use dataformats::ReadOptions;
use dataformats::export::json_value;

use crate::Failure;
use crate::common::{fail, open};
use crate::output::say;

/// Which records and columns to read.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct Select {
    /// Only these columns, in this order (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub(crate) columns: Option<Vec<String>>,
    /// At most this many records.
    #[arg(long)]
    pub(crate) limit: Option<u64>,
}

impl Select {
    /// Whether anything is selected.
    pub(crate) fn is_set(&self) -> bool {
        self.columns.is_some() || self.limit.is_some()
    }

    fn options(&self, range: Option<(u64, u64)>, batch_size: usize) -> ReadOptions {
        let (start, mut end) = range.unwrap_or((0, u64::MAX));
        if let Some(n) = self.limit {
            end = end.min(start.saturating_add(n));
        }
        ReadOptions {
            columns: self.columns.clone(),
            rows: Some(start..end),
            batch_size,
        }
    }
}

/// `dataformats schema FILE`: the Arrow schema, one field a line (or JSON).
pub(crate) fn schema(path: &Path, json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    let schema = d.schema();
    if json {
        say!("{}", dataformats::typed::schema_json(&schema));
        return Ok(());
    }
    for f in schema.fields() {
        let own = f
            .metadata()
            .get(dataformats::typed::TYPE_KEY)
            .map(|t| format!("  ({t})"))
            .unwrap_or_default();
        say!(
            "{}: {}{}{own}",
            f.name(),
            f.data_type(),
            if f.is_nullable() { " (nullable)" } else { "" }
        );
    }
    Ok(())
}

/// `dataformats count FILE`: the number of records, alone on a line.
pub(crate) fn count(path: &Path, json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    if json {
        say!("{}", serde_json::json!({ "records": d.len() }));
    } else {
        say!("{}", d.len());
    }
    Ok(())
}

/// `head` and typed `dump`: records as JSON lines (lossless: see
/// `docs/arrow.md`).
pub(crate) fn rows(path: &Path, range: Option<(u64, u64)>, select: &Select) -> Result<(), Failure> {
    let d = open(path)?;
    let mut reader = d
        .reader(&select.options(range, 1024))
        .map_err(|e| fail(path, &e))?;
    let mut line = String::new();
    while let Some(b) = reader.next_batch() {
        let b = b.map_err(|e| fail(path, &e))?;
        let schema = b.schema();
        for i in 0..b.num_rows() {
            line.clear();
            line.push('{');
            for (k, (c, f)) in b.columns().iter().zip(schema.fields()).enumerate() {
                if k > 0 {
                    line.push_str(", ");
                }
                line.push_str(&serde_json::Value::String(f.name().clone()).to_string());
                line.push_str(": ");
                json_value(c.as_ref(), i, &mut line);
            }
            line.push('}');
            say!("{line}");
        }
    }
    Ok(())
}

/// `convert IN OUT` through the library ([`dataformats::convert`]): any
/// input the facade reads (and Parquet, Arrow IPC, CSV tables) to any of
/// its targets; the changes a `--lossy` conversion made are printed as notes.
pub(crate) fn library(
    input: &Path,
    output: &Path,
    opts: &dataformats::convert::ConvertOptions,
    json: bool,
) -> Result<(), Failure> {
    use dataformats::convert::convert_with_progress;
    let bar = crate::progress::bytes(0, "records", json);
    let report = convert_with_progress(input, output, opts, &mut |n, total| {
        bar.set_length(total);
        bar.set_position(n);
    })
    .map_err(|e| fail(input, &e))?;
    bar.finish_and_clear();
    let changes: Vec<String> = report.changes.iter().map(ToString::to_string).collect();
    if json {
        say!(
            "{}",
            serde_json::json!({"input": input, "output": output, "from": report.from,
                "format": report.to, "records": report.records, "changes": changes,
                "warnings": report.warnings})
        );
    } else {
        for w in &report.warnings {
            eprintln!("warning: {w}");
        }
        if crate::progress::quiet() {
            return Ok(());
        }
        for c in &changes {
            eprintln!("note: {c}");
        }
        say!(
            "{} -> {} ({}): {} records from {}",
            input.display(),
            output.display(),
            report.to,
            report.records,
            report.from
        );
    }
    Ok(())
}

/// `convert IN - --to FORMAT`: the conversion written to stdout (the
/// typed exports: JSON lines, CSV, Arrow IPC, Parquet).
pub(crate) fn to_stdout(
    input: &Path,
    opts: &dataformats::convert::ConvertOptions,
) -> Result<(), Failure> {
    let target = opts
        .to
        .ok_or_else(|| Failure::new(2, "usage", None, "output `-` (stdout) needs --to FORMAT"))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout());
    match dataformats::convert::convert_to_writer(input, target, &mut out, opts) {
        Ok(_) => Ok(()),
        // `dataformats convert x - --to jsonl | head`: the reader went away.
        Err(dataformats::DatasetError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        Err(e) => Err(fail(input, &e)),
    }
}
