"""Files in object storage: an S3-compatible server on loopback (moto's,
from PyPI, started and stopped here) holds the shared vectors and large
generated files; the `dataformats` package and CLI read them by URL.

- every valid vector opens from `s3://` with the same Arrow table as the
  local file, and `dataformats validate s3://...` says what it says locally;
  every invalid vector is refused from `s3://` as it is locally; BLZ/bcolz
  directories the same, named by their prefix;
- one column of 1% of the records of a 100 MB IDV, MLDF and TBL v2 file
  fetches less than 5% of the file's bytes (counted by the proxy);
- answers dropped, cut off or short are retried or reported naming the
  byte range, never taken as values, and nothing hangs;
- conversions write `s3://` outputs that are byte-identical to local ones
  (one request or a multipart upload), and read `s3://` inputs of every
  kind (typed formats by ranges, CTF/tar/CSV by a download first).
"""

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

dataformats = pytest.importorskip("dataformats")
pytest.importorskip("moto")
pytest.importorskip("boto3")

from s3util import s3_server, serve_files  # noqa: E402
from test_arrow_export import BIN, VECTORS, deep_eq, vectors  # noqa: E402

FILES = [(f, p) for f, p, _ in vectors(valid=True) if p.is_file()]
INVALID = [(f, p) for f, p, _ in vectors(valid=False) if p.is_file()]
# BLZ/bcolz directories: each file an object under the directory's prefix.
DIRS = [(f, p) for f, p, _ in vectors(valid=True) if p.is_dir()]
INVALID_DIRS = [(f, p) for f, p, _ in vectors(valid=False) if p.is_dir()]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")) as s:
        s.bucket("vectors")
        s.bucket("big")
        s.bucket("out")
        for _, p in FILES + INVALID:
            s.put("vectors", str(p.relative_to(VECTORS)), p)
        for _, d in DIRS + INVALID_DIRS:
            for f in sorted(d.rglob("*")):
                if f.is_file():
                    s.put("vectors", str(f.relative_to(VECTORS)), f)
        yield s


def url_of(p: Path) -> str:
    return f"s3://vectors/{p.relative_to(VECTORS)}"


def cli(*args, env=None, check=True):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert r.returncode == 0, f"dataformats {' '.join(map(str, args))}: {r.stderr}"
    return r


def ipc(t: pa.Table) -> bytes:
    """`t` as Arrow IPC stream bytes: equal bytes, equal tables (NaN
    included, which Table.equals never finds equal)."""
    t = t.combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN (which Table.equals never finds)."""
    if not a.schema.equals(b.schema, check_metadata=True) or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.columns, b.columns):
        if not (x.equals(y) or deep_eq(x.to_pylist(), y.to_pylist())):
            return False
    return True


def without_paths(v):
    """A JSON description with the file's own name left out."""
    if isinstance(v, dict):
        return {k: without_paths(x) for k, x in v.items() if k not in ("path", "file")}
    if isinstance(v, list):
        return [without_paths(x) for x in v]
    return v


@pytest.mark.parametrize("fmt,path", FILES, ids=[f"{f}/{p.name}" for f, p in FILES])
def test_every_valid_vector_reads_the_same_from_s3(s3, fmt, path):
    url = url_of(path)
    local = dataformats.open(path)
    remote = dataformats.open(url)
    assert remote.format == local.format == fmt
    assert dataformats.detect(url) == fmt
    assert remote.num_rows == local.num_rows
    assert remote.schema.equals(local.schema, check_metadata=True)
    assert same(remote.to_arrow(), local.to_arrow()), f"{url}: the table differs from the local file's"
    remote.validate()

    want = without_paths(json.loads(cli("--json", "validate", path).stdout))
    got = without_paths(json.loads(cli("--json", "validate", url).stdout))
    assert got == want


@pytest.mark.parametrize("fmt,path", INVALID, ids=[f"{f}/{p.name}" for f, p in INVALID])
def test_every_invalid_vector_is_refused_from_s3_as_locally(s3, fmt, path):
    local = cli("validate", path, check=False)
    remote = cli("validate", url_of(path), check=False)
    assert local.returncode != 0
    assert remote.returncode == local.returncode, remote.stderr
    # The same reason (the message names the local path or the URL).
    assert remote.stderr.replace(url_of(path), "X") == local.stderr.replace(str(path), "X")


