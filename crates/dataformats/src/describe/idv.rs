//! ML.NET binary dataview (IDV) files.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Description, DumpForm, DumpOptions, io, put};
use crate::core::Progress;
use crate::dataset::Error;
use crate::idv::{Reader, Values, render, version_string};

fn open(path: &Path) -> Result<Reader, Error> {
    Reader::with_options(
        crate::dataset::map_file(path)?,
        crate::core::ReadOptions::default(),
    )
    .map_err(Error::Idv)
}

fn ty_name(t: Option<&impl ToString>) -> String {
    t.map_or_else(|| "?".to_string(), ToString::to_string)
}

pub(super) fn inspect(path: &Path) -> Result<Description, Error> {
    let r = open(path)?;
    let h = r.header();
    let mut t = String::new();
    put!(
        t,
        "{}: ML.NET binary dataview {} (readable from {}), {} rows, {} column(s), {} bytes",
        path.display(),
        version_string(h.version),
        version_string(h.compatible_version),
        h.row_count,
        h.column_count,
        r.source().len()
    );
    let mut cols = Vec::new();
    for (i, c) in r.columns().iter().enumerate() {
        let lookup = if c.is_dead() { None } else { Some(r.lookup(i)) };
        let blocks: Vec<Value> = match &lookup {
            Some(Ok(l)) => l
                .iter()
                .map(|b| json!({"offset": b.offset, "stored": b.compressed_len, "bytes": b.decompressed_len}))
                .collect(),
            _ => Vec::new(),
        };
        let summary = match &lookup {
            None => "unreadable, skipped".to_string(),
            Some(Ok(l)) => {
                let stored: u64 = l.iter().map(|b| u64::from(b.compressed_len)).sum();
                let raw: u64 = l.iter().map(|b| u64::from(b.decompressed_len)).sum();
                format!(
                    "{} block(s) of {} rows, {stored} bytes stored, {raw} decoded",
                    l.len(),
                    c.rows_per_block
                )
            }
            Some(Err(e)) => format!("lookup table unreadable: {e}"),
        };
        put!(
            t,
            "column {:<20} {:<28} codec {:<10} {:<8} {summary}",
            format!("{:?}", c.name),
            ty_name(c.ty().as_ref()),
            c.codec.name,
            c.compression.name()
        );
        let mut anns = Vec::new();
        for a in &c.annotations {
            let value = a.value.as_ref().map(|v| render::json_value(v, 0));
            anns.push(json!({
                "kind": a.kind,
                "codec": a.codec.name,
                "type": a.codec.ty.as_ref().map(ToString::to_string),
                "compression": a.compression.name(),
                "value": value.as_deref().map(|s| serde_json::from_str::<Value>(s).unwrap_or(Value::Null)),
            }));
            let shown = match value {
                None => "(unreadable, skipped)".to_string(),
                Some(s) if s.len() > 120 => {
                    format!("{}...", s.chars().take(117).collect::<String>())
                }
                Some(s) => s,
            };
            put!(
                t,
                "    annotation {:<22} {:<24} {shown}",
                a.kind,
                ty_name(a.codec.ty.as_ref())
            );
        }
        cols.push(json!({
            "name": c.name, "codec": c.codec.name, "type": c.ty().map(|t| t.to_string()),
            "compression": c.compression.name(), "rows_per_block": c.rows_per_block,
            "dead": c.is_dead(), "blocks": blocks, "annotations": anns,
        }));
    }
    let json = json!({"format": "idv", "version": version_string(h.version),
        "compatible_version": version_string(h.compatible_version),
        "rows": h.row_count, "file_size": r.source().len(), "columns": cols});
    Ok(Description::new("idv", json, t))
}

/// The columns ML.NET reads (dead ones are skipped, as it does).
fn live(r: &Reader) -> Vec<usize> {
    (0..r.columns().len())
        .filter(|&i| r.columns().get(i).is_some_and(|c| !c.is_dead()))
        .collect()
}

