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
    let dir = std::env::temp_dir().join(format!("df-cli-test-{}-{name}", std::process::id()));
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
    assert!(stdout.contains("8 of 8 round trips ok"), "{stdout}");
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
fn detected_but_unlanded_format_is_a_clean_unsupported_error() {
    let dir = scratch("unsupported");
    let cases: [(&str, &[u8], &str); 5] = [
        ("a.blp", b"blpk\x03\x00\x00\x00", "bloscpack"),
        ("a.idv", b"CML\0DVB\0\x00\x00", "idv"),
        ("a.tbl", b"TBL\x02\x02\x00\x00\x00", "tbl2"),
        ("a.mldf", b"\x89MLDF\r\n\x1a\n", "mldf"),
        ("a.bin", b"nib_ktnc\x01\x00\x00\x00", "cntk"),
    ];
    for (name, bytes, format) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        for cmd in ["inspect", "validate", "dump"] {
            let out = run(&[cmd, p.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(3), "{cmd} {name}");
            let err = text(&out.stderr);
            assert!(err.starts_with("error: "), "{err}");
            assert!(err.contains(&format!("detected {format}")), "{err}");
            assert!(err.contains("not landed"), "{err}");
            assert!(out.stdout.is_empty());
        }
    }
}

#[test]
fn json_errors_go_to_stderr() {
    let dir = scratch("json-err");
    let p = dir.join("x.tbl");
    std::fs::write(&p, b"TBL\x02").unwrap();
    let out = run(&["--json", "inspect", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(v["error"]["kind"], "unsupported");
    assert!(v["error"]["path"].as_str().unwrap().ends_with("x.tbl"));
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
        ["idv", "bloscpack", "blz", "cntk", "ctf", "mldf", "tbl2"]
    );
}
