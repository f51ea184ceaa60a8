//! Writer → reader round trips, streaming, ranges and appends.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::io::Cursor;

use dataformats_bloscpack::{
    ErrorKind, MetadataOptions, ReadOptions, Reader, WriteOptions, Writer, append, pack_array,
    pack_bytes,
};
use dataformats_core::ChecksumKind;
use dataformats_core::codec::blosc::{BloscCompressor, Shuffle};
use proptest::prelude::*;
use serde_json::json;

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i / 7) ^ (i % 13)) as u8).collect()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-blp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn options() -> impl Strategy<Value = WriteOptions> {
    (
        prop::sample::select(vec![
            BloscCompressor::BloscLz,
            BloscCompressor::Lz4,
            BloscCompressor::Lz4Hc,
            BloscCompressor::Zlib,
            BloscCompressor::Zstd,
        ]),
        0u8..=9,
        prop::sample::select(vec![Shuffle::None, Shuffle::Byte, Shuffle::Bit]),
        1usize..=16,
        prop::sample::select(vec![1usize, 7, 100, 1000, 4096]),
        prop::sample::select(
            ChecksumKind::ALL
                .iter()
                .copied()
                .filter(|k| *k != ChecksumKind::Crc16Modbus)
                .collect::<Vec<_>>(),
        ),
        any::<bool>(),
        prop::option::of(0u64..5),
    )
        .prop_map(
            |(codec, clevel, shuffle, ts, chunk, checksum, offsets, max_app)| {
                let mut o = WriteOptions::default()
                    .codec(codec)
                    .clevel(clevel)
                    .shuffle(shuffle)
                    .typesize(ts)
                    .chunk_size(chunk)
                    .checksum(checksum)
                    .offsets(offsets);
                if let Some(m) = max_app {
                    o = o.max_app_chunks(m);
                }
                o
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn anything_written_reads_back(bytes in prop::collection::vec(any::<u8>(), 0..6000), o in options(), with_meta in any::<bool>()) {
        let meta = json!({"name": "prop", "µ": [1, 2.5, null]});
        let file = pack_bytes(&bytes, with_meta.then_some(&meta), &o).unwrap();
        let r = Reader::from_bytes(file).unwrap();
        r.validate().unwrap();
        prop_assert_eq!(r.read_all().unwrap(), bytes.clone());
        if with_meta {
            prop_assert_eq!(&r.metadata().unwrap().value, &meta);
        }
        if !bytes.is_empty() {
            let a = bytes.len() / 3;
            let b = (bytes.len() * 2 / 3).max(a);
            let mut part = vec![0u8; b - a];
            r.read_range_into(a as u64, &mut part).unwrap();
            prop_assert_eq!(&part[..], &bytes[a..b]);
        }
    }

    #[test]
    fn streaming_in_any_pieces_is_the_same_file(bytes in prop::collection::vec(any::<u8>(), 0..5000), cut in prop::collection::vec(0usize..5000, 0..6)) {
        let o = WriteOptions::default().chunk_size(777);
        let whole = pack_bytes(&bytes, None, &o).unwrap();
        let mut w = Writer::new(Cursor::new(Vec::new()), bytes.len() as u64, None, &o).unwrap();
        let mut cuts: Vec<usize> = cut.into_iter().map(|c| c.min(bytes.len())).collect();
        cuts.sort_unstable();
        let mut prev = 0;
        for c in cuts.into_iter().chain([bytes.len()]) {
            w.write_payload(&bytes[prev..c]).unwrap();
            prev = c;
        }
        prop_assert_eq!(w.finish().unwrap().into_inner(), whole);
    }
}

#[test]
fn reference_chunking_and_header_values() {
    let o = WriteOptions::default().chunk_size(2000);
    let r = Reader::from_bytes(pack_bytes(&data(5800), None, &o).unwrap()).unwrap();
    let h = r.header();
    assert_eq!(
        (h.chunk_size, h.last_chunk, h.nchunks, h.max_app_chunks),
        (2000, 1800, 3, 30)
    );
    assert_eq!(h.typesize, 8);
    assert_eq!(h.checksum, ChecksumKind::Adler32);
    // Input no larger than the chunk size: one chunk of exactly the input.
    let r = Reader::from_bytes(pack_bytes(&data(500), None, &WriteOptions::default()).unwrap())
        .unwrap();
    assert_eq!(
        (
            r.header().chunk_size,
            r.header().last_chunk,
            r.header().nchunks
        ),
        (500, 500, 1)
    );
    // Empty input: one empty 16-byte chunk.
    let r = Reader::from_bytes(pack_bytes(&[], None, &WriteOptions::default()).unwrap()).unwrap();
    assert_eq!(
        (
            r.header().chunk_size,
            r.header().last_chunk,
            r.header().nchunks
        ),
        (0, 0, 1)
    );
    assert_eq!(r.chunks()[0].blosc.cbytes, 16);
    assert_eq!(r.read_all().unwrap(), Vec::<u8>::new());
    // No offsets: max_app_chunks is 0 whatever was asked.
    let r = Reader::from_bytes(
        pack_bytes(
            &data(100),
            None,
            &WriteOptions::default().offsets(false).max_app_chunks(9),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (r.header().has_offsets(), r.header().max_app_chunks),
        (false, 0)
    );
}

#[test]
fn metadata_is_compact_ascii_json_with_reference_sizes() {
    let meta = json!({"unit": "µm", "n": 1});
    let r = Reader::from_bytes(pack_bytes(b"abc", Some(&meta), &WriteOptions::default()).unwrap())
        .unwrap();
    let m = r.metadata().unwrap();
    assert_eq!(m.json_text, r#"{"unit":"\u00b5m","n":1}"#);
    assert_eq!(m.header.meta_size as usize, m.json_text.len());
    assert_eq!(m.header.max_meta_size, m.header.meta_size * 10);
    // Tiny metadata does not shrink under zlib: stored raw, level kept.
    assert_eq!(m.header.meta_codec, dataformats_bloscpack::MetaCodec::None);
    assert_eq!(m.header.meta_level, 6);
    let big = json!({"k": "x".repeat(500)});
    let r = Reader::from_bytes(pack_bytes(b"abc", Some(&big), &WriteOptions::default()).unwrap())
        .unwrap();
    assert_eq!(
        r.metadata().unwrap().header.meta_codec,
        dataformats_bloscpack::MetaCodec::Zlib
    );
    assert_eq!(r.metadata().unwrap().value, big);
    let o = WriteOptions::default().metadata(
        MetadataOptions::default()
            .checksum(ChecksumKind::Sha1)
            .max_meta_size(200),
    );
    let r = Reader::from_bytes(pack_bytes(b"abc", Some(&meta), &o).unwrap()).unwrap();
    assert_eq!(r.metadata().unwrap().header.max_meta_size, 200);
    assert_eq!(r.metadata().unwrap().digest.len(), 20);
}

#[test]
fn typed_arrays_round_trip_with_numpy_metadata() {
    let v: Vec<i16> = (0..3000).map(|i| (i * 7 - 1000) as i16).collect();
    let r = Reader::from_bytes(pack_array(&v, &WriteOptions::default().chunk_size(2000)).unwrap())
        .unwrap();
    let np = r.numpy().unwrap();
    assert_eq!(np.shape, vec![3000]);
    assert_eq!(np.dtype.to_string(), "<i2");
    assert_eq!(
        r.metadata().unwrap().json_text,
        r#"{"dtype":"'<i2'","shape":[3000],"order":"C","container":"numpy"}"#
    );
    assert_eq!(r.chunks()[0].blosc.typesize, 2);
    // pack_bytes with numpy metadata takes the itemsize as typesize too.
    let r2 = Reader::from_bytes(
        pack_bytes(
            &r.read_all().unwrap(),
            Some(&r.metadata().unwrap().value),
            &WriteOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (r2.header().typesize, r2.chunks()[0].blosc.typesize),
        (2, 2)
    );
    assert_eq!(r.read_array::<i16>().unwrap(), v);
    assert!(
        r.read_array::<u16>().is_err(),
        "wrong element type must be refused"
    );
    let mut three = [0u8; 6];
    r.read_elements_into(1999, 3, &mut three).unwrap();
    assert_eq!(
        three,
        [
            v[1999].to_le_bytes(),
            v[2000].to_le_bytes(),
            v[2001].to_le_bytes()
        ]
        .concat()[..]
    );
    assert!(
        pack_array(&v, &WriteOptions::default().chunk_size(1001)).is_err(),
        "chunk not a multiple of the itemsize"
    );
}

#[test]
fn file_writer_is_atomic() {
    let dir = scratch("atomic");
    let path = dir.join("x.blp");
    {
        let mut w = Writer::create(&path, 10_000, None, &WriteOptions::default()).unwrap();
        w.write_payload(&data(5000)).unwrap();
        assert!(!path.exists());
        // Dropped before finish: nothing appears.
    }
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let mut w = Writer::create(&path, 10_000, None, &WriteOptions::default()).unwrap();
    w.write_payload(&data(9999)).unwrap();
    let e = w.finish().unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::InvalidArgument,
        "short payload must fail finish"
    );
    assert!(!path.exists());
    let mut w = Writer::create(&path, 10_000, None, &WriteOptions::default()).unwrap();
    w.write_payload(&data(10_000)).unwrap();
    assert!(w.write_payload(b"x").is_err(), "more than declared");
    w.finish().unwrap();
    assert_eq!(
        Reader::open(&path).unwrap().read_all().unwrap(),
        data(10_000)
    );
}

#[test]
fn append_fills_the_last_chunk_then_uses_reserved_slots() {
    let dir = scratch("append");
    let path = dir.join("a.blp");
    let base = data(2500);
    std::fs::write(
        &path,
        pack_bytes(
            &base,
            None,
            &WriteOptions::default()
                .chunk_size(1000)
                .codec(BloscCompressor::Lz4)
                .max_app_chunks(3),
        )
        .unwrap(),
    )
    .unwrap();
    // Fits in the last chunk (500 of 1000 used).
    let more = data(300);
    assert_eq!(append(&path, &more, &WriteOptions::default()).unwrap(), 0);
    let r = Reader::open(&path).unwrap();
    r.validate().unwrap();
    assert_eq!(
        (
            r.header().nchunks,
            r.header().last_chunk,
            r.header().max_app_chunks
        ),
        (3, 800, 3)
    );
    let mut want = base.clone();
    want.extend_from_slice(&more);
    assert_eq!(r.read_all().unwrap(), want);
    // Spills into two new chunks (mixed codecs in one file).
    let more2 = data(1500);
    assert_eq!(append(&path, &more2, &WriteOptions::default()).unwrap(), 2);
    let r = Reader::open(&path).unwrap();
    r.validate().unwrap();
    assert_eq!(
        (
            r.header().nchunks,
            r.header().last_chunk,
            r.header().max_app_chunks
        ),
        (5, 300, 1)
    );
    want.extend_from_slice(&more2);
    assert_eq!(r.read_all().unwrap(), want);
    assert_eq!(
        r.chunks()[0].blosc.compressor().unwrap(),
        BloscCompressor::Lz4
    );
    assert_eq!(
        r.chunks()[4].blosc.compressor().unwrap(),
        BloscCompressor::BloscLz
    );
    // Needs 3 new chunks, only 1 slot left: refused, file untouched.
    let before = std::fs::read(&path).unwrap();
    let e = append(&path, &data(2800), &WriteOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotEnoughSpace);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Files without offsets cannot be appended to.
    let p2 = dir.join("b.blp");
    std::fs::write(
        &p2,
        pack_bytes(&base, None, &WriteOptions::default().offsets(false)).unwrap(),
    )
    .unwrap();
    assert_eq!(
        append(&p2, b"x", &WriteOptions::default())
            .unwrap_err()
            .kind(),
        ErrorKind::Unsupported
    );
}

#[test]
fn reader_options_control_digest_checks() {
    let mut file =
        pack_bytes(&data(3000), None, &WriteOptions::default().chunk_size(1000)).unwrap();
    // Corrupt the stored digest of chunk 1.
    let r = Reader::from_bytes(file.clone()).unwrap();
    let at = r.chunks()[1].digest_offset() as usize;
    file[at] ^= 0xff;
    let r = Reader::from_bytes(file.clone()).unwrap();
    assert_eq!(
        r.read_chunk(1).unwrap_err().kind(),
        ErrorKind::ChecksumMismatch
    );
    assert_eq!(
        r.validate().unwrap_err().kind(),
        ErrorKind::ChecksumMismatch
    );
    assert_eq!(r.validate().unwrap_err().chunk(), Some(1));
    let lax = Reader::with_options(
        dataformats_core::Source::from_vec(file),
        ReadOptions::default().verify_checksums(false),
    )
    .unwrap();
    assert_eq!(lax.read_chunk(1).unwrap(), data(3000)[1000..2000]);
}

/// A file read by positioned reads decodes each chunk from one read into
/// the caller's buffer, which is used again for the next chunk; the digest
/// is checked on those bytes (by `validate` too); a file that shrank after opening is an error
/// naming the offset, not a short chunk. In memory, the buffer is not used.
#[test]
fn chunks_read_into_a_reused_buffer() {
    let d = scratch("scratch");
    let path = d.join("a.blp");
    let want = data(10_000);
    let mut file = pack_bytes(&want, None, &WriteOptions::default().chunk_size(3000)).unwrap();
    std::fs::write(&path, &file).unwrap();
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.nchunks(), 4);
    let mut buf = Vec::new();
    let mut got = Vec::new();
    for (i, c) in r.chunks().iter().enumerate() {
        let mut dst = vec![0u8; c.nbytes() as usize];
        r.read_chunk_into_with(i, &mut dst, &mut buf).unwrap();
        assert_eq!(buf.len(), c.blosc.cbytes as usize, "chunk {i}");
        got.extend_from_slice(&dst);
    }
    assert!(got == want);
    r.validate().unwrap();

    // A byte of chunk 2's compressed data flipped on disk.
    let c2 = r.chunks()[2];
    file[c2.offset as usize + 20] ^= 0x40;
    std::fs::write(&path, &file).unwrap();
    let r = Reader::open(&path).unwrap();
    let mut dst = vec![0u8; c2.nbytes() as usize];
    let e = r.read_chunk_into_with(2, &mut dst, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{e}");
    assert_eq!(e.chunk(), Some(2), "{e}");
    let e = r.validate().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{e}");
    assert_eq!(e.chunk(), Some(2), "{e}");

    // The file cut short in chunk 3 after it was opened.
    let c3 = r.chunks()[3];
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(c3.offset + 5).unwrap();
    let mut dst = vec![0u8; c3.nbytes() as usize];
    let e = r.read_chunk_into_with(3, &mut dst, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
    assert!(e.to_string().contains(&c3.offset.to_string()), "{e}");

    // From memory: decoded in place, the buffer left alone.
    let r = Reader::from_bytes(pack_bytes(&want, None, &WriteOptions::default()).unwrap()).unwrap();
    let mut unused = Vec::new();
    let mut dst = vec![0u8; want.len()];
    r.read_chunk_into_with(0, &mut dst, &mut unused).unwrap();
    assert!(dst == want && unused.capacity() == 0);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A whole-file read checks digests on another thread while it decodes,
/// and `validate` checks chunks on every core; whatever is damaged, both
/// fail with the error a chunk-by-chunk read meets first. (The file is
/// large enough, 12 chunks of 1 MiB compressing to about half, for both to
/// use threads.)
#[test]
fn whole_reads_fail_where_chunk_by_chunk_reads_fail_first() {
    let mut rng = dataformats_core::rng::SplitMix64::new(3);
    let payload: Vec<u8> = (0..12 << 20)
        .map(|_| (rng.next_u64() & 0x0F) as u8)
        .collect();
    let clean = pack_bytes(
        &payload,
        None,
        &WriteOptions::default()
            .chunk_size(1 << 20)
            .codec(BloscCompressor::Zstd),
    )
    .unwrap();
    assert!(clean.len() > 5 << 20, "{} bytes", clean.len());
    let r = Reader::from_bytes(clean.clone()).unwrap();
    let chunks = r.chunks().to_vec();
    let kind = r.header().checksum;
    assert!(
        chunks.iter().all(|c| !c.blosc.is_memcpyed()),
        "compressed chunks"
    );
    assert_eq!(r.read_all().unwrap(), payload);
    // Damage to chunk k's digest, or to its compressed bytes with the
    // digest made to match them (so that decoding is what fails).
    let digest = |file: &mut Vec<u8>, k: usize| file[chunks[k].digest_offset() as usize] ^= 0x55;
    let payload_bytes = |file: &mut Vec<u8>, k: usize| {
        let c = &chunks[k];
        let (s, n) = (c.offset as usize, c.blosc.cbytes as usize);
        // The first block's start, just past Blosc's 16-byte header,
        // pointed past the chunk.
        file[s + 16..s + 20].copy_from_slice(&u32::MAX.to_le_bytes());
        let d = kind.digest(&file[s..s + n]);
        let at = c.digest_offset() as usize;
        file[at..at + kind.digest_size()].copy_from_slice(d.as_bytes());
    };
    let cases: Vec<Vec<(usize, bool)>> = vec![
        vec![(0, true)],
        vec![(5, true)],
        vec![(11, true)],
        vec![(3, false)],
        vec![(9, false), (4, true)],
        vec![(4, false), (9, true)],
        // Both on one chunk (the digest damaged after it was made to match).
        vec![(6, false), (6, true)],
    ];
    for damage in cases {
        let mut file = clean.clone();
        for &(k, on_digest) in &damage {
            if on_digest {
                digest(&mut file, k);
            } else {
                payload_bytes(&mut file, k);
            }
        }
        let r = Reader::from_bytes(file).unwrap();
        let first = (0..chunks.len())
            .find_map(|i| r.read_chunk(i).err())
            .expect("some chunk fails");
        let k = damage.iter().map(|d| d.0).min().unwrap();
        assert_eq!(first.chunk(), Some(k as u64), "{damage:?}: {first}");
        for whole in [r.read_all().unwrap_err(), r.validate().unwrap_err()] {
            assert_eq!(whole.to_string(), first.to_string(), "{damage:?}");
            assert_eq!(whole.chunk(), first.chunk(), "{damage:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn appends_read_back_as_the_concatenation(
        base in prop::collection::vec(any::<u8>(), 1000..3000),
        adds in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..1500), 1..4),
        chunk in 50usize..1000,
        o in options(),
    ) {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("df-blp-prop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("p{}.blp", base.len() * 7919 + chunk));
        std::fs::write(&path, pack_bytes(&base, None, &WriteOptions::default().chunk_size(chunk).max_app_chunks(200)).unwrap()).unwrap();
        let mut want = base.clone();
        for a in &adds {
            append(&path, a, &o.offsets(true)).unwrap();
            want.extend_from_slice(a);
        }
        let r = Reader::open(&path).unwrap();
        r.validate().unwrap();
        prop_assert_eq!(r.read_all().unwrap(), want);
        std::fs::remove_file(&path).unwrap();
    }
}

/// Chunks compressed on any number of threads give the same file, written
/// in any pieces, and it reads back; the payloads are large enough for the
/// writer to start its threads.
#[test]
fn chunks_compressed_on_threads_give_the_same_file() {
    let payload: Vec<u8> = (0..6_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 27) as u8 ^ (i / 1000) as u8)
        .collect();
    let write = |o: &WriteOptions, threads: usize, piece: usize| {
        let mut w = Writer::new(Cursor::new(Vec::new()), payload.len() as u64, None, o).unwrap();
        w.set_threads(threads);
        for p in payload.chunks(piece) {
            w.write_payload(p).unwrap();
        }
        w.finish().unwrap().into_inner()
    };
    for (codec, chunk, checksum) in [
        (BloscCompressor::BloscLz, 1 << 20, ChecksumKind::Adler32),
        (BloscCompressor::Lz4, 300_000, ChecksumKind::Sha256),
        (BloscCompressor::Zstd, 1 << 20, ChecksumKind::None),
    ] {
        let o = WriteOptions::default()
            .codec(codec)
            .chunk_size(chunk)
            .checksum(checksum);
        let one = write(&o, 1, 1 << 20);
        let back = Reader::from_bytes(one.clone()).unwrap();
        assert_eq!(back.read_all().unwrap(), payload, "{codec:?}");
        for (threads, piece) in [(2, 4096), (3, 1 << 20), (0, 777_777)] {
            assert!(
                write(&o, threads, piece) == one,
                "{codec:?}, {threads} threads, pieces of {piece}"
            );
        }
    }
}
