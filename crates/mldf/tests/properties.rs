//! Round trips through the writer and reader over every field type,
//! nullable fields, both layouts and both flags, with and without page
//! packing; every file validates and gives back its values.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_mldf::{
    Dtype, Encoded, Field, FieldType, FieldValue, Layout, Reader, Value, Writer, WriterOptions,
};
use proptest::prelude::*;

fn png(h: u16, w: u16, extra: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    b.extend_from_slice(&u32::from(w).to_be_bytes());
    b.extend_from_slice(&u32::from(h).to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0]);
    b.extend(std::iter::repeat_n(7u8, extra));
    b
}

fn jpeg(h: u16, w: u16, extra: usize) -> Vec<u8> {
    let mut b = vec![
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46, 0xFF, 0xC0, 0x00, 0x11, 8,
    ];
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.push(3);
    b.extend(std::iter::repeat_n(1u8, 9 + extra));
    b
}

fn fields() -> Vec<Field> {
    let t = |n: &str, ty: FieldType| Field::new(n, ty.clone());
    let nt = |n: &str, ty: FieldType| Field::new(n, ty).with_nullable(true);
    vec![
        t("int", FieldType::Int),
        nt("float", FieldType::Float),
        t("bytes", FieldType::Bytes),
        nt(
            "arr",
            FieldType::NdArray {
                dtype: Dtype::F32,
                shape: vec![2, 3],
            },
        ),
        t("json", FieldType::Json),
        nt("raw", FieldType::ImageRaw),
        t("jpeg", FieldType::ImageJpeg { quality: 90 }),
        nt("png", FieldType::ImagePng),
        t("pcm", FieldType::AudioWaveform { float: false }),
        nt("flac", FieldType::AudioCompressed),
        nt("text", FieldType::TextRaw),
        t("tokens", FieldType::TextTokenized { vocab_size: 50_000 }),
    ]
}

/// Sample `i`'s values (owned parts built by the caller).
struct Owned {
    bytes: Vec<u8>,
    arr: Vec<u8>,
    json: String,
    raw: Vec<u8>,
    jpeg: Vec<u8>,
    png: Vec<u8>,
    pcm: Vec<u8>,
    flac: Vec<u8>,
    text: String,
    ids: Vec<i32>,
    missing: bool,
}

fn owned(i: u64, seed: u64) -> Owned {
    let k = ((i ^ seed) % 7) as usize;
    Owned {
        bytes: (0..k * 3).map(|x| (x as u64 ^ seed) as u8).collect(),
        arr: (0..6)
            .flat_map(|x| (x as f32 * 0.5 + i as f32).to_le_bytes())
            .collect(),
        json: format!("{{\"i\":{i},\"s\":\"é{k}\",\"l\":[1,2.5,null]}}"),
        raw: vec![(i % 251) as u8; 2 * 3 * 3],
        jpeg: jpeg(2 + k as u16, 3, k),
        png: png(1, 1 + k as u16, k),
        pcm: (0..4 * k).map(|x| x as u8).collect(),
        flac: [b"fLaC".as_slice(), &[k as u8; 5]].concat(),
        text: "ab😀".repeat(k),
        ids: (0..k as i32 * 5).map(|x| x * 1000 - 7).collect(),
        missing: (i + seed).is_multiple_of(3),
    }
}

fn values(o: &Owned) -> Vec<FieldValue<'_>> {
    vec![
        FieldValue::Int(o.bytes.len() as i64 - 3),
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::Float(-0.0)
        },
        FieldValue::Bytes(&o.bytes),
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::NdArray(&o.arr)
        },
        FieldValue::Json(&o.json),
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::Image {
                height: 2,
                width: 3,
                channels: 3,
                data: &o.raw,
            }
        },
        (FieldValue::Image {
            height: 2 + (o.jpeg.len() as u16 - 27),
            width: 3,
            channels: 3,
            data: &o.jpeg,
        }),
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::Image {
                height: 1,
                width: 1 + (o.png.len() as u16 - 29),
                channels: 3,
                data: &o.png,
            }
        },
        FieldValue::Audio {
            num_samples: o.pcm.len() as u32 / 4,
            sample_rate: 16_000,
            num_channels: 2,
            bit_depth: 16,
            codec: 0,
            data: &o.pcm,
        },
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::Audio {
                num_samples: 0,
                sample_rate: 44_100,
                num_channels: 1,
                bit_depth: 16,
                codec: 1,
                data: &o.flac,
            }
        },
        if o.missing {
            FieldValue::Missing
        } else {
            FieldValue::Text(&o.text)
        },
        FieldValue::Tokens {
            encoding: if o.ids.len().is_multiple_of(2) { 1 } else { 2 },
            ids: &o.ids,
        },
    ]
}

