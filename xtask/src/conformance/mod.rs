//! `cargo xtask conformance`: every shared vector against our readers.
//!
//! A vector is a file (or a BLZ/bcolz directory) beside a JSON sidecar that
//! says which format it is, whether it is valid, and what it must decode to or
//! why it must be rejected (`../shared/vectors/README.md`). Each sidecar is
//! dispatched to the checker registered for its `format`. A format without a
//! checker is UNSUPPORTED; once a format's crate has landed and registered its
//! checker, its vectors must PASS, and an UNSUPPORTED answer from a registered
//! checker counts as a FAIL.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod bloscpack;
mod blz;
mod cntk;
mod ffcv;
mod idv;
mod mldf;
mod tbl2;

/// One vector and its sidecar.
#[allow(dead_code)] // read by format checkers as they land
#[derive(Debug)]
pub(crate) struct Vector {
    /// Path relative to the vectors root, as printed.
    pub name: String,
    /// The vector file or directory.
    pub path: PathBuf,
    /// The sidecar JSON.
    pub sidecar: Value,
    /// The sidecar's `valid`.
    pub valid: bool,
}

/// What a checker concluded about one vector.
#[allow(dead_code)] // Unsupported is answered by checkers as they land
pub(crate) enum Outcome {
    Pass,
    Fail(String),
    Unsupported(String),
}

/// A format's conformance checker.
pub(crate) trait Checker {
    /// Checks one vector of this checker's format.
    fn check(&self, vector: &Vector) -> Outcome;
}

/// The verdict on an invalid vector: it must fail, with the kind its
/// sidecar names under `key` (`Result::Err` carries the kind word and the
/// message).
pub(crate) fn rejection<T>(v: &Vector, key: &str, result: Result<T, (&str, String)>) -> Outcome {
    let want = v.sidecar.get(key).and_then(Value::as_str).unwrap_or("?");
    match result {
        Ok(_) => Outcome::Fail(format!("accepted, but it must be rejected as {want}")),
        Err((kind, _)) if kind == want => Outcome::Pass,
        Err((kind, msg)) => Outcome::Fail(format!(
            "rejected as {kind} ({msg}), sidecar expects {want}"
        )),
    }
}

/// PASS when nothing differs, else FAIL listing the differences.
pub(crate) fn verdict(diffs: Vec<String>) -> Outcome {
    if diffs.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(diffs.join("; "))
    }
}

/// The registered checkers, keyed by the sidecars' `format` value. Each
/// format crate adds its checker here when it lands.
fn checkers() -> BTreeMap<&'static str, Box<dyn Checker>> {
    let mut m: BTreeMap<&'static str, Box<dyn Checker>> = BTreeMap::new();
    m.insert("bloscpack", Box::new(bloscpack::Bloscpack));
    m.insert("blz", Box::new(blz::Blz));
    m.insert("tbl2", Box::new(tbl2::Tbl2));
    m.insert("cntk", Box::new(cntk::Cntk));
    m.insert("idv", Box::new(idv::Idv));
    m.insert("mldf", Box::new(mldf::Mldf));
    m.insert("ffcv-beton", Box::new(ffcv::Ffcv));
    m
}

/// Compares what we decoded (`got`) with a sidecar value (`want`), key by key
/// for objects (keys in `skip` are informative and not compared; a key we do
/// not produce is a difference), element by element for arrays; collects the
/// differences as `path: got X, sidecar Y`.
pub(crate) fn compare(
    path: &str,
    got: &Value,
    want: &Value,
    diffs: &mut Vec<String>,
    skip: &[&str],
) {
    if diffs.len() > 8 {
        return;
    }
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                if skip.contains(&k.as_str()) {
                    continue;
                }
                match g.get(k) {
                    Some(gv) => compare(&format!("{path}.{k}"), gv, wv, diffs, &[]),
                    None => diffs.push(format!("{path}.{k}: not produced by our reader")),
                }
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            if g.len() != w.len() {
                diffs.push(format!(
                    "{path}: {} item(s), sidecar has {}",
                    g.len(),
                    w.len()
                ));
                return;
            }
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                compare(&format!("{path}[{i}]"), gv, wv, diffs, &[]);
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            let same = match (g.as_i64(), w.as_i64(), g.as_u64(), w.as_u64()) {
                (Some(a), Some(b), _, _) => a == b,
                (_, _, Some(a), Some(b)) => a == b,
                _ => g.as_f64() == w.as_f64(),
            };
            if !same {
                diffs.push(format!("{path}: got {g}, sidecar {w}"));
            }
        }
        (g, w) => {
            if g != w {
                diffs.push(format!("{path}: got {g}, sidecar {w}"));
            }
        }
    }
}

