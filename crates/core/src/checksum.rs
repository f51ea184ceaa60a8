//! Checksums and digests behind one enum, with streaming update/finish.
//!
//! ```
//! use dataformats_core::ChecksumKind;
//! let mut h = ChecksumKind::Crc32.hasher();
//! h.update(b"1234");
//! h.update(b"56789");
//! assert_eq!(h.finish().value(), Some(0xCBF4_3926));
//! assert_eq!(ChecksumKind::Sha256.digest_size(), 32);
//! ```

use std::fmt;

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest as _, Sha224, Sha256, Sha384, Sha512};

/// A checksum or cryptographic digest algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChecksumKind {
    /// No checksum (a zero-length digest).
    None,
    /// Adler-32 as in zlib.
    Adler32,
    /// CRC-32/ISO-HDLC (zlib's `crc32`, IEEE 802.3; check value `0xCBF43926`).
    Crc32,
    /// CRC-16/MODBUS (poly 0x8005 reflected, init 0xFFFF; check value `0x4B37`).
    Crc16Modbus,
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// SHA-224.
    Sha224,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl ChecksumKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ChecksumKind; 10] = [
        ChecksumKind::None,
        ChecksumKind::Adler32,
        ChecksumKind::Crc32,
        ChecksumKind::Crc16Modbus,
        ChecksumKind::Md5,
        ChecksumKind::Sha1,
        ChecksumKind::Sha224,
        ChecksumKind::Sha256,
        ChecksumKind::Sha384,
        ChecksumKind::Sha512,
    ];

    /// Size of the digest in bytes.
    pub const fn digest_size(self) -> usize {
        match self {
            ChecksumKind::None => 0,
            ChecksumKind::Crc16Modbus => 2,
            ChecksumKind::Adler32 | ChecksumKind::Crc32 => 4,
            ChecksumKind::Md5 => 16,
            ChecksumKind::Sha1 => 20,
            ChecksumKind::Sha224 => 28,
            ChecksumKind::Sha256 => 32,
            ChecksumKind::Sha384 => 48,
            ChecksumKind::Sha512 => 64,
        }
    }

    /// The lowercase name (`"none"`, `"adler32"`, `"crc32"`, `"crc16"`, `"md5"`, `"sha1"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ChecksumKind::None => "none",
            ChecksumKind::Adler32 => "adler32",
            ChecksumKind::Crc32 => "crc32",
            ChecksumKind::Crc16Modbus => "crc16",
            ChecksumKind::Md5 => "md5",
            ChecksumKind::Sha1 => "sha1",
            ChecksumKind::Sha224 => "sha224",
            ChecksumKind::Sha256 => "sha256",
            ChecksumKind::Sha384 => "sha384",
            ChecksumKind::Sha512 => "sha512",
        }
    }

    /// The kind named `name` (as [`ChecksumKind::name`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A fresh streaming hasher.
    pub fn hasher(self) -> Hasher {
        let state = match self {
            ChecksumKind::None => State::None,
            ChecksumKind::Adler32 => State::Adler32(simd_adler32::Adler32::new()),
            ChecksumKind::Crc32 => State::Crc32(crc32fast::Hasher::new()),
            ChecksumKind::Crc16Modbus => State::Crc16(crate::crc16::INIT),
            ChecksumKind::Md5 => State::Md5(Md5::new()),
            ChecksumKind::Sha1 => State::Sha1(Sha1::new()),
            ChecksumKind::Sha224 => State::Sha224(Sha224::new()),
            ChecksumKind::Sha256 => State::Sha256(Sha256::new()),
            ChecksumKind::Sha384 => State::Sha384(Sha384::new()),
            ChecksumKind::Sha512 => State::Sha512(Sha512::new()),
        };
        Hasher { kind: self, state }
    }

    /// The digest of `data` in one call.
    pub fn digest(self, data: &[u8]) -> Digest {
        let mut h = self.hasher();
        h.update(data);
        h.finish()
    }
}

