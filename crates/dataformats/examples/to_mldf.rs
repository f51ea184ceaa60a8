//! Convert a dataset of any format to MLDF through the common view, in a
//! few lines (the `dataformats convert` command does this with type checks
//! and a progress bar): every column whose values are numbers or text.
//! `cargo run -p dataformats --example to_mldf -- IN OUT.mldf`.

use dataformats::dataset::Value;
use dataformats::mldf::{Field, FieldType, FieldValue, Writer, WriterOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (input, output) = match (args.next(), args.next()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err("usage: to_mldf IN OUT.mldf".into()),
    };
    let d = dataformats::open(&input)?;
    let first = if d.is_empty() {
        Vec::new()
    } else {
        d.record(0)?
    };
    // Keep the columns whose first value is a plain number or text.
    let keep: Vec<(usize, Field)> = d
        .columns()
        .into_iter()
        .zip(&first)
        .enumerate()
        .filter_map(|(k, (c, v))| {
            let ty = match v {
                Value::Int(_) => FieldType::Int,
                Value::Float(_) => FieldType::Float,
                Value::Text(_) => FieldType::TextRaw,
                _ => return None,
            };
            Some((k, Field::new(c.name, ty).with_nullable(true)))
        })
        .collect();
    let mut w = Writer::create(
        &output,
        keep.iter().map(|(_, f)| f.clone()).collect(),
        WriterOptions::default(),
    )?;
    for i in 0..d.len() {
        let r = d.record(i)?;
        let vals: Vec<FieldValue<'_>> = keep
            .iter()
            .map(|(k, _)| match r.get(*k) {
                Some(Value::Int(x)) => FieldValue::Int(*x),
                Some(Value::Float(x)) => FieldValue::Float(*x),
                Some(Value::Text(s)) => FieldValue::Text(s),
                _ => FieldValue::Missing,
            })
            .collect();
        w.add_sample(&vals)?;
    }
    w.finish()?;
    println!(
        "{input} -> {output}: {} samples, {} fields",
        d.len(),
        keep.len()
    );
    Ok(())
}
