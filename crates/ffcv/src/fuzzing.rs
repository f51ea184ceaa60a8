//! Entry points shared by the fuzz target and the regression tests that
//! replay its saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

/// Arbitrary bytes as an FFCV file. When the first byte is odd the bytes
/// after it are the whole file; when it is even they describe one around a valid
/// header and one real 2 MiB data page: byte 1 gives the field count
/// (1..=5), the next five bytes the field types and array lengths, byte 7
/// the sample count (< 8), then the metadata rows, then bytes for the
/// start of the data page, and the rest is the allocation table.
pub fn ffcv(data: &[u8]) {
    use crate::{DESC_SIZE, HEADER_SIZE, Reader};
    let run = |bytes: Vec<u8>| {
        if let Ok(r) = Reader::with_options(
            Source::from_vec(bytes),
            dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
        ) {
            for i in 0..r.len().min(64) {
                for j in 0..r.fields().len() {
                    let _ = r.value(i, j);
                }
            }
            let _ = r.validate();
        }
    };
    let (head, rest) = match data {
        [b, file @ ..] if b & 1 == 1 => return run(file.to_vec()),
        [_, a, b, c, d, e, f, g, rest @ ..] => ([*a, *b, *c, *d, *e, *f, *g], rest),
        _ => return,
    };
    let page: u64 = 1 << 21;
    let nf = u64::from(head[0] % 5) + 1;
    let ns = u64::from(head[6] % 8);
    let mut f = vec![0u8; HEADER_SIZE as usize];
    let mut row = 0u64;
    for k in 0..nf as usize {
        let spec = head.get(1 + k).copied().unwrap_or(0);
        let ty = spec % 7;
        let start = f.len();
        f.push(ty);
        f.push(b'a' + k as u8);
        f.resize(start + 17, 0);
        if ty == 4 || ty == 6 {
            let descr: &[u8] = if spec & 8 == 0 {
                b"[[\"\", \"|u1\"]]"
            } else {
                b"[[\"\", \"<f4\"]]"
            };
            f.extend_from_slice(&u64::from(spec >> 4).to_le_bytes());
            f.resize(start + 17 + 256, 0);
            f.extend_from_slice(&(descr.len() as u64).to_le_bytes());
            f.extend_from_slice(descr);
        }
        f.resize(start + DESC_SIZE as usize, 0);
        let (size, align) = match ty {
            3 | 5 => (16, 1),
            2 => (13, 1),
            _ => (8, 8),
        };
        row = row.div_ceil(align) * align + size;
    }
    let row = row.div_ceil(8) * 8;
    let meta_len = (row * ns) as usize;
    let (rows, rest) = rest.split_at(meta_len.min(rest.len()));
    f.extend_from_slice(rows);
    f.resize(f.len() + meta_len - rows.len(), 0);
    let data_ptr = (f.len() as u64).div_ceil(page) * page;
    f.resize(data_ptr as usize, 0);
    let (page_bytes, table) = rest.split_at((rest.len() / 2).min(page as usize));
    f.extend_from_slice(page_bytes);
    f.resize((data_ptr + page) as usize, 0);
    let table_ptr = f.len() as u64;
    f.extend_from_slice(table);
    let mut header = vec![2u8, 0, nf as u8, 0];
    header.extend_from_slice(&(page as u32).to_le_bytes());
    header.extend_from_slice(&ns.to_le_bytes());
    header.extend_from_slice(&table_ptr.to_le_bytes());
    if let Some(h) = f.get_mut(..24) {
        h.copy_from_slice(&header);
    }
    run(f);
}
