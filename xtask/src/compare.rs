//! `cargo xtask bench --compare [cntk|bloscpack|idv|tbl2|mldf|text|convert]...`: the project and the
//! reference tool on the same generated input in one run, alternating, the
//! ratio of their median times (at least five pairs), with the machine's
//! load before and after. A reference that is not here is skipped with a
//! line saying how to provide it. Each timed run writes a new file (the
//! previous run's output is removed first, outside the timing).
//!
//! - cntk: CTF → CBF by ctf2bin.py (`--ctf2bin PATH`,
//!   `DATAFORMATS_CTF2BIN`, or `$CNTK_DIR/Scripts/ctf2bin.py`; it needs
//!   only Python's standard library) against `dataformats convert
//!   --compat ctf2bin` on one thread and on every core; the outputs must be
//!   byte-identical.
//! - bloscpack: python-bloscpack 0.16 (with python-blosc 1.11, installed
//!   from PyPI into `target/interop/venv`) packs float64 arrays with each
//!   codec; its unpack to a `.npy` (timed inside Python, so its start-up is
//!   not counted), with the file synced to the disk as ours is, against
//!   `dataformats convert FILE.blp FILE.npy` (the whole process); the two
//!   `.npy` files must be identical. The ratio to Python without the sync
//!   is printed too, and the floor: the same `.npy` written from memory to
//!   a new file and synced, nothing decoded.
//!
//! - idv: ML.NET 1.5 (`cargo xtask interop idv`'s setup: the runtime and
//!   assemblies from PyPI wheels, through pythonnet) re-saves a generated
//!   file of float columns with its BinarySaver (deflate), then scans that
//!   ML.NET-written file with a row cursor and a getter per column, the
//!   loop compiled to .NET code (an expression tree), timed inside Python;
//!   against `dataformats validate` of the same file (the whole process,
//!   every block inflated and checked). Both sides sum every value in row
//!   order in double precision, and the sums must be equal.
//! - tbl2: TurboLoader 2.39 (`turboloader` from PyPI, in the same venv)
//!   reads every sample of a generated TBL v2 file in a random order
//!   through `TblReaderV2.read_sample` (timed inside Python) against
//!   `dataformats_tbl2::Reader::read_sample_into` (bench_tbl2 `--reads`, a
//!   release build, timed inside), CRC-16 checked; the samples must hash
//!   alike.
//!
//! - mldf: no reference tool (MLDF's reference is its specification); its
//!   speed table only.
//!
//! - text: no reference tool; #17's absolute targets on `mb` MB (default
//!   100) of generated JSON lines (two ints, a float and a `float32[32]`
//!   per line): JSON lines → MLDF with a schema on every core (target 150 MB/s
//!   of JSON) and without one (inferred; no target), then `dump --format
//!   csv` and `--format jsonl` of that MLDF and of an IDV converted from it
//!   (target 200 MB/s of output). Whole processes, medians of five runs.
//! - convert: no reference tool; #17's "every conversion uses all cores":
//!   an MLDF made from `mb` MB (default 300) of those JSON lines, converted
//!   to Parquet, Arrow, IDV, CBF, Bloscpack, bcolz, CSV and JSON lines
//!   (`--lossy`), then the JSON lines and the MLDF's Parquet, Arrow and
//!   CSV copies into Parquet, and the JSON lines and CSV into Arrow, with
//!   `--threads 1` and on every core, alternating; the ratio of the
//!   medians.
//!
//! Each format's speed table follows (`bench_cntk`: one thread against
//! every core; `bench_unpack`: raw c-blosc on the same chunks and memcpy;
//! `bench_tbl2`: CRC-16 on against off, alternating; `bench_idv`: raw
//! inflate and memcpy, 1 and N threads; `bench_mldf`: reads and writes),
//! each ending with `validate` against that format's fastest read of every
//! value (#17: at least 0.7 of its speed).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Pairs of runs per comparison.
const PAIRS: usize = 5;