def test_there_are_blz_directories():
    assert len(DIRS) >= 5 and len(INVALID_DIRS) >= 1


@pytest.mark.parametrize("fmt,path", DIRS, ids=[f"{f}/{p.name}" for f, p in DIRS])
def test_every_blz_directory_reads_the_same_from_an_s3_prefix(s3, fmt, path, tmp_path):
    url = url_of(path)
    local = dataformats.open(path)
    remote = dataformats.open(url)
    assert dataformats.detect(url) == "blz" == remote.format
    assert remote.num_rows == local.num_rows
    assert remote.schema.equals(local.schema, check_metadata=True)
    assert same(remote.to_arrow(), local.to_arrow()), f"{url}: the table differs from the local directory's"
    remote.validate()
    for cmd in ("validate", "inspect"):
        want = without_paths(json.loads(cli("--json", cmd, path).stdout))
        got = without_paths(json.loads(cli("--json", cmd, url).stdout))
        assert got == want, cmd
    # A conversion reads the prefix as it reads the directory.
    cli("convert", path, tmp_path / "local.parquet")
    cli("convert", url, tmp_path / "remote.parquet")
    assert (tmp_path / "remote.parquet").read_bytes() == (tmp_path / "local.parquet").read_bytes()


@pytest.mark.parametrize("fmt,path", INVALID_DIRS, ids=[f"{f}/{p.name}" for f, p in INVALID_DIRS])
def test_every_invalid_blz_directory_is_refused_from_s3_as_locally(s3, fmt, path):
    local = cli("validate", path, check=False)
    remote = cli("validate", url_of(path), check=False)
    assert local.returncode != 0
    assert remote.returncode == local.returncode, remote.stderr
    assert remote.stderr.replace(url_of(path), "X") == local.stderr.replace(str(path), "X")


def test_a_prefix_without_a_blz_directory_is_refused(s3):
    r = cli("validate", "s3://vectors/idv", check=False)
    assert r.returncode == 1 and "s3://vectors/idv" in r.stderr
    with pytest.raises(dataformats.FormatError):
        dataformats.open("s3://vectors/no/such/prefix")


def test_files_behind_plain_http_read_the_same():
    # The http(s):// store: HEAD for the length, then ranged GETs.
    server = serve_files(VECTORS)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        for fmt in ("idv", "mldf", "tbl2", "cntk", "bloscpack", "ffcv"):
            path = largest(fmt)
            url = f"{base}/{path.relative_to(VECTORS)}"
            assert same(dataformats.open(url).to_arrow(), dataformats.open(path).to_arrow()), url
        with pytest.raises(dataformats.FormatError):
            dataformats.open(f"{base}/no/such.idv")
    finally:
        server.shutdown()


def test_a_missing_object_is_a_clean_error(s3):
    with pytest.raises(dataformats.FormatError) as e:
        dataformats.open("s3://vectors/no/such.idv")
    assert "no/such.idv" in str(e.value)
    r = cli("validate", "s3://vectors/no/such.idv", check=False)
    assert r.returncode == 1 and "no/such.idv" in r.stderr


# ---- large files: only the bytes needed --------------------------------------------------

ROWS = 1_600_000  # 8 float64 columns: 102 MB of values


def float_columns(d: Path, rows: int, seed: int) -> Path:
    """A Parquet file in `d` of 8 float64 columns of `rows` random values.
    Not nullable: an MLDF sample of 8 nullable float64 fields takes 153
    bytes against 89, and moto answers each ranged GET by reading the whole
    object, so a scan costs (GETs x object size)."""
    rng = np.random.default_rng(seed)
    schema = pa.schema([pa.field(f"c{i}", pa.float64(), nullable=False) for i in range(8)])
    table = pa.table({f"c{i}": rng.standard_normal(rows) for i in range(8)}, schema=schema)
    pq.write_table(table, d / "t.parquet", compression="none")
    return d / "t.parquet"


