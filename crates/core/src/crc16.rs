//! CRC-16/MODBUS (TBL v2's per-sample checksum) at memory speed.
//!
//! A table-driven CRC handles one or two bytes per step; on x86-64 with
//! carry-less multiplication the bulk of a buffer is folded instead, 64
//! bytes per step in four independent lanes (256 bytes per step in sixteen
//! lanes where the CPU multiplies 256-bit registers, VPCLMULQDQ with AVX2,
//! or 512-bit ones, with AVX-512), and only the folded 16 bytes and the
//! last few bytes go through the table.
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

/// Buffers from this long are folded in 512-bit registers where the CPU
/// can.
#[cfg(target_arch = "x86_64")]
const WIDE_MIN: usize = 512;

/// Buffers from this long are folded in 256-bit registers where the CPU
/// can (and 512-bit ones cannot).
#[cfg(target_arch = "x86_64")]
const MID_MIN: usize = 256;

/// The register after `data`, starting from `reg` (CRC-16/MODBUS has no
/// final XOR and no reflection at the end, so the register is the CRC).
pub(crate) fn update(reg: u16, data: &[u8]) -> u16 {
    #[cfg(target_arch = "x86_64")]
    if data.len() >= WIDE_MIN && wide::available() {
        // SAFETY: the CPU has the features `wide::update` needs (checked
        // just above).
        return unsafe { wide::update(reg, data) };
    }
    #[cfg(target_arch = "x86_64")]
    if data.len() >= MID_MIN && mid::available() {
        // SAFETY: the CPU has the features `mid::update` needs (checked
        // just above).
        return unsafe { mid::update(reg, data) };
    }
    #[cfg(target_arch = "x86_64")]
    if data.len() >= FOLD_MIN && std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has carry-less multiplication (checked just
        // above); SSE2 is part of x86-64.
        return unsafe { fold::update(reg, data) };
    }
    table(reg, data)
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
    pub(super) const fn constants(bits: u32) -> (u64, u64) {
        (x_pow_reflected(bits + 63), x_pow_reflected(bits - 1))
    }

    pub(super) const BY_128: (u64, u64) = constants(128);
    const BY_512: (u64, u64) = constants(512);

    /// `block` moved by the distance of `k` (from [`constants`]).
    #[target_feature(enable = "sse2,pclmulqdq")]
    pub(super) fn fold(block: __m128i, k: __m128i) -> __m128i {
        _mm_xor_si128(
            _mm_clmulepi64_si128::<0x00>(block, k),
            _mm_clmulepi64_si128::<0x11>(block, k),
        )
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn k(c: (u64, u64)) -> __m128i {
        // The high half's constant multiplies the block's low 64 bits.
        _mm_set_epi64x(c.1 as i64, c.0 as i64)
    }

    /// The 16 bytes of `data` at `at` (zeros past its end, which the
    /// callers never reach).
    #[target_feature(enable = "sse2")]
    fn load(data: &[u8], at: usize) -> __m128i {
        let b: &[u8; 16] = data
            .get(at..at + 16)
            .and_then(|b| b.try_into().ok())
            .unwrap_or(&[0; 16]);
        // SAFETY: `b` is 16 readable bytes; the load is unaligned.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    /// [`super::update`] by folding (any length; under 64 bytes through
    /// the table).
    ///
    /// # Safety
    /// The CPU must have `pclmulqdq`.
    #[target_feature(enable = "sse2,pclmulqdq")]
    pub(super) unsafe fn update(reg: u16, data: &[u8]) -> u16 {
        let bulk = data.len() / 64 * 64;
        if bulk == 0 {
            return super::table(reg, data);
        }
        let mut lanes = [_mm_set_epi64x(0, 0); 4];
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = load(data, 16 * i);
        }
        // The register goes into the first two bytes (little-endian).
        lanes[0] = _mm_xor_si128(lanes[0], _mm_set_epi64x(0, i64::from(reg)));
        let by_512 = k(BY_512);
        for at in (64..bulk).step_by(64) {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane = _mm_xor_si128(fold(*lane, by_512), load(data, at + 16 * i));
            }
        }
        let by_128 = k(BY_128);
        let [mut acc, l1, l2, l3] = lanes;
        for lane in [l1, l2, l3] {
            acc = _mm_xor_si128(fold(acc, by_128), lane);
        }
        finish(acc, data, bulk)
    }

    /// The CRC of `data` given `acc`, everything before `from` folded
    /// into one block that ends at `from`: the whole blocks after it folded
    /// in, then that block and the last bytes through the table.
    #[target_feature(enable = "sse2,pclmulqdq")]
    pub(super) fn finish(mut acc: __m128i, data: &[u8], from: usize) -> u16 {
        let by_128 = k(BY_128);
        let blocks = data.len() / 16 * 16;
        for at in (from..blocks).step_by(16) {
            acc = _mm_xor_si128(fold(acc, by_128), load(data, at));
        }
        let tail = data.get(blocks..).unwrap_or_default();
        let mut folded = [0u8; 16];
        // SAFETY: `folded` is 16 writable bytes; the store is unaligned.
        unsafe { _mm_storeu_si128(folded.as_mut_ptr().cast(), acc) };
        super::table(super::table(0, &folded), tail)
    }
}

