"""`dataformats sql` (the CLI with its `sql` feature, as the Rust test build
makes it) against pyarrow computing the same query from the Parquet
exports: a GROUP BY over an IDV file, joins of MLDF files with Parquet
files, CSV output, output files of other formats, and clean errors.

The CLI is taken from $DATAFORMATS_BIN (default: target/debug/dataformats);
the vectors from $DATAFORMATS_VECTORS (default: ../shared/vectors).
"""

import csv
import json
import io
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("DATAFORMATS_BIN", ROOT / "target" / "debug" / "dataformats"))
VECTORS = Path(os.environ.get("DATAFORMATS_VECTORS", ROOT.parent / "shared" / "vectors"))
IDV = VECTORS / "idv" / "mlnet15_large_default.idv"
MLDF = VECTORS / "mldf" / "int_basic.mldf"


def cli(*args, check=True):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, f"dataformats {' '.join(map(str, args))}: {r.stderr}"
    return r


@pytest.fixture(scope="module", autouse=True)
def has_sql():
    r = cli("sql", "SELECT 1", "--table", f"t={IDV}", check=False)
    assert r.returncode == 0, (
        f"{BIN} answers no SQL (build it with `cargo build -p dataformats-cli --features sql`): {r.stderr}"
    )


def parquet_of(src: Path, tmp: Path) -> pa.Table:
    out = tmp / (src.name + ".parquet")
    cli("convert", src, out)
    return pq.read_table(out)


def sql(tmp: Path, query: str, *tables: str) -> pa.Table:
    """The query's result, written by the CLI as Parquet (exact types)."""
    out = tmp / "result.parquet"
    out.unlink(missing_ok=True)
    args = ["sql", query, "--out", out]
    for t in tables:
        args += ["--table", t]
    cli(*args)
    return pq.read_table(out)


def rows(t: pa.Table):
    def norm(v):
        return round(v, 4) if isinstance(v, float) and math.isfinite(v) else v

    return [tuple(norm(v) for v in r.values()) for r in t.to_pylist()]


def test_group_by_over_idv_equals_pyarrow(tmp_path):
    ref = parquet_of(IDV, tmp_path)
    got = sql(
        tmp_path,
        "SELECT odd, COUNT(*) AS n, SUM(\"row\") AS s, MIN(sin) AS lo, MAX(sin) AS hi, "
        "MIN(name) AS first FROM t GROUP BY odd ORDER BY odd",
        f"t={IDV}",
    )
    want = (
        ref.group_by("odd")
        .aggregate([("row", "count"), ("row", "sum"), ("sin", "min"), ("sin", "max"), ("name", "min")])
        .sort_by("odd")
    )
    want = want.select(["odd", "row_count", "row_sum", "sin_min", "sin_max", "name_min"])
    assert got.num_rows == 2
    assert rows(got) == rows(want)
    assert got.column("n").type == pa.int64() and got.column("lo").type == pa.float32()


def test_group_by_with_filter_and_expression(tmp_path):
    ref = parquet_of(IDV, tmp_path)
    got = sql(
        tmp_path,
        "SELECT \"row\" % 5 AS k, COUNT(*) AS n, AVG(sin) AS mean FROM t "
        "WHERE sin > 0 GROUP BY \"row\" % 5 ORDER BY k",
        f"t={IDV}",
    )
    f = ref.filter(pc.greater(ref["sin"], 0))
    f = f.append_column("k", pa.array([r % 5 for r in f["row"].to_pylist()], pa.int32()))
    want = f.group_by("k").aggregate([("row", "count"), ("sin", "mean")]).sort_by("k")
    want = want.select(["k", "row_count", "sin_mean"])
    assert rows(got) == rows(want)


def test_join_of_mldf_vector_with_parquet_equals_pyarrow(tmp_path):
    m = parquet_of(MLDF, tmp_path)
    labels = m.column("label").to_pylist()
    p = pa.table({"key": pa.array(labels[::2] + [10**12], pa.int64()), "word": [f"w{v}" for v in labels[::2]] + ["none"]})
    pq.write_table(p, tmp_path / "words.parquet")
    got = sql(
        tmp_path,
        "SELECT m.label, p.word FROM m JOIN p ON m.label = p.key ORDER BY m.label, p.word",
        f"m={MLDF}",
        f"p={tmp_path / 'words.parquet'}",
    )
    want = m.join(p, keys="label", right_keys="key", join_type="inner").select(["label", "word"])
    want = want.sort_by([("label", "ascending"), ("word", "ascending")])
    assert got.num_rows > 0
    assert rows(got) == rows(want)