impl fmt::Display for ChecksumKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A streaming checksum computation; feed it with [`Hasher::update`].
#[derive(Clone)]
pub struct Hasher {
    kind: ChecksumKind,
    state: State,
}

#[derive(Clone)]
enum State {
    None,
    Adler32(simd_adler32::Adler32),
    Crc32(crc32fast::Hasher),
    /// The register (reflected), which is the CRC at the end.
    Crc16(u16),
    Md5(Md5),
    Sha1(Sha1),
    Sha224(Sha224),
    Sha256(Sha256),
    Sha384(Sha384),
    Sha512(Sha512),
}

impl fmt::Debug for Hasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hasher")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Hasher {
    /// Which algorithm this is.
    pub fn kind(&self) -> ChecksumKind {
        self.kind
    }

    /// Adds `data` to the checksummed stream.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            State::None => {}
            State::Adler32(h) => h.write(data),
            State::Crc32(h) => h.update(data),
            State::Crc16(r) => *r = crate::crc16::update(*r, data),
            State::Md5(h) => h.update(data),
            State::Sha1(h) => h.update(data),
            State::Sha224(h) => h.update(data),
            State::Sha256(h) => h.update(data),
            State::Sha384(h) => h.update(data),
            State::Sha512(h) => h.update(data),
        }
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Digest {
        let mut d = Digest {
            kind: self.kind,
            bytes: [0; 64],
        };
        let out = &mut d.bytes;
        fn put(out: &mut [u8; 64], b: &[u8]) {
            for (o, i) in out.iter_mut().zip(b) {
                *o = *i;
            }
        }
        match self.state {
            State::None => {}
            State::Adler32(h) => put(out, &h.finish().to_le_bytes()),
            State::Crc32(h) => put(out, &h.finalize().to_le_bytes()),
            State::Crc16(r) => put(out, &r.to_le_bytes()),
            State::Md5(h) => put(out, &h.finalize()),
            State::Sha1(h) => put(out, &h.finalize()),
            State::Sha224(h) => put(out, &h.finalize()),
            State::Sha256(h) => put(out, &h.finalize()),
            State::Sha384(h) => put(out, &h.finalize()),
            State::Sha512(h) => put(out, &h.finalize()),
        }
        d
    }
}

/// A finished digest: up to 64 bytes, no allocation.
///
/// Numeric checksums (Adler-32, CRC-32, CRC-16) are stored as the
/// little-endian bytes of their value, the way Bloscpack and TBL v2 write
/// them; [`Digest::value`] gives the number.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest {
    kind: ChecksumKind,
    bytes: [u8; 64],
}

impl Digest {
    /// The algorithm that made this digest.
    pub fn kind(&self) -> ChecksumKind {
        self.kind
    }

    /// The digest bytes (`kind().digest_size()` of them).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes
            .get(..self.kind.digest_size())
            .unwrap_or_default()
    }

    /// The numeric value of an Adler-32, CRC-32 or CRC-16; `None` for the others.
    pub fn value(&self) -> Option<u64> {
        let [a, b, c, d, ..] = self.bytes;
        match self.kind {
            ChecksumKind::Adler32 | ChecksumKind::Crc32 => {
                Some(u64::from(u32::from_le_bytes([a, b, c, d])))
            }
            ChecksumKind::Crc16Modbus => Some(u64::from(u16::from_le_bytes([a, b]))),
            _ => None,
        }
    }

    /// The digest as lowercase hex.
    pub fn to_hex(&self) -> String {
        crate::error::HexBytes(self.as_bytes()).to_string()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({}:{})", self.kind, self.to_hex())
    }
}

impl AsRef<[u8]> for Digest {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECK: &[u8] = b"123456789";

