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

/// Held by every test of this file: the count is of the whole process, so
/// a test running beside the one measuring would add its own allocations.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Bytes allocated while `f` runs (the caller holds [`one_at_a_time`]).
fn allocated<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.load(Ordering::Relaxed);
    let r = f();
    (r, ALLOCATED.load(Ordering::Relaxed) - before)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-zc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn mldf_ndarray_and_idv_columns_borrow_the_map() {
    let _alone = one_at_a_time();
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

#[test]
fn bloscpack_rows_in_a_stored_chunk_borrow_the_map() {
    let _alone = one_at_a_time();
    use dataformats::bloscpack::{Reader, WriteOptions, pack_array};
    use dataformats::core::ChecksumKind;
    let dir = scratch("blp");
    // Arrays in chunks of 4 MiB stored as they are (clevel 0: Blosc
    // memcpys them), with and without a digest per chunk.
    let n = 1usize << 20;
    let bytes: Vec<u8> = (0..8 * n).map(|i| (i % 251) as u8).collect();
    let floats: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    for checksum in [ChecksumKind::None, ChecksumKind::Adler32] {
        let mut o = WriteOptions::default();
        o.clevel = 0;
        o.chunk_size = 4 << 20;
        o.checksum = checksum;

        // uint8 (no alignment needed): rows inside the second chunk are
        // the file's memory, whatever its offset.
        let path = dir.join(format!("u8-{checksum:?}.blp"));
        std::fs::write(&path, pack_array(&bytes, &o).unwrap()).unwrap();
        let d = dataformats::open(&path).unwrap();
        assert_eq!(d.len(), 8 * n as u64);
        let chunk = (4 << 20) as u64;
        let (b, got) = allocated(|| d.read_batch(None, chunk + 3..2 * chunk - 1).unwrap());
        let data = (chunk - 4) as usize;
        assert!(
            got < data / 16,
            "{checksum:?}: {got} bytes allocated for {data} bytes of rows"
        );
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::UInt8Array>()
            .unwrap();
        assert_eq!(a.len(), data);
        assert!(
            a.values()
                .iter()
                .zip(chunk + 3..)
                .all(|(&x, i)| x == (i % 251) as u8)
        );
        // Across two chunks: decoded into one buffer, same values.
        let b = d.read_batch(None, chunk - 5..chunk + 5).unwrap();
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::UInt8Array>()
            .unwrap();
        let want: Vec<u8> = (chunk - 5..chunk + 5).map(|i| (i % 251) as u8).collect();
        assert_eq!(a.values().to_vec(), want);

        // float64: shared when the chunk's data is 8-aligned in the file
        // (Arrow's alignment), else copied once.
        let path = dir.join(format!("f8-{checksum:?}.blp"));
        std::fs::write(&path, pack_array(&floats, &o).unwrap()).unwrap();
        let aligned = Reader::open(&path).unwrap().chunks()[1]
            .offset
            .is_multiple_of(8);
        let d = dataformats::open(&path).unwrap();
        let half = (n / 2) as u64;
        let (b, got) = allocated(|| d.read_batch(None, half + 3..2 * half).unwrap());
        let data = (half as usize - 3) * 8;
        let bound = if aligned { data / 16 } else { data + 4096 };
        assert!(
            got < bound,
            "{checksum:?}, aligned {aligned}: {got} bytes allocated for {data} bytes of rows"
        );
        let a = b
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        assert_eq!(a.len(), data / 8);
        assert_eq!(a.value(0), (half + 3) as f64 * 0.5);
        assert_eq!(a.value(a.len() - 1), (n - 1) as f64 * 0.5);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