/// The same folding two 128-bit blocks per instruction (VPCLMULQDQ on
/// 256-bit AVX registers): eight registers of 32 bytes, 256 bytes a step.
/// Measured on 2 vCPUs of an AMD EPYC without AVX-512: the 128-bit fold
/// runs at about 12 GB/s there, whatever its number of lanes (the
/// multiplier's throughput bounds it), the 256-bit one at about 25 GB/s.
#[cfg(target_arch = "x86_64")]
mod mid {
    use std::arch::x86_64::{
        __m256i, _mm_xor_si128, _mm256_castsi256_si128, _mm256_clmulepi64_epi128,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_set_epi64x, _mm256_xor_si256,
    };

    use super::fold::{BY_128, constants, finish, fold, k};

    const BY_256: (u64, u64) = constants(256);
    const BY_2048: (u64, u64) = constants(2048);

    /// Registers of 32 bytes folded side by side.
    const REGS: usize = 8;

    /// Whether this CPU has what [`update`] needs.
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("vpclmulqdq")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }

    /// The constants of `c` in each 128-bit lane.
    #[target_feature(enable = "avx2")]
    fn k2(c: (u64, u64)) -> __m256i {
        _mm256_set_epi64x(c.1 as i64, c.0 as i64, c.1 as i64, c.0 as i64)
    }

    /// Each 128-bit lane of `block` moved by the distance of `k`.
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn fold2(block: __m256i, k: __m256i) -> __m256i {
        _mm256_xor_si256(
            _mm256_clmulepi64_epi128::<0x00>(block, k),
            _mm256_clmulepi64_epi128::<0x11>(block, k),
        )
    }

    /// The 32 bytes of `b` from `at`.
    #[target_feature(enable = "avx2")]
    fn load2(b: &[u8; 32 * REGS], at: usize) -> __m256i {
        let at = at.min(32 * (REGS - 1));
        // SAFETY: `at + 32 <= 32 * REGS`, the length of `b` (clamped just
        // above); the load is unaligned.
        unsafe { _mm256_loadu_si256(b.as_ptr().add(at).cast()) }
    }

    /// [`super::update`] eight registers at a time (under 256 bytes
    /// through the table).
    ///
    /// # Safety
    /// The CPU must have what [`available`] checks.
    #[target_feature(enable = "avx2,vpclmulqdq,pclmulqdq,sse2")]
    pub(super) unsafe fn update(reg: u16, data: &[u8]) -> u16 {
        let mut steps = data
            .chunks_exact(32 * REGS)
            .filter_map(|c| c.try_into().ok());
        let Some(first): Option<&[u8; 32 * REGS]> = steps.next() else {
            return super::table(reg, data);
        };
        let mut regs: [__m256i; REGS] = std::array::from_fn(|i| load2(first, 32 * i));
        // The register goes into the first two bytes (little-endian).
        regs[0] = _mm256_xor_si256(regs[0], _mm256_set_epi64x(0, 0, 0, i64::from(reg)));
        let by_2048 = k2(BY_2048);
        let mut done = 32 * REGS;
        for step in steps {
            for (i, r) in regs.iter_mut().enumerate() {
                *r = _mm256_xor_si256(fold2(*r, by_2048), load2(step, 32 * i));
            }
            done += 32 * REGS;
        }
        let by_256 = k2(BY_256);
        let [mut acc, rest @ ..] = regs;
        for r in rest {
            acc = _mm256_xor_si256(fold2(acc, by_256), r);
        }
        // The register's two blocks into one: the first moved by 128 bits.
        let one = _mm_xor_si128(
            fold(_mm256_castsi256_si128(acc), k(BY_128)),
            _mm256_extracti128_si256::<1>(acc),
        );
        finish(one, data, done)
    }
}