    #[test]
    fn standard_check_values() {
        let hex = |k: ChecksumKind| k.digest(CHECK).to_hex();
        assert_eq!(
            ChecksumKind::Adler32.digest(CHECK).value(),
            Some(0x091E_01DE)
        );
        assert_eq!(ChecksumKind::Crc32.digest(CHECK).value(), Some(0xCBF4_3926));
        assert_eq!(
            ChecksumKind::Crc16Modbus.digest(CHECK).value(),
            Some(0x4B37)
        );
        assert_eq!(hex(ChecksumKind::Md5), "25f9e794323b453885f5181f1b624d0b");
        assert_eq!(
            hex(ChecksumKind::Sha1),
            "f7c3bc1d808e04732adf679965ccc34ca7ae3441"
        );
        assert_eq!(
            hex(ChecksumKind::Sha224),
            "9b3e61bf29f17c75572fae2e86e17809a4513d07c8a18152acf34521"
        );
        assert_eq!(
            hex(ChecksumKind::Sha256),
            "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"
        );
        assert_eq!(
            hex(ChecksumKind::Sha384),
            "eb455d56d2c1a69de64e832011f3393d45f3fa31d6842f21af92d2fe469c499da5e3179847334a18479c8d1dedea1be3"
        );
        assert_eq!(
            hex(ChecksumKind::Sha512),
            "d9e6762dd1c8eaf6d61b3c6192fc408d4d6d5f1176d0c29169bc24e71c3f274ad27fcd5811b313d681f7e55ec02d73d499c95455b6b5bb503acf574fba8ffe85"
        );
        assert_eq!(ChecksumKind::None.digest(CHECK).as_bytes(), b"");
        // Numeric digests are little-endian bytes.
        assert_eq!(
            ChecksumKind::Crc32.digest(CHECK).as_bytes(),
            &[0x26, 0x39, 0xf4, 0xcb]
        );
        assert_eq!(ChecksumKind::Adler32.digest(b"").value(), Some(1));
        assert_eq!(ChecksumKind::Crc16Modbus.digest(b"").value(), Some(0xFFFF));
    }

    #[test]
    fn streaming_equals_one_shot_and_sizes_match() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for k in ChecksumKind::ALL {
            let mut h = k.hasher();
            for part in data.chunks(777) {
                h.update(part);
            }
            let d = h.finish();
            assert_eq!(d, k.digest(&data), "{k}");
            assert_eq!(d.as_bytes().len(), k.digest_size(), "{k}");
            assert_eq!(ChecksumKind::from_name(k.name()), Some(k));
        }
        assert_eq!(ChecksumKind::from_name("crc64"), None);
    }

    /// The SIMD and carry-less-multiplication paths against plain
    /// definitions, on long buffers (where those paths run) of every
    /// length near their block sizes.
    #[test]
    fn fast_paths_agree_with_the_definitions() {
        fn adler32(d: &[u8]) -> u64 {
            let (mut a, mut b) = (1u64, 0u64);
            for &x in d {
                a = (a + u64::from(x)) % 65521;
                b = (b + a) % 65521;
            }
            (b << 16) | a
        }
        fn crc32(d: &[u8]) -> u64 {
            let mut r = 0xFFFF_FFFFu32;
            for &x in d {
                r ^= u32::from(x);
                for _ in 0..8 {
                    r = if r & 1 == 1 {
                        (r >> 1) ^ 0xEDB8_8320
                    } else {
                        r >> 1
                    };
                }
            }
            u64::from(!r)
        }
        let mut rng = crate::rng::SplitMix64::new(32);
        let data: Vec<u8> = (0..70_000).map(|_| rng.next_u64() as u8).collect();
        for len in [
            0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 5552, 5553, 65_536, 70_000,
        ] {
            let d = data.get(..len).unwrap_or_default();
            assert_eq!(
                ChecksumKind::Adler32.digest(d).value(),
                Some(adler32(d)),
                "{len}"
            );
            assert_eq!(
                ChecksumKind::Crc32.digest(d).value(),
                Some(crc32(d)),
                "{len}"
            );
        }
        // All bytes 0xFF: Adler-32's sums wrap most often.
        let ff = vec![0xFF; 70_000];
        assert_eq!(
            ChecksumKind::Adler32.digest(&ff).value(),
            Some(adler32(&ff))
        );
    }
}
