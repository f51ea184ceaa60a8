//! `cargo xtask interop idv`: IDV files from our writer, covering every
//! codec, loaded by the real ML.NET 1.5 and re-saved by its BinarySaver
//! (which decodes every value); the re-saved files must hold exactly the
//! values we wrote (canonical hashes of every column and annotation). The
//! IDV vectors, converted through MLDF and through Parquet back to IDV by
//! the library, are loaded the same way, with the vectors' types.
//!
//! ML.NET comes from PyPI wheels, without NuGet (see the research note
//! `idv-mlnet-interop.md`): the ML.NET assemblies inside `nimbusml==1.8.0`,
//! the .NET Core 3.1 runtime inside `dotnetcore2==3.1.23`, and `pythonnet`.
//! Everything goes to `target/interop/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use dataformats::core::ChecksumKind;
use dataformats::idv::{
    ColumnSpec, ColumnType, Compression, DateTimeOffset, ItemType, KeyWidth, Reader, TextValues,
    Values, VectorValues, Writer, WriterOptions, render,
};
use serde_json::{Value, json};

const SCRIPT: &str = include_str!("interop_idv.py");
/// The module both ML.NET scripts import to start the runtime.
pub(crate) const MLNET_PY: &str = include_str!("mlnet.py");

use crate::interop::run;

fn hash(ty: &ColumnType, v: &Values) -> String {
    let mut h = ChecksumKind::Sha256.hasher();
    render::canonical_bytes(ty, v, &mut |b| h.update(b));
    h.finish().to_hex()
}

/// The ML.NET pieces, downloaded and unpacked once.
pub(crate) fn mlnet(dir: &Path, py: &Path) -> Result<PathBuf, String> {
    let root = dir.join("idv-mlnet");
    if root
        .join("nimbusml/internal/libs/Microsoft.ML.Data.dll")
        .exists()
        && root.join("dotnetcore2/bin/dotnet").exists()
    {
        return Ok(root);
    }
    let wheels = dir.join("idv-wheels");
    fs::create_dir_all(&wheels).map_err(|e| e.to_string())?;
    println!("interop: downloading nimbusml 1.8.0 (ML.NET 1.5) and dotnetcore2 3.1.23 from PyPI");
    run(Command::new(py)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args(["--python-version", "3.8", "--platform", "manylinux1_x86_64"])
        .args(["nimbusml==1.8.0", "dotnetcore2==3.1.23", "-d"])
        .arg(&wheels))?;
    let unzip = "import sys, zipfile, glob\nfor w in glob.glob(sys.argv[1] + '/*.whl'):\n    zipfile.ZipFile(w).extractall(sys.argv[2])\n";
    run(Command::new(py).args(["-c", unzip]).arg(&wheels).arg(&root))?;
    Ok(root)
}

fn text(items: &[&str]) -> Values {
    Values::Text(items.iter().collect::<TextValues>())
}

fn names(prefix: &str, n: usize) -> Values {
    let t: TextValues = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let mut v = VectorValues::new(ItemType::Text);
    v.push_dense(&Values::Text(t));
    Values::Vector(v)
}