/// Pairs of our own one-thread and every-core CTF -> CBF runs (the first
/// [`PAIRS`] of them beside ctf2bin.py's).
const ONE_ALL_PAIRS: usize = 21;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Removes the previous run's output before a timed run, so that no side
/// pays for freeing an earlier file's pages and blocks (writing over a
/// 200 MB file costs about 40 ms here, in Python's truncating open as in
/// our rename), and each writes a new file as in normal use.
fn fresh(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Runs `cmd`, failing with its stderr; the wall seconds it took.
fn timed(cmd: &mut Command) -> Result<f64, String> {
    let t = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(secs)
}

/// Runs `cmd`, failing with its stderr; what it printed, trimmed.
fn stdout_of(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn cli(root: &Path) -> PathBuf {
    root.join("target/release/dataformats")
}

/// `dataformats convert INPUT OUTPUT --quiet`, more options to be added.
fn quiet_convert(root: &Path, input: &Path, output: &Path) -> Command {
    let mut c = Command::new(cli(root));
    c.arg("convert").arg(input).arg(output).arg("--quiet");
    c
}

fn build_cli(root: &Path) -> Result<(), String> {
    crate::interop::run(
        Command::new("cargo")
            .args(["build", "--quiet", "--release", "-p", "dataformats-cli"])
            .current_dir(root),
    )
}

pub(crate) fn main(args: &[String]) -> Result<bool, String> {
    let mut formats = Vec::new();
    let mut ctf2bin = std::env::var_os("DATAFORMATS_CTF2BIN").map(PathBuf::from);
    let mut mb: Option<u64> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--ctf2bin" => {
                ctf2bin = Some(PathBuf::from(it.next().ok_or("--ctf2bin takes a path")?))
            }
            "--mb" => {
                mb = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("--mb takes a number")?,
                );
            }
            "cntk" | "bloscpack" | "idv" | "tbl2" | "mldf" | "text" | "convert" => {
                formats.push(a.clone())
            }
            other => return Err(format!("bench --compare: unknown argument `{other}`")),
        }
    }
    if formats.is_empty() {
        formats = vec![
            "cntk".into(),
            "bloscpack".into(),
            "idv".into(),
            "tbl2".into(),
            "mldf".into(),
            "text".into(),
            "convert".into(),
        ];
    }
    if ctf2bin.is_none()
        && let Some(d) = std::env::var_os("CNTK_DIR")
    {
        ctf2bin = Some(Path::new(&d).join("Scripts/ctf2bin.py"));
    }
    let root = crate::project_root();
    build_cli(&root)?;
    let dir = root.join("target/bench-compare");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    println!(
        "compare: {} cores, load {} at the start; medians of {PAIRS} alternating pairs",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load()
    );
    let mut ok = true;
    for f in &formats {
        let r = match f.as_str() {
            "cntk" => cntk(&root, &dir, ctf2bin.as_deref(), mb.unwrap_or(20)),
            "tbl2" => tbl2(&root, &dir, mb.unwrap_or(100)),
            "idv" => idv(&root, &dir, mb.unwrap_or(64)),
            "mldf" => {
                println!("mldf: no reference tool (the format's reference is its specification)");
                Ok(())
            }
            "text" => text(&root, &dir, mb.unwrap_or(100)),
            "convert" => convert(&root, &dir, mb.unwrap_or(300)),
            _ => bloscpack(&root, &dir, mb.unwrap_or(200)),
        };
        if let Err(e) = r {
            println!("{f}: FAILED: {e}");
            ok = false;
        }
        if f == "text" || f == "convert" {
            // No reference tool, and no floor other than the target.
            continue;
        }
        // The same hot path against its floor in this run: raw c-blosc on
        // the same chunks and memcpy (Bloscpack), one thread against every
        // core (CTF).
        println!("{f}: against the physical floor");
        ok &= match f.as_str() {
            "cntk" => crate::run_example("dataformats-cntk", &[], "bench_cntk", &[])?,
            "tbl2" => crate::run_example("dataformats-tbl2", &[], "bench_tbl2", &[])?,
            "idv" => crate::run_example("dataformats-idv", &["rayon"], "bench_idv", &[])?,
            "mldf" => crate::run_example("dataformats-mldf", &[], "bench_mldf", &[])?,
            _ => crate::run_example(
                "dataformats-bloscpack",
                &["rayon"],
                "bench_unpack",
                &[&mb.unwrap_or(200).to_string()],
            )?,
        };
    }
    println!("compare: load {} at the end", load());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ok)
}

/// Writes `mb` MB of CTF text: 20-line sequences of a 64-float dense
/// stream and, with `sparse`, a one-hot label.
fn write_ctf(path: &Path, mb: u64, sparse: bool) -> Result<u64, String> {
    use std::io::Write;
    let e = |x: std::io::Error| format!("{}: {x}", path.display());
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(e)?);
    let mut rng = dataformats::core::rng::SplitMix64::new(17);
    let mut written = 0u64;
    let mut seq = 0u64;
    let mut line = String::new();
    while written < mb * 1_000_000 {
        for _ in 0..20 {
            line.clear();
            line.push_str(&format!("{seq} |features"));
            for _ in 0..64 {
                let v = rng.below(2_000_000) as f64 / 1e6 - 1.0;
                line.push_str(&format!(" {v:.6}"));
            }
            if sparse {
                line.push_str(&format!(" |labels {}:1", rng.below(10)));
            }
            line.push('\n');
            f.write_all(line.as_bytes()).map_err(e)?;
            written += line.len() as u64;
        }
        seq += 1;
    }
    f.flush().map_err(e)?;
    Ok(written)
}

