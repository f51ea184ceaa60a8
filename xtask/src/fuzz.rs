//! `cargo xtask fuzz`: run the cargo-fuzz targets, or replay saved inputs.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use dataformats::core::codec::blosc;
use dataformats::core::parse;

struct Options {
    seconds: u64,
    replay: bool,
    seed: Option<u64>,
    /// Build without optimizations: a build several times quicker, for a
    /// smoke run, at the price of fewer runs a second.
    dev: bool,
    /// Targets run at once (each libFuzzer process uses one core).
    jobs: usize,
    targets: Vec<String>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        seconds: 60,
        replay: false,
        seed: None,
        dev: false,
        jobs: 1,
        targets: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a number")?;
                o.seconds = v.parse().map_err(|e| format!("--seconds {v}: {e}"))?;
            }
            "--seed" => {
                let v = it.next().ok_or("--seed needs a number")?;
                o.seed = Some(v.parse().map_err(|e| format!("--seed {v}: {e}"))?);
            }
            "--jobs" => {
                let v = it.next().ok_or("--jobs needs a number")?;
                o.jobs = v.parse().map_err(|e| format!("--jobs {v}: {e}"))?;
                if o.jobs == 0 {
                    return Err("--jobs must be at least 1".into());
                }
            }
            "--replay" => o.replay = true,
            "--dev" => o.dev = true,
            s if s.starts_with('-') => return Err(format!("fuzz: unknown option `{s}`")),
            t => o.targets.push(t.to_string()),
        }
    }
    Ok(o)
}

fn fuzz_dir() -> PathBuf {
    crate::project_root().join("fuzz")
}

/// Every target: `fuzz/fuzz_targets/<name>.rs`.
fn all_targets() -> Result<Vec<String>, String> {
    let dir = fuzz_dir().join("fuzz_targets");
    let mut v: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix(".rs").map(str::to_string)
        })
        .collect();
    v.sort();
    Ok(v)
}

fn ok(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub(crate) fn main(args: &[String]) -> Result<bool, String> {
    let opts = parse_args(args)?;
    let known = all_targets()?;
    let targets = if opts.targets.is_empty() {
        known.clone()
    } else {
        opts.targets.clone()
    };
    for t in &targets {
        if !known.contains(t) {
            return Err(format!("no fuzz target `{t}` (have: {})", known.join(", ")));
        }
    }
    if !ok(Command::new("cargo").args(["fuzz", "--version"])) {
        return Err("cargo-fuzz is not installed: run `cargo install cargo-fuzz --locked`".into());
    }
    let nightly = ok(Command::new("cargo").args(["+nightly", "--version"]));
    // A failed stable probe cached here makes later runs fail (toolchain.md).
    let _ = fs::remove_file(fuzz_dir().join("target/.rustc_info.json"));

    // Build first (its output streamed), so that the runs below, several at
    // once with their output held until each ends, only run.
    let mut build = fuzz_command("build", nightly, opts.dev);
    if let [only] = targets.as_slice() {
        build.arg(only);
    }
    build.current_dir(crate::project_root());
    let built = build
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    if !built.success() {
        return Err("fuzz: building the targets failed".into());
    }

    let mut runs = Vec::with_capacity(targets.len());
    for t in &targets {
        runs.push(prepare(t, &opts, nightly)?);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.min(runs.len()) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { return };
                    let outcome = execute(run, nightly, opts.dev);
                    // Held while this run's lines are printed, so that they
                    // stay together.
                    let mut so = std::io::stdout().lock();
                    let _ = writeln!(so, "{}", run.banner);
                    match outcome {
                        Ok(out) => {
                            let _ = so.write_all(&out.stdout);
                            let _ = so.write_all(&out.stderr);
                            if out.status.success() {
                                let _ = writeln!(so, "fuzz: {}: ok", run.target);
                                continue;
                            }
                            if new_inputs(run).is_empty() {
                                // No input saved: the target did not run
                                // (a build error, its output above).
                                let _ = writeln!(
                                    so,
                                    "fuzz: {}: FAILED without a crash input (the output above says why)",
                                    run.target
                                );
                            } else {
                                let _ = writeln!(
                                    so,
                                    "fuzz: {}: FAILED (crash inputs in {}; minimise one and save it under {})",
                                    run.target,
                                    run.artifacts.display(),
                                    run.regressions.display()
                                );
                            }
                        }
                        Err(e) => {
                            let _ = writeln!(so, "fuzz: {}: FAILED: cannot run cargo fuzz: {e}", run.target);
                        }
                    }
                    drop(so);
                    let inputs = new_inputs(run);
                    failures
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(Failure {
                            target: run.target.clone(),
                            inputs,
                        });
                }
            });
        }
    });
    let mut failures = failures
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    failures.sort_by(|a, b| a.target.cmp(&b.target));
    report(&failures, nightly, opts.dev);
    Ok(failures.is_empty())
}

