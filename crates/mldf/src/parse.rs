//! MLDF's on-disk structures ([`crate::format`]) parsed with nom: each parser
//! borrows its input, allocates nothing, and stops with `Truncated` on short
//! input (through [`dataformats_core::parse::finish`], which also makes the
//! offset absolute). Only the layout is read here; what the values must be is
//! checked by the reader, in the order `mldf.md` §9 gives.

use dataformats_core::parse::{PResult, le_u8, le_u16, le_u32, le_u64, take};
use nom::Parser;
use nom::multi::fill;

use crate::format::{
    Alloc, AudioMeta, BytesMeta, FieldType, Header, ImageMeta, NdArrayArgs, RawDescriptor, Record,
    TextMeta,
};

/// The 64 header bytes after the magic (§3; offset 9 of the file).
pub fn header(i: &[u8]) -> PResult<'_, Header> {
    let (i, (version_major, version_minor, flags, num_samples, num_fields, _pad1, page_size)) =
        (le_u16, le_u16, le_u32, le_u64, le_u16, le_u16, le_u32).parse(i)?;
    let (i, (field_desc_ptr, metadata_ptr, data_ptr, alloc_table_ptr, data_crc32, _reserved)) =
        (le_u64, le_u64, le_u64, le_u64, le_u32, le_u32).parse(i)?;
    Ok((
        i,
        Header {
            version_major,
            version_minor,
            flags,
            num_samples,
            num_fields,
            page_size,
            field_desc_ptr,
            metadata_ptr,
            data_ptr,
            alloc_table_ptr,
            data_crc32,
        },
    ))
}

/// One 208-byte field descriptor (§4).
pub fn descriptor(i: &[u8]) -> PResult<'_, RawDescriptor<'_>> {
    let (i, (name, type_id, flags, metadata_size, _pad, arguments, _pad2)) =
        (take(64), le_u16, le_u16, le_u32, le_u32, take(128), take(4)).parse(i)?;
    Ok((
        i,
        RawDescriptor {
            name,
            type_id,
            flags,
            metadata_size,
            arguments,
        },
    ))
}

/// NDARRAY's 128 argument bytes (§5.4).
pub fn ndarray_args(i: &[u8]) -> PResult<'_, NdArrayArgs> {
    let (i, (dtype, ndim, _reserved)) = (le_u8, le_u8, take(6)).parse(i)?;
    let mut dims = [0u64; 15];
    let (i, ()) = fill(le_u64, &mut dims).parse(i)?;
    Ok((i, NdArrayArgs { dtype, ndim, dims }))
}

/// The pointer and size that open every pointer record.
fn pointer(i: &[u8]) -> PResult<'_, (u64, u32)> {
    (le_u64, le_u32).parse(i)
}

/// `BytesMeta` (16 bytes).
pub fn bytes_meta(i: &[u8]) -> PResult<'_, BytesMeta> {
    let (i, ((data_ptr, data_size), _pad)) = (pointer, le_u32).parse(i)?;
    Ok((
        i,
        BytesMeta {
            data_ptr,
            data_size,
        },
    ))
}

/// `ImageMeta` (24 bytes).
pub fn image_meta(i: &[u8]) -> PResult<'_, ImageMeta> {
    let (i, ((data_ptr, data_size), height, width, channels, mode, _pad)) =
        (pointer, le_u16, le_u16, le_u8, le_u8, take(6)).parse(i)?;
    Ok((
        i,
        ImageMeta {
            data_ptr,
            data_size,
            height,
            width,
            channels,
            mode,
        },
    ))
}

/// `AudioMeta` (24 bytes).
pub fn audio_meta(i: &[u8]) -> PResult<'_, AudioMeta> {
    let (i, ((data_ptr, data_size), num_samples, sample_rate, num_channels, bit_depth, codec)) =
        (pointer, le_u32, le_u32, le_u16, le_u8, le_u8).parse(i)?;
    Ok((
        i,
        AudioMeta {
            data_ptr,
            data_size,
            num_samples,
            sample_rate,
            num_channels,
            bit_depth,
            codec,
        },
    ))
}

