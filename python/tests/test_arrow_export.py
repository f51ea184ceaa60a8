"""Every valid shared vector, exported by the `dataformats` CLI to Parquet and
to an Arrow IPC file, read back by pyarrow: the row count is what
`dataformats count` prints, the field names and types are what
`dataformats schema --json` prints, and for a sample of vectors the values
equal the sidecar's expected values.

The CLI is taken from $DATAFORMATS_BIN (default: target/debug/dataformats,
built by `cargo test --workspace --all-features --no-run`); the vectors from
$DATAFORMATS_VECTORS (default: ../shared/vectors).
"""

import hashlib
import json
import math
import os
import struct
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("DATAFORMATS_BIN", ROOT / "target" / "debug" / "dataformats"))
VECTORS = Path(os.environ.get("DATAFORMATS_VECTORS", ROOT.parent / "shared" / "vectors"))
EXTS = {"idv": ".idv", "mldf": ".mldf", "cntk": ".bin", "tbl2": ".tbl", "ffcv": ".beton", "bloscpack": ".blp"}


def sidecar(p: Path):
    for s in (Path(str(p) + ".json"), p.with_suffix(".json")):
        if s.is_file():
            return json.loads(s.read_text())
    return None


def vectors(valid=True):
    """(format, path, sidecar) of every vector whose sidecar says `valid`
    is `valid` (files of the typed formats, and BLZ/bcolz directories)."""
    out = []
    for fmt, ext in EXTS.items():
        for p in sorted((VECTORS / fmt).rglob("*" + ext)):
            side = sidecar(p)
            if side is not None and side.get("valid") is valid:
                out.append((fmt, p, side))
    blz = VECTORS / "blz"
    for p in sorted(blz.rglob("*")):
        if p.is_dir():
            side = sidecar(p)
            if side is not None and side.get("valid") is valid:
                out.append(("blz", p, side))
    return out


def valid_vectors():
    return vectors(valid=True)


VECTORS_LIST = valid_vectors()


def run(*args):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"dataformats {' '.join(map(str, args))}: {r.stderr}"
    return r.stdout


def convert(path, out):
    """`dataformats convert PATH OUT`. IDV text holding half of a UTF-16
    surrogate pair (which Arrow's UTF-8 cannot hold) is refused, naming the
    record and field; with --lossy it becomes U+FFFD and the report says so."""
    r = subprocess.run([str(BIN), "convert", str(path), str(out)], capture_output=True, text=True)
    if r.returncode != 0 and "surrogate pair" in r.stderr:
        assert r.returncode == 1 and "record " in r.stderr, r.stderr
        assert not out.exists()
        report = json.loads(run("--json", "convert", path, out, "--lossy"))
        assert any(c.startswith("replaced") for c in report["changes"]), report
        return
    assert r.returncode == 0, f"dataformats convert {path} {out}: {r.stderr}"


def storage(t):
    """The storage type of an extension type (pyarrow knows
    arrow.fixed_shape_tensor and arrow.json); other types as they are."""
    while isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        item = storage(t.value_type)
        f = pa.field(t.value_field.name, item, t.value_field.nullable)
        return pa.list_(f, t.list_size) if pa.types.is_fixed_size_list(t) else pa.list_(f)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, storage(f.type), f.nullable) for f in t])
    return t


def test_the_vectors_are_there():
    if os.environ.get("CI"):
        assert len(VECTORS_LIST) > 150, f"only {len(VECTORS_LIST)} valid vectors under {VECTORS}"


@pytest.mark.parametrize("fmt,path,side", VECTORS_LIST, ids=[f"{f}/{p.name}" for f, p, _ in VECTORS_LIST])
def test_pyarrow_reads_the_exports(fmt, path, side, tmp_path):
    count = int(run("count", path).strip())
    schema = json.loads(run("schema", path, "--json"))
    want = [(f["name"], f["type"]) for f in schema["fields"]]
    pq_path, ipc_path = tmp_path / "x.parquet", tmp_path / "x.arrow"
    convert(path, pq_path)
    convert(path, ipc_path)

    with pa.memory_map(str(ipc_path)) as src:
        ipc = pa.ipc.open_file(src).read_all()
    assert ipc.num_rows == count
    assert [(f.name, str(storage(f.type))) for f in ipc.schema] == want
    assert [f.nullable for f in ipc.schema] == [f["nullable"] for f in schema["fields"]]
    # The format's own type travels in the field metadata.
    for f, g in zip(ipc.schema, schema["fields"]):
        md = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        assert md.get("dataformats.type") == g["metadata"].get("dataformats.type"), f.name

    table = pq.read_table(pq_path)
    if ipc.num_columns == 0:
        # Parquet has no rows without columns (docs/arrow.md).
        assert table.num_rows == 0
        return
    assert table.num_rows == count
    assert [(f.name, str(storage(f.type))) for f in table.schema] == want
    for name in ipc.column_names:
        assert deep_eq(table.column(name).to_pylist(), ipc.column(name).to_pylist()), name

    check_values(fmt, path, side, ipc)


