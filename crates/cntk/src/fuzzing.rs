//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::read::Reader;

/// Arbitrary bytes as a CBF file: open, then decode every chunk.
pub fn file(data: &[u8]) {
    if let Ok(r) = Reader::with_limits(Source::from_vec(data.to_vec()), Limits::fuzzing()) {
        for i in 0..r.chunks().len().min(1024) {
            if let Ok(c) = r.read_chunk(i) {
                assert_eq!(
                    c.records.len(),
                    r.streams().len(),
                    "one record list per stream"
                );
            }
        }
    }
}