fn cntk(root: &Path, dir: &Path, ctf2bin: Option<&Path>, mb: u64) -> Result<(), String> {
    let Some(script) = ctf2bin.filter(|p| p.is_file()) else {
        println!(
            "cntk: skipped: ctf2bin.py not found (give --ctf2bin PATH, DATAFORMATS_CTF2BIN, \
             or CNTK_DIR of a CNTK checkout)"
        );
        return Ok(());
    };
    let run_ref = |input: &Path, streams: &Path, out: &Path| {
        timed(
            Command::new("python3")
                .arg(script)
                .arg("--input")
                .arg(input)
                .arg("--header")
                .arg(streams)
                .args(["--chunk_size", "33554432", "--output"])
                .arg(out),
        )
    };
    let streams = dir.join("streams.txt");
    let input = dir.join("data.ctf");
    let (ref_out, ours_out) = (dir.join("ref.bin"), dir.join("ours.bin"));
    std::fs::write(
        &streams,
        "features features dense 64\nlabels labels sparse 10\n",
    )
    .map_err(|e| e.to_string())?;
    let mut bytes = write_ctf(&input, mb, true)?;
    let mut what = "dense 64 floats + sparse label";
    if let Err(e) = run_ref(&input, &streams, &ref_out) {
        // Some ctf2bin.py versions take len() of a map on sparse input,
        // which only Python 2 allows.
        let last = e.lines().last().unwrap_or_default().trim();
        println!("cntk: this ctf2bin.py fails on sparse input ({last}); comparing on dense text");
        std::fs::write(&streams, "features features dense 64\n").map_err(|e| e.to_string())?;
        bytes = write_ctf(&input, mb, false)?;
        what = "dense 64 floats";
    }
    let ours_on = |input: &Path, threads: &str| {
        timed(
            Command::new(cli(root))
                .arg("convert")
                .arg(input)
                .arg(&ours_out)
                .arg("--streams")
                .arg(&streams)
                .args([
                    "--compat",
                    "ctf2bin",
                    "--chunk-size",
                    "33554432",
                    "--threads",
                    threads,
                ])
                .arg("--quiet"),
        )
    };
    let ours = |threads: &str| ours_on(&input, threads);
    // `n` more pairs of one-thread and every-core runs of `input`, the
    // order swapped every pair, added to `one` and `all`.
    let alternate = |input: &Path, n: usize, one: &mut Vec<f64>, all: &mut Vec<f64>| {
        for k in 0..n {
            let mut pair = [("1", 0.0), ("0", 0.0)];
            if k % 2 == 0 {
                pair.reverse();
            }
            for (threads, secs) in &mut pair {
                fresh(&ours_out);
                *secs = ours_on(input, threads)?;
            }
            for (threads, secs) in pair {
                if threads == "1" { &mut *one } else { &mut *all }.push(secs);
            }
        }
        Ok::<_, String>(())
    };
    let (mut r, mut one, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        fresh(&ref_out);
        r.push(run_ref(&input, &streams, &ref_out)?);
        fresh(&ours_out);
        one.push(ours("1")?);
        fresh(&ours_out);
        all.push(ours("0")?);
    }
    let same = std::fs::read(&ref_out).map_err(|e| e.to_string())?
        == std::fs::read(&ours_out).map_err(|e| e.to_string())?;
    let to_ref = median(r.iter().zip(&one).map(|(r, o)| r / o).collect());
    // Our two runs take tens of milliseconds on the default input, where
    // one process's start or one busy moment of the machine moves a run by
    // 10 to 20%: more pairs of them (cheap next to ctf2bin.py's seconds),
    // the order swapped every pair, and the median of the pairs' ratios.
    alternate(
        &input,
        ONE_ALL_PAIRS.saturating_sub(PAIRS),
        &mut one,
        &mut all,
    )?;
    let scaling = median(one.iter().zip(&all).map(|(o, a)| o / a).collect());
    let pairs = one.len();
    // The same on ten times the text: on the default input about 9 ms of
    // a 50 ms run are the process's start and the output's sync, which no
    // thread count shortens (docs/performance.md), so the scaling of the
    // conversion itself shows on the larger one.
    let large = dir.join("large.ctf");
    let large_bytes = write_ctf(&large, mb * 10, what.contains("sparse"))?;
    let (mut one_l, mut all_l) = (Vec::new(), Vec::new());
    alternate(&large, PAIRS * 2 + 1, &mut one_l, &mut all_l)?;
    let _ = std::fs::remove_file(&large);
    let scaling_l = median(one_l.iter().zip(&all_l).map(|(o, a)| o / a).collect());
    let (pairs_l, one_l, all_l) = (one_l.len(), median(one_l), median(all_l));
    let (r, one, all) = (median(r), median(one), median(all));
    let mbs = |s: f64| bytes as f64 / 1e6 / s;
    println!(
        "cntk: CTF -> CBF, {:.0} MB of text ({what}), output {}",
        bytes as f64 / 1e6,
        if same { "byte-identical" } else { "DIFFERENT" }
    );
    println!(
        "  ctf2bin.py {:.1} MB/s | ours, 1 thread {:.1} MB/s ({:.1}x ctf2bin; target 10x) | \
         ours, every core {:.1} MB/s ({:.2}x one thread, median of {pairs} alternating pairs' ratios; \
         each run's start and sync included: see the larger input for the scaling)",
        mbs(r),
        mbs(one),
        to_ref,
        mbs(all),
        scaling
    );
    let mbs_l = |s: f64| large_bytes as f64 / 1e6 / s;
    println!(
        "  {:.0} MB of the same text: ours, 1 thread {:.1} MB/s | every core {:.1} MB/s \
         ({:.2}x one thread, median of {pairs_l} alternating pairs' ratios; target 1.7x on 2)",
        large_bytes as f64 / 1e6,
        mbs_l(one_l),
        mbs_l(all_l),
        scaling_l
    );
    if !same {
        return Err("our output differs from ctf2bin.py's".into());
    }
    Ok(())
}

