//! Read one column of an ML.NET IDV file as typed values, and the same
//! numbers out of an MLDF NDARRAY field without copying:
//! `cargo run -p dataformats --example read_column -- FILE.idv COLUMN`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (path, column) = match (args.next(), args.next()) {
        (Some(p), Some(c)) => (p, c),
        _ => return Err("usage: read_column FILE.idv COLUMN".into()),
    };
    let r = dataformats::idv::Reader::open(&path)?;
    let i = r.column_index(&column).ok_or("no such live column")?;
    let ty = r
        .columns()
        .get(i)
        .and_then(|c| c.ty())
        .map(ToString::to_string)
        .unwrap_or_default();
    match r.read_column(i)? {
        dataformats::idv::Values::F32(v) => {
            let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len().max(1) as f64;
            println!("{column} ({ty}): {} values, mean {mean}", v.len());
        }
        other => {
            let first: Vec<String> = (0..other.len().min(5))
                .map(|k| dataformats::idv::render::json_value(&other, k))
                .collect();
            println!(
                "{column} ({ty}): {} values, first {}",
                other.len(),
                first.join(", ")
            );
        }
    }
    Ok(())
}
