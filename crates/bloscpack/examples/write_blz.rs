//! Writes a small bcolz array, a bcolz table, and a blz 0.6 array into the
//! directory given on the command line, then appends to the array and trims
//! it, the way a data pipeline would.
//!
//! `cargo run -p dataformats-bloscpack --example write_blz -- OUT_DIR`

#![allow(clippy::unwrap_used)]

use dataformats_bloscpack::blz::{ArrayOptions, ColumnData, Layout, create_array, create_table};
use dataformats_bloscpack::dtype::Dtype;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).ok_or("usage: write_blz OUT_DIR")?;
    let out = std::path::Path::new(&out);
    std::fs::create_dir_all(out)?;
    let f8 = Dtype::parse_python_literal("'<f8'")?;
    let values: Vec<u8> = (0..2500)
        .flat_map(|i| (f64::from(i) * 0.25).to_le_bytes())
        .collect();

    let mut a = create_array(
        out.join("bcolz_array"),
        &f8,
        &[],
        &values,
        &ArrayOptions::new(Layout::Bcolz).chunklen(1000),
    )?;
    let more: Vec<u8> = (2500..2600)
        .flat_map(|i| (f64::from(i) * 0.25).to_le_bytes())
        .collect();
    a.append(&more)?;
    a.set_attrs(&json!({"units": "seconds"}))?;
    println!(
        "bcolz array: {} rows in {} chunk files",
        a.len(),
        a.chunks().len()
    );

    let b = create_array(
        out.join("blz_array"),
        &f8,
        &[],
        &values,
        &ArrayOptions::new(Layout::Blz06).chunklen(1000),
    )?;
    println!("blz array: {} rows", b.len());

    let ids: Vec<u8> = (0..1000i64).flat_map(i64::to_le_bytes).collect();
    let names: Vec<u8> = (0..1000)
        .flat_map(|i| format!("n{i:05}").into_bytes())
        .collect();
    let (ti, tn) = (
        Dtype::parse_python_literal("'<i8'")?,
        Dtype::parse_python_literal("'|S6'")?,
    );
    let cols = [
        ColumnData {
            name: "id",
            dtype: &ti,
            trailing: &[],
            data: &ids,
        },
        ColumnData {
            name: "name",
            dtype: &tn,
            trailing: &[],
            data: &names,
        },
    ];
    for (layout, dir) in [(Layout::Bcolz, "bcolz_table"), (Layout::Blz06, "blz_table")] {
        let t = create_table(
            out.join(dir),
            &cols,
            &json!({"title": "demo"}),
            &ArrayOptions::new(layout).chunklen(300),
        )?;
        println!("{dir}: {} rows, columns {:?}", t.len(), t.names());
    }
    Ok(())
}
