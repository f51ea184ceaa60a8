//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::format::{FIELD_DESC_PTR, Header, MAGIC};
use crate::read::Reader;

/// Arbitrary bytes as an MLDF file: open, read every value, validate.
pub fn file(data: &[u8]) {
    if let Ok(r) = Reader::with_limits(Source::from_vec(data.to_vec()), Limits::fuzzing()) {
        let n = r.num_samples().min(4096);
        for i in 0..n {
            for j in 0..r.fields().len() {
                let _ = r.value(i, j);
            }
        }
        let _ = r.validate();
    }
}

/// Arbitrary bytes as the descriptors behind a valid header: byte 0 is the
/// field count (mod 8), byte 1 the sample count; the rest is the
/// descriptors, and whatever follows serves as metadata rows (layout B:
/// data region empty at the first page, rows and then an empty table).
pub fn descriptors(data: &[u8]) {
    let (nf, ns, rest) = match data {
        [a, b, rest @ ..] => (u16::from(*a % 8), u64::from(*b), rest),
        _ => return,
    };
    let mut f = Vec::with_capacity(rest.len() + 4096 + 128);
    f.extend_from_slice(MAGIC);
    f.resize(FIELD_DESC_PTR as usize, 0);
    f.extend_from_slice(rest);
    let meta = (f.len() as u64).div_ceil(64) * 64;
    f.resize(meta as usize, 0);
    let end = f.len() as u64 + 64 * ns;
    f.resize(end.div_ceil(16) as usize * 16, 0);
    let alloc = f.len() as u64;
    let data_ptr = 4096u64.max(alloc.div_ceil(4096) * 4096);
    f.resize(data_ptr.max(alloc) as usize, 0);
    let h = Header {
        version_major: 1,
        version_minor: 0,
        flags: 1,
        num_samples: ns,
        num_fields: nf,
        page_size: 4096,
        field_desc_ptr: FIELD_DESC_PTR,
        metadata_ptr: meta,
        data_ptr,
        alloc_table_ptr: f.len() as u64,
        data_crc32: 0,
    };
    if let Some(d) = f.get_mut(9..73) {
        d.copy_from_slice(&h.to_bytes());
    }
    file(&f);
}

/// Arbitrary bytes as a metadata table and allocation table of a fixed
/// schema (an INT, a nullable BYTES, a TEXT_TOKENIZED field): byte 0 is
/// the sample count (mod 32), byte 1 the flags (compressed/checksummed);
/// the rest is split between the rows, the data region and the table.
pub fn tables(data: &[u8]) {
    use crate::format::{Field, FieldType};
    let (ns, flags, rest) = match data {
        [a, b, rest @ ..] => (u64::from(*a % 32), 1 | (u32::from(*b) & 6), rest),
        _ => return,
    };
    let fields = [
        Field::new("i", FieldType::Int, false),
        Field::new("b", FieldType::Bytes, true),
        Field::new("t", FieldType::TextTokenized { vocab_size: 0 }, false),
    ];
    let row = 8 + 24 + 16;
    let mut f = Vec::new();
    f.extend_from_slice(MAGIC);
    f.resize(FIELD_DESC_PTR as usize, 0);
    for fd in &fields {
        f.extend_from_slice(&fd.to_bytes());
    }
    let meta = (f.len() as u64).div_ceil(64) * 64;
    f.resize(meta as usize, 0);
    let rows_len = (row * ns) as usize;
    let (rows, tail) = rest.split_at(rows_len.min(rest.len()));
    f.extend_from_slice(rows);
    f.resize(meta as usize + rows_len, 0);
    let data_ptr = (f.len() as u64).div_ceil(4096).max(1) * 4096;
    f.resize(data_ptr as usize, 0);
    let half = tail.len() / 2;
    f.extend_from_slice(tail.get(..half).unwrap_or_default());
    let alloc = (f.len() as u64).div_ceil(16) * 16;
    f.resize(alloc as usize, 0);
    let table = tail.get(half..).unwrap_or_default();
    f.extend_from_slice(table.get(..table.len() / 16 * 16).unwrap_or_default());
    let h = Header {
        version_major: 1,
        version_minor: 0,
        flags,
        num_samples: ns,
        num_fields: 3,
        page_size: 4096,
        field_desc_ptr: FIELD_DESC_PTR,
        metadata_ptr: meta,
        data_ptr,
        alloc_table_ptr: alloc,
        data_crc32: 0,
    };
    if let Some(d) = f.get_mut(9..73) {
        d.copy_from_slice(&h.to_bytes());
    }
    file(&f);
}

/// Arbitrary bytes as an FFCV file. When the first byte is odd the bytes
/// after it are the whole file; when it is even they describe one around a valid
/// header and one real 2 MiB data page: byte 1 gives the field count
/// (1..=5), the next five bytes the field types and array lengths, byte 7
/// the sample count (< 8), then the metadata rows, then bytes for the
/// start of the data page, and the rest is the allocation table.
pub fn ffcv(data: &[u8]) {
    use crate::ffcv::{DESC_SIZE, HEADER_SIZE, Reader};
    let run = |bytes: Vec<u8>| {
        if let Ok(r) = Reader::with_limits(Source::from_vec(bytes), Limits::fuzzing()) {
            for i in 0..r.num_samples().min(64) {
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
