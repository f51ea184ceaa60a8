//! JSON lines -> MLDF -> JSON lines is exact: a million doubles (random bit
//! patterns: subnormals, extremes, both zeros) come back bit for bit, and
//! every u64 up to u64::MAX comes back as itself; an integer beyond u64 is
//! refused with its line number.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::fmt::Write as _;
use std::process::Command;

fn dataformats(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dataformats"))
        .args(args)
        .output()
        .unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-jx-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `dataformats convert SRC M --schema DIR/schema.json`.
fn to_mldf(
    src: &std::path::Path,
    m: &std::path::Path,
    dir: &std::path::Path,
) -> std::process::Output {
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    dataformats(&[
        "convert",
        &s(src),
        &s(m),
        "--schema",
        &s(&dir.join("schema.json")),
    ])
}

const SCHEMA: &str = r#"{"fields": [
    {"name": "x", "type": "FLOAT"},
    {"name": "n", "type": "NDARRAY", "dtype": "uint64", "shape": [1]},
    {"name": "i", "type": "INT"}
]}"#;

#[test]
fn a_million_doubles_and_every_u64_come_back_exactly() {
    let dir = scratch("exact");
    std::fs::write(dir.join("schema.json"), SCHEMA).unwrap();
    let mut rng = dataformats::core::rng::SplitMix64::new(7);
    let mut doubles = vec![
        0.0,
        -0.0,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        0.1,
        1.0 / 3.0,
    ];
    let mut ints = vec![
        0u64,
        1,
        u64::MAX,
        u64::MAX - 1,
        1 << 63,
        (1 << 63) - 1,
        1 << 53,
        (1 << 53) + 1,
    ];
    while doubles.len() < 1_000_000 {
        let x = f64::from_bits(rng.next_u64());
        if x.is_finite() {
            doubles.push(x);
        }
    }
    while ints.len() < doubles.len() {
        ints.push(rng.next_u64());
    }
    let mut text = String::with_capacity(doubles.len() * 64);
    for (x, n) in doubles.iter().zip(&ints) {
        let i = *n as i64;
        let _ = writeln!(text, "{{\"x\": {x:?}, \"n\": [{n}], \"i\": {i}}}");
    }
    let src = dir.join("in.jsonl");
    std::fs::write(&src, &text).unwrap();
    let (m, back) = (dir.join("x.mldf"), dir.join("back.jsonl"));
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let out = to_mldf(&src, &m, &dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = dataformats(&["convert", &s(&m), &s(&back)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = std::fs::read_to_string(&back).unwrap();
    let mut lines = 0;
    for (k, line) in back.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let x = v["x"].as_f64().unwrap();
        assert_eq!(x.to_bits(), doubles[k].to_bits(), "line {}: {line}", k + 1);
        assert_eq!(v["n"][0].as_u64(), Some(ints[k]), "line {}", k + 1);
        assert_eq!(v["i"].as_i64(), Some(ints[k] as i64), "line {}", k + 1);
        lines += 1;
    }
    assert_eq!(lines, doubles.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_integer_beyond_u64_is_refused_with_its_line() {
    let dir = scratch("beyond");
    std::fs::write(dir.join("schema.json"), SCHEMA).unwrap();
    let src = dir.join("in.jsonl");
    std::fs::write(
        &src,
        concat!(
            "{\"x\": 1.5, \"n\": [18446744073709551615], \"i\": 1}\n",
            "{\"x\": 2.5, \"n\": [18446744073709551616], \"i\": 2}\n"
        ),
    )
    .unwrap();
    let m = dir.join("x.mldf");
    let out = to_mldf(&src, &m, &dir);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2"), "{err}");
    assert!(!m.exists(), "no output on failure");
    // The same in an INT field (i64): refused, not rounded.
    std::fs::write(
        &src,
        "{\"x\": 1.5, \"n\": [1], \"i\": 9223372036854775808}\n",
    )
    .unwrap();
    let out = to_mldf(&src, &m, &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
    let _ = std::fs::remove_dir_all(&dir);
}
