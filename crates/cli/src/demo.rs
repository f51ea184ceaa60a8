//! `dataformats demo`: write small files, read them back, say what happened.
//!
//! For every format this build supports, the demo writes a small file,
//! inspects and validates it. Until the first format crate lands it exercises
//! the shared core that every format reads through: each codec compresses a
//! small synthetic feature table into a file written atomically, and the file
//! is read back through both a memory map and positioned reads, decoded into a
//! buffer of the declared size, and checked against its CRC-32 and SHA-256.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};

use dataformats::Format;
use dataformats::core::codec::{self, BloscCompressor, BloscParams, Codec, Shuffle, blosc};
use dataformats::core::{AtomicFile, ChecksumKind, Source};
use serde_json::json;

use crate::output::say;
use crate::{Failure, progress};

/// A synthetic feature table: `rows` rows of (id: u32, x: f32, y: f32, label: u8).
fn feature_table(rows: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows as usize * 13);
    for i in 0..rows {
        let x = (i as f32 * 0.01).sin();
        let y = (i % 97) as f32 / 97.0;
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&y.to_le_bytes());
        out.push((i % 10) as u8);
    }
    out
}

enum Packer {
    Stream(Codec),
    Blosc(BloscParams),
}

impl Packer {
    fn name(&self) -> String {
        match self {
            Packer::Stream(c) => c.name().to_string(),
            Packer::Blosc(p) => format!("blosc-{}-{}", p.compressor, p.shuffle.name()),
        }
    }

    fn pack(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Packer::Stream(c) => codec::compress(*c, data, None).map_err(|e| e.to_string()),
            Packer::Blosc(p) => blosc::compress(data, p).map_err(|e| e.to_string()),
        }
    }

    fn unpack(&self, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        match self {
            Packer::Stream(c) => codec::decompress_into(*c, src, dst)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Packer::Blosc(_) => blosc::decompress_into(src, dst, 1)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

/// What the demo did with one format.
struct FormatRun {
    format: &'static str,
    path: PathBuf,
    bytes: u64,
    result: Result<String, String>,
}

fn dir_size(p: &Path) -> u64 {
    match std::fs::read_dir(p) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| dir_size(&e.path())).sum(),
        Err(_) => std::fs::metadata(p).map_or(0, |m| m.len()),
    }
}

