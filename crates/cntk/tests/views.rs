//! Borrowed chunk views agree with the owned records on every valid vector,
//! and f32 values come out of a memory map without copying.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats_cntk::{ElemType, Reader, Record, RecordView};
use dataformats_core::Source;

/// The shared CBF vectors (valid or not), sorted; `None` without vectors.
fn cbf_vectors() -> Option<Vec<std::path::PathBuf>> {
    let dir = dataformats_core::testing::vectors_dir("cntk")?;
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    paths.sort();
    Some(paths)
}

#[test]
fn views_match_records_and_f32_is_zero_copy_from_a_map() {
    let Some(paths) = cbf_vectors() else {
        return;
    };
    let (mut files, mut f32_zero_copy, mut sparse) = (0, 0, 0);
    for p in paths {
        // SAFETY: the vectors are not modified while the test runs.
        let src = unsafe { Source::map(&p) }.unwrap();
        let Ok(r) = Reader::with_options(src, dataformats_core::ReadOptions::default()) else {
            continue;
        };
        if r.validate().is_err() {
            continue;
        }
        files += 1;
        for c in 0..r.chunks().len() {
            let owned = r.read_chunk(c).unwrap();
            let view = r.chunk_view(c).unwrap();
            assert_eq!(view.sequence_lengths(), &owned.sequence_lengths[..]);
            for (s, desc) in r.streams().iter().enumerate() {
                for q in 0..view.num_sequences() {
                    let rec = view.record(s, q).unwrap();
                    assert!(
                        same_record(&rec.to_record(), &owned.records[s][q]),
                        "{}",
                        p.display()
                    );
                    match (rec, &owned.records[s][q]) {
                        (RecordView::Dense(d), Record::Dense { values, .. }) => {
                            let mut wide = vec![0f64; d.len()];
                            d.read_f64_into(&mut wide).unwrap();
                            assert!(same_bits(&wide, values), "{}", p.display());
                            if desc.elem == ElemType::F32 {
                                // The map is page-aligned and every CBF field is 4-byte aligned.
                                let z = d.as_f32().expect("aligned f32 values");
                                assert_eq!(z.as_ptr().cast::<u8>(), d.raw().as_ptr());
                                let mut buf = vec![0f32; d.len()];
                                d.read_f32_into(&mut buf).unwrap();
                                assert_eq!(
                                    buf.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                                    z.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                                );
                                f32_zero_copy += 1;
                            } else {
                                assert!(d.read_f32_into(&mut [0f32; 0]).is_err());
                            }
                            assert!(d.read_f64_into(&mut vec![0.0; d.len() + 1]).is_err());
                        }
                        (
                            RecordView::Sparse(v),
                            Record::Sparse {
                                indices,
                                sizes,
                                values,
                                ..
                            },
                        ) => {
                            let starts = v.column_starts();
                            assert_eq!(starts.len(), sizes.len() + 1);
                            assert_eq!(*starts.last().unwrap() as usize, v.nnz());
                            let entries = v.samples_entries();
                            for (j, e) in entries.iter().enumerate() {
                                let (a, b) = (starts[j] as usize, starts[j + 1] as usize);
                                assert_eq!(
                                    e.iter().map(|x| x.0).collect::<Vec<_>>(),
                                    indices[a..b]
                                );
                            }
                            let mut vals = vec![0f64; v.nnz()];
                            v.read_values_f64_into(&mut vals).unwrap();
                            assert!(same_bits(&vals, values));
                            if let Some(ix) = v.indices_u32() {
                                assert_eq!(ix, &indices[..]);
                            }
                            sparse += 1;
                        }
                        _ => panic!("{}: view kind differs from record kind", p.display()),
                    }
                }
            }
        }
    }
    assert!(files >= 30, "only {files} valid files");
    assert!(f32_zero_copy > 0 && sparse > 0);
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Equality with NaN payloads compared by bits.
fn same_record(a: &Record, b: &Record) -> bool {
    match (a, b) {
        (
            Record::Dense { samples, values },
            Record::Dense {
                samples: s2,
                values: v2,
            },
        ) => samples == s2 && same_bits(values, v2),
        (
            Record::Sparse {
                samples,
                values,
                indices,
                sizes,
            },
            Record::Sparse {
                samples: s2,
                values: v2,
                indices: i2,
                sizes: z2,
            },
        ) => samples == s2 && same_bits(values, v2) && indices == i2 && sizes == z2,
        _ => false,
    }
}

/// Chunks checked once and viewed again in any order (the same chunk
/// again, then another, then back), from a map and from positioned file
/// reads, are each their own chunk; `sequence_of_sample` finds every
/// sample's sequence as a walk over the lengths does (sequences of length 0
/// included).
#[test]
fn checked_chunks_viewed_in_any_order_are_their_own_and_samples_find_their_sequence() {
    let Some(paths) = cbf_vectors() else {
        return;
    };
    let (mut multi_chunk, mut empty_sequences) = (0, 0);
    for p in paths {
        // SAFETY: the vectors are not modified while the test runs.
        let mapped = unsafe { Source::map(&p) }.unwrap();
        let file = Source::open(&p).unwrap();
        for src in [mapped, file] {
            let Ok(r) = Reader::with_options(src, dataformats_core::ReadOptions::default()) else {
                continue;
            };
            if r.validate().is_err() {
                continue;
            }
            let n = r.chunks().len();
            if n > 1 {
                multi_chunk += 1;
            }
            let fresh: Vec<_> = (0..n).map(|c| r.read_chunk(c).unwrap()).collect();
            let checked: Vec<_> = (0..n).map(|c| r.checked_chunk(c).unwrap()).collect();
            // 0, 0, 1, 1, 0, 2, 2, 1, ...: repeats and jumps back.
            let order = (0..n).flat_map(|c| [c, c, c.saturating_sub(1)]);
            for c in order {
                assert_eq!(checked[c].index(), c);
                let view = r.view(&checked[c]).unwrap();
                let want = &fresh[c];
                assert_eq!(view.sequence_lengths(), &want.sequence_lengths[..]);
                for s in 0..r.streams().len() {
                    for q in 0..view.num_sequences() {
                        let got = view.record(s, q).unwrap().to_record();
                        assert!(same_record(&got, &want.records[s][q]), "{}", p.display());
                    }
                }
                let mut first = 0u64;
                for (q, &len) in want.sequence_lengths.iter().enumerate() {
                    if len == 0 {
                        empty_sequences += 1;
                    }
                    for k in first..first + u64::from(len) {
                        assert_eq!(
                            view.sequence_of_sample(k),
                            Some((q, first)),
                            "{} chunk {c} sample {k}",
                            p.display()
                        );
                    }
                    first += u64::from(len);
                }
                assert_eq!(view.sequence_of_sample(first), None);
                assert_eq!(view.sequence_of_sample(u64::MAX), None);
            }
        }
    }
    assert!(multi_chunk > 0, "no vector of several chunks");
    assert!(empty_sequences > 0, "no vector with a sequence of length 0");
}

/// Validating a mapped file gives each chunk's pages back once the chunk
/// is checked: sixteen chunks of 1 MiB, checked on every core, never have
/// more than a few of them resident at once.
#[cfg(target_os = "linux")]
#[test]
fn validation_keeps_a_few_chunks_resident() {
    use dataformats_cntk::{Chunking, RecordData, StreamDesc, StreamKind, Writer};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chunks.bin");
    let streams = [StreamDesc {
        name: "x".into(),
        kind: StreamKind::Dense,
        elem: ElemType::F32,
        dim: 256,
    }];
    let mut w = Writer::create(&path, &streams, Chunking::Target(1 << 20)).unwrap();
    // Sequences of 16 samples of 256 float32: 16 KiB each, 16 MiB in all.
    let bytes = vec![7u8; 16 * 256 * 4];
    for _ in 0..1024 {
        let rec = RecordData::DenseBytes {
            samples: 16,
            bytes: &bytes,
        };
        w.add_sequence(&[rec]).unwrap();
    }
    w.finish().unwrap();
    // SAFETY: the test owns the file and does not change it while mapped.
    let src = unsafe { Source::map(&path) }.unwrap();
    let r = Reader::with_options(src, dataformats_core::ReadOptions::default()).unwrap();
    assert!(r.chunks().len() >= 12, "{} chunks", r.chunks().len());
    let all = r.source().as_slice().unwrap();
    let at = all.as_ptr() as usize..all.as_ptr() as usize + all.len();
    let mut most = 0;
    let mut reports = 0;
    let mut progress = |_: u64, _: u64| {
        reports += 1;
        most = most.max(dataformats_core::testing::smaps_kib(at.clone(), "Rss").unwrap());
    };
    r.validate_with(&mut progress).unwrap();
    assert_eq!(reports, r.chunks().len());
    assert!(most > 0, "nothing was resident");
    assert!(most <= 6 << 10, "{most} KiB resident at most, of 16 MiB");
}
