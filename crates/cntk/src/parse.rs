//! CBF's on-disk structures ([`crate::format`]) parsed with nom: each parser
//! borrows its input, allocates nothing, and stops with `Truncated` on short
//! input. A stream descriptor is read one field at a time (`cntk.md` §4.2
//! check 6 checks each field before the next is read): its fields have a
//! parser each, sequenced through [`dataformats_core::parse::Input`] with
//! their checks by the crate's descriptor reader here.

use dataformats_core::parse::{PResult, array, le_i64, le_u32, le_u32_len, length_prefixed};
use nom::Parser;

use std::collections::HashSet;

use dataformats_core::parse::{Input, le_u8};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{ElemType, RawChunkEntry, StreamDesc, StreamKind};

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

/// A read past the footer at `footer_at` while reading `what`: `Truncated`
/// (cntk.md §4.2: the header ends at the footer); other core errors as they
/// convert.
pub(crate) fn past_footer(
    what: &'static str,
    footer_at: u64,
) -> impl Fn(dataformats_core::Error) -> Error {
    move |e: dataformats_core::Error| match e {
        dataformats_core::Error::Truncated { at, needed } => Error::new(
            ErrorKind::Truncated,
            format!("{what} ({needed} bytes) passes the footer at {footer_at}"),
        )
        .at(at),
        other => other.into(),
    }
}

/// The header's `count` stream descriptors at `c`, read one field at a
/// time and each field checked before the next is read (cntk.md §4.2
/// check 6): encoding, name (UTF-8), element type, dimension (below 2^31
/// for sparse streams), then the name's uniqueness.
pub(crate) fn stream_descriptors(
    c: &mut Input<'_>,
    count: u32,
    footer_at: u64,
) -> Result<Vec<StreamDesc>> {
    let cut = |what: &'static str| past_footer(what, footer_at);
    let mut streams = Vec::new();
    let mut names = HashSet::new();
    for i in 0..count {
        let at = c.offset();
        let enc = c.parse(le_u8).map_err(cut("stream encoding"))?;
        let kind = match enc {
            0 => StreamKind::Dense,
            1 => StreamKind::Sparse,
            e => {
                return Err(Error::new(
                    ErrorKind::BadEncoding,
                    format!("stream {i} has encoding type {e}"),
                )
                .at(at));
            }
        };
        let name_at = c.offset() + 4;
        let name = c.parse(stream_name).map_err(cut("stream name"))?;
        let name = std::str::from_utf8(name)
            .map_err(|_| {
                Error::new(
                    ErrorKind::BadName,
                    format!("stream {i}'s name is not UTF-8"),
                )
                .at(name_at)
            })?
            .to_string();
        let et_at = c.offset();
        let elem = match c.parse(le_u8).map_err(cut("element type"))? {
            0 => ElemType::F32,
            1 => ElemType::F64,
            e => {
                return Err(Error::new(
                    ErrorKind::BadElemType,
                    format!("stream {name:?} has element type {e}"),
                )
                .at(et_at));
            }
        };
        let dim_at = c.offset();
        let dim = c.parse(le_u32).map_err(cut("sample dimension"))?;
        if kind == StreamKind::Sparse && dim >= 1 << 31 {
            return Err(Error::new(
                ErrorKind::BadSampleDim,
                format!("sparse stream {name:?} has dimension {dim}"),
            )
            .at(dim_at));
        }
        if !names.insert(name.clone()) {
            return Err(Error::new(
                ErrorKind::DuplicateStream,
                format!("stream name {name:?} appears twice"),
            )
            .at(at));
        }
        streams.push(StreamDesc {
            name,
            kind,
            elem,
            dim,
        });
    }
    Ok(streams)
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
