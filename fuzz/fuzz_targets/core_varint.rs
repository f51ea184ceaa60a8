//! LEB128, .NET 7-bit Int32 and string parsers on arbitrary bytes; whatever
//! decodes must re-encode and decode to the same value.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dataformats_core::fuzzing::varints(data);
});
