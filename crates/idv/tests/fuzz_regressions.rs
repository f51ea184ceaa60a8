//! Replays every saved fuzz regression input of the IDV targets.

use dataformats_core::testing::replay_regressions;

#[test]
fn idv_file_regressions() {
    replay_regressions("idv_file", dataformats_idv::fuzzing::file);
}

#[test]
fn idv_toc_regressions() {
    replay_regressions("idv_toc", dataformats_idv::fuzzing::toc);
}

#[test]
fn idv_codec_regressions() {
    replay_regressions("idv_codec", dataformats_idv::fuzzing::codec);
}
