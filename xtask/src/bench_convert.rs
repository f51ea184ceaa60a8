//! `cargo xtask bench convert [--mb N] [--dir DIR]`: the peak memory of
//! every conversion of an N MB data set (default 1024), one process per
//! conversion: MLDF into every target, then each of those back to MLDF,
//! and the validation of each file made (one process each too); then the
//! tables (Parquet, Arrow IPC, CSV, JSON lines) into the other targets
//! that are not MLDF ([`CROSS`]), and Parquet's one column read alone
//! into Arrow. Fails when a conversion's or a validation's peak resident
//! set reaches 200 MiB.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The most resident memory a conversion may reach, in MiB.
const LIMIT_MIB: u64 = 200;

/// The targets measured (by extension), besides MLDF, the source.
const TARGETS: &[&str] = &[
    "parquet", "arrow", "arrows", "idv", "bin", "tbl", "blp", "bcolz", "csv", "jsonl",
];

/// Conversions between the targets (besides MLDF), by extension: the
/// tables read in runs or blocks on every core into the writers that
/// encode on every core.
const CROSS: &[(&str, &str)] = &[
    ("parquet", "parquet"),
    ("parquet", "tbl"),
    ("parquet", "blp"),
    ("parquet", "idv"),
    ("arrow", "parquet"),
    ("csv", "parquet"),
    ("jsonl", "parquet"),
    ("jsonl", "arrow"),
];

fn example(root: &Path) -> PathBuf {
    root.join("target/release/examples/bench_convert")
}

/// Runs the bench example; its last stdout line as JSON.
fn run(root: &Path, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = Command::new(example(root))
        .args(args)
        .output()
        .map_err(|e| format!("cannot run bench_convert: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "bench_convert {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).map_err(|e| format!("bench_convert {args:?}: {e}: {last}"))
}

fn remove(p: &Path) {
    if p.is_dir() {
        let _ = std::fs::remove_dir_all(p);
    } else {
        let _ = std::fs::remove_file(p);
    }
}

pub(crate) fn main(args: &[String]) -> Result<bool, String> {
    let mut mb = 1024u64;
    let mut dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mb" => {
                mb = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--mb takes a number")?;
            }
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir takes a path")?)),
            other => return Err(format!("bench convert: unknown option `{other}`")),
        }
    }
    let root = crate::project_root();
    let status = Command::new("cargo")
        .args([
            "build",
            "--quiet",
            "--release",
            "-p",
            "dataformats",
            "--example",
            "bench_convert",
        ])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Ok(false);
    }
    let dir = dir.unwrap_or_else(|| root.join("target/bench-convert"));
    remove(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let p = |name: &str| dir.join(name).display().to_string();
    let src = p("src.mldf");
    let made = run(&root, &["make", &src, "--mb", &mb.to_string()])?;
    println!(
        "convert: peak memory, {} records ({mb} MB of values) per conversion; limit {LIMIT_MIB} MiB",
        made["records"]
    );
    println!(
        "{:<22} {:>9} {:>14} {:>14}",
        "conversion", "seconds", "peak RSS MiB", "peak anon MiB"
    );
    let mut ok = true;
    let mut row = |what: String, v: &serde_json::Value| {
        let rss = v["peak_rss_mib"].as_u64().unwrap_or(u64::MAX);
        let pass = rss < LIMIT_MIB;
        ok &= pass;
        println!(
            "{what:<22} {:>9.2} {:>14} {:>14}  {}",
            v["seconds"].as_f64().unwrap_or(f64::NAN),
            rss,
            v["peak_anon_mib"].as_u64().unwrap_or(u64::MAX),
            if pass { "ok" } else { "OVER" }
        );
    };
    let v = run(&root, &["validate", &src])?;
    row("validate mldf".to_string(), &v);
    // The tables the cross conversions start from.
    let mut tables = Vec::new();
    for t in TARGETS {
        let out = p(&format!("out.{t}"));
        let v = run(&root, &["convert", &src, &out])?;
        row(format!("mldf -> {t}"), &v);
        match run(&root, &["validate", &out]) {
            Ok(v) => row(format!("validate {t}"), &v),
            // A format only converted (Parquet, Arrow, CSV, JSON lines).
            Err(e) if e.contains("Unrecognized") || e.contains("has no summary here") => {
                println!(
                    "{:<22} (read by conversion only, no `validate`)",
                    format!("validate {t}")
                )
            }
            Err(e) => return Err(e),
        }
        let back = p(&format!("back.{t}.mldf"));
        let v = run(&root, &["convert", &out, &back])?;
        row(format!("{t} -> mldf"), &v);
        remove(Path::new(&back));
        match CROSS.iter().any(|(from, _)| from == t) {
            true => tables.push(out),
            false => remove(Path::new(&out)),
        }
    }
    for (from, to) in CROSS {
        let out = p(&format!("cross.{to}"));
        let v = run(&root, &["convert", &p(&format!("out.{from}")), &out])?;
        row(format!("{from} -> {to}"), &v);
        remove(Path::new(&out));
    }
    // One column of the Parquet file read alone (it is dictionary-encoded:
    // its pages hold far fewer bytes than its values).
    let out = p("blob.arrow");
    let v = run(
        &root,
        &["convert", &p("out.parquet"), &out, "--columns", "data"],
    )?;
    row("parquet data -> arrow".to_string(), &v);
    remove(Path::new(&out));
    for t in &tables {
        remove(Path::new(t));
    }
    remove(&dir);
    println!(
        "convert: {}",
        if ok {
            "every conversion and validation stayed under the limit"
        } else {
            "some conversions or validations went OVER the limit"
        }
    );
    Ok(ok)
}
