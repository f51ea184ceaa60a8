//! Arbitrary bytes through dataformats::fuzzing::open_bytes (detection and
//! the common view of every format).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats::fuzzing::open_bytes(data);
});