/// `rows` values of every scalar type, with edge values.
fn scalar_columns(rows: usize) -> Vec<(ColumnSpec, Values)> {
    let r = |i: usize| i as u64;
    let key = |w: KeyWidth, count: u64| ItemType::Key { width: w, count };
    let mut out = vec![
        (
            ItemType::I8,
            Values::I8(
                (0..rows)
                    .map(|i| [i8::MIN, -1, 0, 1, i8::MAX][i % 5])
                    .collect(),
            ),
        ),
        (
            ItemType::U8,
            Values::U8((0..rows).map(|i| (i * 37) as u8).collect()),
        ),
        (
            ItemType::I16,
            Values::I16(
                (0..rows)
                    .map(|i| [i16::MIN, -7, 0, 300, i16::MAX][i % 5])
                    .collect(),
            ),
        ),
        (
            ItemType::U16,
            Values::U16((0..rows).map(|i| (i * 4099) as u16).collect()),
        ),
        (
            ItemType::I32,
            Values::I32(
                (0..rows)
                    .map(|i| [i32::MIN, -1, 0, 1 << 20, i32::MAX][i % 5])
                    .collect(),
            ),
        ),
        (
            ItemType::U32,
            Values::U32(
                (0..rows)
                    .map(|i| (i as u32).wrapping_mul(2_654_435_761))
                    .collect(),
            ),
        ),
        (
            ItemType::I64,
            Values::I64(
                (0..rows)
                    .map(|i| [i64::MIN, -1, 0, 1 << 40, i64::MAX][i % 5])
                    .collect(),
            ),
        ),
        (
            ItemType::U64,
            Values::U64(
                (0..rows)
                    .map(|i| r(i).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                    .collect(),
            ),
        ),
        (
            ItemType::F32,
            Values::F32(
                (0..rows)
                    .map(|i| {
                        [
                            0.0,
                            -0.0,
                            1.5,
                            f32::NAN,
                            f32::INFINITY,
                            f32::MIN_POSITIVE,
                            -3.25e30,
                            0.1,
                        ][i % 8]
                    })
                    .collect(),
            ),
        ),
        (
            ItemType::F64,
            Values::F64(
                (0..rows)
                    .map(|i| {
                        [
                            0.0,
                            -0.0,
                            1.5,
                            f64::NAN,
                            f64::NEG_INFINITY,
                            5e-324,
                            1e300,
                            0.1,
                        ][i % 8]
                    })
                    .collect(),
            ),
        ),
        (
            ItemType::Bool,
            Values::Bool((0..rows).map(|i| i % 3 == 0).collect()),
        ),
        (
            ItemType::Text,
            text(
                &(0..rows)
                    .map(|i| {
                        [
                            "",
                            "a",
                            "héllo, world",
                            "日本語",
                            "😀 grin",
                            "tab\there",
                            "\"quoted\"",
                        ][i % 7]
                    })
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            ItemType::TimeSpan,
            Values::TimeSpan(
                (0..rows)
                    .map(|i| [0, 1, -1, 864_000_000_000, -864_000_000_000, i64::MAX][i % 6])
                    .collect(),
            ),
        ),
        (
            ItemType::DateTime,
            Values::DateTime(
                (0..rows)
                    .map(|i| [0, 1, 633_979_008_000_000_000, dataformats::idv::MAX_TICKS][i % 4])
                    .collect(),
            ),
        ),
        (
            ItemType::DateTimeOffset,
            Values::DateTimeOffset(
                (0..rows)
                    .map(|i| DateTimeOffset {
                        ticks: 633_979_008_000_000_000 + i as i64,
                        offset_minutes: [0, 330, -480, 840, -840][i % 5],
                    })
                    .collect(),
            ),
        ),
        (
            ItemType::RowId,
            Values::RowId(
                (0..rows)
                    .map(|i| (u128::from(r(i)) << 64) | u128::from(r(i) * 3))
                    .collect(),
            ),
        ),
        (
            key(KeyWidth::U8, 3),
            Values::Key((0..rows).map(|i| r(i) % 4).collect()),
        ),
        (
            key(KeyWidth::U16, 1000),
            Values::Key((0..rows).map(|i| r(i) * 7 % 1001).collect()),
        ),
        (
            key(KeyWidth::U32, 5),
            Values::Key((0..rows).map(|i| r(i) % 6).collect()),
        ),
        (
            key(KeyWidth::U64, 20_000_000_000),
            Values::Key(
                (0..rows)
                    .map(|i| r(i) * 999_999_937 % 20_000_000_001)
                    .collect(),
            ),
        ),
    ];
    out.drain(..)
        .enumerate()
        .map(|(i, (t, v))| {
            let mut spec =
                ColumnSpec::new(format!("c{i}_{}", t.codec_name()), ColumnType::Scalar(t));
            if let ItemType::Key { count, .. } = t
                && count <= 1000
            {
                spec = spec.annotation(
                    "KeyValues",
                    ColumnType::vector(ItemType::Text, count as u32),
                    names("v", count as usize),
                );
            }
            (spec, v)
        })
        .collect()
}

/// Vectors of every item type: fixed size dense and sparse (with
/// SlotNames), variable size, empty.
fn vector_columns(rows: usize) -> Vec<(ColumnSpec, Values)> {
    let items = [
        ItemType::I8,
        ItemType::U8,
        ItemType::I16,
        ItemType::U16,
        ItemType::I32,
        ItemType::U32,
        ItemType::I64,
        ItemType::U64,
        ItemType::F32,
        ItemType::F64,
        ItemType::Bool,
        ItemType::Text,
        ItemType::TimeSpan,
        ItemType::DateTime,
        ItemType::DateTimeOffset,
        ItemType::RowId,
        ItemType::Key {
            width: KeyWidth::U32,
            count: 9,
        },
    ];
    let one = |t: ItemType, k: usize| -> Values {
        let mut all = scalar_columns(k + 1)
            .into_iter()
            .find(|(s, _)| {
                s.ty.item() == t
                    || matches!(
                        (s.ty.item(), t),
                        (ItemType::Key { .. }, ItemType::Key { .. })
                    )
            })
            .map(|(_, v)| v)
            .unwrap_or_else(|| Values::empty(t));
        if let Values::Key(k) = &mut all {
            k.iter_mut().for_each(|x| *x %= 10);
        }
        all.slice(k..k + 1).unwrap_or_else(|| Values::empty(t))
    };
    let mut out = Vec::new();
    for (n, t) in items.into_iter().enumerate() {
        let mut fixed = VectorValues::new(t);
        let mut var = VectorValues::new(t);
        for i in 0..rows {
            let mut vals = Values::empty(t);
            for k in 0..6 {
                vals.append_from(&one(t, i * 6 + k), 0..1);
            }
            if i % 3 == 0 {
                let idx: Vec<u32> = [1u32, 4].to_vec();
                let sv = vals.slice(0..2).unwrap_or_else(|| Values::empty(t));
                fixed.push_sparse(6, &idx, &sv);
            } else if i % 3 == 1 {
                fixed.push_sparse(6, &[], &Values::empty(t));
            } else {
                fixed.push_dense(&vals);
            }
            let len = i % 4;
            var.push_dense(&vals.slice(0..len).unwrap_or_else(|| Values::empty(t)));
        }
        out.push((
            ColumnSpec::new(format!("f{n}_{}", t.codec_name()), ColumnType::vector(t, 6))
                .annotation(
                    "SlotNames",
                    ColumnType::vector(ItemType::Text, 6),
                    names("slot", 6),
                ),
            Values::Vector(fixed),
        ));
        out.push((
            ColumnSpec::new(
                format!("v{n}_{}", t.codec_name()),
                ColumnType::var_vector(t),
            ),
            Values::Vector(var),
        ));
    }
    out
}

fn write(
    path: &Path,
    cols: Vec<(ColumnSpec, Values)>,
    opts: WriterOptions,
) -> Result<Value, String> {
    let e = |x: dataformats::idv::Error| format!("{}: {x}", path.display());
    let specs: Vec<ColumnSpec> = cols.iter().map(|(s, _)| s.clone()).collect();
    let data: Vec<Values> = cols.iter().map(|(_, v)| v.clone()).collect();
    let mut w = Writer::create(path, specs.clone(), opts).map_err(e)?;
    w.write_batch(&data).map_err(e)?;
    w.finish().map_err(e)?;
    let columns: Vec<Value> = specs
        .iter()
        .zip(&data)
        .map(|(s, v)| {
            json!({
                "name": s.name, "type": s.ty.to_string(), "sha256": hash(&s.ty, v),
                "annotations": s.annotations.iter().map(|(k, _, _)| k.clone()).collect::<Vec<_>>(),
                "annotation_sha256": s.annotations.iter().map(|(_, t, v)| hash(t, v)).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({"path": path, "columns": columns}))
}

/// The manifest entry of an IDV file as our reader sees it: its live
/// columns with their types, value hashes and annotations.
fn entry_of(path: &Path) -> Result<Value, String> {
    let e = |x: dataformats::idv::Error| format!("{}: {x}", path.display());
    let r = Reader::open(path).map_err(e)?;
    let mut columns = Vec::new();
    for (i, c) in r.columns().iter().enumerate() {
        let Some(ty) = c.ty().filter(|_| !c.is_dead()) else {
            continue;
        };
        let v = r.read_column(i).map_err(e)?;
        let live: Vec<_> = c
            .annotations
            .iter()
            .filter(|a| a.value.is_some() && a.codec.ty.is_some())
            .collect();
        columns.push(json!({
            "name": c.name, "type": ty.to_string(), "sha256": hash(ty, &v),
            "annotations": live.iter().map(|a| a.kind.clone()).collect::<Vec<_>>(),
            "annotation_sha256": live
                .iter()
                .filter_map(|a| Some(hash(a.codec.ty.as_ref()?, a.value.as_ref()?)))
                .collect::<Vec<_>>(),
        }));
    }
    Ok(json!({"path": path, "columns": columns}))
}

/// Whether a text value of the IDV file holds half of a surrogate pair.
fn lone_surrogates(path: &Path) -> Result<bool, String> {
    let e = |x: dataformats::idv::Error| format!("{}: {x}", path.display());
    let r = Reader::open(path).map_err(e)?;
    for (i, c) in r.columns().iter().enumerate() {
        if !c.is_dead() && r.read_column(i).map_err(e)?.lone_surrogates().is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every valid IDV vector taken through MLDF and through Parquet and back
/// to IDV by `dataformats::convert`: each result must hold the vector's
/// live columns with their types, values and annotations, and is then
/// loaded by ML.NET like the files we write.
fn round_trips(out: &Path) -> Result<Vec<Value>, String> {
    use dataformats::convert::{ConvertOptions, convert};
    let mut manifest = Vec::new();
    for (src, valid) in dataformats::core::testing::vector_files("idv", "idv") {
        if !valid {
            continue;
        }
        let stem = src
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if lone_surrogates(&src)? {
            // Arrow text is UTF-8: the typed view writes U+FFFD for half of
            // a surrogate pair (docs/arrow.md), so such text cannot come back.
            println!("SKIP {stem}: text with lone UTF-16 surrogates");
            continue;
        }
        let want = entry_of(&src)?;
        let rows = Reader::open(&src).map_or(0, |r| r.len());
        for via in ["mldf", "parquet"] {
            if rows == 0 && via == "mldf" {
                // MLDF carries a source schema in a record (conversions.md).
                println!("SKIP {stem} through mldf: no records to carry its schema");
                continue;
            }
            let mid = out.join(format!("{stem}.{via}"));
            let back = out.join(format!("{stem}.via-{via}.idv"));
            let opts = ConvertOptions::default();
            convert(&src, &mid, &opts).map_err(|e| format!("{stem} -> {via}: {e}"))?;
            convert(&mid, &back, &opts).map_err(|e| format!("{stem} {via} -> idv: {e}"))?;
            let got = entry_of(&back)?;
            if got["columns"] != want["columns"] {
                let (g, w) = (
                    got["columns"].as_array().cloned().unwrap_or_default(),
                    want["columns"].as_array().cloned().unwrap_or_default(),
                );
                let first = g
                    .iter()
                    .zip(&w)
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("ours {a} / the vector's {b}"))
                    .unwrap_or_else(|| format!("{} columns / {}", g.len(), w.len()));
                return Err(format!(
                    "{stem} through {via}: the columns differ from the vector's: {first}"
                ));
            }
            manifest.push(got);
        }
    }
    Ok(manifest)
}

fn write_files(out: &Path) -> Result<Vec<Value>, String> {
    let mut manifest = Vec::new();
    for (tag, compression) in [
        ("deflate", Compression::Deflate),
        ("none", Compression::None),
    ] {
        let opts = WriterOptions {
            compression,
            rows_per_block: Some(7),
            level: 6,
        };
        manifest.push(write(
            &out.join(format!("scalars_{tag}.idv")),
            scalar_columns(40),
            opts,
        )?);
        manifest.push(write(
            &out.join(format!("vectors_{tag}.idv")),
            vector_columns(20),
            opts,
        )?);
    }
    // Defaults (8192 rows per block), several blocks, and an empty file.
    let big: Vec<(ColumnSpec, Values)> = scalar_columns(30_000).into_iter().take(12).collect();
    manifest.push(write(
        &out.join("defaults_30000_rows.idv"),
        big,
        WriterOptions::default(),
    )?);
    manifest.push(write(
        &out.join("zero_rows.idv"),
        scalar_columns(0),
        WriterOptions::default(),
    )?);
    Ok(manifest)
}

/// Our reader on ML.NET's re-saved file: the same columns and values.
fn verify(entry: &Value) -> Result<(), String> {
    if entry["columns"].as_array().is_some_and(Vec::is_empty) {
        // Loaded with its (empty) schema; ML.NET cannot re-save it.
        return Ok(());
    }
    let path = PathBuf::from(entry["path"].as_str().unwrap_or_default());
    let resaved = PathBuf::from(format!("{}.mlnet.idv", path.display()));
    let r = Reader::open(&resaved).map_err(|e| format!("re-saved file: {e}"))?;
    let cols = entry["columns"].as_array().cloned().unwrap_or_default();
    if r.columns().len() != cols.len() {
        return Err(format!(
            "{} columns re-saved, {} written",
            r.columns().len(),
            cols.len()
        ));
    }
    for (i, (c, want)) in r.columns().iter().zip(&cols).enumerate() {
        let ty = c.ty().ok_or("dead column")?;
        let got = hash(ty, &r.read_column(i).map_err(|e| e.to_string())?);
        if want["name"] != c.name.as_str()
            || want["type"] != ty.to_string().as_str()
            || want["sha256"] != got.as_str()
        {
            return Err(format!("column {}: values differ after ML.NET", c.name));
        }
        let ann: Vec<String> = c
            .annotations
            .iter()
            .filter_map(|a| Some(hash(a.codec.ty.as_ref()?, a.value.as_ref()?)))
            .collect();
        if json!(ann) != want["annotation_sha256"] {
            return Err(format!(
                "column {}: annotations differ after ML.NET",
                c.name
            ));
        }
    }
    Ok(())
}

pub(crate) fn main(dir: &Path, py: &Path) -> Result<bool, String> {
    let root = mlnet(dir, py)?;
    let files = dir.join("idv-files");
    let _ = fs::remove_dir_all(&files);
    fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let mut manifest = write_files(&files)?;
    let written = manifest.len();
    manifest.extend(round_trips(&files)?);
    println!(
        "interop idv: {written} files written, {} converted from the IDV vectors through MLDF and Parquet",
        manifest.len() - written
    );
    let mpath = dir.join("manifest_idv.json");
    fs::write(
        &mpath,
        serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let script = dir.join("interop_idv.py");
    fs::write(&script, SCRIPT).map_err(|e| e.to_string())?;
    fs::write(dir.join("mlnet.py"), MLNET_PY).map_err(|e| e.to_string())?;
    let loaded = Command::new(py)
        .arg(&script)
        .arg(&mpath)
        .arg(&root)
        .status()
        .map_err(|e| e.to_string())?
        .success();
    let (mut ok, mut failed) = (0, 0);
    for entry in &manifest {
        let name = entry["path"].as_str().unwrap_or_default();
        match verify(entry) {
            Ok(()) => {
                ok += 1;
                println!("SAME {name}");
            }
            Err(e) => {
                failed += 1;
                println!("FAIL {name}: {e}");
            }
        }
    }
    let columns: usize = manifest
        .iter()
        .map(|m| m["columns"].as_array().map_or(0, Vec::len))
        .sum();
    println!(
        "interop idv: {ok} files ({columns} columns) loaded by ML.NET 1.5 with our values, {failed} failed"
    );
    Ok(loaded && failed == 0)
}
