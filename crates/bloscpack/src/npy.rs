//! numpy `.npy` files: import into and export from Bloscpack, streaming.
//!
//! An `.npy` file is the magic `\x93NUMPY`, a version, a header length, a
//! Python dict literal (`{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }`)
//! padded to a multiple of 64 bytes, then the raw array bytes.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use dataformats_core::limits::check_range;
use dataformats_core::parse;
use dataformats_core::{AtomicFile, Limits, Source};
use serde_json::Value;

use crate::dtype::Dtype;
use crate::error::{Error, ErrorKind, Result};
use crate::numpy::{NumpyMeta, Order};
use crate::read::{ChunkInfo, Reader};
use crate::write::{WriteOptions, Writer};

/// The `.npy` magic.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The array description.
    pub array: NumpyMeta,
    /// Format version (major, minor).
    pub version: (u8, u8),
    /// Where the array bytes start.
    pub data_offset: u64,
}

fn bad(m: impl Into<String>) -> Error {
    Error::new(ErrorKind::BadMetadata, format!("npy header: {}", m.into()))
}

/// Reads the header of the `.npy` file in `src`, checking that the array
/// bytes it promises are all there.
pub fn read_header(src: &Source) -> Result<NpyHeader> {
    let len = src.len();
    if len < 10 {
        return Err(Error::new(ErrorKind::Truncated, "file shorter than an npy preamble").at(0));
    }
    let (magic, major, minor) = parse::run(&src.bytes(0, 8)?, 0, crate::parse::npy_preamble)?;
    if magic != NPY_MAGIC[..] {
        return Err(Error::new(ErrorKind::BadMagic, "not an npy file (no \\x93NUMPY magic)").at(0));
    }
    if !matches!(major, 1..=3) {
        return Err(Error::new(
            ErrorKind::BadVersion,
            format!("npy version {major}.{minor}"),
        )
        .at(6));
    }
    let start = if major == 1 { 10 } else { 12 };
    let hlen = parse::run(
        &src.bytes(8, start - 8).map_err(|_| {
            Error::new(ErrorKind::Truncated, "file shorter than an npy preamble").at(8)
        })?,
        8,
        crate::parse::npy_header_len(major),
    )?;
    let end = check_range(start, hlen, len).map_err(|_| {
        Error::new(
            ErrorKind::Truncated,
            "npy header passes the end of the file",
        )
        .at(start)
    })?;
    let text = src.bytes(start, hlen)?;
    let text = std::str::from_utf8(&text).map_err(|_| bad("not UTF-8"))?;
    let v = PyLit::new(text).value_all()?;
    let obj = v.as_object().ok_or_else(|| bad("not a dict"))?;
    let descr = obj.get("descr").ok_or_else(|| bad("no 'descr'"))?;
    let dtype = match descr {
        Value::String(s) => {
            Dtype::Scalar(crate::dtype::Scalar::parse_typestr(s).map_err(|e| bad(e.0))?)
        }
        other => Dtype::from_metadata(other).map_err(|e| bad(e.0))?,
    };
    let fortran = obj
        .get("fortran_order")
        .and_then(Value::as_bool)
        .ok_or_else(|| bad("no boolean 'fortran_order'"))?;
    let shape = obj
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no 'shape' tuple"))?
        .iter()
        .map(|d| {
            d.as_u64()
                .ok_or_else(|| bad("shape holds a value that is not an int >= 0"))
        })
        .collect::<Result<Vec<u64>>>()?;
    let array = NumpyMeta {
        dtype,
        shape,
        order: if fortran { Order::F } else { Order::C },
    };
    let nbytes = array.nbytes().ok_or_else(|| bad("array size overflows"))?;
    check_range(end, nbytes, len).map_err(|_| {
        Error::new(
            ErrorKind::Truncated,
            format!(
                "the array needs {nbytes} byte(s) after the header, the file has {}",
                len - end
            ),
        )
        .at(end)
    })?;
    Ok(NpyHeader {
        array,
        version: (major, minor),
        data_offset: end,
    })
}