const BLOSCPACK_PY: &str = r#"
import collections, collections.abc, json, sys, time
for _n in ("MutableMapping", "Mapping", "OrderedDict"):
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))
import numpy as np
import bloscpack as bp

cmd, args = sys.argv[1], json.loads(sys.argv[2])
if cmd == "pack":
    n = args["bytes"] // 8
    rng = np.random.default_rng(7)
    a = np.cumsum(rng.random(n) - 0.5)
    for codec, path in args["files"]:
        bp.pack_ndarray_to_file(a, path, blosc_args=bp.BloscArgs(cname=codec, typesize=8))
else:
    # The time to a .npy in the page cache, and to one on the disk (our
    # `convert` syncs a file before it appears).
    import os
    t = time.perf_counter()
    with open(args["out"], "wb") as f:
        np.save(f, bp.unpack_ndarray_from_file(args["path"]))
        f.flush()
        cached = time.perf_counter() - t
        os.fsync(f.fileno())
    print(cached, time.perf_counter() - t)
"#;

fn bloscpack(root: &Path, dir: &Path, mb: u64) -> Result<(), String> {
    let venv_dir = root.join("target/interop");
    std::fs::create_dir_all(&venv_dir).map_err(|e| e.to_string())?;
    let py = match crate::interop::venv(&venv_dir, &["numpy", "blosc==1.11.4", "bloscpack==0.16.0"])
    {
        Ok(py) => py,
        Err(e) => {
            println!("bloscpack: skipped: python-bloscpack could not be installed ({e})");
            return Ok(());
        }
    };
    let script = dir.join("bloscpack_ref.py");
    std::fs::write(&script, BLOSCPACK_PY).map_err(|e| e.to_string())?;
    let codecs = ["blosclz", "lz4", "zstd", "zlib"];
    let files: Vec<(String, PathBuf)> = codecs
        .iter()
        .map(|c| (c.to_string(), dir.join(format!("{c}.blp"))))
        .collect();
    let spec = serde_json::json!({"bytes": mb * 1_000_000, "files": files});
    crate::interop::run(
        Command::new(&py)
            .arg(&script)
            .arg("pack")
            .arg(spec.to_string()),
    )?;
    println!(
        "bloscpack: unpack of a {mb} MB float64 random walk packed by python-bloscpack \
         (1 MB chunks, adler32 digests checked) into a .npy"
    );
    for (codec, path) in &files {
        let (ref_npy, our_npy) = (dir.join("ref.npy"), dir.join("ours.npy"));
        let (mut r, mut rs, mut o) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..PAIRS {
            let arg = serde_json::json!({"path": path, "out": ref_npy}).to_string();
            fresh(&ref_npy);
            let text = stdout_of(Command::new(&py).arg(&script).arg("unpack").arg(arg))?;
            let secs: Vec<f64> = text
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("python's times {text:?}: {e}"))?;
            let [cached, synced] = secs[..] else {
                return Err(format!("python's times {text:?}: expected two"));
            };
            r.push(cached);
            rs.push(synced);
            fresh(&our_npy);
            o.push(timed(&mut quiet_convert(root, path, &our_npy))?);
        }
        let npy = std::fs::read(&our_npy).map_err(|e| e.to_string())?;
        let same = std::fs::read(&ref_npy).map_err(|e| e.to_string())? == npy;
        // The floor: the same .npy written from memory and synced, nothing
        // decoded (what the disk and the page cache take), the fastest way
        // we know: the disk reserved ahead, 1 MiB pieces written in place on
        // every core.
        let floor_path = dir.join("floor.npy");
        let mut floor = Vec::new();
        for _ in 0..PAIRS {
            fresh(&floor_path);
            let t = Instant::now();
            write_in_place(&floor_path, &npy).map_err(|e| e.to_string())?;
            floor.push(t.elapsed().as_secs_f64());
        }
        fresh(&floor_path);
        let (r, rs, o, floor) = (median(r), median(rs), median(o), median(floor));
        println!(
            "  {codec:<8} python-bloscpack {:.0} MB/s ({:.0} synced) | ours {:.0} MB/s, whole process, synced: \
             {:.2}x (target 2.5x); {:.2}x python unsynced | .npy {} | floor (the .npy written \
             from memory, in place on every core, synced) {:.0} MB/s, ours at {:.2}x of it",
            mb as f64 / r,
            mb as f64 / rs,
            mb as f64 / o,
            rs / o,
            r / o,
            if same { "identical" } else { "DIFFERENT" },
            mb as f64 / floor,
            floor / o,
        );
        if !same {
            return Err(format!("{codec}: our .npy differs from python-bloscpack's"));
        }
    }
    Ok(())
}

/// `bytes` written to a new file at `path` as fast as we know: the disk
/// reserved ahead of the writes, 1 MiB pieces written at their places on
/// every core, synced.
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use dataformats::core::{AtomicFile, parallel};
    const PIECE: usize = 1 << 20;
    let mut f = AtomicFile::create(path)?;
    {
        let out = f.shared_sized(bytes.len() as u64)?;
        let mut pieces = bytes.chunks(PIECE).enumerate();
        parallel::ordered(
            parallel::threads(0),
            || Ok(pieces.next()),
            |(i, piece)| out.write_all_at(piece, (i * PIECE) as u64),
            |written| written,
        )?;
    }
    f.finish()
}

