//! Our writer reproduces every valid vector byte for byte from the values
//! read from it and the options in its header (`vectors/mldf/README.md`,
//! "Rewriting the valid vectors"), in both layouts and with both flags.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_mldf::format::{FLAG_CHECKSUMMED, FLAG_COMPRESSED};
use dataformats_mldf::{FieldType, FieldValue, Layout, Reader, Value, Writer, WriterOptions};

fn to_field_value<'a>(v: &'a Value<'a>, ids: &'a [i32]) -> FieldValue<'a> {
    match v {
        Value::Missing => FieldValue::Missing,
        Value::Int(x) => FieldValue::Int(*x),
        Value::Float(x) => FieldValue::Float(*x),
        Value::Bytes(b) => FieldValue::Bytes(b),
        Value::NdArray(b) => FieldValue::NdArray(b),
        Value::Json(t) => FieldValue::Json(t),
        Value::Image {
            height,
            width,
            channels,
            data,
            ..
        } => FieldValue::Image {
            height: *height,
            width: *width,
            channels: *channels,
            data,
        },
        Value::Audio {
            num_samples,
            sample_rate,
            num_channels,
            bit_depth,
            codec,
            data,
        } => FieldValue::Audio {
            num_samples: *num_samples,
            sample_rate: *sample_rate,
            num_channels: *num_channels,
            bit_depth: *bit_depth,
            codec: *codec,
            data,
        },
        Value::Text(t) => FieldValue::Text(t),
        Value::Tokens { encoding, .. } => FieldValue::Tokens {
            encoding: *encoding,
            ids,
        },
        Value::Opaque(_) => panic!("opaque"),
    }
}

#[test]
fn valid_vectors_are_rewritten_byte_for_byte() {
    let Some(dir) = dataformats_core::testing::vectors_dir("mldf") else {
        return;
    };
    let out_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-rw-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("invalid")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mldf"))
        .collect();
    paths.sort();
    let mut n = 0;
    for p in paths {
        let Ok(r) = Reader::open(&p) else { continue };
        if r.validate().is_err()
            || r.header().version_minor != 0
            || r.fields()
                .iter()
                .any(|f| matches!(f.ty, FieldType::Opaque { .. }))
        {
            continue;
        }
        let h = *r.header();
        let opts = WriterOptions {
            page_size: h.page_size,
            compressed: h.flags & FLAG_COMPRESSED != 0,
            checksummed: h.flags & FLAG_CHECKSUMMED != 0,
            layout: if h.metadata_ptr < h.data_ptr {
                Layout::A {
                    num_samples: h.num_samples,
                }
            } else {
                Layout::B
            },
            page_packing: false,
        };
        let ours = out_dir.join(p.file_name().unwrap());
        let mut w = Writer::create(&ours, r.fields().to_vec(), opts).unwrap();
        for i in 0..r.len() {
            let vals: Vec<Value<'_>> = (0..r.fields().len())
                .map(|j| r.value(i, j).unwrap())
                .collect();
            let ids: Vec<Vec<i32>> = vals
                .iter()
                .map(|v| v.token_ids().unwrap_or_default())
                .collect();
            let fv: Vec<FieldValue<'_>> = vals
                .iter()
                .zip(&ids)
                .map(|(v, ids)| to_field_value(v, ids))
                .collect();
            w.add_sample(&fv)
                .unwrap_or_else(|e| panic!("{}: sample {i}: {e}", p.display()));
        }
        w.finish().unwrap();
        dataformats_core::testing::assert_same_file(&ours, &p);
        n += 1;
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    assert!(n >= 19, "only {n} vectors rewritten");
}
