//! Byte sources: one way to read a file whatever holds its bytes.
//!
//! A [`Source`] is a memory map, an owned buffer, an open file read with
//! positioned reads, or bytes that live elsewhere read by byte ranges
//! ([`RangeRead`]: object storage, HTTP, a test double). All four read by
//! offset through `&self` (no cursor, no `&mut`), are `Send + Sync`, and
//! check every range against the length before touching a byte, so one
//! reader can serve many threads.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{Limits, check_range, check_range_usize};

/// Where the bytes of a file come from.
///
/// ```
/// use dataformats_core::Source;
/// let src = Source::from_vec(b"blpk\x03rest".to_vec());
/// assert_eq!(src.len(), 9);
/// assert_eq!(&*src.bytes(0, 4).unwrap(), b"blpk");
/// let mut version = [0u8; 1];
/// src.read_at(4, &mut version).unwrap();
/// assert_eq!(version, [3]);
/// assert!(src.bytes(8, 2).is_err()); // past the end: an error naming offset 8
/// ```
#[derive(Debug, Clone)]
pub struct Source {
    inner: Inner,
}

#[derive(Debug, Clone)]
enum Inner {
    Map(Arc<memmap2::Mmap>),
    Owned(Arc<[u8]>),
    File { file: Arc<File>, len: u64 },
    Ranges(Arc<dyn RangeRead>),
}

/// Bytes that live elsewhere, read by byte ranges: an object in object
/// storage, a file behind HTTP, a test double. The length is known up
/// front; every read asks for one exact range.
///
/// ```
/// use std::sync::Arc;
/// use dataformats_core::{RangeRead, Source};
///
/// #[derive(Debug)]
/// struct Remote(Vec<u8>);
///
/// impl RangeRead for Remote {
///     fn len(&self) -> u64 {
///         self.0.len() as u64
///     }
///     fn read_range(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
///         let at = offset as usize;
///         let got = self.0.get(at..at + buf.len()).ok_or(std::io::ErrorKind::UnexpectedEof)?;
///         buf.copy_from_slice(got);
///         Ok(())
///     }
/// }
///
/// let src = Source::from_ranges(Arc::new(Remote(b"blpk\x03rest".to_vec())));
/// assert_eq!(&*src.bytes(0, 4).unwrap(), b"blpk");
/// assert!(src.bytes(8, 2).is_err()); // checked against the length first
/// ```
pub trait RangeRead: Send + Sync + std::fmt::Debug {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// True when there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills all of `buf` with the bytes at `offset ..`; a short answer is
    /// an error (`UnexpectedEof`), never a partly filled buffer taken as
    /// whole. [`Source`] has checked the range against [`len`](RangeRead::len).
    fn read_range(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// A hint: the reader is about to read these ranges (in any order, any
    /// pieces of them). An implementation may start fetching them now,
    /// merged and concurrently, so that the reads find them ready; reads
    /// must give the same bytes whether or not it does. [`Source`] passes
    /// only ranges that lie within [`len`](RangeRead::len).
    fn prefetch(&self, ranges: &[std::ops::Range<u64>]) {
        let _ = ranges;
    }
}

/// Bytes of a [`Source`] that own a share of its map or buffer
/// ([`Source::share`]): cheap to clone, immutable, and alive as long as any
/// holder is.
#[derive(Debug, Clone)]
pub struct SharedBytes {
    owner: Owner,
    range: std::ops::Range<usize>,
}

#[derive(Debug, Clone)]
enum Owner {
    Map(Arc<memmap2::Mmap>),
    Owned(Arc<[u8]>),
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        let all: &[u8] = match &self.owner {
            Owner::Map(m) => m,
            Owner::Owned(b) => b,
        };
        all.get(self.range.clone()).unwrap_or_default()
    }
}