def deep_eq(a, b):
    """Equality where NaN equals NaN, through lists and dicts."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_eq(a[k], b[k]) for k in a)
    return a == b


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, str) or isinstance(b, str):
            return str(a).lower() in {"nan", str(b).lower()} or str(b).lower() == str(a).lower()
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or float(a) == float(b)
    return a == b


def check_values(fmt, path, side, table):
    """Values against the sidecar, where the sidecar lists them."""
    content = side.get("content") or {}
    if fmt == "idv":
        for name, c in content.items():
            if not isinstance(c, dict) or "head" not in c or name not in table.column_names:
                continue
            if table.column_names.count(name) > 1:
                continue
            col = table.column(name)
            t = storage(col.type)
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                    or pa.types.is_string(t)):
                continue
            if pa.types.is_string(t) and any(isinstance(h, str) and "\ufffd" in h for h in c["head"]):
                continue
            got = col.to_pylist()[: len(c["head"])]
            field = table.schema.field(name)
            own = (field.metadata or {}).get(b"dataformats.type", b"").decode()
            if own.startswith("Key"):
                # A missing key (0) is a null; the others keep their number.
                got = [0 if g is None else g for g in got]
            if pa.types.is_float32(t):
                # The sidecar prints the shortest decimal of the f32.
                c = dict(c, head=[struct.unpack("<f", struct.pack("<f", w))[0]
                                  if isinstance(w, float) else w for w in c["head"]])
            for g, w in zip(got, c["head"]):
                if isinstance(w, str) and pa.types.is_floating(t):
                    assert str(g).lower().replace("inf", "infinity") in {w.lower(), "nan" if w == "NaN" else w.lower()} or (
                        math.isnan(g) and w.lower() == "nan"), (name, g, w)
                elif pa.types.is_string(t):
                    # Text that is not UTF-8 reads back with U+FFFD (docs/arrow.md).
                    assert g == w or "\ufffd" in g, (name, g, w)
                else:
                    assert same(g, w), (path.name, name, g, w)
    elif fmt == "tbl2":
        samples = content.get("samples") or []
        data = table.column("data").to_pylist()
        formats = table.column("format").to_pylist()
        assert len(samples) == len(data)
        for s, d, f, w, h in zip(samples, data, formats, table.column("width").to_pylist(),
                                 table.column("height").to_pylist()):
            assert hashlib.sha256(d).hexdigest() == s["sha256"]
            assert (f, w, h) == (s["format"], s["width"], s["height"])
    elif fmt == "cntk":
        seqs = content.get("sequences")
        if not seqs:
            return
        rows = table.to_pylist()
        by_seq = {}
        for r in rows:
            by_seq.setdefault(r["_sequence"], []).append(r)
        # A sequence without samples has no records; the others keep
        # their sequence number.
        assert len(by_seq) == sum(1 for s in seqs if any(v for v in s.values()))
        for q, seq in enumerate(seqs):
            if q not in by_seq:
                assert not any(v for v in seq.values())
                continue
            for stream, samples in seq.items():
                if not isinstance(samples, list) or not samples or not isinstance(samples[0], list):
                    continue
                got = [r[stream] for r in by_seq[q][: len(samples)]]
                for g, w in zip(got, samples):
                    if isinstance(g, dict):
                        # A sparse sample: [index, value] pairs in the sidecar.
                        assert deep_eq([list(p) for p in zip(g["indices"], g["values"])], [
                            [int(i), float(v)] for i, v in w]), (path.name, q, stream)
                        continue
                    assert len(g) == len(w)
                    for x, y in zip(g, w):
                        if isinstance(y, str):
                            y = float(y.replace("Infinity", "inf"))
                        assert same(x, y) or abs(x - y) <= 1e-6 * max(1.0, abs(y)), (path.name, q, stream)
