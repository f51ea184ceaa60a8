//! Any dataset as Arrow record batches, and a numeric column as an ndarray.
//! `cargo run -p dataformats --features arrow,ndarray --example to_arrow -- FILE`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: to_arrow FILE")?;
    let d = dataformats::open(&path)?;
    // Batches of 64 Ki records: memory stays bounded whatever the file size.
    let mut start = 0;
    while start < d.len() {
        let end = d.len().min(start + (1 << 16));
        let batch = dataformats::arrow::record_batch(d.as_ref(), start..end)?;
        println!("rows {start}..{end}: {} columns", batch.num_columns());
        if start == 0 {
            for f in batch.schema().fields() {
                println!("  {}: {}", f.name(), f.data_type());
            }
        }
        start = end;
    }
    // The first record's first tensor, if any, as an n-dimensional array.
    if let Some(v) = d.records(0..1)?.first().and_then(|r| r.first()) {
        if let Ok(a) = dataformats::ndarray::tensor::<f32>(v) {
            println!("first value as ndarray: shape {:?}", a.shape());
        }
    }
    Ok(())
}
