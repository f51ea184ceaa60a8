//! The writer: every ctf2bin-made vector is rebuilt byte for byte from its
//! decoded sequences with ctf2bin's chunking; round trips through the reader.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_cntk::{
    Chunking, ElemType, Reader, Record, RecordData, StreamDesc, StreamKind, Writer,
};

/// Rewrites every sequence of `r` through a new writer at `out`.
fn rewrite(r: &Reader, out: &std::path::Path, chunking: Chunking) {
    let mut w = Writer::create(out, r.streams(), chunking).unwrap();
    for i in 0..r.chunks().len() {
        let ch = r.read_chunk(i).unwrap();
        for q in 0..ch.sequence_lengths.len() {
            let sparse: Vec<Vec<Vec<(u32, f64)>>> = ch
                .records
                .iter()
                .map(|per| match &per[q] {
                    Record::Sparse {
                        values,
                        indices,
                        sizes,
                        ..
                    } => {
                        let mut at = 0usize;
                        sizes
                            .iter()
                            .map(|&n| {
                                let s = (at..at + n as usize)
                                    .map(|k| (indices[k], values[k]))
                                    .collect();
                                at += n as usize;
                                s
                            })
                            .collect()
                    }
                    Record::Dense { .. } => Vec::new(),
                })
                .collect();
            let data: Vec<RecordData<'_>> = ch
                .records
                .iter()
                .zip(&sparse)
                .map(|(per, sp)| match &per[q] {
                    Record::Dense { samples, values } => RecordData::Dense {
                        samples: *samples,
                        values,
                    },
                    Record::Sparse { .. } => RecordData::Sparse(sp),
                })
                .collect();
            w.add_sequence(&data).unwrap();
        }
    }
    w.finish().unwrap();
}

#[test]
fn ctf2bin_vectors_are_rebuilt_byte_for_byte() {
    let Some(dir) = dataformats_core::testing::vectors_dir("cntk") else {
        return;
    };
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-w-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        let sidecar: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("bin.json")).unwrap()).unwrap();
        let Some(chunk_size) = sidecar["producer_args"]["chunk_size"].as_u64() else {
            continue;
        };
        if sidecar["valid"] != true {
            continue;
        }
        let r = Reader::open(&p).unwrap();
        let ours = out.join(p.file_name().unwrap());
        rewrite(&r, &ours, Chunking::Ctf2bin(chunk_size));
        dataformats_core::testing::assert_same_file(&ours, &p);
        n += 1;
    }
    std::fs::remove_dir_all(&out).unwrap();
    assert!(n >= 35, "only {n} ctf2bin vectors rebuilt");
}

#[test]
fn target_chunking_and_validation() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-w2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let streams = [
        StreamDesc {
            name: "x".into(),
            kind: StreamKind::Dense,
            elem: ElemType::F32,
            dim: 3,
        },
        StreamDesc {
            name: "y".into(),
            kind: StreamKind::Sparse,
            elem: ElemType::F64,
            dim: 100,
        },
    ];
    let p = dir.join("t.bin");
    let mut w = Writer::create(&p, &streams, Chunking::Target(200)).unwrap();
    for q in 0..50u32 {
        let vals: Vec<f64> = (0..3 * (q % 4)).map(f64::from).collect();
        let sp: Vec<Vec<(u32, f64)>> = (0..q % 3)
            .map(|j| vec![(j * 7, f64::from(q)), (99, -1.5)])
            .collect();
        w.add_sequence(&[
            RecordData::Dense {
                samples: q % 4,
                values: &vals,
            },
            RecordData::Sparse(&sp),
        ])
        .unwrap();
    }
    // Wrong shapes and out-of-range indices are refused.
    assert!(
        w.add_sequence(&[
            RecordData::Dense {
                samples: 2,
                values: &[1.0]
            },
            RecordData::Sparse(&[])
        ])
        .is_err()
    );
    assert!(
        w.add_sequence(&[
            RecordData::Dense {
                samples: 0,
                values: &[]
            },
            RecordData::Sparse(&[vec![(100, 1.0)]])
        ])
        .is_err()
    );
    w.finish().unwrap();
    let r = Reader::open(&p).unwrap();
    r.validate().unwrap();
    assert!(r.chunks().len() > 3, "chunks are cut by size");
    let total: u32 = r.chunks().iter().map(|c| c.num_sequences).sum();
    assert_eq!(total, 50);
    let ch = r.read_chunk(0).unwrap();
    assert_eq!(ch.sequence_lengths[0], 0);
    assert_eq!(
        ch.records[0][1],
        Record::Dense {
            samples: 1,
            values: vec![0.0, 1.0, 2.0]
        }
    );
    // Duplicate names are refused up front; dropping an unfinished writer leaves nothing.
    assert!(
        Writer::create(
            dir.join("d.bin"),
            &[streams[0].clone(), streams[0].clone()],
            Chunking::Target(1)
        )
        .is_err()
    );
    {
        let _w = Writer::create(dir.join("gone.bin"), &streams, Chunking::Target(1)).unwrap();
    }
    assert!(!dir.join("gone.bin").exists());
}