/// The feature table as typed columns: `id`, `features` (x, y), `label`
/// as a class name (a dictionary), a one-hot `label_onehot` (sparse), a
/// small BMP image per row with its format and dimensions, and a label
/// missing in every tenth row.
fn typed_table(table: &[u8]) -> Result<RecordBatch, String> {
    use arrow_array::builder::{
        BinaryBuilder, FixedSizeListBuilder, Float32Builder, ListBuilder, StringDictionaryBuilder,
    };
    use arrow_array::types::UInt32Type;
    use arrow_array::{
        Array, ArrayRef, Int64Array, StringArray, StructArray, UInt16Array, UInt32Array,
    };
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let rows: Vec<&[u8]> = table.chunks_exact(13).collect();
    let le4 = |r: &[u8], o: usize| -> [u8; 4] {
        r.get(o..o + 4)
            .and_then(|b| b.try_into().ok())
            .unwrap_or_default()
    };
    let mut features = FixedSizeListBuilder::new(Float32Builder::new(), 2).with_field(item);
    let mut label = StringDictionaryBuilder::<UInt32Type>::new();
    let mut maybe = StringDictionaryBuilder::<UInt32Type>::new();
    let mut image = BinaryBuilder::new();
    let (mut sides, mut seq) = (Vec::new(), Vec::new());
    for (i, r) in rows.iter().enumerate() {
        features
            .values()
            .append_value(f32::from_le_bytes(le4(r, 4)));
        features
            .values()
            .append_value(f32::from_le_bytes(le4(r, 8)));
        features.append(true);
        let class = r.get(12).copied().unwrap_or(0);
        label.append_value(format!("class{class}"));
        if i % 10 == 9 {
            maybe.append_null();
        } else {
            maybe.append_value(format!("class{class}"));
        }
        // A BMP of side 4..7 filled with the row's first bytes.
        let side = 4 + (i % 4) as u32;
        let mut bmp = vec![0u8; 54];
        bmp.splice(0..2, *b"BM");
        bmp.splice(18..22, side.to_le_bytes());
        bmp.splice(22..26, side.to_le_bytes());
        for _ in 0..side * side {
            bmp.extend_from_slice(r.get(..3).unwrap_or_default());
        }
        image.append_value(&bmp);
        sides.push(side as u16);
        seq.push(i as i64 / 100);
    }
    let list = |t: DataType| DataType::List(Arc::new(Field::new("item", t, false)));
    let onehot_fields: arrow_schema::Fields = vec![
        Field::new("indices", list(DataType::Int32), false),
        Field::new("values", list(DataType::Float32), false),
    ]
    .into();
    let mut ix = ListBuilder::new(arrow_array::builder::Int32Builder::new())
        .with_field(Arc::new(Field::new("item", DataType::Int32, false)));
    let mut vals = ListBuilder::new(Float32Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::Float32,
        false,
    )));
    for r in &rows {
        ix.values()
            .append_value(i32::from(r.get(12).copied().unwrap_or(0)));
        ix.append(true);
        vals.values().append_value(1.0);
        vals.append(true);
    }
    let onehot = StructArray::new(
        onehot_fields.clone(),
        vec![Arc::new(ix.finish()) as ArrayRef, Arc::new(vals.finish())],
        None,
    );
    let ids: Vec<u32> = rows.iter().map(|r| u32::from_le_bytes(le4(r, 0))).collect();
    let features = features.finish();
    let label = label.finish();
    let maybe = maybe.finish();
    let schema = Schema::new(vec![
        Field::new("id", DataType::UInt32, false),
        Field::new("features", features.data_type().clone(), false),
        Field::new("label", label.data_type().clone(), false),
        Field::new("maybe_label", maybe.data_type().clone(), true),
        Field::new("label_onehot", DataType::Struct(onehot_fields), false)
            .with_metadata([(dataformats::typed::DIM_KEY.to_string(), "10".to_string())].into()),
        Field::new("_sequence", DataType::Int64, false),
        Field::new("data", DataType::Binary, false),
        Field::new("format", DataType::Utf8, false),
        Field::new("width", DataType::UInt16, false),
        Field::new("height", DataType::UInt16, false),
    ]);
    let n = rows.len();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(ids)),
        Arc::new(features),
        Arc::new(label),
        Arc::new(maybe),
        Arc::new(onehot),
        Arc::new(Int64Array::from(seq)),
        Arc::new(image.finish()),
        Arc::new(StringArray::from(vec!["bmp"; n])),
        Arc::new(UInt16Array::from(sides.clone())),
        Arc::new(UInt16Array::from(sides)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).map_err(|e| e.to_string())
}

