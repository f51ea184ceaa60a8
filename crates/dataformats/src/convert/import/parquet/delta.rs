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
//! against the page's values and the caller's limits and, where the
//! metadata does not say what the values decode to, adds that up as the
//! decoder would build them (a footer that says less is believed: reading
//! every length cost 0.91 to 0.94x on 5 million strings). Which chunks
//! are walked: those whose metadata lists either encoding, and those whose
//! page headers use one (the decoder follows the pages, not the list).

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

/// Whether some data page of column chunk `c` (of byte arrays whose
/// metadata lists neither encoding) stores its values as lengths or as
/// differences all the same: the page headers read from the file in turn
/// ([`page_header`]), the pages themselves stepped over. A chunk's
/// metadata need not list its pages' encodings, and the decoder follows
/// the pages'. Headers that cannot be read say nothing (the decoder fails
/// on them).
pub(super) fn pages_store_differences(input: &Positioned, c: &ColumnChunkMetaData) -> bool {
    use parquet::basic::Type;
    if !matches!(
        c.column_type(),
        Type::BYTE_ARRAY | Type::FIXED_LEN_BYTE_ARRAY
    ) {
        return false;
    }
    let Some(chunk) = super::chunk_range(c) else {
        return false;
    };
    let mut at = chunk.start;
    while at < chunk.end {
        let Some(h) = page_header(input, at, chunk.end) else {
            return false;
        };
        if h.encoding.is_some_and(|e| e == 6 || e == 7) {
            return true;
        }
        match at.checked_add(h.len).and_then(|a| a.checked_add(h.body)) {
            Some(next) if next > at => at = next,
            _ => return false,
        }
    }
    false
}

/// What [`page_header`] reads of a page header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Header {
    /// The header's own bytes.
    pub(super) len: u64,
    /// The bytes of the page after it, as stored.
    pub(super) body: u64,
    /// A data page's encoding (its number in the format: 6 lengths, 7
    /// differences), `None` for other pages.
    pub(super) encoding: Option<i32>,
}

/// The page header at `at` (before `end`) in `input`, in the Thrift
/// compact protocol: 256 bytes read, then four times as many while the
/// header goes on (up to 16 MiB: statistics can be long). `None` when it
/// cannot be read.
pub(super) fn page_header(input: &Positioned, at: u64, end: u64) -> Option<Header> {
    use parquet::file::reader::ChunkReader;
    let mut want = 256u64;
    loop {
        let n = want.min(end.checked_sub(at)?);
        let bytes = input.get_bytes(at, usize::try_from(n).ok()?).ok()?;
        let mut r = Compact {
            bytes: &bytes,
            at: 0,
        };
        match r.page_header() {
            Some(h) => return Some(h),
            None if r.at < bytes.len() || n < want || want >= 16 << 20 => return None,
            None => want *= 4,
        }
    }
}

