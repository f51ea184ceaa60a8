//! Arbitrary bytes as a whole Bloscpack file: open, validate, full and range
//! reads must agree, under tight limits.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_bloscpack::fuzzing::file(data);
});