/// `TextMeta` (16 bytes).
pub fn text_meta(i: &[u8]) -> PResult<'_, TextMeta> {
    let (i, ((data_ptr, data_size), num_tokens, encoding, _pad)) =
        (pointer, le_u16, le_u8, le_u8).parse(i)?;
    Ok((
        i,
        TextMeta {
            data_ptr,
            data_size,
            num_tokens,
            encoding,
        },
    ))
}

/// A parser of one metadata record.
pub type RecordParser<'a> = fn(&'a [u8]) -> PResult<'a, Record>;

/// The record of a field of type `ty` (§6.3); `None` for an opaque field,
/// whose layout this version does not know.
pub fn record<'a>(ty: &FieldType) -> Option<RecordParser<'a>> {
    Some(match ty {
        FieldType::Int | FieldType::Float => |i| le_u64.map(Record::Scalar).parse(i),
        FieldType::Bytes | FieldType::NdArray { .. } | FieldType::Json => {
            |i| bytes_meta.map(Record::Bytes).parse(i)
        }
        FieldType::ImageRaw | FieldType::ImageJpeg { .. } | FieldType::ImagePng => {
            |i| image_meta.map(Record::Image).parse(i)
        }
        FieldType::AudioWaveform { .. } | FieldType::AudioCompressed => {
            |i| audio_meta.map(Record::Audio).parse(i)
        }
        FieldType::TextRaw | FieldType::TextTokenized { .. } => {
            |i| text_meta.map(Record::Text).parse(i)
        }
        FieldType::Opaque { .. } => return None,
    })
}

/// A NULLABLE field's 8-byte trailer (§6.2): its presence byte.
pub fn trailer(i: &[u8]) -> PResult<'_, u8> {
    let (i, (present, _reserved)) = (le_u8, take(7)).parse(i)?;
    Ok((i, present))
}

