//! Our writer and converter reproduce every valid shared vector byte for
//! byte: from its `.tar` (converter rules, then the sidecar's metadata calls)
//! or, for API-built files, from `add_sample` of the decoded samples.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_tbl2::tar::convert_tar_file;
use dataformats_tbl2::{Compression, MetadataType, Reader, SampleInfo, Writer};
use serde_json::Value;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Writes every sample of `source` (decoded, with its stored format and
/// dimensions) to `out` through the writer API, then `metadata`'s blocks.
fn rebuild(source: &std::path::Path, out: &std::path::Path, compress: bool, metadata: &[Value]) {
    let reader = Reader::open(source).unwrap();
    let mut w = Writer::create(
        out,
        if compress {
            Compression::Lz4
        } else {
            Compression::None
        },
    )
    .unwrap();
    for i in 0..reader.len() {
        let e = reader.entry(i).unwrap();
        let info = SampleInfo {
            format: e.format,
            width: e.width,
            height: e.height,
        };
        w.add_sample(&reader.read_sample(i).unwrap(), info).unwrap();
    }
    for m in metadata {
        let kind = MetadataType(m["type_code"].as_u64().unwrap() as u16);
        w.add_metadata(
            m["sample_index"].as_u64().unwrap(),
            &hex(m["hex"].as_str().unwrap()),
            kind,
        )
        .unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn every_valid_vector_is_reproduced_byte_for_byte() {
    let Some(dir) = dataformats_core::testing::vectors_dir("tbl2") else {
        return;
    };
    let out_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-tbl-ref-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut checked = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "tbl") {
            continue;
        }
        let sidecar: Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("tbl.json")).unwrap()).unwrap();
        if sidecar["valid"] != true {
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let compress = sidecar["summary"]["compression"] == "lz4";
        let ours = out_dir.join(&name);
        let metadata = sidecar["summary"]["metadata"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(tar) = sidecar["source_tar"].as_str() {
            // Converter output, then the sidecar's metadata calls in order.
            let report = convert_tar_file(
                dir.join(tar),
                &ours,
                if compress {
                    Compression::Lz4
                } else {
                    Compression::None
                },
                2,
                |_| {},
            )
            .unwrap();
            let exit = sidecar["converter_exit_status"].as_i64().unwrap_or(0);
            assert_eq!(
                report.truncated_member.is_some(),
                exit == 1,
                "{name}: converter status"
            );
            if !metadata.is_empty() {
                let staged = out_dir.join(format!("{name}.meta"));
                rebuild(&ours, &staged, compress, &metadata);
                std::fs::rename(&staged, &ours).unwrap();
            }
        } else {
            // Built through the writer API: decoded samples with their stored format and dimensions.
            rebuild(&p, &ours, compress, &metadata);
        }
        let want = std::fs::read(&p).unwrap();
        let got = std::fs::read(&ours).unwrap();
        assert!(
            got == want,
            "{name}: {} bytes written, the vector has {}; first difference at {:?}",
            got.len(),
            want.len(),
            got.iter().zip(&want).position(|(a, b)| a != b)
        );
        checked += 1;
    }
    std::fs::remove_dir_all(&out_dir).unwrap();
    assert_eq!(checked, 17, "every valid vector");
}
