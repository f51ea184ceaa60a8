//! `cargo xtask interop bloscpack`: files our writers make, in every option
//! combination, read back by the reference Python libraries.
//!
//! Builds a throw-away virtual environment (`target/interop/venv`) with numpy,
//! python-blosc 1.11, python-bloscpack 0.16 and bcolz-zipline from PyPI,
//! writes the files with this workspace's writers, and runs `interop.py`,
//! which decodes each with the reference and compares SHA-256 digests,
//! shapes, dtypes and metadata with what we wrote.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use dataformats::bloscpack::blz::{ArrayOptions, ColumnData, Layout, create_array, create_table};
use dataformats::bloscpack::dtype::Dtype;
use dataformats::bloscpack::numpy::{NumpyMeta, Order};
use dataformats::bloscpack::{WriteOptions, append, pack_bytes};
use dataformats::core::ChecksumKind;
use dataformats::core::codec::blosc::{BloscCompressor, Shuffle};
use serde_json::{Value, json};

const SCRIPT: &str = include_str!("interop.py");

fn sha(b: &[u8]) -> String {
    ChecksumKind::Sha256.digest(b).to_hex()
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

fn venv(dir: &Path) -> Result<PathBuf, String> {
    let py = dir.join("venv/bin/python");
    if !py.exists() {
        println!(
            "interop: creating a virtual environment in {}",
            dir.join("venv").display()
        );
        run(Command::new("python3")
            .args(["-m", "venv"])
            .arg(dir.join("venv")))?;
    }
    println!("interop: installing numpy, blosc 1.11.4, bloscpack 0.16.0, bcolz-zipline from PyPI");
    run(Command::new(&py).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "numpy",
        "blosc==1.11.4",
        "bloscpack==0.16.0",
        "bcolz-zipline",
    ]))?;
    Ok(py)
}

fn codecs() -> [BloscCompressor; 5] {
    // python-blosc 1.11 is built without Snappy.
    [
        BloscCompressor::BloscLz,
        BloscCompressor::Lz4,
        BloscCompressor::Lz4Hc,
        BloscCompressor::Zlib,
        BloscCompressor::Zstd,
    ]
}

