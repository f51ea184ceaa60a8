//! Conversions as a library: every valid shared vector through MLDF (and
//! the typed exports) gives back its schema and values.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use arrow_array::RecordBatch;
use dataformats::convert::{ChangeKind, ConvertOptions, Target, convert, open_input};

/// The first field or column where two batches differ.
fn first_difference(a: &RecordBatch, b: &RecordBatch) -> String {
    let (sa, sb) = (a.schema(), b.schema());
    for (k, (fa, fb)) in sa.fields().iter().zip(sb.fields()).enumerate() {
        if fa != fb {
            return format!("field {k}: {fa:?} != {fb:?}");
        }
        if a.column(k) != b.column(k) {
            return format!(
                "column {:?}: {:?} != {:?}",
                fa.name(),
                a.column(k),
                b.column(k)
            );
        }
    }
    format!(
        "{} vs {} rows, {} vs {} fields",
        a.num_rows(),
        b.num_rows(),
        sa.fields().len(),
        sb.fields().len()
    )
}

/// Removes what a vector's conversions wrote (files and directories), so
/// a test holds at most one vector's outputs on disk.
fn clear(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
}

/// The typed view of `path`, as a conversion reads it (IDV text that is
/// not Unicode shown with U+FFFD).
fn read_all(path: &std::path::Path) -> RecordBatch {
    let lossy = ConvertOptions {
        lossy: true,
        ..Default::default()
    };
    let mut inp = open_input(path, &lossy).unwrap();
    let schema = inp.stream.schema();
    let mut batches = Vec::new();
    while let Some(b) = inp.stream.next_batch() {
        batches.push(b.unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    }
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

/// `convert` with the default options, except for the one vector whose
/// IDV text holds halves of a surrogate pair: refused without `lossy`,
/// then converted with the replacement reported.
fn convert_vector(
    p: &std::path::Path,
    out: &std::path::Path,
    opts: &ConvertOptions,
) -> dataformats::convert::Report {
    match convert(p, out, opts) {
        Ok(r) => r,
        Err(e) if e.to_string().contains("surrogate pair") => {
            assert_eq!(e.kind(), "lossy", "{e}");
            assert!(!out.exists(), "{}", out.display());
            let lossy = ConvertOptions {
                lossy: true,
                ..opts.clone()
            };
            let r = convert(p, out, &lossy).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(
                r.changes.iter().any(|c| c.kind == ChangeKind::Replaced),
                "{:?}",
                r.changes
            );
            r
        }
        Err(e) => panic!("{} -> {}: {e}", p.display(), out.display()),
    }
}

#[test]
fn every_vector_through_mldf_keeps_schema_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let original = read_all(&p);
        let out = dir.path().join(format!("{seen}.mldf"));
        let r = convert_vector(&p, &out, &ConvertOptions::default());
        assert_eq!(r.records, original.num_rows() as u64, "{}", p.display());
        if original.num_rows() == 0 && !original.schema().fields().is_empty() {
            // A file without records has no record to carry its schema in:
            // converted anyway (no value changed), and reported.
            let reported = r
                .changes
                .iter()
                .any(|c| c.kind == ChangeKind::SchemaNotCarried);
            let needed = read_all(&out).schema() != original.schema();
            assert_eq!(reported, needed, "{}: {:?}", p.display(), r.changes);
            clear(dir.path());
            seen += 1;
            continue;
        }
        let back = read_all(&out);
        assert_eq!(back.schema(), original.schema(), "{format} {}", p.display());
        assert_eq!(back, original, "{format} {}", p.display());
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} vectors");
    }
}

#[test]
fn every_vector_through_parquet_and_arrow_keeps_schema_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        if !valid {
            continue;
        }
        let original = read_all(&p);
        for ext in ["parquet", "arrow", "arrows"] {
            let out = dir.path().join(format!("{seen}.{ext}"));
            let r = convert_vector(&p, &out, &ConvertOptions::default());
            assert_eq!(r.records, original.num_rows() as u64);
            let back = read_all(&out);
            assert_eq!(
                back.schema(),
                original.schema(),
                "{format} {} via {ext}",
                p.display()
            );
            assert_eq!(back, original, "{format} {} via {ext}", p.display());
        }
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 150, "only {seen} vectors");
    }
}

/// The target that writes a vector folder's format back.
fn own_target(format: &str) -> Option<Target> {
    Some(match format {
        "mldf" => Target::Mldf,
        "tbl2" => Target::Tbl2,
        "cntk" => Target::Cntk,
        "idv" => Target::Idv,
        "bloscpack" => Target::Bloscpack,
        "blz" => Target::Blz,
        _ => return None,
    })
}

#[test]
fn every_vector_back_to_its_format_through_mldf_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for (format, p, valid) in dataformats::core::testing::all_vectors() {
        let Some(target) = own_target(format).filter(|_| valid) else {
            continue;
        };
        let original = read_all(&p);
        for hub in ["mldf", "parquet"] {
            let mid = dir.path().join(format!("{seen}.{hub}"));
            // A file without records carries no schema through MLDF (the
            // first test checks that this is reported).
            if original.num_rows() == 0 && hub == "mldf" {
                continue;
            }
            convert_vector(&p, &mid, &ConvertOptions::default());
            let out = dir.path().join(format!("{seen}.{hub}.back"));
            let opts = ConvertOptions {
                to: Some(target),
                ..Default::default()
            };
            convert(&mid, &out, &opts)
                .unwrap_or_else(|e| panic!("{} -> {hub} -> {format}: {e}", p.display()));
            let back = read_all(&out);
            assert!(
                back == original,
                "{} via {hub}: {}",
                p.display(),
                first_difference(&back, &original)
            );
        }
        clear(dir.path());
        seen += 1;
    }
    if std::env::var_os("CI").is_some() {
        assert!(seen > 20, "only {seen} vectors");
    }
}

#[test]
fn exports_name_their_target() {
    assert_eq!(
        Target::from_path("x.parquet".as_ref()),
        Some(Target::Parquet)
    );
    assert_eq!(Target::from_path("x.MLDF".as_ref()), Some(Target::Mldf));
    assert_eq!(Target::from_path("x.unknown".as_ref()), None);
}

/// Writes `batch` as an Arrow IPC file (a table input of `convert`).
fn table(dir: &std::path::Path, name: &str, batch: &RecordBatch) -> std::path::PathBuf {
    let p = dir.join(name);
    let f = std::fs::File::create(&p).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
    p
}

/// Converting `input` to `output` is refused without lossy (naming
/// `field`), and with lossy reports one change of `kind` to `field`, first
/// in `first`, `count` times.
fn refused_then_reported(
    input: &std::path::Path,
    output: &std::path::Path,
    kind: ChangeKind,
    field: &str,
    first: u64,
    count: u64,
) {
    let e = convert(input, output, &ConvertOptions::default()).unwrap_err();
    assert_eq!(e.kind(), "lossy", "{e}");
    assert!(e.to_string().contains(field), "{e}");
    assert!(!output.exists(), "{} appeared", output.display());
    let lossy = ConvertOptions {
        lossy: true,
        ..Default::default()
    };
    let r = convert(input, output, &lossy).unwrap();
    let c = r
        .changes
        .iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} in {:?}", r.changes));
    assert_eq!(
        (c.field.as_str(), c.first_record, c.count),
        (field, first, count)
    );
    assert!(output.exists());
}

/// IDV text holding half of a UTF-16 surrogate pair: the vector's sidecar
/// says row 3 of column `tx` ends with a lone high surrogate and row 4
/// starts with a lone low one. Refused by default, two values replaced
/// (and reported) with lossy; a plain read shows U+FFFD.
#[test]
fn idv_text_that_is_not_unicode_is_refused_or_reported() {
    let Some(idv) = dataformats::core::testing::vectors_dir("idv") else {
        return;
    };
    let p = idv.join("edge/text_boundary_splits_surrogate_pair.idv");
    let dir = tempfile::tempdir().unwrap();
    for ext in ["mldf", "parquet", "jsonl"] {
        let out = dir.path().join(format!("x.{ext}"));
        refused_then_reported(&p, &out, ChangeKind::Replaced, "tx", 3, 2);
    }
    let d = dataformats::open(&p).unwrap();
    let tx = d.read_batch(Some(&["tx".to_string()]), 3..5).unwrap();
    let tx = arrow_array::cast::AsArray::as_string::<i32>(tx.column(0));
    assert!(tx.value(0).ends_with('\u{FFFD}'), "{:?}", tx.value(0));
    assert!(tx.value(1).starts_with('\u{FFFD}'), "{:?}", tx.value(1));
}