#[test]
fn ctf2bin_conversions_are_byte_identical() {
    use dataformats_cntk::ctf::{ctf_to_cbf, parse_streams_file};
    let Some(dir) = dataformats_core::testing::vectors_dir("cntk") else {
        return;
    };
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-ctf-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut n = 0;
    let mut invalid = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("invalid")).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for p in paths {
        if p.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        let sidecar: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("bin.json")).unwrap()).unwrap();
        let Some(chunk_size) = sidecar["producer_args"]["chunk_size"].as_u64() else {
            continue;
        };
        // Every file ctf2bin made, including the invalid one it writes for a negative index.
        let ctf = std::fs::read_to_string(p.with_extension("ctf")).unwrap();
        let specs =
            parse_streams_file(&std::fs::read_to_string(p.with_extension("streams")).unwrap())
                .unwrap();
        let precision = if sidecar["producer_args"]["precision"] == "double" {
            ElemType::F64
        } else {
            ElemType::F32
        };
        let ours = out.join(p.file_name().unwrap());
        let report = ctf_to_cbf(
            ctf.as_bytes(),
            &specs,
            precision,
            Chunking::Ctf2bin(chunk_size),
            0,
            &ours,
            |_| {},
        )
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if sidecar["valid"] == true {
            assert_eq!(report.negative_indices, 0, "{}", p.display());
        } else {
            // ctf2bin wrote it; our reader must refuse it for the sidecar's reason.
            assert!(report.negative_indices > 0, "{}", p.display());
            let err = Reader::open(&ours).and_then(|r| r.validate()).unwrap_err();
            assert_eq!(err.kind().as_str(), sidecar["error"], "{}", p.display());
            // Without the compat mode the converter refuses the text itself.
            let strict = ctf_to_cbf(
                ctf.as_bytes(),
                &specs,
                precision,
                Chunking::Target(chunk_size),
                0,
                &out.join("strict.bin"),
                |_| {},
            );
            assert!(strict.is_err(), "{}", p.display());
            invalid += 1;
        }
        dataformats_core::testing::assert_same_file(&ours, &p);
        n += 1;
    }
    std::fs::remove_dir_all(&out).unwrap();
    assert!(n >= 36, "only {n} conversions compared");
    assert_eq!(invalid, 1, "ctf2bin-made invalid vectors");
}

