//! Image header checks (`mldf.md` §5.6, R26): the PNG IHDR chunk and the
//! first JPEG SOFn segment against a record's dimensions; shared by the
//! MLDF and FFCV readers.

fn be16(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

/// PNG signature.
pub const PNG_SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Checks a PNG file's signature and IHDR against height, width, channels.
pub fn check_png(b: &[u8], height: u16, width: u16, channels: u8) -> Result<(), String> {
    if !b.starts_with(PNG_SIGNATURE) {
        return Err("PNG signature missing".into());
    }
    if b.get(8..16) != Some(b"\x00\x00\x00\x0dIHDR") {
        return Err("the PNG does not start with an IHDR chunk".into());
    }
    let (w, h, ct) = (be32(b, 16), be32(b, 20), b.get(25).copied());
    let (Some(w), Some(h), Some(ct)) = (w, h, ct) else {
        return Err("the PNG ends inside its IHDR chunk".into());
    };
    if w != u32::from(width) || h != u32::from(height) {
        return Err(format!("PNG is {w}x{h}, the record says {width}x{height}"));
    }
    let ok = match ct {
        0 => channels == 1,
        2 => channels == 3,
        4 | 6 => channels == 4,
        3 => channels == 3 || channels == 4,
        _ => return Err(format!("PNG colour type {ct}")),
    };
    if !ok {
        return Err(format!(
            "PNG colour type {ct} does not give {channels} channels"
        ));
    }
    Ok(())
}

/// A JPEG file's (height, width, components) from its first SOFn segment.
pub fn jpeg_dims(b: &[u8]) -> Result<(u16, u16, u8), String> {
    if !b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Err("JPEG signature missing".into());
    }
    let mut i = 2usize;
    loop {
        if b.get(i) != Some(&0xFF) {
            return Err(format!("no JPEG marker at byte {i}"));
        }
        while b.get(i) == Some(&0xFF) {
            i += 1;
        }
        let m = *b.get(i).ok_or("the JPEG ends before its frame header")?;
        i += 1;
        match m {
            0x01 | 0xD0..=0xD7 => continue,
            0x00 | 0xD8 | 0xD9 | 0xDA => {
                return Err(format!("JPEG marker {m:02X} before the frame header"));
            }
            _ => {}
        }
        let l = be16(b, i)
            .map(usize::from)
            .ok_or("the JPEG ends inside a segment length")?;
        if l < 2 {
            return Err(format!("JPEG segment length {l}"));
        }
        let sof = matches!(m, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF);
        if sof {
            let cut = "the JPEG ends inside its frame header";
            let (y, x, nf) = (
                be16(b, i + 3).ok_or(cut)?,
                be16(b, i + 5).ok_or(cut)?,
                *b.get(i + 7).ok_or(cut)?,
            );
            return Ok((y, x, nf));
        }
        i += l;
    }
}

/// Checks a JPEG file's signature and first SOFn against the record.
pub fn check_jpeg(b: &[u8], height: u16, width: u16, channels: u8) -> Result<(), String> {
    let (y, x, nf) = jpeg_dims(b)?;
    if y != height || x != width || nf != channels {
        return Err(format!(
            "JPEG frame is {x}x{y} with {nf} components, the record says {width}x{height} with {channels}"
        ));
    }
    Ok(())
}

/// A PNG file's (height, width, channels) from its IHDR chunk (palette
/// images count 3 channels).
pub fn png_dims(b: &[u8]) -> Result<(u16, u16, u8), String> {
    if !b.starts_with(PNG_SIGNATURE) || b.get(8..16) != Some(b"\x00\x00\x00\x0dIHDR") {
        return Err("not a PNG with an IHDR chunk first".into());
    }
    let (Some(w), Some(h), Some(ct)) = (be32(b, 16), be32(b, 20), b.get(25).copied()) else {
        return Err("the PNG ends inside its IHDR chunk".into());
    };
    let c = match ct {
        0 => 1,
        2 | 3 => 3,
        4 | 6 => 4,
        _ => return Err(format!("PNG colour type {ct}")),
    };
    let fit = |v: u32| u16::try_from(v).map_err(|_| format!("PNG side {v} above 65535"));
    Ok((fit(h)?, fit(w)?, c))
}