#[test]
fn every_kind_of_change_is_refused_or_reported() {
    use arrow_array::cast::AsArray;
    use arrow_array::{BinaryArray, Float32Array, Int32Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // dropped: TBL v2 has no place for an extra column.
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("data", DataType::Binary, false),
            Field::new("extra", DataType::Int64, false),
        ])),
        vec![
            Arc::new(BinaryArray::from_iter_values([b"ab".as_slice(), b"c"])),
            Arc::new(Int64Array::from(vec![1, 2])),
        ],
    )
    .unwrap();
    let t = table(dir.path(), "extra.arrow", &b);
    refused_then_reported(
        &t,
        &dir.path().join("x.tbl"),
        ChangeKind::Dropped,
        "extra",
        0,
        2,
    );
    // null_filled: IDV and numpy have no missing numbers.
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true)])),
        vec![Arc::new(Int32Array::from(vec![
            Some(1),
            None,
            Some(3),
            None,
        ]))],
    )
    .unwrap();
    let t = table(dir.path(), "nulls.arrow", &b);
    refused_then_reported(
        &t,
        &dir.path().join("x.idv"),
        ChangeKind::NullFilled,
        "x",
        1,
        2,
    );
    refused_then_reported(
        &t,
        &dir.path().join("x.blp"),
        ChangeKind::NullFilled,
        "x",
        1,
        2,
    );
    refused_then_reported(
        &t,
        &dir.path().join("x.bcolz"),
        ChangeKind::NullFilled,
        "x",
        1,
        2,
    );
    // rounded: a float32 field that was bfloat16 in MLDF, holding a value
    // bfloat16 cannot.
    let f = Field::new("h", DataType::Float32, false).with_metadata(
        [(
            "dataformats.type".to_string(),
            "NDARRAY<bfloat16>[]".to_string(),
        )]
        .into(),
    );
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![f])),
        vec![Arc::new(Float32Array::from(vec![1.0, 1.1, 2.0]))],
    )
    .unwrap();
    let t = table(dir.path(), "bf16.arrow", &b);
    refused_then_reported(
        &t,
        &dir.path().join("x.mldf"),
        ChangeKind::Rounded,
        "h",
        1,
        1,
    );
    // retyped: integers into CNTK become a float64 stream of dimension 1;
    // the one beyond 2^53 is also counted as rounded.
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from(vec![1, (1 << 53) + 1, -3]))],
    )
    .unwrap();
    let t = table(dir.path(), "ints.arrow", &b);
    let bin = dir.path().join("ints.bin");
    refused_then_reported(&t, &bin, ChangeKind::Retyped, "n", 0, 3);
    let r = convert(
        &t,
        &bin,
        &ConvertOptions {
            lossy: true,
            ..Default::default()
        },
    )
    .unwrap();
    let rounded = r.changes.iter().find(|c| c.kind == ChangeKind::Rounded);
    assert_eq!(
        rounded.map(|c| (c.field.as_str(), c.first_record, c.count)),
        Some(("n", 1, 1)),
        "{:?}",
        r.changes
    );
    let back = read_all(&bin);
    let values = back
        .column_by_name("n")
        .unwrap()
        .as_fixed_size_list()
        .values()
        .as_primitive::<arrow_array::types::Float64Type>()
        .values()
        .to_vec();
    assert_eq!(values, vec![1.0, 9007199254740992.0, -3.0]);
    // A column dropped from a file without records lost nothing: not
    // reported.
    let none = RecordBatch::new_empty(b.schema());
    let t = table(dir.path(), "none.arrow", &none);
    let r = convert(&t, &dir.path().join("none.tbl"), &ConvertOptions::default()).unwrap();
    assert_eq!((r.records, r.changes.len()), (0, 0), "{:?}", r.changes);
    // schema_not_carried: no record to carry the schema in; reported only.
    drop(b);
    let f = Field::new("k", DataType::UInt32, true).with_metadata(
        [(
            "dataformats.type".to_string(),
            "Key<UInt32, 0-9>".to_string(),
        )]
        .into(),
    );
    let empty = RecordBatch::try_new(
        Arc::new(Schema::new(vec![f])),
        vec![Arc::new(arrow_array::UInt32Array::from(Vec::<u32>::new()))],
    )
    .unwrap();
    let t = table(dir.path(), "empty.arrow", &empty);
    let r = convert(&t, &dir.path().join("e.mldf"), &ConvertOptions::default()).unwrap();
    assert_eq!(r.records, 0);
    assert!(
        r.changes
            .iter()
            .any(|c| c.kind == ChangeKind::SchemaNotCarried),
        "{:?}",
        r.changes
    );
}

