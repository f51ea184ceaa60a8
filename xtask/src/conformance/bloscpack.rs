//! The Bloscpack checker: `bloscpack-blz.md` §6.1 sidecars against our reader.

use dataformats::bloscpack::format::checksum_name;
use dataformats::bloscpack::{ReadOptions, Reader};
use dataformats::core::{ChecksumKind, Source};
use serde_json::{Value, json};

use super::{Checker, Outcome, Vector, compare};
use dataformats::bloscpack::values::head;

pub(crate) struct Bloscpack;

impl Checker for Bloscpack {
    fn check(&self, v: &Vector) -> Outcome {
        let src = match Source::open(&v.path) {
            Ok(s) => s,
            Err(e) => return Outcome::Fail(format!("cannot open: {e}")),
        };
        let result = Reader::open_validated(src, ReadOptions::default());
        if !v.valid {
            let result = result
                .as_ref()
                .map_err(|e| (e.kind().as_str(), e.to_string()));
            return super::rejection(v, "error_kind", result);
        }
        let r = match result {
            Ok(r) => r,
            Err(e) => return Outcome::Fail(format!("rejected: {e}")),
        };
        let mut diffs = Vec::new();
        if let Some(want) = v.sidecar.get("summary") {
            compare(
                "summary",
                &summary(&r),
                want,
                &mut diffs,
                &["codec", "shuffle", "clevel"],
            );
        }
        if let Some(want) = v.sidecar.get("content") {
            match content(&r) {
                Ok(got) => compare("content", &got, want, &mut diffs, &[]),
                Err(e) => diffs.push(format!("content: {e}")),
            }
        }
        super::verdict(diffs)
    }
}

fn summary(r: &Reader) -> Value {
    let h = r.header();
    let chunks: Vec<Value> = (0..r.nchunks())
        .map(|i| {
            let c = &r.chunks()[i];
            let b = c.blosc;
            let shuffle = if b.flags & 0x04 != 0 {
                "bit"
            } else if b.flags & 0x01 != 0 {
                "byte"
            } else {
                "none"
            };
            let digest = r.stored_digest(i).map(|d| dataformats::core::error::HexBytes(&d).to_string()).unwrap_or_default();
            let digest = if h.checksum == ChecksumKind::None { String::new() } else { digest };
            json!({
                "version": b.version, "versionlz": b.versionlz, "flags": b.flags, "typesize": b.typesize,
                "nbytes": b.nbytes, "blocksize": b.blocksize, "cbytes": b.cbytes, "offset": c.offset,
                "digest": digest, "shuffle": shuffle, "memcpyed": b.flags & 0x02 != 0,
                "dont_split": b.flags & 0x10 != 0, "codec_flag": b.flags >> 5,
            })
        })
        .collect();
    let metadata_header = r.metadata().map(|m| {
        let mh = &m.header;
        let text = |b: &[u8]| b.iter().take_while(|&&c| c != 0).map(|&c| char::from(c)).collect::<String>();
        json!({
            "magic_format": text(&mh.magic_format), "meta_options": mh.meta_options,
            "meta_checksum": checksum_name(mh.meta_checksum), "meta_codec": mh.meta_codec.name(),
            "meta_level": mh.meta_level, "meta_size": mh.meta_size, "max_meta_size": mh.max_meta_size,
            "meta_comp_size": mh.meta_comp_size, "user_codec": text(&mh.user_codec),
        })
    });
    json!({
        "format_version": h.format_version,
        "checksum": checksum_name(h.checksum),
        "typesize": h.typesize,
        "chunk_size": h.chunk_size,
        "last_chunk": h.last_chunk,
        "nchunks": h.nchunks,
        "max_app_chunks": h.max_app_chunks,
        "offsets": h.has_offsets(),
        "options_byte": h.options,
        "metadata": r.metadata().map(|m| m.value.clone()),
        "metadata_header": metadata_header,
        "offsets_values": r.offsets(),
        "reserved_offsets_all_minus1": r.reserved_offsets_all_minus1(),
        "trailing_bytes_after_last_chunk": r.trailing_bytes(),
        "file_size": r.source().len(),
        "chunks": chunks,
    })
}

fn content(r: &Reader) -> Result<Value, String> {
    let payload = r.read_all().map_err(|e| e.to_string())?;
    let sha = ChecksumKind::Sha256.digest(&payload).to_hex();
    let np = r.numpy();
    Ok(json!({
        "nbytes": payload.len(),
        "sha256": sha,
        "dtype": np.map(|n| n.dtype.descr_json()),
        "shape": np.map(|n| n.shape.clone()),
        "head": head(np.map(|n| &n.dtype), &payload, 8).map_err(|e| e.to_string())?,
    }))
}
