//! Byte arrays stored as lengths (`DELTA_LENGTH_BYTE_ARRAY`) or as
//! differences from the value before (`DELTA_BYTE_ARRAY`), walked before
//! the Parquet decoder sees them.
//!
//! Both encodings begin with runs of 32-bit integers packed as differences
//! (`DELTA_BINARY_PACKED`: a header giving the block size, the miniblocks a
//! block, the count and the first value; then blocks of a least difference,
//! a bit width per miniblock and the miniblocks' bits). The decoder sets
//! aside four bytes for each integer the header counts before it reads one,
//! so a page of a few bytes claiming 2^36 of them ends the process (an
//! allocation of 256 GiB that fails aborts it); and a value stored as
//! differences can repeat most of the one before in a few bits, so a page
//! can decode to far more than it holds. The walk checks every count
//! against the page's values and the caller's limits, and adds up what
//! the values decode to, as the decoder would build them.

use std::sync::Arc;

use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;

use super::Positioned;
use crate::core::Limits;

/// Why a column chunk's pages could not be walked: the page (counted from
/// 0, data pages only) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bad {
    /// The data page, counted from the chunk's first.
    pub(super) page: usize,
    /// What is wrong with it.
    pub(super) why: String,
}

/// Whether column chunk `c` holds byte arrays (of any or of a fixed width)
/// and says some of its pages store them as lengths or as differences.
pub(super) fn stored_as_differences(c: &ColumnChunkMetaData) -> bool {
    use parquet::basic::Type;
    matches!(
        c.column_type(),
        Type::BYTE_ARRAY | Type::FIXED_LEN_BYTE_ARRAY
    ) && c.encodings().any(|e| {
        matches!(
            e,
            Encoding::DELTA_BYTE_ARRAY | Encoding::DELTA_LENGTH_BYTE_ARRAY
        )
    })
}

/// Walks the data pages of column chunk `c` (of a row group of `rows`
/// records, in a column whose greatest definition and repetition levels
/// are `def` and `rep`) that store byte arrays as lengths or differences:
/// each integer count checked against the page's values and against
/// `limits` (four bytes an integer), the integers read as the decoder
/// reads them where `decode` asks for what the values decode to (else
/// only counted, their bits stepped over). Gives the bytes the chunk's
/// values decode to (without `decode`, or in pages of another encoding,
/// the bytes of the pages' values: not less where they lie whole in them),
/// or why a page cannot be decoded. A chunk whose
/// pages cannot be read gives the reader's error as the first page's.
pub(super) fn walk_chunk(
    input: &Positioned,
    c: &ColumnChunkMetaData,
    rows: usize,
    def: i16,
    rep: i16,
    decode: bool,
) -> Result<u64, Bad> {
    let mut pages = parquet::file::serialized_reader::SerializedPageReader::new(
        Arc::new(input.clone()),
        c,
        rows,
        None,
    )
    .map_err(|e| Bad {
        page: 0,
        why: e.to_string(),
    })?;
    let mut prefixes = Vec::new();
    let mut bytes = 0u64;
    let mut page = 0usize;
    loop {
        let next = pages.get_next_page().map_err(|e| Bad {
            page,
            why: e.to_string(),
        })?;
        let bad = |why: String| Bad { page, why };
        let (values, count, encoding) = match next {
            None => return Ok(bytes),
            Some(Page::DictionaryPage { .. }) => continue,
            Some(Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            }) => {
                let levels = [(rep, rep_level_encoding), (def, def_level_encoding)];
                let at = levels_end(&buf, num_values, &levels).ok_or_else(|| {
                    bad("its repetition and definition levels run past its end".into())
                })?;
                (buf.slice(at..), num_values, encoding)
            }
            Some(Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            }) => {
                let at = usize::try_from(
                    u64::from(def_levels_byte_len) + u64::from(rep_levels_byte_len),
                )
                .ok()
                .filter(|&at| at <= buf.len())
                .ok_or_else(|| bad("its levels run past its end".into()))?;
                (buf.slice(at..), num_values, encoding)
            }
        };
        let most = u64::from(count);
        let decoded = match encoding {
            Encoding::DELTA_LENGTH_BYTE_ARRAY => {
                counted(&values, most, &input.limits).map_err(bad)?;
                len_u64(values.len())
            }
            Encoding::DELTA_BYTE_ARRAY if decode => {
                differences(&values, most, &input.limits, &mut prefixes).map_err(bad)?
            }
            Encoding::DELTA_BYTE_ARRAY => {
                let (_, end) = counted(&values, most, &input.limits).map_err(bad)?;
                let suffixes = values
                    .get(end..)
                    .ok_or_else(|| bad("its prefix lengths run past its end".into()))?;
                counted(suffixes, most, &input.limits).map_err(bad)?;
                len_u64(values.len())
            }
            _ => len_u64(values.len()),
        };
        bytes = bytes.saturating_add(decoded);
        page += 1;
    }
}

