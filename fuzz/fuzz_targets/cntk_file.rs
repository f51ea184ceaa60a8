//! Arbitrary bytes as a CNTK binary (CBF) file: open and decode every chunk.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_cntk::fuzzing::file(data);
});
