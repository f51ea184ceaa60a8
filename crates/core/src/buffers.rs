//! Large output buffers.
//!
//! A buffer of tens of megabytes filled once from empty pays one page fault
//! per 4 KiB page it touches, each page cleared by the kernel: for a 32 MiB
//! chunk, 8,000 faults, more time than filling it. [`reserve_large`] gets
//! the whole buffer at once and asks the kernel (on Linux) to back it with
//! 2 MiB pages where it can, so filling it faults a few times instead.

/// Below this, a buffer is reserved without any advice (the kernel would
/// not use large pages for it anyway).
const LARGE: usize = 4 << 20;

/// Makes room in `buf` for `capacity` bytes in all (not more than it
/// asks; nothing if it already has the room), and, on Linux, advises the
/// kernel to back the new room with transparent huge pages. Returns whether
/// the room was made: if the memory cannot be had, `buf` is left as it was
/// and grows as usual when written.
pub fn reserve_large(buf: &mut Vec<u8>, capacity: usize) -> bool {
    let fresh = buf.capacity() == 0;
    if buf.capacity() >= capacity {
        return true;
    }
    if buf
        .try_reserve_exact(capacity.saturating_sub(buf.len()))
        .is_err()
    {
        return false;
    }
    if fresh && capacity >= LARGE {
        advise_huge_pages(buf.spare_capacity_mut());
    }
    true
}

/// Advises huge pages for the whole 2 MiB-aligned pages inside `room`.
#[cfg(target_os = "linux")]
fn advise_huge_pages(room: &mut [std::mem::MaybeUninit<u8>]) {
    const HUGE: usize = 2 << 20;
    let start = room.as_mut_ptr() as usize;
    let end = start.saturating_add(room.len());
    let (first, last) = (start.div_ceil(HUGE) * HUGE, end / HUGE * HUGE);
    if first >= last {
        return;
    }
    // SAFETY: `first..last` lies inside `room`, memory this process
    // allocated and owns (borrowed mutably, so nothing else uses it).
    // MADV_HUGEPAGE is advice about how to back the range: it changes no
    // byte of it and no mapping, and a refusal (no THP in this kernel) is
    // harmless and ignored.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_HUGEPAGE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_: &mut [std::mem::MaybeUninit<u8>]) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_made_once_and_what_is_there_stays() {
        let mut buf = Vec::new();
        assert!(reserve_large(&mut buf, 8 << 20));
        assert!(buf.capacity() >= 8 << 20);
        let before = buf.as_ptr();
        buf.extend((0..(8u32 << 20)).map(|i| (i % 251) as u8));
        // Filled within the room: never moved.
        assert_eq!(buf.as_ptr(), before);
        assert!(buf.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        // A buffer with the room already is left alone.
        assert!(reserve_large(&mut buf, 1 << 20));
        assert_eq!(buf.as_ptr(), before);
        assert_eq!(buf.len(), 8 << 20);
        // More room keeps the contents.
        assert!(reserve_large(&mut buf, 9 << 20));
        assert!(buf.capacity() >= 9 << 20);
        assert!(buf.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        // Small requests are plain reservations.
        let mut small = vec![1u8, 2, 3];
        assert!(reserve_large(&mut small, 100));
        assert!(small.capacity() >= 100);
        assert_eq!(small, [1, 2, 3]);
    }

    /// Where the kernel gives huge pages only to memory that asks for them,
    /// a filled large buffer is backed by some.
    #[cfg(target_os = "linux")]
    #[test]
    fn large_room_is_backed_by_huge_pages_where_the_kernel_has_them_on_request() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        if !mode.is_ok_and(|m| m.contains("[madvise]")) {
            eprintln!("transparent huge pages are not on request here: nothing to check");
            return;
        }
        let mut buf = Vec::new();
        assert!(reserve_large(&mut buf, 16 << 20));
        buf.resize(16 << 20, 1u8);
        let at = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
        // madvise splits the mapping: the figure adds up every part.
        let huge_kb = crate::testing::smaps_kib(at, "AnonHugePages")
            .expect("the buffer's mapping is in smaps");
        assert!(huge_kb >= 2048, "{huge_kb} kB of huge pages");
        assert!(buf.iter().all(|b| *b == 1));
    }

    #[test]
    fn room_that_cannot_be_had_is_refused_not_a_crash() {
        let mut buf = vec![7u8; 10];
        assert!(!reserve_large(&mut buf, usize::MAX));
        assert_eq!(buf, [7; 10]);
    }
}