#[test]
fn json_lines_are_an_input_with_inferred_types() {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
    use arrow_schema::DataType;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.jsonl");
    std::fs::write(
        &src,
        concat!(
            "{\"i\": 1, \"u\": 18446744073709551615, \"x\": 0.1, \"s\": \"a\", \"v\": [1, 2], \"o\": {\"k\": true}}\n",
            "\n",
            "{\"i\": -2, \"u\": 0, \"x\": \"NaN\", \"s\": null, \"v\": [], \"o\": {\"k\": false}}\n",
            "{\"i\": null, \"x\": 5e-324}\n",
        ),
    )
    .unwrap();
    let out = dir.path().join("out.arrow");
    let r = convert(&src, &out, &ConvertOptions::default()).unwrap();
    assert_eq!((r.records, r.from.as_str()), (3, "jsonl"));
    let b = read_all(&out);
    let s = b.schema();
    let types: Vec<&DataType> = s.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(
        types[..4],
        [
            &DataType::Int64,
            &DataType::UInt64,
            &DataType::Float64,
            &DataType::Utf8
        ]
    );
    assert!(matches!(types[4], DataType::List(_)) && matches!(types[5], DataType::Struct(_)));
    let i = b.column(0).as_primitive::<Int64Type>();
    assert_eq!((i.value(1), i.is_null(2)), (-2, true));
    assert_eq!(b.column(1).as_primitive::<UInt64Type>().value(0), u64::MAX);
    let x = b.column(2).as_primitive::<Float64Type>();
    assert_eq!(x.value(0).to_bits(), 0.1f64.to_bits());
    assert!(x.value(1).is_nan());
    assert_eq!(x.value(2).to_bits(), 1);
    // A line that is not JSON is refused with its number.
    std::fs::write(&src, "{\"i\": 1}\n{\"i\": \n").unwrap();
    let e = convert(
        &src,
        &dir.path().join("bad.arrow"),
        &ConvertOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    // An integer no 64-bit type holds is refused with its line, in the
    // lines types are inferred from and after them.
    for (text, line) in [
        ("{\"a\": 1}\n{\"a\": 18446744073709551616}\n", "line 2"),
        ("{\"a\": [-9223372036854775809]}\n", "line 1"),
    ] {
        std::fs::write(&src, text).unwrap();
        let out = dir.path().join("wide.mldf");
        let e = convert(&src, &out, &ConvertOptions::default()).unwrap_err();
        assert!(
            e.to_string().contains(line) && e.to_string().contains("64 bits"),
            "{e}"
        );
        assert!(!out.exists());
    }
}

/// MLDF's images become TBL v2 samples with their format and dimensions,
/// and a text `metadata` field becomes a JSON metadata block.
#[test]
fn mldf_images_and_text_metadata_become_tbl2_samples() {
    let Some(dir) = dataformats::core::testing::vectors_dir("mldf") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    for (name, format) in [
        ("image_jpeg", "jpeg"),
        ("image_png", "png"),
        ("image_raw", "raw_u8"),
    ] {
        let src = dir.join(format!("{name}.mldf"));
        let tbl = out.path().join(format!("{name}.tbl"));
        let lossy = ConvertOptions {
            lossy: true,
            ..Default::default()
        };
        convert(&src, &tbl, &lossy).unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = dataformats::mldf::Reader::open(&src).unwrap();
        let j = (0..m.fields().len())
            .find(|&j| m.fields()[j].ty.name().starts_with("IMAGE"))
            .unwrap();
        let t = dataformats::tbl2::Reader::open(&tbl).unwrap();
        assert_eq!(t.len() as u64, m.len(), "{name}");
        for i in 0..t.len() {
            let e = t.entry(i).unwrap();
            assert_eq!(e.format.name(), format, "{name} {i}");
            match m.value(i as u64, j).unwrap() {
                dataformats::mldf::Value::Image {
                    height,
                    width,
                    data,
                    ..
                } => {
                    assert_eq!((e.width, e.height), (width, height), "{name} {i}");
                    assert_eq!(t.read_sample(i).unwrap(), data.into_owned(), "{name} {i}");
                }
                v => panic!("{name} {i}: {v:?}"),
            }
        }
    }
    // Text metadata with its type named in `metadata_type`.
    use arrow_array::{BinaryArray, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let b = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("data", DataType::Binary, false),
            Field::new("metadata", DataType::Utf8, true),
            Field::new("metadata_type", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(BinaryArray::from_iter_values([b"a".as_slice(), b"b", b"c"])),
            Arc::new(StringArray::from(vec![Some("{\"k\":1}"), None, Some("x")])),
            Arc::new(StringArray::from(vec![None, None, Some("msgpack")])),
        ],
    )
    .unwrap();
    let t = table(out.path(), "meta.arrow", &b);
    let tbl = out.path().join("meta.tbl");
    convert(&t, &tbl, &ConvertOptions::default()).unwrap();
    let r = dataformats::tbl2::Reader::open(&tbl).unwrap();
    let blocks: Vec<_> = (0..3)
        .map(|i| {
            r.read_metadata(i)
                .unwrap()
                .map(|(kind, data)| (kind.name(), data.to_vec()))
        })
        .collect();
    assert_eq!(
        blocks,
        vec![
            Some(("json".to_string(), b"{\"k\":1}".to_vec())),
            None,
            Some(("msgpack".to_string(), b"x".to_vec())),
        ]
    );
}

/// The pairs that do not go through typed batches are library calls too:
/// CTF ⇄ CBF, tar ⇄ TBL v2, npy ⇄ Bloscpack, BLZ → npy, CSV → IDV with
/// TextLoader columns, JSON lines → MLDF with an MLDF schema.
#[test]
fn direct_paths_are_library_calls() {
    use dataformats::cntk::ctf::parse_stream_arg;
    use dataformats::convert::Target;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // CTF -> CBF needs its streams; CBF -> CTF -> CBF gives the same file.
    std::fs::write(
        p("a.ctf"),
        "0 |x 1 2 |y 0:1.5 4:-2\n0 |x 3 4\n1 |x 5 6 |y 2:7\n",
    )
    .unwrap();
    let e = convert(&p("a.ctf"), &p("a.bin"), &ConvertOptions::default()).unwrap_err();
    assert!(e.to_string().contains("stream"), "{e}");
    let mut opts = ConvertOptions::default();
    opts.ctf.streams = vec![
        parse_stream_arg("x:dense:2").unwrap(),
        parse_stream_arg("y:sparse:5").unwrap(),
    ];
    let r = convert(&p("a.ctf"), &p("a.bin"), &opts).unwrap();
    assert_eq!(
        (r.from.as_str(), r.to.as_str(), r.records),
        ("ctf", "cntk", 3)
    );
    let back = convert(&p("a.bin"), &p("b.ctf"), &ConvertOptions::default()).unwrap();
    assert_eq!(back.to, Target::Ctf.name());
    convert(&p("b.ctf"), &p("b.bin"), &opts).unwrap();
    assert_eq!(
        std::fs::read(p("a.bin")).unwrap(),
        std::fs::read(p("b.bin")).unwrap()
    );
    let wrong = convert(&p("a.ctf"), &p("a.mldf"), &opts).unwrap_err();
    assert_eq!(wrong.kind(), "unsupported", "{wrong}");
    if let Some(tbl) = dataformats::core::testing::vectors_dir("tbl2") {
        // tar -> TBL v2 as TurboLoader's converter, and back.
        let mut o = ConvertOptions::default();
        o.tbl2.compress = false;
        let r = convert(&tbl.join("mixed.tar"), &p("m.tbl"), &o).unwrap();
        let t = dataformats::tbl2::Reader::open(p("m.tbl")).unwrap();
        assert_eq!(r.records, t.len() as u64);
        assert!(r.records > 0);
        let r = convert(&p("m.tbl"), &p("m.tar"), &ConvertOptions::default()).unwrap();
        assert_eq!(r.records, t.len() as u64);
        let again = convert(&p("m.tar"), &p("m2.tbl"), &o).unwrap();
        assert_eq!(again.records, r.records);
        let t2 = dataformats::tbl2::Reader::open(p("m2.tbl")).unwrap();
        for i in 0..t.len() {
            assert_eq!(t.read_sample(i).unwrap(), t2.read_sample(i).unwrap());
        }
        // A tar cut inside a member: refused (nothing written), or with
        // lossy the members before it and a warning.
        let cut = tbl.join("tar_truncated_lz4.tar");
        let e = convert(&cut, &p("cut.tbl"), &ConvertOptions::default()).unwrap_err();
        assert!(e.to_string().contains("ends inside member"), "{e}");
        assert!(!p("cut.tbl").exists());
        let lossy = ConvertOptions {
            lossy: true,
            ..Default::default()
        };
        let r = convert(&cut, &p("cut.tbl"), &lossy).unwrap();
        assert!(
            r.warnings.iter().any(|w| w.contains("ends inside member")),
            "{:?}",
            r.warnings
        );
        assert!(p("cut.tbl").exists());
    }
    if let Some(blp) = dataformats::core::testing::vectors_dir("bloscpack") {
        // numpy Bloscpack -> .npy -> Bloscpack: the same typed view.
        let src = blp.join("bool_exact.blp");
        convert(&src, &p("x.npy"), &ConvertOptions::default()).unwrap();
        convert(&p("x.npy"), &p("x.blp"), &ConvertOptions::default()).unwrap();
        assert_eq!(read_all(&src), read_all(&p("x.blp")));
        // Re-packed with other settings: the same payload.
        let mut o = ConvertOptions::default();
        o.bloscpack.write = o.bloscpack.write.clevel(1);
        convert(&src, &p("y.blp"), &o).unwrap();
        assert_eq!(read_all(&src), read_all(&p("y.blp")));
        // Any other file: its bytes as the payload.
        std::fs::write(p("raw.dat"), b"hello, payload").unwrap();
        let r = convert(&p("raw.dat"), &p("raw.blp"), &ConvertOptions::default()).unwrap();
        assert_eq!(r.records, 14);
        let rd = dataformats::bloscpack::Reader::open(p("raw.blp")).unwrap();
        assert_eq!(rd.read_chunk(0).unwrap(), b"hello, payload");
        // .npy has no place for a CNTK file.
        let e = convert(&p("a.bin"), &p("z.npy"), &ConvertOptions::default()).unwrap_err();
        assert_eq!(e.kind(), "unsupported", "{e}");
    }
    // CSV -> IDV with TextLoader columns: a byte order mark, a quoted field
    // with a newline and a doubled quote, a key, a vector.
    use dataformats::convert::text::{TextColumn, TextLoader};
    std::fs::write(
        p("t.csv"),
        "\u{feff}k,a,b,name\n1,0.5,1.5,\"two\nlines \"\"q\"\"\"\n\n0,2,3,plain\n",
    )
    .unwrap();
    let mut o = ConvertOptions::default();
    o.idv.text = Some(TextLoader {
        columns: TextColumn::parse_all(&[
            "K:U4[0-1]:0".to_string(),
            "V:R4:1-2".to_string(),
            "Name:TX:3".to_string(),
        ])
        .unwrap(),
        header: true,
        separator: b',',
    });
    let r = convert(&p("t.csv"), &p("t.idv"), &o).unwrap();
    assert_eq!(r.records, 2);
    let b = read_all(&p("t.idv"));
    use arrow_array::cast::AsArray;
    let names = b.column_by_name("Name").unwrap().as_string::<i32>();
    assert_eq!(names.value(0), "two\nlines \"q\"");
    assert_eq!(names.value(1), "plain");
    // A bad cell names its line.
    std::fs::write(p("bad.csv"), "k,a,b,name\n1,0.5,1.5,x\n7,1,2,y\n").unwrap();
    let e = convert(&p("bad.csv"), &p("bad.idv"), &o).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
    assert!(!p("bad.idv").exists());
    // JSON lines -> MLDF with an MLDF schema: bfloat16 rounded to nearest
    // even, an integer beyond 64 bits in a JSON field refused.
    use dataformats::convert::mldf_json::JsonSchema;
    let schema = JsonSchema::from_json(
        r#"{"fields": [{"name": "h", "type": "NDARRAY", "dtype": "bfloat16", "shape": [1]},
                       {"name": "j", "type": "JSON", "nullable": true}]}"#,
    )
    .unwrap();
    let mut o = ConvertOptions::default();
    o.mldf.json_schema = Some(schema);
    std::fs::write(p("in.jsonl"), "{\"h\": [1.01171875], \"j\": {\"a\": 1}}\n").unwrap();
    let r = convert(&p("in.jsonl"), &p("out.mldf"), &o).unwrap();
    assert_eq!(r.records, 1);
    let m = dataformats::mldf::Reader::open(p("out.mldf")).unwrap();
    match m.value(0, 0).unwrap() {
        dataformats::mldf::Value::NdArray(data) => {
            // 1.01171875 = 1 + 2^-7 + 2^-9 lies above the midpoint of
            // 1 + 2^-7 and 1 + 2^-6: nearest is 1 + 2^-6 (truncation gives
            // 1 + 2^-7).
            assert_eq!(&data[..], &half::bf16::from_f32(1.015625).to_le_bytes())
        }
        v => panic!("{v:?}"),
    }
    std::fs::write(
        p("in.jsonl"),
        "{\"h\": [1], \"j\": [18446744073709551616]}\n",
    )
    .unwrap();
    let e = convert(&p("in.jsonl"), &p("out2.mldf"), &o).unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");
    assert!(e.to_string().contains("18446744073709551616"), "{e}");
    assert!(!p("out2.mldf").exists());
}

