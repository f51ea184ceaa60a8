//! The typed Arrow view and ndarray views over the shared vectors.

#![cfg(feature = "ndarray")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_schema::DataType;
use dataformats::core::testing::vectors_dir;

fn valid(format: &str, ext: &str) -> Vec<std::path::PathBuf> {
    dataformats::core::testing::vector_files(format, ext)
        .into_iter()
        .filter_map(|(p, ok)| ok.then_some(p))
        .collect()
}

#[test]
fn every_mldf_vector_exports_a_batch_with_its_nulls() {
    let mut seen = 0;
    for p in valid("mldf", "mldf") {
        let d = dataformats::open(&p).unwrap();
        let b = d
            .read_batch(None, 0..d.len())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(b.num_rows() as u64, d.len(), "{}", p.display());
        assert_eq!(b.num_columns(), d.columns().len(), "{}", p.display());
        // Every missing value is a null, and only those.
        let records: Vec<_> = (0..d.len()).map(|i| d.record(i).unwrap()).collect();
        for (j, c) in d.columns().iter().enumerate() {
            let missing = records
                .iter()
                .filter(|r| r[j] == dataformats::dataset::Value::Null)
                .count();
            assert_eq!(
                b.column(j).null_count(),
                missing,
                "{} {}",
                p.display(),
                c.name
            );
        }
        seen += 1;
    }
    if vectors_dir("mldf").is_some() {
        assert!(seen > 15, "{seen}");
    }
}

