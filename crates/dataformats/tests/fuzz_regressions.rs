//! Replays every saved fuzz regression input of the facade target.

use dataformats::core::testing::replay_regressions;

#[test]
fn facade_open_bytes_regressions() {
    replay_regressions("facade_open_bytes", dataformats::fuzzing::open_bytes);
}

#[test]
fn facade_convert_regressions() {
    replay_regressions("facade_convert", dataformats::fuzzing::convert_bytes);
}

#[test]
fn facade_import_regressions() {
    replay_regressions("facade_import", dataformats::fuzzing::import_bytes);
}
