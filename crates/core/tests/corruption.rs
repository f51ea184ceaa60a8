//! Corruption sweeps: every prefix and every single-byte flip of small valid
//! payloads gives `Ok` or a clean `Err`, never a panic or an out-of-bounds
//! access (c-blosc runs under the same validation the readers use).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation
)]

use dataformats_core::codec::{self, BloscCompressor, BloscParams, Codec, Shuffle, blosc};
use dataformats_core::fuzzing;

fn data() -> Vec<u8> {
    (0..600u32)
        .flat_map(|i| ((i / 4) as u16).to_le_bytes())
        .collect()
}

#[test]
fn blosc_chunks_survive_every_prefix_and_flip() {
    let d = data();
    for comp in [
        BloscCompressor::BloscLz,
        BloscCompressor::Lz4,
        BloscCompressor::Zlib,
        BloscCompressor::Zstd,
    ] {
        for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            let p = BloscParams::new(comp, 5, shuffle, 2).with_blocksize(256);
            let chunk = blosc::compress(&d, &p).unwrap();
            for n in 0..chunk.len() {
                fuzzing::blosc_chunk(&chunk[..n]);
                assert!(
                    blosc::validate(&chunk[..n]).is_err(),
                    "{comp} {shuffle:?}: prefix {n} validated"
                );
            }
            let mut out = vec![0u8; d.len()];
            for i in 0..chunk.len() {
                for bit in [0x01u8, 0x80] {
                    let mut c = chunk.clone();
                    c[i] ^= bit;
                    fuzzing::blosc_chunk(&c);
                    let r = blosc::decompress_into(&c, &mut out, 1);
                    // A changed nbytes or cbytes can never pass: one disagrees with
                    // the destination size, the other with the chunk length.
                    if (4..8).contains(&i) || (12..16).contains(&i) {
                        assert!(
                            r.is_err(),
                            "{comp} {shuffle:?}: flip at header byte {i} accepted"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn stream_codecs_survive_every_prefix_and_flip() {
    let d = data();
    for c in Codec::ALL {
        let packed = codec::compress(c, &d, None).unwrap();
        let mut out = vec![0u8; d.len()];
        for n in 0..packed.len() {
            assert!(
                codec::decompress_into(c, &packed[..n], &mut out).is_err(),
                "{c}: prefix of {n} bytes decoded to the full size"
            );
        }
        for i in 0..packed.len() {
            let mut p = packed.clone();
            p[i] ^= 0x10;
            // A flip inside a literal may still decode; anything else is a
            // clean error. What matters here is that neither panics.
            let _ = codec::decompress_into(c, &p, &mut out);
        }
    }
}

#[test]
fn decoded_length_bounds_hold_for_the_most_compressible_input() {
    use dataformats_core::codec::{self, Codec};
    // All zeros is the best case for every codec: the bound must still hold.
    let zeros = vec![0u8; 8 << 20];
    for c in [Codec::Lz4Block, Codec::Deflate, Codec::Zlib] {
        for level in [None, Some(9)] {
            let packed = codec::compress(c, &zeros, level).unwrap();
            let most = codec::max_decoded_len(c, packed.len() as u64).unwrap();
            assert!(
                zeros.len() as u64 <= most,
                "{c}: {} bytes from {} packed, bound {most}",
                zeros.len(),
                packed.len()
            );
            // The bound is tight enough to matter: far below 4 GiB here.
            assert!(most < 64 << 20, "{c}: {most}");
        }
    }
    assert_eq!(codec::max_decoded_len(Codec::Zstd, 10), None);
}
