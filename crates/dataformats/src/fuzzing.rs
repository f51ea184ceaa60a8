//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

/// Arbitrary bytes through [`crate::open_bytes`]: the schema, the first
/// records in batches and one by one, every value as JSON, validation and
/// the summary. Nothing may panic or allocate without bound.
pub fn open_bytes(data: &[u8]) {
    let Ok(d) = crate::open_bytes(data.to_vec()) else {
        return;
    };
    let _ = d.columns();
    let _ = d.summary_json();
    let n = d.len().min(256);
    if let Ok(rows) = d.records(0..n) {
        for r in rows {
            for v in r {
                let _ = v.to_json();
            }
        }
    }
    for i in 0..n.min(16) {
        let _ = d.record(i);
    }
    for r in d.iter().take(64) {
        let _ = r;
    }
    let _ = d.validate();
}
