//! `dataformats::describe` on every shared vector: valid files are
//! inspected, validated and dumped (their counts agreeing with the typed
//! view), invalid ones are refused by `validate` with the format's own
//! error, never a panic.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use dataformats::core::testing::all_vectors;
use dataformats::describe::{DumpForm, DumpOptions, InspectOptions, dump, inspect, validate};

#[test]
fn every_vector_is_described_validated_and_dumped() {
    let all = all_vectors();
    if all.is_empty() {
        return;
    }
    let (mut valid_seen, mut invalid_seen) = (0, 0);
    for (folder, path, valid) in &all {
        let shown = path.display().to_string();
        if !valid {
            invalid_seen += 1;
            let e = validate(path, &mut |_: u64, _: u64| {})
                .err()
                .unwrap_or_else(|| panic!("{shown}: an invalid vector validated"));
            // The format's own refusal, or no format at all for a file
            // whose magic number is broken.
            let own = e.format().map(|f| f.name()) == Some(*folder);
            assert!(own || e.kind() == "unrecognized", "{shown}: {e}");
            // Inspecting a damaged file may succeed (it shows what it can).
            let _ = inspect(path, &InspectOptions::default());
            continue;
        }
        valid_seen += 1;
        let d = inspect(path, &InspectOptions::default().all_samples(true))
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        assert_eq!(d.format, *folder, "{shown}");
        assert_eq!(d.json["format"], *folder, "{shown}");
        assert!(d.text.starts_with(&shown), "{shown}: {}", d.text);
        let mut done = (0, 0);
        let v = validate(path, &mut |n: u64, total: u64| done = (n, total))
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        assert_eq!(v.json["valid"], true, "{shown}");
        assert!(v.text.starts_with(&format!("{shown}: ok:")), "{shown}");
        assert!(
            done.0 <= done.1 || done.1 == 0,
            "{shown}: progress {done:?}"
        );
        // The typed view's JSON lines: one line per record.
        let records = dataformats::open(path).unwrap().len();
        let mut out = Vec::new();
        dump(
            path,
            &DumpOptions::new(DumpForm::JsonLines).rows(0..20),
            &mut out,
        )
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
        let lines = String::from_utf8(out).unwrap();
        assert_eq!(lines.lines().count() as u64, records.min(20), "{shown}");
        for l in lines.lines() {
            let _: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{shown}: {e}: {l}"));
        }
        // The format's own text and JSON forms.
        for form in [DumpForm::Text, DumpForm::Json] {
            let mut out = Vec::new();
            dump(path, &DumpOptions::new(form).rows(0..5), &mut out)
                .unwrap_or_else(|e| panic!("{shown} {form:?}: {e}"));
            if form == DumpForm::Json && matches!(*folder, "bloscpack" | "blz" | "tbl2" | "cntk") {
                let v: serde_json::Value =
                    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{shown}: {e}"));
                assert!(v.is_array(), "{shown}");
            }
        }
    }
    assert!(
        valid_seen > 150 && invalid_seen > 100,
        "{valid_seen} {invalid_seen}"
    );
}

