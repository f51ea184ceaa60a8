//! Validate every dataset file in a directory tree, whatever its format:
//! `cargo run -p dataformats --example verify_dir -- DIR`. Exits 1 if any
//! file fails.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args().nth(1).ok_or("usage: verify_dir DIR")?;
    let (mut ok, mut bad) = (0, 0);
    let mut stack = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let p = e?.path();
            // A BLZ/bcolz directory is a dataset; other directories are walked.
            let format = dataformats::detect(&p).ok().flatten();
            if p.is_dir() && format.is_none() {
                stack.push(p);
                continue;
            }
            let Some(format) = format else { continue };
            // What `dataformats validate` prints, as a library call.
            match dataformats::describe::validate(&p, &mut |_: u64, _: u64| {}) {
                Ok(d) => {
                    ok += 1;
                    println!("ok   {:<10} {d}", format.name());
                }
                Err(e) => {
                    bad += 1;
                    println!("FAIL {:<10} {}: {e}", format.name(), p.display());
                }
            }
        }
    }
    println!("{ok} valid, {bad} failed");
    if bad > 0 {
        std::process::exit(1);
    }
    Ok(())
}
