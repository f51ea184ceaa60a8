//! The TBL v2 header parser and CRC.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_tbl2::fuzzing::header(data);
});
