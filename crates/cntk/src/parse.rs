//! CBF's on-disk structures ([`crate::format`]) parsed with nom: each parser
//! borrows its input, allocates nothing, and stops with `Truncated` on short
//! input. A stream descriptor is read one field at a time (`cntk.md` §4.2
//! check 6 checks each field before the next is read), so its fields have a
//! parser each; the reader sequences them with
//! [`dataformats_core::parse::Input`].

use dataformats_core::parse::{PResult, array, le_i64, le_u32, le_u32_len, length_prefixed};
use nom::Parser;

use crate::format::RawChunkEntry;

/// The 12-byte preamble: the magic's 8 bytes (compared by the reader,
/// which names a wrong one) and the version.
pub fn preamble(i: &[u8]) -> PResult<'_, ([u8; 8], u32)> {
    (array::<8>, le_u32).parse(i)
}

/// The 8-byte footer: the header's offset (an `i64`).
pub fn footer(i: &[u8]) -> PResult<'_, i64> {
    le_i64(i)
}

/// The header after its magic: the chunk count, then the stream count.
pub fn counts(i: &[u8]) -> PResult<'_, (u32, u32)> {
    (le_u32, le_u32).parse(i)
}

/// A stream descriptor's name: a `u32` byte count, then the bytes.
pub fn stream_name(i: &[u8]) -> PResult<'_, &[u8]> {
    length_prefixed(le_u32_len)(i)
}

/// One 16-byte chunk-table entry.
pub fn chunk_entry(i: &[u8]) -> PResult<'_, RawChunkEntry> {
    let (i, (offset, num_sequences, num_samples)) = (le_i64, le_u32, le_u32).parse(i)?;
    Ok((
        i,
        RawChunkEntry {
            offset,
            num_sequences,
            num_samples,
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..64u8).map(|x| x.wrapping_mul(37)).collect();
        let le32 = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let le64 = |o: usize| i64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let (magic, version) = run(&b, 0, preamble).unwrap();
        assert_eq!((&magic[..], version), (&b[..8], le32(8)));
        assert_eq!(run(&b, 0, footer).unwrap(), le64(0));
        assert_eq!(run(&b, 0, counts).unwrap(), (le32(0), le32(4)));
        let e = run(&b, 0, chunk_entry).unwrap();
        assert_eq!(
            (e.offset, e.num_sequences, e.num_samples),
            (le64(0), le32(8), le32(12))
        );
        let named = [3u8, 0, 0, 0, b'a', b'b', b'c', 9];
        assert_eq!(run(&named, 0, stream_name).unwrap(), b"abc");
    }

    #[test]
    fn every_proper_prefix_is_truncated() {
        // A name length of 3 first, so that 7 bytes make a whole name.
        let mut b = [3u8; 32];
        b[1..4].fill(0);
        assert_prefixes_truncated(&b[..12], 500, preamble, "preamble");
        assert_prefixes_truncated(&b[..8], 500, footer, "footer");
        assert_prefixes_truncated(&b[..8], 500, counts, "counts");
        assert_prefixes_truncated(&b[..16], 500, chunk_entry, "chunk_entry");
        assert_prefixes_truncated(&b[..7], 500, stream_name, "stream_name");
    }
}