/// `b` as lossless JSON lines (how the demo compares typed views).
fn json_lines(b: &RecordBatch) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    dataformats::export::write_json_lines(b, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Writes, validates and reads back one file per landed format, each
/// through the library's writer of typed batches, from the columns of the
/// typed table that the format holds.
fn format_runs(dir: &Path, table: &[u8]) -> Vec<FormatRun> {
    use dataformats::convert::{ConvertOptions, Report, Target, write};
    let typed = match typed_table(table) {
        Ok(b) => b,
        Err(e) => {
            return vec![FormatRun {
                format: "typed table",
                path: dir.to_path_buf(),
                bytes: 0,
                result: Err(e),
            }];
        }
    };
    // (format, file, columns, what else to check)
    let plan: [(&str, &str, &[&str]); 6] = [
        ("bloscpack", "table.blp", &["id", "features"]),
        ("blz", "table.bcolz", &["id", "features"]),
        ("tbl2", "table.tbl", &["data", "format", "width", "height"]),
        (
            "cntk",
            "table.cbf.bin",
            &["_sequence", "features", "label_onehot"],
        ),
        ("idv", "table.idv", &["id", "features", "label"]),
        (
            "mldf",
            "table.mldf",
            &["id", "features", "maybe_label", "data"],
        ),
    ];
    let mut runs = Vec::new();
    for (format, file, columns) in plan {
        let path = dir.join(file);
        if path.is_dir() {
            let _ = std::fs::remove_dir_all(&path);
        }
        let result = (|| -> Result<String, String> {
            let idx: Vec<usize> = columns
                .iter()
                .map(|c| typed.schema().index_of(c).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            let part = typed.project(&idx).map_err(|e| e.to_string())?;
            let mut opts = ConvertOptions::default();
            opts.mldf.writer.compressed = true;
            opts.mldf.writer.checksummed = true;
            opts.mldf.writer.page_size = 1 << 16;
            let target = Target::from_path(&path).ok_or("no target")?;
            let mut report = Report::default();
            let mut one = dataformats::BatchIter::from_batches(part.schema(), vec![part.clone()]);
            write(target, &mut one, &path, &opts, &mut report, &mut |_| {})
                .map_err(|e| e.to_string())?;
            let d = dataformats::open(&path).map_err(|e| e.to_string())?;
            d.validate().map_err(|e| e.to_string())?;
            let back = d.read_batch(None, 0..d.len()).map_err(|e| e.to_string())?;
            // The written columns as the format gives them back (CNTK
            // numbers its sequences itself; TBL v2 adds a metadata column).
            let compared: Vec<&str> = columns
                .iter()
                .copied()
                .filter(|c| *c != "_sequence")
                .collect();
            let pick = |b: &RecordBatch| -> Result<RecordBatch, String> {
                let idx: Vec<usize> = compared
                    .iter()
                    .map(|c| b.schema().index_of(c).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
                b.project(&idx).map_err(|e| e.to_string())
            };
            let same = json_lines(&pick(&part)?)? == json_lines(&pick(&back)?)?;
            if !same {
                return Err("read back differs from what was written".into());
            }
            let extra = match format {
                "bloscpack" => {
                    dataformats::convert::convert(&path, &dir.join("table.npy"), &opts)
                        .map_err(|e| e.to_string())?;
                    ", converted to table.npy"
                }
                "tbl2" => {
                    let (tar, again) = (dir.join("table.tar"), dir.join("table.again.tbl"));
                    dataformats::convert::convert(&path, &tar, &opts).map_err(|e| e.to_string())?;
                    dataformats::convert::convert(&tar, &again, &opts)
                        .map_err(|e| e.to_string())?;
                    let read = |p: &Path| std::fs::read(p).map_err(|x| x.to_string());
                    if read(&path)? != read(&again)? {
                        return Err("tbl -> tar -> tbl changed the bytes".into());
                    }
                    ", tbl -> tar -> tbl byte-identical"
                }
                "mldf" => ", zstd per value, CRC-32 verified",
                _ => "",
            };
            Ok(format!(
                "{} record(s) of {}, validated, read back equal{extra}",
                d.len(),
                columns.join(", ")
            ))
        })();
        runs.push(FormatRun {
            format,
            bytes: dir_size(&path),
            path,
            result,
        });
    }
    runs
}

pub(crate) fn run(dir: Option<PathBuf>, json: bool) -> Result<(), Failure> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("dataformats-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::new(
            1,
            "io",
            Some(&dir),
            format!("cannot create the demo directory: {e}"),
        )
    })?;

    let landed: Vec<Format> = Format::ALL
        .into_iter()
        .filter(|f| f.is_available())
        .collect();
    let table = feature_table(20_000);
    let crc = ChecksumKind::Crc32.digest(&table);
    let sha = ChecksumKind::Sha256.digest(&table);

    let packers = {
        let mut v: Vec<Packer> = Codec::ALL.into_iter().map(Packer::Stream).collect();
        for (c, s) in [
            (BloscCompressor::BloscLz, Shuffle::Byte),
            (BloscCompressor::Lz4, Shuffle::Byte),
            (BloscCompressor::Zstd, Shuffle::Bit),
        ] {
            v.push(Packer::Blosc(BloscParams::new(c, 5, s, 13)));
        }
        v
    };

    if !json {
        say!("dataformats demo, writing to {}", dir.display());
        let names: Vec<&str> = landed.iter().map(|f| f.name()).collect();
        say!(
            "formats in this build: {}; first the shared core every format reads through, then one file per format",
            if names.is_empty() {
                "none yet".to_string()
            } else {
                names.join(", ")
            }
        );
        say!(
            "input: a feature table of 20000 rows x (u32, f32, f32, u8), {} bytes, crc32 {:08x}",
            table.len(),
            crc.value().unwrap_or(0)
        );
        say!();
        say!(
            "{:<22} {:>9} {:>7}  {:<12} result",
            "codec",
            "file size",
            "ratio",
            "read back"
        );
    }

    let bar = progress::bytes(table.len() as u64 * packers.len() as u64, "demo", json);
    let mut rows = Vec::new();
    let mut failures = 0usize;
    for p in &packers {
        let path = dir.join(format!("table.{}.bin", p.name()));
        let outcome = round_trip(p, &table, &path, crc.as_bytes(), sha.as_bytes());
        bar.inc(table.len() as u64);
        let (size, ok, why) = match &outcome {
            Ok(size) => (
                *size,
                true,
                String::from("ok: decoded size, crc32 and sha256 match"),
            ),
            Err(e) => (0, false, e.clone()),
        };
        if !ok {
            failures += 1;
        }
        let ratio = if size > 0 {
            table.len() as f64 / size as f64
        } else {
            0.0
        };
        if !json {
            bar.suspend(|| {
                say!(
                    "{:<22} {:>9} {:>6.2}x  {:<12} {}",
                    p.name(),
                    size,
                    ratio,
                    if ok { "mmap + pread" } else { "-" },
                    why
                );
            });
        }
        rows.push(json!({
            "codec": p.name(),
            "file": path.display().to_string(),
            "file_size": size,
            "ratio": ratio,
            "ok": ok,
            "result": why,
        }));
    }
    bar.finish_and_clear();

    let formats = format_runs(&dir, &table);
    failures += formats.iter().filter(|f| f.result.is_err()).count();
    if !json && !formats.is_empty() {
        say!();
        say!("{:<10} {:>9}  result", "format", "size");
        for f in &formats {
            match &f.result {
                Ok(what) => say!(
                    "{:<10} {:>9}  ok: {} ({})",
                    f.format,
                    f.bytes,
                    what,
                    f.path.display()
                ),
                Err(why) => say!("{:<10} {:>9}  FAILED: {why}", f.format, f.bytes),
            }
        }
    }

    let conversions = conversion_runs(&dir, &formats);
    let converted_ok = conversions.iter().filter(|c| c.result.is_ok()).count();
    failures += conversions.len() - converted_ok;
    if !json && !conversions.is_empty() {
        say!();
        say!("conversion through `dataformats convert`, then validated");
        for c in &conversions {
            match &c.result {
                Ok(what) => say!("  {:<40} ok: {what}", c.what),
                Err(why) => say!("  {:<40} FAILED: {why}", c.what),
            }
        }
    }

    if json {
        let v = json!({
            "conversions": conversions.iter().map(|c| json!({
                "conversion": c.what,
                "ok": c.result.is_ok(),
                "result": match &c.result { Ok(s) | Err(s) => s.clone() },
            })).collect::<Vec<_>>(),
            "dir": dir.display().to_string(),
            "formats_landed": landed.iter().map(|f| f.name()).collect::<Vec<_>>(),
            "input_bytes": table.len(),
            "input_crc32": crc.to_hex(),
            "codecs": rows,
            "formats": formats.iter().map(|f| json!({
                "format": f.format,
                "path": f.path.display().to_string(),
                "bytes": f.bytes,
                "ok": f.result.is_ok(),
                "result": match &f.result { Ok(s) | Err(s) => s.clone() },
            })).collect::<Vec<_>>(),
            "failures": failures,
        });
        say!("{v}");
    } else {
        say!();
        let round_trip_failures = failures - (conversions.len() - converted_ok);
        say!(
            "{} of {} round trips ok, {converted_ok} of {} conversions ok; files are in {}",
            packers.len() + formats.len() - round_trip_failures,
            packers.len() + formats.len(),
            conversions.len(),
            dir.display()
        );
        say!(
            "next: `dataformats formats` lists what this build reads; `dataformats inspect FILE` looks inside one"
        );
    }
    if failures > 0 {
        return Err(Failure::new(
            1,
            "demo",
            Some(&dir),
            format!("{failures} round trip(s) failed"),
        ));
    }
    Ok(())
}

