//! Arbitrary bytes through dataformats_idv::fuzzing::codec.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_idv::fuzzing::codec(data);
});
