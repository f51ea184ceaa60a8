//! Caps on what a file may make us allocate, and checked range arithmetic.
//!
//! Every count, length and offset read from a file goes through these helpers
//! before it is used to allocate or index: a header that claims 2^60 rows
//! costs a comparison, not an allocation.

use crate::error::{Error, Result};

/// Configurable caps on what an untrusted file may make a reader allocate.
///
/// The defaults are generous enough for real datasets on a workstation; lower
/// them when reading files you do not trust (the fuzz targets use
/// [`Limits::fuzzing`]), or lift them with [`Limits::none`].
///
/// ```
/// use dataformats_core::Limits;
/// let limits = Limits::default().with_max_alloc(64 << 20);
/// assert!(limits.check_alloc("chunk", 1 << 20).is_ok());
/// assert!(limits.check_alloc("chunk", 1 << 30).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest single buffer (in bytes) a reader allocates on the word of a file.
    pub max_alloc: u64,
    /// Largest number of items (rows, chunks, samples, entries...) a reader
    /// accepts from a file's tables before it allocates per-item state.
    pub max_count: u64,
}

/// How a reader without format-specific switches (CBF, FFCV, IDV, MLDF)
/// reads: the caps on what a file may make it allocate. The Bloscpack and
/// TBL v2 readers have their own `ReadOptions` of the same shape, with their
/// switches added.
///
/// ```
/// use dataformats_core::{Limits, ReadOptions};
/// let opts = ReadOptions::default().limits(Limits::fuzzing());
/// assert_eq!(opts.limits, Limits::fuzzing());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Caps on what the file may make us allocate.
    pub limits: Limits,
}

impl ReadOptions {
    /// These options with other limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl Default for Limits {
    /// 4 GiB per allocation, 2^32 items.
    fn default() -> Self {
        Limits {
            max_alloc: 4 << 30,
            max_count: 1 << 32,
        }
    }
}

impl Limits {
    /// No caps at all (still overflow-checked, still bounded by the file size
    /// wherever a format makes that possible).
    pub const fn none() -> Self {
        Limits {
            max_alloc: u64::MAX,
            max_count: u64::MAX,
        }
    }

    /// Tight caps for fuzzing and for files from unknown sources: 64 MiB per
    /// allocation, 2^20 items.
    pub const fn fuzzing() -> Self {
        Limits {
            max_alloc: 64 << 20,
            max_count: 1 << 20,
        }
    }

    /// Returns these limits with `max_alloc` set.
    #[must_use]
    pub const fn with_max_alloc(mut self, bytes: u64) -> Self {
        self.max_alloc = bytes;
        self
    }

    /// Returns these limits with `max_count` set.
    #[must_use]
    pub const fn with_max_count(mut self, count: u64) -> Self {
        self.max_count = count;
        self
    }

    /// Checks that one buffer of `bytes` bytes may be allocated, and converts
    /// the size to `usize`.
    pub fn check_alloc(&self, what: &'static str, bytes: u64) -> Result<usize> {
        if bytes > self.max_alloc {
            return Err(Error::LimitExceeded {
                what,
                requested: bytes,
                limit: self.max_alloc,
            });
        }
        usize::try_from(bytes).map_err(|_| Error::LimitExceeded {
            what,
            requested: bytes,
            limit: usize::MAX as u64,
        })
    }

    /// Checks a count of items against `max_count`, and converts it to `usize`.
    pub fn check_count(&self, what: &'static str, count: u64) -> Result<usize> {
        if count > self.max_count {
            return Err(Error::LimitExceeded {
                what,
                requested: count,
                limit: self.max_count,
            });
        }
        usize::try_from(count).map_err(|_| Error::LimitExceeded {
            what,
            requested: count,
            limit: usize::MAX as u64,
        })
    }