/// `n` as a `u64`.
fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Where the values of a version-1 data page of `count` levels start in
/// `buf` (its bytes, decompressed), past its repetition and then its
/// definition levels: each `(greatest level, encoding)` of `levels` that
/// has any, RLE-encoded after a 4-byte length, or bit-packed in
/// `count` levels' bits; `None` when they run past its end.
fn levels_end(buf: &[u8], count: u32, levels: &[(i16, Encoding)]) -> Option<usize> {
    let mut at = 0usize;
    for &(max, encoding) in levels {
        if max <= 0 {
            continue;
        }
        let len = match encoding {
            Encoding::RLE => {
                let len = buf.get(at..)?.first_chunk::<4>()?;
                4usize.checked_add(usize::try_from(u32::from_le_bytes(*len)).ok()?)?
            }
            _ => {
                let width = 16 - u64::from(max.unsigned_abs().leading_zeros());
                usize::try_from((u64::from(count) * width).div_ceil(8)).ok()?
            }
        };
        at = at.checked_add(len).filter(|&end| end <= buf.len())?;
    }
    Some(at)
}

/// What the byte arrays of a `DELTA_BYTE_ARRAY` page (`values`, of at most
/// `most` values) decode to: each value the one before cut to its prefix
/// length, its suffix added, as the decoder builds it (a prefix longer
/// than the value before, or negative, keeps all of it). The prefix
/// lengths go to `prefixes` (kept between pages). Counting stops at a
/// suffix the page does not hold: the decoder fails there.
fn differences(
    values: &[u8],
    most: u64,
    limits: &Limits,
    prefixes: &mut Vec<i32>,
) -> Result<u64, String> {
    prefixes.clear();
    let (n, end) = packed(values, most, limits, |p| prefixes.push(p))?;
    let suffixes = values
        .get(end..)
        .ok_or_else(|| "its prefix lengths run past its end".to_string())?;
    let (m, end) = counted(suffixes, most, limits)?;
    if n != m {
        return Err(format!(
            "it holds {n} prefix lengths but {m} suffix lengths"
        ));
    }
    // The suffixes' bytes follow both runs of lengths.
    let mut left = len_u64(suffixes.len()).saturating_sub(len_u64(end));
    let mut last = 0u64;
    let mut total = 0u64;
    let mut stopped = false;
    let mut prefix = prefixes.iter();
    packed(suffixes, most, limits, |s| {
        let p = prefix.next().copied().unwrap_or(0);
        let suffix = u64::try_from(s).ok().filter(|&s| s <= left);
        let Some(suffix) = suffix.filter(|_| !stopped) else {
            stopped = true;
            return;
        };
        left -= suffix;
        last = u64::try_from(p).map_or(last, |p| p.min(last)) + suffix;
        total = total.saturating_add(last);
    })?;
    Ok(total)
}

/// Reads the `DELTA_BINARY_PACKED` 32-bit integers at the start of `data`
/// as the Parquet decoder does (differences added with wrap-around), each
/// given to `each`; gives how many there are and where the run ends (each
/// block's miniblocks in whole, as the decoder skips them). Fails when the
/// header is malformed, counts more than `most` integers or more than
/// `limits` allow four bytes for, or the bits run short.
fn packed(
    data: &[u8],
    most: u64,
    limits: &Limits,
    mut each: impl FnMut(i32),
) -> Result<(u64, usize), String> {
    run(data, most, limits, Some(&mut each))
}

