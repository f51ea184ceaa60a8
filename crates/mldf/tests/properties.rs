//! Round trips through the writer and reader over every field type,
//! nullable fields, both layouts and both flags, with and without page
//! packing; every file validates and gives back its values.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_mldf::{
    Dtype, Field, FieldType, FieldValue, Layout, Reader, Value, Writer, WriterOptions,
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
        let opts = WriterOptions {
            page_size: 4096,
            compressed,
            checksummed,
            layout: if layout_a { Layout::A { num_samples: samples } } else { Layout::B },
            page_packing: packing,
        };
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