/// A reader of the Thrift compact protocol over `bytes`; `at` ends past
/// them when they run short.
struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    /// The next byte; `at` past the end when there is none.
    fn byte(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.at).copied();
        self.at = self.at.saturating_add(1);
        b
    }

    /// An unsigned varint.
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A zigzag varint that fits 32 bits.
    fn int(&mut self) -> Option<i32> {
        let v = self.varint()?;
        i32::try_from(((v >> 1) as i64) ^ -((v & 1) as i64)).ok()
    }

    /// The fields of a struct, each given to `field` with its id and type
    /// (which reads it, or returns `false` to have it skipped), to the
    /// stop byte.
    fn fields(
        &mut self,
        depth: u32,
        mut field: impl FnMut(&mut Self, i16, u8) -> Option<bool>,
    ) -> Option<()> {
        let mut id = 0i16;
        loop {
            let b = self.byte()?;
            if b == 0 {
                return Some(());
            }
            let kind = b & 0x0f;
            id = match b >> 4 {
                0 => i16::try_from(self.int()?).ok()?,
                delta => id.checked_add(i16::from(delta))?,
            };
            if !field(self, id, kind)? {
                self.skip(kind, depth)?;
            }
        }
    }

    /// Steps over a value of compact type `kind`, nested at most 32 deep.
    fn skip(&mut self, kind: u8, depth: u32) -> Option<()> {
        if depth > 32 {
            return None;
        }
        match kind {
            1 | 2 => {}
            3 => {
                self.byte()?;
            }
            4..=6 => {
                self.varint()?;
            }
            7 => self.at = self.at.checked_add(8)?,
            8 => {
                let n = usize::try_from(self.varint()?).ok()?;
                self.at = self.at.checked_add(n)?;
            }
            9 | 10 => {
                let h = self.byte()?;
                let n = match h >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.room(n)?;
                for _ in 0..n {
                    self.element(h & 0x0f, depth + 1)?;
                }
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    self.room(n.saturating_mul(2))?;
                    for _ in 0..n {
                        self.element(kv >> 4, depth + 1)?;
                        self.element(kv & 0x0f, depth + 1)?;
                    }
                }
            }
            12 => self.fields(depth + 1, |_, _, _| Some(false))?,
            _ => return None,
        }
        (self.at <= self.bytes.len()).then_some(())
    }

    /// Steps over an element of a list, set or map of compact type
    /// `kind`: a boolean there takes a byte (in a struct, its field
    /// header holds it), anything else as in a struct. Every element
    /// takes a byte at least.
    fn element(&mut self, kind: u8, depth: u32) -> Option<()> {
        match kind {
            1 | 2 => self.skip(3, depth),
            _ => self.skip(kind, depth),
        }
    }

    /// Whether `n` more bytes can follow in what was read; when not,
    /// `at` is moved past the end (the bytes ran short: a longer read may
    /// hold them) and `None` given, so that a count of 2^60 elements is
    /// not stepped through one by one.
    fn room(&mut self, n: u64) -> Option<()> {
        let left = self.bytes.len().saturating_sub(self.at);
        if n > u64::try_from(left).unwrap_or(u64::MAX) {
            self.at = self.bytes.len().saturating_add(1);
            return None;
        }
        Some(())
    }

    /// A page header: its compressed size (field 3) and, for a data page
    /// of version 1 or 2 (fields 5 and 8), its encoding (field 2 of the
    /// one, 4 of the other).
    fn page_header(&mut self) -> Option<Header> {
        let (mut body, mut encoding) = (None, None);
        self.fields(0, |r, id, kind| match (id, kind) {
            (3, 5) => {
                body = Some(u64::try_from(r.int()?).ok()?);
                Some(true)
            }
            (5 | 8, 12) => {
                let wanted = if id == 5 { 2 } else { 4 };
                r.fields(1, |r, id, kind| match (id == wanted, kind) {
                    (true, 5) => {
                        encoding = Some(r.int()?);
                        Some(true)
                    }
                    _ => Some(false),
                })?;
                Some(true)
            }
            _ => Some(false),
        })?;
        (self.at <= self.bytes.len()).then_some(())?;
        Some(Header {
            len: u64::try_from(self.at).ok()?,
            body: body?,
            encoding,
        })
    }
}