/// JSON lines -> MLDF parses blocks of lines on every core (inputs from
/// 4 MB): every row lands in order, with CRLF ends and blank lines, and an
/// error names the line a one-line-at-a-time read would stop at.
#[test]
fn large_json_lines_to_mldf_keep_order_and_line_numbers() {
    use dataformats::convert::mldf_json::JsonSchema;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let schema = JsonSchema::from_json(
        r#"{"fields": [{"name": "i", "type": "INT"}, {"name": "x", "type": "FLOAT"},
                       {"name": "t", "type": "TEXT_RAW"}]}"#,
    )
    .unwrap();
    let mut o = ConvertOptions::default();
    o.mldf.json_schema = Some(schema);
    let rows = 120_000usize;
    let mut text = String::new();
    for i in 0..rows {
        text.push_str(&format!(
            "{{\"i\": {i}, \"x\": {}.25, \"t\": \"row {i} {}\"}}",
            i * 3,
            "pad ".repeat(i % 7)
        ));
        text.push_str(if i % 5 == 0 { "\r\n" } else { "\n" });
        if i % 1000 == 999 {
            text.push_str("   \n");
        }
    }
    assert!(text.len() > 5 << 20, "{}", text.len());
    std::fs::write(p("big.jsonl"), &text).unwrap();
    let r = convert(&p("big.jsonl"), &p("big.mldf"), &o).unwrap();
    assert_eq!(r.records, rows as u64);
    let m = dataformats::mldf::Reader::open(p("big.mldf")).unwrap();
    for i in [0, 1, 999, 1000, 65_537, rows - 1] {
        match m.value(i as u64, 0).unwrap() {
            dataformats::mldf::Value::Int(v) => assert_eq!(v, i as i64),
            v => panic!("{v:?}"),
        }
    }
    // Break one line far into the file: the error names it (blank lines
    // count), and no output appears.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bad = 100_777;
    let mut broken: String = lines[..bad].concat();
    broken.push_str("{\"i\": 1, \"x\": oops}\n");
    broken.push_str(&lines[bad + 1..].concat());
    std::fs::write(p("bad.jsonl"), &broken).unwrap();
    let e = convert(&p("bad.jsonl"), &p("bad.mldf"), &o).unwrap_err();
    assert!(e.to_string().contains(&format!("line {}:", bad + 1)), "{e}");
    assert!(!p("bad.mldf").exists());
}

/// JSON lines -> compressed, checksummed MLDF: the samples are encoded
/// (checked, compressed) on the parsing threads, and the file is the one
/// a single thread writes, byte for byte; a value the writer refuses far
/// into the file names its line and its sample.
#[test]
fn json_lines_to_compressed_mldf_are_encoded_on_every_core() {
    use dataformats::convert::mldf_json::JsonSchema;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let schema = JsonSchema::from_json(
        r#"{"fields": [{"name": "i", "type": "INT"},
                       {"name": "x", "type": "NDARRAY", "dtype": "float32", "shape": [8]},
                       {"name": "j", "type": "JSON", "nullable": true},
                       {"name": "t", "type": "TEXT_RAW"}],
            "compressed": true, "checksummed": true, "page_packing": true}"#,
    )
    .unwrap();
    let mut text = String::new();
    let rows = 60_000usize;
    for i in 0..rows {
        let x: Vec<String> = (0..8)
            .map(|k| format!("{}.5", (i * 7 + k) % 1000))
            .collect();
        text.push_str(&format!(
            "{{\"i\": {i}, \"x\": [{}], \"j\": {{\"k\": {}}}, \"t\": \"{}\"}}\n",
            x.join(","),
            i % 13,
            "word ".repeat(i % 9)
        ));
        if i % 777 == 0 {
            text.push('\n');
        }
    }
    assert!(text.len() > 5 << 20, "{}", text.len());
    std::fs::write(p("in.jsonl"), &text).unwrap();
    let mut files = Vec::new();
    for threads in [1, 3, 0] {
        let mut o = ConvertOptions::default();
        o.mldf.json_schema = Some(schema.clone());
        o.threads = threads;
        let out = p(&format!("out{threads}.mldf"));
        assert_eq!(
            convert(&p("in.jsonl"), &out, &o).unwrap().records,
            rows as u64
        );
        files.push(std::fs::read(&out).unwrap());
    }
    assert!(files[0] == files[1] && files[0] == files[2]);
    let m = dataformats::mldf::Reader::open(p("out0.mldf")).unwrap();
    m.validate().unwrap();
    match m.value(54_321, 3).unwrap() {
        dataformats::mldf::Value::Text(t) => assert_eq!(t, "word ".repeat(54_321 % 9)),
        v => panic!("{v:?}"),
    }
    // Three bytes for a float32[8] (the writer's check, not the parser's)
    // on line 50,001, some of the lines before it blank.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bad = 50_000;
    let mut broken: String = lines[..bad].concat();
    broken.push_str("{\"i\": 1, \"x\": {\"base64\": \"AAAA\"}, \"j\": null, \"t\": \"\"}\n");
    broken.push_str(&lines[bad + 1..].concat());
    std::fs::write(p("bad.jsonl"), &broken).unwrap();
    let blank = lines[..bad].iter().filter(|l| l.trim().is_empty()).count();
    let mut o = ConvertOptions::default();
    o.mldf.json_schema = Some(schema);
    let e = convert(&p("bad.jsonl"), &p("bad.mldf"), &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("line {}:", bad + 1)), "{e}");
    assert!(
        e.contains(&format!("sample {}", bad - blank)),
        "{blank} blank: {e}"
    );
    assert!(!p("bad.mldf").exists());
}

/// A JSON lines input is decoded on every core, a batch of lines per
/// thread: the same output on one thread, on three and on every core;
/// records and columns selected as on one; and a bad line far into the
/// file (or a line that is not UTF-8) is the error, named by its number.
#[test]
fn json_lines_inputs_decode_on_every_core_as_on_one() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let rows = 60_000usize;
    let mut text = String::new();
    for i in 0..rows {
        text.push_str(&format!(
            "{{\"i\": {i}, \"x\": {}.5, \"v\": [{i}, 1], \"t\": \"{}\"}}",
            i * 3,
            "pad ".repeat(i % 9)
        ));
        text.push_str(if i % 5 == 0 { "\r\n" } else { "\n" });
        if i % 1000 == 999 {
            text.push_str("  \n");
        }
    }
    std::fs::write(p("in.jsonl"), &text).unwrap();
    let (files, same) = on_threads(&p("in.jsonl"), dir.path(), "arrow");
    assert!(same, "the files differ");
    let batches = ipc_batches(&p("t1.arrow"));
    assert!(batches.len() > 4, "{} batches", batches.len());
    let ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(ids, (0..rows as i64).collect::<Vec<_>>());
    drop(files);
    // Records and columns selected, on three threads as on one.
    let mut picked = Vec::new();
    for threads in [1, 3] {
        let o = ConvertOptions {
            threads,
            rows: Some(20_500..41_000),
            limit: Some(20_000),
            columns: Some(vec!["t".into(), "i".into()]),
            ..Default::default()
        };
        let out = p(&format!("picked{threads}.arrow"));
        let r = convert(&p("in.jsonl"), &out, &o).unwrap();
        assert_eq!(r.records, 20_000);
        picked.push(std::fs::read(&out).unwrap());
        let batches = ipc_batches(&out);
        let ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(1).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(ids, (20_500..40_500).collect::<Vec<_>>());
    }
    assert!(picked[0] == picked[1]);
    // A bad line far into the file, then another after it: the first is
    // the error on any number of threads (blank lines count).
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let bad = 50_321;
    let mut broken: String = lines[..bad].concat();
    broken.push_str("{\"i\": 1, \"x\": oops}\n");
    broken.push_str(&lines[bad + 1..bad + 2_000].concat());
    broken.push_str("[1]\n");
    broken.push_str(&lines[bad + 2_001..].concat());
    std::fs::write(p("bad.jsonl"), &broken).unwrap();
    let mut bytes = text.clone().into_bytes();
    let at = lines[..bad].concat().len();
    bytes[at + 3] = 0xff;
    std::fs::write(p("utf8.jsonl"), &bytes).unwrap();
    for threads in [1, 3, 0] {
        let o = ConvertOptions {
            threads,
            ..Default::default()
        };
        let e = convert(&p("bad.jsonl"), &p("bad.arrow"), &o).unwrap_err();
        assert!(
            e.to_string().contains(&format!("line {}:", bad + 1)),
            "{threads}: {e}"
        );
        assert!(!p("bad.arrow").exists());
        let e = convert(&p("utf8.jsonl"), &p("utf8.arrow"), &o).unwrap_err();
        assert!(e.to_string().contains("UTF-8"), "{threads}: {e}");
        assert!(!p("utf8.arrow").exists());
    }
    // A line longer than the caller's cap is refused before it is held
    // whole (after ten thousand lines: the schema comes from those).
    let mut long: String = lines[..10_001].concat();
    long.push_str(&format!(
        "{{\"i\": 1, \"t\": \"{}\"}}\n",
        "x".repeat(2 << 20)
    ));
    std::fs::write(p("long.jsonl"), &long).unwrap();
    for threads in [1, 3] {
        let mut o = ConvertOptions {
            threads,
            ..Default::default()
        };
        o.open.limits = dataformats::core::Limits::default().with_max_alloc(1 << 20);
        let e = convert(&p("long.jsonl"), &p("long.arrow"), &o).unwrap_err();
        assert!(
            e.to_string().contains("a line of JSON lines"),
            "{threads}: {e}"
        );
        assert!(!p("long.arrow").exists());
        // The same line first: refused while inferring the schema.
        let long_line = &long[lines[..10_001].concat().len()..];
        let first: String = [long_line, &lines[..100].concat()].concat();
        std::fs::write(p("first.jsonl"), &first).unwrap();
        let e = convert(&p("first.jsonl"), &p("first.arrow"), &o).unwrap_err();
        assert!(e.to_string().contains("limit exceeded"), "{threads}: {e}");
        assert!(!p("first.arrow").exists());
    }
}

