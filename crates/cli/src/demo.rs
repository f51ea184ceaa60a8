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

/// Writes, reads back, validates and converts one small file per landed format.
fn format_runs(dir: &Path, table: &[u8]) -> Vec<FormatRun> {
    use dataformats::bloscpack::blz::{ArrayOptions, BlzDir, ColumnData, Layout, create_table};
    use dataformats::bloscpack::dtype::Dtype;
    use dataformats::bloscpack::numpy::{NumpyMeta, Order};
    use dataformats::bloscpack::{ReadOptions, Reader, WriteOptions, npy, pack_bytes};

    let rows = table.len() / 13;
    let record = "[('id', '<u4'), ('x', '<f4'), ('y', '<f4'), ('label', '|u1')]";
    let mut runs = Vec::new();

    // Bloscpack: the table as a structured numpy array.
    let blp = dir.join("table.blp");
    let result = (|| -> Result<String, String> {
        let dtype = Dtype::parse_python_literal(record).map_err(|e| e.to_string())?;
        let meta = NumpyMeta {
            dtype,
            shape: vec![rows as u64],
            order: Order::C,
        };
        let opts = WriteOptions::default()
            .chunk_size(13 * 4096)
            .codec(BloscCompressor::Lz4)
            .checksum(ChecksumKind::Sha256);
        let bytes = pack_bytes(table, Some(&meta.to_value()), &opts).map_err(|e| e.to_string())?;
        let mut f = AtomicFile::create(&blp).map_err(|e| e.to_string())?;
        f.write_all(&bytes).map_err(|e| e.to_string())?;
        f.finish().map_err(|e| e.to_string())?;
        // SAFETY: the demo just wrote this file and nothing modifies it while mapped.
        let src = unsafe { Source::map(&blp) }.map_err(|e| e.to_string())?;
        let r = Reader::with_options(src, ReadOptions::default()).map_err(|e| e.to_string())?;
        r.validate().map_err(|e| e.to_string())?;
        if r.read_all().map_err(|e| e.to_string())? != table {
            return Err("read back differs".into());
        }
        let npy_path = dir.join("table.npy");
        npy::bloscpack_to_npy(&r, &npy_path).map_err(|e| e.to_string())?;
        Ok(format!(
            "{} chunks, sha256 digests verified, read back equal, converted to {}",
            r.nchunks(),
            npy_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ))
    })();
    runs.push(FormatRun {
        format: "bloscpack",
        bytes: std::fs::metadata(&blp).map_or(0, |m| m.len()),
        path: blp,
        result,
    });

    // BLZ/bcolz: the same table as a bcolz ctable, one column directory per field.
    let blz = dir.join("table.bcolz");
    let _ = std::fs::remove_dir_all(&blz);
    let result = (|| -> Result<String, String> {
        let cols: Vec<(&str, &str, usize, usize)> = vec![
            ("id", "'<u4'", 0, 4),
            ("x", "'<f4'", 4, 4),
            ("y", "'<f4'", 8, 4),
            ("label", "'|u1'", 12, 1),
        ];
        let mut data = Vec::new();
        let mut dtypes = Vec::new();
        for (_, lit, off, size) in &cols {
            data.push(
                table
                    .chunks_exact(13)
                    .flat_map(|r| r.get(*off..off + size).unwrap_or_default().to_vec())
                    .collect::<Vec<u8>>(),
            );
            dtypes.push(Dtype::parse_python_literal(lit).map_err(|e| e.to_string())?);
        }
        let columns: Vec<ColumnData<'_>> = cols
            .iter()
            .zip(&dtypes)
            .zip(&data)
            .map(|(((name, ..), dtype), data)| ColumnData {
                name,
                dtype,
                trailing: &[],
                data,
            })
            .collect();
        let t = create_table(
            &blz,
            &columns,
            &serde_json::json!({"made_by": "dataformats demo"}),
            &ArrayOptions::new(Layout::Bcolz),
        )
        .map_err(|e| e.to_string())?;
        BlzDir::open_validated(&blz, dataformats::core::Limits::default())
            .map_err(|e| e.to_string())?;
        if t.read_all().map_err(|e| e.to_string())? != table {
            return Err("rows read back differ".into());
        }
        Ok(format!(
            "{} columns x {} rows, validated, rows read back equal",
            t.names().len(),
            t.nrows()
        ))
    })();
    runs.push(FormatRun {
        format: "blz",
        bytes: dir_size(&blz),
        path: blz,
        result,
    });

    // TBL v2: rows as small BMP images (dimensions are sniffed), through tar and back.
    let tbl = dir.join("table.tbl");
    let result = (|| -> Result<String, String> {
        use dataformats::tbl2::{
            Reader as TblReader, SampleFormat, SampleInfo, Writer as TblWriter, dims, tar,
        };
        let e = |x: dataformats::tbl2::Error| x.to_string();
        let mut w = TblWriter::create(&tbl, true).map_err(e)?;
        for (i, row) in table.chunks_exact(13).take(500).enumerate() {
            let side = 4 + (i % 4) as u32;
            let mut head = [0u8; 54];
            head[..2].copy_from_slice(b"BM");
            head[18..22].copy_from_slice(&side.to_le_bytes());
            head[22..26].copy_from_slice(&side.to_le_bytes());
            let mut bmp = head.to_vec();
            for _ in 0..side * side {
                bmp.extend_from_slice(row.get(..3).unwrap_or_default());
            }
            let (width, height) = dims::sniff(SampleFormat::BMP, &bmp);
            w.add_sample(
                &bmp,
                SampleInfo {
                    format: SampleFormat::BMP,
                    width,
                    height,
                },
            )
            .map_err(e)?;
        }
        w.finish().map_err(e)?;
        let r = TblReader::open(&tbl).map_err(e)?;
        r.validate().map_err(e)?;
        let tar_path = dir.join("table.tar");
        tar::tbl_to_tar(&r, &tar_path, |_| {}).map_err(e)?;
        let again = dir.join("table.again.tbl");
        tar::convert_tar_file(&tar_path, &again, true, 2, |_| {}).map_err(e)?;
        let read = |p: &Path| std::fs::read(p).map_err(|x| x.to_string());
        if read(&tbl)? != read(&again)? {
            return Err("tbl -> tar -> tbl changed the bytes".into());
        }
        let first = r.entry(0).map_err(e)?;
        Ok(format!(
            "{} samples, CRC-16s verified, dimensions sniffed from headers ({}x{} first), tbl -> tar -> tbl byte-identical",
            r.len(),
            first.width,
            first.height
        ))
    })();
    runs.push(FormatRun {
        format: "tbl2",
        bytes: std::fs::metadata(&tbl).map_or(0, |m| m.len()),
        path: tbl,
        result,
    });

    // CNTK binary: each group of 100 rows a sequence, (x, y) dense and the label one-hot sparse.
    let cbf = dir.join("table.cbf.bin");
    let result = (|| -> Result<String, String> {
        use dataformats::cntk::{
            Chunking, ElemType, Reader as CbfReader, Record, RecordData, StreamDesc, StreamKind,
            Writer as CbfWriter,
        };
        let e = |x: dataformats::cntk::Error| x.to_string();
        let streams = [
            StreamDesc {
                name: "features".into(),
                kind: StreamKind::Dense,
                elem: ElemType::F32,
                dim: 2,
            },
            StreamDesc {
                name: "label".into(),
                kind: StreamKind::Sparse,
                elem: ElemType::F32,
                dim: 10,
            },
        ];
        let mut w = CbfWriter::create(&cbf, &streams, Chunking::Target(64 << 10)).map_err(e)?;
        let f32_at = |r: &[u8], o: usize| {
            let mut b = [0u8; 4];
            for (d, s) in b.iter_mut().zip(r.iter().skip(o)) {
                *d = *s;
            }
            f64::from(f32::from_le_bytes(b))
        };
        let mut first_x = 0.0;
        for (q, group) in table.chunks_exact(13 * 100).enumerate() {
            let rows: Vec<&[u8]> = group.chunks_exact(13).collect();
            let xs: Vec<f64> = rows
                .iter()
                .flat_map(|r| [f32_at(r, 4), f32_at(r, 8)])
                .collect();
            let labels: Vec<Vec<(u32, f64)>> = rows
                .iter()
                .map(|r| vec![(u32::from(r.get(12).copied().unwrap_or(0)), 1.0)])
                .collect();
            if q == 0 {
                first_x = xs.first().copied().unwrap_or(0.0);
            }
            w.add_sequence(&[
                RecordData::Dense {
                    samples: rows.len() as u32,
                    values: &xs,
                },
                RecordData::Sparse(&labels),
            ])
            .map_err(e)?;
        }
        w.finish().map_err(e)?;
        let r = CbfReader::open(&cbf).map_err(e)?;
        r.validate().map_err(e)?;
        let ch = r.read_chunk(0).map_err(e)?;
        let back = match ch.records.first().and_then(|p| p.first()) {
            Some(Record::Dense { values, .. }) => values.first().copied().unwrap_or(f64::NAN),
            _ => f64::NAN,
        };
        if back.to_bits() != first_x.to_bits() {
            return Err("first value read back differs".into());
        }
        let seqs: u32 = r.chunks().iter().map(|c| c.num_sequences).sum();
        Ok(format!(
            "{seqs} sequences in {} chunks, dense + sparse streams, validated and read back",
            r.chunks().len()
        ))
    })();
    runs.push(FormatRun {
        format: "cntk",
        bytes: std::fs::metadata(&cbf).map_or(0, |m| m.len()),
        path: cbf,
        result,
    });

    // ML.NET IDV: the table as columns (id, a Vector<Single, 2> of features,
    // the label as a key with its names), then dumped rows compared.
    let idv = dir.join("table.idv");
    let result = (|| -> Result<String, String> {
        use dataformats::idv::{
            ColumnSpec, ColumnType, ItemType, KeyWidth, Reader as IdvReader, TextValues, Values,
            VectorValues, Writer as IdvWriter, WriterOptions,
        };
        let e = |x: dataformats::idv::Error| x.to_string();
        let u32_at = |r: &[u8], o: usize| {
            let mut b = [0u8; 4];
            for (d, s) in b.iter_mut().zip(r.iter().skip(o)) {
                *d = *s;
            }
            b
        };
        let recs: Vec<&[u8]> = table.chunks_exact(13).collect();
        let ids: Vec<u32> = recs
            .iter()
            .map(|r| u32::from_le_bytes(u32_at(r, 0)))
            .collect();
        let mut feats = VectorValues::new(ItemType::F32);
        for r in &recs {
            let xy = Values::F32(vec![
                f32::from_le_bytes(u32_at(r, 4)),
                f32::from_le_bytes(u32_at(r, 8)),
            ]);
            feats.push_dense(&xy);
        }
        let labels: Vec<u64> = recs
            .iter()
            .map(|r| u64::from(r.get(12).copied().unwrap_or(0)) + 1)
            .collect();
        let key = ItemType::Key {
            width: KeyWidth::U32,
            count: 10,
        };
        let names: TextValues = (0..10).map(|i| format!("class{i}")).collect();
        let mut names_vec = VectorValues::new(ItemType::Text);
        names_vec.push_dense(&Values::Text(names));
        let columns = vec![
            ColumnSpec::new("id", ColumnType::Scalar(ItemType::U32)),
            ColumnSpec::new("features", ColumnType::vector(ItemType::F32, 2)),
            ColumnSpec::new("label", ColumnType::Scalar(key)).annotation(
                "KeyValues",
                ColumnType::vector(ItemType::Text, 10),
                Values::Vector(names_vec),
            ),
        ];
        let mut w = IdvWriter::create(&idv, columns, WriterOptions::default()).map_err(e)?;
        w.write_batch(&[
            Values::U32(ids.clone()),
            Values::Vector(feats),
            Values::Key(labels.clone()),
        ])
        .map_err(e)?;
        w.finish().map_err(e)?;
        let r = IdvReader::open(&idv).map_err(e)?;
        r.validate().map_err(e)?;
        if r.column::<u32>("id").map_err(e)? != ids
            || r.column::<u64>("label").map_err(e)? != labels
        {
            return Err("columns read back differ".into());
        }
        let kinds = r.columns().get(2).map_or(0, |c| c.annotations.len());
        Ok(format!(
            "{} rows x {} columns in {} block(s) per column, {kinds} annotation, validated and read back",
            r.row_count(),
            r.columns().len(),
            r.block_count()
        ))
    })();
    runs.push(FormatRun {
        format: "idv",
        bytes: std::fs::metadata(&idv).map_or(0, |m| m.len()),
        path: idv,
        result,
    });

    // MLDF: the table as an INT id, a 2-float NDARRAY and a nullable label
    // (missing for every 10th row), compressed and checksummed, streamed;
    // then validated, read back field by field and compared with itself.
    let mldf = dir.join("table.mldf");
    let result = (|| -> Result<String, String> {
        use dataformats::mldf::{
            Dtype, Field, FieldType, FieldValue, Reader as MReader, Value as MValue,
            Writer as MWriter, WriterOptions as MOptions,
        };
        let e = |x: dataformats::mldf::Error| x.to_string();
        let fields = vec![
            Field::new("id", FieldType::Int, false),
            Field::new(
                "xy",
                FieldType::NdArray {
                    dtype: Dtype::F32,
                    shape: vec![2],
                },
                false,
            ),
            Field::new("label", FieldType::Int, true),
        ];
        let opts = MOptions {
            compressed: true,
            checksummed: true,
            page_size: 1 << 16,
            ..MOptions::default()
        };
        let mut w = MWriter::create(&mldf, fields, opts).map_err(e)?;
        let recs: Vec<&[u8]> = table.chunks_exact(13).collect();
        for (i, r) in recs.iter().enumerate() {
            let id = i64::from(
                r.get(..4)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes),
            );
            let label = if i % 10 == 9 {
                FieldValue::Missing
            } else {
                FieldValue::Int(i64::from(r.get(12).copied().unwrap_or(0)))
            };
            w.add_sample(&[
                FieldValue::Int(id),
                FieldValue::NdArray(r.get(4..12).unwrap_or_default()),
                label,
            ])
            .map_err(e)?;
        }
        w.finish().map_err(e)?;
        let r = MReader::open(&mldf).map_err(e)?;
        r.validate().map_err(e)?;
        let last = r.num_samples().saturating_sub(1);
        let missing = (0..r.num_samples())
            .filter(|&i| matches!(r.value(i, 2), Ok(MValue::Missing)))
            .count();
        match r.value(last, 1).map_err(e)? {
            MValue::NdArray(b)
                if b.as_ref() == recs.last().and_then(|x| x.get(4..12)).unwrap_or_default() => {}
            _ => return Err("last array read back differs".into()),
        }
        Ok(format!(
            "{} samples, zstd per value, CRC-32 verified, {missing} missing labels, read back equal",
            r.num_samples()
        ))
    })();
    runs.push(FormatRun {
        format: "mldf",
        bytes: std::fs::metadata(&mldf).map_or(0, |m| m.len()),
        path: mldf,
        result,
    });
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
    // (source format, input, output, file the output must equal record for record)
    let mut plan: Vec<(&str, &str, &str, Option<&str>)> = Vec::new();
    if made("idv") && made("mldf") {
        plan.push(("idv", "table.idv", "table.from-idv.mldf", None));
        plan.push((
            "mldf",
            "table.from-idv.mldf",
            "table.back.idv",
            Some("table.idv"),
        ));
    }
    if made("cntk") && made("mldf") {
        plan.push(("cntk", "table.cbf.bin", "table.from-cntk.mldf", None));
        plan.push((
            "mldf",
            "table.from-cntk.mldf",
            "table.back.bin",
            Some("table.cbf.bin"),
        ));
    }
    if made("tbl2") && made("mldf") {
        plan.push(("tbl2", "table.tbl", "table.from-tbl.mldf", None));
        plan.push((
            "mldf",
            "table.from-tbl.mldf",
            "table.back.tbl",
            Some("table.tbl"),
        ));
    }
    if made("bloscpack") && made("mldf") {
        plan.push(("bloscpack", "table.blp", "table.from-blp.mldf", None));
        plan.push((
            "mldf",
            "table.from-blp.mldf",
            "table.back.blp",
            Some("table.blp"),
        ));
    }
    if made("blz") && made("mldf") {
        plan.push(("blz", "table.bcolz", "table.from-bcolz.mldf", None));
        plan.push((
            "mldf",
            "table.from-bcolz.mldf",
            "table.back.bcolz",
            Some("table.bcolz"),
        ));
    }
    if made("mldf") {
        plan.push(("mldf", "table.mldf", "table.jsonl", None));
    }
    let mut out = Vec::new();
    for (_, input, output, same_as) in plan {
        let (input, output) = (dir.join(input), dir.join(output));
        let same_as = same_as.map(|p| dir.join(p));
        if output.is_dir() {
            let _ = std::fs::remove_dir_all(&output);
        }
        let what = format!(
            "{} -> {}",
            input
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            output
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        );
        let result = crate::output::quietly(|| convert_one(&input, &output))
            .and_then(|()| check_converted(&input, &output))
            .and_then(|what| match &same_as {
                Some(original) => same_records(original, &output).map(|()| {
                    format!(
                        "{what}, equal to {}",
                        original
                            .file_name()
                            .map(|n| n.to_string_lossy())
                            .unwrap_or_default()
                    )
                }),
                None => Ok(what),
            });
        out.push(Conversion { what, result });
    }
    out
}

