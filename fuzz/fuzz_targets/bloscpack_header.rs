//! The Bloscpack file header and metadata header parsers on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_bloscpack::fuzzing::header(data);
});