#[test]
fn ctf_cbf_ctf_cbf_is_a_fixed_point() {
    use dataformats_cntk::ctf::{StreamSpec, cbf_to_ctf, ctf_to_cbf, parse_streams_file};
    let Some(dir) = dataformats_core::testing::vectors_dir("cntk") else {
        return;
    };
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-fix-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "ctf") {
            continue;
        }
        let sidecar: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("bin.json")).unwrap()).unwrap();
        if sidecar["valid"] != true {
            continue;
        }
        let chunk_size = sidecar["producer_args"]["chunk_size"].as_u64().unwrap();
        let precision = if sidecar["producer_args"]["precision"] == "double" {
            ElemType::F64
        } else {
            ElemType::F32
        };
        let specs =
            parse_streams_file(&std::fs::read_to_string(p.with_extension("streams")).unwrap())
                .unwrap();
        // The text we write names fields by the binary's stream names.
        let by_name: Vec<StreamSpec> = specs
            .iter()
            .map(|s| StreamSpec {
                alias: s.name.clone(),
                ..s.clone()
            })
            .collect();
        let bin1 = out.join("1.bin");
        ctf_to_cbf(
            std::fs::read(&p).unwrap().as_slice(),
            &specs,
            precision,
            Chunking::Ctf2bin(chunk_size),
            0,
            &bin1,
            |_| {},
        )
        .unwrap();
        let mut text1 = Vec::new();
        cbf_to_ctf(&Reader::open(&bin1).unwrap(), &mut text1).unwrap();
        let bin2 = out.join("2.bin");
        ctf_to_cbf(
            text1.as_slice(),
            &by_name,
            precision,
            Chunking::Ctf2bin(chunk_size),
            0,
            &bin2,
            |_| {},
        )
        .unwrap();
        let mut text2 = Vec::new();
        cbf_to_ctf(&Reader::open(&bin2).unwrap(), &mut text2).unwrap();
        assert_eq!(
            std::fs::read(&bin1).unwrap(),
            std::fs::read(&bin2).unwrap(),
            "{}: CBF changed",
            p.display()
        );
        assert_eq!(text1, text2, "{}: CTF changed", p.display());
        n += 1;
    }
    std::fs::remove_dir_all(&out).unwrap();
    assert!(n >= 35, "only {n}");
}