fn same(f: &Field, got: &Value<'_>, want: &FieldValue<'_>) -> bool {
    match (got, want) {
        (Value::Missing, FieldValue::Missing) => true,
        (Value::Int(a), FieldValue::Int(b)) => a == b,
        (Value::Float(a), FieldValue::Float(b)) => a.to_bits() == b.to_bits(),
        (Value::Bytes(a), FieldValue::Bytes(b)) | (Value::NdArray(a), FieldValue::NdArray(b)) => {
            a.as_ref() == *b
        }
        (Value::Json(a), FieldValue::Json(b)) => a == b,
        (
            Value::Image {
                height,
                width,
                channels,
                data,
                ..
            },
            FieldValue::Image {
                height: h,
                width: w,
                channels: c,
                data: d,
            },
        ) => (height, width, channels) == (h, w, c) && data.as_ref() == *d,
        (
            Value::Audio { data, codec, .. },
            FieldValue::Audio {
                data: d, codec: c, ..
            },
        ) => data.as_ref() == *d && codec == c,
        (Value::Text(a), FieldValue::Text(b)) => a == b,
        (v @ Value::Tokens { .. }, FieldValue::Tokens { ids, .. }) => {
            v.token_ids().as_deref() == Some(*ids)
        }
        _ => panic!("field {}: {got:?} vs {want:?}", f.name),
    }
}

