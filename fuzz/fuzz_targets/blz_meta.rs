//! BLZ/bcolz meta files (storage NUL sizes), dtype strings, and chunk files.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_bloscpack::fuzzing::blz(data);
});
