//! FFCV `.beton` reading: the real files FFCV 1.0.2 wrote, a file built here
//! byte by byte (so each rule can be broken on purpose), and sweeps that cut
//! and flip bytes.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::testing::vectors_dir;
use dataformats_ffcv::ErrorKind;
use dataformats_ffcv::{ImageMode, Reader, Value};

const PAGE: u64 = 1 << 21;

/// A small FFCV file in the layout FFCV writes: fields `label` (Int),
/// `blob` (Bytes), `vec` (NDArray `<i2` shape [2]), `meta` (JSON) and `img`
/// (RGB image, raw), 3 samples, one data page.
struct Built {
    bytes: Vec<u8>,
    metadata_ptr: u64,
    row: u64,
    table: u64,
}

fn desc(type_id: u8, name: &str, args: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; 1041];
    d[0] = type_id;
    d[1..1 + name.len()].copy_from_slice(name.as_bytes());
    d[17..17 + args.len()].copy_from_slice(args);
    d
}

fn build() -> Built {
    let ns = 3u64;
    let mut nd_args = vec![0u8; 264];
    nd_args[0..8].copy_from_slice(&2u64.to_le_bytes());
    let descr = br#"[["", "<i2"]]"#;
    nd_args[256..264].copy_from_slice(&(descr.len() as u64).to_le_bytes());
    nd_args.extend_from_slice(descr);
    let descs = [
        desc(1, "label", &[]),
        desc(3, "blob", &[]),
        desc(4, "vec", &nd_args),
        desc(5, "meta", &[]),
        desc(2, "img", &[]),
    ];
    // Columns: label 0..8, blob 8..24 (align 1), vec at 24 (align 8),
    // meta 32..48, img 48..61; row rounded up to 64.
    let row = 64u64;
    let metadata_ptr = 24 + 1041 * descs.len() as u64;
    let data_ptr = (metadata_ptr + ns * row).div_ceil(PAGE) * PAGE;
    let table = data_ptr + PAGE;
    let mut f = vec![0u8; table as usize];
    f[0..2].copy_from_slice(&2u16.to_le_bytes());
    f[2..4].copy_from_slice(&(descs.len() as u16).to_le_bytes());
    f[4..8].copy_from_slice(&(PAGE as u32).to_le_bytes());
    f[8..16].copy_from_slice(&ns.to_le_bytes());
    f[16..24].copy_from_slice(&table.to_le_bytes());
    for (k, d) in descs.iter().enumerate() {
        let at = 24 + 1041 * k;
        f[at..at + 1041].copy_from_slice(d);
    }
    let mut cursor = data_ptr;
    let mut allocs = Vec::new();
    for i in 0..ns {
        let r = (metadata_ptr + i * row) as usize;
        f[r..r + 8].copy_from_slice(&(i as i64 * 10 - 7).to_le_bytes());
        let mut put = |bytes: &[u8], f: &mut Vec<u8>| {
            let p = cursor;
            f[p as usize..p as usize + bytes.len()].copy_from_slice(bytes);
            allocs.push((i, p, bytes.len() as u64));
            cursor += bytes.len() as u64;
            p
        };
        let blob: Vec<u8> = (0..(i as u8 + 1) * 5).collect();
        let p = put(&blob, &mut f);
        f[r + 8..r + 16].copy_from_slice(&p.to_le_bytes());
        f[r + 16..r + 24].copy_from_slice(&(blob.len() as u64).to_le_bytes());
        let v: Vec<u8> = [i as i16, -(i as i16)]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let p = put(&v, &mut f);
        f[r + 24..r + 32].copy_from_slice(&p.to_le_bytes());
        let json = format!("{{\"id\": {i}}}\0");
        let p = put(json.as_bytes(), &mut f);
        f[r + 32..r + 40].copy_from_slice(&p.to_le_bytes());
        f[r + 40..r + 48].copy_from_slice(&(json.len() as u64).to_le_bytes());
        let pixels = vec![i as u8; 2 * 3 * 3];
        let p = put(&pixels, &mut f);
        f[r + 48] = 1;
        f[r + 49..r + 51].copy_from_slice(&2u16.to_le_bytes());
        f[r + 51..r + 53].copy_from_slice(&3u16.to_le_bytes());
        f[r + 53..r + 61].copy_from_slice(&p.to_le_bytes());
    }
    // Reported out of pointer order, as FFCV's worker processes do.
    allocs.reverse();
    for (s, p, n) in allocs {
        f.extend_from_slice(&s.to_le_bytes());
        f.extend_from_slice(&p.to_le_bytes());
        f.extend_from_slice(&n.to_le_bytes());
    }
    Built {
        bytes: f,
        metadata_ptr,
        row,
        table,
    }
}