/// 4 KiB pages and the settings given (layout A for `samples`).
fn options(
    samples: u64,
    layout_a: bool,
    compressed: bool,
    checksummed: bool,
    page_packing: bool,
) -> WriterOptions {
    WriterOptions {
        page_size: 4096,
        compressed,
        checksummed,
        layout: if layout_a {
            Layout::A {
                num_samples: samples,
            }
        } else {
            Layout::B
        },
        page_packing,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_type_round_trips(
        samples in 0u64..40,
        layout_a in any::<bool>(),
        compressed in any::<bool>(),
        checksummed in any::<bool>(),
        packing in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("df-mldf-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{seed}.mldf"));
        let opts = options(samples, layout_a, compressed, checksummed, packing);
        let mut w = Writer::create(&path, fields(), opts).unwrap();
        let data: Vec<Owned> = (0..samples).map(|i| owned(i, seed)).collect();
        for o in &data {
            w.add_sample(&values(o)).unwrap();
        }
        w.finish().unwrap();
        let r = Reader::open(&path).unwrap();
        r.validate().unwrap();
        prop_assert_eq!(r.len(), samples);
        prop_assert_eq!(r.fields(), &fields()[..]);
        for (i, o) in data.iter().enumerate() {
            for (j, want) in values(o).iter().enumerate() {
                let got = r.value(i as u64, j).unwrap();
                prop_assert!(same(&r.fields()[j], &got, want), "sample {} field {}", i, j);
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// Writes `data` sample by sample, or in blocks of `block` samples
/// encoded on threads of their own and added in order; the file's bytes.
fn written(
    dir: &std::path::Path,
    data: &[Owned],
    opts: WriterOptions,
    block: Option<usize>,
) -> Vec<u8> {
    let path = dir.join(format!("{}.mldf", block.unwrap_or(0)));
    let mut w = Writer::create(&path, fields(), opts).unwrap();
    match block {
        None => {
            for o in data {
                w.add_sample(&values(o)).unwrap();
            }
        }
        Some(n) => {
            let enc = w.encoder();
            let blocks: Vec<Encoded> = std::thread::scope(|s| {
                let handles: Vec<_> = data
                    .chunks(n)
                    .enumerate()
                    .map(|(b, part)| {
                        let enc = enc.clone();
                        s.spawn(move || {
                            let mut e = Encoded::default();
                            for (i, o) in part.iter().enumerate() {
                                enc.encode((b * n + i) as u64, &values(o), &mut e).unwrap();
                            }
                            e
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for e in &blocks {
                w.add_encoded(e).unwrap();
            }
        }
    }
    assert_eq!(w.samples(), data.len() as u64);
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Samples encoded apart, in blocks on other threads, make the file
    /// that writing them one by one makes, byte for byte.
    #[test]
    fn samples_encoded_apart_make_the_same_file(
        samples in 0u64..40,
        block in 1usize..9,
        layout_a in any::<bool>(),
        compressed in any::<bool>(),
        checksummed in any::<bool>(),
        packing in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("df-mldf-apart-{}-{seed}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = options(samples, layout_a, compressed, checksummed, packing);
        let data: Vec<Owned> = (0..samples).map(|i| owned(i, seed)).collect();
        let one = written(&dir, &data, opts, None);
        let apart = written(&dir, &data, opts, Some(block));
        prop_assert!(one == apart, "{} and {} bytes", one.len(), apart.len());
        std::fs::remove_dir(&dir).unwrap();
    }
}

/// A refused sample leaves the block as it was (the samples before it
/// are written, the error names the sample); blocks of another writer's
/// fields or compression, and more samples than layout A holds, are
/// refused before anything is written.
#[test]
fn encoded_refusals_keep_the_block() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-enc-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = WriterOptions {
        page_size: 4096,
        compressed: true,
        ..WriterOptions::default()
    };
    let data: Vec<Owned> = (0..3).map(|i| owned(i, 5)).collect();
    let want = written(&dir, &data, opts, None);
    let p = dir.join("x.mldf");
    let mut w = Writer::create(&p, fields(), opts).unwrap();
    let enc = w.encoder();
    let mut e = Encoded::default();
    enc.encode(0, &values(&data[0]), &mut e).unwrap();
    enc.encode(1, &values(&data[1]), &mut e).unwrap();
    let (n, stored) = (e.len(), e.stored_bytes());
    // Refused at the last field, after the values before it were stored.
    let mut v = values(&data[2]);
    v[11] = FieldValue::Tokens {
        encoding: 2,
        ids: &[70_000],
    };
    let err = enc.encode(2, &v, &mut e).unwrap_err().to_string();
    assert!(err.contains("sample 2") && err.contains("tokens"), "{err}");
    assert_eq!((e.len(), e.stored_bytes()), (n, stored));
    enc.encode(2, &values(&data[2]), &mut e).unwrap();
    // Another writer's blocks: other compression, other fields.
    let q = dir.join("y.mldf");
    let other = Writer::create(&q, fields(), WriterOptions::default()).unwrap();
    let mut plain = Encoded::default();
    other
        .encoder()
        .encode(0, &values(&data[0]), &mut plain)
        .unwrap();
    assert!(w.add_encoded(&plain).is_err());
    assert!(enc.encode(3, &values(&data[0]), &mut plain).is_err());
    let few = vec![Field::new("int", FieldType::Int)];
    let third = Writer::create(dir.join("z.mldf"), few, opts).unwrap();
    let mut small = Encoded::default();
    third
        .encoder()
        .encode(0, &[FieldValue::Int(1)], &mut small)
        .unwrap();
    assert!(w.add_encoded(&small).is_err());
    assert_eq!(w.samples(), 0);
    w.add_encoded(&e).unwrap();
    w.add_encoded(&Encoded::default()).unwrap();
    w.finish().unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), want);
    // Layout A: one sample too many is refused whole.
    let a = WriterOptions {
        layout: Layout::A { num_samples: 2 },
        ..opts
    };
    let mut w = Writer::create(dir.join("a.mldf"), fields(), a).unwrap();
    assert!(w.add_encoded(&e).is_err());
    assert_eq!(w.samples(), 0);
    drop((w, other, third));
    std::fs::remove_file(&p).unwrap();
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file or spill left"
    );
}

#[test]
fn refusals_write_nothing() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-mldf-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("x.mldf");
    let mut w = Writer::create(&p, fields(), WriterOptions::default()).unwrap();
    let o = owned(1, 0);
    let mut v = values(&o);
    v[0] = FieldValue::Missing; // not nullable
    assert!(w.add_sample(&v).is_err());
    let mut v = values(&o);
    v[4] = FieldValue::Json("{\"a\":1,\"a\":2}");
    assert!(w.add_sample(&v).is_err());
    let bad_png = png(5, 5, 0);
    let mut v = values(&o);
    v[7] = FieldValue::Image {
        height: 4,
        width: 5,
        channels: 3,
        data: &bad_png,
    };
    assert!(w.add_sample(&v).is_err());
    assert!(
        Writer::create(
            dir.join("y.mldf"),
            vec![Field::new("a".repeat(64), FieldType::Int)],
            WriterOptions::default()
        )
        .is_err()
    );
    w.add_sample(&values(&o)).unwrap();
    drop(w);
    assert!(!p.exists(), "a dropped writer leaves no file");
    assert!(
        std::fs::read_dir(&dir).unwrap().count() == 0,
        "nor spill files"
    );
}