#[test]
fn dense_bytes_keep_every_bit_pattern() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-raw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("raw.bin");
    let streams = [StreamDesc {
        name: "x".into(),
        kind: StreamKind::Dense,
        elem: ElemType::F32,
        dim: 2,
    }];
    // A signalling NaN, a NaN with a payload, -0.0 and 1.5.
    let bits = [0x7f80_0001u32, 0x7fbf_ffff, 0x8000_0000, 0x3fc0_0000];
    let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let mut w = Writer::create(&p, &streams, Chunking::Target(1 << 20)).unwrap();
    let short = w.add_sequence(&[RecordData::DenseBytes {
        samples: 2,
        bytes: &bytes[..12],
    }]);
    assert_eq!(
        short.unwrap_err().kind(),
        dataformats_cntk::ErrorKind::InvalidArgument
    );
    w.add_sequence(&[RecordData::DenseBytes {
        samples: 2,
        bytes: &bytes,
    }])
    .unwrap();
    w.finish().unwrap();
    let r = Reader::open(&p).unwrap();
    let v = r.chunk_view(0).unwrap();
    match v.record(0, 0).unwrap() {
        dataformats_cntk::RecordView::Dense(d) => {
            assert_eq!(d.samples, 2);
            assert_eq!(d.raw(), &bytes[..]);
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `validate` checks the chunks of a large file on every core; whatever
/// chunks are damaged, it reports what a chunk-by-chunk read meets first.
#[test]
fn validate_fails_where_chunk_by_chunk_reads_fail_first() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-wv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let streams = [StreamDesc {
        name: "x".into(),
        kind: StreamKind::Dense,
        elem: ElemType::F32,
        dim: 64,
    }];
    let p = dir.join("big.bin");
    let mut w = Writer::create(&p, &streams, Chunking::Target(256 << 10)).unwrap();
    let vals: Vec<f64> = (0..64 * 4).map(f64::from).collect();
    // 6,000 sequences of 4 samples of 64 floats: 6 MB in about 24 chunks.
    for _ in 0..6000 {
        w.add_sequence(&[RecordData::Dense {
            samples: 4,
            values: &vals,
        }])
        .unwrap();
    }
    w.finish().unwrap();
    let clean = std::fs::read(&p).unwrap();
    let r = Reader::open(&p).unwrap();
    r.validate().unwrap();
    let chunks = r.chunks().to_vec();
    assert!(chunks.len() >= 8, "{} chunks", chunks.len());
    drop(r);
    for damaged in [vec![3], vec![chunks.len() - 1], vec![9, 2], vec![0, 5]] {
        let mut bytes = clean.clone();
        for &k in &damaged {
            // The chunk's first sequence claims more samples than it has.
            let at = chunks[k].offset as usize;
            bytes[at..at + 4].copy_from_slice(&7u32.to_le_bytes());
        }
        let q = dir.join("damaged.bin");
        std::fs::write(&q, &bytes).unwrap();
        let r = Reader::open(&q).unwrap();
        let first = (0..chunks.len())
            .find_map(|i| r.read_chunk(i).err())
            .expect("a damaged chunk fails");
        let got = r.validate().unwrap_err();
        assert_eq!(got.to_string(), first.to_string(), "{damaged:?}");
        let k = *damaged.iter().min().unwrap();
        assert!(
            got.to_string().contains(&format!("chunk {k}")),
            "{damaged:?}: {got}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Chunks large enough to be handed to the writing thread as they are
/// ([`Writer::write_behind`]) give the same file as writing them in place,
/// with either chunking; a writer dropped unfinished leaves nothing behind.
#[test]
fn chunks_written_behind_are_the_same_file() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-cntk-behind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let streams = [
        StreamDesc {
            name: "wide".into(),
            kind: StreamKind::Dense,
            elem: ElemType::F32,
            dim: 64,
        },
        StreamDesc {
            name: "sparse".into(),
            kind: StreamKind::Sparse,
            elem: ElemType::F32,
            dim: 1000,
        },
        StreamDesc {
            name: "narrow".into(),
            kind: StreamKind::Dense,
            elem: ElemType::F64,
            dim: 3,
        },
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    /// One sequence: its samples, then each stream's data.
    type Sequence = (u32, Vec<f64>, Vec<Vec<(u32, f64)>>, Vec<f64>);
    // About 10 MB of records in sequences of 1 to 40 samples.
    let sequences: Vec<Sequence> = (0..2000)
        .map(|_| {
            let n = 1 + (next() % 40) as u32;
            let wide = (0..n * 64).map(|_| next() as f64 / 7.0).collect();
            let sparse = (0..n)
                .map(|_| {
                    let mut e: Vec<(u32, f64)> = (0..next() % 5)
                        .map(|k| ((next() % 200) as u32 * 5 + k as u32, 1.5))
                        .collect();
                    e.sort_by_key(|x| x.0);
                    e.dedup_by_key(|x| x.0);
                    e
                })
                .collect();
            let narrow = (0..n * 3).map(|_| next() as f64).collect();
            (n, wide, sparse, narrow)
        })
        .collect();
    let write = |name: &str, chunking: Chunking, behind: bool, finish: bool| {
        let p = dir.join(name);
        let mut w = Writer::create(&p, &streams, chunking).unwrap();
        if behind {
            w.write_behind().unwrap();
        }
        for (n, wide, sparse, narrow) in &sequences {
            w.add_sequence(&[
                RecordData::Dense {
                    samples: *n,
                    values: wide,
                },
                RecordData::Sparse(sparse),
                RecordData::Dense {
                    samples: *n,
                    values: narrow,
                },
            ])
            .unwrap();
        }
        if finish {
            w.finish().unwrap();
        }
        p
    };
    for chunking in [Chunking::Target(4 << 20), Chunking::Ctf2bin(4 << 20)] {
        let here = std::fs::read(write("here.bin", chunking, false, true)).unwrap();
        let behind_path = write("behind.bin", chunking, true, true);
        let behind = std::fs::read(&behind_path).unwrap();
        assert!(here == behind, "{chunking:?}: the files differ");
        let r = Reader::open(&behind_path).unwrap();
        let total: usize = (0..r.chunks().len())
            .map(|i| r.read_chunk(i).unwrap().sequence_lengths.len())
            .sum();
        assert_eq!(total, sequences.len());
        // Several chunks, and records large enough to be handed over whole.
        assert!(r.chunks().len() >= 2, "{chunking:?}");
        assert!(here.len() > 8 << 20);
    }
    // Dropped unfinished, written behind or not: no target, no temporary file.
    for behind in [false, true] {
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        write("dropped.bin", Chunking::Target(4 << 20), behind, false);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert!(left.is_empty(), "behind {behind}: {left:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
