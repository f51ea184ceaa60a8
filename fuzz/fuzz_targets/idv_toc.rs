//! Arbitrary bytes through dataformats_idv::fuzzing::toc.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_idv::fuzzing::toc(data);
});