const TBL2_PY: &str = r#"
import hashlib, json, sys, time
import turboloader

args = json.loads(sys.argv[1])
with open(args["order"]) as f:
    order = [int(i) for i in f.read().split()]
reader = turboloader.TblReaderV2(args["path"])
read = reader.read_sample
if args["hash"]:
    h = hashlib.sha256()
    for i in order:
        h.update(bytes(read(i)))
    print(h.hexdigest())
else:
    t = time.perf_counter()
    for i in order:
        read(i)
    print(time.perf_counter() - t)
"#;

/// Random reads of a TBL v2 file of `mb` MB of 3 to 6 KB incompressible
/// samples: TurboLoader's reader against ours.
fn tbl2(root: &Path, dir: &Path, mb: u64) -> Result<(), String> {
    use dataformats::tbl2::{SampleFormat, SampleInfo, Writer};
    let e = |x: dataformats::tbl2::Error| x.to_string();
    let venv_dir = root.join("target/interop");
    std::fs::create_dir_all(&venv_dir).map_err(|e| e.to_string())?;
    let py = match crate::interop::venv(&venv_dir, &["turboloader==2.39.0"]) {
        Ok(py) => py,
        Err(e) => {
            println!("tbl2: skipped: TurboLoader could not be installed ({e})");
            return Ok(());
        }
    };
    let path = dir.join("samples.tbl");
    let mut rng = dataformats::core::rng::SplitMix64::new(23);
    let mut w = Writer::create(&path, dataformats::tbl2::Compression::Lz4).map_err(e)?;
    let (mut total, mut n) = (0u64, 0usize);
    let mut data = Vec::new();
    while total < mb * 1_000_000 {
        let len = 3000 + rng.below(3000) as usize;
        data.clear();
        data.extend((0..len).map(|_| rng.next_u64() as u8));
        let info = SampleInfo {
            format: SampleFormat::JPEG,
            width: 64,
            height: 64,
        };
        w.add_sample(&data, info).map_err(e)?;
        total += len as u64;
        n += 1;
    }
    w.finish().map_err(e)?;
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let order_path = dir.join("order.txt");
    let text: String = order.iter().map(|i| format!("{i}\n")).collect();
    std::fs::write(&order_path, text).map_err(|e| e.to_string())?;
    let script = dir.join("tbl2_ref.py");
    std::fs::write(&script, TBL2_PY).map_err(|e| e.to_string())?;
    let reference = |hash: bool| {
        let arg = serde_json::json!({"path": path, "order": order_path, "hash": hash});
        stdout_of(Command::new(&py).arg(&script).arg(arg.to_string()))
    };
    crate::interop::run(
        Command::new("cargo")
            .args(["build", "--quiet", "--release", "-p", "dataformats-tbl2"])
            .args(["--example", "bench_tbl2"])
            .current_dir(root),
    )?;
    let ours = |hash: bool| {
        let mut cmd = Command::new(root.join("target/release/examples/bench_tbl2"));
        cmd.arg("--reads").arg(&path).arg(&order_path);
        if hash {
            cmd.arg("--hash");
        }
        stdout_of(&mut cmd)
    };
    let secs = |s: String| {
        s.parse::<f64>()
            .map_err(|x| format!("a time of {s:?}: {x}"))
    };
    let (mut r, mut o) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        r.push(secs(reference(false)?)?);
        o.push(secs(ours(false)?)?);
    }
    let same = ours(true)? == reference(true)?;
    let (r, o) = (median(r), median(o));
    let mbs = |s: f64| total as f64 / 1e6 / s;
    println!(
        "tbl2: {n} samples of 3 to 6 KB ({:.0} MB) read in a random order, samples {}",
        total as f64 / 1e6,
        if same { "identical" } else { "DIFFERENT" }
    );
    println!(
        "  TurboLoader {:.0} MB/s | ours, CRC-16 checked, {:.0} MB/s: {:.1}x",
        mbs(r),
        mbs(o),
        r / o
    );
    if !same {
        return Err("our samples differ from TurboLoader's".into());
    }
    Ok(())
}

const IDV_PY: &str = r#"
import json, sys, time
import mlnet

args = json.loads(sys.argv[1])
clr = mlnet.load(args["mlnet"], ("Microsoft.ML.DataView", "Microsoft.ML.Core", "Microsoft.ML.Data"))
clr.AddReference("System.Linq.Expressions")
from Microsoft.ML import BinaryLoaderSaverCatalog, DataViewRowCursor, DataViewSchema, MLContext, ValueGetter
from System import Array, Double, Func, Int32, Single
from System.Collections.Generic import List
from System.IO import File
from System.Linq.Expressions import Expression, ParameterExpression

ctx = MLContext(1)
if args["mode"] == "save":
    dv = BinaryLoaderSaverCatalog.LoadFromBinary(ctx.Data, args["path"])
    out = File.Create(args["out"])
    try:
        BinaryLoaderSaverCatalog.SaveAsBinary(ctx.Data, dv, out, True)
    finally:
        out.Dispose()
    sys.exit()

