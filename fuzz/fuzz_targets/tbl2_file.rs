//! Arbitrary bytes as a whole TBL v2 file, strict and lenient.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_tbl2::fuzzing::file(data);
});
