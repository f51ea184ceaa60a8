//! FFCV's on-disk structures ([`crate::format`]) parsed with nom: each parser
//! borrows its input, allocates nothing, and stops with `Truncated` on short
//! input (through [`dataformats_core::parse::finish`], which also makes the
//! offset absolute). What the values must be is checked by the reader.

use dataformats_core::parse::{PResult, le_u8, le_u16, le_u32, le_u64, take};
use nom::Parser;
use nom::multi::fill;

use crate::format::{Alloc, ArrayArgs, Column, Header, ImageColumn, MAX_DESCR_LEN, RawDescriptor};
use crate::read::FieldType;

/// The 24-byte header.
pub fn header(i: &[u8]) -> PResult<'_, Header> {
    let (i, (version, num_fields, page_size, num_samples, alloc_table_ptr)) =
        (le_u16, le_u16, le_u32, le_u64, le_u64).parse(i)?;
    Ok((
        i,
        Header {
            version,
            num_fields,
            page_size,
            num_samples,
            alloc_table_ptr,
        },
    ))
}

/// One 1041-byte field descriptor.
pub fn descriptor(i: &[u8]) -> PResult<'_, RawDescriptor<'_>> {
    let (i, (type_id, name, arguments)) = (le_u8, take(16), take(1024)).parse(i)?;
    Ok((
        i,
        RawDescriptor {
            type_id,
            name,
            arguments,
        },
    ))
}

/// An array field's 1024 argument bytes.
pub fn array_args(i: &[u8]) -> PResult<'_, ArrayArgs<'_>> {
    let mut dims = [0u64; 32];
    let (i, ()) = fill(le_u64, &mut dims).parse(i)?;
    let (i, (descr_len, descr_area)) = (le_u64, take(MAX_DESCR_LEN as usize)).parse(i)?;
    Ok((
        i,
        ArrayArgs {
            dims,
            descr_len,
            descr_area,
        },
    ))
}

/// An `RGBImageField` column (13 bytes).
pub fn image_column(i: &[u8]) -> PResult<'_, ImageColumn> {
    let (i, (mode, width, height, data_ptr)) = (le_u8, le_u16, le_u16, le_u64).parse(i)?;
    Ok((
        i,
        ImageColumn {
            mode,
            width,
            height,
            data_ptr,
        },
    ))
}

/// The column of a field of type `ty`.
pub fn column<'a>(ty: &FieldType) -> fn(&'a [u8]) -> PResult<'a, Column> {
    match ty {
        FieldType::Int | FieldType::Float => |i| le_u64.map(Column::Scalar).parse(i),
        FieldType::NdArray { .. } | FieldType::TorchTensor { .. } => {
            |i| le_u64.map(Column::Pointer).parse(i)
        }
        FieldType::Bytes | FieldType::Json => |i| {
            (le_u64, le_u64)
                .map(|(ptr, size)| Column::Sized { ptr, size })
                .parse(i)
        },
        FieldType::RgbImage => |i| image_column.map(Column::Image).parse(i),
    }
}

/// One 24-byte allocation table entry.
pub fn alloc_entry(i: &[u8]) -> PResult<'_, Alloc> {
    let (i, (sample, ptr, size)) = (le_u64, le_u64, le_u64).parse(i)?;
    Ok((i, Alloc { sample, ptr, size }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::format::{ALLOC_ENTRY_SIZE, DESC_SIZE, HEADER_SIZE};
    use dataformats_core::parse::run;
    use dataformats_core::testing::assert_prefixes_truncated;

    fn u16_(b: &[u8], o: usize) -> u16 {
        u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
    }
    fn u32_(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }
    fn u64_(b: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
    }

    /// Every field lands where `ffcv-beton.md` puts it.
    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..2048u32).map(|x| (x * 7 + 3) as u8).collect();
        let h = run(&b, 0, header).unwrap();
        assert_eq!((h.version, h.num_fields), (u16_(&b, 0), u16_(&b, 2)));
        assert_eq!((h.page_size, h.num_samples), (u32_(&b, 4), u64_(&b, 8)));
        assert_eq!(h.alloc_table_ptr, u64_(&b, 16));
        let d = run(&b, 0, descriptor).unwrap();
        assert_eq!((d.type_id, d.name), (b[0], &b[1..17]));
        assert_eq!(d.arguments, &b[17..1041]);
        let a = run(&b, 0, array_args).unwrap();
        for k in 0..32 {
            assert_eq!(a.dims[k], u64_(&b, 8 * k), "dim {k}");
        }
        assert_eq!(a.descr_len, u64_(&b, 256));
        assert_eq!(a.descr_area, &b[264..1024]);
        let m = run(&b, 0, image_column).unwrap();
        assert_eq!(
            (m.mode, m.width, m.height),
            (b[0], u16_(&b, 1), u16_(&b, 3))
        );
        assert_eq!(m.data_ptr, u64_(&b, 5));
        let e = run(&b, 0, alloc_entry).unwrap();
        assert_eq!(
            (e.sample, e.ptr, e.size),
            (u64_(&b, 0), u64_(&b, 8), u64_(&b, 16))
        );
        let col = |ty: FieldType| run(&b, 0, column(&ty)).unwrap();
        assert_eq!(col(FieldType::Int), Column::Scalar(u64_(&b, 0)));
        assert_eq!(col(FieldType::Float), Column::Scalar(u64_(&b, 0)));
        let sized = Column::Sized {
            ptr: u64_(&b, 0),
            size: u64_(&b, 8),
        };
        assert_eq!(col(FieldType::Bytes), sized);
        assert_eq!(col(FieldType::Json), sized);
        assert_eq!(col(FieldType::RgbImage), Column::Image(m));
        let array = FieldType::NdArray {
            dtype: "<f4".into(),
            itemsize: 4,
            shape: vec![2],
        };
        assert_eq!(col(array), Column::Pointer(u64_(&b, 0)));
    }

    /// Every proper prefix of each structure is `Truncated` at an offset
    /// inside it, never a value.
    #[test]
    fn every_proper_prefix_is_truncated() {
        let b = [0x5Au8; 2048];
        assert_prefixes_truncated(&b[..HEADER_SIZE as usize], 777, header, "header");
        assert_prefixes_truncated(&b[..DESC_SIZE as usize], 777, descriptor, "descriptor");
        assert_prefixes_truncated(&b[..1024], 777, array_args, "array_args");
        assert_prefixes_truncated(&b[..13], 777, image_column, "image_column");
        assert_prefixes_truncated(
            &b[..8],
            777,
            column(&FieldType::Int),
            "column(&FieldType::Int)",
        );
        assert_prefixes_truncated(
            &b[..16],
            777,
            column(&FieldType::Json),
            "column(&FieldType::Json)",
        );
        assert_prefixes_truncated(
            &b[..13],
            777,
            column(&FieldType::RgbImage),
            "column(&FieldType::RgbImage)",
        );
        assert_prefixes_truncated(
            &b[..ALLOC_ENTRY_SIZE as usize],
            777,
            alloc_entry,
            "alloc_entry",
        );
    }
}
