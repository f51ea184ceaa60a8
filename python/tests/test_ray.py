"""`dataformats.ray` on a real Ray cluster on loopback (a head node and two
worker nodes of one CPU each, started and stopped by the test; see
ray_cluster.py): a dataset of 20 files in all six formats read with every
record exactly once and every value as the local read gives it, and six of
them (one per format) by s3:// URL from moto's server on loopback; 20 CTF files
converted to CBF and 20 tars to TBL v2 across the cluster, byte-identical to
the local CLI's outputs.

`DATAFORMATS_RAY_SCALE=N` (set by `cargo xtask scale`) multiplies the number of
files converted.
"""

import io
import math
import os
import random
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pyarrow.ipc
import pytest
import ray_cluster

import dataformats
import dataformats.ray as dfray

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("DATAFORMATS_BIN", ROOT / "target" / "debug" / "dataformats"))
VECTORS = Path(os.environ.get("DATAFORMATS_VECTORS", ROOT.parent / "shared" / "vectors"))
SCALE = int(os.environ.get("DATAFORMATS_RAY_SCALE", "1"))

READ = [
    "idv/mlnet15_scalars.idv",
    "idv/mlnet15_vectors.idv",
    "idv/mlnet15_large_default.idv",
    "idv/mlnet15_scalars_nocomp_rpb5.idv",
    "mldf/int_basic.mldf",
    "mldf/float_basic.mldf",
    "mldf/bytes_varied.mldf",
    "mldf/ndarray_f32_2d.mldf",
    "cntk/cntkrepo_10x10_dense.bin",
    "cntk/cntkrepo_5x10_and_5x5_jagged.bin",
    "cntk/cntkrepo_duplicate_inputs.bin",
    "tbl2/base_lz4.tbl",
    "tbl2/many200_lz4.tbl",
    "tbl2/mixed_none.tbl",
    "ffcv/ffcv_basic.beton",
    "ffcv/ffcv_images.beton",
    "ffcv/ffcv_scalars_only.beton",
    "bloscpack/f4_bitshuffle_nelems_not_mult8.blp",
    "bloscpack/i4_meta_uncompressed_sha1.blp",
    "bloscpack/f8_md5_zlib_byte.blp",
]


# Read by s3:// URL from moto's server on loopback: one file of each format.
READ_S3 = [
    "idv/mlnet15_vectors.idv",
    "mldf/bytes_varied.mldf",
    "cntk/cntkrepo_5x10_and_5x5_jagged.bin",
    "tbl2/many200_lz4.tbl",
    "ffcv/ffcv_images.beton",
    "bloscpack/f8_md5_zlib_byte.blp",
]


