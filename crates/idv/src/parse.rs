//! IDV's fixed structures ([`crate::format`]) parsed with nom: each parser
//! borrows its input, allocates nothing, and stops with `Truncated` on short
//! input. The variable-length tables (column table of contents, annotation
//! tables, codecs) are read field by field with the same primitives, so that
//! each field is checked as soon as it is read.

use dataformats_core::parse::{PResult, le_i32, le_i64, le_u64};
use nom::Parser;

use crate::format::{RawBlockEntry, RawHeader};

/// The header's fields.
pub fn header(i: &[u8]) -> PResult<'_, RawHeader> {
    let (i, (signature, version, compatible_version, toc_offset, tail_offset, row_count)) =
        (le_u64, le_u64, le_u64, le_i64, le_i64, le_i64).parse(i)?;
    let (i, column_count) = le_i32(i)?;
    Ok((
        i,
        RawHeader {
            signature,
            version,
            compatible_version,
            toc_offset,
            tail_offset,
            row_count,
            column_count,
        },
    ))
}

/// The tail signature.
pub fn tail(i: &[u8]) -> PResult<'_, u64> {
    le_u64(i)
}

/// One block lookup entry.
pub fn block_entry(i: &[u8]) -> PResult<'_, RawBlockEntry> {
    let (i, (offset, compressed_len, decompressed_len)) = (le_i64, le_i32, le_i32).parse(i)?;
    Ok((
        i,
        RawBlockEntry {
            offset,
            compressed_len,
            decompressed_len,
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::format::{BLOCK_ENTRY_SIZE, HEADER_FIELDS_SIZE};
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..64u8)
            .map(|x| x.wrapping_mul(29).wrapping_add(5))
            .collect();
        let u64_ = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let i32_ = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let h = run(&b, 0, header).unwrap();
        assert_eq!(
            (h.signature, h.version, h.compatible_version),
            (u64_(0), u64_(8), u64_(16))
        );
        assert_eq!(
            (h.toc_offset, h.tail_offset, h.row_count),
            (u64_(24) as i64, u64_(32) as i64, u64_(40) as i64)
        );
        assert_eq!(h.column_count, i32_(48));
        assert_eq!(run(&b, 0, tail).unwrap(), u64_(0));
        let e = run(&b, 0, block_entry).unwrap();
        assert_eq!(
            (e.offset, e.compressed_len, e.decompressed_len),
            (u64_(0) as i64, i32_(8), i32_(12))
        );
    }

    #[test]
    fn every_proper_prefix_is_truncated() {
        let b = [0x77u8; 64];
        assert_prefixes_truncated(&b[..HEADER_FIELDS_SIZE as usize], 256, header, "header");
        assert_prefixes_truncated(&b[..8], 256, tail, "tail");
        assert_prefixes_truncated(
            &b[..BLOCK_ENTRY_SIZE as usize],
            256,
            block_entry,
            "block_entry",
        );
    }
}