/// The header bytes of an `.npy` file for `array` (version 1.0, or 2.0 when
/// the header does not fit in 64 KiB), padded to a multiple of 64.
pub fn header_bytes(array: &NumpyMeta) -> Vec<u8> {
    let descr = array.dtype.python_literal();
    let shape = match array.shape.as_slice() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let fortran = if array.order == Order::F {
        "True"
    } else {
        "False"
    };
    let dict = format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}");
    let build = |v2: bool| {
        let pre = if v2 { 12 } else { 10 };
        let unpadded = pre + dict.len() + 1;
        let total = unpadded.div_ceil(64) * 64;
        let hlen = total - pre;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(NPY_MAGIC);
        if v2 {
            out.extend_from_slice(&[2, 0]);
            out.extend_from_slice(&(hlen as u32).to_le_bytes());
        } else {
            out.extend_from_slice(&[1, 0]);
            out.extend_from_slice(&(hlen as u16).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        (out, hlen)
    };
    let (v1, hlen) = build(false);
    if hlen <= usize::from(u16::MAX) {
        v1
    } else {
        build(true).0
    }
}

/// Converts the `.npy` file at `input` into a Bloscpack file at `output`
/// (numpy metadata; typesize = the itemsize unless `opts` says otherwise),
/// streaming: memory holds one chunk.
pub fn npy_to_bloscpack(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    opts: &WriteOptions,
) -> Result<NumpyMeta> {
    let src = Source::open(input.as_ref())?;
    let h = read_header(&src)?;
    let itemsize = h.array.dtype.itemsize();
    let mut o = *opts;
    if o.typesize.is_none() {
        o.typesize = Some(itemsize.clamp(1, 255));
    }
    if itemsize > 0 && !o.chunk_size.is_multiple_of(itemsize) {
        o.chunk_size = (o.chunk_size / itemsize).max(1) * itemsize;
    }
    let nbytes = h.array.nbytes().unwrap_or(0);
    let mut f = std::fs::File::open(input.as_ref())?;
    f.seek(SeekFrom::Start(h.data_offset))?;
    let mut w = Writer::create(output, nbytes, Some(&h.array.to_value()), &o)?;
    w.write_from(&mut f.take(nbytes))?;
    w.finish()?;
    Ok(h.array)
}

/// Writes the payload of a Bloscpack file with numpy metadata as an `.npy`
/// file at `output`, one chunk at a time.
pub fn bloscpack_to_npy(reader: &Reader, output: impl AsRef<Path>) -> Result<()> {
    let array = reader.numpy().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            "the file has no numpy metadata (raw bytes cannot become .npy)",
        )
    })?;
    if array.nbytes() != Some(reader.payload_len()) {
        return Err(Error::new(
            ErrorKind::SizeMismatch,
            format!(
                "numpy shape {:?} does not match the {}-byte payload",
                array.shape,
                reader.payload_len()
            ),
        ));
    }
    let sizes: Vec<u64> = reader.chunks().iter().map(ChunkInfo::nbytes).collect();
    // Buffers for the compressed chunks of a source read by positioned
    // reads, one per thread at a time, used again for later chunks.
    let scratch = Pool::default();
    write_npy_parts(
        output,
        array,
        &sizes,
        &reader.options().limits,
        |i, dst| {
            let mut buf = scratch.take().unwrap_or_default();
            let r = reader.read_chunk_into_with(i, dst, &mut buf);
            scratch.give(buf);
            r
        },
        |_| {},
    )
}