pub(super) fn validate(path: &Path, progress: &mut dyn Progress) -> Result<Description, Error> {
    let r = open(path)?;
    let live = live(&r).len();
    r.validate_with(progress).map_err(Error::Idv)?;
    let dead = r.columns().len() - live;
    let json = json!({"valid": true, "format": "idv", "rows": r.len(), "columns": live, "dead_columns": dead});
    let mut t = String::new();
    put!(
        t,
        "{}: ok: {} rows, {live} column(s) decoded{}",
        path.display(),
        r.len(),
        match dead {
            0 => String::new(),
            n => format!(", {n} unreadable column(s) skipped as ML.NET does"),
        }
    );
    Ok(Description::new("idv", json, t))
}

/// The rows as CSV (`Text`, `Csv`) or JSON lines (`Json`, `JsonLines`),
/// every value in ML.NET's text form; a block group at a time, so memory
/// stays at one block per column.
pub(super) fn dump(
    path: &Path,
    opts: &DumpOptions,
    form: DumpForm,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let r = open(path)?;
    let live = live(&r);
    let range = opts.clamp(r.len());
    let names: Vec<&str> = live
        .iter()
        .filter_map(|&i| r.columns().get(i).map(|c| c.name.as_str()))
        .collect();
    let as_csv = matches!(form, DumpForm::Text | DumpForm::Csv);
    let csv_err = |e: csv::Error| match e.into_kind() {
        csv::ErrorKind::Io(e) => io(e),
        k => io(std::io::Error::other(format!("{k:?}"))),
    };
    let mut buf = std::io::BufWriter::with_capacity(1 << 18, out);
    if as_csv {
        let mut w = csv::Writer::from_writer(&mut buf);
        w.write_record(&names).map_err(csv_err)?;
        w.flush().map_err(io)?;
    }
    let rpb = r
        .columns()
        .first()
        .map_or(1, |c| u64::from(c.rows_per_block.max(1)));
    // One block group of rows at a time, each decoded and rendered on one
    // of every core's threads, written in order (memory: a few groups).
    let mut at = range.start;
    let groups = std::iter::from_fn(|| {
        (at < range.end).then(|| {
            let stop = ((at / rpb + 1) * rpb).min(range.end);
            let group = at..stop;
            at = stop;
            group
        })
    });
    let mut groups = groups.fuse();
    let threads = if range.end - range.start <= rpb {
        1
    } else {
        crate::core::parallel::threads(0)
    };
    let render = |rows: std::ops::Range<u64>| -> Result<Vec<u8>, Error> {
        let cols = live
            .iter()
            .map(|&i| r.read_rows(i, rows.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::Idv)?;
        let mut text = Vec::new();
        let mut line = String::new();
        let n = (rows.end - rows.start) as usize;
        if as_csv {
            // Each field rendered into one reused buffer; the CSV writer
            // quotes it when it must.
            let mut w = csv::Writer::from_writer(&mut text);
            for k in 0..n {
                for v in &cols {
                    line.clear();
                    match v {
                        Values::Vector(_) => render::push_json_value(&mut line, v, k),
                        flat => render::push_text_scalar(&mut line, flat, k),
                    }
                    w.write_field(line.as_bytes()).map_err(csv_err)?;
                }
                w.write_record(None::<&[u8]>).map_err(csv_err)?;
            }
            w.flush().map_err(io)?;
            drop(w);
            return Ok(text);
        }
        for k in 0..n {
            line.clear();
            line.push('{');
            for (j, (name, v)) in names.iter().zip(&cols).enumerate() {
                if j > 0 {
                    line.push_str(", ");
                }
                crate::core::text::push_json_string(&mut line, name);
                line.push_str(": ");
                render::push_json_value(&mut line, v, k);
            }
            line.push_str("}\n");
            text.extend_from_slice(line.as_bytes());
        }
        Ok(text)
    };
    crate::core::parallel::ordered(
        threads,
        || Ok(groups.next()),
        render,
        |text| buf.write_all(&text?).map_err(io),
    )?;
    buf.flush().map_err(io)
}
