//! Reading a fixed-width, uncompressed column as Arrow allocates nothing
//! proportional to the data: the array's buffer is the file's memory map.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::Array;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting the bytes asked for.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated while `f` runs.
fn allocated<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.load(Ordering::Relaxed);
    let r = f();
    (r, ALLOCATED.load(Ordering::Relaxed) - before)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("df-zc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn mldf_ndarray_and_idv_columns_borrow_the_map() {
    let dir = scratch("zc");
    // MLDF: 4096 samples of NDARRAY<float32>[256], uncompressed (4 MiB).
    let (n, dim) = (4096usize, 256usize);
    let path = dir.join("t.mldf");
    {
        use dataformats::mldf::{Dtype, Field, FieldType, FieldValue, Writer, WriterOptions};
        let f = Field::new(
            "x",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![dim as u64],
            },
            false,
        );
        let mut w = Writer::create(&path, vec![f], WriterOptions::default()).unwrap();
        for i in 0..n {
            let v: Vec<u8> = (0..dim)
                .flat_map(|k| ((i * dim + k) as f32).to_le_bytes())
                .collect();
            w.add_sample(&[FieldValue::NdArray(&v)]).unwrap();
        }
        w.finish().unwrap();
    }
    let d = dataformats::open(&path).unwrap();
    let cols = ["x".to_string()];
    let (b, bytes) = allocated(|| d.read_batch(Some(&cols), 0..n as u64).unwrap());
    let data = n * dim * 4;
    assert!(
        bytes < data / 16,
        "MLDF: {bytes} bytes allocated for {data} bytes of data"
    );
    let list = b
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::FixedSizeListArray>()
        .unwrap();
    let values = list.values().to_data();
    let floats = values.buffers()[0].typed_data::<f32>();
    assert_eq!(floats.len(), n * dim);
    assert_eq!(floats[5 * dim + 7], (5 * dim + 7) as f32);

    // IDV: a Byte column and a Single column in one uncompressed block.
    let path = dir.join("t.idv");
    let rows = 1 << 20;
    {
        use dataformats::idv::{
            ColumnSpec, ColumnType, Compression, ItemType, Values, Writer, WriterOptions,
        };
        let opts = WriterOptions {
            compression: Compression::None,
            rows_per_block: Some(rows as u32),
            ..Default::default()
        };
        let cols = vec![
            ColumnSpec::new("b", ColumnType::Scalar(ItemType::U8)),
            ColumnSpec::new("f", ColumnType::Scalar(ItemType::F32)),
        ];
        let mut w = Writer::create(&path, cols, opts).unwrap();
        let bytes: Vec<u8> = (0..rows).map(|i| (i % 251) as u8).collect();
        let floats: Vec<f32> = (0..rows).map(|i| i as f32).collect();
        w.write_batch(&[Values::U8(bytes), Values::F32(floats)])
            .unwrap();
        w.finish().unwrap();
    }
    let d = dataformats::open(&path).unwrap();
    let cols = ["b".to_string()];
    let (b, bytes) = allocated(|| d.read_batch(Some(&cols), 0..rows as u64).unwrap());
    assert!(
        bytes < rows / 16,
        "IDV Byte column: {bytes} bytes allocated for {rows} rows"
    );
    let a = b
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::UInt8Array>()
        .unwrap();
    assert_eq!(a.value(1000), (1000 % 251) as u8);
    // Single: shared when its block is 4-aligned in the file, else one copy.
    let cols = ["f".to_string()];
    let (b, bytes) = allocated(|| d.read_batch(Some(&cols), 10..rows as u64).unwrap());
    let a = b
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Float32Array>()
        .unwrap();
    assert_eq!(a.value(0), 10.0);
    assert_eq!(a.len(), rows - 10);
    assert!(
        bytes <= 4 * rows + 4096,
        "IDV Single column: at most one copy ({bytes} bytes)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