/// Writes an `.npy` file of `array` whose payload is parts of the given
/// `sizes`, in order: `fill(i, dst)` fills part `i` (exactly `sizes[i]`
/// bytes), and `done(n)` is told on this thread when the first `n` parts
/// are written.
///
/// From [`dataformats_core::parallel::MIN_BYTES`] of payload on, parts are
/// filled on every core, and each is written straight to its place in the
/// file by the thread that filled it (while it is still in that core's
/// cache, so that the copy into the page cache is spread over the cores
/// too), into buffers the threads reuse (their sizes checked against
/// `limits`). The disk is reserved just ahead of the writes. The error
/// returned is the first part's that failed, after every part before it
/// was written: the error a run in order would meet first. Parts that do
/// not add up to the array are refused before anything is written.
pub fn write_npy_parts(
    output: impl AsRef<Path>,
    array: &NumpyMeta,
    sizes: &[u64],
    limits: &Limits,
    fill: impl Fn(usize, &mut [u8]) -> Result<()> + Sync,
    mut done: impl FnMut(usize),
) -> Result<()> {
    let total = sizes
        .iter()
        .try_fold(0u64, |sum, &n| sum.checked_add(n))
        .filter(|&t| Some(t) == array.nbytes())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::SizeMismatch,
                format!(
                    "{} part(s) of {} byte(s) in all do not make the array of shape {:?} ({} bytes)",
                    sizes.len(),
                    sizes.iter().fold(0u64, |s, &n| s.saturating_add(n)),
                    array.shape,
                    array.nbytes().map_or("too many".into(), |n| n.to_string())
                ),
            )
        })?;
    let header = header_bytes(array);
    let base = header.len() as u64;
    // Where each part goes: the header's length plus the parts before it.
    let offsets: Vec<u64> = sizes
        .iter()
        .scan(base, |at, &n| {
            let here = *at;
            *at += n;
            Some(here)
        })
        .collect();
    let threads = dataformats_core::parallel::threads_for(total, 0);
    let spare = Pool::default();
    let mut f = AtomicFile::create(output)?;
    {
        let out = f.shared_sized(base + total)?;
        out.write_all_at(&header, 0)?;
        let write_part = |i: usize| -> Result<()> {
            let (Some(&n), Some(&at)) = (sizes.get(i), offsets.get(i)) else {
                return Ok(());
            };
            let mut buf = match spare.take() {
                Some(b) if b.len() as u64 >= n => b,
                _ => limits.alloc_zeroed("part", n)?,
            };
            let part = buf.get_mut(..n as usize).unwrap_or_default();
            fill(i, part)?;
            out.write_all_at(part, at).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("writing it at byte {at} of the .npy"),
                )
                .in_chunk(i as u64)
                .with_source(e)
            })?;
            spare.give(buf);
            Ok(())
        };
        let mut next = 0..sizes.len();
        let mut written = 0;
        dataformats_core::parallel::ordered(
            threads,
            || Ok::<_, Error>(next.next()),
            write_part,
            |r| {
                r?;
                written += 1;
                done(written);
                Ok(())
            },
        )?;
    }
    f.finish()?;
    Ok(())
}

/// Buffers that threads take and give back, so that later parts reuse
/// them instead of each part allocating its own.
#[derive(Default)]
struct Pool(std::sync::Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// A buffer given back earlier, if any.
    fn take(&self) -> Option<Vec<u8>> {
        self.0.lock().ok().and_then(|mut v| v.pop())
    }

    /// Keeps `buf` for a later [`Pool::take`].
    fn give(&self, buf: Vec<u8>) {
        if let Ok(mut v) = self.0.lock() {
            v.push(buf);
        }
    }
}

