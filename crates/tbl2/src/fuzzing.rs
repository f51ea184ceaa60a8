//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::read::{ReadOptions, Reader, parse_header};

/// The header: parse (short input is an error), and the CRC over whatever
/// 64 bytes there are.
pub fn header(data: &[u8]) {
    if let Ok(h) = parse_header(data) {
        let _ = h.compute_checksum();
        let _ = h.data_start();
    }
}

/// A file whose header is fixed up (valid magic, version and CRC) so the
/// fuzzer spends its time on the index and samples.
pub fn index(data: &[u8]) {
    let mut h = [0u8; 64];
    for (d, s) in h.iter_mut().zip(data) {
        *d = *s;
    }
    h[..4].copy_from_slice(crate::format::MAGIC);
    h[4..8].copy_from_slice(&2u32.to_le_bytes());
    if let Ok(parsed) = parse_header(&h) {
        h[44..48].copy_from_slice(&parsed.compute_checksum().to_le_bytes());
    }
    let mut f = h.to_vec();
    f.extend_from_slice(data.get(64..).unwrap_or_default());
    file(&f);
}

/// A whole file: open, read every sample (strict and lenient), walk the metadata.
pub fn file(data: &[u8]) {
    for strict in [true, false] {
        let opts = ReadOptions::default()
            .limits(Limits::fuzzing())
            .strict(strict);
        let Ok(r) = Reader::with_options(Source::from_vec(data.to_vec()), opts) else {
            continue;
        };
        let mut buf = Vec::new();
        for i in 0..r.len().min(4096) {
            if r.read_sample_into(i, &mut buf).is_ok() {
                let again = r.read_sample(i);
                assert!(
                    again.is_ok_and(|a| *a == buf[..]),
                    "two reads of sample {i} disagree"
                );
            }
            let _ = r.read_metadata(i);
        }
        let _ = r.metadata_blocks();
    }
}
