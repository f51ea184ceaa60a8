//! BLZ/bcolz directories we write read back, grow, shrink and keep their
//! attributes, in both layouts.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;

use dataformats_bloscpack::ErrorKind;
use dataformats_bloscpack::blz::{
    self, ArrayOptions, BlzDir, CArray, CArrayWriter, CTable, ColumnData, Layout, create_array,
    create_table,
};
use dataformats_bloscpack::dtype::Dtype;
use dataformats_core::Limits;
use dataformats_core::codec::blosc::{BloscCompressor, Shuffle};
use serde_json::json;

fn scratch(name: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-blz-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn f8(n: usize, start: usize) -> Vec<u8> {
    (start..start + n)
        .flat_map(|i| (i as f64 * 0.5).to_le_bytes())
        .collect()
}

fn dt(s: &str) -> Dtype {
    Dtype::parse_python_literal(s).unwrap()
}

#[test]
fn arrays_in_both_layouts_round_trip() {
    let dir = scratch("arrays");
    for layout in [Layout::Bcolz, Layout::Blz06] {
        let root = dir.join(layout.name());
        let data = f8(2500, 0);
        let a = create_array(
            &root,
            &dt("'<f8'"),
            &[],
            &data,
            &ArrayOptions::new(layout).chunklen(1000),
        )
        .unwrap();
        assert_eq!(a.layout(), layout);
        assert_eq!((a.len(), a.chunklen(), a.chunks().len()), (2500, 1000, 3));
        assert_eq!(
            a.chunks()[2].items,
            500,
            "leftover holds only the valid atoms"
        );
        assert_eq!(a.dtype_storage_string(), "float64");
        assert_eq!(a.read_all().unwrap(), data);
        BlzDir::with_options(&root, every_chunk()).unwrap();
        let storage = std::fs::read_to_string(root.join("meta/storage")).unwrap();
        let sizes = std::fs::read_to_string(root.join("meta/sizes")).unwrap();
        match layout {
            Layout::Bcolz => assert!(storage.starts_with(r#"{"dtype": "float64", "cparams": {"clevel": 5, "shuffle": 1, "cname": "lz4", "quantize": 0}, "chunklen": 1000"#), "{storage}"),
            Layout::Blz06 => assert!(storage.starts_with(r#"{"dtype": "float64", "bparams": {"clevel": 5, "shuffle": true}, "chunklen": 1000"#), "{storage}"),
        }
        assert!(
            sizes.starts_with(r#"{"shape": [2500], "nbytes": 20000, "cbytes": "#)
                && sizes.ends_with("}\n"),
            "{sizes}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("__attrs__")).unwrap(),
            "{}\n"
        );
        // Chunk files carry the blpk v1 header.
        let c0 = std::fs::read(root.join("data/__0.blp")).unwrap();
        assert_eq!(
            &c0[..16],
            b"blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
        );
    }
}

#[test]
fn multidimensional_strings_and_records() {
    let dir = scratch("kinds");
    let rows: Vec<u8> = (0..300u32)
        .flat_map(|i| {
            [i as f32, i as f32 + 0.5, -1.0]
                .into_iter()
                .flat_map(f32::to_le_bytes)
        })
        .collect();
    let a = create_array(
        dir.join("f4_2d"),
        &dt("'<f4'"),
        &[3],
        &rows,
        &ArrayOptions::new(Layout::Bcolz).chunklen(128),
    )
    .unwrap();
    assert_eq!(a.shape(), &[300, 3]);
    assert_eq!(a.atomsize(), 12);
    assert_eq!(
        a.chunks()[0].blosc.typesize,
        4,
        "typesize of the base dtype"
    );
    let mut two = vec![0u8; 24];
    a.read_atoms_into(127, &mut two).unwrap();
    assert_eq!(two, rows[127 * 12..129 * 12]);

    let strs: Vec<u8> = (0..50)
        .flat_map(|i| format!("s{i:07}").into_bytes())
        .collect();
    let s = create_array(
        dir.join("S8"),
        &dt("'|S8'"),
        &[],
        &strs,
        &ArrayOptions::new(Layout::Blz06),
    )
    .unwrap();
    assert_eq!(
        s.chunks()[0].blosc.typesize,
        1,
        "byte strings use typesize 1"
    );
    assert_eq!(s.read_all().unwrap(), strs);

    let rec = dt("[('a', '<i4'), ('b', '<f8')]");
    let recs: Vec<u8> = (0..10i32)
        .flat_map(|i| {
            [
                i.to_le_bytes().to_vec(),
                (f64::from(i) / 3.0).to_le_bytes().to_vec(),
            ]
            .concat()
        })
        .collect();
    let r = create_array(
        dir.join("rec"),
        &rec,
        &[],
        &recs,
        &ArrayOptions::new(Layout::Bcolz),
    )
    .unwrap();
    assert_eq!(r.dtype_storage_string(), "[('a', '<i4'), ('b', '<f8')]");
    assert_eq!(r.chunks()[0].blosc.typesize, 12);
    assert_eq!(r.read_all().unwrap(), recs);
}

#[test]
fn streaming_writer_is_atomic_and_chunked() {
    let dir = scratch("stream");
    let root = dir.join("arr");
    {
        let mut w = CArrayWriter::create(
            &root,
            &dt("'<f8'"),
            &[],
            &ArrayOptions::new(Layout::Bcolz).chunklen(100),
        )
        .unwrap();
        w.write(&f8(150, 0)).unwrap();
        // Dropped unfinished: nothing remains, not even the temporary directory.
    }
    assert!(!root.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let mut w = CArrayWriter::create(
        &root,
        &dt("'<f8'"),
        &[],
        &ArrayOptions::new(Layout::Bcolz).chunklen(100),
    )
    .unwrap();
    let all = f8(1234, 0);
    for piece in all.chunks(333) {
        w.write(piece).unwrap();
        assert!(!root.exists());
    }
    w.set_attrs(json!({"source": "test"}));
    let a = w.finish().unwrap();
    assert_eq!(a.chunks().len(), 13);
    assert_eq!(a.attrs(), &json!({"source": "test"}));
    assert_eq!(a.read_all().unwrap(), all);
    // An existing target is refused.
    assert!(
        CArrayWriter::create(&root, &dt("'<f8'"), &[], &ArrayOptions::new(Layout::Bcolz)).is_err()
    );
    // blz 0.6 cannot read zstd or bit shuffle: refused for that layout.
    assert!(
        CArrayWriter::create(
            dir.join("z"),
            &dt("'<f8'"),
            &[],
            &ArrayOptions::new(Layout::Blz06).codec(BloscCompressor::Zstd)
        )
        .is_err()
    );
    assert!(
        CArrayWriter::create(
            dir.join("b"),
            &dt("'<f8'"),
            &[],
            &ArrayOptions::new(Layout::Blz06).shuffle(Shuffle::Bit)
        )
        .is_err()
    );
}

#[test]
fn append_trim_and_attrs() {
    let dir = scratch("grow");
    for layout in [Layout::Bcolz, Layout::Blz06] {
        let root = dir.join(layout.name());
        let mut a = create_array(
            &root,
            &dt("'<f8'"),
            &[],
            &f8(250, 0),
            &ArrayOptions::new(layout).chunklen(100),
        )
        .unwrap();
        a.append(&f8(30, 250)).unwrap();
        assert_eq!((a.len(), a.chunks().len()), (280, 3));
        a.append(&f8(200, 280)).unwrap();
        assert_eq!((a.len(), a.chunks().len()), (480, 5));
        assert_eq!(a.read_all().unwrap(), f8(480, 0));
        BlzDir::with_options(&root, every_chunk()).unwrap();
        // Trim to an exact multiple, then to a partial chunk.
        a.trim(300).unwrap();
        assert_eq!((a.len(), a.chunks().len()), (300, 3));
        assert!(
            a.stale_files().is_empty(),
            "trim removes files past the end: {:?}",
            a.stale_files()
        );
        assert_eq!(a.read_all().unwrap(), f8(300, 0));
        a.trim(155).unwrap();
        assert_eq!(
            (a.len(), a.chunks().len(), a.chunks()[1].items),
            (155, 2, 55)
        );
        assert_eq!(a.read_all().unwrap(), f8(155, 0));
        assert!(a.trim(156).is_err());
        a.set_attrs(&json!({"unit": "m", "n": [1, 2]})).unwrap();
        assert_eq!(
            CArray::open(&root).unwrap().attrs(),
            &json!({"unit": "m", "n": [1, 2]})
        );
        BlzDir::with_options(&root, every_chunk()).unwrap();
        assert_eq!(
            a.append(&[0u8; 5]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
}

#[test]
fn tables_in_both_layouts() {
    let dir = scratch("tables");
    for layout in [Layout::Bcolz, Layout::Blz06] {
        let root = dir.join(layout.name());
        let ids: Vec<u8> = (0..700i64).flat_map(i64::to_le_bytes).collect();
        let names: Vec<u8> = (0..700)
            .flat_map(|i| format!("n{i:05}").into_bytes())
            .collect();
        let flags: Vec<u8> = (0..700).map(|i| u8::from(i % 3 == 0)).collect();
        let (ti, tn, tf) = (dt("'<i8'"), dt("'|S6'"), dt("'|b1'"));
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
            ColumnData {
                name: "flag",
                dtype: &tf,
                trailing: &[],
                data: &flags,
            },
        ];
        let mut t = create_table(
            &root,
            &cols,
            &json!({"title": "t"}),
            &ArrayOptions::new(layout).chunklen(256),
        )
        .unwrap();
        assert_eq!((t.layout(), t.len()), (layout, 700));
        let rootdirs = std::fs::read_to_string(root.join("__rootdirs__")).unwrap();
        match layout {
            Layout::Bcolz => assert_eq!(rootdirs, "{\"names\": [\"id\", \"name\", \"flag\"]}\n"),
            Layout::Blz06 => assert_eq!(
                rootdirs,
                "{\"names\": [\"id\", \"name\", \"flag\"], \"dirs\": {\"id\": \"id\", \"name\": \"name\", \"flag\": \"flag\"}}\n"
            ),
        }
        let rows = t.read_all().unwrap();
        assert_eq!(rows.len(), 700 * 15);
        assert_eq!(
            &rows[15..30],
            &[&1i64.to_le_bytes()[..], b"n00001", &[0]].concat()[..]
        );
        t.append(&[&5000i64.to_le_bytes(), b"extra!", &[1]])
            .unwrap();
        assert_eq!(t.len(), 701);
        assert_eq!(
            t.column("name").unwrap().read_all().unwrap()[700 * 6..],
            *b"extra!"
        );
        assert_eq!(
            t.append(&[&[0u8; 8], b"x", &[1]]).unwrap_err().kind(),
            ErrorKind::SizeMismatch
        );
        t.set_attrs(&json!({"title": "u"})).unwrap();
        assert_eq!(CTable::open(&root).unwrap().attrs(), &json!({"title": "u"}));
        BlzDir::with_options(&root, every_chunk()).unwrap();
    }
    // Mismatched column lengths are refused before anything is written.
    let (ti, tf) = (dt("'<i8'"), dt("'|b1'"));
    let bad = [
        ColumnData {
            name: "a",
            dtype: &ti,
            trailing: &[],
            data: &[0u8; 16],
        },
        ColumnData {
            name: "b",
            dtype: &tf,
            trailing: &[],
            data: &[0u8; 3],
        },
    ];
    assert!(
        create_table(
            dir.join("bad"),
            &bad,
            &json!({}),
            &ArrayOptions::new(Layout::Bcolz)
        )
        .is_err()
    );
    assert!(!dir.join("bad").exists());
}

/// Open options that decode every chunk.
fn every_chunk() -> blz::ReadOptions {
    blz::ReadOptions::default().checks(blz::Checks::EveryChunk)
}

/// Opening takes its limits and checks from `blz::ReadOptions`: a corrupt
/// chunk body passes the structure checks and fails the decode of every
/// chunk; a tight allocation limit stops the open.
#[test]
fn read_options_choose_limits_and_checks() {
    let root = scratch("opts").join("a");
    let values = f8(500, 0);
    create_array(
        &root,
        &dt("'<f8'"),
        &[],
        &values,
        &ArrayOptions::new(Layout::Bcolz).chunklen(100),
    )
    .unwrap();
    BlzDir::open(&root).unwrap();
    let tight = Limits::default().with_max_alloc(16);
    let e = BlzDir::with_options(&root, blz::ReadOptions::default().limits(tight)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LimitExceeded, "{e}");
    // Overwrite the compressed body of chunk 0 (after its 32 header bytes).
    let chunk = root.join("data").join("__0.blp");
    let mut b = std::fs::read(&chunk).unwrap();
    let body = 32 + 16;
    assert!(b.len() > body + 64, "chunk file of {} bytes", b.len());
    for x in &mut b[body..] {
        *x = 0xff;
    }
    std::fs::write(&chunk, &b).unwrap();
    BlzDir::with_options(&root, blz::ReadOptions::default()).unwrap();
    let e = BlzDir::with_options(&root, every_chunk()).unwrap_err();
    assert_eq!(e.chunk(), Some(0), "{e}");
    assert_eq!(e.path(), Some(chunk.as_path()), "{e}");
    std::fs::remove_dir_all(root.parent().unwrap()).unwrap();
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    #[test]
    fn any_array_round_trips_grows_and_shrinks(
        n in 0usize..600,
        more in 0usize..400,
        chunklen in 1u64..200,
        keep in 0usize..1000,
        bcolz in proptest::prelude::any::<bool>(),
    ) {
        let layout = if bcolz { Layout::Bcolz } else { Layout::Blz06 };
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("df-blz-prop-{}-{n}-{more}-{chunklen}-{keep}-{bcolz}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut a = create_array(&root, &dt("'<f8'"), &[], &f8(n, 0), &ArrayOptions::new(layout).chunklen(chunklen)).unwrap();
        proptest::prop_assert_eq!(a.read_all().unwrap(), f8(n, 0));
        a.append(&f8(more, n)).unwrap();
        proptest::prop_assert_eq!(a.read_all().unwrap(), f8(n + more, 0));
        let keep = keep.min(n + more);
        a.trim(keep as u64).unwrap();
        proptest::prop_assert_eq!(a.read_all().unwrap(), f8(keep, 0));
        BlzDir::with_options(&root, every_chunk()).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
    }
}
