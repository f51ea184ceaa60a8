//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::cursor::Cursor;
use crate::parse::read_codec;
use crate::read::{Reader, SIGNATURE, TAIL_SIGNATURE, VERSION_1_1_1_6};

/// Arbitrary bytes as an IDV file: open, then decode every live column.
pub fn file(data: &[u8]) {
    if let Ok(r) = Reader::with_options(
        Source::from_vec(data.to_vec()),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) {
        for i in 0..r.columns().len().min(256) {
            if r.columns().get(i).is_some_and(|c| !c.is_dead())
                && let Ok(v) = r.read_column(i)
            {
                assert_eq!(v.len() as u64, r.len(), "one value per row");
            }
        }
    }
}

/// Arbitrary bytes as the column table of contents (and whatever it points
/// at) behind a valid header: byte 0 is the row count, byte 1 the column
/// count (mod 16), the rest the table, with the tail right after it.
pub fn toc(data: &[u8]) {
    let (rows, cols, rest) = match data {
        [a, b, rest @ ..] => (u64::from(*a), u32::from(*b % 16), rest),
        _ => return,
    };
    let mut f = Vec::with_capacity(rest.len() + 264);
    f.extend_from_slice(&SIGNATURE.to_le_bytes());
    f.extend_from_slice(&VERSION_1_1_1_6.to_le_bytes());
    f.extend_from_slice(&VERSION_1_1_1_6.to_le_bytes());
    f.extend_from_slice(&256i64.to_le_bytes());
    f.extend_from_slice(&(256 + rest.len() as i64).to_le_bytes());
    f.extend_from_slice(&(rows as i64).to_le_bytes());
    f.extend_from_slice(&(cols as i32).to_le_bytes());
    f.resize(256, 0);
    f.extend_from_slice(rest);
    f.extend_from_slice(&TAIL_SIGNATURE.to_le_bytes());
    file(&f);
}

/// Arbitrary bytes as a codec description followed by one block: byte 0 is
/// the number of rows, then the description, then the block it decodes.
pub fn codec(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let mut c = Cursor::new(rest, 1);
    let Ok(codec) = read_codec(&mut c, true) else {
        return;
    };
    if let Some(ty) = &codec.ty
        && let Ok(v) = crate::decode::decode(ty, codec.dvbool, &mut c, usize::from(n))
    {
        assert_eq!(v.len(), usize::from(n));
        let mut sink = 0usize;
        crate::render::canonical_bytes(ty, &v, &mut |b| sink += b.len());
    }
}
