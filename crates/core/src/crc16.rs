//! CRC-16/MODBUS (TBL v2's per-sample checksum) at memory speed.
//!
//! A table-driven CRC handles one or two bytes per step; on x86-64 with
//! carry-less multiplication the bulk of a buffer is folded instead, 64
//! bytes per step in four independent lanes, and only the folded 16 bytes
//! and the last few bytes go through the table.
//!
//! Why folding gives the same CRC: read as a polynomial over GF(2), a
//! message `M` has the CRC (initial value 0) `M·x^16 mod P`, so any message
//! congruent to `M` modulo `P` has the same CRC. A 128-bit block `B = H·x^64
//! + L` followed by `D` more bits of message contributes `B·x^D`, which is
//! congruent to `H·(x^(64+D) mod P) + L·(x^D mod P)`: two carry-less
//! products of a 64-bit half by a 16-bit constant, 80 bits each, added to
//! the block `D` bits further on. Folding a buffer down to one block gives
//! a 16-byte message with the buffer's CRC. A starting register `r` is the
//! same as initial value 0 with `r` added to the first two bytes.
//!
//! The bytes are reflected (bit 0 of byte 0 is the highest power), so a
//! 64-bit half loaded little-endian holds its polynomial bit-reversed; a
//! constant `K` is stored bit-reversed in 64 bits, and the product then
//! lands one bit short of the block's frame, which the constants make up
//! for by being `x^(n-1) mod P` instead of `x^n mod P`.

use crc::{CRC_16_MODBUS, Crc, Table};

static TABLE: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_MODBUS);

/// The register at the start (the algorithm's initial value).
pub(crate) const INIT: u16 = 0xFFFF;

/// Buffers shorter than this go through the table only.
#[cfg(target_arch = "x86_64")]
const FOLD_MIN: usize = 128;

/// The register after `data`, starting from `reg` (CRC-16/MODBUS has no
/// final XOR and no reflection at the end, so the register is the CRC).
pub(crate) fn update(reg: u16, data: &[u8]) -> u16 {
    #[cfg(target_arch = "x86_64")]
    if data.len() >= FOLD_MIN && std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has carry-less multiplication (checked just
        // above); SSE2 is part of x86-64.
        return unsafe { fold::update(reg, data, None) };
    }
    table(reg, data)
}

/// [`update`] from [`INIT`] over `src`, copying it into `dst` (of the same
/// length) in the same pass: each byte is read once, so a sample that is
/// not in the cache costs about what copying it costs.
pub(crate) fn copy(src: &[u8], dst: &mut [u8]) -> u16 {
    #[cfg(target_arch = "x86_64")]
    if src.len() >= FOLD_MIN
        && dst.len() == src.len()
        && std::arch::is_x86_feature_detected!("pclmulqdq")
    {
        // SAFETY: as in `update`.
        return unsafe { fold::update(INIT, src, Some(dst)) };
    }
    dst.copy_from_slice(src);
    table(INIT, src)
}

/// [`update`] one table step at a time.
pub(crate) fn table(reg: u16, data: &[u8]) -> u16 {
    // The crate reflects an initial value of a reflected algorithm; the
    // register is kept reflected already.
    let mut d = TABLE.digest_with_initial(reg.reverse_bits());
    d.update(data);
    d.finalize()
}

/// `x^n mod P` (P = x^16 + x^15 + x^2 + 1), bit-reversed into 64 bits: the
/// coefficient of `x^d` at bit `63 - d`.
#[cfg(target_arch = "x86_64")]
const fn x_pow_reflected(n: u32) -> u64 {
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        r <<= 1;
        if r & 0x1_0000 != 0 {
            r ^= 0x1_8005;
        }
        i += 1;
    }
    (r as u64).reverse_bits()
}

