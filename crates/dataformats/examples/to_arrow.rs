//! Any dataset as typed Arrow record batches, and a numeric column as an
//! ndarray. `cargo run -p dataformats --features ndarray --example to_arrow -- FILE`.

use dataformats::ReadOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: to_arrow FILE")?;
    let d = dataformats::open(&path)?;
    // The schema is fixed for the file: every batch has exactly it.
    for f in d.schema().fields() {
        println!("  {}: {}", f.name(), f.data_type());
    }
    // Batches of 64 Ki records: memory stays bounded whatever the file size.
    let opts = ReadOptions {
        batch_size: 1 << 16,
        ..Default::default()
    };
    let mut rows = 0;
    for batch in d.reader(&opts)? {
        let batch = batch?;
        rows += batch.num_rows();
        println!("rows ..{rows}: {} columns", batch.num_columns());
    }
    // The first record's first tensor, if any, as an n-dimensional array.
    if let Some(v) = d.records(0..1)?.first().and_then(|r| r.first())
        && let Ok(a) = dataformats::ndarray::tensor::<f32>(v)
    {
        println!("first value as ndarray: shape {:?}", a.shape());
    }
    Ok(())
}
