//! Replays every saved fuzz regression input of the TBL v2 targets.

use dataformats_core::testing::replay_regressions;

#[test]
fn tbl2_header_regressions() {
    replay_regressions("tbl2_header", dataformats_tbl2::fuzzing::header);
}

#[test]
fn tbl2_index_regressions() {
    replay_regressions("tbl2_index", dataformats_tbl2::fuzzing::index);
}

#[test]
fn tbl2_file_regressions() {
    replay_regressions("tbl2_file", dataformats_tbl2::fuzzing::file);
}
