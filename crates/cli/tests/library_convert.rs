//! `dataformats convert` through `dataformats::convert`: tables (Parquet,
//! Arrow IPC) into dataset formats, with the same records as the source.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dataformats::core::testing::vectors_dir;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataformats"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-lc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn parquet_and_arrow_tables_become_cntk_and_tbl_files() {
    let dir = scratch("tables");
    let mut done = 0;
    for (src, ext) in [
        ("cntk/cntkrepo_empty_samples.bin", "bin"),
        ("cntk/hand_nan_payloads_f32.bin", "bin"),
        ("tbl2/api_edges_lz4.tbl", "tbl"),
    ] {
        let (format, file) = src.split_once('/').unwrap();
        let Some(v) = vectors_dir(format).map(|d| d.join(file)) else {
            continue;
        };
        let want = stdout(&["head", &s(&v), "-n", "1000000"]);
        for table in ["parquet", "arrow"] {
            let t = dir.join(format!("t.{table}"));
            stdout(&["convert", &s(&v), &s(&t)]);
            let back = dir.join(format!("back.{ext}"));
            let said = stdout(&["convert", &s(&t), &s(&back)]);
            assert!(said.contains(&format!("from {table}")), "{said}");
            assert_eq!(
                stdout(&["head", &s(&back), "-n", "1000000"]),
                want,
                "{src} via {table}"
            );
            stdout(&["validate", &s(&back)]);
            done += 1;
        }
    }
    if std::env::var_os("CI").is_some() {
        assert_eq!(done, 6);
    }
}

#[test]
fn a_table_that_does_not_fit_is_refused_with_the_reason() {
    let dir = scratch("refused");
    let Some(v) = vectors_dir("idv").map(|d| d.join("mlnet15_keys_annotations.idv")) else {
        return;
    };
    let out = run(&["convert", &s(&v), &s(&dir.join("x.tbl"))]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TBL v2 needs the sample bytes"), "{err}");
    assert!(!dir.join("x.tbl").exists());
}

#[test]
fn dump_format_jsonl_is_honoured_for_every_format() {
    let Some(dir) = vectors_dir("blz") else {
        return;
    };
    let v = dir.join("bcolz_S12_strings");
    if !v.exists() {
        return;
    }
    let dumped = stdout(&["dump", &s(&v), "--format", "jsonl"]);
    assert_eq!(dumped, stdout(&["head", &s(&v), "-n", "1000000"]));
    for line in dumped.lines() {
        let _: serde_json::Value = serde_json::from_str(line).unwrap();
    }
    // --format csv: the typed view's CSV, a header line and a line a record.
    let csv = stdout(&["dump", &s(&v), "--format", "csv"]);
    assert_eq!(csv, stdout(&["convert", &s(&v), "-", "--to", "csv"]));
    assert_eq!(csv.lines().count(), dumped.lines().count() + 1);
}

/// `-` writes a stream export to stdout, `--to` names a format the
/// extension does not, `--quiet` prints nothing on success, and
/// `completions` prints a script that lists the subcommands and choices.
#[test]
fn stdout_to_quiet_and_completions() {
    let Some(dir) = vectors_dir("mldf") else {
        return;
    };
    let src = dir.join("int_basic.mldf");
    let lines = stdout(&["convert", &s(&src), "-", "--to", "jsonl"]);
    let head = stdout(&["head", &s(&src), "-n", "1000"]);
    assert_eq!(
        lines.lines().count(),
        head.lines().count(),
        "{lines}\n{head}"
    );
    for (a, b) in lines.lines().zip(head.lines()) {
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(a).unwrap(),
            serde_json::from_str(b).unwrap(),
        );
        assert_eq!(a, b);
    }
    // Without --to, `-` has no format.
    let out = run(&["convert", &s(&src), "-"]);
    assert_eq!(out.status.code(), Some(2));
    // --to where the extension says nothing; --quiet: no summary.
    let work = scratch("to");
    let out = work.join("data.bin-without-ext");
    let q = run(&["--quiet", "convert", &s(&src), &s(&out), "--to", "mldf"]);
    assert!(q.status.success(), "{}", String::from_utf8_lossy(&q.stderr));
    assert!(q.stdout.is_empty() && q.stderr.is_empty());
    let back = stdout(&["head", &s(&out), "-n", "1000"]);
    assert_eq!(back, head);
    // A choice outside its list is a usage error naming the values.
    let bad = run(&[
        "convert",
        &s(&src),
        &s(&work.join("x.blp")),
        "--codec",
        "gzip",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("lz4hc"));
    let script = stdout(&["completions", "bash"]);
    for word in ["convert", "validate", "completions", "--codec", "lz4hc"] {
        assert!(script.contains(word), "{word}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `inspect` and `validate` read `.tar` and `.npy` files, which `convert`
/// takes: a tar's members as the TBL v2 converter sees them (a tar cut
/// inside a member is invalid), an `.npy` header.
#[test]
fn inspect_and_validate_tar_and_npy() {
    if let Some(dir) = vectors_dir("tbl2") {
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&["--json", "inspect", &s(&dir.join("mixed.tar"))]))
                .unwrap();
        let tbl = dataformats::tbl2::Reader::open(dir.join("mixed_none.tbl")).unwrap();
        let samples: u64 = v["samples"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(samples, tbl.len() as u64, "{v}");
        assert!(v["skipped"].as_u64().unwrap() > 0, "{v}");
        stdout(&["validate", &s(&dir.join("mixed.tar"))]);
        let cut = run(&["validate", &s(&dir.join("tar_truncated_lz4.tar"))]);
        assert_eq!(cut.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&cut.stderr).contains("ends inside member"));
    }
    if let Some(dir) = vectors_dir("bloscpack") {
        let work = scratch("npy");
        let npy = work.join("b.npy");
        stdout(&["convert", &s(&dir.join("bool_exact.blp")), &s(&npy)]);
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&["--json", "validate", &s(&npy)])).unwrap();
        assert_eq!(v["dtype"], "|b1", "{v}");
        assert_eq!(v["shape"][0], 10000, "{v}");
        // Cut: the header promises more bytes than there are.
        let bytes = std::fs::read(&npy).unwrap();
        std::fs::write(&npy, &bytes[..bytes.len() - 1]).unwrap();
        let bad = run(&["validate", &s(&npy)]);
        assert_eq!(bad.status.code(), Some(1));
        let _ = std::fs::remove_dir_all(&work);
    }
}
