//! Commands on the typed Arrow view: `schema`, `count`, `head`, typed
//! `dump`, and `convert` to Parquet, Arrow IPC (file and stream) and CSV.

use std::path::Path;

use dataformats::convert::{ConvertOptions, Target};

use crate::args::Select;
use crate::output::say;
use crate::{Failure, fail};

fn open(path: &Path) -> Result<Box<dyn dataformats::Dataset>, Failure> {
    dataformats::open(path).map_err(|e| fail(path, &e))
}

/// `dataformats schema FILE`: the Arrow schema, one field a line (or JSON).
pub(crate) fn schema(path: &Path, json: bool) -> Result<(), Failure> {
    let d = open(path)?;
    let schema = d.schema();
    if json {
        say!("{}", dataformats::typed::schema_json(&schema));
        return Ok(());
    }
    let text = dataformats::typed::schema_text(&schema);
    if let Some(lines) = text.strip_suffix('\n') {
        say!("{lines}");
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

/// `head` and typed `dump`: records as the typed view's lossless JSON
/// lines (`docs/arrow.md`).
pub(crate) fn rows(
    path: &Path,
    range: Option<std::ops::Range<u64>>,
    select: &Select,
) -> Result<(), Failure> {
    let opts = ConvertOptions {
        to: Some(Target::JsonLines),
        columns: select.columns.clone(),
        rows: range,
        limit: select.limit,
        // A display, not a conversion: text that is not Unicode is shown
        // with U+FFFD.
        lossy: true,
        ..ConvertOptions::default()
    };
    to_stdout(path, &opts)
}

/// `convert IN OUT` through the library ([`dataformats::convert`]): any
/// input the facade reads (and Parquet, Arrow IPC, CSV tables) to any of
/// its targets; the changes a `--lossy` conversion made are printed as notes.
pub(crate) fn library(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
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
pub(crate) fn to_stdout(input: &Path, opts: &ConvertOptions) -> Result<(), Failure> {
    let target = opts
        .to
        .ok_or_else(|| Failure::new(2, "usage", None, "output `-` (stdout) needs --to FORMAT"))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout());
    crate::stdout_result(
        input,
        dataformats::convert::convert_to_writer(input, target, &mut out, opts).map(|_| ()),
    )
}
