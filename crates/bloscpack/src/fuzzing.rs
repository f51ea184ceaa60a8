//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use std::path::Path;

use dataformats_core::{Limits, Source};

use crate::read::{ReadOptions, Reader};

/// The 32-byte header parser.
pub fn header(data: &[u8]) {
    let _ = crate::parse::header(data);
    if data.len() >= 64 {
        let _ = crate::parse::metadata_header(data.get(32..64).unwrap_or_default(), 32);
    }
}

/// A whole Bloscpack file: open, validate, and read every byte range shape
/// the reader offers, under tight limits.
pub fn file(data: &[u8]) {
    let opts = ReadOptions::default().limits(Limits::fuzzing());
    let Ok(r) = Reader::with_options(Source::from_vec(data.to_vec()), opts) else {
        return;
    };
    let ok = r.validate().is_ok();
    if r.payload_len() > 16 << 20 {
        return;
    }
    let all = r.read_all();
    assert!(!ok || all.is_ok(), "a validated file must decode");
    if let Ok(all) = all {
        let (a, b) = (all.len() / 3, all.len() / 2);
        let mut part = vec![0u8; b - a];
        if r.read_range_into(a as u64, &mut part).is_ok() {
            assert_eq!(
                part,
                all.get(a..b).unwrap_or_default(),
                "range read disagrees with the whole"
            );
        }
    }
}

/// BLZ meta files: the input split at its first NUL into `meta/storage` and
/// `meta/sizes`; and the whole input as a chunk file of a 1-byte-atom array.
pub fn blz(data: &[u8]) {
    let (storage, sizes) = match data.iter().position(|&b| b == 0) {
        Some(p) => (
            data.get(..p).unwrap_or_default(),
            data.get(p + 1..).unwrap_or_default(),
        ),
        None => (data, &b"{}"[..]),
    };
    let _ = crate::blz::check_meta_bytes(storage, sizes);
    if let Ok(s) = std::str::from_utf8(storage) {
        let _ = crate::blz::parse_storage_dtype(s);
        let _ = crate::dtype::Dtype::parse_python_literal(s);
    }
    let items = data.len().saturating_sub(32) as u64;
    let mut scratch = Vec::new();
    let _ = crate::blz::check_chunk_bytes(
        data,
        Path::new("data/__0.blp"),
        0,
        items,
        1,
        &Limits::fuzzing(),
        Some(&mut scratch),
    );
}