/// One target's run, ready to start.
struct Run {
    target: String,
    /// The line printed before its output.
    banner: String,
    regressions: PathBuf,
    artifacts: PathBuf,
    /// The files in `artifacts` before the run.
    before: Vec<PathBuf>,
    /// What follows `cargo fuzz run TARGET`.
    args: Vec<std::ffi::OsString>,
}

/// Makes `target`'s folders (and, for a fuzzing run, its seeds) and the
/// arguments of its run.
fn prepare(target: &str, opts: &Options, nightly: bool) -> Result<Run, String> {
    let corpus = fuzz_dir().join("corpus").join(target);
    let regressions = corpus.join("regressions");
    fs::create_dir_all(&regressions).map_err(|e| format!("{}: {e}", regressions.display()))?;
    let artifacts = fuzz_dir().join("artifacts").join(target);
    fs::create_dir_all(&artifacts).map_err(|e| format!("{}: {e}", artifacts.display()))?;
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let banner;
    if opts.replay {
        args.push(regressions.clone().into());
        args.push("--".into());
        args.push("-runs=0".into());
        banner = format!(
            "fuzz: replaying {} saved input(s) of {target}",
            count_files(&regressions)
        );
    } else {
        let seeded = seed(target, &corpus)?;
        banner = format!(
            "fuzz: {target} for {}s ({}{}; {seeded} seed(s) added)",
            opts.seconds,
            if nightly {
                "nightly, AddressSanitizer"
            } else {
                "stable, no sanitizer"
            },
            if opts.dev { ", unoptimized" } else { "" }
        );
        args.push(corpus.into());
        args.push("--".into());
        args.push(format!("-max_total_time={}", opts.seconds).into());
        if let Some(seed) = opts.seed {
            args.push(format!("-seed={seed}").into());
        }
    }
    args.push("-malloc_limit_mb=256".into());
    args.push(format!("-artifact_prefix={}/", artifacts.display()).into());
    Ok(Run {
        target: target.to_string(),
        banner,
        before: files_in(&artifacts),
        regressions,
        artifacts,
        args,
    })
}

/// Runs one prepared target to its end, its output held.
fn execute(run: &Run, nightly: bool, dev: bool) -> std::io::Result<std::process::Output> {
    let mut cmd = fuzz_run(&run.target, nightly, dev);
    cmd.args(&run.args);
    cmd.current_dir(crate::project_root());
    cmd.output()
}

/// `cargo fuzz SUBCOMMAND`: nightly with AddressSanitizer, or stable
/// without a sanitizer; optimized unless `dev`.
fn fuzz_command(subcommand: &str, nightly: bool, dev: bool) -> Command {
    let mut cmd = Command::new("cargo");
    if nightly {
        cmd.arg("+nightly");
    }
    cmd.args(["fuzz", subcommand]);
    if !nightly {
        cmd.args(["-s", "none"]);
    }
    if dev {
        cmd.arg("--dev");
    }
    cmd
}