/// Converts the CSV at `src` to Arrow with batches of `batch` records on
/// one thread, three and every core: each time the batches of arrow-csv's
/// one pass over the file (with the schema it infers); the records.
fn csv_as_one_pass(src: &std::path::Path, batch: usize) -> usize {
    let format = arrow_csv::reader::Format::default().with_header(true);
    let (schema, _) = format
        .infer_schema(std::fs::File::open(src).unwrap(), Some(10_000))
        .unwrap();
    let one_pass: Vec<RecordBatch> = arrow_csv::ReaderBuilder::new(std::sync::Arc::new(schema))
        .with_format(format)
        .with_batch_size(batch)
        .build(std::fs::File::open(src).unwrap())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let records = one_pass.iter().map(|b| b.num_rows()).sum::<usize>();
    let out = src.with_extension("arrow");
    for threads in [1, 3, 0] {
        let o = ConvertOptions {
            threads,
            batch_size: batch,
            ..Default::default()
        };
        let r = convert(src, &out, &o).unwrap();
        assert_eq!(r.records, records as u64);
        assert!(ipc_batches(&out) == one_pass, "{threads} threads");
    }
    records
}

/// A CSV input is cut into blocks of whole records (quoted fields across
/// lines, doubled quotes, CRLF, CR and LF line ends, blank lines, no line
/// end at the end) decoded on every core: the same batches as arrow-csv's
/// one pass over the file, the same output on any number of threads, and
/// the same errors, naming the same lines.
#[test]
fn csv_inputs_decode_on_every_core_as_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let mut text = String::from("id,x,note\r\n");
    for i in 0..20_000u32 {
        let note = match i % 6 {
            0 => "\"two\nlines\"".to_string(),
            1 => "\"a \"\"quoted\"\" word, with a comma\"".to_string(),
            2 => String::new(),
            3 => "\"cr\rinside\"".to_string(),
            _ => format!("plain {i}"),
        };
        text.push_str(&format!("{i},{}.25,{note}", i * 3));
        text.push_str(["\n", "\r\n", "\r"][i as usize % 3]);
        if i % 997 == 0 {
            text.push('\n');
        }
    }
    text.push_str("20000,1.5,last");
    std::fs::write(p("in.csv"), &text).unwrap();
    let o = |threads| ConvertOptions {
        threads,
        batch_size: 700,
        ..Default::default()
    };
    assert_eq!(csv_as_one_pass(&p("in.csv"), 700), 20_001);
    // Larger than the reader's buffer: without quotes, line ends of all
    // kinds and blank lines; then quoted fields far apart, one across
    // lines.
    for quotes in [false, true] {
        let mut big = String::from("a,b,c\n");
        for i in 0..150_000u32 {
            match i % 5_000 {
                17 if quotes => big.push_str(&format!("{i},\"q\n{i}\",x")),
                18 if quotes => big.push_str(&format!("{i},\"\"\"\",\"y,z\"")),
                _ => big.push_str(&format!("{i},{},row {i}", i % 13)),
            }
            big.push_str(["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"][i as usize % 5]);
        }
        big.push_str("150000,1,end");
        let src = p("big.csv");
        std::fs::write(&src, &big).unwrap();
        assert!(big.len() > 2 << 20, "{}", big.len());
        assert_eq!(csv_as_one_pass(&src, 4_000), 150_001);
    }
    // A value that is not a number and a record of too few fields, far
    // into the file: the first is the error, as in one pass.
    let lines: Vec<&str> = text.split_inclusive(['\n']).collect();
    for (k, bad) in [(0, "12,oops,x\n"), (1, "12,4.5\n")] {
        let mut broken: String = lines[..15_000].concat();
        broken.push_str(bad);
        broken.push_str(&lines[15_001..].concat());
        let src = p(&format!("bad{k}.csv"));
        std::fs::write(&src, &broken).unwrap();
        let format = arrow_csv::reader::Format::default().with_header(true);
        let (schema, _) = format
            .infer_schema(std::fs::File::open(&src).unwrap(), Some(10_000))
            .unwrap();
        let want = arrow_csv::ReaderBuilder::new(std::sync::Arc::new(schema))
            .with_format(format)
            .with_batch_size(700)
            .build(std::fs::File::open(&src).unwrap())
            .unwrap()
            .find_map(Result::err)
            .unwrap()
            .to_string();
        for threads in [1, 3] {
            let e = convert(&src, &p("bad.arrow"), &o(threads)).unwrap_err();
            assert!(e.to_string().contains(&want), "{threads}: {e} / {want}");
            assert!(!p("bad.arrow").exists());
        }
    }
    // A quote never closed holds the rest of the file in one record: its
    // text is held within the caller's caps, not without end.
    let mut open_quote = String::from("id,x,note\n1,2.5,\"opened");
    open_quote.push_str(&"and never closed, ".repeat(200_000));
    std::fs::write(p("quote.csv"), &open_quote).unwrap();
    for threads in [1, 3] {
        let mut capped = o(threads);
        capped.open.limits = dataformats::core::Limits::default().with_max_alloc(1 << 20);
        let e = convert(&p("quote.csv"), &p("quote.arrow"), &capped).unwrap_err();
        // Refused while inferring the schema (the record is in the first
        // lines), before any block is cut.
        assert!(e.to_string().contains("limit exceeded"), "{threads}: {e}");
        assert!(!p("quote.arrow").exists());
    }
    // After ten thousand short records (the schema comes from those): the
    // block holding the unending record is refused at the cap.
    let mut later = String::from("id,x,note\n");
    for i in 0..10_500 {
        later.push_str(&format!("{i},1.5,n{i}\n"));
    }
    later.push_str(&open_quote["id,x,note\n".len()..]);
    std::fs::write(p("later.csv"), &later).unwrap();
    for threads in [1, 3] {
        let mut capped = o(threads);
        capped.open.limits = dataformats::core::Limits::default().with_max_alloc(1 << 20);
        let e = convert(&p("later.csv"), &p("later.arrow"), &capped).unwrap_err();
        assert!(
            e.to_string().contains("the text of a CSV block"),
            "{threads}: {e}"
        );
        assert!(!p("later.arrow").exists());
    }
    // A header alone: no records.
    std::fs::write(p("empty.csv"), "id,x\n").unwrap();
    let r = convert(&p("empty.csv"), &p("empty.arrow"), &o(3)).unwrap();
    assert_eq!(r.records, 0);
}

/// A numpy `.npy` file is an input: its rows give the same typed view as
/// the Bloscpack file it came from (a Fortran-order array of several
/// dimensions is refused, naming the way through Bloscpack).
#[test]
fn npy_files_are_an_input() {
    let Some(dir) = dataformats::core::testing::vectors_dir("bloscpack") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (src, valid) in dataformats::core::testing::vector_files("bloscpack", "blp") {
        if !valid {
            continue;
        }
        let npy = out.path().join("x.npy");
        let _ = std::fs::remove_file(&npy);
        if convert(&src, &npy, &ConvertOptions::default()).is_err() {
            continue; // raw bytes: no numpy array
        }
        match open_input(&npy, &ConvertOptions::default()) {
            Ok(_) => {
                assert_eq!(read_all(&npy), read_all(&src), "{}", src.display());
                checked += 1;
            }
            Err(e) => {
                assert_eq!(e.kind(), "unsupported", "{}: {e}", src.display());
                assert!(e.to_string().contains("Fortran"), "{e}");
            }
        }
    }
    assert!(checked > 10, "{checked}");
    let _ = dir;
}

