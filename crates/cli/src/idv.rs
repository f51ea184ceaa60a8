//! `dataformats` commands on ML.NET binary dataview (IDV) files.

use std::io::Write;
use std::path::Path;

use dataformats::core::{Limits, Source};
use dataformats::idv::{Compression, Reader, Values, render, version_string};
use serde_json::{Value, json};

use crate::output::say;
use crate::{Failure, progress};

fn fail(path: &Path, e: &dataformats::idv::Error) -> Failure {
    Failure::new(1, e.kind().as_str(), Some(path), e.to_string())
}

fn open(path: &Path) -> Result<Reader, Failure> {
    // SAFETY: the CLI only reads the file and documents that it must not be
    // modified while the command runs.
    let src = unsafe { Source::map(path) }
        .map_err(|e| Failure::new(1, "io", Some(path), e.to_string()))?;
    Reader::with_limits(src, Limits::default()).map_err(|e| fail(path, &e))
}

fn ty_name(c: &dataformats::idv::Column) -> String {
    c.ty().map_or_else(|| "?".to_string(), ToString::to_string)
}

pub(crate) fn inspect(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let h = r.header();
    let cols: Vec<Value> = r
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let blocks: Vec<Value> = if c.is_dead() {
                Vec::new()
            } else {
                r.lookup(i)
                    .map(|l| {
                        l.iter()
                            .map(|b| json!({"offset": b.offset, "stored": b.compressed_len, "bytes": b.decompressed_len}))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let anns: Vec<Value> = c
                .annotations
                .iter()
                .map(|a| {
                    json!({
                        "kind": a.kind,
                        "codec": a.codec.name,
                        "type": a.codec.ty.as_ref().map(ToString::to_string),
                        "compression": a.compression.name(),
                        "value": a.value.as_ref().map(|v| serde_json::from_str::<Value>(&render::json_value(v, 0)).unwrap_or(Value::Null)),
                    })
                })
                .collect();
            json!({
                "name": c.name, "codec": c.codec.name, "type": c.ty().map(ToString::to_string),
                "compression": c.compression.name(), "rows_per_block": c.rows_per_block,
                "dead": c.is_dead(), "blocks": blocks, "annotations": anns,
            })
        })
        .collect();
    if as_json {
        say!(
            "{}",
            json!({"format": "idv", "version": version_string(h.version),
                "compatible_version": version_string(h.compatible_version),
                "rows": h.row_count, "file_size": r.source().len(), "columns": cols})
        );
        return Ok(());
    }
    say!(
        "{}: ML.NET binary dataview {} (readable from {}), {} rows, {} column(s), {} bytes",
        path.display(),
        version_string(h.version),
        version_string(h.compatible_version),
        h.row_count,
        h.column_count,
        r.source().len()
    );
    for (i, c) in r.columns().iter().enumerate() {
        let blocks = if c.is_dead() {
            "unreadable, skipped".to_string()
        } else {
            match r.lookup(i) {
                Ok(l) => {
                    let stored: u64 = l.iter().map(|b| u64::from(b.compressed_len)).sum();
                    let raw: u64 = l.iter().map(|b| u64::from(b.decompressed_len)).sum();
                    format!(
                        "{} block(s) of {} rows, {stored} bytes stored, {raw} decoded",
                        l.len(),
                        c.rows_per_block
                    )
                }
                Err(e) => format!("lookup table unreadable: {e}"),
            }
        };
        say!(
            "column {:<20} {:<28} codec {:<10} {:<8} {}",
            format!("{:?}", c.name),
            ty_name(c),
            c.codec.name,
            c.compression.name(),
            blocks
        );
        for a in &c.annotations {
            let v = a.value.as_ref().map_or_else(
                || "(unreadable, skipped)".to_string(),
                |v| {
                    let s = render::json_value(v, 0);
                    if s.len() > 120 {
                        format!("{}...", s.chars().take(117).collect::<String>())
                    } else {
                        s
                    }
                },
            );
            say!(
                "    annotation {:<22} {:<24} {}",
                a.kind,
                a.codec
                    .ty
                    .as_ref()
                    .map_or_else(|| "?".into(), ToString::to_string),
                v
            );
        }
    }
    Ok(())
}

pub(crate) fn validate(path: &Path, as_json: bool) -> Result<(), Failure> {
    let r = open(path)?;
    let live: Vec<usize> = (0..r.columns().len())
        .filter(|&i| r.columns().get(i).is_some_and(|c| !c.is_dead()))
        .collect();
    let bar = progress::units("validate", as_json);
    let result = r.validate_with(&mut progress::report(&bar));
    bar.finish_and_clear();
    result.map_err(|e| fail(path, &e))?;
    let dead = r.columns().len() - live.len();
    if as_json {
        say!(
            "{}",
            json!({"valid": true, "format": "idv", "rows": r.row_count(), "columns": live.len(), "dead_columns": dead})
        );
    } else {
        say!(
            "{}: ok: {} rows, {} column(s) decoded{}",
            path.display(),
            r.row_count(),
            live.len(),
            if dead > 0 {
                format!(", {dead} unreadable column(s) skipped as ML.NET does")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `dump x.idv [--range A..B] [--format csv|jsonl]`.
pub(crate) fn dump(
    path: &Path,
    range: Option<(u64, u64)>,
    format: Option<crate::args::DumpFormat>,
    as_json: bool,
) -> Result<(), Failure> {
    let r = open(path)?;
    let format = match format {
        Some(crate::args::DumpFormat::Csv) => "csv",
        Some(crate::args::DumpFormat::Jsonl) => "jsonl",
        None if as_json => "jsonl",
        None => "csv",
    };
    let live: Vec<usize> = (0..r.columns().len())
        .filter(|&i| r.columns().get(i).is_some_and(|c| !c.is_dead()))
        .collect();
    let (start, end) = range.unwrap_or((0, r.row_count()));
    let end = end.min(r.row_count());
    let start = start.min(end);
    let names: Vec<&str> = live
        .iter()
        .filter_map(|&i| r.columns().get(i).map(|c| c.name.as_str()))
        .collect();
    // A reader that went away (`dump x.idv | head`) ends the dump quietly.
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        Failure::new(1, "io", None, e.to_string())
    };
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    // CSV through the csv crate (its quoting), JSON lines by hand.
    let (mut csv, mut lines) = if format == "csv" {
        (Some(csv::Writer::from_writer(out)), None)
    } else {
        (None, Some(out))
    };
    let csv_io = |e: csv::Error| match e.into_kind() {
        csv::ErrorKind::Io(e) => io(e),
        k => Failure::new(1, "io", None, format!("{k:?}")),
    };
    if let Some(w) = csv.as_mut() {
        w.write_record(&names).map_err(csv_io)?;
    }
    // A block group at a time, so memory stays at one block per column.
    let rpb = r
        .columns()
        .first()
        .map_or(1, |c| u64::from(c.rows_per_block.max(1)));
    let mut at = start;
    while at < end {
        let stop = ((at / rpb + 1) * rpb).min(end);
        let cols = live
            .iter()
            .map(|&i| r.read_rows(i, at..stop))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fail(path, &e))?;
        for k in 0..(stop - at) as usize {
            if let Some(w) = csv.as_mut() {
                w.write_record(cols.iter().map(|v| match v {
                    Values::Vector(_) => render::json_value(v, k),
                    flat => render::text_scalar(flat, k),
                }))
                .map_err(csv_io)?;
            } else if let Some(out) = lines.as_mut() {
                let mut line = String::from("{");
                for (j, (n, v)) in names.iter().zip(&cols).enumerate() {
                    if j > 0 {
                        line.push_str(", ");
                    }
                    line.push_str(&Value::String((*n).to_string()).to_string());
                    line.push_str(": ");
                    line.push_str(&render::json_value(v, k));
                }
                line.push('}');
                writeln!(out, "{line}").map_err(io)?;
            }
        }
        at = stop;
    }
    if let Some(w) = csv.as_mut() {
        w.flush().map_err(io)?;
    }
    if let Some(out) = lines.as_mut() {
        out.flush().map_err(io)?;
    }
    Ok(())
}

/// Settings for CSV → IDV.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct IdvArgs {
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
    pub(crate) fn apply(
        &self,
        opts: &mut dataformats::convert::ConvertOptions,
        no_compress: bool,
    ) -> Result<(), Failure> {
        use dataformats::convert::text::{TextColumn, TextLoader};
        let usage = |m: String| Failure::new(2, "usage", None, m);
        if no_compress {
            opts.idv.writer.compression = Compression::None;
        }
        opts.idv.writer.rows_per_block = self.rows_per_block;
        if self.column.is_empty() {
            return Ok(());
        }
        let separator = match self.separator.as_bytes() {
            [b] => *b,
            _ => return Err(usage("--separator takes one ASCII character".into())),
        };
        opts.idv.text = Some(TextLoader {
            columns: TextColumn::parse_all(&self.column).map_err(|e| usage(e.to_string()))?,
            header: !self.no_header,
            separator,
        });
        Ok(())
    }
}
