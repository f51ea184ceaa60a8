//! A TBL v2 file with a valid header: the index, samples and metadata.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_tbl2::fuzzing::index(data);
});