/// Walks the data pages of column chunk `c` (of a row group of `rows`
/// records, in a column whose greatest definition and repetition levels
/// are `def` and `rep`) that store byte arrays as lengths or differences:
/// each integer count checked against the page's values and against
/// `limits` (four bytes an integer); with `decode` (for a chunk whose
/// metadata does not say what its values decode to), the lengths read as
/// the decoder reads them, else only counted. Gives what the chunk's
/// values stored as lengths or differences decode to (0 without
/// `decode`), or why a page cannot be decoded; values stored otherwise
/// lie whole in their pages, which the metadata's sizes count. A chunk stored
/// uncompressed or by Snappy or Zstandard has its pages read as stored
/// and only as much of each page of lengths or differences decompressed
/// as its runs of lengths take ([`page_start`]); other codecs decompress
/// whole pages. A chunk whose pages cannot be read gives the reader's
/// error as the first page's.
pub(super) fn walk_chunk(
    input: &Positioned,
    c: &ColumnChunkMetaData,
    rows: usize,
    def: i16,
    rep: i16,
    decode: bool,
) -> Result<u64, Bad> {
    use parquet::basic::Compression;
    let stored = matches!(
        c.compression(),
        Compression::UNCOMPRESSED | Compression::SNAPPY | Compression::ZSTD(_)
    );
    if stored {
        return by_page_starts(input, c, rows, def, rep, decode);
    }
    let mut pages = Pages::of(input, c, rows, false)?;
    let mut prefixes = Vec::new();
    let mut bytes = 0u64;
    let mut page = 0usize;
    loop {
        let next = pages.next(page)?;
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
        let decoded = page_values(
            &values,
            encoding,
            most,
            &input.limits,
            &mut prefixes,
            true,
            decode,
        )
        .map_err(bad)?;
        bytes = bytes.saturating_add(decoded);
        page += 1;
    }
}

/// The runs of lengths of a page's values (`values`, decompressed, at
/// least their start) stored as `encoding` counted ([`counted`]: their
/// blocks' headers read, not their bits): at most `most` each.
fn count_runs(values: &[u8], encoding: Encoding, most: u64, limits: &Limits) -> Result<(), String> {
    let (_, end) = counted(values, most, limits)?;
    if encoding == Encoding::DELTA_BYTE_ARRAY {
        let suffixes = values
            .get(end..)
            .ok_or_else(|| "its prefix lengths run past its end".to_string())?;
        counted(suffixes, most, limits)?;
    }
    Ok(())
}

/// What the values of a page (`values`, decompressed: all of them when
/// `whole`, else at least their runs of lengths) stored as `encoding`
/// decode to, as far as [`walk_chunk`] counts them: with `decode`, those
/// stored as differences ([`differences`]) or as lengths (their lengths)
/// added up; without, 0. Each run of lengths is at most `most` long;
/// other encodings give 0.
fn page_values(
    values: &[u8],
    encoding: Encoding,
    most: u64,
    limits: &Limits,
    prefixes: &mut Vec<i32>,
    whole: bool,
    decode: bool,
) -> Result<u64, String> {
    match encoding {
        Encoding::DELTA_LENGTH_BYTE_ARRAY | Encoding::DELTA_BYTE_ARRAY if !decode => {
            count_runs(values, encoding, most, limits).map(|()| 0)
        }
        Encoding::DELTA_LENGTH_BYTE_ARRAY => {
            let mut sum = 0u64;
            packed(values, most, limits, |l| {
                sum = sum.saturating_add(u64::try_from(l).unwrap_or(0))
            })?;
            Ok(sum)
        }
        Encoding::DELTA_BYTE_ARRAY => {
            // Both runs there before either is read: a page's start is
            // tried again and again until they are.
            count_runs(values, encoding, most, limits)?;
            differences(values, most, limits, prefixes, whole)
        }
        _ => Ok(0),
    }
}

