//! `cargo xtask`: project automation.
//!
//! - `cargo xtask conformance [--vectors DIR] [--format NAME]`: check every
//!   shared vector against our readers.
//! - `cargo xtask fuzz [--seconds N] [--seed N] [--replay] [--dev] [--jobs N] [TARGET...]`: run the
//!   cargo-fuzz targets, or replay their saved regression inputs.
//! - `cargo xtask scale [--venv DIR] [--factor N]`: the Ray cluster tests
//!   with N times the files.
//! - `cargo xtask ci`: run `.ci/run`, exactly what CI runs.

#![allow(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod bench_convert;
mod compare;
mod conformance;
mod fuzz;
mod interop;
mod interop_idv;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  conformance [--vectors DIR] [--format NAME]...
      Check every vector in DIR (default: $DATAFORMATS_VECTORS, else ../shared/vectors
      beside the project) against our readers: one PASS/FAIL/UNSUPPORTED line each,
      then `conformance: N passed, M failed, K unsupported`. Fails on any FAIL, and
      when the folder is missing under CI=true.
  fuzz [--seconds N] [--seed N] [--replay] [--dev] [--jobs N] [TARGET...]
      Run each cargo-fuzz target (default: all) for N seconds (default 60), nightly
      with AddressSanitizer when a nightly toolchain is installed, else `-s none` on
      stable. --seed fixes libFuzzer's random seed (CI uses one, so a smoke run can
      be repeated). --replay instead reruns every saved input in
      fuzz/corpus/*/regressions. Failures are summarised last, with each crashing
      input in hex and the lines of its replay that name the fault. --dev builds the
      targets unoptimized: a build about 3x quicker, for a smoke run (CI), with far
      fewer runs a second. The targets are built first; --jobs N then runs N of them
      at once (default 1), each one's output printed when it ends.
  bench --compare [cntk] [bloscpack] [idv] [tbl2] [mldf] [--ctf2bin PATH] [--mb N]
      The project and each reference tool on the same generated input, alternating,
      medians of 5 pairs, with the load: ctf2bin.py (--ctf2bin, DATAFORMATS_CTF2BIN
      or CNTK_DIR; skipped when absent) against `convert --compat ctf2bin` on one
      thread and on every core (outputs byte-identical); python-bloscpack's unpack
      to .npy (every codec; installed into target/interop/venv) against `convert`;
      ML.NET's row cursor over an ML.NET-written deflate IDV (the `interop idv` setup)
      against `validate` of it; TurboLoader's random sample reads (same venv) against
      ours, CRC-16 checked.
      Then each format's table against its floor.
  bench convert [--mb N] [--dir DIR]
      Peak memory of every conversion of an N MB (default 1024) data set, one process
      each: MLDF into every target and each target back into MLDF; fails when one
      reaches 200 MiB resident.
  bench cntk
      Release-mode CTF -> CBF conversion and dense f32 read throughput, then the
      converter's peak memory on a 1 GiB CTF file.
  bench tbl2
      Release-mode table: random-access reads with CRC-16 on and off and tar->tbl
      conversion on ~100 MB data sets, against TurboLoader's numbers; then the peak
      memory of converting a 1 GB tar.
  bench bloscpack [--mb N] [--pack-gb N]
      Release-mode speed table: unpack of an N MB (default 200) float64 file against raw
      c-blosc on the same chunks and memcpy, serial and parallel; then the peak memory of
      packing an N GiB (default 1) file through the streaming writer.
  interop bloscpack|tbl2
      Write files with our writers (Bloscpack in every option combination and bcolz
      directories; TBL v2 with every format, compression setting and metadata type, and a
      converted tar), then read them back with the reference Python packages installed
      from PyPI into a throw-away virtual environment (target/interop/venv).
  scale [--venv DIR] [--factor N]
      The Ray tests (python/tests/test_ray.py: a loopback cluster of a head and two
      one-CPU worker nodes) with N times (default 10) the files converted, using the
      Python venv DIR (default .venv, made by `bash python/setup-venv.sh .venv`).
      CI runs them at factor 1.
  ci
      Run .ci/run (what CI runs on a fresh clone).
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "conformance" => conformance::main(rest),
        "fuzz" => fuzz::main(rest),
        "ci" => ci(rest),
        "bench" => bench(rest),
        "interop" => interop::main(rest),
        "scale" => scale(rest),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(true)
        }
        other => Err(format!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::from(2)
        }
    }
}

/// The workspace root (the parent of this crate's directory).
pub(crate) fn project_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

fn ci(args: &[String]) -> Result<bool, String> {
    if let Some(a) = args.first() {
        return Err(format!("`ci` takes no arguments (got `{a}`)"));
    }
    let root = project_root();
    let status = Command::new("bash")
        .arg(root.join(".ci/run"))
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run .ci/run: {e}"))?;
    Ok(status.success())
}

fn scale(args: &[String]) -> Result<bool, String> {
    let root = project_root();
    let mut venv = root.join(".venv");
    let mut factor = 10u32;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("`{a}` needs a value"));
        match a.as_str() {
            "--venv" => venv = PathBuf::from(value()?),
            "--factor" => {
                let v = value()?;
                factor = v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    format!("--factor takes a whole number of at least 1, not `{v}`")
                })?;
            }
            other => return Err(format!("unknown option `{other}` for `scale`")),
        }
    }
    let pytest = venv.join("bin").join("pytest");
    if !pytest.exists() {
        return Err(format!(
            "no pytest in {}: make the venv with `bash python/setup-venv.sh {}`",
            venv.display(),
            venv.display()
        ));
    }
    let built = Command::new("cargo")
        .args(["build", "-p", "dataformats-cli", "--features", "sql"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !built.success() {
        return Ok(false);
    }
    let status = Command::new(pytest)
        .args(["-q", "python/tests/test_ray.py"])
        .env("DATAFORMATS_RAY_SCALE", factor.to_string())
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run pytest: {e}"))?;
    Ok(status.success())
}

/// Runs a format crate's bench example in release mode with `args`.
fn run_example(
    package: &str,
    features: &[&str],
    example: &str,
    args: &[&str],
) -> Result<bool, String> {
    let mut cmd = Command::new("cargo");
    cmd.args(["run", "--quiet", "--release", "-p", package]);
    for f in features {
        cmd.args(["--features", f]);
    }
    let status = cmd
        .args(["--example", example, "--"])
        .args(args)
        .current_dir(project_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(status.success())
}

fn bench(args: &[String]) -> Result<bool, String> {
    let Some((what, rest)) = args.split_first() else {
        return Err("bench needs a format: `cargo xtask bench bloscpack`".into());
    };
    match what.as_str() {
        "idv" => return run_example("dataformats-idv", &["rayon"], "bench_idv", &[]),
        "convert" => return bench_convert::main(rest),
        "--compare" => return compare::main(rest),
        "arrow" => {
            let mb: Vec<&str> = rest.iter().map(String::as_str).collect();
            return Ok(run_example("dataformats", &[], "bench_arrow", &mb)?
                && run_example(
                    "dataformats",
                    &[],
                    "bench_arrow",
                    &[&["--export-memory"][..], &mb[..]].concat(),
                )?);
        }
        "mldf" => {
            return Ok(run_example("dataformats-mldf", &[], "bench_mldf", &[])?
                && run_example("dataformats-mldf", &[], "bench_mldf", &["--write-memory"])?);
        }
        "cntk" => {
            return Ok(run_example("dataformats-cntk", &[], "bench_cntk", &[])?
                && run_example(
                    "dataformats-cntk",
                    &[],
                    "bench_cntk",
                    &["--convert-memory", "1"],
                )?);
        }
        "tbl2" => {
            return Ok(run_example("dataformats-tbl2", &[], "bench_tbl2", &[])?
                && run_example(
                    "dataformats-tbl2",
                    &[],
                    "bench_tbl2",
                    &["--convert-memory", "1"],
                )?);
        }
        "bloscpack" => {}
        _ => {
            return Err(format!(
                "no bench for `{what}` (have: bloscpack, tbl2, cntk, idv, mldf, arrow)"
            ));
        }
    }
    let (mut mb, mut gb) = ("200".to_string(), "1".to_string());
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mb" => mb = it.next().ok_or("--mb needs a number")?.clone(),
            "--pack-gb" => gb = it.next().ok_or("--pack-gb needs a number")?.clone(),
            other => return Err(format!("bench: unknown argument `{other}`")),
        }
    }
    let bp =
        |extra: &[&str]| run_example("dataformats-bloscpack", &["rayon"], "bench_unpack", extra);
    Ok(bp(&[&mb])? && bp(&["--pack-memory", &gb])?)
}
