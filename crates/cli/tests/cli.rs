//! The `dataformats` binary end to end: exit codes, messages, JSON output.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dataformats"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn demo_round_trips_every_codec() {
    let dir = scratch("demo");
    let out = run(&["demo", "--dir", dir.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("14 of 14 round trips ok"), "{stdout}");
    // Cross-format conversions, each validated; the ones back into the
    // source format equal their originals record for record.
    assert!(stdout.contains("11 of 11 conversions ok"), "{stdout}");
    assert_eq!(stdout.matches(", equal to table.").count(), 5, "{stdout}");
    assert!(
        dir.join("table.blp").is_file()
            && dir.join("table.npy").is_file()
            && dir.join("table.bcolz/__rootdirs__").is_file()
            && dir.join("table.idv").is_file()
            && dir.join("table.mldf").is_file()
    );
    for codec in [
        "deflate",
        "zlib",
        "lz4-block",
        "lz4-frame",
        "zstd",
        "blosc-zstd-bit",
    ] {
        assert!(
            dir.join(format!("table.{codec}.bin")).is_file(),
            "{codec} file missing"
        );
    }
    // Nothing half-written is left behind.
    let temps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

#[test]
fn demo_json_is_machine_readable() {
    let dir = scratch("demo-json");
    let out = run(&["--json", "demo", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failures"], 0);
    let codecs = v["codecs"].as_array().unwrap();
    assert_eq!(codecs.len(), 8);
    assert!(
        codecs
            .iter()
            .all(|c| c["ok"] == true && c["file_size"].as_u64().unwrap() > 8)
    );
}

#[test]
fn damaged_mldf_is_refused_with_its_code() {
    let dir = scratch("mldf-bad");
    // The 8-byte-magic draft layout: the first 8 bytes match, byte 8 is 0x01.
    let p = dir.join("draft.mldf");
    let mut bytes = b"\x89MLDF\r\n\x1a\x01\x00".to_vec();
    bytes.resize(200, 0);
    std::fs::write(&p, &bytes).unwrap();
    for cmd in ["inspect", "validate", "dump"] {
        let out = run(&[cmd, p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{cmd}");
        let err = text(&out.stderr);
        assert!(
            err.contains("BadMagic") && err.contains("8-byte-magic"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    let cut = dir.join("cut.mldf");
    std::fs::write(&cut, b"\x89MLDF\r\n").unwrap();
    let out = run(&["--json", "validate", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("Truncated"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn json_errors_go_to_stderr() {
    let dir = scratch("json-err");
    let p = dir.join("x.mldf");
    std::fs::write(&p, b"\x89MLDF\r\n\x1a\n").unwrap();
    let out = run(&["--json", "inspect", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "Truncated");
    assert!(v["error"]["path"].as_str().unwrap().ends_with("x.mldf"));
    // A landed format's broken file: the error kind is the format's own word.
    let t = dir.join("x.tbl");
    std::fs::write(&t, b"TBL\x02").unwrap();
    let out = run(&["--json", "inspect", t.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "too_small");
}

#[test]
fn unknown_and_missing_files() {
    let dir = scratch("unknown");
    let p = dir.join("notes.txt");
    std::fs::write(&p, b"hello").unwrap();
    let out = run(&["inspect", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("unrecognized format"));
    let out = run(&["validate", dir.join("missing.idv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("missing.idv"));
}

#[test]
fn bad_command_lines_exit_2() {
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        run(&["dump", "x", "--range", "9..3"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&[]).status.code(), Some(2));
}

#[test]
fn formats_lists_every_format() {
    let out = run(&["--json", "formats"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["formats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "idv",
            "bloscpack",
            "blz",
            "cntk",
            "ctf",
            "mldf",
            "tbl2",
            "ffcv"
        ]
    );
    // As text: a header, then one line per format starting with its name.
    let out = run(&["formats"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("format     supported"), "{text}");
    assert_eq!(lines.len(), names.len() + 1, "{text}");
    for (line, name) in lines[1..].iter().zip(&names) {
        assert_eq!(line.split_whitespace().next(), Some(*name), "{text}");
    }
}

#[test]
fn ffcv_inspect_validate_dump_and_convert() {
    let Some(vectors) = dataformats::core::testing::vectors_dir("ffcv") else {
        return;
    };
    let dir = scratch("ffcv");
    let src = vectors.join("ffcv_basic.beton");
    let out = run(&["--json", "inspect", src.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "ffcv");
    assert_eq!(v["records"], 5);
    assert_eq!(v["columns"][2]["shape"], serde_json::json!([2, 3]));
    let out = run(&["validate", src.to_str().unwrap()]);
    assert!(out.status.success());
    let out = run(&["dump", src.to_str().unwrap(), "--range", "1..2"]);
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["label"], 4);
    assert_eq!(line["vec"]["values"][5], -2.5);
    // FFCV -> MLDF keeps every value: the MLDF file's JSON lines equal the
    // FFCV file's.
    let mldf = dir.join("basic.mldf");
    let out = run(&["convert", src.to_str().unwrap(), mldf.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(run(&["validate", mldf.to_str().unwrap()]).status.success());
    let a = dir.join("a.jsonl");
    assert!(
        run(&["convert", src.to_str().unwrap(), a.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(std::fs::read_to_string(&a).unwrap().lines().count(), 5);
    let back = dataformats::open(&mldf).unwrap();
    let orig = dataformats::open(&src).unwrap();
    assert_eq!(back.len(), orig.len());
    for i in 0..orig.len() {
        let (x, y) = (orig.record(i).unwrap(), back.record(i).unwrap());
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(&y) {
            assert_eq!(p.to_json(), q.to_json(), "record {i}");
        }
    }
    // A cut file is refused with a clean message and exit code 1.
    let bytes = std::fs::read(&src).unwrap();
    let cut = dir.join("cut.beton");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let out = run(&["validate", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("BadAllocTable"));
}

#[test]
fn bloscpack_convert_inspect_validate_dump() {
    let dir = scratch("blp");
    let raw = dir.join("data.raw");
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&raw, &bytes).unwrap();
    let blp = dir.join("data.blp");
    let out = run(&[
        "convert",
        raw.to_str().unwrap(),
        blp.to_str().unwrap(),
        "--chunk-size",
        "16K",
        "--codec",
        "zstd",
        "--checksum",
        "sha256",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&["--json", "inspect", blp.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nchunks"], 4);
    assert_eq!(v["chunk_size"], 16384);
    assert_eq!(v["checksum"], "sha256");
    assert_eq!(v["payload_bytes"], 50_000);
    assert_eq!(v["chunks"][0]["codec"], "zstd");
    let out = run(&["validate", blp.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("ok: 4 chunk(s), 50000 payload bytes"));
    let out = run(&[
        "--json",
        "dump",
        blp.to_str().unwrap(),
        "--range",
        "250..253",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, serde_json::json!([250, 0, 1]));

    // Corrupt one payload byte of chunk 1: validate names the chunk and fails.
    let mut broken = std::fs::read(&blp).unwrap();
    let v = serde_json::from_slice::<serde_json::Value>(
        &run(&["--json", "inspect", blp.to_str().unwrap()]).stdout,
    )
    .unwrap();
    let at = v["chunks"][1]["offset"].as_u64().unwrap() as usize + 40;
    broken[at] ^= 0xff;
    let bad = dir.join("broken.blp");
    std::fs::write(&bad, &broken).unwrap();
    let out = run(&["validate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("checksum_mismatch") && err.contains("chunk 1"),
        "{err}"
    );
}

#[test]
fn npy_to_bloscpack_and_back() {
    let dir = scratch("npy");
    // A (3, 4) little-endian int32 array, as numpy writes it.
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }";
    let hl = 128 - 10;
    npy.extend_from_slice(&(hl as u16).to_le_bytes());
    npy.extend_from_slice(dict.as_bytes());
    npy.resize(127, b' ');
    npy.push(b'\n');
    for i in 0..12i32 {
        npy.extend_from_slice(&(i * 1000 - 5).to_le_bytes());
    }
    let a = dir.join("a.npy");
    std::fs::write(&a, &npy).unwrap();
    let blp = dir.join("a.blp");
    let out = run(&["convert", a.to_str().unwrap(), blp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "inspect", blp.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(v["array"]["dtype"], "<i4");
    assert_eq!(v["array"]["shape"], serde_json::json!([3, 4]));
    assert_eq!(v["typesize"], 4);
    let dumped: serde_json::Value = serde_json::from_slice(
        &run(&["--json", "dump", blp.to_str().unwrap(), "--range", "10..12"]).stdout,
    )
    .unwrap();
    assert_eq!(dumped, serde_json::json!([9995, 10995]));
    let back = dir.join("b.npy");
    let out = run(&["convert", blp.to_str().unwrap(), back.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&back).unwrap(),
        npy,
        "npy -> blp -> npy is byte-identical"
    );
}

#[test]
fn bloscpack_append_from_the_command_line() {
    let dir = scratch("append");
    let raw = dir.join("a.raw");
    std::fs::write(&raw, vec![7u8; 5000]).unwrap();
    let blp = dir.join("a.blp");
    assert!(
        run(&[
            "convert",
            raw.to_str().unwrap(),
            blp.to_str().unwrap(),
            "--chunk-size",
            "1K",
            "--max-app-chunks",
            "6"
        ])
        .status
        .success()
    );
    let out = run(&[
        "--json",
        "convert",
        raw.to_str().unwrap(),
        blp.to_str().unwrap(),
        "--append",
        "--codec",
        "lz4",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            v["new_chunks"].as_u64(),
            v["nchunks"].as_u64(),
            v["payload_bytes"].as_u64(),
            v["max_app_chunks"].as_i64()
        ),
        (Some(5), Some(10), Some(10_000), Some(1))
    );
    assert!(run(&["validate", blp.to_str().unwrap()]).status.success());
    // Two more chunks would be needed, one slot is left: refused cleanly.
    std::fs::write(&raw, vec![1u8; 2000]).unwrap();
    let out = run(&[
        "convert",
        raw.to_str().unwrap(),
        blp.to_str().unwrap(),
        "--append",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not_enough_space"));
}

#[test]
fn tbl2_convert_inspect_validate_dump() {
    let dir = scratch("tbl");
    // A tar with two images and a text file, as TurboLoader's converter sees it.
    let mut t = Vec::new();
    let mut member = |name: &str, data: &[u8]| {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
        h[156] = b'0';
        t.extend_from_slice(&h);
        t.extend_from_slice(data);
        t.resize(t.len().div_ceil(512) * 512, 0);
    };
    let mut bmp = vec![0u8; 54 + 300];
    bmp[..2].copy_from_slice(b"BM");
    bmp[18..22].copy_from_slice(&10u32.to_le_bytes());
    bmp[22..26].copy_from_slice(&10u32.to_le_bytes());
    member("x/a.bmp", &bmp);
    member("x/readme.txt", b"skip me");
    member("x/b.bmp", &bmp);
    t.extend_from_slice(&[0u8; 1024]);
    let tar = dir.join("d.tar");
    std::fs::write(&tar, &t).unwrap();
    let tbl = dir.join("d.tbl");
    let out = run(&[
        "--json",
        "convert",
        tar.to_str().unwrap(),
        tbl.to_str().unwrap(),
        "--workers",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["records"].as_u64(), Some(2), "{v}");
    assert!(
        v["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("1 tar member(s) skipped")),
        "{v}"
    );
    // The summary, then every sample with --all.
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "inspect", tbl.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(v["num_samples"], 2);
    assert!(v.get("samples").is_none(), "{v}");
    let formats: u64 = v["formats"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(formats, 2, "{v}");
    assert_eq!(v["formats"]["bmp"], 2, "{v}");
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "inspect", "--all", tbl.to_str().unwrap()]).stdout)
            .unwrap();
    assert_eq!(
        (
            v["samples"][1]["width"].as_u64(),
            v["samples"][1]["format"].as_str()
        ),
        (Some(10), Some("bmp"))
    );
    let summary = text(&run(&["inspect", tbl.to_str().unwrap()]).stdout);
    assert!(summary.contains("formats: bmp 2"), "{summary}");
    assert!(run(&["validate", tbl.to_str().unwrap()]).status.success());
    let one = dir.join("one.bmp");
    assert!(
        run(&[
            "dump",
            tbl.to_str().unwrap(),
            "--sample",
            "1",
            "--out",
            one.to_str().unwrap()
        ])
        .status
        .success()
    );
    assert_eq!(std::fs::read(&one).unwrap(), bmp);
    // Corrupt the CRC-16 of sample 0: validate fails naming the sample.
    let mut b = std::fs::read(&tbl).unwrap();
    b[64 + 22] ^= 0xff;
    let bad = dir.join("bad.tbl");
    std::fs::write(&bad, &b).unwrap();
    let out = run(&["validate", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("crc16 at read_sample(0)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ctf_to_cbf_and_back() {
    let dir = scratch("ctf");
    let ctf = dir.join("d.ctf");
    std::fs::write(
        &ctf,
        "0 |x 1 2 |y 3:1.5\n0 |x 3 4\n1 |y 0:2 1:-1 |# a comment\n",
    )
    .unwrap();
    let bin = dir.join("d.bin");
    let out = run(&[
        "--json",
        "convert",
        ctf.to_str().unwrap(),
        bin.to_str().unwrap(),
        "--stream",
        "x:dense:2",
        "--stream",
        "y:sparse:5",
        "--compat",
        "ctf2bin",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Records as the CNTK view counts them: 2 + 1 sample rows.
    assert_eq!(v["records"].as_u64(), Some(3), "{v}");
    assert_eq!(dataformats::open(&bin).unwrap().len(), 3);
    let r = dataformats::cntk::Reader::open(&bin).unwrap();
    let sequences: u64 = r.chunks().iter().map(|c| u64::from(c.num_sequences)).sum();
    assert_eq!(sequences, 2);
    assert!(run(&["validate", bin.to_str().unwrap()]).status.success());
    let back = dir.join("back.ctf");
    assert!(
        run(&["convert", bin.to_str().unwrap(), back.to_str().unwrap()])
            .status
            .success()
    );
    let bin2 = dir.join("d2.bin");
    assert!(
        run(&[
            "convert",
            back.to_str().unwrap(),
            bin2.to_str().unwrap(),
            "--stream",
            "x:dense:2",
            "--stream",
            "y:sparse:5",
            "--compat",
            "ctf2bin"
        ])
        .status
        .success()
    );
    assert_eq!(
        std::fs::read(&bin).unwrap(),
        std::fs::read(&bin2).unwrap(),
        "bin -> ctf -> bin"
    );
    // A bad value is reported with its line and column.
    std::fs::write(&ctf, "0 |x 1 2\n0 |x 1 oops\n").unwrap();
    let out = run(&[
        "convert",
        ctf.to_str().unwrap(),
        bin.to_str().unwrap(),
        "--stream",
        "x:dense:2",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2, column 3"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn negative_sparse_index_only_in_ctf2bin_compat() {
    let dir = scratch("ctfneg");
    let ctf = dir.join("n.ctf");
    std::fs::write(&ctf, "0 |s -2:1.5 3:1\n").unwrap();
    let bin = dir.join("n.bin");
    let args = |compat: bool| {
        let mut a = vec![
            "convert".to_string(),
            ctf.to_str().unwrap().to_string(),
            bin.to_str().unwrap().to_string(),
            "--stream".to_string(),
            "s:sparse:5".to_string(),
        ];
        if compat {
            a.extend(["--compat".to_string(), "ctf2bin".to_string()]);
        }
        a
    };
    let strict = bin_args(&args(false));
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict.stderr));
    assert!(
        text(&strict.stderr).contains("index -2"),
        "{}",
        text(&strict.stderr)
    );
    assert!(!bin.exists());
    let compat = bin_args(&args(true));
    assert!(compat.status.success(), "{}", text(&compat.stderr));
    assert!(text(&compat.stderr).contains("1 negative sparse index"));
    let v = run(&["validate", bin.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v.stderr));
    assert!(text(&v.stderr).contains("index"), "{}", text(&v.stderr));
}

fn bin_args(args: &[String]) -> Output {
    bin().args(args).output().unwrap()
}

#[test]
fn csv_to_idv_inspect_validate_dump() {
    let dir = scratch("idv");
    let csv = dir.join("d.csv");
    std::fs::write(
        &csv,
        "label,x,y,z,name,when\n1,0.5,1.5,-2,\"a, b\",2010-01-01T00:00:00\n0,3,4,5,c,0001-01-01T00:00:00.0000001\n2,NaN,,1e3,,9999-12-31T23:59:59.9999999\n",
    )
    .unwrap();
    let idv = dir.join("d.idv");
    let out = run(&[
        "convert",
        csv.to_str().unwrap(),
        idv.to_str().unwrap(),
        "--column",
        "Label:U4[0-2]:0",
        "--column",
        "Features:R4:1-3",
        "--column",
        "Name:TX:4",
        "--column",
        "When:DT:5",
        "--rows-per-block",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(": 3 records from csv"),
        "{}",
        text(&out.stdout)
    );
    let v = run(&["validate", idv.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v.stderr));
    let i = run(&["--json", "inspect", idv.to_str().unwrap()]);
    let j: serde_json::Value = serde_json::from_slice(&i.stdout).unwrap();
    assert_eq!(j["rows"], 3);
    assert_eq!(j["columns"][0]["type"], "Key<UInt32, 0-2>");
    assert_eq!(j["columns"][1]["type"], "Vector<Single, 3>");
    assert_eq!(j["columns"][1]["blocks"].as_array().unwrap().len(), 2);
    let d = run(&["dump", idv.to_str().unwrap(), "--format", "jsonl"]);
    assert!(d.status.success(), "{}", text(&d.stderr));
    let rows: Vec<serde_json::Value> = text(&d.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["Label"], 2, "keys are stored as value + 1");
    assert_eq!(rows[0]["Features"], serde_json::json!([0.5, 1.5, -2]));
    assert_eq!(rows[0]["Name"], "a, b");
    assert_eq!(rows[1]["When"], "0001-01-01T00:00:00.0000001");
    assert_eq!(rows[2]["Features"], serde_json::json!(["NaN", "NaN", 1000]));
    let c = run(&["dump", idv.to_str().unwrap(), "--range", "1..3"]);
    let lines: Vec<String> = text(&c.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines[0], "Label,Features,Name,When");
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("1,\"[3, 4, 5]\",c,"), "{}", lines[1]);
    // A damaged file is refused with its kind and a location.
    let bytes = std::fs::read(&idv).unwrap();
    let cut = dir.join("cut.idv");
    std::fs::write(&cut, &bytes[..bytes.len() - 4]).unwrap();
    let bad = run(&["validate", cut.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("truncated"),
        "{}",
        text(&bad.stderr)
    );
    // A bad cell names its line.
    std::fs::write(&csv, "a\nnot-a-number\n").unwrap();
    let e = run(&[
        "convert",
        csv.to_str().unwrap(),
        dir.join("e.idv").to_str().unwrap(),
        "--column",
        "A:I4",
    ]);
    assert_eq!(e.status.code(), Some(1));
    assert!(text(&e.stderr).contains("line 2"), "{}", text(&e.stderr));
    assert!(!dir.join("e.idv").exists());
}

/// A damaged Arrow file that arrow's own decoder panics on: a clean error
/// naming the file and the panic, and no panic report on stderr (bytes of
/// a small file's first batch flipped in turn, many of which reach such a
/// panic).
#[test]
fn a_decoder_panic_is_an_error_without_a_panic_report() {
    let dir = scratch("quiet-panic");
    let csv = dir.join("d.csv");
    std::fs::write(&csv, "id,x,ok\n1,0.5,true\n2,1.5,false\n3,2.5,true\n").unwrap();
    let good = dir.join("good.arrow");
    assert!(
        run(&["convert", csv.to_str().unwrap(), good.to_str().unwrap()])
            .status
            .success()
    );
    let bytes = std::fs::read(&good).unwrap();
    let (bad, out) = (dir.join("bad.arrow"), dir.join("out.jsonl"));
    let mut caught = 0;
    for at in (bytes.len() * 3 / 8..bytes.len() * 5 / 8).step_by(5) {
        let mut b = bytes.clone();
        b[at] ^= 0x80;
        std::fs::write(&bad, &b).unwrap();
        let r = run(&["convert", bad.to_str().unwrap(), out.to_str().unwrap()]);
        let err = text(&r.stderr);
        assert_ne!(r.status.code(), Some(101), "byte {at}: {err}");
        assert!(!err.contains("panicked"), "byte {at}: {err}");
        if err.contains("failed on it: ") {
            assert!(
                !r.status.success() && err.contains("bad.arrow"),
                "byte {at}: {err}"
            );
            caught += 1;
        }
    }
    assert!(caught > 0, "no flip reached a decoder panic");
}

/// MLDF output settings from the command line: any input can become a
/// compressed, checksummed MLDF file with other pages; with a JSON lines
/// `--schema` the flags add to the schema's; a page size that is not a
/// power of two from 4K to 2G is a usage error.
#[test]
fn mldf_output_flags() {
    let dir = scratch("mldf-flags");
    let csv = dir.join("d.csv");
    let mut body = String::from("id,name,x\n");
    for i in 0..500 {
        body.push_str(&format!("{i},name {},{}.25\n", i % 17, i * 3));
    }
    std::fs::write(&csv, &body).unwrap();
    let inspect = |m: &std::path::Path| -> serde_json::Value {
        let out = run(&["--json", "inspect", m.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = dir.join("plain.mldf");
    let packed = dir.join("packed.mldf");
    assert!(
        run(&["convert", csv.to_str().unwrap(), plain.to_str().unwrap()])
            .status
            .success()
    );
    let out = run(&[
        "convert",
        csv.to_str().unwrap(),
        packed.to_str().unwrap(),
        "--mldf-compress",
        "--mldf-checksum",
        "--mldf-page-size",
        "64K",
        "--mldf-page-packing",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (p, z) = (inspect(&plain), inspect(&packed));
    assert_eq!(p["flags"], serde_json::json!(["LITTLE_ENDIAN"]));
    assert_eq!(
        z["flags"],
        serde_json::json!(["LITTLE_ENDIAN", "COMPRESSED", "CHECKSUMMED"])
    );
    assert_eq!(
        (p["page_size"].as_u64(), z["page_size"].as_u64()),
        (Some(2 << 20), Some(64 << 10))
    );
    assert!(
        run(&["validate", packed.to_str().unwrap()])
            .status
            .success()
    );
    // The same records either way.
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    assert!(
        run(&["convert", plain.to_str().unwrap(), a.to_str().unwrap()])
            .status
            .success()
    );
    assert!(
        run(&["convert", packed.to_str().unwrap(), b.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(std::fs::read_to_string(&a).unwrap().lines().count(), 500);
    // With a schema: its flags, and the command line's on top.
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "id", "type": "INT"}], "checksummed": true}"#,
    )
    .unwrap();
    let jsonl = dir.join("d.jsonl");
    std::fs::write(&jsonl, "{\"id\": 1}\n{\"id\": 2}\n").unwrap();
    let m = dir.join("s.mldf");
    let args = [
        "convert",
        jsonl.to_str().unwrap(),
        m.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
    ];
    assert!(run(&args).status.success());
    assert_eq!(
        inspect(&m)["flags"],
        serde_json::json!(["LITTLE_ENDIAN", "CHECKSUMMED"])
    );
    let mut more = args.to_vec();
    more.extend(["--mldf-compress", "--mldf-page-size", "8192"]);
    assert!(run(&more).status.success());
    let i = inspect(&m);
    assert_eq!(
        i["flags"],
        serde_json::json!(["LITTLE_ENDIAN", "COMPRESSED", "CHECKSUMMED"])
    );
    assert_eq!(i["page_size"], 8192);
    for bad in ["3000", "2K", "4G", "12K", "x"] {
        let out = run(&[
            "convert",
            csv.to_str().unwrap(),
            dir.join("bad.mldf").to_str().unwrap(),
            "--mldf-page-size",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("page"),
            "{bad}: {}",
            text(&out.stderr)
        );
        assert!(!dir.join("bad.mldf").exists());
    }
}

#[test]
fn jsonl_to_mldf_and_back_diff_and_tbl2() {
    let dir = scratch("mldf");
    std::fs::write(dir.join("blob.bin"), b"\x00\x01\x02hello").unwrap();
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [
            {"name": "id", "type": "INT"},
            {"name": "score", "type": "FLOAT", "nullable": true},
            {"name": "x", "type": "NDARRAY", "dtype": "float32", "shape": [2, 2]},
            {"name": "blob", "type": "BYTES"},
            {"name": "meta", "type": "JSON"},
            {"name": "caption", "type": "TEXT_RAW", "nullable": true},
            {"name": "tokens", "type": "TEXT_TOKENIZED", "vocab_size": 100}
        ], "page_size": 4096, "compressed": true, "checksummed": true}"#,
    )
    .unwrap();
    let jsonl = dir.join("d.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"id": 1, "score": 0.5, "x": [[1, 2], [3, 4.5]], "blob": {"path": "blob.bin"}, "meta": {"a": [1, true]}, "caption": "héllo", "tokens": [5, 6, 7]}"#,
            "\n",
            r#"{"id": -2, "score": null, "x": [0, 0, 0, "NaN"], "blob": {"base64": "AAEC"}, "meta": null, "caption": null, "tokens": {"tokens": [1], "encoding": 2}}"#,
            "\n"
        ),
    )
    .unwrap();
    let m = dir.join("d.mldf");
    let out = run(&[
        "convert",
        jsonl.to_str().unwrap(),
        m.to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(run(&["validate", m.to_str().unwrap()]).status.success());
    let i: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "inspect", m.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(i["samples"], 2);
    assert_eq!(
        i["flags"],
        serde_json::json!(["LITTLE_ENDIAN", "COMPRESSED", "CHECKSUMMED"])
    );
    assert_eq!(
        i["fields"][2]["arguments"],
        serde_json::json!({"dtype": "float32", "shape": [2, 2]})
    );
    let d = run(&["dump", m.to_str().unwrap()]);
    let rows: Vec<serde_json::Value> = text(&d.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["id"], 1);
    assert_eq!(
        rows[0]["x"]["values"],
        serde_json::json!([[1.0, 2.0], [3.0, 4.5]])
    );
    assert_eq!(rows[0]["blob"]["hex"], "00010268656c6c6f");
    assert_eq!(rows[0]["meta"]["json"], serde_json::json!({"a": [1, true]}));
    assert_eq!(rows[0]["tokens"]["tokens"], serde_json::json!([5, 6, 7]));
    assert_eq!(rows[1]["score"], serde_json::Value::Null);
    assert_eq!(
        rows[1]["meta"]["json"],
        serde_json::Value::Null,
        "JSON null is a present value"
    );
    assert_eq!(rows[1]["caption"], serde_json::Value::Null);
    assert_eq!(rows[1]["blob"]["hex"], "000102");
    assert_eq!(rows[1]["tokens"]["encoding"], 2);
    // Back to JSON lines through convert: the typed view's JSON lines (as
    // `head` and `convert - --to jsonl` print them), and diff.
    let back = dir.join("back.jsonl");
    assert!(
        run(&["convert", m.to_str().unwrap(), back.to_str().unwrap()])
            .status
            .success()
    );
    let back = std::fs::read_to_string(&back).unwrap();
    let streamed = run(&["convert", m.to_str().unwrap(), "-", "--to", "jsonl"]);
    assert_eq!(back, text(&streamed.stdout));
    assert_eq!(back, text(&run(&["head", m.to_str().unwrap()]).stdout));
    let typed: Vec<serde_json::Value> = back
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(typed[0]["x"], serde_json::json!([1.0, 2.0, 3.0, 4.5]));
    assert_eq!(typed[0]["blob"], "AAECaGVsbG8=", "bytes as base64");
    assert_eq!(typed[1]["x"][3], "NaN");
    assert_eq!(typed[1]["score"], serde_json::Value::Null);
    assert!(
        run(&[
            "diff",
            m.to_str().unwrap(),
            m.to_str().unwrap(),
            "--content"
        ])
        .status
        .success()
    );
    std::fs::write(
        &jsonl,
        std::fs::read_to_string(&jsonl)
            .unwrap()
            .replace("\"id\": 1,", "\"id\": 3,"),
    )
    .unwrap();
    let m2 = dir.join("d2.mldf");
    assert!(
        run(&[
            "convert",
            jsonl.to_str().unwrap(),
            m2.to_str().unwrap(),
            "--schema",
            schema.to_str().unwrap()
        ])
        .status
        .success()
    );
    let df = run(&[
        "diff",
        m.to_str().unwrap(),
        m2.to_str().unwrap(),
        "--content",
    ]);
    assert_eq!(df.status.code(), Some(1));
    assert!(
        text(&df.stdout).contains("sample 0 field \"id\": 1 | 3"),
        "{}",
        text(&df.stdout)
    );
    // A bad line names its number and field; nothing is written.
    std::fs::write(&jsonl, "{\"id\": \"x\"}\n").unwrap();
    let bad = run(&[
        "convert",
        jsonl.to_str().unwrap(),
        dir.join("e.mldf").to_str().unwrap(),
        "--schema",
        schema.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("line 1: field \"id\""),
        "{}",
        text(&bad.stderr)
    );
    assert!(!dir.join("e.mldf").exists());
    // TBL v2 -> MLDF: the demo's images.
    let demo = dir.join("demo");
    assert!(
        run(&["demo", "--dir", demo.to_str().unwrap()])
            .status
            .success()
    );
    let t = dir.join("t.mldf");
    let c = run(&[
        "convert",
        demo.join("table.tbl").to_str().unwrap(),
        t.to_str().unwrap(),
    ]);
    assert!(c.status.success(), "{}", text(&c.stderr));
    assert!(
        text(&c.stdout).contains(": 20000 records from tbl2"),
        "{}",
        text(&c.stdout)
    );
    assert!(run(&["validate", t.to_str().unwrap()]).status.success());
}

#[test]
fn any_format_to_jsonl_and_mldf_through_the_common_view() {
    let dir = scratch("common");
    // An IDV file with a bool, an int and a fixed float vector.
    let csv = dir.join("d.csv");
    std::fs::write(&csv, "ok,n,a,b\ntrue,1,0.5,1.5\nfalse,-7,2,3\n").unwrap();
    let idv = dir.join("d.idv");
    let out = run(&[
        "convert",
        csv.to_str().unwrap(),
        idv.to_str().unwrap(),
        "--column",
        "ok:BL:0",
        "--column",
        "n:I4:1",
        "--column",
        "v:R4:2-3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Every IDV type has an exact MLDF field: booleans stay booleans
    // (NDARRAY<bool>[]), no --lossy needed, and the IDV types travel along.
    let m = dir.join("d.mldf");
    let ok = run(&["convert", idv.to_str().unwrap(), m.to_str().unwrap()]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert!(run(&["validate", m.to_str().unwrap()]).status.success());
    let i: serde_json::Value =
        serde_json::from_slice(&run(&["--json", "inspect", m.to_str().unwrap()]).stdout).unwrap();
    assert_eq!(i["fields"][0]["type"], "NDARRAY");
    assert_eq!(
        i["fields"][0]["arguments"],
        serde_json::json!({"dtype": "bool", "shape": []})
    );
    assert_eq!(i["fields"][2]["type"], "NDARRAY");
    assert_eq!(
        i["fields"][2]["arguments"],
        serde_json::json!({"dtype": "float32", "shape": [2]})
    );
    // The typed view of the MLDF file is the IDV file's.
    let schema = |p: &std::path::Path| run(&["schema", "--json", p.to_str().unwrap()]).stdout;
    assert_eq!(schema(&m), schema(&idv));
    let rows: Vec<serde_json::Value> = text(&run(&["head", m.to_str().unwrap(), "-n", "5"]).stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[1]["n"], -7);
    assert_eq!(rows[0]["ok"], true);
    assert_eq!(rows[1]["ok"], false);
    assert_eq!(rows[0]["v"], serde_json::json!([0.5, 1.5]));
    // Any format to JSON lines.
    let j = dir.join("d.jsonl");
    assert!(
        run(&["convert", idv.to_str().unwrap(), j.to_str().unwrap()])
            .status
            .success()
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&j)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[1]["v"], serde_json::json!([2.0, 3.0]));
}

#[test]
fn idv_mldf_idv_round_trip() {
    let dir = scratch("idv-mldf");
    let csv = dir.join("d.csv");
    std::fs::write(
        &csv,
        "n,x,t,a,b\n5,0.25,hello,1.5,-2\n-9000000000,1e300,\"\",0,7.25\n0,-0.0,é😀,3,4\n",
    )
    .unwrap();
    let a = dir.join("a.idv");
    let made = run(&[
        "convert",
        csv.to_str().unwrap(),
        a.to_str().unwrap(),
        "--column",
        "n:I8:0",
        "--column",
        "x:R8:1",
        "--column",
        "t:TX:2",
        "--column",
        "v:R4:3-4",
        "--rows-per-block",
        "2",
    ]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    let m = dir.join("m.mldf");
    let to_m = run(&["convert", a.to_str().unwrap(), m.to_str().unwrap()]);
    assert!(to_m.status.success(), "{}", text(&to_m.stderr));
    let b = dir.join("b.idv");
    let back = run(&["convert", m.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(back.status.success(), "{}", text(&back.stderr));
    let dump = |p: &std::path::Path| {
        text(&run(&["dump", p.to_str().unwrap(), "--format", "jsonl"]).stdout)
    };
    assert_eq!(dump(&a), dump(&b), "IDV -> MLDF -> IDV gives the same rows");
    let schema = |p: &std::path::Path| {
        let v: serde_json::Value =
            serde_json::from_slice(&run(&["--json", "inspect", p.to_str().unwrap()]).stdout)
                .unwrap();
        v["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].clone(), c["type"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(schema(&a), schema(&b));
    // And the other way: MLDF -> IDV -> MLDF.
    let m2 = dir.join("m2.mldf");
    assert!(
        run(&["convert", b.to_str().unwrap(), m2.to_str().unwrap()])
            .status
            .success()
    );
    assert!(
        run(&[
            "diff",
            m.to_str().unwrap(),
            m2.to_str().unwrap(),
            "--content"
        ])
        .status
        .success()
    );
    // A field IDV cannot hold is refused without --lossy.
    let jsonl = dir.join("j.jsonl");
    std::fs::write(&jsonl, "{\"blob\": {\"base64\": \"AAE=\"}}\n").unwrap();
    let schema_p = dir.join("s.json");
    std::fs::write(
        &schema_p,
        r#"{"fields": [{"name": "blob", "type": "BYTES"}]}"#,
    )
    .unwrap();
    let bm = dir.join("blob.mldf");
    assert!(
        run(&[
            "convert",
            jsonl.to_str().unwrap(),
            bm.to_str().unwrap(),
            "--schema",
            schema_p.to_str().unwrap()
        ])
        .status
        .success()
    );
    let refused = run(&[
        "convert",
        bm.to_str().unwrap(),
        dir.join("blob.idv").to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("IDV has no column type"),
        "{}",
        text(&refused.stderr)
    );
}

/// A Parquet page of a few bytes counting 2^36 lengths (the decoder
/// allocated 256 GiB for them and the process aborted): an error naming
/// the file once, its row group, column and page; no output left.
#[test]
fn parquet_pages_counting_too_many_lengths_are_an_error() {
    let dir = scratch("delta-count");
    let seed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/facade_import/regressions/parquet-delta-lengths-counted-2-pow-36");
    // The fuzz input's first byte picks the kind of table.
    let bytes = std::fs::read(seed).unwrap();
    let input = dir.join("in.parquet");
    std::fs::write(&input, &bytes[1..]).unwrap();
    let output = dir.join("out.arrow");
    let out = run(&["convert", input.to_str().unwrap(), output.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("row group 0, column 0 (\"b\"), data page 0: its lengths are counted as 68719476736, more than its 1000 values"),
        "{err}"
    );
    assert_eq!(err.matches("in.parquet").count(), 1, "{err}");
    assert!(!output.exists());
}
