//! Round-trip properties of the codecs, checksums and varint helpers.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use dataformats_core::codec::{self, BloscCompressor, BloscParams, Codec, Shuffle, blosc};
use dataformats_core::{ChecksumKind, parse};
use proptest::prelude::*;

fn codec_strategy() -> impl Strategy<Value = Codec> {
    prop::sample::select(Codec::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_payload_round_trips(data in prop::collection::vec(any::<u8>(), 0..5000), c in codec_strategy()) {
        let packed = codec::compress(c, &data, None).unwrap();
        let mut out = vec![0u8; data.len()];
        codec::decompress_into(c, &packed, &mut out).unwrap();
        prop_assert_eq!(out, data);
    }

    #[test]
    fn any_payload_round_trips_through_blosc(
        data in prop::collection::vec(0u8..8, 0..20_000),
        typesize in 1usize..=16,
        clevel in 0u8..=9,
        shuffle in prop::sample::select(vec![Shuffle::None, Shuffle::Byte, Shuffle::Bit]),
        comp in prop::sample::select(BloscCompressor::ALL.to_vec()),
    ) {
        let chunk = blosc::compress(&data, &BloscParams::new(comp, clevel, shuffle, typesize)).unwrap();
        let mut out = vec![0u8; data.len()];
        blosc::decompress_into(&chunk, &mut out, 1).unwrap();
        prop_assert_eq!(&out, &data);
        let items = data.len() / typesize;
        if items > 0 {
            let start = items / 2;
            let n = (items - start).min(3);
            let mut part = vec![0u8; n * typesize];
            blosc::getitem(&chunk, start as u64, n as u64, &mut part).unwrap();
            prop_assert_eq!(&part[..], &data[start * typesize..(start + n) * typesize]);
        }
    }

    #[test]
    fn garbage_never_panics_any_decoder(data in prop::collection::vec(any::<u8>(), 0..600), size in 0usize..4096, c in codec_strategy()) {
        let mut out = vec![0u8; size];
        let _ = codec::decompress_into(c, &data, &mut out);
        dataformats_core::fuzzing::blosc_chunk(&data);
    }

    #[test]
    fn streaming_checksums_split_anywhere(data in prop::collection::vec(any::<u8>(), 0..3000), cut in 0usize..3000) {
        let cut = cut.min(data.len());
        for k in ChecksumKind::ALL {
            let mut h = k.hasher();
            h.update(&data[..cut]);
            h.update(&data[cut..]);
            prop_assert_eq!(h.finish(), k.digest(&data));
        }
    }

    #[test]
    fn varints_round_trip(v in any::<u64>(), w in any::<i32>()) {
        let mut out = [0u8; 10];
        let n = parse::write_uleb128(v, &mut out);
        prop_assert_eq!(parse::run(&out[..n], 0, parse::uleb128_minimal).unwrap(), v);
        let mut out5 = [0u8; 5];
        let n = parse::write_dotnet_7bit_i32(w, &mut out5);
        prop_assert_eq!(parse::run(&out5[..n], 0, parse::dotnet_7bit_i32).unwrap(), w);
    }

    #[test]
    fn varint_parsers_never_panic(data in prop::collection::vec(any::<u8>(), 0..20)) {
        dataformats_core::fuzzing::varints(&data);
    }
}