/// One cross-format conversion of the demo.
struct Conversion {
    what: String,
    result: Result<String, String>,
}

/// Converts the demo's files into other formats with the `convert`
/// command's own code (output silenced), validates each result and checks
/// it holds as many records as its source; MLDF files also go back to
/// their source format.
fn conversion_runs(dir: &Path, formats: &[FormatRun]) -> Vec<Conversion> {
    let made = |name: &str| formats.iter().any(|f| f.format == name && f.result.is_ok());
    // (input, output, file the output must equal record for record)
    let mut plan: Vec<(String, String, Option<String>)> = Vec::new();
    for (format, file, tag, ext) in [
        ("idv", "table.idv", "idv", "idv"),
        ("cntk", "table.cbf.bin", "cntk", "bin"),
        ("tbl2", "table.tbl", "tbl", "tbl"),
        ("bloscpack", "table.blp", "blp", "blp"),
        ("blz", "table.bcolz", "bcolz", "bcolz"),
    ] {
        if made(format) {
            let m = format!("table.from-{tag}.mldf");
            plan.push((file.into(), m.clone(), None));
            plan.push((m, format!("table.back.{ext}"), Some(file.into())));
        }
    }
    if made("mldf") {
        plan.push(("table.mldf".into(), "table.jsonl".into(), None));
    }
    let mut out = Vec::new();
    for (input, output, same_as) in plan {
        let (input, output) = (dir.join(input), dir.join(output));
        let same_as = same_as.map(|p| dir.join(p));
        if output.is_dir() {
            let _ = std::fs::remove_dir_all(&output);
        }
        let what = format!("{} -> {}", file_name(&input), file_name(&output));
        let result = dataformats::convert::convert(&input, &output, &Default::default())
            .map_err(|e| e.to_string())
            .and_then(|_| check_converted(&input, &output))
            .and_then(|what| match &same_as {
                Some(original) => {
                    match dataformats::compare::first_difference_of_files(original, &output) {
                        Ok(None) => Ok(format!("{what}, equal to {}", file_name(original))),
                        Ok(Some(d)) => Err(d.to_string()),
                        Err(e) => Err(e.to_string()),
                    }
                }
                None => Ok(what),
            });
        out.push(Conversion { what, result });
    }
    out
}