#[test]
fn the_mldf_schema_carrier_is_in_the_last_record_and_older_files_still_restore() {
    use arrow_array::{Array, FixedSizeListArray, Float32Array, Int64Array};
    use dataformats::mldf::{FieldValue, Reader, Value, Writer};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // Int64 (an INT, inside the metadata rows) and a float32[4] tensor
    // (the only values in the data region): MLDF's own type for the tensor
    // reads back with other metadata, so the schema travels with the file.
    let batch = |rows: std::ops::Range<i32>| {
        let x = Float32Array::from_iter_values(rows.clone().flat_map(|i| {
            let f = i as f32;
            [f, f + 0.25, f + 0.5, f + 0.75]
        }));
        let item = Arc::new(arrow_schema::Field::new(
            "item",
            arrow_schema::DataType::Float32,
            false,
        ));
        RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from_iter_values(rows.map(i64::from)))
                    as arrow_array::ArrayRef,
            ),
            (
                "x",
                Arc::new(FixedSizeListArray::try_new(item, 4, Arc::new(x), None).unwrap()),
            ),
        ])
        .unwrap()
    };
    let parts = [batch(0..1000), batch(1000..1000), batch(1000..2500)];
    let src = dir.path().join("in.arrow");
    let f = std::fs::File::create(&src).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &parts[0].schema()).unwrap();
    for b in &parts {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    let original = arrow_select::concat::concat_batches(&parts[0].schema(), &parts).unwrap();
    let out = dir.path().join("out.mldf");
    assert_eq!(
        convert(&src, &out, &ConvertOptions::default())
            .unwrap()
            .records,
        2500
    );

    let r = Reader::from_bytes(std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r.fields().len(), 3);
    assert_eq!(r.fields()[2].name, dataformats::convert::mldf::SCHEMA_FIELD);
    for i in 0..2499 {
        assert!(
            matches!(r.value(i, 2).unwrap(), Value::Missing),
            "record {i}"
        );
    }
    let Value::Json(carried) = r.value(2499, 2).unwrap() else {
        panic!("no carrier in the last record");
    };
    // The tensors of all records lie back to back: one view of the file.
    let span = r.contiguous_values(1, 0..2500).unwrap().unwrap();
    assert_eq!(span.end - span.start, 2500 * 16);
    let d = dataformats::open(&out).unwrap();
    assert_eq!(d.schema(), original.schema());
    assert_eq!(d.read_batch(None, 0..2500).unwrap(), original);
    // Runs read after the whole column are slices of its one range.
    for rows in [0..1, 100..200, 2499..2500, 7..7] {
        let got = d.read_batch(None, rows.clone()).unwrap();
        let want = original.slice(rows.start as usize, (rows.end - rows.start) as usize);
        assert_eq!(got, want, "{rows:?}");
    }

    // The same file as earlier versions wrote it, carrier in record 0.
    let old = dir.path().join("old.mldf");
    let mut w = Writer::create(&old, r.fields().to_vec(), Default::default()).unwrap();
    for i in 0..2500 {
        let (Value::Int(id), Value::NdArray(x)) = (r.value(i, 0).unwrap(), r.value(i, 1).unwrap())
        else {
            panic!("record {i}");
        };
        let c = if i == 0 {
            FieldValue::Json(&carried)
        } else {
            FieldValue::Missing
        };
        w.add_sample(&[FieldValue::Int(id), FieldValue::NdArray(&x), c])
            .unwrap();
    }
    w.finish().unwrap();
    let d = dataformats::open(&old).unwrap();
    assert_eq!(d.schema(), original.schema());
    assert_eq!(d.read_batch(None, 0..2500).unwrap(), original);
    assert_eq!(
        d.read_batch(Some(&["x".into()]), 0..2500)
            .unwrap()
            .column(0)
            .len(),
        2500
    );
}

/// BLZ/bcolz → `.npy`: an array of many chunk files (5 MB, so written on
/// every core) and a table give their bytes behind a numpy header; a chunk
/// file broken in the middle is an error naming it, with nothing written.
#[test]
fn blz_arrays_and_tables_become_npy() {
    use dataformats::bloscpack::blz::{
        ArrayOptions, ColumnData, Layout, create_array, create_table,
    };
    use dataformats::bloscpack::dtype::Dtype;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let i8 = Dtype::parse_python_literal("'<i8'").unwrap();
    let values: Vec<u8> = (0..655_361i64)
        .flat_map(|i| (i * i % 1_000_003).to_le_bytes())
        .collect();
    let opts = ArrayOptions::new(Layout::Bcolz).chunklen(8192);
    let a = create_array(p("a.bcolz"), &i8, &[], &values, &opts).unwrap();
    assert!(a.chunks().len() > 60, "{}", a.chunks().len());
    convert(&p("a.bcolz"), &p("a.npy"), &ConvertOptions::default()).unwrap();
    let npy = std::fs::read(p("a.npy")).unwrap();
    assert!(npy.starts_with(b"\x93NUMPY"));
    let header = npy.len() - values.len();
    assert_eq!(header % 64, 0);
    assert!(npy[header..] == values[..]);

    // 500,000 rows of 9 bytes: parts of about 1 MiB of rows, on every core.
    let flags: Vec<u8> = (0..500_000).map(|i| u8::from(i % 7 == 0)).collect();
    let b1 = Dtype::parse_python_literal("'|b1'").unwrap();
    let cols = [
        ColumnData {
            name: "id",
            dtype: &i8,
            trailing: &[],
            data: &values[..4_000_000],
        },
        ColumnData {
            name: "flag",
            dtype: &b1,
            trailing: &[],
            data: &flags,
        },
    ];
    let t = create_table(
        p("t.bcolz"),
        &cols,
        &serde_json::json!({}),
        &ArrayOptions::new(Layout::Bcolz).chunklen(256),
    )
    .unwrap();
    convert(&p("t.bcolz"), &p("t.npy"), &ConvertOptions::default()).unwrap();
    let npy = std::fs::read(p("t.npy")).unwrap();
    // Rows of the record dtype: each id's 8 bytes, then its flag.
    let rows: Vec<u8> = (0..500_000)
        .flat_map(|i| values[i * 8..i * 8 + 8].iter().copied().chain([flags[i]]))
        .collect();
    assert_eq!(t.len(), 500_000);
    assert!(npy.ends_with(&rows) && npy.len() > rows.len());
    assert_eq!((npy.len() - rows.len()) % 64, 0);
    // A chunk file in the middle cut short: the error names it; no file.
    let victim = a.chunks()[40].path.clone();
    let bytes = std::fs::read(&victim).unwrap();
    std::fs::write(&victim, &bytes[..bytes.len() / 2]).unwrap();
    let e = convert(&p("a.bcolz"), &p("bad.npy"), &ConvertOptions::default()).unwrap_err();
    let text = format!("{e}");
    assert!(text.contains("__40"), "{text}");
    assert!(!p("bad.npy").exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("bad.npy")), "{names:?}");
}

/// The batches of the Arrow IPC file `path`, as written.
fn ipc_batches(path: &std::path::Path) -> Vec<RecordBatch> {
    let mut inp = open_input(path, &ConvertOptions::default()).unwrap();
    let mut out = Vec::new();
    while let Some(b) = inp.stream.next_batch() {
        out.push(b.unwrap());
    }
    out
}

/// A Bloscpack file at `path` of a float64 array of `shape`, element `i`
/// (in C order) holding `i / 2`, in chunks of `chunk` bytes.
fn float_blp(path: &std::path::Path, shape: &[u64], chunk: usize) {
    use dataformats::bloscpack::dtype::Dtype;
    use dataformats::bloscpack::numpy::{NumpyMeta, Order};
    use dataformats::bloscpack::{WriteOptions, npy};
    let meta = NumpyMeta {
        dtype: Dtype::parse_python_literal("'<f8'").unwrap(),
        shape: shape.to_vec(),
        order: Order::C,
    };
    let mut bytes = npy::header_bytes(&meta);
    for i in 0..shape.iter().product::<u64>() {
        bytes.extend_from_slice(&(i as f64 * 0.5).to_le_bytes());
    }
    let npy_path = path.with_extension("npy");
    std::fs::write(&npy_path, &bytes).unwrap();
    let w = WriteOptions::default().chunk_size(chunk);
    npy::npy_to_bloscpack(&npy_path, path, &w).unwrap();
    std::fs::remove_file(npy_path).unwrap();
}

/// Where each of `batches` ends (records from the first), checking that
/// every batch but the last holds between half and twice `BATCH_BYTES` of
/// `row_bytes`-byte rows, and that they hold `rows` records in all.
fn batch_ends(batches: &[RecordBatch], row_bytes: u64, rows: u64) -> Vec<u64> {
    use dataformats::convert::BATCH_BYTES;
    let mut at = 0u64;
    let mut ends = Vec::new();
    for b in batches {
        let n = b.num_rows() as u64;
        assert!(n * row_bytes <= 2 * BATCH_BYTES, "a batch of {n} rows");
        assert!(
            n * row_bytes >= BATCH_BYTES / 2 || at + n == rows,
            "a batch of {n} rows"
        );
        at += n;
        ends.push(at);
    }
    assert_eq!(at, rows);
    ends
}

/// With the default batch size, a conversion's batches hold about
/// `BATCH_BYTES` of fixed-width values and end where the input's chunks
/// start; an explicit batch size is kept to the record. Decoded on one
/// thread or several, the batches come in order, and a broken chunk stops
/// the conversion with the same error, nothing written.
#[test]
fn default_batches_follow_chunks_and_threads_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    // 300,000 float64 rows in chunks of 24,576 rows (192 KiB), which
    // `BATCH_BYTES` is not a multiple of.
    let rows = 300_000u64;
    let chunk_rows = 24_576u64;
    float_blp(&p("a.blp"), &[rows], chunk_rows as usize * 8);
    let values = |batches: &[RecordBatch]| -> Vec<f64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_any();
                let a = a.downcast_ref::<arrow_array::Float64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    };
    let want: Vec<f64> = (0..rows).map(|i| i as f64 * 0.5).collect();
    for threads in [1, 2, 4] {
        let opts = ConvertOptions {
            threads,
            ..Default::default()
        };
        let r = convert(&p("a.blp"), &p("a.arrow"), &opts).unwrap();
        assert_eq!(r.records, rows);
        let batches = ipc_batches(&p("a.arrow"));
        assert!(batches.len() >= 2, "{} batches", batches.len());
        for at in batch_ends(&batches, 8, rows) {
            assert!(
                at.is_multiple_of(chunk_rows) || at == rows,
                "a cut inside a chunk: {at}"
            );
        }
        assert!(values(&batches) == want, "threads {threads}");
        // An explicit batch size: that many records per batch.
        let exact = ConvertOptions {
            threads,
            batch_size: 1000,
            ..Default::default()
        };
        convert(&p("a.blp"), &p("b.arrow"), &exact).unwrap();
        let batches = ipc_batches(&p("b.arrow"));
        assert_eq!(batches.len(), 300);
        assert!(batches.iter().all(|b| b.num_rows() == 1000));
        assert!(values(&batches) == want, "threads {threads}");
    }
    // Chunks 4 and 9 broken (their digests no longer match): chunk 4's
    // error on every thread count, and no output.
    let rd = dataformats::bloscpack::Reader::open(p("a.blp")).unwrap();
    let mut broken = std::fs::read(p("a.blp")).unwrap();
    for k in [4, 9] {
        broken[rd.chunks()[k].offset as usize + 40] ^= 0x5a;
    }
    drop(rd);
    std::fs::write(p("broken.blp"), &broken).unwrap();
    let mut errors = Vec::new();
    for threads in [1, 2, 4] {
        for batch_size in [0, 1000] {
            let opts = ConvertOptions {
                threads,
                batch_size,
                ..Default::default()
            };
            let e = convert(&p("broken.blp"), &p("c.arrow"), &opts).unwrap_err();
            assert!(e.to_string().contains("chunk 4"), "{e}");
            assert!(!p("c.arrow").exists());
            errors.push(e.to_string());
        }
    }
    assert!(errors.iter().all(|e| e == &errors[0]), "{errors:?}");
}

