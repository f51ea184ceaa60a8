//! Little-endian numbers stored in a file, read without copying when the
//! bytes allow it.
//!
//! [`cast_slice`] hands out a `&[T]` over the stored bytes when they are
//! suitably aligned (a memory map of a well-laid-out file usually is) and the
//! machine is little-endian; otherwise [`copy_into`] decodes them into a
//! caller buffer. Both only accept [`Plain`] types, for which every bit
//! pattern is a valid value.
//!
//! ```
//! use dataformats_core::plain::{cast_slice, copy_into};
//! let stored: Vec<u8> = [1.5f32, -2.0, 8.25].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut out = [0f32; 3];
//! copy_into(&stored, &mut out).unwrap();
//! assert_eq!(out, [1.5, -2.0, 8.25]);
//! if let Some(view) = cast_slice::<f32>(&stored) {
//!     assert_eq!(view, &out); // zero-copy when aligned
//! }
//! ```

mod sealed {
    pub trait Sealed {}
}

/// A fixed-size number type with no padding and no invalid bit patterns
/// (`bytemuck::Pod`, which does the casts).
pub trait Plain: bytemuck::Pod + Default + sealed::Sealed {
    /// Size in bytes.
    const SIZE: usize;
    /// The whole little-endian values stored one after the other in `bytes`
    /// (a trailing partial value is not read; callers check the length).
    fn iter_le(bytes: &[u8]) -> impl ExactSizeIterator<Item = Self> + Clone + '_;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Plain for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn iter_le(bytes: &[u8]) -> impl ExactSizeIterator<Item = Self> + Clone + '_ {
                let (whole, _partial) = bytes.as_chunks::<{ std::mem::size_of::<$t>() }>();
                whole.iter().map(|a| <$t>::from_le_bytes(*a))
            }
        }
    )*};
}
plain!(u8, i8, u16, i16, u32, i32, u64, i64, u128, f32, f64);

/// `bytes` as a slice of `T` without copying, if `bytes.len()` is a multiple
/// of `T::SIZE`, the start is aligned for `T` and the machine is
/// little-endian; `None` otherwise (then use [`copy_into`]).
pub fn cast_slice<T: Plain>(bytes: &[u8]) -> Option<&[T]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    // Fails on a length that is not a multiple of the size or a misaligned start.
    bytemuck::try_cast_slice(bytes).ok()
}

/// `values` as writable bytes, so that a decoder can fill a `[T]` in place
/// (the bytes are the little-endian encoding); `None` on a big-endian
/// machine, where the stored order would be wrong.
pub fn bytes_of_mut<T: Plain>(values: &mut [T]) -> Option<&mut [u8]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    Some(bytemuck::cast_slice_mut(values))
}

/// Decodes `bytes` (little-endian `T`s) into `out`; fails, writing nothing,
/// unless `bytes.len() == out.len() * T::SIZE`.
pub fn copy_into<T: Plain>(bytes: &[u8], out: &mut [T]) -> Result<(), LengthMismatch> {
    if bytes.len() as u64 != out.len() as u64 * T::SIZE as u64 {
        return Err(LengthMismatch {
            bytes: bytes.len(),
            wanted: out.len() * T::SIZE,
        });
    }
    if let Some(v) = cast_slice::<T>(bytes) {
        out.copy_from_slice(v);
    } else {
        for (d, v) in out.iter_mut().zip(T::iter_le(bytes)) {
            *d = v;
        }
    }
    Ok(())
}

/// The little-endian `T`s stored in `bytes`, one after the other: the
/// whole values only (a trailing partial value, which callers rule out by
/// checking the length first, is not read).
pub fn values<T: Plain>(bytes: &[u8]) -> impl ExactSizeIterator<Item = T> + Clone + '_ {
    T::iter_le(bytes)
}

/// Decodes `bytes` (little-endian `T`s) into a new vector; fails unless
/// `bytes.len()` is a whole number of `T`s.
pub fn to_vec<T: Plain>(bytes: &[u8]) -> Result<Vec<T>, LengthMismatch> {
    let n = bytes.len() / T::SIZE;
    let mut out = vec![T::default(); n];
    copy_into(bytes, &mut out).map(|()| out)
}

/// The byte count given to [`copy_into`] does not match the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthMismatch {
    /// Bytes given.
    pub bytes: usize,
    /// Bytes the output buffer holds.
    pub wanted: usize,
}

impl std::fmt::Display for LengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} stored bytes for a buffer of {} bytes",
            self.bytes, self.wanted
        )
    }
}

impl std::error::Error for LengthMismatch {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn cast_needs_alignment_and_whole_values() {
        let mut bytes: Vec<u8> = Vec::new();
        for x in [1.0f64, 2.0, 3.0, 4.0, 5.0] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        // Some offset in the first 8 bytes is 8-aligned, whatever the allocator gave.
        let aligned_at = (0..8)
            .find(|&o| cast_slice::<f64>(&bytes[o..o + 8]).is_some())
            .unwrap();
        assert!(cast_slice::<f64>(&bytes[aligned_at + 1..aligned_at + 9]).is_none());
        assert!(cast_slice::<f32>(&bytes[aligned_at..aligned_at + 6]).is_none());
        let whole = &bytes[aligned_at..aligned_at + 32];
        let expect: Vec<f64> = whole
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(cast_slice::<f64>(whole).unwrap(), &expect[..]);
    }

    #[test]
    fn values_reads_each_whole_value_in_order() {
        let bytes: Vec<u8> = [5i32, -1, 1 << 30]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let v = values::<i32>(&bytes);
        assert_eq!(v.len(), 3);
        assert_eq!(v.collect::<Vec<_>>(), vec![5, -1, 1 << 30]);
        assert_eq!(values::<i32>(&bytes[..7]).collect::<Vec<_>>(), vec![5]);
        assert_eq!(values::<u64>(&[]).count(), 0);
    }

    #[test]
    fn to_vec_needs_whole_values() {
        let bytes: Vec<u8> = [-3i16, 7, 300]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(to_vec::<i16>(&bytes).unwrap(), vec![-3, 7, 300]);
        assert_eq!(to_vec::<i16>(&[]).unwrap(), Vec::<i16>::new());
        let e = to_vec::<i16>(&bytes[..5]).unwrap_err();
        assert_eq!((e.bytes, e.wanted), (5, 4));
    }

    #[test]
    fn bytes_of_mut_writes_values_in_place() {
        let mut v = [0f32; 3];
        if let Some(b) = bytes_of_mut(&mut v) {
            assert_eq!(b.len(), 12);
            b[4..8].copy_from_slice(&2.5f32.to_le_bytes());
        }
        if cfg!(target_endian = "little") {
            assert_eq!(v, [0.0, 2.5, 0.0]);
        }
    }

    #[test]
    fn copy_handles_misalignment_and_checks_length() {
        let mut bytes = vec![0u8];
        for x in [7i32, -9, i32::MAX] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let mut out = [0i32; 3];
        copy_into(&bytes[1..], &mut out).unwrap();
        assert_eq!(out, [7, -9, i32::MAX]);
        let mut short = [0i32; 2];
        let e = copy_into(&bytes[1..], &mut short).unwrap_err();
        assert_eq!((e.bytes, e.wanted), (12, 8));
        assert_eq!(short, [0, 0]);
    }
}
