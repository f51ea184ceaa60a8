//! Converts a file with the library, as `dataformats convert IN OUT` does:
//! `cargo run -p dataformats --example convert -- IN OUT [--lossy]`;
//! `--append` adds IN's bytes to the Bloscpack file OUT in place.

use dataformats::convert::{ConvertOptions, convert_with_progress};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(input), Some(output)) = (args.first(), args.get(1)) else {
        eprintln!("usage: convert IN OUT [--lossy | --append]");
        std::process::exit(2);
    };
    if args.iter().any(|a| a == "--append") {
        let opts = dataformats::bloscpack::WriteOptions::default();
        let a = dataformats::convert::direct::append(input.as_ref(), output.as_ref(), &opts)?;
        println!(
            "{output}: {} bytes appended, {} chunk(s) now",
            a.bytes, a.nchunks
        );
        return Ok(());
    }
    let opts = ConvertOptions {
        lossy: args.iter().any(|a| a == "--lossy"),
        ..Default::default()
    };
    let report = convert_with_progress(input.as_ref(), output.as_ref(), &opts, &mut |n, total| {
        eprint!("\r{n}/{total} records");
    })?;
    eprintln!();
    for c in &report.changes {
        eprintln!("note: {c}");
    }
    println!(
        "{} -> {}: {} records from {} to {}",
        input, output, report.records, report.from, report.to
    );
    Ok(())
}