    /// Allocates a zeroed buffer of `bytes` bytes after checking it against
    /// `max_alloc`; an allocation failure is an error, not an abort.
    pub fn alloc_zeroed(&self, what: &'static str, bytes: u64) -> Result<Vec<u8>> {
        let n = self.check_alloc(what, bytes)?;
        let mut v = Vec::new();
        // A large buffer in 2 MiB pages where the kernel allows: zeroing it
        // faults once per 2 MiB, not once per 4 KiB.
        if !crate::buffers::reserve_large(&mut v, n) {
            return Err(Error::LimitExceeded {
                what,
                requested: bytes,
                limit: self.max_alloc,
            });
        }
        v.resize(n, 0);
        Ok(v)
    }
}

/// The end of the range `offset .. offset + len`, or `OutOfBounds` if it
/// overflows `u64` or passes `size`.
///
/// ```
/// use dataformats_core::limits::check_range;
/// assert_eq!(check_range(10, 6, 16).unwrap(), 16);
/// assert!(check_range(10, 7, 16).is_err());
/// assert!(check_range(u64::MAX, 2, u64::MAX).is_err());
/// ```
pub fn check_range(offset: u64, len: u64, size: u64) -> Result<u64> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(end),
        _ => Err(Error::OutOfBounds { offset, len, size }),
    }
}

/// Like [`check_range`], but returns the range as `usize` indices into a
/// buffer of `size` bytes, ready for `get(range)`.
pub fn check_range_usize(offset: u64, len: u64, size: u64) -> Result<std::ops::Range<usize>> {
    let end = check_range(offset, len, size)?;
    let oob = || Error::OutOfBounds { offset, len, size };
    let start = usize::try_from(offset).map_err(|_| oob())?;
    let end = usize::try_from(end).map_err(|_| oob())?;
    Ok(start..end)
}

/// `count * size` with overflow reported as `LimitExceeded` on `what`.
pub fn checked_product(what: &'static str, count: u64, size: u64) -> Result<u64> {
    count.checked_mul(size).ok_or(Error::LimitExceeded {
        what,
        requested: u64::MAX,
        limit: u64::MAX,
    })
}

/// Borrows `len` bytes at `offset` from `buf`, or `OutOfBounds`.
pub fn slice_at(buf: &[u8], offset: u64, len: u64) -> Result<&[u8]> {
    let r = check_range_usize(offset, len, buf.len() as u64)?;
    buf.get(r).ok_or(Error::OutOfBounds {
        offset,
        len,
        size: buf.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn alloc_is_capped_before_allocating() {
        let l = Limits::default().with_max_alloc(1000);
        assert_eq!(l.alloc_zeroed("x", 1000).unwrap().len(), 1000);
        let e = l.alloc_zeroed("x", 1001).unwrap_err();
        assert!(matches!(
            e,
            Error::LimitExceeded {
                requested: 1001,
                limit: 1000,
                ..
            }
        ));
        // A huge request under `none()` fails cleanly through try_reserve.
        let e = Limits::none().alloc_zeroed("x", u64::MAX).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::LimitExceeded);
    }

    #[test]
    fn counts_are_capped() {
        let l = Limits::fuzzing();
        assert!(l.check_count("rows", 1 << 20).is_ok());
        assert!(l.check_count("rows", (1 << 20) + 1).is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(check_range(0, 0, 0).unwrap(), 0);
        assert_eq!(check_range(5, 0, 5).unwrap(), 5);
        assert!(check_range(6, 0, 5).is_err());
        assert!(check_range(u64::MAX, 1, u64::MAX).is_err());
        assert_eq!(check_range_usize(2, 3, 10).unwrap(), 2..5);
        let buf = [1u8, 2, 3, 4];
        assert_eq!(slice_at(&buf, 1, 2).unwrap(), &[2, 3]);
        let e = slice_at(&buf, 3, 2).unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfBounds {
                offset: 3,
                len: 2,
                size: 4
            }
        ));
        assert!(checked_product("x", u64::MAX, 2).is_err());
        assert_eq!(checked_product("x", 3, 4).unwrap(), 12);
    }
}