fn kind(bytes: Vec<u8>) -> ErrorKind {
    match Reader::from_bytes(bytes) {
        Err(e) => e.kind(),
        Ok(r) => r
            .validate()
            .map(|()| panic!("accepted"))
            .unwrap_err()
            .kind(),
    }
}

#[test]
fn built_file_reads_back() {
    let b = build();
    let r = Reader::from_bytes(b.bytes.clone()).unwrap();
    assert!(!r.alloc_table_sorted());
    assert_eq!(r.layout().row_size, b.row);
    let offsets: Vec<u64> = r.fields().iter().map(|f| f.column_offset).collect();
    assert_eq!(offsets, [0, 8, 24, 32, 48]);
    r.validate().unwrap();
    for i in 0..3u64 {
        assert_eq!(
            r.value_of(i, "label").unwrap(),
            Value::Int(i as i64 * 10 - 7)
        );
        let Value::Bytes(blob) = r.value_of(i, "blob").unwrap() else {
            panic!()
        };
        assert_eq!(blob.len() as u64, (i + 1) * 5);
        let Value::Array(v) = r.value_of(i, "vec").unwrap() else {
            panic!()
        };
        assert_eq!(
            &v[..],
            &[i as u8, 0, (-(i as i16)) as u8, (-(i as i16) >> 8) as u8]
        );
        assert_eq!(
            r.value_of(i, "meta").unwrap(),
            Value::Json(format!("{{\"id\": {i}}}").into())
        );
        match r.value_of(i, "img").unwrap() {
            Value::Image {
                mode,
                width,
                height,
                data,
            } => {
                assert_eq!((mode, width, height), (ImageMode::Raw, 2, 3));
                assert_eq!(&data[..], &[i as u8; 18][..]);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A change made to a good file.
type Edit<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

#[test]
fn each_rule_broken_gives_its_error() {
    let b = build();
    let row = |i: u64, o: u64| (b.metadata_ptr + i * b.row + o) as usize;
    let cases: Vec<(&str, Edit<'_>, ErrorKind)> = vec![
        (
            "version 3",
            Box::new(|f| f[0] = 3),
            ErrorKind::UnsupportedVersion,
        ),
        (
            "page size 4096",
            Box::new(|f| f[4..8].copy_from_slice(&4096u32.to_le_bytes())),
            ErrorKind::BadHeader,
        ),
        (
            "unfinished write",
            Box::new(|f| f[16..24].fill(0)),
            ErrorKind::BadHeader,
        ),
        (
            "table pointer past the end",
            Box::new(|f| f[16..24].copy_from_slice(&u64::MAX.to_le_bytes())),
            ErrorKind::OutOfBounds,
        ),
        (
            "too many samples",
            Box::new(|f| f[8..16].copy_from_slice(&(1u64 << 60).to_le_bytes())),
            ErrorKind::Truncated,
        ),
        (
            "too many fields",
            Box::new(|f| f[2..4].copy_from_slice(&60000u16.to_le_bytes())),
            ErrorKind::Truncated,
        ),
        (
            "custom field",
            Box::new(|f| f[24] = 255),
            ErrorKind::Unsupported,
        ),
        (
            "unknown type",
            Box::new(|f| f[24] = 9),
            ErrorKind::BadFieldDescriptor,
        ),
        (
            "duplicate name",
            Box::new(|f| {
                let d = 24 + 1041;
                f[d + 1..d + 17].fill(0);
                f[d + 1..d + 6].copy_from_slice(b"label");
            }),
            ErrorKind::BadFieldDescriptor,
        ),
        (
            "big-endian dtype",
            Box::new(|f| {
                let d = 24 + 2 * 1041 + 17 + 264;
                let at = f[d..d + 20].iter().position(|&x| x == b'<').unwrap();
                f[d + at] = b'>';
            }),
            ErrorKind::Unsupported,
        ),
        (
            "ragged table",
            Box::new(|f| f.push(0)),
            ErrorKind::BadAllocTable,
        ),
        (
            "entry of a sample that does not exist",
            Box::new(|f| f[b.table as usize] = 9),
            ErrorKind::BadAllocTable,
        ),
        (
            "entry outside the data region",
            Box::new(|f| {
                let e = b.table as usize;
                f[e + 8..e + 16].copy_from_slice(&8u64.to_le_bytes());
            }),
            ErrorKind::OutOfBounds,
        ),
        (
            "overlapping entries",
            Box::new(|f| {
                // The last entry is sample 0's blob, the first in the page.
                let e = b.table as usize + 11 * 24;
                f[e + 16..e + 24].copy_from_slice(&100u64.to_le_bytes());
            }),
            ErrorKind::Overlap,
        ),
        (
            "bytes pointer names no allocation",
            Box::new(|f| f[row(1, 8)] ^= 1),
            ErrorKind::BadValue,
        ),
        (
            "bytes size differs from its allocation",
            Box::new(|f| f[row(1, 16)] += 1),
            ErrorKind::BadValue,
        ),
        (
            "pointer of another sample",
            Box::new(|f| {
                let other = f[row(0, 8)..row(0, 16)].to_vec();
                let size = f[row(0, 16)..row(0, 24)].to_vec();
                f[row(1, 8)..row(1, 16)].copy_from_slice(&other);
                f[row(1, 16)..row(1, 24)].copy_from_slice(&size);
            }),
            ErrorKind::BadValue,
        ),
        (
            "image mode 7",
            Box::new(|f| f[row(2, 48)] = 7),
            ErrorKind::BadValue,
        ),
        (
            "raw image dimensions differ from its bytes",
            Box::new(|f| f[row(2, 49)] = 3),
            ErrorKind::BadValue,
        ),
        (
            "JSON without its NUL",
            Box::new(|f| {
                let p = u64::from_le_bytes(f[row(0, 32)..row(0, 40)].try_into().unwrap());
                let n = u64::from_le_bytes(f[row(0, 40)..row(0, 48)].try_into().unwrap());
                f[(p + n - 1) as usize] = b' ';
            }),
            ErrorKind::BadValue,
        ),
        (
            "JSON that does not parse",
            Box::new(|f| {
                let p = u64::from_le_bytes(f[row(0, 32)..row(0, 40)].try_into().unwrap());
                f[p as usize] = b'[';
            }),
            ErrorKind::BadValue,
        ),
        (
            "JSON pointing at another value's bytes",
            Box::new(|f| {
                // The JSON of sample 0 points at its (all-zero) image
                // pixels: the text is empty, which is not JSON.
                let img = f[row(0, 53)..row(0, 61)].to_vec();
                f[row(0, 32)..row(0, 40)].copy_from_slice(&img);
                f[row(0, 40)..row(0, 48)].copy_from_slice(&18u64.to_le_bytes());
            }),
            ErrorKind::BadValue,
        ),
    ];
    for (what, edit, want) in cases {
        let mut f = b.bytes.clone();
        edit(&mut f);
        assert_eq!(kind(f), want, "{what}");
    }
}

#[test]
fn duplicate_and_orphan_allocations_are_reported() {
    let b = build();
    // Sample 0's blob and JSON name the same allocation (same size), so
    // one allocation is used twice.
    let mut f = b.bytes.clone();
    let r0 = (b.metadata_ptr) as usize;
    let blob = f[r0 + 8..r0 + 24].to_vec();
    f[r0 + 32..r0 + 48].copy_from_slice(&blob);
    // The stored blob has no NUL, so make the JSON field a Bytes field.
    f[24 + 3 * 1041] = 3;
    let e = Reader::from_bytes(f).unwrap().validate().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadAllocTable, "{e}");
    assert!(e.to_string().contains("two values"), "{e}");
    // An extra allocation (in the data page, overlapping nothing) that no
    // value names.
    let mut f = b.bytes.clone();
    for x in [1u64, b.table - 64, 4] {
        f.extend_from_slice(&x.to_le_bytes());
    }
    let e = Reader::from_bytes(f).unwrap().validate().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadAllocTable, "{e}");
    assert!(e.to_string().contains("belong to no value"), "{e}");
}

#[test]
fn cut_files_fail_cleanly() {
    let b = build();
    let marks = [
        0,
        1,
        23,
        24,
        1000,
        b.metadata_ptr as usize,
        b.table as usize - 1,
        b.table as usize + 5,
        b.bytes.len() - 1,
    ];
    for cut in marks {
        assert!(
            Reader::from_bytes(b.bytes[..cut].to_vec()).is_err(),
            "prefix of {cut} bytes"
        );
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let b = build();
    let n = b.bytes.len();
    let mut spots: Vec<usize> = (0..b.metadata_ptr as usize + 3 * 64).collect();
    spots.extend(b.table as usize..n);
    spots.extend((PAGE as usize..PAGE as usize + 200).filter(|&x| x < n));
    for at in spots.into_iter().step_by(3) {
        for x in [0x01u8, 0x80, 0xFF] {
            let mut f = b.bytes.clone();
            f[at] ^= x;
            if let Ok(r) = Reader::from_bytes(f) {
                for i in 0..r.len() {
                    for j in 0..r.fields().len() {
                        let _ = r.value(i, j);
                    }
                }
                let _ = r.validate();
            }
        }
    }
}

#[test]
fn real_ffcv_files() {
    let Some(dir) = vectors_dir("ffcv") else {
        return;
    };
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "beton") {
            continue;
        }
        let side: serde_json::Value =
            serde_json::from_slice(&std::fs::read(format!("{}.json", p.display())).unwrap())
                .unwrap();
        let r = Reader::open(&p).unwrap();
        r.validate().unwrap();
        assert_eq!(r.len(), side["summary"]["num_samples"].as_u64().unwrap());
        assert_eq!(
            r.layout().row_size,
            side["summary"]["layout"]["row_size"].as_u64().unwrap()
        );
        for (i, s) in side["content"]["samples"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            if let Some(want) = s["label"].as_i64() {
                assert_eq!(r.value_of(i as u64, "label").unwrap(), Value::Int(want));
            }
        }
        // Every proper prefix that ends inside the header, descriptors or
        // metadata is refused.
        let bytes = std::fs::read(&p).unwrap();
        let meta_end = r.layout().metadata_ptr + r.len() * r.layout().row_size;
        for cut in (0..meta_end as usize).step_by(97) {
            assert!(
                Reader::from_bytes(bytes[..cut].to_vec()).is_err(),
                "{} cut at {cut}",
                p.display()
            );
        }
        seen += 1;
    }
    assert_eq!(seen, 3);
}

#[test]
fn empty_allocations_are_bounded_and_found() {
    let b = build();
    let blob0 = {
        let r = (b.metadata_ptr + 8) as usize;
        u64::from_le_bytes(b.bytes[r..r + 8].try_into().unwrap())
    };
    let with_empty = |count: usize| {
        let mut f = b.bytes.clone();
        for _ in 0..count {
            for x in [0u64, blob0, 0] {
                f.extend_from_slice(&x.to_le_bytes());
            }
        }
        f
    };
    // Two empty allocations of sample 0 where its blob starts: the file
    // opens, every value is still found, and validation names the two
    // allocations no value uses.
    let r = Reader::from_bytes(with_empty(2)).unwrap();
    for i in 0..3 {
        for j in 0..5 {
            r.value(i, j).unwrap();
        }
    }
    let e = r.validate().unwrap_err();
    assert!(
        e.to_string()
            .contains("2 of 14 allocations belong to no value"),
        "{e}"
    );
    // More empty allocations of one sample at one pointer than it has
    // fields cannot come from FFCV: refused at open (this also bounds the
    // work of every lookup).
    let e = Reader::from_bytes(with_empty(6)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadAllocTable, "{e}");
}