/// The same folding four 128-bit blocks per instruction (VPCLMULQDQ on
/// 512-bit registers): four registers of 64 bytes, 256 bytes a step.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::{
        __m128i, __m512i, _mm_xor_si128, _mm512_broadcast_i32x4, _mm512_clmulepi64_epi128,
        _mm512_extracti32x4_epi32, _mm512_loadu_si512, _mm512_set_epi64, _mm512_setzero_si512,
        _mm512_xor_si512,
    };

    use super::fold::{BY_128, constants, finish, fold, k};

    const BY_256: (u64, u64) = constants(256);
    const BY_384: (u64, u64) = constants(384);
    const BY_512: (u64, u64) = constants(512);
    const BY_2048: (u64, u64) = constants(2048);

    /// Whether this CPU has what [`update`] needs.
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("vpclmulqdq")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }

    /// The constants of `c` in each 128-bit lane.
    #[target_feature(enable = "avx512f")]
    fn k4(c: (u64, u64)) -> __m512i {
        _mm512_broadcast_i32x4(k(c))
    }

    /// Each 128-bit lane of `block` moved by the distance of `k`.
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold4(block: __m512i, k: __m512i) -> __m512i {
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128::<0x00>(block, k),
            _mm512_clmulepi64_epi128::<0x11>(block, k),
        )
    }

    /// The 64 bytes of `data` at `at` (zeros past its end, which the
    /// callers never reach).
    #[target_feature(enable = "avx512f")]
    fn load4(data: &[u8], at: usize) -> __m512i {
        match data.get(at..at + 64) {
            // SAFETY: `b` is 64 readable bytes; the load is unaligned.
            Some(b) => unsafe { _mm512_loadu_si512(b.as_ptr().cast()) },
            None => _mm512_setzero_si512(),
        }
    }

    /// [`super::update`] four blocks at a time (under 256 bytes through
    /// the table).
    ///
    /// # Safety
    /// The CPU must have what [`available`] checks.
    #[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse2")]
    pub(super) unsafe fn update(reg: u16, data: &[u8]) -> u16 {
        let bulk = data.len() / 256 * 256;
        if bulk == 0 {
            return super::table(reg, data);
        }
        let mut regs = [_mm512_setzero_si512(); 4];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = load4(data, 64 * i);
        }
        // The register goes into the first two bytes (little-endian).
        regs[0] = _mm512_xor_si512(
            regs[0],
            _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, i64::from(reg)),
        );
        let by_2048 = k4(BY_2048);
        for at in (256..bulk).step_by(256) {
            for (i, r) in regs.iter_mut().enumerate() {
                *r = _mm512_xor_si512(fold4(*r, by_2048), load4(data, at + 64 * i));
            }
        }
        let by_512 = k4(BY_512);
        let [mut acc, r1, r2, r3] = regs;
        for r in [r1, r2, r3] {
            acc = _mm512_xor_si512(fold4(acc, by_512), r);
        }
        // The whole 64-byte groups left (at most three).
        let groups = data.len() / 64 * 64;
        for at in (bulk..groups).step_by(64) {
            acc = _mm512_xor_si512(fold4(acc, by_512), load4(data, at));
        }
        // The register's four blocks into one: block j moved by 3 - j.
        let blocks: [__m128i; 4] = [
            _mm512_extracti32x4_epi32::<0>(acc),
            _mm512_extracti32x4_epi32::<1>(acc),
            _mm512_extracti32x4_epi32::<2>(acc),
            _mm512_extracti32x4_epi32::<3>(acc),
        ];
        let one = _mm_xor_si128(
            _mm_xor_si128(fold(blocks[0], k(BY_384)), fold(blocks[1], k(BY_256))),
            _mm_xor_si128(fold(blocks[2], k(BY_128)), blocks[3]),
        );
        finish(one, data, groups)
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

    /// Every implementation this CPU can run against the table, for every
    /// length to past four wide steps, from the initial and a random
    /// register (`update` picks one by length, so it alone would not reach
    /// each of them at every length).
    #[test]
    fn each_implementation_gives_the_tables_crc() {
        let mut r = SplitMix64::new(18);
        let data: Vec<u8> = (0..3000).map(|_| r.next_u64() as u8).collect();
        type Crc = fn(u16, &[u8]) -> u16;
        let mut impls: Vec<(&str, Crc)> = vec![("table", table)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("pclmulqdq") {
                // SAFETY: the CPU has carry-less multiplication.
                impls.push(("fold", |reg, d| unsafe { fold::update(reg, d) }));
            }
            if mid::available() {
                // SAFETY: the CPU has what the 256-bit fold needs.
                impls.push(("mid", |reg, d| unsafe { mid::update(reg, d) }));
            }
            if wide::available() {
                // SAFETY: the CPU has what the wide fold needs.
                impls.push(("wide", |reg, d| unsafe { wide::update(reg, d) }));
            }
        }
        for len in (0..1100).chain([2047, 2048, 2049, 3000]) {
            let d = data.get(3000 - len..).unwrap_or_default();
            let want = TABLE.checksum(d);
            let reg = r.next_u64() as u16;
            let want_reg = table(reg, d);
            for (name, f) in &impls {
                assert_eq!(f(INIT, d), want, "{name}, {len} bytes");
                assert_eq!(f(reg, d), want_reg, "{name}, {len} bytes from {reg:#x}");
            }
        }
    }
}