fn write_files(out: &Path) -> Result<Vec<Value>, String> {
    let e = |x: dataformats::bloscpack::Error| x.to_string();
    let mut manifest = Vec::new();
    let raw: Vec<u8> = (0..30_000u32).map(|i| ((i / 11) ^ (i % 7)) as u8).collect();
    let user_meta = json!({"source": "dataformats", "unit": "µm", "list": [1, 2.5, null, true]});
    let checksums: Vec<ChecksumKind> = ChecksumKind::ALL
        .into_iter()
        .filter(|k| *k != ChecksumKind::Crc16Modbus)
        .collect();
    let mut n = 0;
    // Raw bytes: every codec x shuffle x checksum x offsets x (metadata or not).
    for codec in codecs() {
        for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            for &checksum in &checksums {
                for offsets in [true, false] {
                    for with_meta in [false, true] {
                        let o = WriteOptions::default()
                            .codec(codec)
                            .shuffle(shuffle)
                            .checksum(checksum)
                            .offsets(offsets)
                            .chunk_size(7000)
                            .typesize(4);
                        let meta = with_meta.then_some(&user_meta);
                        let p = out.join(format!("bytes_{n:04}.blp"));
                        fs::write(&p, pack_bytes(&raw, meta, &o).map_err(e)?)
                            .map_err(|x| x.to_string())?;
                        manifest.push(json!({"kind": "bytes", "path": p, "sha256": sha(&raw), "metadata": meta}));
                        n += 1;
                    }
                }
            }
        }
    }
    // Arrays of several dtypes, orders and shapes, every codec.
    let arrays: Vec<(&str, Vec<u64>, Order, Vec<u8>)> = vec![
        (
            "'<f8'",
            vec![1000],
            Order::C,
            (0..1000)
                .flat_map(|i| (f64::from(i) * 0.1).to_le_bytes())
                .collect(),
        ),
        (
            "'<i2'",
            vec![40, 25],
            Order::C,
            (0..1000i16).flat_map(|i| (i * 3).to_le_bytes()).collect(),
        ),
        (
            "'>i4'",
            vec![500],
            Order::C,
            (0..500i32).flat_map(|i| (i - 250).to_be_bytes()).collect(),
        ),
        (
            "'<f4'",
            vec![20, 10],
            Order::F,
            (0..200).flat_map(|i| (i as f32).to_le_bytes()).collect(),
        ),
        (
            "'|b1'",
            vec![999],
            Order::C,
            (0..999).map(|i| u8::from(i % 3 == 0)).collect(),
        ),
        (
            "'|S10'",
            vec![300],
            Order::C,
            (0..300)
                .flat_map(|i| format!("row{i:05}\0\0").into_bytes())
                .collect(),
        ),
        (
            "[('x', '<f4'), ('y', '<i2'), ('tag', '|S6')]",
            vec![400],
            Order::C,
            (0..400)
                .flat_map(|i: i32| {
                    [
                        (i as f32).to_le_bytes().to_vec(),
                        (i as i16).to_le_bytes().to_vec(),
                        format!("t{i:04}\0").into_bytes(),
                    ]
                    .concat()
                })
                .collect(),
        ),
    ];
    for codec in codecs() {
        for (lit, shape, order, bytes) in &arrays {
            let dtype = Dtype::parse_python_literal(lit).map_err(|x| x.to_string())?;
            let m = NumpyMeta {
                dtype: dtype.clone(),
                shape: shape.clone(),
                order: *order,
            };
            let size = dtype.itemsize();
            let o = WriteOptions::default()
                .codec(codec)
                .typesize(size.min(255))
                .chunk_size(size * 128);
            let p = out.join(format!("array_{n:04}.blp"));
            fs::write(&p, pack_bytes(bytes, Some(&m.to_value()), &o).map_err(e)?)
                .map_err(|x| x.to_string())?;
            manifest.push(json!({"kind": "ndarray", "path": p, "sha256": sha(bytes), "shape": shape, "order": order.as_str(), "dtype_literal": lit}));
            n += 1;
        }
    }
    // Appends: in-chunk and spilling into reserved slots, with another codec.
    let p = out.join("appended.blp");
    fs::write(
        &p,
        pack_bytes(
            &raw[..10_000],
            None,
            &WriteOptions::default()
                .chunk_size(4000)
                .codec(BloscCompressor::Lz4),
        )
        .map_err(e)?,
    )
    .map_err(|x| x.to_string())?;
    append(&p, &raw[10_000..11_000], &WriteOptions::default()).map_err(e)?;
    append(
        &p,
        &raw[11_000..],
        &WriteOptions::default().codec(BloscCompressor::Zstd),
    )
    .map_err(e)?;
    manifest.push(json!({"kind": "bytes", "path": p, "sha256": sha(&raw), "metadata": null}));
    // bcolz directories: arrays with every codec and shuffle, appended and trimmed, and a table.
    let f8 = Dtype::parse_python_literal("'<f8'").map_err(|x| x.to_string())?;
    let vals: Vec<u8> = (0..2500)
        .flat_map(|i| (f64::from(i) * 0.25).to_le_bytes())
        .collect();
    for codec in codecs() {
        for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            let p = out.join(format!("bcolz_{n:04}"));
            let mut a = create_array(
                &p,
                &f8,
                &[],
                &vals[..2000 * 8],
                &ArrayOptions::new(Layout::Bcolz)
                    .codec(codec)
                    .shuffle(shuffle)
                    .chunklen(300),
            )
            .map_err(e)?;
            a.append(&vals[2000 * 8..]).map_err(e)?;
            a.trim(2400).map_err(e)?;
            a.set_attrs(&json!({"n": n})).map_err(e)?;
            manifest.push(json!({"kind": "bcolz", "path": p, "sha256": sha(&vals[..2400 * 8]), "rows": 2400, "attrs": {"n": n}}));
            n += 1;
        }
    }
    let ids: Vec<u8> = (0..700i64).flat_map(i64::to_le_bytes).collect();
    let names: Vec<u8> = (0..700)
        .flat_map(|i| format!("n{i:05}").into_bytes())
        .collect();
    let (ti, tn) = (
        Dtype::parse_python_literal("'<i8'").map_err(|x| x.to_string())?,
        Dtype::parse_python_literal("'|S6'").map_err(|x| x.to_string())?,
    );
    let p = out.join("bcolz_table");
    create_table(
        &p,
        &[
            ColumnData {
                name: "id",
                dtype: &ti,
                trailing: &[],
                data: &ids,
            },
            ColumnData {
                name: "name",
                dtype: &tn,
                trailing: &[],
                data: &names,
            },
        ],
        &json!({"title": "interop"}),
        &ArrayOptions::new(Layout::Bcolz).chunklen(256),
    )
    .map_err(e)?;
    let rows: Vec<u8> = (0..700)
        .flat_map(|i| {
            [
                ids[i * 8..i * 8 + 8].to_vec(),
                names[i * 6..i * 6 + 6].to_vec(),
            ]
            .concat()
        })
        .collect();
    manifest.push(json!({"kind": "bcolz", "path": p, "sha256": sha(&rows), "rows": 700, "attrs": {"title": "interop"}}));
    Ok(manifest)
}

pub(crate) fn main(args: &[String]) -> Result<bool, String> {
    match args.first().map(String::as_str) {
        Some("bloscpack") => {}
        other => return Err(format!("interop: expected `bloscpack`, got {other:?}")),
    }
    let dir = crate::project_root().join("target/interop");
    let files = dir.join("files");
    let _ = fs::remove_dir_all(&files);
    fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let py = venv(&dir)?;
    let manifest = write_files(&files)?;
    println!("interop: wrote {} files and directories", manifest.len());
    let mpath = dir.join("manifest.json");
    fs::write(
        &mpath,
        serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let script = dir.join("interop.py");
    fs::write(&script, SCRIPT).map_err(|e| e.to_string())?;
    let status = Command::new(&py)
        .arg(&script)
        .arg(&mpath)
        .status()
        .map_err(|e| e.to_string())?;
    Ok(status.success())
}