impl Source {
    /// Maps the file at `path` into memory.
    ///
    /// # Safety
    ///
    /// The mapping is only sound while no one truncates or modifies the file:
    /// a file shrunk under the map makes later reads fault (SIGBUS), and a
    /// file changed under the map makes borrowed slices change under their
    /// borrower. Use [`Source::open`] when that cannot be promised.
    pub unsafe fn map(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path.as_ref())?;
        // SAFETY: the caller upholds the no-concurrent-modification contract above.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Source {
            inner: Inner::Map(Arc::new(map)),
        })
    }

    /// Lets the kernel take back the pages of a mapped file that this process
    /// has touched (`madvise(MADV_DONTNEED)`): they leave the resident set
    /// and are read in again, usually from the page cache, when touched
    /// next. A long sequential pass calls it now and then so that its
    /// resident memory does not grow with the file. Does nothing for
    /// sources that are not mapped (or off Unix).
    pub fn release_pages(&self) {
        self.release_range(0..self.len());
    }

    /// [`Source::release_pages`] for the whole pages inside `range` only
    /// (bytes of the source; a range reaching the end takes the last,
    /// partial page too): a pass that works through a mapped file in parts
    /// hands each part back as soon as it is done with it, without
    /// disturbing the pages others are reading (and leaves little for the
    /// final unmapping to do). Does nothing for sources that are not
    /// mapped, or for a range outside the source.
    pub fn release_range(&self, range: std::ops::Range<u64>) {
        #[cfg(unix)]
        if let Inner::Map(m) = &self.inner {
            // SAFETY: sysconf has no preconditions.
            let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .ok()
                .filter(|p| p.is_power_of_two())
                .unwrap_or(4096);
            let len = m.len() as u64;
            let start = range.start.div_ceil(page).saturating_mul(page);
            // A range to the end takes the last, partial page too: the rest
            // of that page is past the end of the file (the kernel rounds
            // the length up to it).
            let end = if range.end >= len {
                len
            } else {
                range.end / page * page
            };
            if start >= end {
                return;
            }
            let (Ok(offset), Ok(len)) = (usize::try_from(start), usize::try_from(end - start))
            else {
                return;
            };
            // SAFETY: `Mmap::map` makes a read-only shared mapping of a file.
            // MADV_DONTNEED on it only drops this process's page table
            // entries: the next access faults the same file contents back in.
            // (It would discard data only in private or anonymous mappings,
            // and nothing is ever written through this one.) The range lies
            // inside the mapping, whose last page is mapped whole.
            let _ = unsafe {
                m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len)
            };
        }
    }

    /// Opens the file at `path` for positioned reads (no mapping, no cursor).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path.as_ref())?;
        Self::from_file(file)
    }

    /// Wraps an open file for positioned reads.
    pub fn from_file(file: File) -> Result<Self> {
        let len = file.metadata()?.len();
        Ok(Source {
            inner: Inner::File {
                file: Arc::new(file),
                len,
            },
        })
    }

    /// Reads the whole file at `path` into memory, refusing files larger than
    /// `limits.max_alloc`.
    pub fn read(path: impl AsRef<Path>, limits: &Limits) -> Result<Self> {
        let src = Self::open(path)?;
        let bytes = src.read_vec(0, src.len(), limits)?;
        Ok(Self::from_vec(bytes))
    }

    /// Tells a source read by ranges that these byte ranges are about to
    /// be read, so that it can fetch them ahead, merged and concurrently
    /// ([`RangeRead::prefetch`]); empty ranges and ranges past the end are
    /// left out. Other sources have their bytes at hand: nothing to do.
    pub fn prefetch(&self, ranges: &[std::ops::Range<u64>]) {
        if let Inner::Ranges(r) = &self.inner {
            let len = r.len();
            let within: Vec<_> = ranges
                .iter()
                .filter(|x| x.start < x.end && x.end <= len)
                .cloned()
                .collect();
            if !within.is_empty() {
                r.prefetch(&within);
            }
        }
    }

    /// True when reads go to bytes elsewhere by ranges ([`Source::from_ranges`]),
    /// where telling the source what comes next ([`Source::prefetch`]) pays.
    pub fn is_remote(&self) -> bool {
        matches!(self.inner, Inner::Ranges(_))
    }

    /// Reads through `remote` by byte ranges (positioned reads, as for a
    /// file: nothing is borrowed, every read is checked against the length
    /// first and fetched whole or not at all).
    pub fn from_ranges(remote: Arc<dyn RangeRead>) -> Self {
        Source {
            inner: Inner::Ranges(remote),
        }
    }

    /// Owns `bytes`.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Source {
            inner: Inner::Owned(bytes.into()),
        }
    }

    /// Shares an existing buffer.
    pub fn from_arc(bytes: Arc<[u8]>) -> Self {
        Source {
            inner: Inner::Owned(bytes),
        }
    }

    /// Total length in bytes.
    pub fn len(&self) -> u64 {
        match &self.inner {
            Inner::Map(m) => m.len() as u64,
            Inner::Owned(b) => b.len() as u64,
            Inner::File { len, .. } => *len,
            Inner::Ranges(r) => r.len(),
        }
    }

    /// True when the source holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole contents as one slice, when they are in memory (a map or a
    /// buffer); `None` for a file read with positioned reads.
    pub fn as_slice(&self) -> Option<&[u8]> {
        match &self.inner {
            Inner::Map(m) => Some(&m[..]),
            Inner::Owned(b) => Some(b),
            Inner::File { .. } | Inner::Ranges(_) => None,
        }
    }

    /// `sub` (a slice borrowed from this source's memory, as
    /// [`Source::bytes`] hands them out) as bytes that keep the map or
    /// buffer alive on their own, so a consumer such as an Arrow buffer can
    /// hold them without a copy. `None` when `sub` does not lie inside this
    /// source's memory (or the source reads a file by positioned reads).
    pub fn share(&self, sub: &[u8]) -> Option<SharedBytes> {
        let range = range_within(self.as_slice()?, sub)?;
        let owner = match &self.inner {
            Inner::Map(m) => Owner::Map(Arc::clone(m)),
            Inner::Owned(b) => Owner::Owned(Arc::clone(b)),
            Inner::File { .. } | Inner::Ranges(_) => return None,
        };
        Some(SharedBytes { owner, range })
    }

    /// True when [`Source::bytes`] borrows instead of copying.
    pub fn is_in_memory(&self) -> bool {
        self.as_slice().is_some()
    }

    /// Fills `buf` with the bytes at `offset .. offset + buf.len()`.
    ///
    /// Fails with [`Error::OutOfBounds`] (naming the offset) when the range
    /// passes the end; never reads a partial buffer.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len() as u64;
        check_range(offset, len, self.len())?;
        match &self.inner {
            Inner::Map(_) | Inner::Owned(_) => {
                let whole = self.as_slice().unwrap_or_default();
                let r = check_range_usize(offset, len, whole.len() as u64)?;
                let src = whole.get(r).ok_or(Error::OutOfBounds {
                    offset,
                    len,
                    size: whole.len() as u64,
                })?;
                buf.copy_from_slice(src);
                Ok(())
            }
            Inner::File { file, .. } => read_exact_at(file, buf, offset).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    // The file shrank since it was opened.
                    Error::Truncated {
                        at: offset,
                        needed: len,
                    }
                } else {
                    Error::from(e)
                }
            }),
            Inner::Ranges(r) => r.read_range(offset, buf).map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    // A short answer for bytes the length says exist.
                    Error::Truncated {
                        at: offset,
                        needed: len,
                    }
                } else {
                    let kind = e.kind();
                    Error::Io(Arc::new(std::io::Error::new(
                        kind,
                        RangeFailed {
                            range: offset..offset + len,
                            source: e,
                        },
                    )))
                }
            }),
        }
    }

    /// The bytes at `offset .. offset + len`: borrowed from a map or buffer,
    /// copied for a file (the copy is limited by [`Limits::default`]; use
    /// [`Source::read_vec`] to choose the limit).
    pub fn bytes(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        check_range(offset, len, self.len())?;
        match self.as_slice() {
            Some(whole) => {
                let r = check_range_usize(offset, len, whole.len() as u64)?;
                whole.get(r).map(Cow::Borrowed).ok_or(Error::OutOfBounds {
                    offset,
                    len,
                    size: whole.len() as u64,
                })
            }
            None => self
                .read_vec(offset, len, &Limits::default())
                .map(Cow::Owned),
        }
    }

    /// Copies the bytes at `offset .. offset + len` into a new vector, after
    /// checking the range against the length and `len` against `limits`.
    pub fn read_vec(&self, offset: u64, len: u64, limits: &Limits) -> Result<Vec<u8>> {
        check_range(offset, len, self.len())?;
        let mut v = limits.alloc_zeroed("read buffer", len)?;
        self.read_at(offset, &mut v)?;
        Ok(v)
    }
}

/// A failed read of a [`RangeRead`]: which bytes, and why (the cause).
#[derive(Debug)]
struct RangeFailed {
    range: std::ops::Range<u64>,
    source: std::io::Error,
}

impl std::fmt::Display for RangeFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reading bytes {}..{}: {}",
            self.range.start, self.range.end, self.source
        )
    }
}

impl std::error::Error for RangeFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<Vec<u8>> for Source {
    fn from(v: Vec<u8>) -> Self {
        Source::from_vec(v)
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where `sub` lies in `all`, by address: `None` when it is not (all of
/// it) inside `all`'s memory.
pub fn range_within(all: &[u8], sub: &[u8]) -> Option<std::ops::Range<usize>> {
    let at = (sub.as_ptr() as usize).checked_sub(all.as_ptr() as usize)?;
    let end = at.checked_add(sub.len())?;
    (end <= all.len()).then_some(at..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_send_sync() {
        check_send_sync::<Source>();
    }
}
