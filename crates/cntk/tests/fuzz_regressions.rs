//! Replays every saved fuzz regression input of the CNTK targets.

use dataformats_core::testing::replay_regressions;

#[test]
fn cntk_file_regressions() {
    replay_regressions("cntk_file", dataformats_cntk::fuzzing::file);
}

#[test]
fn cntk_header_regressions() {
    replay_regressions("cntk_header", dataformats_cntk::fuzzing::header);
}

#[test]
fn ctf_regressions() {
    replay_regressions("ctf", dataformats_cntk::fuzzing::ctf);
}