/// [`walk_chunk`] for a chunk stored uncompressed or compressed by Snappy
/// or Zstandard: its pages read as stored, and only the pages of lengths
/// or differences decompressed, only as far as their runs of lengths go
/// ([`page_start`]).
fn by_page_starts(
    input: &Positioned,
    c: &ColumnChunkMetaData,
    rows: usize,
    def: i16,
    rep: i16,
    decode: bool,
) -> Result<u64, Bad> {
    let codec = c.compression();
    let mut pages = Pages::of(input, c, rows, true)?;
    let delta = |e: Encoding| {
        matches!(
            e,
            Encoding::DELTA_BYTE_ARRAY | Encoding::DELTA_LENGTH_BYTE_ARRAY
        )
    };
    let limits = &input.limits;
    let mut zstd = None;
    let mut prefixes = Vec::new();
    let mut bytes = 0u64;
    let mut page = 0usize;
    loop {
        let checked = match pages.next(page)? {
            None => return Ok(bytes),
            Some(Page::DictionaryPage { .. }) => continue,
            Some(Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            }) if delta(encoding) => {
                let levels = [(rep, rep_level_encoding), (def, def_level_encoding)];
                page_start(codec, &buf, true, &mut zstd, |body, whole| {
                    let at = levels_end(body, num_values, &levels).ok_or_else(|| {
                        "its repetition and definition levels run past its end".to_string()
                    })?;
                    let values = body.get(at..).unwrap_or_default();
                    let most = u64::from(num_values);
                    page_values(values, encoding, most, limits, &mut prefixes, whole, decode)
                })
            }
            Some(Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed,
                ..
            }) if delta(encoding) => {
                let levels = u64::from(def_levels_byte_len) + u64::from(rep_levels_byte_len);
                match usize::try_from(levels).ok().and_then(|at| buf.get(at..)) {
                    Some(values) => {
                        page_start(codec, values, is_compressed, &mut zstd, |body, whole| {
                            let most = u64::from(num_values);
                            page_values(body, encoding, most, limits, &mut prefixes, whole, decode)
                        })
                    }
                    None => Err("its levels run past its end".to_string()),
                }
            }
            Some(_) => Ok(0),
        };
        let decoded = checked.map_err(|why| Bad { page, why })?;
        bytes = bytes.saturating_add(decoded);
        page += 1;
    }
}

/// Runs `check` on the start of the page body `stored` (compressed by
/// `codec` when `compressed`) decompressed, with whether it is whole:
/// 4 KiB of it, then twice as much while `check` fails and the body goes
/// on (decompressing on from where it stopped), until it is whole; a
/// Zstandard body with the decompression context in `zstd` (made at
/// first, kept for the next page). Gives what `check` gives of the first
/// start it takes, or of the whole body; the body's error when it does
/// not decompress.
fn page_start(
    codec: parquet::basic::Compression,
    stored: &[u8],
    compressed: bool,
    zstd: &mut Option<Zstd>,
    mut check: impl FnMut(&[u8], bool) -> Result<u64, String>,
) -> Result<u64, String> {
    use parquet::basic::Compression;
    if !compressed || codec == Compression::UNCOMPRESSED {
        return check(stored, true);
    }
    let mut body = match codec {
        Compression::SNAPPY => Body::snappy(stored),
        _ => Body::zstd(stored, zstd),
    }
    .ok_or_else(|| "its values do not decompress".to_string())?;
    let mut want = 4usize << 10;
    loop {
        let whole = body
            .to(want)
            .ok_or_else(|| "its values do not decompress".to_string())?;
        match check(&body.out, whole) {
            Err(_) if !whole => want = want.saturating_mul(2),
            done => return done,
        }
    }
}

/// A page body being decompressed from its start, as far as asked.
struct Body<'a> {
    /// What is decompressed so far.
    out: Vec<u8>,
    /// The body as stored.
    stored: &'a [u8],
    /// How far into `stored` the decompression has read.
    at: usize,
    /// Whether it is all decompressed.
    ended: bool,
    /// How it is compressed.
    codec: Codec<'a>,
}

/// The codecs a [`Body`] decompresses piece by piece.
enum Codec<'a> {
    /// A raw Snappy block, of the length it announces.
    Snappy(usize),
    /// A Zstandard frame, with its decompression's state.
    Zstd(&'a mut zstd::stream::raw::Decoder<'static>),
}

/// A Zstandard decompression context, kept from page to page.
type Zstd = Box<zstd::stream::raw::Decoder<'static>>;

impl<'a> Body<'a> {
    /// The raw Snappy block `stored`; `None` without its length.
    fn snappy(stored: &'a [u8]) -> Option<Self> {
        let mut at = 0;
        let total = usize::try_from(uleb(stored, &mut at)?).ok()?;
        Some(Body {
            out: Vec::new(),
            stored,
            at,
            ended: total == 0,
            codec: Codec::Snappy(total),
        })
    }