fn convert_one(input: &Path, output: &Path) -> Result<(), String> {
    dataformats::convert::convert(input, output, &Default::default())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `a` and `b` hold the same records (compared as JSON, so NaN equals NaN).
fn same_records(a: &Path, b: &Path) -> Result<(), String> {
    let (a, b) = (
        dataformats::open(a).map_err(|e| e.to_string())?,
        dataformats::open(b).map_err(|e| e.to_string())?,
    );
    if a.len() != b.len() {
        return Err(format!("{} records, the original has {}", b.len(), a.len()));
    }
    let json =
        |r: &[dataformats::dataset::Value]| r.iter().map(|v| v.to_json()).collect::<Vec<_>>();
    let mut i = 0;
    while i < a.len() {
        let stop = a.len().min(i + 4096);
        let ra = a.records(i..stop).map_err(|e| e.to_string())?;
        let rb = b.records(i..stop).map_err(|e| e.to_string())?;
        for (k, (x, y)) in ra.iter().zip(&rb).enumerate() {
            if json(x) != json(y) {
                return Err(format!("record {} differs from the original", i + k as u64));
            }
        }
        i = stop;
    }
    Ok(())
}

/// The converted file validates and holds its source's records (JSON lines:
/// one line per record).
fn check_converted(input: &Path, output: &Path) -> Result<String, String> {
    let src = dataformats::open(input).map_err(|e| e.to_string())?;
    if output.extension().is_some_and(|e| e == "jsonl") {
        let text = std::fs::read_to_string(output).map_err(|e| e.to_string())?;
        let lines = text.lines().count() as u64;
        if lines != src.len() {
            return Err(format!("{lines} lines for {} records", src.len()));
        }
        return Ok(format!("{lines} JSON lines"));
    }
    let d = dataformats::open(output).map_err(|e| e.to_string())?;
    d.validate().map_err(|e| e.to_string())?;
    // CNTK sequences become one MLDF row per sample, so counts differ
    // there; everything else keeps one record per record.
    let cntk = src.format() == dataformats::Format::Cntk || d.format() == dataformats::Format::Cntk;
    if !cntk && d.len() != src.len() {
        return Err(format!("{} records from {}", d.len(), src.len()));
    }
    Ok(format!(
        "{} {} record(s), {} column(s), validated",
        d.len(),
        d.format().name(),
        d.columns().len()
    ))
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
