//! Our writer and converter reproduce every valid shared vector byte for
//! byte: from its `.tar` (converter rules, then the sidecar's metadata calls)
//! or, for API-built files, from `add_sample` of the decoded samples.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::PathBuf;

use dataformats_tbl2::tar::convert_tar_file;
use dataformats_tbl2::{MetadataType, Reader, SampleInfo, Writer};
use serde_json::Value;

fn vectors() -> Option<PathBuf> {
    let dir = std::env::var_os("DATAFORMATS_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors")
        })
        .join("tbl2");
    if dir.is_dir() {
        Some(dir)
    } else if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("vectors folder {} is missing under CI=true", dir.display());
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_valid_vector_is_reproduced_byte_for_byte() {
    let Some(dir) = vectors() else { return };
    let out_dir = std::env::temp_dir().join(format!("df-tbl-ref-{}", std::process::id()));
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
            let report = convert_tar_file(dir.join(tar), &ours, compress, 2, |_| {}).unwrap();
            let exit = sidecar["converter_exit_status"].as_i64().unwrap_or(0);
            assert_eq!(
                report.truncated_member.is_some(),
                exit == 1,
                "{name}: converter status"
            );
            if !metadata.is_empty() {
                let reader = Reader::open(&ours).unwrap();
                let mut w = Writer::create(out_dir.join(format!("{name}.meta")), compress).unwrap();
                for i in 0..reader.len() {
                    let e = reader.entry(i).unwrap();
                    w.add_sample(
                        &reader.read_sample(i).unwrap(),
                        SampleInfo {
                            format: e.format,
                            width: e.width,
                            height: e.height,
                        },
                    )
                    .unwrap();
                }
                for m in &metadata {
                    w.add_metadata(
                        m["sample_index"].as_u64().unwrap(),
                        &hex(m["hex"].as_str().unwrap()),
                        MetadataType(m["type_code"].as_u64().unwrap() as u16),
                    )
                    .unwrap();
                }
                w.finish().unwrap();
                std::fs::rename(out_dir.join(format!("{name}.meta")), &ours).unwrap();
            }
        } else {
            // Built through the writer API: decoded samples with their stored format and dimensions.
            let reader = Reader::open(&p).unwrap();
            let mut w = Writer::create(&ours, compress).unwrap();
            for i in 0..reader.len() {
                let e = reader.entry(i).unwrap();
                w.add_sample(
                    &reader.read_sample(i).unwrap(),
                    SampleInfo {
                        format: e.format,
                        width: e.width,
                        height: e.height,
                    },
                )
                .unwrap();
            }
            for m in &metadata {
                w.add_metadata(
                    m["sample_index"].as_u64().unwrap(),
                    &hex(m["hex"].as_str().unwrap()),
                    MetadataType(m["type_code"].as_u64().unwrap() as u16),
                )
                .unwrap();
            }
            w.finish().unwrap();
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
