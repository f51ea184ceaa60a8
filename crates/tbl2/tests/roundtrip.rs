//! Writer → reader round trips, and corruptions reported with the right kind and stage.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_core::Source;
use dataformats_tbl2::{
    Compression, ErrorKind, MetadataType, ReadOptions, Reader, SampleFormat, SampleInfo, Stage,
    Writer,
};
use proptest::prelude::*;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-tbl-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn anything_written_reads_back(
        samples in prop::collection::vec((prop::collection::vec(0u8..4, 0..3000), 0u8..10, any::<u16>(), any::<u16>()), 0..20),
        meta in prop::collection::vec((0usize..20, prop::collection::vec(any::<u8>(), 0..40), any::<u16>()), 0..6),
        compress in any::<bool>(),
    ) {
        let p = tmp(&format!("p{}-{}-{compress}.tbl", samples.len(), meta.len()));
        let mut w = Writer::create(&p, if compress { Compression::Lz4 } else { Compression::None }).unwrap();
        for (data, f, wd, ht) in &samples {
            w.add_sample(data, SampleInfo { format: SampleFormat(*f), width: *wd, height: *ht }).unwrap();
        }
        let mut added = Vec::new();
        for (i, payload, t) in &meta {
            if *i < samples.len() {
                w.add_metadata(*i as u64, payload, MetadataType(*t)).unwrap();
                added.push((*i, payload.clone(), *t));
            } else {
                prop_assert!(w.add_metadata(*i as u64, payload, MetadataType(*t)).is_err());
            }
        }
        w.finish().unwrap();
        let r = Reader::open(&p).unwrap();
        r.validate().unwrap();
        prop_assert_eq!(r.len(), samples.len());
        for (i, (data, f, wd, ht)) in samples.iter().enumerate() {
            prop_assert_eq!(&*r.read_sample(i).unwrap(), &data[..]);
            let e = r.entry(i).unwrap();
            prop_assert_eq!((e.format.0, e.width, e.height), (*f, *wd, *ht));
            // First block in file order wins.
            let want = added.iter().find(|(j, _, _)| *j == i).map(|(_, p, t)| (*t, p.clone()));
            let got = r.read_metadata(i).unwrap().map(|(t, p)| (t.0, p.into_owned()));
            prop_assert_eq!(got, want);
        }
        prop_assert_eq!(r.metadata_blocks().unwrap().len(), added.len());
    }
}