/// The converted file validates and holds its source's records (JSON lines:
/// one line per record).
fn check_converted(input: &Path, output: &Path) -> Result<String, String> {
    if output.extension().is_some_and(|e| e == "jsonl") {
        let records = dataformats::open(input).map_err(|e| e.to_string())?.len();
        let text = std::fs::read_to_string(output).map_err(|e| e.to_string())?;
        let lines = text.lines().count() as u64;
        if lines != records {
            return Err(format!("{lines} lines for {records} records"));
        }
        return Ok(format!("{lines} JSON lines"));
    }
    let c = dataformats::compare::check_conversion(input, output).map_err(|e| e.to_string())?;
    match c.count {
        Some(d) => Err(d.to_string()),
        None => Ok(format!(
            "{} {} record(s), {} column(s), validated",
            c.records,
            c.format.name(),
            c.columns
        )),
    }
}

/// The last part of `p`, for messages.
fn file_name(p: &Path) -> std::borrow::Cow<'_, str> {
    p.file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
}

/// Packs `data`, writes it atomically to `path` as `[u64 decoded size][payload]`,
/// then reads it back through a map and through positioned reads and checks it.
/// Returns the file size.
fn round_trip(p: &Packer, data: &[u8], path: &Path, crc: &[u8], sha: &[u8]) -> Result<u64, String> {
    let payload = p.pack(data)?;
    let mut f = AtomicFile::create(path).map_err(|e| e.to_string())?;
    f.write_all(&(data.len() as u64).to_le_bytes())
        .map_err(|e| e.to_string())?;
    f.write_all(&payload).map_err(|e| e.to_string())?;
    f.finish().map_err(|e| e.to_string())?;

    // SAFETY: the demo just wrote this file and nothing else modifies it while mapped.
    let mapped = unsafe { Source::map(path) }.map_err(|e| e.to_string())?;
    let positioned = Source::open(path).map_err(|e| e.to_string())?;
    for (how, src) in [("mmap", &mapped), ("positioned", &positioned)] {
        let mut size = [0u8; 8];
        src.read_at(0, &mut size)
            .map_err(|e| format!("{how}: {e}"))?;
        let declared = u64::from_le_bytes(size);
        let body = src
            .bytes(8, src.len() - 8)
            .map_err(|e| format!("{how}: {e}"))?;
        let mut out = dataformats::core::Limits::default()
            .alloc_zeroed("demo output", declared)
            .map_err(|e| format!("{how}: {e}"))?;
        p.unpack(&body, &mut out)
            .map_err(|e| format!("{how}: {e}"))?;
        if ChecksumKind::Crc32.digest(&out).as_bytes() != crc {
            return Err(format!("{how}: crc32 mismatch"));
        }
        if ChecksumKind::Sha256.digest(&out).as_bytes() != sha {
            return Err(format!("{how}: sha256 mismatch"));
        }
    }
    Ok(mapped.len())
}
