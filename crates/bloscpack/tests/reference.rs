//! Files we write have the layout python-bloscpack gives the same input and
//! settings: for every valid reference vector not altered after writing, we
//! repack its payload and metadata with the settings its header records and
//! compare the header and metadata section byte for byte, and the chunking.
//! (Compressed chunk bytes depend on the c-blosc build, so they are compared
//! by decoded content only.)

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_bloscpack::{MetadataOptions, Reader, WriteOptions, pack_bytes};
use dataformats_core::codec::blosc::Shuffle;

/// Vectors changed after the reference wrote them (appends, post-processing).
const ALTERED: [&str; 4] = [
    "bytes_appended_mixed_codecs.blp",
    "bytes_append_leaves_trailing_garbage.blp",
    "f8_blocks_out_of_order.blp",
    "bytes_both_shuffle_bits_set.blp",
];

#[test]
fn repacking_reference_files_gives_the_same_layout() {
    let Some(dir) = dataformats_core::testing::vectors_dir("bloscpack") else {
        return;
    };
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".blp") || ALTERED.contains(&name.as_str()) {
            continue;
        }
        let orig = std::fs::read(&p).unwrap();
        let r = Reader::from_bytes(orig.clone()).unwrap();
        let h = *r.header();
        let payload = r.read_all().unwrap();
        let c0 = r.chunks()[0].blosc;
        let mut o = WriteOptions::default()
            .checksum(h.checksum)
            .typesize(usize::from(h.typesize))
            .chunk_size(if h.nchunks > 1 {
                h.chunk_size as usize
            } else {
                payload.len().max(1)
            })
            .offsets(h.has_offsets())
            .max_app_chunks(h.max_app_chunks as u64)
            .shuffle(if c0.flags & 4 != 0 {
                Shuffle::Bit
            } else if c0.flags & 1 != 0 {
                Shuffle::Byte
            } else {
                Shuffle::None
            });
        if let Some(c) = c0.compressor().filter(|c| c.is_available()) {
            o = o.codec(c);
        }
        if let Some(m) = r.metadata() {
            let mh = m.header;
            o = o.metadata(
                MetadataOptions::default()
                    .codec(mh.meta_codec)
                    .level(mh.meta_level)
                    .checksum(mh.meta_checksum)
                    .max_meta_size(mh.max_meta_size),
            );
            // A raw-stored section whose level says zlib was a dropped compression.
            if mh.meta_codec == dataformats_bloscpack::MetaCodec::None && mh.meta_level > 0 {
                o = o.metadata(o.metadata.codec(dataformats_bloscpack::MetaCodec::Zlib));
            }
        }
        let ours = pack_bytes(&payload, r.metadata().map(|m| &m.value), &o).unwrap();
        let back = Reader::from_bytes(ours.clone()).unwrap();
        assert_eq!(&ours[..32], &orig[..32], "{name}: header");
        let meta_end = r.chunks()[0].offset as usize
            - if h.has_offsets() {
                ((h.nchunks + h.max_app_chunks) * 8) as usize
            } else {
                0
            };
        assert_eq!(
            &ours[32..meta_end],
            &orig[32..meta_end],
            "{name}: metadata section"
        );
        assert_eq!(back.nchunks(), r.nchunks(), "{name}");
        for (a, b) in back.chunks().iter().zip(r.chunks()) {
            assert_eq!(a.blosc.nbytes, b.blosc.nbytes, "{name}");
            assert_eq!(a.blosc.typesize, b.blosc.typesize, "{name}");
        }
        assert_eq!(back.read_all().unwrap(), payload, "{name}");
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} vectors compared");
}

/// `stored_range` hands out exactly the bytes decoding gives, for every
/// range inside one memcpyed chunk of every valid vector (python-bloscpack
/// stores a chunk as it is when it would not compress), and nothing for a
/// compressed chunk or a range across chunks.
#[test]
fn stored_ranges_equal_decoded_ranges() {
    let Some(dir) = dataformats_core::testing::vectors_dir("bloscpack") else {
        return;
    };
    let (mut stored, mut compressed) = (0, 0);
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let side = p.with_extension("json");
        if p.extension().is_none_or(|x| x != "blp") || !side.is_file() {
            continue;
        }
        let valid = serde_json::from_slice::<serde_json::Value>(&std::fs::read(&side).unwrap())
            .unwrap()["valid"]
            == true;
        let Ok(r) = Reader::open(&p) else {
            assert!(!valid, "{}", p.display());
            continue;
        };
        if !valid || r.validate().is_err() {
            continue;
        }
        for (i, c) in r.chunks().iter().enumerate() {
            let n = c.nbytes();
            if n == 0 {
                continue;
            }
            for (a, b) in [(0, n), (n / 3, n - n / 4), (n - 1, n)] {
                if a >= b {
                    continue;
                }
                let got = r.stored_range(c.payload_start + a, b - a).unwrap();
                if !c.blosc.is_memcpyed() {
                    assert!(got.is_none(), "{} chunk {i}", p.display());
                    compressed += 1;
                    continue;
                }
                let mut want = vec![0u8; (b - a) as usize];
                r.read_range_into(c.payload_start + a, &mut want).unwrap();
                assert_eq!(got.as_deref(), Some(&want[..]), "{} chunk {i}", p.display());
                stored += 1;
            }
            if i + 1 < r.nchunks() {
                // Across this chunk's end: never one stored slice.
                assert!(
                    r.stored_range(c.payload_start + n - 1, 2)
                        .unwrap()
                        .is_none()
                );
            }
        }
        // Outside the payload: an error, not a slice.
        assert!(r.stored_range(r.payload_len(), 1).is_err());
    }
    assert!(compressed > 0, "no compressed chunk seen");
    assert!(stored > 0, "no memcpyed chunk among the vectors");
}
