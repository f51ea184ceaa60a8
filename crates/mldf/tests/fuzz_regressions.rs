//! Replays every saved fuzz regression input of the MLDF targets.

use dataformats_core::testing::replay_regressions;

#[test]
fn mldf_file_regressions() {
    replay_regressions("mldf_file", dataformats_mldf::fuzzing::file);
}

#[test]
fn mldf_descriptors_regressions() {
    replay_regressions("mldf_descriptors", dataformats_mldf::fuzzing::descriptors);
}

#[test]
fn mldf_tables_regressions() {
    replay_regressions("mldf_tables", dataformats_mldf::fuzzing::tables);
}