/// A parser for the Python literals in npy headers: dicts, strings, ints,
/// `True`/`False`/`None`, tuples and lists (tuples become JSON arrays).
struct PyLit<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> PyLit<'a> {
    fn new(s: &'a str) -> Self {
        PyLit {
            s: s.as_bytes(),
            pos: 0,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value_all(mut self) -> Result<Value> {
        let v = self.value()?;
        self.ws();
        if self.pos != self.s.len() {
            return Err(bad(format!("unexpected text at character {}", self.pos)));
        }
        Ok(v)
    }

    fn seq(&mut self, close: u8) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(out);
            }
            out.push(self.value()?);
            if !self.eat(b',') {
                if self.eat(close) {
                    return Ok(out);
                }
                return Err(bad(format!(
                    "expected `,` or `{}` at character {}",
                    close as char, self.pos
                )));
            }
        }
    }

    fn value(&mut self) -> Result<Value> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(bad("nested too deeply"));
        }
        self.ws();
        let v = match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let mut m = serde_json::Map::new();
                loop {
                    if self.eat(b'}') {
                        break;
                    }
                    let Value::String(k) = self.value()? else {
                        return Err(bad("a dict key is not a string"));
                    };
                    if !self.eat(b':') {
                        return Err(bad(format!("expected `:` at character {}", self.pos)));
                    }
                    let v = self.value()?;
                    m.insert(k, v);
                    if !self.eat(b',') {
                        if self.eat(b'}') {
                            break;
                        }
                        return Err(bad(format!(
                            "expected `,` or `}}` at character {}",
                            self.pos
                        )));
                    }
                }
                Value::Object(m)
            }
            Some(b'(') => {
                self.pos += 1;
                Value::Array(self.seq(b')')?)
            }
            Some(b'[') => {
                self.pos += 1;
                Value::Array(self.seq(b']')?)
            }
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let start = self.pos;
                while self.peek().is_some_and(|c| c != q) {
                    if self.peek() == Some(b'\\') {
                        return Err(bad("escapes in npy header strings are not supported"));
                    }
                    self.pos += 1;
                }
                let t = self.s.get(start..self.pos).unwrap_or_default();
                if !self.eat(q) {
                    return Err(bad("unterminated string"));
                }
                Value::String(String::from_utf8_lossy(t).into_owned())
            }
            Some(b'0'..=b'9') => {
                let start = self.pos;
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
                // Python 2 era headers may write `3L`.
                if self.peek() == Some(b'L') {
                    self.pos += 1;
                }
                let t = std::str::from_utf8(self.s.get(start..self.pos).unwrap_or_default())
                    .unwrap_or("");
                let n: u64 = t
                    .trim_end_matches('L')
                    .parse()
                    .map_err(|_| bad(format!("bad integer `{t}`")))?;
                Value::from(n)
            }
            _ => {
                let rest = self.s.get(self.pos..).unwrap_or_default();
                let (v, n) = if rest.starts_with(b"True") {
                    (Value::Bool(true), 4)
                } else if rest.starts_with(b"False") {
                    (Value::Bool(false), 5)
                } else if rest.starts_with(b"None") {
                    (Value::Null, 4)
                } else {
                    return Err(bad(format!("unexpected character at {}", self.pos)));
                };
                self.pos += n;
                v
            }
        };
        self.depth -= 1;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(typestr: &str, shape: Vec<u64>, order: Order) -> NumpyMeta {
        NumpyMeta {
            dtype: Dtype::Scalar(crate::dtype::Scalar::parse_typestr(typestr).unwrap()),
            shape,
            order,
        }
    }

    #[test]
    fn headers_round_trip_and_align() {
        for m in [
            meta("<f8", vec![3], Order::C),
            meta("|u1", vec![], Order::C),
            meta(">i4", vec![2, 3, 4], Order::F),
            NumpyMeta {
                dtype: Dtype::parse_python_literal(
                    "[('x', '<f4'), ('tag', '|S6'), ('v', '<i2', (3,))]",
                )
                .unwrap(),
                shape: vec![7],
                order: Order::C,
            },
        ] {
            let mut bytes = header_bytes(&m);
            assert_eq!(bytes.len() % 64, 0);
            assert_eq!(bytes.last(), Some(&b'\n'));
            bytes.extend(std::iter::repeat_n(0u8, m.nbytes().unwrap() as usize));
            let h = read_header(&Source::from_vec(bytes)).unwrap();
            assert_eq!(h.array, m);
        }
    }

    /// `.npy` → Bloscpack → `.npy` gives the same file back, for payloads of
    /// many chunks (the last one shorter than the others), one chunk, and
    /// none.
    #[test]
    fn npy_round_trips_through_bloscpack_chunk_by_chunk() {
        let dir = std::env::temp_dir().join(format!("df-npy-rt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (n, chunk) in [(100_003u64, 4_096usize), (1_000, 1 << 20), (0, 4_096)] {
            let m = meta("<i8", vec![n], Order::C);
            let want = npy_bytes(&m, n);
            let (a, b, back) = (dir.join("a.npy"), dir.join("a.blp"), dir.join("b.npy"));
            std::fs::write(&a, &want).unwrap();
            let o = WriteOptions::default().chunk_size(chunk);
            npy_to_bloscpack(&a, &b, &o).unwrap();
            let r = Reader::open(&b).unwrap();
            if n == 100_003 {
                assert!(r.nchunks() > 100, "{}", r.nchunks());
            }
            bloscpack_to_npy(&r, &back).unwrap();
            assert!(std::fs::read(&back).unwrap() == want, "{n} values");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A random-looking `<i8` payload of `n` values behind its header.
    fn npy_bytes(m: &NumpyMeta, n: u64) -> Vec<u8> {
        let mut out = header_bytes(m);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.extend_from_slice(&(x % 1000).to_le_bytes());
        }
        out
    }

    /// Above `parallel::MIN_BYTES` the chunks are decoded and written on
    /// every core, each to its own place: the file is the same, and an
    /// error is the first chunk's that a run in order would meet, with no
    /// file left behind.
    #[test]
    fn large_payloads_are_written_chunk_by_chunk_on_every_core() {
        let dir = std::env::temp_dir().join(format!("df-npy-par-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let n = 1_000_003u64; // 8 MB, chunks of 64 KiB, the last one short
        let m = meta("<i8", vec![n], Order::C);
        let want = npy_bytes(&m, n);
        let (a, b, back) = (dir.join("a.npy"), dir.join("a.blp"), dir.join("b.npy"));
        std::fs::write(&a, &want).unwrap();
        npy_to_bloscpack(&a, &b, &WriteOptions::default().chunk_size(64 << 10)).unwrap();
        let r = Reader::open(&b).unwrap();
        assert!(r.nchunks() > 100, "{}", r.nchunks());
        assert!(r.payload_len() >= dataformats_core::parallel::MIN_BYTES);
        bloscpack_to_npy(&r, &back).unwrap();
        assert!(std::fs::read(&back).unwrap() == want);
        let mapped = Source::from_vec(std::fs::read(&b).unwrap());
        bloscpack_to_npy(
            &Reader::with_options(mapped, Default::default()).unwrap(),
            &back,
        )
        .unwrap();
        assert!(std::fs::read(&back).unwrap() == want);

        // Chunks 90 and 40 broken (a byte of each flipped): the error is
        // chunk 40's, whichever thread met which first.
        let mut bad = std::fs::read(&b).unwrap();
        for i in [90, 40] {
            let at = r.chunks()[i].offset as usize + 100;
            bad[at] ^= 0x55;
        }
        let c = dir.join("bad.blp");
        std::fs::write(&c, &bad).unwrap();
        let out = dir.join("bad.npy");
        for round in 0..6 {
            // Read by positioned reads, and from memory.
            let r = if round % 2 == 0 {
                Reader::open(&c).unwrap()
            } else {
                Reader::with_options(Source::from_vec(bad.clone()), Default::default()).unwrap()
            };
            let e = bloscpack_to_npy(&r, &out).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{e}");
            assert_eq!(e.chunk(), Some(40), "{e}");
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("bad.npy"))
                .collect();
            assert!(left.is_empty(), "left behind: {left:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `write_npy_parts` refuses parts that do not make the array before
    /// writing anything, tells `done` of the parts in order, and writes
    /// each part at its place.
    #[test]
    fn write_npy_parts_checks_the_sizes_and_reports_in_order() {
        let dir = std::env::temp_dir().join(format!("df-npy-parts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let limits = Limits::default();
        let m = meta("<i4", vec![10, 100], Order::C);
        let out = dir.join("parts.npy");
        let fill = |i: usize, dst: &mut [u8]| {
            dst.fill(i as u8 + 1);
            Ok(())
        };
        for sizes in [
            &[1600, 1600, 700][..],
            &[1600, 1600, 900],
            &[],
            &[u64::MAX, 2],
        ] {
            let e = write_npy_parts(&out, &m, sizes, &limits, fill, |_| {}).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::SizeMismatch, "{sizes:?}: {e}");
            assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
        }
        let mut told = Vec::new();
        write_npy_parts(&out, &m, &[1600, 1600, 800], &limits, fill, |n| {
            told.push(n)
        })
        .unwrap();
        assert_eq!(told, [1, 2, 3]);
        let got = std::fs::read(&out).unwrap();
        let h = header_bytes(&m);
        assert_eq!(got.len(), h.len() + 4000);
        assert_eq!(&got[..h.len()], &h[..]);
        for (i, (from, to)) in [(0, 1600), (1600, 3200), (3200, 4000)]
            .into_iter()
            .enumerate()
        {
            let part = &got[h.len() + from..h.len() + to];
            assert!(part.iter().all(|&b| b == i as u8 + 1), "part {i}");
        }
        // Past MIN_BYTES (on every core): 64 parts of 128 KiB, parts 50 and
        // 20 failing; the error is part 20's, every part before it written.
        let big = meta("<i8", vec![64 << 14], Order::C);
        let sizes = vec![128 << 10; 64];
        let mut last = 0;
        let e = write_npy_parts(
            &out,
            &big,
            &sizes,
            &limits,
            |i, dst| {
                if i == 20 || i == 50 {
                    return Err(Error::new(ErrorKind::DecompressFailed, format!("part {i}")));
                }
                dst.fill(1);
                Ok(())
            },
            |n| last = n,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "decompress_failed: part 20", "{e}");
        assert_eq!(last, 20);
        // The earlier, complete file is still there.
        assert_eq!(std::fs::read(&out).unwrap(), got);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn numpy_written_headers_parse() {
        // As numpy 1.x/2.x write them.
        let text = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 5), }";
        let mut b = Vec::from(&b"\x93NUMPY\x01\x00"[..]);
        let hl = 118u16;
        b.extend_from_slice(&hl.to_le_bytes());
        b.extend_from_slice(text.as_bytes());
        b.resize(128 - 1, b' ');
        b.push(b'\n');
        b.extend(std::iter::repeat_n(0u8, 80));
        let h = read_header(&Source::from_vec(b.clone())).unwrap();
        assert_eq!(h.array.shape, vec![2, 5]);
        assert_eq!(h.data_offset, 128);
        // One byte short of the array: truncated.
        b.pop();
        assert_eq!(
            read_header(&Source::from_vec(b)).unwrap_err().kind(),
            ErrorKind::Truncated
        );
    }

    #[test]
    fn malformed_headers_are_clean_errors() {
        for text in [
            "{",
            "{'descr': '<f8'}",
            "{'descr': '<q9', 'fortran_order': False, 'shape': ()}",
            "[1, 2]",
            "{'descr': '<f8', 'fortran_order': 1, 'shape': (3,)}",
        ] {
            let mut b = Vec::from(&b"\x93NUMPY\x01\x00"[..]);
            b.extend_from_slice(&(text.len() as u16).to_le_bytes());
            b.extend_from_slice(text.as_bytes());
            assert!(read_header(&Source::from_vec(b)).is_err(), "{text}");
        }
        assert_eq!(
            read_header(&Source::from_vec(b"NUMPY\x01\x00\x00\x00\x00".to_vec()))
                .unwrap_err()
                .kind(),
            ErrorKind::BadMagic
        );
    }
}
