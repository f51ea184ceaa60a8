//! Partial reads of uncompressed NDARRAY values from a memory map allocate
//! nothing and hand out the file's own (8-aligned) bytes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use dataformats_core::Source;
use dataformats_mldf::{Dtype, Field, FieldType, FieldValue, Reader, Value, Writer, WriterOptions};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: AllocLayout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: AllocLayout) {
        // SAFETY: p was allocated by System with l.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn ndarray_partial_reads_are_zero_copy() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-zc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("z.mldf");
    let fields = vec![
        Field::new("label", FieldType::Int),
        Field::new(
            "x",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![4, 4],
            },
        ),
    ];
    let mut w = Writer::create(
        &p,
        fields,
        WriterOptions {
            page_size: 4096,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    for i in 0..1000u32 {
        let arr: Vec<u8> = (0..16)
            .flat_map(|k| (i as f32 + k as f32).to_le_bytes())
            .collect();
        w.add_sample(&[FieldValue::Int(i64::from(i)), FieldValue::NdArray(&arr)])
            .unwrap();
    }
    w.finish().unwrap();
    // SAFETY: the test owns the file and does not change it while mapped.
    let src = unsafe { Source::map(&p) }.unwrap();
    let map_start = src.as_slice().unwrap().as_ptr() as usize;
    let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
    let before = ALLOCS.load(Ordering::Relaxed);
    let mut sum = 0f32;
    for i in (0..1000u64).rev().step_by(7) {
        match r.value(i, 1).unwrap() {
            Value::NdArray(std::borrow::Cow::Borrowed(b)) => {
                assert_eq!(b.as_ptr() as usize % 8, 0, "allocations are 8-aligned");
                assert!(b.as_ptr() as usize > map_start, "bytes of the map itself");
                let v: &[f32] = dataformats_core::plain::cast_slice(b).unwrap();
                sum += v[15];
            }
            other => panic!("{other:?}"),
        }
        if let Value::Int(x) = r.value(i, 0).unwrap() {
            sum += x as f32;
        }
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(after - before, 0, "partial reads allocated");
    assert!(sum > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}
