//! Arbitrary text through the CTF converter.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_cntk::fuzzing::ctf(data);
});
