//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

use dataformats_core::{Limits, Source};

use crate::format::{FIELD_DESC_PTR, Header, MAGIC};
use crate::read::Reader;

/// Arbitrary bytes as an MLDF file: open, read every value, validate.
pub fn file(data: &[u8]) {
    if let Ok(r) = Reader::with_options(
        Source::from_vec(data.to_vec()),
        dataformats_core::ReadOptions::default().limits(Limits::fuzzing()),
    ) {
        let n = r.len().min(4096);
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
        Field::new("i", FieldType::Int),
        Field::new("b", FieldType::Bytes).with_nullable(true),
        Field::new("t", FieldType::TextTokenized { vocab_size: 0 }),
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