/// [`packed`] without reading the integers: their count checked, their
/// blocks' headers read and their bits stepped over (present, not read).
fn counted(data: &[u8], most: u64, limits: &Limits) -> Result<(u64, usize), String> {
    run(data, most, limits, None)
}

/// [`packed`], the integers given to `each` if any.
fn run(
    data: &[u8],
    most: u64,
    limits: &Limits,
    mut each: Option<&mut dyn FnMut(i32)>,
) -> Result<(u64, usize), String> {
    let mut at = 0usize;
    let short = || "its lengths run past its end".to_string();
    let block = uleb(data, &mut at).ok_or_else(short)?;
    let minis = uleb(data, &mut at).ok_or_else(short)?;
    let count = uleb(data, &mut at).ok_or_else(short)?;
    let first = zigzag(data, &mut at).ok_or_else(short)?;
    if count > most {
        return Err(format!(
            "its lengths are counted as {count}, more than its {most} values"
        ));
    }
    limits
        .check_alloc("Parquet byte array lengths", count.saturating_mul(4))
        .map_err(|e| e.to_string())?;
    if block == 0 || block % 128 != 0 || minis == 0 || block % minis != 0 {
        return Err(format!(
            "its lengths come in blocks of {block} in {minis} miniblocks"
        ));
    }
    let per_mini = block / minis;
    if per_mini % 32 != 0 {
        return Err(format!(
            "its miniblocks hold {per_mini} lengths, not a multiple of 32"
        ));
    }
    if count == 0 {
        return Ok((0, at));
    }
    let mut last =
        i32::try_from(first).map_err(|_| format!("its first length {first} is not 32-bit"))?;
    if let Some(each) = each.as_mut() {
        each(last);
    }
    let mut left = count - 1;
    let minis = usize::try_from(minis).map_err(|_| short())?;
    while left > 0 {
        let min = zigzag(data, &mut at).ok_or_else(short)?;
        let min =
            i32::try_from(min).map_err(|_| format!("its least difference {min} is not 32-bit"))?;
        let widths = data
            .get(at..)
            .and_then(|d| d.get(..minis))
            .ok_or_else(short)?;
        at += minis;
        for &width in widths {
            if left == 0 {
                continue;
            }
            if width > 32 {
                return Err(format!("a miniblock of its lengths is {width} bits wide"));
            }
            let n = per_mini.min(left);
            let bits = data.get(at..).ok_or_else(short)?;
            let needed =
                usize::try_from((n * u64::from(width)).div_ceil(8)).map_err(|_| short())?;
            let bits = bits.get(..needed).ok_or_else(short)?;
            if let Some(each) = each.as_mut() {
                unpack(bits, width, n, |v| {
                    last = last.wrapping_add(min).wrapping_add(v as i32);
                    each(last);
                });
            }
            let whole = usize::try_from(per_mini * u64::from(width) / 8).map_err(|_| short())?;
            at = at.checked_add(whole).ok_or_else(short)?;
            left -= n;
        }
    }
    Ok((count, at))
}

/// Gives `each` the `n` integers of `width` bits packed from the least
/// significant bit of `bits` up (which holds them all).
fn unpack(bits: &[u8], width: u8, n: u64, mut each: impl FnMut(u32)) {
    let mask = match width {
        32 => u64::from(u32::MAX),
        w => (1u64 << w) - 1,
    };
    for k in 0..n {
        let bit = k * u64::from(width);
        let byte = usize::try_from(bit / 8).unwrap_or(usize::MAX);
        let mut word = [0u8; 8];
        if let Some(from) = bits.get(byte..) {
            let take = from.len().min(8);
            if let (Some(to), Some(from)) = (word.get_mut(..take), from.get(..take)) {
                to.copy_from_slice(from);
            }
        }
        let v = (u64::from_le_bytes(word) >> (bit % 8)) & mask;
        each(v as u32);
    }
}