    /// The Zstandard frame `stored`, decompressed with the context in
    /// `zstd` (made if there is none).
    fn zstd(stored: &'a [u8], zstd: &'a mut Option<Zstd>) -> Option<Self> {
        use zstd::stream::raw::Operation;
        let d = match zstd {
            Some(d) => {
                d.reinit().ok()?;
                d
            }
            None => zstd.insert(Box::new(zstd::stream::raw::Decoder::new().ok()?)),
        };
        Some(Body {
            out: Vec::new(),
            stored,
            at: 0,
            ended: false,
            codec: Codec::Zstd(d),
        })
    }

    /// Decompresses on until `want` bytes (or up to 64 more) are out or
    /// the body ends; whether it ended. `None` when it is malformed: for
    /// Snappy, an element past its end, a copy from before the start or
    /// more than the length it announces; for Zstandard, an error of the
    /// decoder or a frame cut short.
    fn to(&mut self, want: usize) -> Option<bool> {
        match &mut self.codec {
            Codec::Snappy(total) => {
                let total = *total;
                snappy_more(self.stored, &mut self.at, &mut self.out, total, want)?;
                self.ended = self.out.len() >= total;
            }
            Codec::Zstd(d) => {
                use zstd::stream::raw::Operation;
                while !self.ended && self.out.len() < want {
                    let start = self.out.len();
                    self.out.resize(want.max(start + 64), 0);
                    let input = self.stored.get(self.at..)?;
                    let status = d.run_on_buffers(input, self.out.get_mut(start..)?).ok()?;
                    self.at += status.bytes_read;
                    self.out.truncate(start + status.bytes_written);
                    // The frame decoded and flushed whole.
                    if status.remaining == 0 {
                        self.ended = true;
                    } else if status.bytes_read == 0 && status.bytes_written == 0 {
                        // No progress: the frame is cut short.
                        return None;
                    }
                }
            }
        }
        Some(self.ended)
    }
}

/// Follows the elements of the raw Snappy block `stored` from `*at`
/// (literals, and copies of what came before) onto `out`, until `want`
/// bytes (or up to 64 more) of its `total` are out.
fn snappy_more(
    stored: &[u8],
    at: &mut usize,
    out: &mut Vec<u8>,
    total: usize,
    want: usize,
) -> Option<()> {
    let want = want.min(total);
    let take = |n: usize, at: &mut usize| -> Option<usize> {
        let bytes = stored.get(*at..)?.get(..n)?;
        *at += n;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0usize, |v, &b| (v << 8) | usize::from(b)),
        )
    };
    out.reserve(want.saturating_sub(out.len()).saturating_add(64));
    while out.len() < want {
        let tag = *stored.get(*at)?;
        *at += 1;
        let high = usize::from(tag >> 2);
        let (len, offset) = match tag & 3 {
            0 => {
                let len = match high {
                    0..=59 => high + 1,
                    n => take(n - 59, at)?.checked_add(1)?,
                };
                let literal = stored.get(*at..)?.get(..len)?;
                *at += len;
                if out.len() + len > total {
                    return None;
                }
                out.extend_from_slice(literal);
                continue;
            }
            1 => (4 + (high & 7), ((high >> 3) << 8) | take(1, at)?),
            2 => (high + 1, take(2, at)?),
            _ => (high + 1, take(4, at)?),
        };
        if offset == 0 || offset > out.len() || out.len() + len > total {
            return None;
        }
        let from = out.len() - offset;
        match offset >= len {
            true => out.extend_from_within(from..from + len),
            // A copy of what it is writing: a pattern repeated.
            false => {
                for k in 0..len {
                    let b = *out.get(from + k)?;
                    out.push(b);
                }
            }
        }
    }
    Some(())
}

/// The pages of a column chunk, read in turn.
struct Pages(parquet::file::serialized_reader::SerializedPageReader<Positioned>);