# The scan loop as .NET code: while (cursor.MoveNext()) for each column
# { getters[k](ref v); sum += v; }, so no Python runs per row.
Getter = ValueGetter[Single]
T = clr.GetClrType
cursor = Expression.Parameter(T(DataViewRowCursor), "cursor")
getters = Expression.Parameter(T(Array[Getter]), "getters")
v = Expression.Variable(T(Single), "v")
total = Expression.Variable(T(Double), "total")
done = Expression.Label(T(Double))
dv = BinaryLoaderSaverCatalog.LoadFromBinary(ctx.Data, args["path"])
columns = List[DataViewSchema.Column]()
for c in dv.Schema:
    columns.Add(c)
row = List[Expression]()
for k in range(columns.Count):
    row.Add(Expression.Invoke(Expression.ArrayIndex(getters, Expression.Constant(Int32(k))), v))
    row.Add(Expression.AddAssign(total, Expression.Convert(v, T(Double))))
loop = Expression.Loop(
    Expression.IfThenElse(
        Expression.Call(cursor, T(DataViewRowCursor).GetMethod("MoveNext")),
        Expression.Block(row),
        Expression.Break(done, total)),
    done)
variables = List[ParameterExpression]()
variables.Add(v)
variables.Add(total)
body = List[Expression]()
body.Add(Expression.Assign(total, Expression.Constant(0.0)))
body.Add(loop)
scan = Expression.Lambda[Func[DataViewRowCursor, Array[Getter], Double]](
    Expression.Block(T(Double), variables, body), cursor, getters).Compile()

t = time.perf_counter()
c = dv.GetRowCursor(columns, None)
g = Array.CreateInstance(T(Getter), columns.Count)
for k in range(columns.Count):
    g[k] = c.GetGetter[Single](columns[k])
s = scan(c, g)
secs = time.perf_counter() - t
print(json.dumps({"secs": secs, "sum": s}))
"#;

/// Writes `mb` MB of JSON lines of two ints, a float and a `float32[32]`;
/// the bytes written.
fn write_jsonl(path: &Path, mb: u64) -> Result<u64, String> {
    use std::fmt::Write as _;
    use std::io::Write;
    let e = |x: std::io::Error| format!("{}: {x}", path.display());
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(e)?);
    let mut rng = dataformats::core::rng::SplitMix64::new(23);
    let (mut written, mut id) = (0u64, 0u64);
    let mut line = String::new();
    while written < mb * 1_000_000 {
        line.clear();
        let label = rng.below(1000);
        let score = rng.below(1 << 24) as f32 / (1 << 20) as f32;
        let _ = write!(
            line,
            r#"{{"id":{id},"label":{label},"score":{score:?},"x":["#
        );
        for k in 0..32 {
            let v = (rng.below(1 << 24) as f32 / (1 << 23) as f32) - 1.0;
            let _ = write!(line, "{}{v:?}", if k == 0 { "" } else { "," });
        }
        line.push_str("]}\n");
        f.write_all(line.as_bytes()).map_err(e)?;
        written += line.len() as u64;
        id += 1;
    }
    f.flush().map_err(e)?;
    Ok(written)
}

/// The median seconds of `PAIRS` runs of `cmd`, and the size of `out`
/// afterwards.
fn median_run(cmd: &mut dyn FnMut() -> Command, out: &Path) -> Result<(f64, u64), String> {
    let mut t = Vec::new();
    for _ in 0..PAIRS {
        fresh(out);
        t.push(timed(&mut cmd())?);
    }
    let len = std::fs::metadata(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .len();
    Ok((median(t), len))
}

/// #17's text targets: JSON lines → MLDF, and CSV and JSON lines out of the
/// typed view of MLDF and IDV.
fn text(root: &Path, dir: &Path, mb: u64) -> Result<(), String> {
    let jsonl = dir.join("data.jsonl");
    let bytes = write_jsonl(&jsonl, mb)?;
    let schema = dir.join("schema.json");
    std::fs::write(
        &schema,
        r#"{"fields": [{"name": "id", "type": "INT"}, {"name": "label", "type": "INT"},
            {"name": "score", "type": "FLOAT"},
            {"name": "x", "type": "NDARRAY", "dtype": "float32", "shape": [32]}]}"#,
    )
    .map_err(|e| e.to_string())?;
    let run = |args: &[&std::ffi::OsStr], out: &Path| {
        median_run(
            &mut || {
                let mut c = Command::new(cli(root));
                c.args(args).arg("--quiet");
                c
            },
            out,
        )
    };
    let mldf = dir.join("data.mldf");
    let inferred = dir.join("inferred.mldf");
    let idv = dir.join("data.idv");
    let (with, _) = run(
        &[
            "convert".as_ref(),
            jsonl.as_os_str(),
            mldf.as_os_str(),
            "--schema".as_ref(),
            schema.as_os_str(),
        ],
        &mldf,
    )?;
    let (without, _) = run(
        &["convert".as_ref(), jsonl.as_os_str(), inferred.as_os_str()],
        &inferred,
    )?;
    let mbs = |b: u64, s: f64| b as f64 / 1e6 / s;
    println!(
        "text: JSON lines -> MLDF, {:.0} MB of JSON (two ints, a float, a float32[32] per line), every core",
        bytes as f64 / 1e6
    );
    println!(
        "  with --schema {:.0} MB/s (target 150) | schema inferred {:.0} MB/s (no target)",
        mbs(bytes, with),
        mbs(bytes, without)
    );
    crate::interop::run(&mut quiet_convert(root, &mldf, &idv))?;
    println!("text: `dump --format csv|jsonl` to a file, MB/s of output (target 200)");
    for (name, input) in [("mldf", &mldf), ("idv", &idv)] {
        let mut line = format!("  {name:<4}");
        for format in ["csv", "jsonl"] {
            let out = dir.join(format!("out.{format}"));
            let (secs, len) = median_run(
                &mut || {
                    let mut c = Command::new("sh");
                    c.arg("-c")
                        .arg(r#""$0" dump --quiet --format "$1" "$2" > "$3""#)
                        .arg(cli(root))
                        .arg(format)
                        .arg(input)
                        .arg(&out);
                    c
                },
                &out,
            )?;
            line.push_str(&format!(
                " | {format} {:.0} MB/s ({:.0} MB in {secs:.2} s)",
                mbs(len, secs),
                len as f64 / 1e6
            ));
        }
        println!("{line}");
    }
    Ok(())
}