/// One 16-byte allocation-table entry (§7.3).
pub fn alloc_entry(i: &[u8]) -> PResult<'_, Alloc> {
    let (i, ((ptr, size), _pad)) = (pointer, le_u32).parse(i)?;
    Ok((i, Alloc { ptr, size }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::format::{ALLOC_ENTRY_SIZE, DESC_SIZE, Dtype, TRAILER_SIZE};
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

    /// Every field lands where `mldf.md` puts it.
    #[test]
    fn fields_at_their_offsets() {
        let b: Vec<u8> = (0..=255u8).cycle().skip(7).take(256).collect();
        let h = run(&b, 9, header).unwrap();
        assert_eq!(
            (h.version_major, h.version_minor),
            (u16_(&b, 0), u16_(&b, 2))
        );
        assert_eq!((h.flags, h.num_samples), (u32_(&b, 4), u64_(&b, 8)));
        assert_eq!((h.num_fields, h.page_size), (u16_(&b, 16), u32_(&b, 20)));
        assert_eq!(
            (h.field_desc_ptr, h.metadata_ptr),
            (u64_(&b, 24), u64_(&b, 32))
        );
        assert_eq!(
            (h.data_ptr, h.alloc_table_ptr),
            (u64_(&b, 40), u64_(&b, 48))
        );
        assert_eq!(h.data_crc32, u32_(&b, 56));
        // to_bytes writes zeros where the parser skips (the pads).
        let back = h.to_bytes();
        for (k, (x, y)) in back.iter().zip(&b).enumerate() {
            if !(18..20).contains(&k) && k < 60 {
                assert_eq!(x, y, "header byte {k}");
            }
        }

        let d = run(&b, 0, descriptor).unwrap();
        assert_eq!(d.name, &b[..64]);
        assert_eq!((d.type_id, d.flags), (u16_(&b, 64), u16_(&b, 66)));
        assert_eq!(d.metadata_size, u32_(&b, 68));
        assert_eq!(d.arguments, &b[76..204]);

        let a = run(&b, 0, ndarray_args).unwrap();
        assert_eq!((a.dtype, a.ndim), (b[0], b[1]));
        for k in 0..15 {
            assert_eq!(a.dims[k], u64_(&b, 8 + 8 * k), "dim {k}");
        }

        let m = run(&b, 0, bytes_meta).unwrap();
        assert_eq!((m.data_ptr, m.data_size), (u64_(&b, 0), u32_(&b, 8)));
        let m = run(&b, 0, image_meta).unwrap();
        assert_eq!((m.data_ptr, m.data_size), (u64_(&b, 0), u32_(&b, 8)));
        assert_eq!((m.height, m.width), (u16_(&b, 12), u16_(&b, 14)));
        assert_eq!((m.channels, m.mode), (b[16], b[17]));
        let m = run(&b, 0, audio_meta).unwrap();
        assert_eq!((m.data_ptr, m.data_size), (u64_(&b, 0), u32_(&b, 8)));
        assert_eq!((m.num_samples, m.sample_rate), (u32_(&b, 12), u32_(&b, 16)));
        assert_eq!(
            (m.num_channels, m.bit_depth, m.codec),
            (u16_(&b, 20), b[22], b[23])
        );
        let m = run(&b, 0, text_meta).unwrap();
        assert_eq!((m.data_ptr, m.data_size), (u64_(&b, 0), u32_(&b, 8)));
        assert_eq!((m.num_tokens, m.encoding), (u16_(&b, 12), b[14]));
        assert_eq!(run(&b, 0, trailer).unwrap(), b[0]);
        let e = run(&b, 0, alloc_entry).unwrap();
        assert_eq!((e.ptr, e.size), (u64_(&b, 0), u32_(&b, 8)));
    }

    /// `record` picks the layout of the field's type.
    #[test]
    fn record_follows_the_type() {
        let b: Vec<u8> = (1..=24u8).collect();
        let rec = |ty: FieldType| run(&b, 0, record(&ty).unwrap()).unwrap();
        assert_eq!(rec(FieldType::Int), Record::Scalar(u64_(&b, 0)));
        assert_eq!(rec(FieldType::Float), Record::Scalar(u64_(&b, 0)));
        let nd = FieldType::NdArray {
            dtype: Dtype::F32,
            shape: vec![2],
        };
        for ty in [FieldType::Bytes, nd, FieldType::Json] {
            assert_eq!(rec(ty), Record::Bytes(run(&b, 0, bytes_meta).unwrap()));
        }
        for ty in [
            FieldType::ImageRaw,
            FieldType::ImageJpeg { quality: 9 },
            FieldType::ImagePng,
        ] {
            assert_eq!(rec(ty), Record::Image(run(&b, 0, image_meta).unwrap()));
        }
        for ty in [
            FieldType::AudioWaveform { float: true },
            FieldType::AudioCompressed,
        ] {
            assert_eq!(rec(ty), Record::Audio(run(&b, 0, audio_meta).unwrap()));
        }
        for ty in [
            FieldType::TextRaw,
            FieldType::TextTokenized { vocab_size: 3 },
        ] {
            assert_eq!(rec(ty), Record::Text(run(&b, 0, text_meta).unwrap()));
        }
        assert!(record(&FieldType::Opaque { type_id: 22 }).is_none());
        assert_eq!(rec(FieldType::Int).data(), None);
        assert_eq!(
            rec(FieldType::Bytes).data(),
            Some((u64_(&b, 0), u32_(&b, 8)))
        );
    }

    /// Every proper prefix of each structure is `Truncated` at an offset
    /// inside it, never a value.
    #[test]
    fn every_proper_prefix_is_truncated() {
        let b = [0xA5u8; 256];
        assert_prefixes_truncated(&b[..64], 4096, header, "header");
        assert_prefixes_truncated(&b[..DESC_SIZE as usize], 4096, descriptor, "descriptor");
        assert_prefixes_truncated(&b[..128], 4096, ndarray_args, "ndarray_args");
        assert_prefixes_truncated(&b[..16], 4096, bytes_meta, "bytes_meta");
        assert_prefixes_truncated(&b[..24], 4096, image_meta, "image_meta");
        assert_prefixes_truncated(&b[..24], 4096, audio_meta, "audio_meta");
        assert_prefixes_truncated(&b[..16], 4096, text_meta, "text_meta");
        assert_prefixes_truncated(&b[..TRAILER_SIZE as usize], 4096, trailer, "trailer");
        assert_prefixes_truncated(
            &b[..ALLOC_ENTRY_SIZE as usize],
            4096,
            alloc_entry,
            "alloc_entry",
        );
    }
}