#[test]
fn mldf_fields_keep_their_values() {
    let Some(dir) = vectors_dir("mldf") else {
        return;
    };
    let d = dataformats::open(dir.join("nullable_missing.mldf")).unwrap();
    let b = d.read_batch(None, 0..d.len()).unwrap();
    let ints = b.column(0).as_primitive::<Int64Type>();
    let floats = b.column(3).as_primitive::<Float64Type>();
    let r = dataformats::mldf::Reader::open(dir.join("nullable_missing.mldf")).unwrap();
    for i in 0..r.len() {
        match r.value(i, 0).unwrap() {
            dataformats::mldf::Value::Int(x) => assert_eq!(ints.value(i as usize), x),
            _ => assert!(ints.is_null(i as usize)),
        }
        match r.value(i, 3).unwrap() {
            dataformats::mldf::Value::Float(x) => {
                assert_eq!(floats.value(i as usize).to_bits(), x.to_bits())
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(b.schema().field(0).data_type(), DataType::Int64));
    assert!(ints.null_count() > 0);
    assert_eq!(floats.null_count(), 0);
    assert!(matches!(b.schema().field(2).data_type(), DataType::Utf8));
    // NDARRAY [2, 3] float32: fixed-size lists of 6, a fixed-shape tensor.
    let d = dataformats::open(dir.join("ndarray_f32_2d.mldf")).unwrap();
    let b = d.read_batch(None, 1..3).unwrap();
    assert_eq!(b.num_rows(), 2);
    let f = b.schema().field(0).clone();
    assert_eq!(
        f.metadata().get("ARROW:extension:name").map(String::as_str),
        Some("arrow.fixed_shape_tensor")
    );
    assert_eq!(
        f.metadata()
            .get("ARROW:extension:metadata")
            .map(String::as_str),
        Some("{\"shape\":[2,3]}")
    );
    assert_eq!(
        f.metadata().get("dataformats.type").map(String::as_str),
        Some("NDARRAY<float32>[2,3]")
    );
    let list = b.column(0).as_fixed_size_list();
    assert_eq!(list.value_length(), 6);
    let r = dataformats::mldf::Reader::open(dir.join("ndarray_f32_2d.mldf")).unwrap();
    let want = dataformats::ndarray::mldf_ndarray::<f32>(&r, 2, 0).unwrap();
    let got = list.value(1);
    let got = got.as_primitive::<Float32Type>();
    let want: Vec<f32> = want.iter().copied().collect();
    assert_eq!(got.values().to_vec(), want);
}

#[test]
fn idv_columns_keep_their_types() {
    let mut checked = 0;
    for p in valid("idv", "idv") {
        let r = dataformats::idv::Reader::open(&p).unwrap();
        let d = dataformats::open(&p).unwrap();
        let b = d
            .read_batch(None, 0..r.len())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(b.num_rows() as u64, r.len());
        for f in b.schema().fields() {
            if r.columns().iter().filter(|c| c.name == *f.name()).count() > 1 {
                continue; // duplicate names: the reader's lookup finds another
            }
            if f.data_type() == &DataType::Int32 {
                let want = r.column::<i32>(f.name()).unwrap();
                let got = b.column_by_name(f.name()).unwrap();
                assert_eq!(got.as_primitive::<Int32Type>().values().to_vec(), want);
                checked += 1;
            }
            if f.data_type() == &DataType::Float32 {
                let want = dataformats::ndarray::idv_column::<f32>(&r, f.name()).unwrap();
                let got = b.column_by_name(f.name()).unwrap();
                let got = got.as_primitive::<Float32Type>();
                assert_eq!(got.len(), want.len());
                for (a, w) in got.values().iter().zip(want.iter()) {
                    assert_eq!(a.to_bits(), w.to_bits());
                }
                checked += 1;
            }
        }
        // A part of the rows reads only what it needs and gives that part.
        if r.len() > 3 {
            let part = d.read_batch(None, 1..3).unwrap();
            assert_eq!(part.num_rows(), 2);
            assert_eq!(part.schema(), b.schema());
        }
    }
    if vectors_dir("idv").is_some() {
        assert!(checked > 10, "{checked}");
    }
}

#[test]
fn blz_tables_export_typed_columns() {
    let Some(dir) = vectors_dir("blz") else {
        return;
    };
    let d = dataformats::open(dir.join("bcolz_table_struct")).unwrap();
    let b = d.read_batch(None, 0..100).unwrap();
    assert_eq!(b.num_rows(), 100);
    let s = b.schema();
    assert_eq!(s.field(0).data_type(), &DataType::Int64);
    assert_eq!(s.field(1).data_type(), &DataType::Float64);
    assert_eq!(
        s.field(2).data_type(),
        &DataType::Binary,
        "|S8 has no Arrow number type"
    );
    assert_eq!(s.field(3).data_type(), &DataType::Boolean);
    let t = match dataformats::bloscpack::blz::BlzDir::open(dir.join("bcolz_table_struct")).unwrap()
    {
        dataformats::bloscpack::blz::BlzDir::Table(t) => t,
        _ => panic!("a table"),
    };
    let ids = dataformats::ndarray::blz_array::<i64>(&t.columns()[0]).unwrap();
    let got = b.column(0).as_primitive::<Int64Type>();
    for i in 0..100 {
        assert_eq!(got.value(i), ids[[i]]);
    }
}

#[test]
fn ndarray_views_borrow_the_file_where_they_can() {
    if let Some(dir) = vectors_dir("mldf") {
        // SAFETY: the test's vectors are read-only files nobody changes.
        let src =
            unsafe { dataformats::core::Source::map(dir.join("ndarray_f32_2d.mldf")) }.unwrap();
        let r =
            dataformats::mldf::Reader::with_options(src, dataformats::core::ReadOptions::default())
                .unwrap();
        let a = dataformats::ndarray::mldf_ndarray::<f32>(&r, 0, 0).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert!(a.is_view(), "uncompressed and mapped: a view of the file");
        let d = dataformats::open(dir.join("ndarray_f32_2d.mldf")).unwrap();
        let owned = dataformats::ndarray::tensor::<f32>(&d.record(0).unwrap()[0]).unwrap();
        assert_eq!(owned, a.to_owned());
        assert_eq!(
            dataformats::ndarray::mldf_ndarray::<f64>(&r, 0, 0)
                .unwrap_err()
                .kind(),
            "invalid_argument"
        );
    }
    if let Some(dir) = vectors_dir("cntk") {
        let r = dataformats::cntk::Reader::open(dir.join("cntkrepo_10x10_dense.bin")).unwrap();
        let v = r.chunk_view(0).unwrap();
        let dataformats::cntk::RecordView::Dense(dense) = v.record(0, 0).unwrap() else {
            panic!("dense")
        };
        let a = dataformats::ndarray::cntk_dense::<f32>(&dense).unwrap();
        assert_eq!(a.shape(), &[dense.samples as usize, dense.dim as usize]);
        assert!(a.is_view());
        assert_eq!(
            a.iter().copied().collect::<Vec<_>>(),
            dense.as_f32().unwrap().to_vec()
        );
    }
    if let Some(dir) = vectors_dir("bloscpack") {
        let r = dataformats::bloscpack::Reader::open(dir.join("f8_2d_sha256_lz4.blp")).unwrap();
        let a = dataformats::ndarray::bloscpack_array::<f64>(&r).unwrap();
        assert_eq!(a.shape(), &[100, 37]);
        let flat: Vec<f64> = r.read_array::<f64>().unwrap();
        assert_eq!(a[[3, 5]].to_bits(), flat[3 * 37 + 5].to_bits());
        // Fortran order: element [i, j] sits at j * rows + i.
        let r = dataformats::bloscpack::Reader::open(dir.join("f4_fortran_order.blp")).unwrap();
        let m = r.numpy().unwrap().clone();
        let a = dataformats::ndarray::bloscpack_array::<f32>(&r).unwrap();
        let flat: Vec<f32> = r.read_array::<f32>().unwrap();
        let rows = m.shape[0] as usize;
        assert_eq!(a[[1, 2]].to_bits(), flat[2 * rows + 1].to_bits());
        // The typed view gives the same rows as the C-order ndarray.
        let d = dataformats::open(dir.join("f4_fortran_order.blp")).unwrap();
        assert_eq!(d.len() as usize, rows);
        let b = d.read_batch(None, 1..2).unwrap();
        let row = b.column(0).as_fixed_size_list().value(0);
        let row = row.as_primitive::<Float32Type>();
        for (j, x) in row.values().iter().enumerate() {
            assert_eq!(x.to_bits(), a[[1, j]].to_bits());
        }
    }
    if let Some(dir) = vectors_dir("blz") {
        let a = match dataformats::bloscpack::blz::BlzDir::open(dir.join("bcolz_f4_2d")).unwrap() {
            dataformats::bloscpack::blz::BlzDir::Array(a) => a,
            _ => panic!("an array"),
        };
        let x = dataformats::ndarray::blz_array::<f32>(&a).unwrap();
        assert_eq!(x.shape().len(), 2);
        assert_eq!(x.shape()[0] as u64, a.len());
    }
}
