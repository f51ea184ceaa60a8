//! A CBF header (descriptors, chunk table) behind a valid preamble and footer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_cntk::fuzzing::header(data);
});