@pytest.fixture(scope="module")
def big(s3, tmp_path_factory):
    """A 100 MB IDV, MLDF and TBL v2 file, local and in the `big` bucket."""
    d = tmp_path_factory.mktemp("big")
    parquet = float_columns(d, ROWS, 7)
    out = {}
    for ext in ("idv", "mldf"):
        p = d / f"t.{ext}"
        opts = {"no_compress": True} if ext == "idv" else {}
        dataformats.convert(parquet, p, **opts)
        out[ext] = p
    # TBL v2 from a tar of 10,000 samples of 10 KB.
    tar = d / "t.tar"
    rng = np.random.default_rng(8)
    with tarfile.open(tar, "w") as t:
        for i in range(10_000):
            data = rng.bytes(10_240)
            info = tarfile.TarInfo(f"{i:05d}.jpg")
            info.size = len(data)
            import io

            t.addfile(info, io.BytesIO(data))
    out["tbl"] = d / "t.tbl"
    dataformats.convert(tar, out["tbl"])
    for ext, p in out.items():
        assert p.stat().st_size > 90e6, (ext, p.stat().st_size)
        s3.put("big", p.name, p)
    return out


@pytest.mark.parametrize("ext", ["idv", "mldf", "tbl"])
def test_one_column_of_one_percent_fetches_under_five_percent(s3, big, ext):
    path = big[ext]
    size = path.stat().st_size
    local = dataformats.open(path)
    n = local.num_rows
    column = local.schema.names[-1] if ext != "tbl" else "data"
    assert column in local.schema.names
    start = n // 2
    rows = (start, start + n // 100)
    want = local.to_arrow(columns=[column], rows=rows)

    s3.faults.reset_counts()
    remote = dataformats.open(f"s3://big/{path.name}")
    got = remote.to_arrow(columns=[column], rows=rows)
    fetched, requests = s3.faults.bytes, s3.faults.requests
    assert same(got, want)
    assert requests > 0
    assert fetched < 0.05 * size, f"{ext}: fetched {fetched} of {size} bytes in {requests} requests"


# ---- faults: retried or reported, never a value, never a hang ----------------------------

READ = textwrap.dedent(
    """
    import sys, dataformats
    import pyarrow as pa
    try:
        t = dataformats.open(sys.argv[1]).to_arrow()
    except dataformats.FormatError as e:
        print("error", e)
    else:
        with pa.OSFile(sys.argv[2], "wb") as f, pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
        print("table")
    """
)


def read_in_child(url, tmp_path):
    """Reads `url` in a child process (so that a hang fails the test
    instead of stopping it): ("table", the table) or ("error", message)."""
    out = tmp_path / "read.arrow"
    r = subprocess.run(
        [sys.executable, "-c", READ, url, str(out)], capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert r.returncode == 0, r.stderr
    kind, _, rest = r.stdout.strip().partition(" ")
    if kind == "table":
        return kind, pa.ipc.open_file(str(out)).read_all()
    return kind, rest


def largest(fmt):
    return max((p for f, p in FILES if f == fmt), key=lambda p: p.stat().st_size)


def read_with_faults(s3, url, mode, every, tmp_path):
    """Reads `url` in a child while the proxy hits the first GET and every
    `every`-th after it with `mode`: (kind, table or message, GETs hit)."""
    try:
        s3.faults.set(mode, every=every)
        kind, got = read_in_child(url, tmp_path)
        return kind, got, s3.faults.hit
    finally:
        s3.faults.set(None)


@pytest.mark.parametrize("mode", ["drop", "truncate", "short"])
@pytest.mark.parametrize("fmt", ["idv", "mldf", "tbl2", "cntk", "bloscpack"])
def test_some_faulty_answers_are_retried(s3, fmt, mode, tmp_path):
    # Every second answer fails: the retries give the local table exactly.
    path = largest(fmt)
    kind, got, hit = read_with_faults(s3, url_of(path), mode, 2, tmp_path)
    assert hit > 0
    assert kind == "table", got
    assert same(got, dataformats.open(path).to_arrow())


# 8 float64 columns of 540,000 rows: an MLDF of about 48 MB. A scan of it
# reads through read-ahead windows that double from 256 KiB to the largest
# (16 MiB, reached after 32 MiB), each split into requests of 4 MiB; moto
# reads the whole object for every ranged GET, so the three fault scans of
# the 142 MB MLDF of `big` took 130 s of a CI run.
SCAN_ROWS = 540_000
PART = 4 << 20  # RemoteOptions::default().part_size


@pytest.fixture(scope="module")
def scan_file(s3, tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    p = d / "scan.mldf"
    dataformats.convert(float_columns(d, SCAN_ROWS, 11), p)
    assert p.stat().st_size > 40e6, p.stat().st_size
    s3.put("big", p.name, p)
    return p


def span(header: str) -> int:
    """The length of a `bytes=a-b` Range header's range (0 for any other
    form)."""
    a, _, b = header.removeprefix("bytes=").partition("-")
    return int(b) - int(a) + 1 if a.isdigit() and b.isdigit() else 0


@pytest.mark.parametrize("mode", ["drop", "truncate", "short"])
def test_faults_in_a_large_scan_are_retried(s3, scan_file, mode, tmp_path):
    # Read-ahead windows and their split parts, one GET in three failing.
    s3.faults.reset_counts()
    kind, got, hit = read_with_faults(s3, f"s3://big/{scan_file.name}", mode, 3, tmp_path)
    assert hit > 0
    assert kind == "table", got
    assert same(got, dataformats.open(scan_file).to_arrow())
    # The scan went as far as windows split into whole parts.
    assert sum(span(r) == PART for r in s3.faults.ranges) >= 4, s3.faults.ranges


@pytest.mark.parametrize("mode", ["drop", "truncate", "short"])
def test_answers_that_always_fail_are_reported_naming_the_range(s3, mode, tmp_path):
    # The HEAD passes, every GET fails.
    kind, rest, _ = read_with_faults(s3, url_of(largest("mldf")), mode, 1, tmp_path)
    assert kind == "error", rest
    assert "bytes" in rest and ".." in rest, rest


# ---- writing to and converting from object storage --------------------------------------


def test_outputs_uploaded_are_byte_identical(s3, big, tmp_path):
    # A small output (one request) and a large one (a multipart upload).
    small = largest("idv")
    for src, name in [(small, "small.mldf"), (big["mldf"], "large.mldf")]:
        local = tmp_path / name
        dataformats.convert(src, local)
        report = dataformats.convert(src, f"s3://out/{name}")
        assert report["records"] == dataformats.open(local).num_rows
        assert s3.get("out", name) == local.read_bytes()
    # The CLI, from a URL to a URL.
    cli("convert", f"s3://big/{big['idv'].name}", "s3://out/again.parquet", "--limit", "1000")
    cli("convert", big["idv"], tmp_path / "again.parquet", "--limit", "1000")
    assert s3.get("out", "again.parquet") == (tmp_path / "again.parquet").read_bytes()


def test_a_failed_conversion_leaves_no_object(s3):
    r = cli("convert", url_of(INVALID[0][1]), "s3://out/failed.mldf", check=False)
    assert r.returncode != 0
    assert "failed.mldf" not in s3.keys("out")


def test_stream_inputs_are_downloaded_then_converted(s3, tmp_path):
    # A tar (TurboLoader's converter path) and a CSV table.
    tar = tmp_path / "s.tar"
    with tarfile.open(tar, "w") as t:
        for i in range(20):
            p = tmp_path / f"{i:03d}.jpg"
            p.write_bytes(bytes([i]) * (100 + i))
            t.add(p, arcname=p.name)
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n2,y\n")
    for src, out in [(tar, "s.tbl"), (csv, "t.mldf")]:
        url = s3.put("out", src.name, src)
        dataformats.convert(url, tmp_path / ("remote-" + out))
        dataformats.convert(src, tmp_path / ("local-" + out))
        assert (tmp_path / ("remote-" + out)).read_bytes() == (tmp_path / ("local-" + out)).read_bytes()
