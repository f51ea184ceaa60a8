//! Replays every saved fuzz regression input of the FFCV target.

use dataformats_core::testing::replay_regressions;

#[test]
fn ffcv_regressions() {
    replay_regressions("ffcv", dataformats_ffcv::fuzzing::ffcv);
}
