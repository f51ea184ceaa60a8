//! Arbitrary bytes as a Blosc1 chunk: validation must hold back anything
//! c-blosc cannot safely read, and getitem must agree with a full decode.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_core::fuzzing::blosc_chunk(data);
});
