//! Conversions of tables with every kind of Arrow column, and with field
//! metadata that lies about the type, into every target: each ends in a
//! written file or a clean error, never a panic; and a file that was
//! written opens again.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Int32Array, Int64Array,
    ListArray, RecordBatch, StringArray, StructArray, UInt32Array, new_null_array,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use dataformats::convert::{ConvertOptions, Target, convert, open_input};

const ROWS: usize = 3;

fn item(dt: DataType, nullable: bool) -> Arc<Field> {
    Arc::new(Field::new("item", dt, nullable))
}

/// Columns of many Arrow types, some all-null, some with values.
fn zoo() -> Vec<(Field, ArrayRef)> {
    let mut out: Vec<(Field, ArrayRef)> = Vec::new();
    let nulls = [
        DataType::Null,
        DataType::Boolean,
        DataType::Int8,
        DataType::UInt64,
        DataType::Float16,
        DataType::Utf8,
        DataType::LargeUtf8,
        DataType::Binary,
        DataType::LargeBinary,
        DataType::FixedSizeBinary(0),
        DataType::FixedSizeBinary(16),
        DataType::Date32,
        DataType::Date64,
        DataType::Timestamp(TimeUnit::Second, Some("+02:00".into())),
        DataType::Timestamp(TimeUnit::Nanosecond, None),
        DataType::Duration(TimeUnit::Nanosecond),
        DataType::Time32(TimeUnit::Second),
        DataType::Decimal128(10, 2),
        DataType::List(item(DataType::Int32, true)),
        DataType::LargeList(item(DataType::Int32, true)),
        DataType::FixedSizeList(item(DataType::Float32, true), 0),
        DataType::FixedSizeList(item(DataType::Float32, true), 3),
        DataType::FixedSizeList(
            item(
                DataType::FixedSizeList(item(DataType::Float32, true), 2),
                true,
            ),
            2,
        ),
        DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
        ])),
        DataType::Struct(Fields::empty()),
        DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
        DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Int64)),
    ];
    for (k, dt) in nulls.into_iter().enumerate() {
        out.push((
            Field::new(format!("null{k}"), dt.clone(), true),
            new_null_array(&dt, ROWS),
        ));
    }
    out.push((
        Field::new("ints", DataType::Int32, true),
        Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)])),
    ));
    out.push((
        Field::new("text", DataType::Utf8, false),
        Arc::new(StringArray::from(vec!["a", "bcdefgh", ""])),
    ));
    out.push((
        Field::new("bytes", DataType::Binary, false),
        Arc::new(BinaryArray::from_iter_values([
            b"\xff\xd8\xff".as_slice(),
            b"",
            b"xyz",
        ])),
    ));
    let list = ListArray::new(
        item(DataType::Int32, true),
        OffsetBuffer::new(vec![0, 2, 2, 3].into()),
        Arc::new(Int32Array::from(vec![Some(1), None, Some(7)])),
        None,
    );
    out.push((
        Field::new("list", list.data_type().clone(), false),
        Arc::new(list),
    ));
    let fsl = FixedSizeListArray::new(
        item(DataType::Float32, true),
        2,
        Arc::new(Float32Array::from(vec![
            Some(1.0),
            None,
            Some(f32::NAN),
            Some(2.0),
            Some(0.1),
            Some(-0.0),
        ])),
        None,
    );
    out.push((
        Field::new("fsl", fsl.data_type().clone(), false),
        Arc::new(fsl),
    ));
    let sparse = StructArray::new(
        Fields::from(vec![
            Field::new("indices", DataType::List(item(DataType::Int64, true)), true),
            Field::new(
                "values",
                DataType::List(item(DataType::Float32, true)),
                true,
            ),
        ]),
        vec![
            Arc::new(ListArray::new(
                item(DataType::Int64, true),
                OffsetBuffer::new(vec![0, 1, 1, 3].into()),
                Arc::new(Int64Array::from(vec![Some(-5), Some(1), None])),
                None,
            )),
            Arc::new(ListArray::new(
                item(DataType::Float32, true),
                OffsetBuffer::new(vec![0, 2, 2, 2].into()),
                Arc::new(Float32Array::from(vec![1.0, 2.0])),
                None,
            )),
        ],
        None,
    );
    out.push((
        Field::new("sparse", sparse.data_type().clone(), false)
            .with_metadata(HashMap::from([("dataformats.dim".into(), "4".into())])),
        Arc::new(sparse),
    ));
    out.push((
        Field::new("keys", DataType::UInt32, true),
        Arc::new(UInt32Array::from(vec![Some(4_000_000_000), None, Some(0)])),
    ));
    out
}