/// A TBL v2 summary lists the samples only when asked; `.npy` and tar
/// inputs are described too, and a tar cut inside a member is invalid.
#[test]
fn tbl_summary_npy_and_tar() {
    let Some(dir) = dataformats::core::testing::vectors_dir("tbl2") else {
        return;
    };
    let tbl = dir.join("mixed_none.tbl");
    let short = inspect(&tbl, &InspectOptions::default()).unwrap();
    assert!(short.json.get("samples").is_none());
    assert!(short.text.contains("(--all lists every sample)"));
    let all = inspect(&tbl, &InspectOptions::default().all_samples(true)).unwrap();
    let n = dataformats::tbl2::Reader::open(&tbl).unwrap().len();
    assert_eq!(all.json["samples"].as_array().unwrap().len(), n);
    assert_eq!(
        all.text.lines().count(),
        short.text.lines().count() - 1 + 2 + n
    );

    let tar = inspect(&dir.join("mixed.tar"), &InspectOptions::default()).unwrap();
    assert_eq!(tar.format, "tar");
    let samples: u64 = tar.json["samples"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(samples, n as u64);
    let cut = validate(&dir.join("tar_truncated_lz4.tar"), &mut |_: u64, _: u64| {});
    let e = cut.err().unwrap();
    assert!(e.to_string().contains("ends inside member"), "{e}");
    assert_eq!(e.kind(), "tar");

    let Some(blp) = dataformats::core::testing::vectors_dir("bloscpack") else {
        return;
    };
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-describe-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let npy = work.join("b.npy");
    dataformats::convert::convert(
        &blp.join("bool_exact.blp"),
        &npy,
        &dataformats::convert::ConvertOptions::default(),
    )
    .unwrap();
    let d = validate(&npy, &mut |_: u64, _: u64| {}).unwrap();
    assert_eq!(d.format, "npy");
    assert_eq!(d.json["dtype"], "|b1");
    let mut out = Vec::new();
    dump(&npy, &DumpOptions::new(DumpForm::Text).rows(0..3), &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3);
    let bytes = std::fs::read(&npy).unwrap();
    std::fs::write(&npy, &bytes[..bytes.len() - 1]).unwrap();
    assert!(validate(&npy, &mut |_: u64, _: u64| {}).is_err());
    let _ = std::fs::remove_dir_all(&work);
}

/// A file no format claims is unrecognized; CTF text is unsupported with
/// the way to read it.
#[test]
fn unrecognized_and_ctf() {
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("df-describe-u-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let txt = work.join("notes.txt");
    std::fs::write(&txt, b"hello").unwrap();
    let e = inspect(&txt, &InspectOptions::default()).unwrap_err();
    assert_eq!(e.kind(), "unrecognized");
    let ctf = work.join("x.ctf");
    std::fs::write(&ctf, b"0 |a 1 2\n").unwrap();
    let e = validate(&ctf, &mut |_: u64, _: u64| {}).unwrap_err();
    assert!(
        e.is_unsupported() && e.to_string().contains("--stream"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// An IDV dump of many block groups renders them on every core: it is the
/// header followed by the dumps of each group's rows alone (each of those
/// one group, rendered on the calling thread), in CSV and JSON lines.
#[cfg(feature = "idv")]
#[test]
fn idv_dumps_of_many_blocks_are_the_groups_dumped_one_by_one() {
    use dataformats::idv::{
        ColumnSpec, ColumnType, Compression, ItemType, TextValues, Values, Writer, WriterOptions,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.idv");
    let rows = 10_000usize;
    let rpb = 512u64;
    let mut w = Writer::create(
        &path,
        vec![
            ColumnSpec::new("x", ColumnType::Scalar(ItemType::F64)),
            ColumnSpec::new("t", ColumnType::Scalar(ItemType::Text)),
        ],
        WriterOptions {
            compression: Compression::Deflate,
            rows_per_block: Some(rpb as u32),
            level: 1,
        },
    )
    .unwrap();
    let x: Vec<f64> = (0..rows).map(|i| i as f64 / 7.0).collect();
    let t: Vec<String> = (0..rows).map(|i| format!("row {i}, \"quoted\"")).collect();
    w.write_batch(&[
        Values::F64(x),
        Values::Text(t.iter().collect::<TextValues>()),
    ])
    .unwrap();
    w.finish().unwrap();
    for form in [DumpForm::Csv, DumpForm::JsonLines] {
        let mut whole = Vec::new();
        dump(&path, &DumpOptions::new(form), &mut whole).unwrap();
        let mut parts = Vec::new();
        let mut start = 0u64;
        while start < rows as u64 {
            let stop = (start + rpb).min(rows as u64);
            let mut one = Vec::new();
            dump(&path, &DumpOptions::new(form).rows(start..stop), &mut one).unwrap();
            let text = String::from_utf8(one).unwrap();
            // Every CSV dump starts with the header line; keep it once.
            let body = match form {
                DumpForm::Csv if start > 0 => text.split_once('\n').unwrap().1.to_string(),
                _ => text,
            };
            parts.extend_from_slice(body.as_bytes());
            start = stop;
        }
        assert_eq!(
            String::from_utf8(whole).unwrap(),
            String::from_utf8(parts).unwrap(),
            "{form:?}"
        );
    }
}
