//! `dataformats` commands on ML.NET binary dataview (IDV) files.

use std::io::Write;
use std::path::Path;

use dataformats::core::{Limits, Source};
use dataformats::idv::{
    ColumnSpec, ColumnType, Compression, ItemType, KeyWidth, Reader, Values, Writer, WriterOptions,
    render, version_string,
};
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
    let bar = progress::bytes(live.len() as u64 * r.block_count(), "validate", as_json);
    for &col in &live {
        if r.row_count() == 0 {
            break;
        }
        r.lookup(col).map_err(|e| fail(path, &e))?;
        for b in 0..r.block_count() {
            r.read_block(col, b).map_err(|e| fail(path, &e))?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
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

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `dump x.idv [--range A..B] [--format csv|jsonl]`.
pub(crate) fn dump(
    path: &Path,
    range: Option<(u64, u64)>,
    format: Option<&str>,
    as_json: bool,
) -> Result<(), Failure> {
    let r = open(path)?;
    let format = format.unwrap_or(if as_json { "jsonl" } else { "csv" });
    if format != "csv" && format != "jsonl" {
        return Err(Failure::new(
            2,
            "usage",
            None,
            format!("--format {format:?}: csv or jsonl"),
        ));
    }
    let live: Vec<usize> = (0..r.columns().len())
        .filter(|&i| r.columns().get(i).is_some_and(|c| !c.is_dead()))
        .collect();
    let (start, end) = range.unwrap_or((0, r.row_count()));
    let end = end.min(r.row_count());
    let start = start.min(end);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let names: Vec<&str> = live
        .iter()
        .filter_map(|&i| r.columns().get(i).map(|c| c.name.as_str()))
        .collect();
    let io = |e: std::io::Error| Failure::new(1, "io", None, e.to_string());
    if format == "csv" {
        writeln!(
            out,
            "{}",
            names
                .iter()
                .map(|n| csv_field(n))
                .collect::<Vec<_>>()
                .join(",")
        )
        .map_err(io)?;
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
            if format == "csv" {
                let fields: Vec<String> = cols
                    .iter()
                    .map(|v| match v {
                        Values::Vector(_) => csv_field(&render::json_value(v, k)),
                        flat => csv_field(&render::text_scalar(flat, k)),
                    })
                    .collect();
                writeln!(out, "{}", fields.join(",")).map_err(io)?;
            } else {
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
    out.flush().map_err(io)
}

/// Settings for CSV → IDV.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct IdvArgs {
    /// A column as NAME:TYPE[:SOURCE] (repeatable), ML.NET TextLoader style:
    /// TYPE is I1 U1 I2 U2 I4 U4 I8 U8 R4 R8 BL TX TS DT DZ, or a key
    /// U1[0-N] / U2[0-N] / U4[0-N] / U8[0-N]; SOURCE is a CSV column index
    /// or a range A-B (a vector), by default the next column.
    #[arg(long = "column")]
    column: Vec<String>,
    /// The CSV has no header line.
    #[arg(long)]
    no_header: bool,
    /// Field separator (default ',').
    #[arg(long, default_value = ",")]
    separator: String,
    /// IDV: rows per block (default: ML.NET's heuristic).
    #[arg(long)]
    rows_per_block: Option<u32>,
}

struct Col {
    name: String,
    ty: ColumnType,
    src: (usize, usize),
    key_min: bool,
}

fn parse_item(t: &str) -> Option<(ItemType, bool)> {
    Some((
        match t {
            "I1" => ItemType::I8,
            "U1" => ItemType::U8,
            "I2" => ItemType::I16,
            "U2" => ItemType::U16,
            "I4" => ItemType::I32,
            "U4" => ItemType::U32,
            "I8" => ItemType::I64,
            "U8" => ItemType::U64,
            "R4" => ItemType::F32,
            "R8" => ItemType::F64,
            "BL" => ItemType::Bool,
            "TX" => ItemType::Text,
            "TS" => ItemType::TimeSpan,
            "DT" => ItemType::DateTime,
            "DZ" => ItemType::DateTimeOffset,
            key => {
                let (w, rest) = key.split_once('[')?;
                let n: u64 = rest.strip_suffix(']')?.strip_prefix("0-")?.parse().ok()?;
                let width = match w {
                    "U1" => KeyWidth::U8,
                    "U2" => KeyWidth::U16,
                    "U4" => KeyWidth::U32,
                    "U8" => KeyWidth::U64,
                    _ => return None,
                };
                return Some((
                    ItemType::Key {
                        width,
                        count: n.checked_add(1)?,
                    },
                    true,
                ));
            }
        },
        false,
    ))
}

fn parse_columns(specs: &[String]) -> Result<Vec<Col>, String> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for s in specs {
        let mut it = s.splitn(3, ':');
        let (name, t) = (
            it.next().unwrap_or(""),
            it.next()
                .ok_or(format!("--column {s:?}: NAME:TYPE[:SOURCE]"))?,
        );
        let (item, key) = parse_item(t).ok_or(format!("--column {s:?}: unknown type {t:?}"))?;
        let src = match it.next() {
            None => (next, next),
            Some(r) => match r.split_once('-') {
                Some((a, b)) => (
                    a.parse()
                        .map_err(|_| format!("--column {s:?}: bad source"))?,
                    b.parse()
                        .map_err(|_| format!("--column {s:?}: bad source"))?,
                ),
                None => {
                    let a = r
                        .parse()
                        .map_err(|_| format!("--column {s:?}: bad source"))?;
                    (a, a)
                }
            },
        };
        if src.1 < src.0 {
            return Err(format!("--column {s:?}: empty source range"));
        }
        let vector =
            s.matches(':').count() == 2 && s.rsplit(':').next().is_some_and(|x| x.contains('-'));
        let ty = if vector {
            ColumnType::vector(item, (src.1 - src.0 + 1) as u32)
        } else {
            ColumnType::Scalar(item)
        };
        next = src.1 + 1;
        out.push(Col {
            name: name.to_string(),
            ty,
            src,
            key_min: key,
        });
    }
    if out.is_empty() {
        return Err("CSV -> IDV needs at least one --column NAME:TYPE[:SOURCE]".into());
    }
    Ok(out)
}

/// Splits one CSV line (quotes and doubled quotes; no embedded newlines).
fn split_csv(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if cur.is_empty() => quoted = true,
            (false, c) if c == sep => out.push(std::mem::take(&mut cur)),
            (_, c) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn push_value(v: &mut Values, item: ItemType, key_min: bool, s: &str) -> Result<(), String> {
    let t = s.trim();
    let bad = || format!("{t:?} is not a {item}");
    match v {
        Values::I8(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::U8(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::I16(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::U16(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::I32(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::U32(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::I64(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::U64(x) => x.push(t.parse().map_err(|_| bad())?),
        Values::F32(x) => x.push(if t.is_empty() {
            f32::NAN
        } else {
            t.parse().map_err(|_| bad())?
        }),
        Values::F64(x) => x.push(if t.is_empty() {
            f64::NAN
        } else {
            t.parse().map_err(|_| bad())?
        }),
        Values::Bool(x) => x.push(match t.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" | "" => false,
            _ => return Err(bad()),
        }),
        Values::Text(x) => x.push(s),
        Values::TimeSpan(x) => x.push(render::parse_timespan(t).ok_or_else(bad)?),
        Values::DateTime(x) => x.push(render::parse_datetime(t).ok_or_else(bad)?),
        Values::DateTimeOffset(x) => x.push(render::parse_datetimeoffset(t).ok_or_else(bad)?),
        Values::Key(x) => {
            let count = match item {
                ItemType::Key { count, .. } => count,
                _ => 0,
            };
            if t.is_empty() {
                x.push(0);
            } else {
                let k: u64 = t.parse().map_err(|_| bad())?;
                let stored = if key_min { k.checked_add(1) } else { Some(k) };
                match stored {
                    Some(s) if s <= count => x.push(s),
                    _ => return Err(format!("key {k} outside 0..{count}")),
                }
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// `convert data.csv data.idv --column NAME:TYPE[:SOURCE]...`.
pub(crate) fn convert_csv(
    input: &Path,
    output: &Path,
    args: &IdvArgs,
    no_compress: bool,
    as_json: bool,
) -> Result<(), Failure> {
    let usage = |m: String| Failure::new(2, "usage", None, m);
    let cols = parse_columns(&args.column).map_err(usage)?;
    let sep = args
        .separator
        .chars()
        .next()
        .filter(|_| args.separator.chars().count() == 1)
        .ok_or_else(|| usage("--separator takes one character".into()))?;
    let specs: Vec<ColumnSpec> = cols
        .iter()
        .map(|c| ColumnSpec::new(c.name.clone(), c.ty.clone()))
        .collect();
    let opts = WriterOptions {
        compression: if no_compress {
            Compression::None
        } else {
            Compression::Deflate
        },
        rows_per_block: args.rows_per_block,
        ..WriterOptions::default()
    };
    let mut w = Writer::create(output, specs, opts).map_err(|e| fail(output, &e))?;
    let size = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let file = std::fs::File::open(input)
        .map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
    let bar = progress::bytes(size, "csv->idv", as_json);
    let batch_rows = w.rows_per_block() as usize;
    let empty = || -> Vec<Values> { cols.iter().map(|c| Values::empty_of(&c.ty)).collect() };
    let mut batch = empty();
    let mut rows = 0u64;
    let mut lines = std::io::BufRead::lines(std::io::BufReader::with_capacity(1 << 20, file));
    if !args.no_header {
        lines.next();
    }
    for (ln, line) in lines.enumerate() {
        let line = line.map_err(|e| Failure::new(1, "io", Some(input), e.to_string()))?;
        bar.inc(line.len() as u64 + 1);
        if line.trim().is_empty() {
            continue;
        }
        let fields = split_csv(&line, sep);
        let line_no = ln + 1 + usize::from(!args.no_header);
        let loc =
            |m: String| Failure::new(1, "bad_csv", Some(input), format!("line {line_no}: {m}"));
        for (c, v) in cols.iter().zip(batch.iter_mut()) {
            let get = |i: usize| {
                fields
                    .get(i)
                    .map(String::as_str)
                    .ok_or_else(|| loc(format!("no field {i} (the line has {})", fields.len())))
            };
            match v {
                Values::Vector(vv) => {
                    let mut items = Values::empty(c.ty.item());
                    for i in c.src.0..=c.src.1 {
                        push_value(&mut items, c.ty.item(), c.key_min, get(i)?)
                            .map_err(|m| loc(format!("column {:?}: {m}", c.name)))?;
                    }
                    vv.push_dense(&items);
                }
                flat => push_value(flat, c.ty.item(), c.key_min, get(c.src.0)?)
                    .map_err(|m| loc(format!("column {:?}: {m}", c.name)))?,
            }
        }
        rows += 1;
        if batch.first().map_or(0, Values::len) >= batch_rows {
            w.write_batch(&batch).map_err(|e| fail(output, &e))?;
            batch = empty();
        }
    }
    w.write_batch(&batch).map_err(|e| fail(output, &e))?;
    w.finish().map_err(|e| fail(output, &e))?;
    bar.finish_and_clear();
    if as_json {
        say!("{}", json!({"rows": rows, "columns": cols.len()}));
    } else {
        say!(
            "{} -> {}: {rows} row(s), {} column(s)",
            input.display(),
            output.display(),
            cols.len()
        );
    }
    Ok(())
}