impl Pages {
    /// The pages of column chunk `c` (of a row group of `rows` records)
    /// in `input`: as stored when `stored`, else decompressed.
    fn of(
        input: &Positioned,
        c: &ColumnChunkMetaData,
        rows: usize,
        stored: bool,
    ) -> Result<Self, Bad> {
        use parquet::basic::Compression;
        let why = |e: parquet::errors::ParquetError| Bad {
            page: 0,
            why: e.to_string(),
        };
        let raw;
        let c = match stored {
            true => {
                let b = c.clone().into_builder();
                raw = b
                    .set_compression(Compression::UNCOMPRESSED)
                    .build()
                    .map_err(why)?;
                &raw
            }
            false => c,
        };
        let reader = parquet::file::serialized_reader::SerializedPageReader::new(
            Arc::new(input.clone()),
            c,
            rows,
            None,
        );
        reader.map(Pages).map_err(why)
    }

    /// The next page, its reader's error as page `page`'s.
    fn next(&mut self, page: usize) -> Result<Option<Page>, Bad> {
        self.0.get_next_page().map_err(|e| Bad {
            page,
            why: e.to_string(),
        })
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
/// suffix the page does not hold (the decoder fails there), when `whole`
/// says `values` holds all the page's values (else only the lengths are
/// known to be there).
fn differences(
    values: &[u8],
    most: u64,
    limits: &Limits,
    prefixes: &mut Vec<i32>,
    whole: bool,
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
    let mut left = match whole {
        true => len_u64(suffixes.len()).saturating_sub(len_u64(end)),
        false => u64::MAX,
    };
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
    run::<fn(i32)>(data, most, limits, None)
}

/// [`packed`], the integers given to `each` if any.
fn run<F: FnMut(i32)>(
    data: &[u8],
    most: u64,
    limits: &Limits,
    mut each: Option<&mut F>,
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
    let width = u64::from(width);
    let mask = match width {
        32 => u64::from(u32::MAX),
        w => (1u64 << w) - 1,
    };
    for k in 0..n {
        let bit = k * width;
        let byte = usize::try_from(bit / 8).unwrap_or(usize::MAX);
        // Eight bytes from the value's first (fewer, padded, at the end).
        let word = match bits.get(byte..).and_then(|b| b.first_chunk::<8>()) {
            Some(word) => u64::from_le_bytes(*word),
            None => {
                let mut word = [0u8; 8];
                let tail = bits.get(byte..).unwrap_or_default();
                for (to, from) in word.iter_mut().zip(tail) {
                    *to = *from;
                }
                u64::from_le_bytes(word)
            }
        };
        each(((word >> (bit % 8)) & mask) as u32);
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
            super::differences(&page, 100, &Limits::default(), &mut Vec::new(), true)
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

    /// `count` integers in blocks of 128 in 4 miniblocks, every miniblock
    /// `width` bits wide holding bytes of 0x55.
    fn long_run(count: u32, width: u8) -> Vec<u8> {
        let mut out = vec![0x80, 0x01, 0x04];
        let mut n = count;
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.push(0);
        let mut left = count.saturating_sub(1);
        while left > 0 {
            out.extend([0, width, width, width, width]);
            for _ in 0..4 {
                if left == 0 {
                    break;
                }
                out.extend(vec![0x55; 32 * usize::from(width) / 8]);
                left = left.saturating_sub(32);
            }
        }
        out
    }

    /// Runs of one byte and some noise: 100 KB that compress to less than
    /// half.
    fn body() -> Vec<u8> {
        let mut x = 7u32;
        (0..100_000u32)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                match (i / 64) % 4 {
                    0 => (x >> 24) as u8,
                    _ => (i / 6_400) as u8,
                }
            })
            .collect()
    }

    /// The first `want` bytes of `body` (or more), and whether that is all.
    fn prefix(body: Option<super::Body<'_>>, want: usize) -> Option<(Vec<u8>, bool)> {
        let mut body = body?;
        let all = body.to(want)?;
        Some((body.out, all))
    }

    /// The start of a Snappy block or a Zstandard frame decompressed is
    /// the start of the whole, at least as long as asked for, and says
    /// whether it is all, asked for at once or on from where it stopped; a
    /// block cut short or copying from before its start is refused.
    #[test]
    fn prefixes_of_compressed_pages() {
        let whole = body();
        let snappy = snap::raw::Encoder::new().compress_vec(&whole).unwrap();
        let zstd = zstd::bulk::compress(&whole, 3).unwrap();
        assert!(snappy.len() < 50_000 && zstd.len() < 50_000);
        for want in [0, 1, 100, 4_096, 50_000, 99_999, 100_000, 1 << 20] {
            for (name, got) in [
                ("snappy", prefix(super::Body::snappy(&snappy), want)),
                ("zstd", prefix(super::Body::zstd(&zstd, &mut None), want)),
            ] {
                let (start, all) = got.unwrap();
                assert!(start.len() >= want.min(whole.len()), "{name} {want}");
                assert_eq!(
                    start[..],
                    whole[..start.len().min(whole.len())],
                    "{name} {want}"
                );
                assert_eq!(all, start.len() >= whole.len(), "{name} {want}");
                assert!(start.len() <= whole.len(), "{name} {want}");
            }
        }
        // One context for frame after frame, the first left half done.
        let mut context = None;
        for _ in 0..3 {
            let (start, _) = prefix(super::Body::zstd(&zstd, &mut context), 4_096).unwrap();
            assert_eq!(start[..], whole[..start.len()]);
        }
        let again = prefix(super::Body::zstd(&zstd, &mut context), 1 << 20).unwrap();
        assert_eq!((again.0, again.1), (whole.clone(), true));
        // Decompressed on from where it stopped, in steps.
        for mut body in [
            super::Body::snappy(&snappy).unwrap(),
            super::Body::zstd(&zstd, &mut None).unwrap(),
        ] {
            for want in [10, 5, 3_000, 70_000, 100_000, 200_000] {
                let all = body.to(want).unwrap();
                let got = body.out.len();
                assert!(got >= want.min(whole.len()) && got <= whole.len());
                assert_eq!(body.out[..], whole[..got]);
                assert_eq!(all, got == whole.len());
            }
        }
        let half = |b: &[u8]| b.len() / 2;
        let cut = super::Body::snappy(&snappy[..half(&snappy)]);
        assert_eq!(prefix(cut, 1 << 20), None);
        let mut context = None;
        let cut = super::Body::zstd(&zstd[..half(&zstd)], &mut context);
        assert_eq!(prefix(cut, 1 << 20), None);
        // Ten bytes announced; a copy of 4 from 5 back at the start.
        let bad = [10, 0b0000_0010 | (3 << 2), 5, 0];
        assert_eq!(prefix(super::Body::snappy(&bad), 10), None);
        // A literal of 3 where 2 are announced.
        let bad = [2, 2 << 2, 1, 2, 3];
        assert_eq!(prefix(super::Body::snappy(&bad), 10), None);
    }

    /// The counts of a compressed page's runs of lengths are checked from
    /// as much of it as they take: a run of 20,000 lengths (21 KB, more
    /// than the first 4 KiB decompressed) passes within 20,000 values and
    /// is refused within 19,999; a count beyond the values in a page's
    /// first bytes is refused, in both encodings.
    #[test]
    fn counts_of_compressed_pages() {
        use parquet::basic::{Compression, Encoding, ZstdLevel};
        let limits = Limits::default();
        let lengths = long_run(20_000, 8);
        assert!(lengths.len() > 20_000);
        let mut page = lengths.clone();
        page.extend(body());
        let mut differences = lengths.clone();
        differences.extend(&lengths);
        differences.extend(body());
        for codec in [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())] {
            let pack = |b: &[u8]| match codec {
                Compression::SNAPPY => snap::raw::Encoder::new().compress_vec(b).unwrap(),
                _ => zstd::bulk::compress(b, 3).unwrap(),
            };
            for (encoding, body) in [
                (Encoding::DELTA_LENGTH_BYTE_ARRAY, &page),
                (Encoding::DELTA_BYTE_ARRAY, &differences),
            ] {
                let stored = pack(body);
                let count = |most| {
                    super::page_start(codec, &stored, true, &mut None, |b, whole| {
                        super::page_values(b, encoding, most, &limits, &mut Vec::new(), whole, true)
                    })
                };
                assert!(count(20_000).unwrap() > 0, "{codec:?} {encoding:?}");
                let e = count(19_999).unwrap_err();
                assert!(e.contains("counted as 20000, more than its 19999"), "{e}");
                // Stored as it is.
                let e = super::page_start(codec, body, false, &mut None, |b, whole| {
                    super::page_values(b, encoding, 19_999, &limits, &mut Vec::new(), whole, true)
                })
                .unwrap_err();
                assert!(e.contains("counted as 20000"), "{e}");
            }
            // The suffixes' run is counted too.
            let mut short = lengths.clone();
            short.extend(long_run(20_001, 8));
            let stored = pack(&short);
            let e = super::page_start(codec, &stored, true, &mut None, |b, whole| {
                let e = Encoding::DELTA_BYTE_ARRAY;
                super::page_values(b, e, 20_000, &limits, &mut Vec::new(), whole, true)
            })
            .unwrap_err();
            assert!(e.contains("counted as 20001"), "{e}");
            // A page that does not decompress.
            let e =
                super::page_start(codec, &stored[..10], true, &mut None, |_, _| Ok(0)).unwrap_err();
            assert!(e.contains("do not decompress"), "{e}");
        }
    }