struct Options {
    vectors: PathBuf,
    /// Only these formats (all when empty); `--format` may be repeated.
    formats: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut vectors = None;
    let mut formats = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--vectors" => {
                vectors = Some(PathBuf::from(
                    it.next().ok_or("--vectors needs a directory")?,
                ))
            }
            "--format" => formats.push(it.next().ok_or("--format needs a name")?.clone()),
            other => return Err(format!("conformance: unknown argument `{other}`")),
        }
    }
    let vectors = vectors
        .or_else(|| std::env::var_os("DATAFORMATS_VECTORS").map(PathBuf::from))
        .unwrap_or_else(|| crate::project_root().join("../shared/vectors"));
    Ok(Options { vectors, formats })
}

pub(crate) fn main(args: &[String]) -> Result<bool, String> {
    let opts = parse_args(args)?;
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if !opts.vectors.is_dir() {
        println!(
            "conformance: vectors folder {} not found{}",
            opts.vectors.display(),
            if ci {
                " (required under CI=true)"
            } else {
                "; skipping"
            }
        );
        return Ok(!ci);
    }
    let sidecars = find_sidecars(&opts.vectors)?;
    let registry = checkers();
    let (mut passed, mut failed, mut unsupported) = (0usize, 0usize, 0usize);
    let mut seen_formats = BTreeMap::<String, usize>::new();
    for sc in sidecars {
        let line = match load(&opts.vectors, &sc) {
            Err(why) => {
                failed += 1;
                format!("FAIL {}: {why}", rel(&opts.vectors, &sc))
            }
            Ok(v) => {
                let format = v
                    .sidecar
                    .get("format")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !opts.formats.is_empty() && !opts.formats.contains(&format) {
                    continue;
                }
                *seen_formats.entry(format.clone()).or_default() += 1;
                match registry.get(format.as_str()) {
                    None => {
                        unsupported += 1;
                        format!("UNSUPPORTED {}", v.name)
                    }
                    Some(checker) => {
                        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            checker.check(&v)
                        }))
                        .unwrap_or_else(|_| Outcome::Fail("the reader panicked".into()))
                        {
                            Outcome::Pass => {
                                passed += 1;
                                format!("PASS {}", v.name)
                            }
                            Outcome::Fail(why) => {
                                failed += 1;
                                format!("FAIL {}: {why}", v.name)
                            }
                            Outcome::Unsupported(why) => {
                                failed += 1;
                                format!("FAIL {}: unsupported by a landed reader: {why}", v.name)
                            }
                        }
                    }
                }
            }
        };
        println!("{line}");
    }
    for f in &opts.formats {
        if !seen_formats.contains_key(f) {
            return Err(format!(
                "no vectors of format `{f}` under {}",
                opts.vectors.display()
            ));
        }
    }
    println!("conformance: {passed} passed, {failed} failed, {unsupported} unsupported");
    Ok(failed == 0)
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// Every sidecar under `root`, sorted: `*.json` files other than
/// `MANIFEST*.json`, not inside a vector directory.
fn find_sidecars(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                // A directory with a sidecar beside it is a vector (BLZ/bcolz): do not descend.
                if !dir.join(format!("{name}.json")).is_file() {
                    stack.push(p);
                }
            } else if name.ends_with(".json") && !name.starts_with("MANIFEST") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Reads a sidecar and finds the vector it describes: `X.json` describes `X`
