//! Replays every saved fuzz regression input of the core targets through the
//! same entry points the fuzz targets use, so stable-only machines re-check
//! them on every test run (`fuzz/corpus/<target>/regressions/`).

use dataformats_core::testing::replay_regressions;

#[test]
fn core_varint_regressions() {
    replay_regressions("core_varint", dataformats_core::fuzzing::varints);
}

#[test]
fn core_blosc_chunk_regressions() {
    replay_regressions("core_blosc_chunk", dataformats_core::fuzzing::blosc_chunk);
}