def deep_eq(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(deep_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(deep_eq(a[k], b[k]) for k in a)
    return a == b


def make_ctf(dir: Path, n: int):
    r = random.Random(7)
    out = []
    for k in range(n):
        p = dir / f"part{k:03d}.ctf"
        lines = []
        for s in range(r.randrange(5, 40)):
            for _ in range(r.randrange(1, 4)):
                x = " ".join(f"{r.uniform(-9, 9):.4f}" for _ in range(3))
                lines.append(f"{s} |x {x} |y {r.randrange(2)}")
        p.write_text("\n".join(lines) + "\n")
        out.append(p)
    return out


def make_tars(dir: Path, n: int):
    r = random.Random(11)
    out = []
    for k in range(n):
        p = dir / f"shard{k:03d}.tar"
        with tarfile.open(p, "w") as t:
            for i in range(r.randrange(3, 12)):
                for ext, data in (("jpg", r.randbytes(r.randrange(20, 400))), ("cls", str(i % 3).encode())):
                    ti = tarfile.TarInfo(f"{k:03d}_{i:05d}.{ext}")
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
        out.append(p)
    return out


def start_job(work: Path):
    """Makes the job's inputs in `work` and starts it; returns what the
    `job` fixture gives the tests, the running job in place of its result."""
    (work / "ctf").mkdir()
    (work / "tar").mkdir()
    ctf = make_ctf(work / "ctf", 20 * SCALE)
    tars = make_tars(work / "tar", 20 * SCALE)
    spec = {
        "workdir": str(work),
        "workers": 2,
        "blocks": 40,
        "read": [str(VECTORS / p) for p in READ],
        "s3_upload": {p: str(VECTORS / p) for p in READ_S3},
        "convert": {
            "ctf": {
                "inputs": [str(p) for p in ctf],
                "output_dir": str(work / "cbf"),
                "to": "cntk",
                "options": {"stream": ["x:dense:3", "y:dense:1"]},
            },
            "tar": {"inputs": [str(p) for p in tars], "output_dir": str(work / "tbl"), "to": "tbl2"},
        },
    }
    return work, ray_cluster.start_job(spec, work), ctf, tars


# The job started by conftest.py when the tests were collected, if it was.
EARLY = None


def start_job_early():
    """Starts the job in a folder of its own before the first test runs: the
    cluster boots (about a minute) while the tests of other files run."""
    global EARLY
    EARLY = start_job(Path(tempfile.mkdtemp(prefix="dataformats-ray-")))


def stop_job_early():
    """Stops the job started early if no test took it."""
    global EARLY
    if EARLY is not None:
        work, running, _, _ = EARLY
        EARLY = None
        running.stop()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    global EARLY
    early, EARLY = EARLY, None
    work, running, ctf, tars = early or start_job(tmp_path_factory.mktemp("ray"))
    try:
        yield work, running.result(), ctf, tars
    finally:
        running.stop()
        if early:
            shutil.rmtree(work, ignore_errors=True)


def test_the_cluster_has_two_workers(job):
    _, result, _, _ = job
    assert result["nodes"] == 3
    assert result["cpus"] == 2


def test_read_gives_every_record_once_with_its_values(job):
    work, result, _, _ = job
    assert {p.split("/")[0] for p in READ} == {"idv", "mldf", "cntk", "tbl2", "ffcv", "bloscpack"}
    check_read(work / "read.arrows", {str(VECTORS / rel): rel for rel in READ}, result["read_rows"])


def test_read_of_s3_urls_gives_every_record_once_with_its_values(job):
    # The same from moto's S3 server on loopback, read by the workers
    # through their own clients, each task fetching its own ranges.
    work, result, _, _ = job
    assert {p.split("/")[0] for p in READ_S3} == {"idv", "mldf", "cntk", "tbl2", "ffcv", "bloscpack"}
    check_read(work / "read_urls.arrows", {f"s3://vectors/{rel}": rel for rel in READ_S3}, result["read_urls_rows"])
    assert result["s3_bytes"] > 0


def check_read(arrows: Path, sources: dict, rows: int):
    """Every record of every file (`sources`: the name the read was given,
    the vector) once in `arrows`, with the local read's values."""
    got = pa.ipc.open_stream(str(arrows)).read_all()
    total = 0
    for path, rel in sources.items():
        local = dataformats.open(str(VECTORS / rel)).to_arrow()
        total += local.num_rows
        mask = pa.compute.equal(got[dfray.PATH_COLUMN], path)
        mine = got.filter(mask).sort_by(dfray.RECORD_COLUMN)
        assert mine[dfray.RECORD_COLUMN].to_pylist() == list(range(local.num_rows)), rel
        for name in local.column_names:
            want = local[name]
            have = mine[name]
            if have.type != want.type:
                have = have.cast(want.type)
            assert deep_eq(have.to_pylist(), want.to_pylist()), f"{rel}: column {name}"
        # Columns the file does not have are null in its records.
        for name in set(got.column_names) - set(local.column_names) - {dfray.PATH_COLUMN, dfray.RECORD_COLUMN}:
            assert mine[name].null_count == mine.num_rows, f"{rel}: {name}"
    assert got.num_rows == total == rows


def local_cli(src: Path, dst: Path, *args):
    r = subprocess.run([str(BIN), "convert", str(src), str(dst), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_ctf_to_cbf_on_the_cluster_equals_the_local_cli(job, tmp_path):
    work, result, ctf, _ = job
    s = result["convert_ctf"]
    assert s["converted"] == len(ctf) and s["failed"] == 0
    assert [f["input"] for f in s["files"]] == [str(p) for p in ctf]
    for p, f in zip(ctf, s["files"]):
        mine = tmp_path / (p.stem + ".bin")
        local_cli(p, mine, "--stream", "x:dense:3", "--stream", "y:dense:1")
        assert Path(f["output"]) == work / "cbf" / (p.stem + ".bin")
        assert Path(f["output"]).read_bytes() == mine.read_bytes(), p.name
    assert s["records"] == sum(dataformats.open(f["output"]).num_rows for f in s["files"])
    # Spread over both worker nodes.
    assert len({f["node"] for f in s["files"]}) == 2


def test_tar_to_tbl2_on_the_cluster_equals_the_local_cli(job, tmp_path):
    work, result, _, tars = job
    s = result["convert_tar"]
    assert s["converted"] == len(tars) and s["failed"] == 0
    for p, f in zip(tars, s["files"]):
        mine = tmp_path / (p.stem + ".tbl")
        local_cli(p, mine)
        assert Path(f["output"]).read_bytes() == mine.read_bytes(), p.name
    assert s["records"] > 0


def test_convert_refuses_clashing_outputs_and_unknown_targets(tmp_path):
    # Checked before any task starts: no cluster needed.
    with pytest.raises(ValueError, match="both be written"):
        dfray.convert([tmp_path / "a" / "x.ctf", tmp_path / "b" / "x.ctf"], tmp_path / "out", to="cntk")
    with pytest.raises(ValueError, match="unknown target"):
        dfray.convert([tmp_path / "x.ctf"], tmp_path / "out", to="nope")


def test_read_refuses_missing_columns_and_clashing_types(tmp_path):
    idv = VECTORS / "idv" / "mlnet15_large_default.idv"
    with pytest.raises(ValueError, match="no column 'nope'"):
        dfray.read([idv], columns=["nope"])
    with pytest.raises(ValueError, match="no files"):
        dfray.read([])
    # The same column as text in one file and as a number in another.
    with pytest.raises(ValueError, match="'v'"):
        dfray._unify([("a", pa.schema([("v", pa.string())])), ("b", pa.schema([("v", pa.float64())]))])
    # Numbers of different widths merge; columns of one file become nullable.
    u = dfray._unify(
        [("a", pa.schema([pa.field("v", pa.int32(), False)])), ("b", pa.schema([("v", pa.int64()), ("w", pa.bool_())]))]
    )
    assert u == pa.schema([("v", pa.int64()), ("w", pa.bool_())])
    # Vectors of different lengths become variable lists of their element type.
    u = dfray._unify(
        [("a", pa.schema([("f", pa.list_(pa.float32(), 5))])), ("b", pa.schema([("f", pa.list_(pa.float32(), 2))]))]
    )
    assert u.field("f").type == pa.list_(pa.float32())