/// Converts `src` to `t{threads}.{ext}` in `dir` on one thread, on three
/// and on every core; the bytes of each file, and whether they are all the
/// same.
fn on_threads(src: &std::path::Path, dir: &std::path::Path, ext: &str) -> (Vec<Vec<u8>>, bool) {
    let mut files = Vec::new();
    for threads in [1, 3, 0] {
        let out = dir.join(format!("t{threads}.{ext}"));
        let opts = ConvertOptions {
            threads,
            ..Default::default()
        };
        convert(src, &out, &opts).unwrap();
        files.push(std::fs::read(&out).unwrap());
    }
    let same = files.iter().all(|f| f == &files[0]);
    (files, same)
}

/// A conversion to IDV deflates on the threads it is given, and the file
/// is the same on one thread, on three and on every core.
#[test]
fn idv_targets_are_the_same_on_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let blp = dir.path().join("in.blp");
    float_blp(&blp, &[100_000, 5], 1 << 20);
    let (_, same) = on_threads(&blp, dir.path(), "idv");
    let r = dataformats::idv::Reader::open(dir.path().join("t1.idv")).unwrap();
    r.validate().unwrap();
    assert!(r.block_count() > 1, "{} block groups", r.block_count());
    assert!(same, "the files differ");
}

/// A Bloscpack target large enough for its chunks to be compressed on
/// threads is the same file on any number of them, and holds the input.
#[test]
fn bloscpack_targets_are_the_same_on_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.blp");
    float_blp(&src, &[200_000, 5], 1 << 20);
    let (files, same) = on_threads(&src, dir.path(), "blp");
    let back = dataformats::bloscpack::Reader::from_bytes(files[0].clone()).unwrap();
    let want = dataformats::bloscpack::Reader::open(&src).unwrap();
    assert!(back.chunks().len() > 4, "{} chunks", back.chunks().len());
    assert_eq!(back.read_all().unwrap(), want.read_all().unwrap());
    assert!(same, "the files differ");
}

/// Parquet from an import (an Arrow IPC file, read in one pass, not in
/// parts) is encoded a part per thread: the same file on one thread, on
/// three and on every core, of several row groups, holding the input.
#[test]
fn parquet_from_an_import_is_the_same_on_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (blp, arrow) = (dir.path().join("in.blp"), dir.path().join("in.arrow"));
    float_blp(&blp, &[1_000_000, 5], 1 << 20);
    convert(&blp, &arrow, &ConvertOptions::default()).unwrap();
    let (_, same) = on_threads(&arrow, dir.path(), "parquet");
    let t1 = dir.path().join("t1.parquet");
    let meta = parquet::file::reader::FileReader::metadata(
        &parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&t1).unwrap())
            .unwrap(),
    )
    .clone();
    assert!(
        meta.num_row_groups() > 1,
        "{} row groups",
        meta.num_row_groups()
    );
    let all = |path: &std::path::Path| {
        let batches = ipc_batches(path);
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    };
    assert_eq!(all(&t1), all(&arrow));
    assert!(same, "the files differ");
}

/// Stored units much larger than a batch (here Bloscpack chunks of 1 MiB
/// that hold a whole number of 40-byte rows only every 131,072 rows, five
/// batches' worth) are cut into batches of about `BATCH_BYTES`, still
/// ending at every unit's start.
#[test]
fn units_larger_than_a_batch_are_cut_into_batches() {
    use arrow_array::cast::AsArray;
    let dir = tempfile::tempdir().unwrap();
    let (blp, arrow) = (dir.path().join("w.blp"), dir.path().join("w.arrow"));
    let rows = 300_000u64;
    float_blp(&blp, &[rows, 5], 1 << 20);
    convert(&blp, &arrow, &ConvertOptions::default()).unwrap();
    let batches = ipc_batches(&arrow);
    let cuts = batch_ends(&batches, 40, rows);
    let mut values = Vec::new();
    for b in &batches {
        let list = b.column(0).as_fixed_size_list();
        let v = list
            .values()
            .as_primitive::<arrow_array::types::Float64Type>();
        values.extend_from_slice(v.values());
    }
    assert!(
        cuts.contains(&131_072) && cuts.contains(&262_144),
        "{cuts:?}"
    );
    assert!(values.iter().enumerate().all(|(i, &v)| v == i as f64 * 0.5));
    assert_eq!(values.len() as u64, rows * 5);
}

/// A stored unit of a few batches' worth stays one batch: IDV blocks of
/// 8,192 rows of 264 bytes (2 MiB, two batches' worth) each make one
/// batch, so that no block is inflated twice.
#[test]
fn units_of_a_few_batches_stay_whole() {
    use arrow_array::builder::{FixedSizeListBuilder, Float32Builder};
    use arrow_array::{ArrayRef, Int64Array};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let rows = 30_000i64;
    let mut x = FixedSizeListBuilder::new(Float32Builder::new(), 64);
    for i in 0..rows {
        for j in 0..64 {
            x.values().append_value((i * 64 + j) as f32);
        }
        x.append(true);
    }
    let x = x.finish();
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("id", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("x", arrow_array::Array::data_type(&x).clone(), false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows)) as ArrayRef,
            Arc::new(x) as ArrayRef,
        ],
    )
    .unwrap();
    let src = table(dir.path(), "t.arrow", &batch);
    let mut o = ConvertOptions::default();
    o.idv.writer.rows_per_block = Some(8192);
    let idv = dir.path().join("t.idv");
    convert(&src, &idv, &o).unwrap();
    let arrow = dir.path().join("out.arrow");
    convert(&idv, &arrow, &ConvertOptions::default()).unwrap();
    let batches = ipc_batches(&arrow);
    let sizes: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(sizes, [8192, 8192, 8192, 5424]);
    let back = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(back.column(0).as_ref(), batch.column(0).as_ref());
    use arrow_array::cast::AsArray;
    let vals = |a: &ArrayRef| a.as_fixed_size_list().values().clone();
    assert_eq!(
        vals(back.column(1)).as_ref(),
        vals(batch.column(1)).as_ref()
    );
}

/// An MLDF file at `path` of `n` records: an Int64 `id` and a Binary
/// `data` of `size(i)` bytes, each byte `(i + k) % 251`.
fn blob_mldf(path: &std::path::Path, n: i64, size: impl Fn(i64) -> usize) {
    use arrow_array::builder::BinaryBuilder;
    use arrow_array::{ArrayRef, Int64Array};
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("id", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("data", arrow_schema::DataType::Binary, false),
    ]));
    let batches = (0..n)
        .step_by(500)
        .map(|start| {
            let ids: Vec<i64> = (start..(start + 500).min(n)).collect();
            let mut data = BinaryBuilder::new();
            for &i in &ids {
                let v: Vec<u8> = (0..size(i))
                    .map(|k| ((i as usize + k) % 251) as u8)
                    .collect();
                data.append_value(&v);
            }
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(ids)) as ArrayRef,
                    Arc::new(data.finish()),
                ],
            )
            .unwrap()
        })
        .collect();
    let mut stream = dataformats::BatchIter::from_batches(schema, batches);
    let mut report = dataformats::convert::Report::default();
    dataformats::convert::write(
        Target::Mldf,
        &mut stream,
        path,
        &ConvertOptions::default(),
        &mut report,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(report.records, n as u64);
}

