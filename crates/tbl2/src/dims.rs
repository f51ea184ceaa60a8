//! Image dimensions from file headers, without decoding, exactly as
//! TurboLoader's converter reads them (`tbl2.md` §4), quirks included.

use crate::format::SampleFormat;

/// The `N` bytes at `i`, or `None` when the data ends first (a sniffer
/// then reports no dimensions).
fn bytes<const N: usize>(b: &[u8], i: usize) -> Option<[u8; N]> {
    b.get(i..i.checked_add(N)?)?.try_into().ok()
}

fn be16(b: &[u8], i: usize) -> Option<u32> {
    bytes(b, i).map(|x| u32::from(u16::from_be_bytes(x)))
}

fn le16(b: &[u8], i: usize) -> Option<u32> {
    bytes(b, i).map(|x| u32::from(u16::from_le_bytes(x)))
}

fn le24(b: &[u8], i: usize) -> Option<u32> {
    bytes::<3>(b, i).map(|[x, y, z]| u32::from_le_bytes([x, y, z, 0]))
}

fn be32(b: &[u8], i: usize) -> Option<u32> {
    bytes(b, i).map(u32::from_be_bytes)
}

fn le32(b: &[u8], i: usize) -> Option<u32> {
    bytes(b, i).map(u32::from_le_bytes)
}

fn clamp(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}

/// (width, height) of an image of `format` from its first bytes; (0, 0)
/// when the format has no sniffer, the data is shorter than 16 bytes, or the
/// header does not parse. Values above 65535 are clamped.
pub fn sniff(format: SampleFormat, data: &[u8]) -> (u16, u16) {
    if data.len() < 16 {
        return (0, 0);
    }
    let found = match format {
        SampleFormat::JPEG => jpeg(data),
        SampleFormat::PNG => png(data),
        SampleFormat::WEBP => webp(data),
        SampleFormat::BMP => bmp(data),
        SampleFormat::TIFF => tiff(data),
        _ => None,
    };
    let (w, h) = found.unwrap_or((0, 0));
    (clamp(w), clamp(h))
}

fn png(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 24
        || b.get(..4) != Some(&[0x89, b'P', b'N', b'G'][..])
        || b.get(12..16) != Some(&b"IHDR"[..])
    {
        return None;
    }
    Some((be32(b, 16)?, be32(b, 20)?))
}

fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    if b.get(..2) != Some(&[0xFF, 0xD8][..]) {
        return None;
    }
    let len = b.len();
    let mut p = 2usize;
    while p + 9 < len {
        if b.get(p) != Some(&0xFF) {
            p += 1;
            continue;
        }
        let mut code = *b.get(p + 1)?;
        p += 2;
        while code == 0xFF && p < len {
            code = *b.get(p)?;
            p += 1;
        }
        let sof = matches!(code, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF);
        if sof {
            if p + 7 > len {
                return None;
            }
            return Some((be16(b, p + 5)?, be16(b, p + 3)?));
        }
        if p + 2 > len {
            return None;
        }
        p += be16(b, p)? as usize;
    }
    None
}

fn webp(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 30 || b.get(..4) != Some(&b"RIFF"[..]) || b.get(8..12) != Some(&b"WEBP"[..]) {
        return None;
    }
    match b.get(12..16) {
        Some(b"VP8 ") => Some((le16(b, 26)? & 0x3FFF, le16(b, 28)? & 0x3FFF)),
        Some(b"VP8L") => {
            let v = le32(b, 21)?;
            Some(((v & 0x3FFF) + 1, ((v >> 14) & 0x3FFF) + 1))
        }
        Some(b"VP8X") => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        _ => None,
    }
}

fn bmp(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() < 26 || b.get(..2) != Some(&b"BM"[..]) {
        return None;
    }
    let w = le32(b, 18)?;
    let h = le32(b, 22)?;
    let h = if h & 0x8000_0000 != 0 {
        h.wrapping_neg()
    } else {
        h
    };
    Some((w, h))
}

fn tiff(b: &[u8]) -> Option<(u32, u32)> {
    let big = match b.get(..2) {
        Some(b"II") => false,
        Some(b"MM") => true,
        _ => return None,
    };
    let r16 = |i: usize| if big { be16(b, i) } else { le16(b, i) };
    let r32 = |i: usize| if big { be32(b, i) } else { le32(b, i) };
    let ifd = r32(4)? as usize;
    if ifd.checked_add(2).is_none_or(|e| e > b.len()) {
        return None;
    }
    let count = r16(ifd)? as usize;
    let (mut w, mut h) = (0u32, 0u32);
    for k in 0..count {
        let at = ifd + 2 + 12 * k;
        if at + 12 > b.len() {
            break;
        }
        let tag = r16(at)?;
        let value = r32(at + 8)?;
        match tag {
            256 => w = value,
            257 => h = value,
            _ => {}
        }
        if w != 0 && h != 0 {
            break;
        }
    }
    Some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_and_bmp() {
        let mut p = vec![0x89, b'P', b'N', b'G', 0, 0, 0, 0, 0, 0, 0, 13];
        p.extend_from_slice(b"IHDR");
        p.extend_from_slice(&300u32.to_be_bytes());
        p.extend_from_slice(&70000u32.to_be_bytes());
        assert_eq!(sniff(SampleFormat::PNG, &p), (300, 65535));
        let mut m = vec![0u8; 30];
        m[..2].copy_from_slice(b"BM");
        m[18..22].copy_from_slice(&40u32.to_le_bytes());
        m[22..26].copy_from_slice(&(-9i32).to_le_bytes());
        assert_eq!(sniff(SampleFormat::BMP, &m), (40, 9));
        m[18..22].copy_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(
            sniff(SampleFormat::BMP, &m).0,
            65535,
            "negative width read unsigned, clamped"
        );
    }

    #[test]
    fn jpeg_walk_skips_segments_and_needs_room() {
        // SOI, APP0 (len 16), SOF0 with h=20 w=30.
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 16];
        j.extend_from_slice(&[0u8; 14]);
        j.extend_from_slice(&[0xFF, 0xC0, 0, 17, 8, 0, 20, 0, 30, 3]);
        assert_eq!(sniff(SampleFormat::JPEG, &j), (30, 20));
        // Ending right after the width: the loop bound gives (0, 0).
        j.pop();
        assert_eq!(sniff(SampleFormat::JPEG, &j), (0, 0));
    }

    #[test]
    fn tiff_duplicates_and_big_endian_shorts() {
        let mut t = b"II*\0".to_vec();
        t.extend_from_slice(&8u32.to_le_bytes());
        let entries = [(256u16, 10u32), (256, 20), (257, 5), (256, 30)];
        t.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        for (tag, v) in entries {
            t.extend_from_slice(&tag.to_le_bytes());
            t.extend_from_slice(&[3, 0, 1, 0, 0, 0]);
            t.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(sniff(SampleFormat::TIFF, &t), (20, 5));
        assert_eq!(sniff(SampleFormat::MP4, &t), (0, 0));
        assert_eq!(
            sniff(SampleFormat::TIFF, &t[..15]),
            (0, 0),
            "under 16 bytes"
        );
    }
}