/// An unsigned LEB128 integer at `*at` in `data` (at most 10 bytes),
/// `*at` moved past it.
fn uleb(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A zigzag-encoded LEB128 integer at `*at` in `data`.
fn zigzag(data: &[u8], at: &mut usize) -> Option<i64> {
    let v = uleb(data, at)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

#[cfg(test)]
mod tests {
    use crate::core::Limits;

    /// A run of `count` integers (`count` < 128): blocks of 128 in 4
    /// miniblocks, `first`, then one block of least difference `min` whose
    /// first miniblock is `width` bits wide and holds `bits`.
    fn run(count: u8, first: i64, min: i64, width: u8, bits: &[u8]) -> Vec<u8> {
        let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u8;
        let mut out = vec![0x80, 0x01, 0x04, count, zigzag(first)];
        if count > 1 {
            out.extend([zigzag(min), width, 0, 0, 0]);
            let mut mini = vec![0u8; 32 * usize::from(width) / 8];
            mini[..bits.len()].copy_from_slice(bits);
            out.extend(mini);
        }
        out
    }

    /// The integers of a run, where it ends.
    fn integers(data: &[u8]) -> (Vec<i32>, usize) {
        let mut got = Vec::new();
        let (n, end) = super::packed(data, 100, &Limits::default(), |v| got.push(v)).unwrap();
        assert_eq!(n as usize, got.len());
        (got, end)
    }

    /// Runs of integers read as the decoder reads them: differences of no
    /// bits (the least difference each time) and of two bits, a run of one
    /// (no block) and of none; each ends after its miniblocks in whole.
    #[test]
    fn runs_of_differences() {
        assert_eq!(integers(&run(4, 0, 5, 0, &[])), (vec![0, 5, 10, 15], 10));
        // Differences +1, +2, -1: least -1, packed 2, 3, 0 in two bits.
        let r = run(4, 0, -1, 2, &[0b0000_1110]);
        assert_eq!(integers(&r), (vec![0, 1, 3, 2], 18));
        assert_eq!(integers(&run(1, -7, 0, 0, &[])), (vec![-7], 5));
        assert_eq!(integers(&run(0, 0, 0, 0, &[])), (vec![], 5));
        // Cut inside the bits the values need.
        let limits = Limits::default();
        assert!(super::packed(&r[..r.len() - 8], 100, &limits, |_| {}).is_err());
        // More than the page's values, more than the limits allow.
        assert!(super::packed(&r, 3, &limits, |_| {}).is_err());
        let tight = Limits::default().with_max_alloc(15);
        assert!(super::packed(&r, 100, &tight, |_| {}).is_err());
        // Wider than 32 bits.
        assert!(super::packed(&run(4, 0, 0, 33, &[]), 100, &limits, |_| {}).is_err());
    }

    /// What a page of values stored as differences decodes to: each value
    /// the one before cut to its prefix length (all of it kept when the
    /// prefix is longer or negative) and its suffix added; counting stops
    /// at a suffix the page does not hold.
    #[test]
    fn values_as_the_decoder_builds_them() {
        let total = |prefixes: Vec<u8>, suffixes: Vec<u8>, data: usize| {
            let mut page = prefixes;
            page.extend(suffixes);
            page.extend(vec![b'x'; data]);
            super::differences(&page, 100, &Limits::default(), &mut Vec::new())
        };
        // Prefixes 0, 5, 10, 15 (longer than the value before from the
        // second on), suffixes of 3: values of 3, 6, 9 and 12 bytes.
        assert_eq!(
            total(run(4, 0, 5, 0, &[]), run(4, 3, 0, 0, &[]), 12),
            Ok(30)
        );
        // Prefixes 0, 1, 3, 2, suffixes of 4: 4, 5, 7, 6.
        let p = run(4, 0, -1, 2, &[0b0000_1110]);
        assert_eq!(total(p.clone(), run(4, 4, 0, 0, &[]), 16), Ok(22));
        // A negative prefix keeps the value before whole: 4, 8, 12, 16.
        assert_eq!(
            total(run(4, -1, 0, 0, &[]), run(4, 4, 0, 0, &[]), 16),
            Ok(40)
        );
        // Suffix bytes for the first three values only.
        assert_eq!(total(p.clone(), run(4, 4, 0, 0, &[]), 15), Ok(16));
        // As many prefixes as suffixes.
        assert!(total(p, run(3, 4, 0, 0, &[]), 16).is_err());
    }
}