/// The targets [`convert`] times.
const CONVERT_TARGETS: &[&str] = &[
    "parquet", "arrow", "idv", "bin", "blp", "bcolz", "csv", "jsonl",
];

/// The imports [`convert`] times, and into what: Parquet (encoded a part
/// per thread) and Arrow (the imports' own decoding on every core).
const CONVERT_IMPORTS: &[(&str, &str)] = &[
    ("parquet", "parquet"),
    ("parquet", "arrow"),
    ("arrow", "parquet"),
    ("arrow", "arrows"),
    ("csv", "parquet"),
    ("jsonl", "parquet"),
    ("csv", "arrow"),
    ("jsonl", "arrow"),
];

/// #17's "every conversion uses all cores": an MLDF made from `mb` MB of
/// [`write_jsonl`]'s lines converted into every target (`--lossy`: CNTK
/// keeps floats only) and into a compressed MLDF, then those lines and the
/// MLDF's Parquet, Arrow and
/// CSV copies into Parquet and Arrow (file or stream,
/// [`CONVERT_IMPORTS`]), each on one
/// thread and on every core,
/// alternating, each run writing a new file; the ratio of the medians.
fn convert(root: &Path, dir: &Path, mb: u64) -> Result<(), String> {
    let jsonl = dir.join("convert.jsonl");
    write_jsonl(&jsonl, mb)?;
    let src = dir.join("convert.mldf");
    crate::interop::run(&mut quiet_convert(root, &jsonl, &src))?;
    let size = std::fs::metadata(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .len();
    println!(
        "convert: {:.0} MB of MLDF (two ints, a float, a float32[32] per record) into each target, \
         every core against one thread, medians of {PAIRS} alternating pairs",
        size as f64 / 1e6
    );
    for ext in CONVERT_TARGETS {
        let (one, all) = one_and_all(root, &src, &dir.join(format!("out.{ext}")), &[])?;
        println!(
            "  mldf -> {ext:<8} one thread {one:.2} s | every core {all:.2} s | {:.2}x",
            one / all
        );
    }
    // Values compressed on every core.
    let z = dir.join("out-z.mldf");
    let (one, all) = one_and_all(root, &src, &z, &["--mldf-compress"])?;
    println!(
        "  mldf -> mldf --mldf-compress one thread {one:.2} s | every core {all:.2} s | {:.2}x",
        one / all
    );
    for (i, (ext, to)) in CONVERT_IMPORTS.iter().enumerate() {
        let input = match *ext {
            "jsonl" => jsonl.clone(),
            _ => dir.join(format!("convert.{ext}")),
        };
        if !input.exists() {
            crate::interop::run(&mut quiet_convert(root, &src, &input))?;
        }
        let mb = std::fs::metadata(&input).map_or(0, |m| m.len()) as f64 / 1e6;
        let (one, all) = one_and_all(root, &input, &dir.join(format!("out.{to}")), &[])?;
        if CONVERT_IMPORTS
            .get(i + 1..)
            .is_none_or(|rest| rest.iter().all(|(e, _)| e != ext))
        {
            fresh(&input);
        }
        println!(
            "  {ext:<7} -> {to:<8} one thread {one:.2} s | every core {all:.2} s | {:.2}x  ({mb:.0} MB in)",
            one / all
        );
    }
    fresh(&src);
    Ok(())
}

/// The median wall seconds of converting `input` to `out` (`--lossy`) on
/// one thread and on every core, over [`PAIRS`] alternating pairs.
fn one_and_all(
    root: &Path,
    input: &Path,
    out: &Path,
    extra: &[&str],
) -> Result<(f64, f64), String> {
    let remove = |p: &Path| {
        let _ = std::fs::remove_dir_all(p);
        fresh(p);
    };
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        for (threads, times) in [("1", &mut one), ("0", &mut all)] {
            remove(out);
            times.push(timed(
                quiet_convert(root, input, out)
                    .args(["--lossy", "--threads", threads])
                    .args(extra),
            )?);
        }
    }
    remove(out);
    Ok((median(one), median(all)))
}