fn base() -> Vec<u8> {
    let p = tmp("base.tbl");
    let mut w = Writer::create(&p, Compression::Lz4).unwrap();
    w.add_sample(
        &vec![1u8; 1000],
        SampleInfo {
            format: SampleFormat::BMP,
            width: 2,
            height: 3,
        },
    )
    .unwrap();
    w.add_sample(
        b"raw bytes that do not compress",
        SampleInfo {
            format: SampleFormat::PNG,
            width: 0,
            height: 0,
        },
    )
    .unwrap();
    w.add_metadata(0, br#"{"a":1}"#, MetadataType::JSON)
        .unwrap();
    w.finish().unwrap();
    std::fs::read(&p).unwrap()
}

fn first_error(bytes: Vec<u8>, opts: ReadOptions) -> Option<(ErrorKind, Option<Stage>)> {
    let r = match Reader::with_options(Source::from_vec(bytes), opts) {
        Ok(r) => r,
        Err(e) => return Some((e.kind(), e.stage())),
    };
    r.validate().err().map(|e| (e.kind(), e.stage()))
}

fn fix_crc(b: &mut [u8]) {
    let mut h = [0u8; 64];
    h.copy_from_slice(&b[..64]);
    let crc = dataformats_tbl2::parse_header(&h)
        .unwrap()
        .compute_checksum();
    b[44..48].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn corruptions_name_kind_and_stage() {
    let b = base();
    let strict = ReadOptions::default();
    assert_eq!(first_error(b.clone(), strict), None);
    assert_eq!(
        first_error(b[..63].to_vec(), strict),
        Some((ErrorKind::TooSmall, Some(Stage::Open)))
    );
    let mut m = b.clone();
    m[3] = 1;
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::BadMagic, Some(Stage::Open)))
    );
    let mut m = b.clone();
    m[60] ^= 1;
    assert_eq!(
        first_error(m.clone(), strict),
        Some((ErrorKind::HeaderCrc, Some(Stage::Open)))
    );
    assert_eq!(
        first_error(m, strict.verify_checksums(false)),
        None,
        "reserved bytes are only CRC-covered"
    );
    let mut m = b.clone();
    m[8..16].copy_from_slice(&(u64::MAX / 8).to_le_bytes());
    fix_crc(&mut m);
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::IndexOob, Some(Stage::Open)))
    );
    // Sample 1 (raw): uncompressed_size lies.
    let mut m = b.clone();
    let e1 = 64 + 24;
    m[e1 + 12] ^= 1;
    assert_eq!(
        first_error(m.clone(), strict),
        Some((ErrorKind::UsizeMismatch, Some(Stage::ReadSample(1))))
    );
    assert_eq!(
        first_error(m, strict.strict(false)),
        None,
        "TurboLoader ignores it"
    );
    // Sample 0 (LZ4): offset past the end; offset overflow; CRC-16.
    let mut m = b.clone();
    m[64..72].copy_from_slice(&(b.len() as u64).to_le_bytes());
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::DataOob, Some(Stage::ReadSample(0))))
    );
    let mut m = b.clone();
    m[64..72].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::IndexOverflow, Some(Stage::ReadSample(0))))
    );
    let mut m = b.clone();
    m[64 + 22] ^= 0xff;
    assert_eq!(
        first_error(m.clone(), strict),
        Some((ErrorKind::Crc16, Some(Stage::ReadSample(0))))
    );
    assert_eq!(first_error(m, strict.verify_checksums(false)), None);
    let mut m = b.clone();
    m[64 + 12..64 + 16].copy_from_slice(&0u32.to_le_bytes());
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::NoUsize, Some(Stage::ReadSample(0))))
    );
    let mut m = b.clone();
    m[64 + 12..64 + 16].copy_from_slice(&999u32.to_le_bytes());
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::Lz4Error, Some(Stage::ReadSample(0))))
    );
    let mut m = b.clone();
    m[64 + 12..64 + 16].copy_from_slice(&1001u32.to_le_bytes());
    assert_eq!(
        first_error(m, strict),
        Some((ErrorKind::UsizeMismatch, Some(Stage::ReadSample(0))))
    );
    // Metadata section cut short.
    assert_eq!(
        first_error(b[..b.len() - 1].to_vec(), strict),
        Some((ErrorKind::MetadataOob, Some(Stage::Metadata)))
    );
}

