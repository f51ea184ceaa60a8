//! CSV into IDV with ML.NET TextLoader columns: each column names its IDV
//! type and the CSV fields it reads (`NAME:TYPE[:SOURCE]`), as ML.NET's
//! `TextLoader` does, instead of types inferred from the text. The CSV is
//! read by the `csv` crate (quoted fields, doubled quotes, newlines inside
//! quotes, a UTF-8 byte order mark) and the IDV written in blocks.

use std::path::Path;

use crate::dataset::Error;
use crate::idv::{
    ColumnSpec, ColumnType, ItemType, KeyWidth, Values, Writer, WriterOptions, render,
};

/// One IDV column read from CSV fields.
#[derive(Debug, Clone, PartialEq)]
pub struct TextColumn {
    /// The column's name.
    pub name: String,
    /// Its IDV type (a vector when it reads a range of fields).
    pub ty: ColumnType,
    /// The first and last CSV field (0-based, inclusive) it reads.
    pub source: (usize, usize),
}

impl TextColumn {
    /// Parses `NAME:TYPE[:SOURCE]` specifications, in order: TYPE is `I1`
    /// `U1` `I2` `U2` `I4` `U4` `I8` `U8` `R4` `R8` `BL` `TX` `TS` `DT` `DZ`
    /// or a key `U1[0-N]` / `U2[0-N]` / `U4[0-N]` / `U8[0-N]`; SOURCE is a
    /// field index or a range `A-B` (a vector), by default the field after
    /// the previous column's.
    pub fn parse_all(specs: &[String]) -> Result<Vec<TextColumn>, Error> {
        let mut out = Vec::new();
        let mut next = 0usize;
        for s in specs {
            let bad = |m: &str| Error::invalid(format!("column {s:?}: {m}"));
            let mut it = s.splitn(3, ':');
            let name = it.next().unwrap_or("");
            let t = it.next().ok_or_else(|| bad("NAME:TYPE[:SOURCE]"))?;
            let item = parse_item(t).ok_or_else(|| bad(&format!("unknown type {t:?}")))?;
            let index = |x: &str| x.parse::<usize>().map_err(|_| bad("bad source"));
            let (source, vector) = match it.next() {
                None => ((next, next), false),
                Some(r) => match r.split_once('-') {
                    Some((a, b)) => ((index(a)?, index(b)?), true),
                    None => ((index(r)?, index(r)?), false),
                },
            };
            if source.1 < source.0 {
                return Err(bad("empty source range"));
            }
            let ty = if vector {
                let n = u32::try_from(source.1 - source.0 + 1).map_err(|_| bad("too wide"))?;
                ColumnType::vector(item, n)
            } else {
                ColumnType::Scalar(item)
            };
            next = source.1.saturating_add(1);
            out.push(TextColumn {
                name: name.to_string(),
                ty,
                source,
            });
        }
        if out.is_empty() {
            return Err(Error::invalid(
                "CSV -> IDV with TextLoader columns needs at least one NAME:TYPE[:SOURCE]",
            ));
        }
        Ok(out)
    }
}

/// How a CSV file is read into IDV columns.
#[derive(Debug, Clone, PartialEq)]
pub struct TextLoader {
    /// The columns, in order.
    pub columns: Vec<TextColumn>,
    /// The first line names the fields (and is skipped).
    pub header: bool,
    /// The field separator.
    pub separator: u8,
}

fn parse_item(t: &str) -> Option<ItemType> {
    Some(match t {
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
            ItemType::Key {
                width,
                count: n.checked_add(1)?,
            }
        }
    })
}

/// Appends the value of text `s` to `v` (items of type `item`). Numbers
/// may be surrounded by spaces; an empty float is NaN, an empty boolean
/// false, an empty key missing (0); a key `k` is stored as `k + 1`.
fn push_value(v: &mut Values, item: ItemType, s: &str) -> Result<(), String> {
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
            let ItemType::Key { count, .. } = item else {
                return Err(bad());
            };
            if t.is_empty() {
                x.push(0);
            } else {
                let k: u64 = t.parse().map_err(|_| bad())?;
                match k.checked_add(1) {
                    Some(s) if s <= count => x.push(s),
                    _ => return Err(format!("key {k} outside 0..{count}")),
                }
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// Writes the CSV file `input` as the IDV file `output`; returns the rows
/// written. `progress` gets the bytes read so far.
pub(crate) fn write(
    input: &Path,
    output: &Path,
    loader: &TextLoader,
    writer: WriterOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, Error> {
    let cols = &loader.columns;
    let specs: Vec<ColumnSpec> = cols
        .iter()
        .map(|c| ColumnSpec::new(c.name.clone(), c.ty.clone()))
        .collect();
    let io = |source| Error::Io {
        path: input.display().to_string(),
        source,
    };
    let file = std::fs::File::open(input).map_err(io)?;
    let mut w = Writer::create(output, specs, writer).map_err(Error::Idv)?;
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(loader.header)
        .delimiter(loader.separator)
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(file);
    let batch_rows = w.rows_per_block() as usize;
    let empty = || -> Vec<Values> { cols.iter().map(|c| Values::empty_of(&c.ty)).collect() };
    let mut batch = empty();
    let mut rows = 0u64;
    let mut record = csv::StringRecord::new();
    loop {
        let line = csv.position().line();
        let loc = |m: String| Error::Data {
            format: Some(crate::Format::Idv),
            message: format!("{}: line {line}: {m}", input.display()),
        };
        match csv.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(loc(e.to_string())),
        }
        progress(csv.position().byte());
        // A line with one empty field is a blank line.
        if record.len() == 1 && record.get(0).is_some_and(|f| f.trim().is_empty()) {
            continue;
        }
        let line = record.position().map_or(line, csv::Position::line);
        let loc = |m: String| Error::Data {
            format: Some(crate::Format::Idv),
            message: format!("{}: line {line}: {m}", input.display()),
        };
        for (c, v) in cols.iter().zip(batch.iter_mut()) {
            let get = |i: usize| {
                record
                    .get(i)
                    .ok_or_else(|| loc(format!("no field {i} (the line has {})", record.len())))
            };
            let item = c.ty.item();
            match v {
                Values::Vector(vv) => {
                    let mut items = Values::empty(item);
                    for i in c.source.0..=c.source.1 {
                        push_value(&mut items, item, get(i)?)
                            .map_err(|m| loc(format!("column {:?}: {m}", c.name)))?;
                    }
                    vv.push_dense(&items);
                }
                flat => push_value(flat, item, get(c.source.0)?)
                    .map_err(|m| loc(format!("column {:?}: {m}", c.name)))?,
            }
        }
        rows += 1;
        if batch.first().map_or(0, Values::len) >= batch_rows {
            w.write_batch(&batch).map_err(Error::Idv)?;
            batch = empty();
        }
    }
    w.write_batch(&batch).map_err(Error::Idv)?;
    w.finish().map_err(Error::Idv)?;
    Ok(rows)
}