/// Metadata that claims another type than the column has.
fn lies() -> Vec<(&'static str, &'static str)> {
    vec![
        ("dataformats.type", "Key<UInt32, 0-4>"),
        ("dataformats.type", "Key<Byte, 0-0>"),
        ("dataformats.type", "Vector<Single, 3>"),
        ("dataformats.type", "Vector<Key<UInt64, 0-9>, *, 2>"),
        ("dataformats.type", "DateTimeOffset"),
        ("dataformats.type", "NDARRAY<bfloat16>[2]"),
        ("dataformats.type", "NDARRAY<bfloat16>[]"),
        ("dataformats.type", "|S1"),
        ("dataformats.type", "<U1"),
        ("dataformats.type", ">c16"),
        ("dataformats.type", "[('a', '<i4'), ('b', '<f8')]"),
        ("dataformats.type", "IMAGE_JPEG<quality=90>"),
        ("dataformats.type", "AUDIO_WAVEFORM<int>"),
        ("dataformats.type", "TEXT_TOKENIZED<vocab=5>"),
        ("dataformats.annotation.KeyValues", "[\"a\"]"),
        ("dataformats.annotation_type.KeyValues", "Vector<String, 7>"),
        ("dataformats.dim", "0"),
        ("ARROW:extension:name", "arrow.fixed_shape_tensor"),
        ("ARROW:extension:metadata", "{\"shape\":[5,5]}"),
        ("ARROW:extension:name", "arrow.json"),
    ]
}

fn ipc(path: &std::path::Path, b: &RecordBatch) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &b.schema()).unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
}

#[test]
fn no_column_type_or_metadata_makes_a_writer_panic() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.arrow");
    let mut cases: Vec<(Field, ArrayRef)> = zoo();
    // Every lie on every column that has values.
    let valued: Vec<(Field, ArrayRef)> = cases
        .iter()
        .filter(|(_, a)| a.null_count() < a.len())
        .cloned()
        .collect();
    for (f, a) in &valued {
        for (k, v) in lies() {
            let mut md = f.metadata().clone();
            md.insert(k.to_string(), v.to_string());
            cases.push((f.clone().with_metadata(md), a.clone()));
        }
    }
    let (mut written, mut refused) = (0, 0);
    for (n, (f, a)) in cases.iter().enumerate() {
        let b =
            RecordBatch::try_new(Arc::new(Schema::new(vec![f.clone()])), vec![a.clone()]).unwrap();
        ipc(&src, &b);
        for &t in Target::ALL {
            for lossy in [false, true] {
                let out = dir
                    .path()
                    .join(format!("out{n}-{}-{lossy}.{}", t.name(), t.extension()));
                let opts = ConvertOptions {
                    to: Some(t),
                    lossy,
                    ..Default::default()
                };
                match convert(&src, &out, &opts) {
                    Ok(_) => {
                        written += 1;
                        if t == Target::JsonLines {
                            continue;
                        }
                        // What was written opens and reads again.
                        let mut inp =
                            open_input(&out, &ConvertOptions::default()).unwrap_or_else(|e| {
                                panic!("{f:?} -> {}: written but not readable: {e}", t.name())
                            });
                        while let Some(b) = inp.stream.next_batch() {
                            b.unwrap_or_else(|e| {
                                panic!("{f:?} -> {}: written but not readable: {e}", t.name())
                            });
                        }
                    }
                    Err(e) => {
                        refused += 1;
                        assert!(!e.to_string().is_empty());
                        assert!(!out.exists(), "{f:?} -> {}: refused, yet written", t.name());
                    }
                }
                if out.is_dir() {
                    std::fs::remove_dir_all(&out).unwrap();
                } else if out.exists() {
                    std::fs::remove_file(&out).unwrap();
                }
            }
        }
    }
    assert!(
        written > 100 && refused > 100,
        "{written} written, {refused} refused"
    );
}

/// A CBF whose chunk table claims four billion samples in its first chunk
/// (the data holds ten): converted to every target that reserves room
/// for the records it is told of (TBL v2's index, Bloscpack's offsets),
/// the conversion ends in a clean error naming the chunk and leaves no
/// file behind.
#[test]
fn a_sample_count_the_data_does_not_hold_reserves_nothing() {
    let Some(dir) = dataformats::core::testing::vectors_dir("cntk") else {
        return;
    };
    let mut bytes = std::fs::read(dir.join("cntkrepo_10x10_dense.bin")).unwrap();
    let r = dataformats::cntk::Reader::from_bytes(bytes.clone()).unwrap();
    let first = r.chunks()[0];
    // The first chunk table entry: offset 12, then its two counts.
    let mut entry = 12i64.to_le_bytes().to_vec();
    entry.extend_from_slice(&first.num_sequences.to_le_bytes());
    entry.extend_from_slice(&first.num_samples.to_le_bytes());
    let at = bytes
        .windows(16)
        .rposition(|w| w == entry.as_slice())
        .expect("the chunk table entry");
    bytes[at + 12..at + 16].copy_from_slice(&u32::MAX.to_le_bytes());
    let out = tempfile::tempdir().unwrap();
    let src = out.path().join("lying.bin");
    std::fs::write(&src, &bytes).unwrap();
    for ext in ["blp", "tbl", "mldf"] {
        let target = out.path().join(format!("o.{ext}"));
        let opts = dataformats::convert::ConvertOptions {
            lossy: true,
            ..Default::default()
        };
        let e = dataformats::convert::convert(&src, &target, &opts).unwrap_err();
        assert!(e.to_string().contains("chunk 0"), "{ext}: {e}");
        let left: Vec<_> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [std::ffi::OsString::from("lying.bin")], "{ext}");
    }
}
