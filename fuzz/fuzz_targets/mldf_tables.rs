//! Arbitrary bytes through dataformats_mldf::fuzzing::tables.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_mldf::fuzzing::tables(data);
});
