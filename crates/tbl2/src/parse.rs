//! TBL v2's on-disk structures ([`crate::format`]) parsed with nom: each
//! parser borrows its input, allocates nothing, and stops with `Truncated`
//! on short input (through [`dataformats_core::parse::finish`], which also
//! makes the offset absolute). Only the layout is read here; what the values
//! must be is checked by the reader, in the order the format notes give.

use dataformats_core::parse::{PResult, array, le_u16, le_u32, le_u64, take};
use nom::Parser;

use crate::format::{Header, IndexEntry, MetadataType};

/// The 64-byte header, magic included (taken, not checked: the reader
/// names a wrong magic itself).
pub fn header(i: &[u8]) -> PResult<'_, Header> {
    let (i, (_magic, version, num_samples, header_size, padding1)) =
        (take(4), le_u32, le_u64, le_u32, le_u32).parse(i)?;
    let (i, (metadata_offset, metadata_size, flags, checksum, reserved)) =
        (le_u64, le_u64, le_u32, le_u32, array::<16>).parse(i)?;
    Ok((
        i,
        Header {
            version,
            num_samples,
            header_size,
            padding1,
            metadata_offset,
            metadata_size,
            flags,
            checksum,
            reserved,
        },
    ))
}

/// One 24-byte index entry ([`IndexEntry::from_bytes`]).
pub fn index_entry(i: &[u8]) -> PResult<'_, IndexEntry> {
    let (i, b) = array::<24>(i)?;
    Ok((i, IndexEntry::from_bytes(&b)))
}

/// A metadata block's 16-byte header: the sample it names, its payload's
/// length, its type (the two reserved bytes are taken, not checked).
pub fn block_header(i: &[u8]) -> PResult<'_, (u64, u32, MetadataType)> {
    let (i, (sample_index, size, kind, _reserved)) = (le_u64, le_u32, le_u16, le_u16).parse(i)?;
    Ok((i, (sample_index, size, MetadataType(kind))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BLOCK_HEADER_SIZE, ENTRY_SIZE, HEADER_SIZE, SampleFormat};
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    /// Every field lands where the format notes put it.
    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..64u8).collect();
        let h = run(&b, 0, header).unwrap();
        assert_eq!(h.version, u32::from_le_bytes([4, 5, 6, 7]));
        assert_eq!(
            h.num_samples,
            u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15])
        );
        assert_eq!(h.header_size, u32::from_le_bytes([16, 17, 18, 19]));
        assert_eq!(h.padding1, u32::from_le_bytes([20, 21, 22, 23]));
        assert_eq!(
            h.metadata_offset,
            u64::from_le_bytes([24, 25, 26, 27, 28, 29, 30, 31])
        );
        assert_eq!(
            h.metadata_size,
            u64::from_le_bytes([32, 33, 34, 35, 36, 37, 38, 39])
        );
        assert_eq!(h.flags, u32::from_le_bytes([40, 41, 42, 43]));
        assert_eq!(h.checksum, u32::from_le_bytes([44, 45, 46, 47]));
        assert_eq!(h.reserved.to_vec(), (48..64u8).collect::<Vec<_>>());
        assert_eq!(h.to_bytes()[4..], b[4..]);
        let e = run(&b, 0, index_entry).unwrap();
        assert_eq!(e.offset, u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(e.size, u32::from_le_bytes([8, 9, 10, 11]));
        assert_eq!(e.uncompressed_size, u32::from_le_bytes([12, 13, 14, 15]));
        assert_eq!(
            (e.width, e.height),
            (u16::from_le_bytes([16, 17]), u16::from_le_bytes([18, 19]))
        );
        assert_eq!((e.format, e.flags), (SampleFormat(20), 21));
        assert_eq!(e.checksum, u16::from_le_bytes([22, 23]));
        assert_eq!(e.to_bytes()[..], b[..24]);
        let (sample, size, kind) = run(&b, 0, block_header).unwrap();
        assert_eq!(sample, u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]));
        assert_eq!(size, u32::from_le_bytes([8, 9, 10, 11]));
        assert_eq!(kind, MetadataType(u16::from_le_bytes([12, 13])));
    }

    /// Every proper prefix of each structure is `Truncated` at an offset
    /// inside it, never a value.
    #[test]
    fn every_proper_prefix_is_truncated() {
        let b = [0xA5u8; 64];
        assert_prefixes_truncated(&b[..HEADER_SIZE as usize], 1000, header, "header");
        assert_prefixes_truncated(&b[..ENTRY_SIZE as usize], 1000, index_entry, "index_entry");
        assert_prefixes_truncated(
            &b[..BLOCK_HEADER_SIZE as usize],
            1000,
            block_header,
            "block_header",
        );
    }
}
