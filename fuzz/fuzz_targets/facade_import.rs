//! Arbitrary bytes through dataformats::fuzzing::import_bytes (a table
//! file the conversions import, its kind picked by the first byte, read
//! one batch after the other and on three threads).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats::fuzzing::import_bytes(data);
});
