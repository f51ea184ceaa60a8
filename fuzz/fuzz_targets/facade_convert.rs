//! Arbitrary bytes through dataformats::fuzzing::convert_bytes (the common
//! view's first records converted into every target, and read back).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats::fuzzing::convert_bytes(data);
});
