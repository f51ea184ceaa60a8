//! Open any supported file and print its schema and first records:
//! `cargo run -p dataformats --example open_any -- FILE`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: open_any FILE")?;
    let d = dataformats::open(&path)?;
    println!(
        "{} {} with {} record(s)",
        d.format().name(),
        d.version(),
        d.len()
    );
    for c in d.columns() {
        println!("  {:<20} {:<24} shape {:?}", c.name, c.ty, c.shape);
    }
    for i in 0..d.len().min(3) {
        let r = d.record(i)?;
        let shown: Vec<String> = r
            .iter()
            .map(|v| v.to_json().chars().take(60).collect())
            .collect();
        println!("  #{i}: {}", shown.join(" | "));
    }
    Ok(())
}