    /// Page headers in the Thrift compact protocol: the compressed size
    /// and a data page's encoding (version 1 and 2) read, other fields
    /// (a list of booleans, a map, a nested struct) stepped over; a list
    /// counting 2^60 elements (each takes a byte) ends the read at once
    /// (it was stepped through element by element: a hang), as do headers
    /// cut short.
    #[test]
    fn compact_page_headers() {
        let read = |bytes: &[u8]| {
            let mut r = super::Compact { bytes, at: 0 };
            (r.page_header(), r.at)
        };
        // type 0 (i32 0), size 2 (i32 100), compressed 3 (i32 40), a list
        // (field 4) of three booleans, data page header 5 { num_values
        // (i32 7), encoding (i32 6) }, stop.
        let v1 = [
            0x15, 0x00, 0x15, 0xC8, 0x01, 0x15, 0x50, 0x19, 0x31, 1, 2, 1, 0x1C, 0x15, 0x0E, 0x15,
            0x0C, 0x00, 0x00,
        ];
        let (h, at) = read(&v1);
        assert_eq!(at, v1.len());
        assert_eq!(
            h,
            Some(super::Header {
                len: v1.len() as u64,
                body: 40,
                encoding: Some(6)
            })
        );
        // A version-2 header (field 8, its id written out: it comes after
        // field 9): encoding is its field 4; a map (field 9: two i32 ->
        // binary entries) before it.
        let v2 = [
            0x15, 0x06, 0x15, 0x20, 0x15, 0x20, 0x6B, 0x02, 0x58, 0x02, 0x01, b'a', 0x04, 0x02,
            b'b', b'c', 0x0C, 0x10, 0x15, 0x02, 0x15, 0x00, 0x15, 0x02, 0x15, 0x0E, 0x00, 0x00,
        ];
        let (h, _) = read(&v2);
        assert_eq!(h.map(|h| (h.body, h.encoding)), Some((16, Some(7))));
        // A list of 2^60 booleans in 20 bytes: short at once.
        let mut huge = vec![0x15, 0x00, 0x15, 0x10, 0x19, 0xF1];
        huge.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]);
        huge.extend([0u8; 5]);
        let (h, at) = read(&huge);
        assert!(h.is_none() && at > huge.len());
        // Cut short anywhere: nothing read, and marked short.
        for cut in 0..v1.len() {
            let (h, at) = read(&v1[..cut]);
            assert!(h.is_none() && at > cut, "{cut}");
        }
    }
}
