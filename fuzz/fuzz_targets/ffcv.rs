//! Arbitrary bytes through dataformats_ffcv::fuzzing::ffcv (raw files and
//! files built around a valid header and data page).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_ffcv::fuzzing::ffcv(data);
});