def test_join_of_a_large_mldf_with_parquet(tmp_path):
    # 20,000 records as MLDF (converted from the IDV vector), joined with a
    # Parquet file holding a label for every third record.
    mldf = tmp_path / "big.mldf"
    cli("convert", IDV, mldf)
    m = parquet_of(mldf, tmp_path)
    keys = list(range(0, 20000, 3))
    p = pa.table({"id": pa.array(keys, pa.int32()), "label": [f"L{k % 11}" for k in keys]})
    pq.write_table(p, tmp_path / "labels.parquet")
    got = sql(
        tmp_path,
        "SELECT p.label, COUNT(*) AS n, SUM(m.sin) AS total FROM m JOIN p ON m.\"row\" = p.id "
        "WHERE m.odd GROUP BY p.label ORDER BY p.label",
        f"m={mldf}",
        f"p={tmp_path / 'labels.parquet'}",
    )
    j = m.filter(m["odd"]).join(p, keys="row", right_keys="id", join_type="inner")
    want = j.group_by("label").aggregate([("row", "count"), ("sin", "sum")]).sort_by("label")
    assert got.num_rows == 11
    assert [r[:2] for r in rows(got)] == [r[:2] for r in rows(want.select(["label", "row_count", "sin_sum"]))]
    for a, b in zip(got.column("total").to_pylist(), want.column("sin_sum").to_pylist()):
        assert math.isclose(a, b, rel_tol=1e-5), (a, b)


def test_csv_output_is_a_header_then_rows(tmp_path):
    r = cli("sql", "SELECT \"row\", name FROM t WHERE \"row\" < 3 ORDER BY \"row\"", "--table", f"t={IDV}", "--format", "csv")
    lines = list(csv.reader(io.StringIO(r.stdout)))
    ref = parquet_of(IDV, tmp_path).slice(0, 3)
    assert lines[0] == ["row", "name"]
    assert lines[1:] == [[str(a), b] for a, b in zip(ref["row"].to_pylist(), ref["name"].to_pylist())]


def test_jsonl_and_table_output(tmp_path):
    r = cli("sql", "SELECT COUNT(*) AS n FROM t", "--table", f"t={IDV}", "--format", "jsonl")
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"n": 20000}]
    r = cli("sql", "SELECT COUNT(*) AS n FROM t", "--table", f"t={IDV}")
    assert "| n " in r.stdout and "| 20000 |" in r.stdout


def test_result_written_as_another_format(tmp_path):
    out = tmp_path / "some.idv"
    cli("sql", "SELECT \"row\", sin FROM t WHERE odd", "--table", f"t={IDV}", "--out", out)
    assert cli("count", out).stdout.strip() == "10000"
    assert cli("validate", out).returncode == 0


def test_row_number_column_reads_a_record_range(tmp_path):
    ref = parquet_of(IDV, tmp_path)
    out = tmp_path / "r.parquet"
    cli("sql", "SELECT _row, \"row\", name FROM t WHERE _row BETWEEN 100 AND 104 ORDER BY _row",
        "--table", f"t={IDV}", "--row-number", "_row", "--out", out)
    got = pq.read_table(out)
    assert got.column("_row").to_pylist() == [100, 101, 102, 103, 104]
    assert got.column("row").to_pylist() == ref["row"].to_pylist()[100:105]
    assert got.column("name").to_pylist() == ref["name"].to_pylist()[100:105]


def test_errors_are_clean(tmp_path):
    # An unknown table or column: a usage error naming it.
    r = cli("sql", "SELECT * FROM nope", "--table", f"t={IDV}", check=False)
    assert r.returncode == 2 and "nope" in r.stderr
    r = cli("sql", "SELECT missing FROM t", "--table", f"t={IDV}", check=False)
    assert r.returncode == 2 and "missing" in r.stderr
    # A malformed --table.
    r = cli("sql", "SELECT 1", "--table", "noequals", check=False)
    assert r.returncode == 2
    # A damaged file: the format's error, exit 1.
    bad = tmp_path / "bad.idv"
    bad.write_bytes(IDV.read_bytes()[:200])
    r = cli("sql", "SELECT * FROM t", "--table", f"t={bad}", check=False)
    assert r.returncode == 1 and "bad.idv" in r.stderr, r.stderr
    # Every invalid IDV vector is refused, never a crash.
    for p in sorted((VECTORS / "idv" / "invalid").glob("*.idv")):
        r = cli("sql", "SELECT COUNT(*) FROM t", "--table", f"t={p}", check=False)
        assert r.returncode in (0, 1, 3), (p, r.returncode, r.stderr)
        assert "panicked" not in r.stderr, (p, r.stderr)
