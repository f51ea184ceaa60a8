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

/// Writes a format's interop files and returns their manifest.
type WriteFiles = fn(&Path) -> Result<Vec<Value>, String>;
const SCRIPT_TBL2: &str = include_str!("interop_tbl2.py");

fn sha(b: &[u8]) -> String {
    ChecksumKind::Sha256.digest(b).to_hex()
}

pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

pub(crate) fn venv(dir: &Path, packages: &[&str]) -> Result<PathBuf, String> {
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
    println!("interop: installing {} from PyPI", packages.join(", "));
    run(Command::new(&py)
        .args(["-m", "pip", "install", "--quiet"])
        .args(packages))?;
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
    if args.first().map(String::as_str) == Some("idv") {
        let dir = crate::project_root().join("target/interop");
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let py = venv(&dir, &["pythonnet"])?;
        return crate::interop_idv::main(&dir, &py);
    }
    let (packages, script, writer): (&[&str], &str, WriteFiles) =
        match args.first().map(String::as_str) {
            Some("bloscpack") => (
                &[
                    "numpy",
                    "blosc==1.11.4",
                    "bloscpack==0.16.0",
                    "bcolz-zipline",
                ],
                SCRIPT,
                write_files,
            ),
            Some("tbl2") => (&["turboloader==2.39.0"], SCRIPT_TBL2, write_tbl2_files),
            other => {
                return Err(format!(
                    "interop: expected `bloscpack`, `tbl2` or `idv`, got {other:?}"
                ));
            }
        };
    let dir = crate::project_root().join("target/interop");
    let files = dir.join("files");
    let _ = fs::remove_dir_all(&files);
    fs::create_dir_all(&files).map_err(|e| e.to_string())?;
    let py = venv(&dir, packages)?;
    let manifest = writer(&files)?;
    println!("interop: wrote {} files and directories", manifest.len());
    let mpath = dir.join("manifest.json");
    fs::write(
        &mpath,
        serde_json::to_vec_pretty(&manifest).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let script_path = dir.join("interop.py");
    fs::write(&script_path, script).map_err(|e| e.to_string())?;
    let status = Command::new(&py)
        .arg(&script_path)
        .arg(&mpath)
        .status()
        .map_err(|e| e.to_string())?;
    Ok(status.success())
}

/// TBL v2 files from our writer: every format code, compression on and off,
/// empty and incompressible samples, metadata of every type (duplicates and
/// samples without any), and a file converted from a tar we build.
fn write_tbl2_files(out: &Path) -> Result<Vec<Value>, String> {
    use dataformats::tbl2::{MetadataType, SampleFormat, SampleInfo, Writer};
    let e = |x: dataformats::tbl2::Error| x.to_string();
    let mut manifest = Vec::new();
    let types = [
        MetadataType::NONE,
        MetadataType::JSON,
        MetadataType::PROTOBUF,
        MetadataType::MSGPACK,
        MetadataType::CUSTOM,
    ];
    for (n, compress) in [(0usize, false), (1, true), (2, true), (3, false)] {
        let p = out.join(format!("api_{n}.tbl"));
        let compression = if compress {
            dataformats::tbl2::Compression::Lz4
        } else {
            dataformats::tbl2::Compression::None
        };
        let mut w = Writer::create(&p, compression).map_err(e)?;
        let mut samples: Vec<Value> = Vec::new();
        for i in 0..40u32 {
            let data: Vec<u8> = match i % 4 {
                0 => vec![(i % 7) as u8; 500 + i as usize * 13],
                1 => (0..700u32)
                    .map(|k| (k.wrapping_mul(2_654_435_761).wrapping_add(i) >> 13) as u8)
                    .collect(),
                2 => Vec::new(),
                _ => format!("sample {i} ").repeat(20).into_bytes(),
            };
            let info = SampleInfo {
                format: SampleFormat((i % 9) as u8),
                width: (i * 7 % 300) as u16,
                height: (i * 3 % 200) as u16,
            };
            let idx = w.add_sample(&data, info).map_err(e)?;
            let compressed = compress
                && !data.is_empty()
                && dataformats::core::codec::compress(
                    dataformats::core::codec::Codec::Lz4Block,
                    &data,
                    None,
                )
                .map(|c| c.len() < data.len())
                .unwrap_or(false);
            samples.push(json!({"sha256": sha(&data), "width": info.width, "height": info.height, "format": info.format.0, "compressed": compressed, "metadata": null}));
            if i % 3 == 0 && n != 0 {
                let kind = types[(i as usize / 3) % types.len()];
                let text = format!("{{\"i\":{i},\"n\":{n}}}");
                w.add_metadata(idx, text.as_bytes(), kind).map_err(e)?;
                // A second block for the same sample: the first one wins.
                w.add_metadata(idx, b"{\"second\":true}", MetadataType::JSON)
                    .map_err(e)?;
                samples[idx as usize]["metadata"] = json!({"text": text, "type": kind.0});
            }
        }
        w.finish().map_err(e)?;
        manifest.push(json!({"path": p, "samples": samples}));
    }
    // A tar of small images converted by our converter.
    let tar = out.join("images.tar");
    {
        use std::io::Write;
        let mut t = Vec::new();
        let mut member = |name: &str, data: &[u8]| {
            let mut h = [0u8; 512];
            h[..name.len()].copy_from_slice(name.as_bytes());
            let size = format!("{:011o}\0", data.len());
            h[124..136].copy_from_slice(size.as_bytes());
            h[156] = b'0';
            h[257..263].copy_from_slice(b"ustar\0");
            t.extend_from_slice(&h);
            t.extend_from_slice(data);
            t.resize(t.len().div_ceil(512) * 512, 0);
        };
        let mut png = vec![0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0, 0, 13];
        png.extend_from_slice(b"IHDR");
        png.extend_from_slice(&64u32.to_be_bytes());
        png.extend_from_slice(&48u32.to_be_bytes());
        png.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
        let mut bmp = vec![0u8; 54 + 12 * 10 * 3];
        bmp[..2].copy_from_slice(b"BM");
        bmp[18..22].copy_from_slice(&12u32.to_le_bytes());
        bmp[22..26].copy_from_slice(&10u32.to_le_bytes());
        member("a/0.png", &png);
        member("a/1.bmp", &bmp);
        member("a/skip.txt", b"not an image");
        member(
            "a/2.JPG",
            &[
                0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8, 0, 20, 0, 30, 3, 0, 0, 0, 0, 0, 0,
            ],
        );
        t.extend_from_slice(&[0u8; 1024]);
        fs::File::create(&tar)
            .and_then(|mut f| f.write_all(&t))
            .map_err(|x| x.to_string())?;
    }
    let p = out.join("from_tar.tbl");
    dataformats::tbl2::tar::convert_tar_file(
        &tar,
        &p,
        dataformats::tbl2::Compression::Lz4,
        2,
        |_| {},
    )
    .map_err(e)?;
    let r = dataformats::tbl2::Reader::open(&p).map_err(e)?;
    let mut samples = Vec::new();
    for i in 0..r.len() {
        let en = r.entry(i).map_err(e)?;
        samples.push(json!({"sha256": sha(&r.read_sample(i).map_err(e)?), "width": en.width, "height": en.height, "format": en.format.0, "compressed": en.is_compressed(), "metadata": null}));
    }
    manifest.push(json!({"path": p, "samples": samples}));
    Ok(manifest)
}
