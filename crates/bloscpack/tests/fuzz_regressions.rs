//! Replays every saved fuzz regression input of the Bloscpack/BLZ targets
//! through the entry points the fuzz targets use.

use dataformats_core::testing::replay_regressions;

#[test]
fn bloscpack_header_regressions() {
    replay_regressions("bloscpack_header", dataformats_bloscpack::fuzzing::header);
}

#[test]
fn bloscpack_file_regressions() {
    replay_regressions("bloscpack_file", dataformats_bloscpack::fuzzing::file);
}

#[test]
fn blz_meta_regressions() {
    replay_regressions("blz_meta", dataformats_bloscpack::fuzzing::blz);
}