/// `cargo fuzz run TARGET` with the flags of [`fuzz_command`].
fn fuzz_run(target: &str, nightly: bool, dev: bool) -> Command {
    let mut cmd = fuzz_command("run", nightly, dev);
    cmd.arg(target);
    cmd
}

/// A target that failed, with the inputs libFuzzer saved for it during the run.
struct Failure {
    target: String,
    inputs: Vec<PathBuf>,
}

/// The inputs libFuzzer saved for `run` since it started.
fn new_inputs(run: &Run) -> Vec<PathBuf> {
    files_in(&run.artifacts)
        .into_iter()
        .filter(|p| !run.before.contains(p))
        .collect()
}

/// Every file in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Largest input whose bytes the summary prints in full.
const PRINT_INPUT_MAX: usize = 4096;

/// Prints, last, what failed and enough to reproduce it from a log alone:
/// each saved input (as hex when small) and the lines of its replay that say
/// what went wrong. CI logs are often read from the end, so this goes there.
fn report(failures: &[Failure], nightly: bool, dev: bool) {
    if failures.is_empty() {
        return;
    }
    println!("\nfuzz: {} target(s) FAILED", failures.len());
    for f in failures {
        println!("fuzz: {}: {} new input(s)", f.target, f.inputs.len());
        for p in &f.inputs {
            let bytes = fs::read(p).unwrap_or_default();
            println!("  {} ({} bytes)", p.display(), bytes.len());
            if bytes.len() <= PRINT_INPUT_MAX {
                println!("  hex: {}", hex(&bytes));
            }
            for line in replay_summary(&f.target, p, nightly, dev) {
                println!("  | {line}");
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs `target` once on `input` and keeps the lines that name the failure.
fn replay_summary(target: &str, input: &Path, nightly: bool, dev: bool) -> Vec<String> {
    let mut cmd = fuzz_run(target, nightly, dev);
    cmd.arg(input)
        .args(["--", "-runs=1", "-malloc_limit_mb=256"]);
    cmd.current_dir(crate::project_root());
    let Ok(out) = cmd.output() else {
        return vec!["(could not replay)".into()];
    };
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let mut keep: Vec<String> = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.contains("panicked at") {
            keep.push(l.to_string());
            // The panic message is on the next line.
            if let Some(m) = lines.next() {
                keep.push(m.to_string());
            }
        } else if l.contains("ERROR: ") || l.starts_with("SUMMARY:") || l.contains("==ERROR") {
            keep.push(l.to_string());
        }
    }
    keep.truncate(12);
    keep
}

fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .map(|d| d.filter_map(Result::ok).count())
        .unwrap_or(0)
}

fn vectors_dir() -> PathBuf {
    std::env::var_os("DATAFORMATS_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("../shared/vectors"))
}

/// Every file under `dir` whose name ends with `suffix`.
fn files_with_suffix(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            files_with_suffix(&p, suffix, out);
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
}

/// Writes seed inputs for `target` into `corpus` (made from our own encoders
/// and from the shared vectors); returns how many were written.
fn seed(target: &str, corpus: &Path) -> Result<usize, String> {
    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    match target {
        "core_varint" => {
            for v in [0u64, 1, 127, 128, 300, 1 << 32, u64::MAX] {
                let mut b = [0u8; 10];
                let n = parse::write_uleb128(v, &mut b);
                seeds.push((format!("leb128-{v}"), b[..n].to_vec()));
            }
            for v in [0i32, 5, 300, i32::MAX, -1] {
                let mut b = [0u8; 5];
                let n = parse::write_dotnet_7bit_i32(v, &mut b);
                let mut s = b[..n].to_vec();
                s.extend_from_slice(b"column-name");
                seeds.push((format!("dotnet-{v}"), s));
            }
            // IDV headers and tables of contents are full of 7-bit-prefixed strings.
            let mut idv = Vec::new();
            files_with_suffix(&vectors_dir().join("idv"), ".idv", &mut idv);
            idv.sort();
            for p in idv.iter().take(20) {
                if let Ok(b) = fs::read(p) {
                    let tail = b.len().saturating_sub(512);
                    seeds.push((format!("idv-tail-{}", seeds.len()), b[tail..].to_vec()));
                }
            }
        }
        "core_blosc_chunk" => {
            let data: Vec<u8> = (0..4096u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
            for comp in blosc::BloscCompressor::ALL
                .into_iter()
                .filter(|c| c.is_available())
            {
                // (Byte shuffle of 2-, 4- and 8-byte elements: the element
                // sizes our zlib path unshuffles each in its own way.)
                for (shuffle, ts) in [
                    (blosc::Shuffle::None, 1),
                    (blosc::Shuffle::Byte, 2),
                    (blosc::Shuffle::Byte, 4),
                    (blosc::Shuffle::Byte, 8),
                    (blosc::Shuffle::Bit, 4),
                ] {
                    let p = blosc::BloscParams::new(comp, 5, shuffle, ts).with_blocksize(4096);
                    if let Ok(c) = blosc::compress(&data, &p) {
                        seeds.push((format!("gen-{comp}-{}-{ts}", shuffle.name()), c));
                    }
                }
            }
            // Real chunks cut out of the Bloscpack and BLZ vectors.
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("bloscpack"), ".blp", &mut files);
            files_with_suffix(&vectors_dir().join("blz"), ".blp", &mut files);
            files.sort();
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                for (i, chunk) in chunks_in(&b).into_iter().take(4).enumerate() {
                    seeds.push((format!("vec-{}-{i}", seeds.len()), chunk.to_vec()));
                }
            }
        }
        "bloscpack_header" | "bloscpack_file" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("bloscpack"), ".blp", &mut files);
            files.sort();
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                if target == "bloscpack_header" {
                    seeds.push((
                        format!("vec-{}", seeds.len()),
                        b[..b.len().min(64)].to_vec(),
                    ));
                } else if b.len() <= 64 << 10 {
                    seeds.push((format!("vec-{}", seeds.len()), b));
                }
            }
            use dataformats::bloscpack::{WriteOptions, pack_bytes};
            let data: Vec<u8> = (0..3000u32).map(|i| (i / 7) as u8).collect();
            for (i, o) in [
                WriteOptions::default().chunk_size(1000),
                WriteOptions::default().chunk_size(700).offsets(false),
                WriteOptions::default().checksum(dataformats::core::ChecksumKind::None),
            ]
            .iter()
            .enumerate()
            {
                if let Ok(f) = pack_bytes(&data, Some(&serde_json::json!({"k": i})), o) {
                    seeds.push((format!("gen-{i}"), f));
                }
            }
        }
        "blz_meta" => {
            let root = vectors_dir().join("blz");
            let mut storages = Vec::new();
            files_with_suffix(&root, "meta/storage", &mut storages);
            storages.sort();
            for st in storages {
                let meta = st.parent().map(Path::to_path_buf).unwrap_or_default();
                if let (Ok(a), Ok(b)) = (fs::read(&st), fs::read(meta.join("sizes"))) {
                    let mut s = a;
                    s.push(0);
                    s.extend_from_slice(&b);
                    seeds.push((format!("meta-{}", seeds.len()), s));
                }
                if let Some(dir) = meta.parent()
                    && let Ok(c) = fs::read(dir.join("data/__0.blp"))
                {
                    seeds.push((format!("chunk-{}", seeds.len()), c));
                }
            }
        }
        "tbl2_header" | "tbl2_index" | "tbl2_file" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("tbl2"), ".tbl", &mut files);
            files.sort();
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                let seed = if target == "tbl2_header" {
                    b[..b.len().min(64)].to_vec()
                } else {
                    b[..b.len().min(64 << 10)].to_vec()
                };
                seeds.push((format!("vec-{}", seeds.len()), seed));
            }
        }
        "ctf" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("cntk"), ".ctf", &mut files);
            files.sort();
            for p in files.iter().take(40) {
                if let Ok(b) = fs::read(p) {
                    seeds.push((
                        format!("vec-{}", seeds.len()),
                        b[..b.len().min(4096)].to_vec(),
                    ));
                }
            }
        }
        "cntk_file" | "cntk_header" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("cntk"), ".bin", &mut files);
            files.sort();
            for p in files {
                if let Ok(b) = fs::read(&p) {
                    if target == "cntk_header" {
                        // The header without the 12-byte preamble and the footer.
                        if let Some(h) = b
                            .len()
                            .checked_sub(8)
                            .and_then(|f| b.get(f..))
                            .map(|f| i64::from_le_bytes(f.try_into().unwrap_or([0; 8])))
                            && let Some(part) = usize::try_from(h)
                                .ok()
                                .and_then(|h| b.get(h + 8..b.len() - 8))
                        {
                            seeds.push((format!("vec-{}", seeds.len()), part.to_vec()));
                        }
                    } else if b.len() <= 64 << 10 {
                        seeds.push((format!("vec-{}", seeds.len()), b));
                    }
                }
            }
        }
        "idv_file" | "idv_toc" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("idv"), ".idv", &mut files);
            files.sort();
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                if b.len() > 64 << 10 {
                    continue;
                }
                if target == "idv_file" {
                    seeds.push((format!("vec-{}", seeds.len()), b));
                    continue;
                }
                // The table of contents with the row and column counts in front.
                let field = |o: usize| {
                    b.get(o..o + 8)
                        .and_then(|x| x.try_into().ok())
                        .map(u64::from_le_bytes)
                };
                if let (Some(toc), Some(tail), Some(rows), Some(cols)) =
                    (field(24), field(32), field(40), field(48))
                    && let Some(part) = b.get(toc as usize..tail as usize)
                {
                    let mut seed = vec![rows.min(255) as u8, (cols & 0xff) as u8];
                    seed.extend_from_slice(part);
                    seeds.push((format!("vec-{}", seeds.len()), seed));
                }
            }
        }
        "mldf_file" | "mldf_descriptors" => {
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("mldf"), ".mldf", &mut files);
            files.sort();
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                if b.len() > 64 << 10 {
                    continue;
                }
                if target == "mldf_file" {
                    seeds.push((format!("vec-{}", seeds.len()), b));
                    continue;
                }
                // The descriptors, with the field and sample counts in front.
                let nf = b
                    .get(25..27)
                    .map_or(0, |x| u16::from_le_bytes([x[0], x[1]]));
                let end = 80 + 208 * usize::from(nf);
                if let Some(d) = b.get(80..end) {
                    let mut seed = vec![(nf % 8) as u8, 3];
                    seed.extend_from_slice(d);
                    seeds.push((format!("vec-{}", seeds.len()), seed));
                }
            }
        }
        "facade_import" => {
            // Small MLDF vectors converted into each table kind the target
            // picks by its first byte (Parquet in pages of a few records,
            // so that runs start inside row groups), and a few lines of
            // CSV and JSON.
            let tmp = std::env::temp_dir().join(format!("df-import-seeds-{}", std::process::id()));
            fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("mldf"), ".mldf", &mut files);
            files.sort();
            let opts = dataformats::convert::ConvertOptions {
                lossy: true,
                ..Default::default()
            };
            for p in files
                .iter()
                .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() <= 16 << 10))
                .take(6)
            {
                for (pick, ext) in ["parquet", "arrow", "arrows", "csv", "jsonl"]
                    .iter()
                    .enumerate()
                {
                    let out = tmp.join(format!("seed.{ext}"));
                    let _ = fs::remove_file(&out);
                    if dataformats::convert::convert(p, &out, &opts).is_err() {
                        continue;
                    }
                    let Ok(b) = fs::read(&out) else { continue };
                    if b.len() <= 64 << 10 {
                        let mut seed = vec![pick as u8];
                        seed.extend_from_slice(&b);
                        seeds.push((format!("{ext}-{}", seeds.len()), seed));
                    }
                }
            }
            let _ = fs::remove_dir_all(&tmp);
            seeds.push(("csv-text".into(), b"\x03a,b,c\n1,2.5,x\n2,,y\n".to_vec()));
            seeds.push((
                "jsonl-text".into(),
                b"\x04{\"a\":1,\"v\":[1.5,2]}\n{\"a\":2,\"v\":[]}\n".to_vec(),
            ));
        }
        "facade_open_bytes" | "facade_convert" => {
            // Small valid files of every format with a file form.
            for (format, suffix) in [
                ("idv", ".idv"),
                ("mldf", ".mldf"),
                ("cntk", ".bin"),
                ("tbl2", ".tbl"),
                ("bloscpack", ".blp"),
                ("ffcv", ".beton"),
            ] {
                let mut files = Vec::new();
                files_with_suffix(&vectors_dir().join(format), suffix, &mut files);
                files.sort();
                for p in files.iter().take(12) {
                    let Ok(b) = fs::read(p) else { continue };
                    if b.len() <= 64 << 10 {
                        seeds.push((format!("{format}-{}", seeds.len()), b));
                    }
                }
            }
        }
        "ffcv" => {
            // Whole small FFCV files (first byte odd), and built files
            // (first byte even) with every field type and a few samples.
            let mut files = Vec::new();
            files_with_suffix(&vectors_dir().join("ffcv"), ".beton", &mut files);
            for p in files {
                let Ok(b) = fs::read(&p) else { continue };
                if b.len() <= 64 << 10 {
                    let mut seed = vec![1u8];
                    seed.extend_from_slice(&b);
                    seeds.push((format!("file-{}", seeds.len()), seed));
                }
            }
            for types in [[1u8, 0, 3, 5, 2], [4 | 0x20, 6 | 0x38, 1, 3, 5]] {
                let mut seed = vec![0u8, 4];
                seed.extend_from_slice(&types);
                seed.push(3);
                seed.extend(std::iter::repeat_n(0u8, 512));
                seeds.push((format!("built-{}", seeds.len()), seed));
            }
        }
        "idv_codec" => {
            // Each codec name with an empty parameter list, and some rows of zeros.
            for name in [
                "SByte",
                "Byte",
                "Int16",
                "UInt16",
                "Int32",
                "UInt32",
                "Int64",
                "UInt64",
                "Single",
                "Double",
                "Boolean",
                "DvBool",
                "TextSpan",
                "TimeSpan",
                "DateTime",
                "DateTimeOffset",
                "DataViewRowId",
            ] {
                let mut seed = vec![3u8, name.len() as u8];
                seed.extend_from_slice(name.as_bytes());
                seed.push(0);
                seed.extend_from_slice(&[0u8; 64]);
                seeds.push((format!("codec-{name}"), seed));
            }
        }
        // A target without seeds of its own starts from its saved regressions.
        _ => {}
    }
    let mut n = 0;
    for (name, bytes) in seeds {
        let p = corpus.join(format!("seed-{name}"));
        if !p.exists() {
            fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Blosc chunks found in a file: every offset where a header that passes
/// validation starts and its cbytes fit.
fn chunks_in(b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 16 <= b.len() {
        if b[i] == 2
            && let Ok(h) = blosc::BloscHeader::parse(&b[i..])
        {
            let end = i.saturating_add(h.cbytes as usize);
            if end <= b.len() && blosc::validate(&b[i..end]).is_ok() {
                out.push(&b[i..end]);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out
}
