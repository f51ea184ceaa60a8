//! Entry points shared by the fuzz targets and the regression tests that
//! replay their saved inputs. Not a stable API.

#[cfg(feature = "blosc")]
use crate::codec::blosc;
use crate::parse;

/// Runs every variable-length-integer and string parser over `data`,
/// checking that encoders and decoders agree on whatever decodes.
pub fn varints(data: &[u8]) {
    if let Ok(v) = parse::run(data, 0, parse::uleb128) {
        let mut out = [0u8; 10];
        let n = parse::write_uleb128(v, &mut out);
        let again = out
            .get(..n)
            .map(|b| parse::run(b, 0, parse::uleb128_minimal));
        assert!(
            matches!(again, Some(Ok(x)) if x == v),
            "LEB128 round trip of {v}"
        );
    }
    let _ = parse::run(data, 0, parse::uleb128_minimal);
    if let Ok(v) = parse::run(data, 0, parse::dotnet_7bit_i32) {
        let mut out = [0u8; 5];
        let n = parse::write_dotnet_7bit_i32(v, &mut out);
        let again = out
            .get(..n)
            .map(|b| parse::run(b, 0, parse::dotnet_7bit_i32));
        assert!(
            matches!(again, Some(Ok(x)) if x == v),
            "7-bit Int32 round trip of {v}"
        );
    }
    let _ = parse::run(data, 0, parse::dotnet_string_bytes);
    let _ = parse::run(data, 0, parse::length_prefixed_utf8(parse::le_u32_len));
    let _ = parse::run(data, 0, parse::nul_padded_str(8));
}

/// Treats `data` as a Blosc1 chunk: validates it, and if it passes, decodes it
/// whole (when its declared size is at most 16 MiB), also by c-blosc alone
/// (same bytes or same error), and item by item.
#[cfg(feature = "blosc")]
pub fn blosc_chunk(data: &[u8]) {
    let Ok(h) = blosc::validate(data) else {
        return;
    };
    if h.nbytes > 16 << 20 {
        return;
    }
    let mut out = vec![0u8; h.nbytes as usize];
    let whole = blosc::decompress_into(data, &mut out, 1);
    // zlib chunks decode through libdeflate and our own block loop: c-blosc
    // must agree, save where libdeflate accepts a Huffman table zlib refuses
    // (the split's size and Adler-32 are still checked).
    let mut reference = vec![0u8; out.len()];
    let c_blosc = blosc::decompress_into_c_blosc(data, &mut reference, 1);
    if c_blosc.is_ok() {
        assert_eq!(
            whole.as_ref().map_err(ToString::to_string).map(|_| &out),
            Ok(&reference),
            "the zlib path and c-blosc decode differently"
        );
    } else if let (Err(a), Err(b)) = (&whole, &c_blosc) {
        assert_eq!(a.to_string(), b.to_string());
    }
    let ts = u64::from(h.typesize);
    let items = u64::from(h.nbytes) / ts;
    if items > 0 {
        let mut one = vec![0u8; h.typesize as usize];
        let last = blosc::getitem(data, items - 1, 1, &mut one);
        if whole.is_ok() && last.is_ok() {
            let at = usize::try_from((items - 1) * ts).unwrap_or(usize::MAX);
            let expected = at.checked_add(one.len()).and_then(|end| out.get(at..end));
            assert_eq!(
                expected,
                Some(&one[..]),
                "getitem disagrees with decompress"
            );
        }
    }
}