/// A scan of an ML.NET-written deflate IDV file of `mb` MB of float
/// columns: ML.NET's row cursor against `dataformats validate`.
fn idv(root: &Path, dir: &Path, mb: u64) -> Result<(), String> {
    use dataformats::idv::{
        ColumnSpec, ColumnType, Compression, ItemType, Reader, Values, Writer, WriterOptions,
    };
    let e = |x: dataformats::idv::Error| x.to_string();
    let venv_dir = root.join("target/interop");
    std::fs::create_dir_all(&venv_dir).map_err(|e| e.to_string())?;
    let setup = crate::interop::venv(&venv_dir, &["pythonnet"])
        .and_then(|py| Ok((crate::interop_idv::mlnet(&venv_dir, &py)?, py)));
    let (mlnet, py) = match setup {
        Ok(x) => x,
        Err(e) => {
            println!("idv: skipped: ML.NET could not be set up ({e})");
            return Ok(());
        }
    };
    std::fs::write(dir.join("mlnet.py"), crate::interop_idv::MLNET_PY)
        .map_err(|e| e.to_string())?;
    let script = dir.join("idv_ref.py");
    std::fs::write(&script, IDV_PY).map_err(|e| e.to_string())?;
    let python =
        |arg: serde_json::Value| stdout_of(Command::new(&py).arg(&script).arg(arg.to_string()));
    // Four float columns of smooth values with noise in the low mantissa
    // bits (deflate gets well under 2:1, as on real features).
    const COLUMNS: usize = 4;
    let rows = (mb * 1_000_000 / 4 / COLUMNS as u64) as usize;
    let ours_path = dir.join("ours.idv");
    let specs: Vec<ColumnSpec> = (0..COLUMNS)
        .map(|i| ColumnSpec::new(format!("x{i}"), ColumnType::Scalar(ItemType::F32)))
        .collect();
    let opts = WriterOptions {
        compression: Compression::Deflate,
        rows_per_block: None,
        level: 6,
    };
    let mut w = Writer::create(&ours_path, specs, opts).map_err(e)?;
    let mut done = 0;
    while done < rows {
        let n = (1 << 16).min(rows - done);
        let batch: Vec<Values> = (0..COLUMNS)
            .map(|k| {
                Values::F32(
                    (done..done + n)
                        .map(|i| {
                            let noise = ((i * COLUMNS + k) as u64)
                                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                                >> 48;
                            (i as f32 * 0.001 + k as f32).sin() + noise as f32 * 1e-6
                        })
                        .collect(),
                )
            })
            .collect();
        w.write_batch(&batch).map_err(e)?;
        done += n;
    }
    w.finish().map_err(e)?;
    let path = dir.join("mlnet.idv");
    python(serde_json::json!({"mlnet": mlnet, "mode": "save", "path": ours_path, "out": path}))?;
    let stored = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    // The sum of every value in row order, as the .NET loop adds them.
    let r = Reader::open(&path).map_err(e)?;
    let cols: Vec<Vec<f32>> = (0..COLUMNS)
        .map(|k| r.column::<f32>(&format!("x{k}")))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut want = 0f64;
    for i in 0..rows {
        for c in &cols {
            want += f64::from(c.get(i).copied().unwrap_or(f32::NAN));
        }
    }
    drop(cols);
    let (mut m, mut o) = (Vec::new(), Vec::new());
    let mut sums = Vec::new();
    for _ in 0..PAIRS {
        let out: serde_json::Value = serde_json::from_str(&python(serde_json::json!({
            "mlnet": mlnet, "mode": "scan", "path": path
        }))?)
        .map_err(|e| format!("ML.NET's output: {e}"))?;
        m.push(out["secs"].as_f64().ok_or("ML.NET's output has no time")?);
        sums.push(out["sum"].as_f64().unwrap_or(f64::NAN));
        o.push(timed(
            Command::new(cli(root))
                .arg("validate")
                .arg(&path)
                .arg("--quiet"),
        )?);
    }
    let same = sums.iter().all(|s| s.to_bits() == want.to_bits());
    let (m, o) = (median(m), median(o));
    let decoded = (rows * COLUMNS * 4) as f64 / 1e6;
    println!(
        "idv: {rows} rows of {COLUMNS} float columns ({decoded:.0} MB decoded, {:.0} MB stored, deflate, written by ML.NET's BinarySaver); sums of the values {}",
        stored as f64 / 1e6,
        if same { "equal" } else { "DIFFERENT" }
    );
    println!(
        "  ML.NET row cursor {:.0} MB/s | ours, `validate` (whole process, every core) {:.0} MB/s: {:.1}x (target 3x)",
        decoded / m,
        decoded / o,
        m / o
    );
    if !same {
        return Err(format!("ML.NET's sums {sums:?}, ours {want}"));
    }
    Ok(())
}