#[cfg(target_arch = "x86_64")]
mod fold {
    use std::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_loadu_si128, _mm_set_epi64x, _mm_storeu_si128,
        _mm_xor_si128,
    };

    use super::x_pow_reflected;

    /// The constants that move a block `bits` further on: for its
    /// high-degree half (low 64 bits) and its low-degree half.
    const fn constants(bits: u32) -> (u64, u64) {
        (x_pow_reflected(bits + 63), x_pow_reflected(bits - 1))
    }

    const BY_128: (u64, u64) = constants(128);
    const BY_512: (u64, u64) = constants(512);

    /// `block` moved by the distance of `k` (from [`constants`]).
    #[target_feature(enable = "sse2,pclmulqdq")]
    fn fold(block: __m128i, k: __m128i) -> __m128i {
        _mm_xor_si128(
            _mm_clmulepi64_si128::<0x00>(block, k),
            _mm_clmulepi64_si128::<0x11>(block, k),
        )
    }

    #[target_feature(enable = "sse2")]
    fn k(c: (u64, u64)) -> __m128i {
        // The high half's constant multiplies the block's low 64 bits.
        _mm_set_epi64x(c.1 as i64, c.0 as i64)
    }

    /// Loads the 16 bytes of `data` at `at`, storing them at the same
    /// place of `out` when there is one.
    #[target_feature(enable = "sse2")]
    fn load(data: &[u8], at: usize, out: &mut Option<&mut [u8]>) -> __m128i {
        let b: &[u8; 16] = data
            .get(at..at + 16)
            .and_then(|b| b.try_into().ok())
            .unwrap_or(&[0; 16]);
        // SAFETY: `b` is 16 readable bytes; the load is unaligned.
        let v = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
        if let Some(o) = out
            .as_deref_mut()
            .and_then(|o| o.get_mut(at..at + 16))
            .and_then(|o| <&mut [u8; 16]>::try_from(o).ok())
        {
            // SAFETY: `o` is 16 writable bytes; the store is unaligned.
            unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), v) };
        }
        v
    }

    /// [`super::update`] by folding (any length; under 64 bytes through
    /// the table), copying `data` into `out` (of the same length) on the way
    /// when there is one.
    ///
    /// # Safety
    /// The CPU must have `pclmulqdq`.
    #[target_feature(enable = "sse2,pclmulqdq")]
    pub(super) unsafe fn update(reg: u16, data: &[u8], mut out: Option<&mut [u8]>) -> u16 {
        let bulk = data.len() / 64 * 64;
        if bulk == 0 {
            if let Some(o) = out {
                o.copy_from_slice(data);
            }
            return super::table(reg, data);
        }
        let mut lanes = [_mm_set_epi64x(0, 0); 4];
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = load(data, 16 * i, &mut out);
        }
        // The register goes into the first two bytes (little-endian).
        lanes[0] = _mm_xor_si128(lanes[0], _mm_set_epi64x(0, i64::from(reg)));
        let by_512 = k(BY_512);
        for at in (64..bulk).step_by(64) {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane = _mm_xor_si128(fold(*lane, by_512), load(data, at + 16 * i, &mut out));
            }
        }
        let by_128 = k(BY_128);
        let [mut acc, l1, l2, l3] = lanes;
        for lane in [l1, l2, l3] {
            acc = _mm_xor_si128(fold(acc, by_128), lane);
        }
        let blocks = data.len() / 16 * 16;
        for at in (bulk..blocks).step_by(16) {
            acc = _mm_xor_si128(fold(acc, by_128), load(data, at, &mut out));
        }
        let tail = data.get(blocks..).unwrap_or_default();
        if let Some(o) = out.and_then(|o| o.get_mut(blocks..)) {
            o.copy_from_slice(tail);
        }
        let mut folded = [0u8; 16];
        // SAFETY: `folded` is 16 writable bytes; the store is unaligned.
        unsafe { _mm_storeu_si128(folded.as_mut_ptr().cast(), acc) };
        super::table(super::table(0, &folded), tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn check_value() {
        assert_eq!(update(INIT, b"123456789"), 0x4B37);
        assert_eq!(table(INIT, b"123456789"), 0x4B37);
    }

    #[test]
    fn folding_gives_the_tables_crc_for_every_length_and_start() {
        let mut r = SplitMix64::new(16);
        let data: Vec<u8> = (0..5000).map(|_| r.next_u64() as u8).collect();
        for len in (0..600).chain([1023, 1024, 1025, 4095, 5000]) {
            for start in [0, 1, 7] {
                let Some(d) = data.get(start..start + len) else {
                    continue;
                };
                let reg = r.next_u64() as u16;
                let want = TABLE.checksum(d);
                assert_eq!(update(INIT, d), want, "len {len} at {start}");
                assert_eq!(
                    update(reg, d),
                    table(reg, d),
                    "len {len}, register {reg:#x}"
                );
            }
        }
    }

    #[test]
    fn any_split_gives_the_same_crc() {
        let mut r = SplitMix64::new(17);
        let data: Vec<u8> = (0..3000).map(|_| r.next_u64() as u8).collect();
        let want = TABLE.checksum(&data);
        for _ in 0..200 {
            let a = r.below(3001) as usize;
            let b = a + r.below((3001 - a) as u64) as usize;
            let (x, rest) = data.split_at(a);
            let (y, z) = rest.split_at(b - a);
            assert_eq!(update(update(update(INIT, x), y), z), want, "{a} {b}");
        }
    }

    #[test]
    fn copying_gives_the_bytes_and_their_crc() {
        let mut r = SplitMix64::new(18);
        let data: Vec<u8> = (0..3000).map(|_| r.next_u64() as u8).collect();
        for len in (0..300).chain([1000, 2047, 3000]) {
            let src = data.get(3000 - len..).unwrap();
            let mut dst = vec![0xEEu8; len];
            assert_eq!(copy(src, &mut dst), TABLE.checksum(src), "{len}");
            assert_eq!(dst, src, "{len}");
        }
    }
}