/// when that exists, else the one `X.<ext>` beside it.
fn load(root: &Path, sidecar: &Path) -> Result<Vector, String> {
    let text = fs::read_to_string(sidecar).map_err(|e| format!("cannot read sidecar: {e}"))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("sidecar is not JSON: {e}"))?;
    if json.get("format").and_then(Value::as_str).is_none() {
        return Err("sidecar has no `format`".into());
    }
    let valid = json
        .get("valid")
        .and_then(Value::as_bool)
        .ok_or("sidecar has no boolean `valid`")?;
    let dir = sidecar.parent().ok_or("sidecar has no parent directory")?;
    let file = sidecar
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file.strip_suffix(".json").unwrap_or(&file);
    let direct = dir.join(stem);
    let path = if direct.exists() {
        direct
    } else {
        let prefix = format!("{stem}.");
        let mut cands: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                n.starts_with(&prefix) && !n.ends_with(".json")
            })
            .collect();
        cands.sort();
        match cands.len() {
            1 => cands.remove(0),
            0 => return Err("no vector file beside this sidecar".into()),
            _ => {
                return Err(format!(
                    "{} files could be this sidecar's vector",
                    cands.len()
                ));
            }
        }
    };
    Ok(Vector {
        name: rel(root, &path),
        path,
        sidecar: json,
        valid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> PathBuf {
        let root = std::env::temp_dir().join(format!("df-xtask-conf-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let w = |p: &str, s: &str| {
            let p = root.join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, s).unwrap();
        };
        let sc =
            |format: &str, valid: bool| format!(r#"{{"format": "{format}", "valid": {valid}}}"#);
        w("bp/x.blp", "blpk");
        w("bp/x.json", &sc("bloscpack", true));
        w("bp/MANIFEST.json", "[]");
        w("cntk/y.bin", "bin");
        w("cntk/y.ctf", "text");
        w("cntk/y.bin.json", &sc("cntk", false));
        w("blz/arr/meta/sizes", "{}");
        w("blz/arr/meta/inner.json", "{}");
        w("blz/arr.json", &sc("blz", true));
        w("bad/orphan.json", &sc("idv", true));
        w("bad/two.a", "");
        w("bad/two.b", "");
        w("bad/two.json", &sc("idv", true));
        w("bad/novalid.bin", "");
        w("bad/novalid.json", r#"{"format": "idv"}"#);
        root
    }

    #[test]
    fn compare_finds_every_kind_of_difference() {
        use serde_json::json;
        let mut d = Vec::new();
        compare(
            "s",
            &json!({"a": 1, "b": [1, 2], "c": "x"}),
            &json!({"a": 1, "b": [1, 2], "c": "x", "skip": 5}),
            &mut d,
            &["skip"],
        );
        assert!(d.is_empty(), "{d:?}");
        compare("s", &json!({"a": 1}), &json!({"a": 2}), &mut d, &[]);
        compare(
            "s",
            &json!({"b": [1, 2]}),
            &json!({"b": [1, 3]}),
            &mut d,
            &[],
        );
        compare("s", &json!({"b": [1]}), &json!({"b": [1, 3]}), &mut d, &[]);
        compare("s", &json!({}), &json!({"z": null}), &mut d, &[]);
        compare("s", &json!(0.1f32 as f64), &json!(0.1), &mut d, &[]);
        assert_eq!(d.len(), 5, "{d:?}");
        assert!(d[0].contains("s.a: got 1, sidecar 2"));
        assert!(d[3].contains("not produced"));
    }

    #[test]
    fn sidecars_pair_with_their_vectors() {
        let root = tree();
        let found = find_sidecars(&root).unwrap();
        let names: Vec<String> = found.iter().map(|p| rel(&root, p)).collect();
        assert_eq!(
            names,
            [
                "bad/novalid.json",
                "bad/orphan.json",
                "bad/two.json",
                "blz/arr.json",
                "bp/x.json",
                "cntk/y.bin.json"
            ]
        );
        let v = load(&root, &root.join("bp/x.json")).unwrap();
        assert_eq!((v.name.as_str(), v.valid), ("bp/x.blp", true));
        let v = load(&root, &root.join("cntk/y.bin.json")).unwrap();
        assert_eq!((v.name.as_str(), v.valid), ("cntk/y.bin", false));
        let v = load(&root, &root.join("blz/arr.json")).unwrap();
        assert!(v.path.is_dir());
        assert!(
            load(&root, &root.join("bad/orphan.json"))
                .unwrap_err()
                .contains("no vector")
        );
        assert!(
            load(&root, &root.join("bad/two.json"))
                .unwrap_err()
                .contains("2 files")
        );
        assert!(
            load(&root, &root.join("bad/novalid.json"))
                .unwrap_err()
                .contains("valid")
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