/// Checks `batches` read back from a [`blob_mldf`] of `n` records of
/// `size(i)` bytes: every record, in order, with its bytes, and no batch
/// over `BATCH_BYTES` of them (so at least as many batches as that takes).
fn blob_batches(batches: &[RecordBatch], n: i64, size: impl Fn(i64) -> usize) {
    use arrow_array::cast::AsArray;
    use dataformats::convert::BATCH_BYTES;
    let mut next = 0i64;
    let mut all = 0usize;
    for b in batches {
        let ids = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
        let data = b.column(1).as_binary::<i32>();
        let bytes: usize = (0..b.num_rows()).map(|r| data.value(r).len()).sum();
        assert!(
            bytes as u64 <= BATCH_BYTES,
            "a batch of {} records, {bytes} bytes",
            b.num_rows()
        );
        all += bytes;
        for r in 0..b.num_rows() {
            assert_eq!((ids.value(r), data.value(r).len()), (next, size(next)));
            assert_eq!(data.value(r)[1], ((next + 1) % 251) as u8);
            next += 1;
        }
    }
    assert_eq!(next, n);
    assert!(
        batches.len() >= all / BATCH_BYTES as usize,
        "{} batches",
        batches.len()
    );
}

/// Records of large values (50 KB images) make batches of about
/// `BATCH_BYTES`, not `BATCH_RECORDS` records: the first batch holds a
/// few records, the rest as many as its values say fit. The lengths, so
/// the output, are the same on any number of threads, and every record
/// arrives in order. Small records still make batches of `BATCH_RECORDS`.
#[test]
fn batches_of_large_values_hold_about_batch_bytes() {
    use dataformats::convert::BATCH_RECORDS;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let size = |i: i64| 50_000 + (i % 7) as usize * 100;
    blob_mldf(&p("big.mldf"), 900, size);
    let mut files = Vec::new();
    for threads in [1, 2, 0] {
        let opts = ConvertOptions {
            threads,
            ..Default::default()
        };
        convert(&p("big.mldf"), &p("big.arrow"), &opts).unwrap();
        files.push(std::fs::read(p("big.arrow")).unwrap());
        let batches = ipc_batches(&p("big.arrow"));
        assert_eq!(batches[0].num_rows(), 16, "the first batch");
        blob_batches(&batches, 900, size);
    }
    assert!(files.iter().all(|f| f == &files[0]), "the files differ");
    // Records of a few bytes: batches of BATCH_RECORDS after the first.
    blob_mldf(&p("small.mldf"), 10_000, |i| (i % 10) as usize);
    convert(
        &p("small.mldf"),
        &p("small.arrow"),
        &ConvertOptions::default(),
    )
    .unwrap();
    let rows: Vec<usize> = ipc_batches(&p("small.arrow"))
        .iter()
        .map(RecordBatch::num_rows)
        .collect();
    let records = BATCH_RECORDS as usize;
    assert_eq!(rows, [16, records, records, 10_000 - 16 - 2 * records]);
}

/// A TBL v2 target large enough for its samples to be compressed on
/// threads, written in place after its index (the records are known
/// ahead), is the same file on any number of threads and holds the input.
#[test]
fn tbl2_targets_are_the_same_on_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.mldf");
    let size = |i: i64| 40_000 + (i % 13) as usize * 1000;
    blob_mldf(&src, 250, size);
    let lossy = |threads| ConvertOptions {
        threads,
        lossy: true,
        ..Default::default()
    };
    let mut files = Vec::new();
    for threads in [1, 3, 0] {
        let out = dir.path().join(format!("t{threads}.tbl"));
        let r = convert(&src, &out, &lossy(threads)).unwrap();
        assert_eq!(r.records, 250);
        assert!(
            r.changes
                .iter()
                .any(|c| c.field == "id" && c.kind == ChangeKind::Dropped),
            "{:?}",
            r.changes
        );
        files.push(std::fs::read(&out).unwrap());
    }
    let back = dataformats::tbl2::Reader::from_bytes(files[0].clone()).unwrap();
    back.validate().unwrap();
    assert_eq!(back.len(), 250);
    for i in 0..250 {
        let s = back.read_sample(i).unwrap();
        assert_eq!(s.len(), size(i as i64));
        assert_eq!(s[1], ((i + 1) % 251) as u8);
    }
    assert!(files.iter().all(|f| f == &files[0]), "the files differ");
    // No spool file is left beside the outputs.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

/// A Parquet input of large values is read in batches of about
/// `BATCH_BYTES`, as its row groups' bytes per row say, not of
/// `BATCH_RECORDS` records; and becomes the same TBL v2 file (spooled:
/// a Parquet footer's row count is only declared) as the MLDF it came from
/// (written in place).
#[test]
fn parquet_inputs_of_large_values_make_small_batches() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let size = |i: i64| 60_000 + (i % 5) as usize * 10;
    blob_mldf(&p("in.mldf"), 300, size);
    convert(&p("in.mldf"), &p("in.parquet"), &ConvertOptions::default()).unwrap();
    convert(
        &p("in.parquet"),
        &p("out.arrow"),
        &ConvertOptions::default(),
    )
    .unwrap();
    let batches = ipc_batches(&p("out.arrow"));
    blob_batches(&batches, 300, size);
    let lossy = ConvertOptions {
        lossy: true,
        ..Default::default()
    };
    convert(&p("in.parquet"), &p("a.tbl"), &lossy).unwrap();
    convert(&p("in.mldf"), &p("b.tbl"), &lossy).unwrap();
    assert!(std::fs::read(p("a.tbl")).unwrap() == std::fs::read(p("b.tbl")).unwrap());
}

/// A Bloscpack target whose records are known ahead (a data set's) is
/// written straight through, without a spool: the same file as from a
/// stream that does not say how many records it holds (spooled first).
#[test]
fn bloscpack_targets_known_ahead_match_spooled_ones() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    float_blp(&p("in.blp"), &[50_000, 3], 1 << 20);
    convert(&p("in.blp"), &p("direct.blp"), &ConvertOptions::default()).unwrap();
    let mut inp = open_input(&p("in.blp"), &ConvertOptions::default()).unwrap();
    assert_eq!(inp.stream.records_left(), Some(50_000));
    let schema = inp.stream.schema();
    let mut batches = Vec::new();
    while let Some(b) = inp.stream.next_batch() {
        batches.push(b.unwrap());
    }
    assert_eq!(inp.stream.records_left(), Some(0));
    let mut stream = dataformats::BatchIter::from_batches(schema, batches);
    assert_eq!(dataformats::BatchStream::records_left(&stream), None);
    let mut report = dataformats::convert::Report::default();
    dataformats::convert::write(
        Target::Bloscpack,
        &mut stream,
        &p("spooled.blp"),
        &ConvertOptions::default(),
        &mut report,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(report.records, 50_000);
    let direct = std::fs::read(p("direct.blp")).unwrap();
    assert!(
        direct == std::fs::read(p("spooled.blp")).unwrap(),
        "the files differ"
    );
    let back = dataformats::bloscpack::Reader::from_bytes(direct).unwrap();
    let want = dataformats::bloscpack::Reader::open(p("in.blp")).unwrap();
    assert_eq!(back.read_all().unwrap(), want.read_all().unwrap());
}

/// JSON lines and CSV of long texts (60 KB each) are read in batches of
/// about `BATCH_BYTES` of text, not of `BATCH_RECORDS` lines; an explicit
/// batch size is kept to the record.
#[test]
fn json_lines_and_csv_of_long_texts_make_small_batches() {
    use arrow_array::cast::AsArray;
    use dataformats::convert::BATCH_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (mut jsonl, mut csv) = (String::new(), String::from("id,text\n"));
    for i in 0..200 {
        let body: String = std::iter::repeat_n((b'a' + (i % 26) as u8) as char, 60_000).collect();
        jsonl.push_str(&format!("{{\"id\": {i}, \"text\": \"{body}\"}}\n"));
        csv.push_str(&format!("{i},{body}\n"));
    }
    std::fs::write(p("in.jsonl"), &jsonl).unwrap();
    std::fs::write(p("in.csv"), &csv).unwrap();
    for ext in ["jsonl", "csv"] {
        let src = p(&format!("in.{ext}"));
        convert(&src, &p("out.arrow"), &ConvertOptions::default()).unwrap();
        let batches = ipc_batches(&p("out.arrow"));
        let mut next = 0i64;
        for b in &batches {
            let texts = b.column(1).as_string::<i32>();
            let bytes: usize = (0..b.num_rows()).map(|r| texts.value(r).len()).sum();
            assert!(
                bytes as u64 <= BATCH_BYTES + 60_000,
                "{ext}: a batch of {} lines",
                b.num_rows()
            );
            let ids = b.column(0).as_primitive::<arrow_array::types::Int64Type>();
            for r in 0..b.num_rows() {
                assert_eq!(ids.value(r), next);
                assert_eq!(texts.value(r).len(), 60_000);
                assert!(
                    texts
                        .value(r)
                        .starts_with((b'a' + (next % 26) as u8) as char)
                );
                next += 1;
            }
        }
        assert_eq!(next, 200, "{ext}");
        assert!(
            batches.len() >= 200 * 60_000 / BATCH_BYTES as usize,
            "{ext}: {} batches",
            batches.len()
        );
        let exact = ConvertOptions {
            batch_size: 64,
            ..Default::default()
        };
        convert(&src, &p("exact.arrow"), &exact).unwrap();
        let rows: Vec<usize> = ipc_batches(&p("exact.arrow"))
            .iter()
            .map(RecordBatch::num_rows)
            .collect();
        assert_eq!(rows, [64, 64, 64, 8], "{ext}");
    }
}