/// A tar header claiming a member far larger than the tar (8 GiB here)
/// costs only the bytes that are there: the member is reported as cut
/// short, and scanning agrees.
#[test]
fn a_member_larger_than_its_tar_is_cut_short_without_allocating_its_size() {
    let mut header = [0u8; 512];
    header[..5].copy_from_slice(b"a.jpg");
    header[124..135].copy_from_slice(b"77777777777");
    header[156] = b'0';
    let mut tar = header.to_vec();
    tar.extend_from_slice(&[0xFF, 0xD8, 0xFF, 0xE0]);
    tar.extend(std::iter::repeat_n(7u8, 1000));
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-tbl2-bigtar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("x.tbl");
    let report =
        dataformats_tbl2::tar::tar_to_tbl(&mut tar.as_slice(), &out, Compression::None, 1, |_| {})
            .unwrap();
    assert_eq!(report.truncated_member.as_deref(), Some("a.jpg"));
    assert_eq!(report.samples, 0);
    let scan = dataformats_tbl2::tar::scan_tar(&mut tar.as_slice()).unwrap();
    assert_eq!(scan.truncated_member.as_deref(), Some("a.jpg"));
    assert_eq!(scan.members, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `validate` reads the samples of a large file on every core; whatever
/// samples are damaged, it reports what reading them in index order meets
/// first.
#[test]
fn validate_fails_where_a_read_in_index_order_fails_first() {
    let p = tmp("big-validate.tbl");
    let mut rng = dataformats_core::rng::SplitMix64::new(21);
    let mut w = Writer::create(&p, Compression::Lz4).unwrap();
    for i in 0..2000u32 {
        // Half compressible (LZ4-compressed), half random (stored raw).
        let data: Vec<u8> = (0..3000)
            .map(|k| {
                if i % 2 == 0 {
                    (k / 100) as u8
                } else {
                    rng.next_u64() as u8
                }
            })
            .collect();
        let info = SampleInfo {
            format: SampleFormat::RAW_U8,
            width: 1,
            height: 1,
        };
        w.add_sample(&data, info).unwrap();
    }
    w.finish().unwrap();
    let clean = std::fs::read(&p).unwrap();
    let r = Reader::open(&p).unwrap();
    r.validate().unwrap();
    let index = r.index().to_vec();
    let total: u64 = index
        .iter()
        .map(|e| u64::from(e.uncompressed_size.max(e.size)))
        .sum();
    assert!(total > 5 << 20, "{total}");
    drop(r);
    for damaged in [vec![7], vec![1999], vec![1500, 300], vec![1024, 1025]] {
        let mut bytes = clean.clone();
        for &k in &damaged {
            let e = index[k];
            let at = e.offset as usize + e.size as usize / 2;
            bytes[at] ^= 0x5A;
        }
        let q = tmp("big-validate-damaged.tbl");
        std::fs::write(&q, &bytes).unwrap();
        let r = Reader::open(&q).unwrap();
        let mut buf = Vec::new();
        let first = (0..index.len())
            .find_map(|i| r.read_sample_into(i, &mut buf).err())
            .expect("a damaged sample fails");
        let got = r.validate().unwrap_err();
        assert_eq!(got.to_string(), first.to_string(), "{damaged:?}");
        let k = *damaged.iter().min().unwrap();
        assert!(
            got.to_string().contains(&k.to_string()),
            "{damaged:?}: {got}"
        );
    }
}

/// `parse_header` on fewer than 64 bytes: `TooSmall` at offset 0, as for a
/// file shorter than its header; never a header of made-up fields.
#[test]
fn a_header_cut_short_is_too_small() {
    let mut h = [0u8; 64];
    h[..4].copy_from_slice(b"TBL\x02");
    for n in 0..64 {
        let e = dataformats_tbl2::parse_header(&h[..n]).unwrap_err();
        assert_eq!(
            (e.kind(), e.stage()),
            (ErrorKind::TooSmall, Some(Stage::Open)),
            "{n}"
        );
        assert_eq!(e.offset(), Some(0), "{n}");
    }
    assert!(dataformats_tbl2::parse_header(&h).is_ok());
}

#[test]
fn samples_encoded_on_threads_give_the_same_file() {
    // About 14 MB of samples: the first few megabytes are encoded on the
    // calling thread, the rest in groups on the pool. Sizes from empty to
    // over a group; runs that LZ4 shrinks and noise that it does not.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let samples: Vec<Vec<u8>> = (0..3000)
        .map(|i| {
            let len = match i % 7 {
                0 => 0,
                1 => (next() % 64) as usize,
                _ if i % 997 == 0 => 1_300_000,
                _ => (next() % 8000) as usize,
            };
            match i % 3 {
                0 => (0..len).map(|_| next() as u8).collect(),
                _ => (0..len).map(|k| (k / 50) as u8 ^ (i as u8)).collect(),
            }
        })
        .collect();
    let info = |i: usize| SampleInfo {
        format: SampleFormat((i % 5) as u8),
        width: i as u16,
        height: (i / 3) as u16,
    };
    let write = |compression: Compression, threads: usize, sized: bool| {
        let p = tmp(&format!("threads-{compression:?}-{threads}-{sized}.tbl"));
        let mut w = match sized {
            true => Writer::create_sized(&p, compression, samples.len() as u64).unwrap(),
            false => Writer::create(&p, compression).unwrap(),
        };
        w.set_threads(threads);
        for (i, s) in samples.iter().enumerate() {
            if i == 2000 {
                // A sample encoded by the caller lands in its place too.
                let (bytes, mut e) =
                    dataformats_tbl2::encode_sample(s, info(i), compression).unwrap();
                assert_eq!(w.add_encoded(&bytes, &mut e).unwrap(), i as u64);
            } else {
                assert_eq!(w.add_sample(s, info(i)).unwrap(), i as u64);
            }
            // Metadata for this sample, and for one added long before
            // (encoded, or still on the pool).
            if i % 11 == 0 {
                w.add_metadata(i as u64, format!("m{i}").as_bytes(), MetadataType::JSON)
                    .unwrap();
            }
            if i % 101 == 50 {
                w.add_metadata(i as u64 - 40, b"old", MetadataType(3))
                    .unwrap();
            }
        }
        w.finish().unwrap();
        std::fs::read(&p).unwrap()
    };
    for compression in [Compression::Lz4, Compression::None] {
        let one = write(compression, 1, false);
        let r = Reader::from_bytes(one.clone()).unwrap();
        r.validate().unwrap();
        assert_eq!(r.len(), samples.len());
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(&*r.read_sample(i).unwrap(), &s[..], "sample {i}");
            let e = r.entry(i).unwrap();
            assert_eq!((e.format, e.width, e.height), {
                let f = info(i);
                (f.format, f.width, f.height)
            });
            let meta = r.read_metadata(i).unwrap().map(|(_, p)| p.into_owned());
            let want = if i % 11 == 0 {
                Some(format!("m{i}").into_bytes())
            } else if i % 101 == 10 && i + 40 < samples.len() {
                Some(b"old".to_vec())
            } else {
                None
            };
            assert_eq!(meta, want, "metadata of sample {i}");
        }
        if compression == Compression::Lz4 {
            assert!(
                (0..r.len())
                    .any(|i| r.entry(i).unwrap().size < r.entry(i).unwrap().uncompressed_size),
                "some samples are stored compressed"
            );
        }
        for (threads, sized) in [(2, false), (3, false), (0, false), (1, true), (0, true)] {
            assert!(
                write(compression, threads, sized) == one,
                "{compression:?} on {threads} threads, sized {sized}"
            );
        }
    }
}

/// A writer told the number of samples ahead writes the same file, and
/// refuses to finish (leaving no file) when another number was added; a
/// number whose index the header cannot point past is refused at once.
#[test]
fn a_sized_writer_needs_the_samples_it_announced() {
    let info = SampleInfo {
        format: SampleFormat::JPEG,
        width: 3,
        height: 4,
    };
    let write = |p: &std::path::Path, announced: Option<u64>, added: u64| {
        let mut w = match announced {
            Some(n) => Writer::create_sized(p, Compression::Lz4, n).unwrap(),
            None => Writer::create(p, Compression::Lz4).unwrap(),
        };
        for i in 0..added {
            w.add_sample(&vec![i as u8; 100 + i as usize], info)
                .unwrap();
        }
        w.add_metadata(1, b"{}", MetadataType::JSON).unwrap();
        w.finish()
    };
    let (spooled, sized) = (tmp("spooled.tbl"), tmp("sized.tbl"));
    write(&spooled, None, 5).unwrap();
    write(&sized, Some(5), 5).unwrap();
    assert_eq!(
        std::fs::read(&spooled).unwrap(),
        std::fs::read(&sized).unwrap()
    );
    for added in [4, 6] {
        let p = tmp(&format!("sized-{added}.tbl"));
        let e = write(&p, Some(5), added).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(
            e.to_string().contains("5 samples were announced but"),
            "{e}"
        );
        assert!(!p.exists());
    }
    let e = Writer::create_sized(tmp("huge.tbl"), Compression::None, 1 << 40).unwrap_err();
    assert!(e.to_string().contains("at most 178956967 samples"), "{e}");
    assert!(!tmp("huge.tbl").exists());
}

/// A tar file's headers scanned by seeking say what reading it says, and
/// the file converted in place after its index (its samples counted
/// first) is the stream's conversion byte for byte, for a whole tar, one
/// cut inside a kept member, one cut inside a member's padding, and one
/// holding members that are skipped.
#[test]
fn a_tar_file_is_scanned_by_seeking_and_converted_in_place() {
    let member = |name: &str, data: &[u8]| {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        h[156] = b'0';
        let mut m = h.to_vec();
        m.extend_from_slice(data);
        m.resize(m.len().div_ceil(512) * 512, 0);
        m
    };
    let mut tar = Vec::new();
    for i in 0..40usize {
        let name = match i % 4 {
            0 => format!("{i}.jpg"),
            1 => format!("{i}.png"),
            2 => format!("{i}.txt"),
            _ => format!("{i}.bmp"),
        };
        let data: Vec<u8> = (0..i * 37).map(|k| (k / 9 + i) as u8).collect();
        tar.extend(member(&name, &data));
    }
    let whole = tar.len();
    tar.extend([0u8; 1024]);
    let dir = tmp("tars");
    std::fs::create_dir_all(&dir).unwrap();
    for (cut, truncated) in [
        (tar.len(), None),
        (whole - 600, Some("39.bmp")),
        (whole - 10, None),
        (5120 + 50, Some("5.png")),
    ] {
        let part = &tar[..cut];
        let path = dir.join(format!("t{cut}.tar"));
        std::fs::write(&path, part).unwrap();
        let scan = dataformats_tbl2::tar::scan_tar_file(&path).unwrap();
        assert_eq!(
            scan,
            dataformats_tbl2::tar::scan_tar(&mut &part[..]).unwrap(),
            "cut {cut}"
        );
        assert_eq!(scan.truncated_member.as_deref(), truncated, "cut {cut}");
        let (streamed, in_place) = (
            dir.join(format!("s{cut}.tbl")),
            dir.join(format!("f{cut}.tbl")),
        );
        let a = dataformats_tbl2::tar::tar_to_tbl(
            &mut &part[..],
            &streamed,
            Compression::Lz4,
            1,
            |_| {},
        )
        .unwrap();
        let b =
            dataformats_tbl2::tar::convert_tar_file(&path, &in_place, Compression::Lz4, 2, |_| {})
                .unwrap();
        assert_eq!(a, b, "cut {cut}");
        assert_eq!(a.samples, scan.samples.values().sum::<u64>(), "cut {cut}");
        assert!(a.samples > 0 && a.skipped > 0, "cut {cut}: {a:?}");
        assert_eq!(
            std::fs::read(&streamed).unwrap(),
            std::fs::read(&in_place).unwrap(),
            "cut {cut}"
        );
    }
}

/// The index reads the same from a file read by positioned reads (its
/// bytes read once), from memory and from a mapping (decoded where they
/// lie): every entry as written, by `entry`, `index().get` and
/// `index().iter`; nothing past the last one.
#[test]
fn the_index_reads_the_same_from_every_source() {
    let p = tmp("index-sources.tbl");
    let mut w = Writer::create(&p, Compression::Lz4).unwrap();
    let n = 1_000usize;
    for i in 0..n {
        let data = vec![(i % 251) as u8; 10 + i % 97];
        let info = SampleInfo {
            format: SampleFormat((i % 9) as u8),
            width: i as u16,
            height: (n - i) as u16,
        };
        w.add_sample(&data, info).unwrap();
    }
    w.add_metadata(7, b"seven", MetadataType(2)).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let sources = [
        Source::open(&p).unwrap(),
        Source::from_vec(bytes.clone()),
        // SAFETY: the file is not changed while mapped.
        unsafe { Source::map(&p).unwrap() },
    ];
    let mut seen = Vec::new();
    for src in sources {
        let r = Reader::with_options(src, ReadOptions::default()).unwrap();
        let index = r.index();
        assert_eq!((index.len(), index.is_empty()), (n, false));
        let all = index.to_vec();
        assert_eq!(all.len(), n);
        for (i, e) in all.iter().enumerate() {
            // As the bytes at its place in the file say.
            let at = 64 + 24 * i;
            assert_eq!(e.to_bytes()[8..], bytes[at + 8..at + 24]);
            assert_eq!(
                e.offset,
                u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
            );
            assert_eq!(
                (e.width, e.height, e.format.0),
                (i as u16, (n - i) as u16, (i % 9) as u8)
            );
            assert_eq!(e.has_metadata(), i == 7);
            assert_eq!(index.get(i), Some(*e));
            assert_eq!(r.entry(i).unwrap(), *e);
            assert_eq!(r.read_sample(i).unwrap().len(), 10 + i % 97);
        }
        assert_eq!(index.get(n), None);
        assert_eq!(r.entry(n).unwrap_err().kind(), ErrorKind::IndexRange);
        assert_eq!(r.filter_by_dimensions(5, (n - 5) as u16), [5]);
        r.validate().unwrap();
        seen.push(all);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
}
