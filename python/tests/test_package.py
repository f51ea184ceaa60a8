"""The `dataformats` Python package (crates/python), installed from its
wheel: every shared vector opens with the CLI's record count and schema and
the same values as the CLI's Arrow export; every invalid vector raises
FormatError; NumPy views of uncompressed columns share the file's memory;
the Loader reads every record exactly once per epoch across ranks and
workers, in orders that are reproducible and change between epochs."""

import json
import sys
import types
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

dataformats = pytest.importorskip("dataformats")

from test_arrow_export import (  # noqa: E402
    VECTORS,
    VECTORS_LIST,
    check_values,
    convert,
    deep_eq,
    run,
    storage,
    vectors,
)


INVALID = [(f, p) for f, p, _ in vectors(valid=False)]


@pytest.mark.parametrize("fmt,path,side", VECTORS_LIST, ids=[f"{f}/{p.name}" for f, p, _ in VECTORS_LIST])
def test_every_vector_opens_with_the_clis_count_schema_and_values(fmt, path, side, tmp_path):
    ds = dataformats.open(path)
    assert ds.format == fmt
    assert dataformats.detect(path) == fmt
    count = int(run("count", path).strip())
    assert ds.num_rows == count == len(ds)

    want = json.loads(run("schema", path, "--json"))["fields"]
    got = ds.schema
    assert [f.name for f in got] == [f["name"] for f in want]
    assert [str(storage(f.type)) for f in got] == [f["type"] for f in want]
    assert [f.nullable for f in got] == [f["nullable"] for f in want]
    for f, g in zip(got, want):
        md = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        want_md = dict(g["metadata"])
        if isinstance(f.type, pa.BaseExtensionType):
            # pyarrow turns a known extension (arrow.json, the fixed-shape
            # tensor) into the field's type.
            assert f.type.extension_name == want_md.pop("ARROW:extension:name"), f.name
            want_md.pop("ARROW:extension:metadata", None)
        assert md == want_md, f.name

    table = ds.to_arrow()
    assert table.num_rows == count
    assert table.schema == got
    # The same values as the CLI's Arrow IPC export.
    out = tmp_path / "x.arrow"
    convert(path, out)
    with pa.memory_map(str(out)) as src:
        ipc = pa.ipc.open_file(src).read_all()
    for name in ipc.column_names:
        if ipc.column_names.count(name) == 1:
            assert deep_eq(table.column(name).to_pylist(), ipc.column(name).to_pylist()), name
    check_values(fmt, path, side, table)

    # Batches, projection, the PyCapsule stream and single records agree.
    if count and got:
        # Batches of 7 rows (fewer, larger ones for big vectors).
        batches = list(ds.iter_batches(batch_size=max(7, count // 500)))
        assert sum(b.num_rows for b in batches) == count
        assert all(b.schema == got for b in batches)
        assert _same(pa.Table.from_batches(batches, got), table)
        assert _same(pa.table(ds), table)
        first = got[0].name
        assert _same(ds.to_arrow(columns=[first]), table.select([0]))
        tail = ds.to_arrow(rows=(count - 1, count))
        assert tail.num_rows == 1
        rec = ds[-1]
        assert list(rec) == [f.name for f in got]
        assert deep_eq(_plain(rec[first]), tail.column(0).to_pylist()[0])


def _same(a, b):
    """Same schema and values (NaN equal to NaN, which Table.equals denies)."""
    return a.schema == b.schema and deep_eq(a.to_pylist(), b.to_pylist())


def _plain(v):
    """A record's value in to_pylist's terms (NumPy arrays as lists)."""
    if isinstance(v, np.ndarray):
        return v.reshape(-1).tolist() if v.ndim > 0 else v.item()
    return v


def test_the_invalid_vectors_are_there():
    import os

    if os.environ.get("CI"):
        assert len(INVALID) > 50, f"only {len(INVALID)} invalid vectors under {VECTORS}"


@pytest.mark.parametrize("fmt,path", INVALID, ids=[f"{f}/{p.name}" for f, p in INVALID])
def test_every_invalid_vector_raises_format_error(fmt, path):
    with pytest.raises(dataformats.FormatError) as e:
        ds = dataformats.open(path)
        ds.validate()
        for _ in ds.iter_batches(batch_size=1024):
            pass
    assert isinstance(e.value.kind, str) and e.value.kind
    assert e.value.offset is None or isinstance(e.value.offset, int)


def test_errors_name_kind_offset_and_format(tmp_path):
    p = tmp_path / "x.idv"
    p.write_bytes(b"CML\0DVB\0" + b"\0" * 8)
    with pytest.raises(dataformats.FormatError) as e:
        dataformats.open(p)
    assert e.value.format == "idv" and e.value.kind == "truncated"
    with pytest.raises(dataformats.FormatError) as e:
        dataformats.open(tmp_path / "missing.idv")
    assert e.value.kind == "io"
    ds = dataformats.open(_table_file(tmp_path, 10, "mldf"))
    with pytest.raises(dataformats.FormatError) as e:
        ds.to_arrow(columns=["nope"])
    assert e.value.kind == "invalid_argument" and "nope" in str(e.value)
    with pytest.raises(IndexError):
        ds[10]


def _table_file(tmp_path, n, target, **options):
    """A file of `target` with n records: id (int64) and x (float32[4]),
    written by `dataformats.convert` from Parquet."""
    pq_path = tmp_path / f"src-{n}.parquet"
    if not pq_path.exists():
        ids = pa.array(range(n), pa.int64())
        x = pa.FixedSizeListArray.from_arrays(
            pa.array(np.arange(4 * n, dtype=np.float32)), 4
        )
        pq.write_table(pa.table({"id": ids, "x": x}), pq_path, compression="zstd")
    ext = {"mldf": "mldf", "idv": "idv", "cntk": "bin", "tbl": "tbl", "blp": "blp"}[target]
    out = tmp_path / f"t-{n}.{ext}"
    if not out.exists():
        report = dataformats.convert(pq_path, out, **options)
        assert report["records"] == n, report
    return out


@pytest.mark.parametrize("target", ["mldf", "idv", "blp"])
def test_to_arrow_on_threads_gives_the_records_in_order(tmp_path, target):
    n = 300_000
    ds = dataformats.open(_table_file(tmp_path, n, target))
    one = ds.to_arrow(threads=1)
    assert one.column("id").to_pylist() == list(range(n))
    for threads in (2, None):
        t = ds.to_arrow(threads=threads)
        assert t.equals(one), threads
    # A range and a column, on several threads.
    part = ds.to_arrow(columns=["x"], rows=(12_345, 250_001), threads=2)
    assert part.equals(one.select(["x"]).slice(12_345, 250_001 - 12_345))
    with pytest.raises(ValueError):
        ds.to_arrow(threads=0)
    # Batches decoded ahead of the consumer: the same records, in order,
    # through iter_batches and the C stream, and an iterator dropped early
    # leaves nothing behind that blocks.
    batches = list(ds.iter_batches(batch_size=10_000))
    assert [b.num_rows for b in batches] == [10_000] * 30
    assert pa.Table.from_batches(batches).equals(one)
    assert pa.table(ds).equals(one)
    it = ds.iter_batches(batch_size=1_000, columns=["id"])
    assert next(it).column(0).to_pylist() == list(range(1_000))
    del it


@pytest.mark.parametrize("target", ["mldf", "idv", "blp"])
def test_column_numpy_on_threads_gives_the_values_in_order(tmp_path, target):
    n = 300_000
    ds = dataformats.open(_table_file(tmp_path, n, target))
    ids = np.arange(n, dtype=np.int64)
    xs = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
    for threads in (1, 2, None):
        got = ds.column_numpy("id", threads=threads)
        assert got.dtype == np.int64 and np.array_equal(got, ids), threads
        got = ds.column_numpy("x", threads=threads)
        assert got.dtype == np.float32 and got.shape == (n, 4), threads
        assert np.array_equal(got, xs), threads
    with pytest.raises(ValueError):
        ds.column_numpy("x", threads=0)
    # Far more threads than cores: as many as help are started.
    assert np.array_equal(ds.column_numpy("x", threads=100_000), xs)
    assert ds.to_arrow(threads=100_000).column("id").to_pylist() == list(range(n))


def _forked_read(path, q):
    """In a forked child: the file read again on two threads, as sums."""
    d = dataformats.open(path)
    t = d.to_arrow(threads=2)
    x = d.column_numpy("x", threads=2)
    q.put((t.num_rows, int(np.asarray(t.column("id")).sum()), float(x.sum(dtype=np.float64))))


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_children_forked_after_reads_on_threads_read_the_same(tmp_path):
    # A fork taken while the parent holds memory its worker threads
    # allocated (from both of the module's allocators), as a DataLoader's
    # workers are forked after the dataset was opened and read: the
    # children read on threads of their own and get the same values.
    import multiprocessing

    n = 300_000
    path = _table_file(tmp_path, n, "blp")
    ds = dataformats.open(path)
    held = ds.to_arrow(threads=2)
    xs = ds.column_numpy("x", threads=2)
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    children = [ctx.Process(target=_forked_read, args=(str(path), q)) for _ in range(2)]
    for c in children:
        c.start()
    got = [q.get(timeout=120) for _ in children]
    for c in children:
        c.join(timeout=120)
    assert [c.exitcode for c in children] == [0, 0]
    want = (n, n * (n - 1) // 2, float(np.arange(4 * n, dtype=np.float64).sum()))
    assert got == [want, want]
    # What the parent held through the fork is unchanged.
    assert held.column("id").to_pylist() == list(range(n))
    assert float(xs.sum(dtype=np.float64)) == want[2]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/statm")
def test_tables_read_again_and_again_give_their_memory_back(tmp_path):
    # Each table's buffers are freed when pyarrow drops it (and reused by
    # the next): thirty reads of a 7 MB table keep the process within a few
    # tables of where it started.
    def resident():
        return int(Path("/proc/self/statm").read_text().split()[1]) * 4096

    ds = dataformats.open(_table_file(tmp_path, 300_000, "blp"))
    size = ds.to_arrow().nbytes
    for _ in range(3):
        ds.to_arrow()
    before = resident()
    for _ in range(30):
        t = ds.to_arrow()
        assert t.num_rows == 300_000
        del t
    assert resident() - before < 8 * size, (resident() - before, size)


def test_a_damaged_block_read_ahead_raises_where_it_is(tmp_path):
    path = _table_file(tmp_path, 300_000, "idv")
    data = bytearray(path.read_bytes())
    # A byte in the middle of the compressed blocks.
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.idv"
    bad.write_bytes(bytes(data))
    ds = dataformats.open(bad)
    seen = 0
    with pytest.raises(dataformats.FormatError):
        for b in ds.iter_batches(batch_size=5_000):
            seen += b.num_rows
    assert 0 < seen < 300_000
    # The same block read as one of a column's pieces on a thread.
    for threads in (1, 2):
        with pytest.raises(dataformats.FormatError):
            ds.column_numpy("x", threads=threads)


def test_convert_takes_the_clis_options(tmp_path):
    src = _table_file(tmp_path, 100, "mldf")
    out = tmp_path / "part.parquet"
    r = dataformats.convert(src, out, columns=["id"], range=(10, 30), limit=5)
    assert r["records"] == 5 and out.exists()
    assert pq.read_table(out).column("id").to_pylist() == [10, 11, 12, 13, 14]
    # An option the command line does not know is refused, nothing written.
    bad = tmp_path / "bad.parquet"
    with pytest.raises(dataformats.FormatError) as e:
        dataformats.convert(src, bad, no_such_option=3)
    assert e.value.kind == "usage" and not bad.exists()
    # Bloscpack settings, as on the command line.
    blp = tmp_path / "ids.blp"
    dataformats.convert(src, blp, columns=["id"], clevel=0, codec="lz4", checksum="sha256")
    assert dataformats.open(blp).to_arrow().column(0).to_pylist() == list(range(100))
    # MLDF settings: values as zstd frames, a CRC-32, 64 KiB pages (the
    # header's flags at byte 13, page size at byte 29), the same records.
    z = tmp_path / "z.mldf"
    dataformats.convert(src, z, mldf_compress=True, mldf_checksum=True, mldf_page_size="64K")
    head = z.read_bytes()[:33]
    assert int.from_bytes(head[13:17], "little") == 1 | 2 | 4
    assert int.from_bytes(head[29:33], "little") == 64 << 10
    assert dataformats.open(z).to_arrow().equals(dataformats.open(src).to_arrow())


def _assert_view(ds, name, want):
    """column_numpy(name) equals `want` and is a view of the file's memory:
    not an owned copy, read-only, and a second call sees the very same
    bytes (a copy would be somewhere else each time)."""
    a = ds.column_numpy(name)
    assert a.shape == want.shape and a.dtype == want.dtype
    assert np.array_equal(a, want)
    assert not a.flags.owndata and not a.flags.writeable
    assert a.ctypes.data == ds.column_numpy(name).ctypes.data


def test_column_numpy_views_the_files_memory(tmp_path):
    n = 5000
    # MLDF NDARRAY values, uncompressed (written from JSON lines with an
    # MLDF schema: no schema-carrier field between the values).
    jl = tmp_path / "x.jsonl"
    jl.write_text("".join(json.dumps({"x": [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]}) + "\n" for i in range(n)))
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({
        "fields": [{"name": "x", "type": "NDARRAY", "dtype": "float32", "shape": [4], "nullable": False}],
        "compressed": False,
    }))
    mldf = tmp_path / "x.mldf"
    dataformats.convert(jl, mldf, schema=schema)
    want = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
    _assert_view(dataformats.open(mldf), "x", want)
    # Converted from Parquet: the file carries the source schema (after
    # every value, in the last record), and x is still one view; id is an
    # INT inside the record rows.
    mldf = _table_file(tmp_path, n, "mldf")
    _assert_view(dataformats.open(mldf), "x", want)
    assert np.array_equal(dataformats.open(mldf).column_numpy("id"), np.arange(n))
    # An IDV scalar column in an uncompressed block.
    idv = _table_file(tmp_path, n, "idv", no_compress=True)
    _assert_view(dataformats.open(idv), "id", np.arange(n, dtype=np.int64))
    # CNTK dense samples of one sequence (a CBF file made by ctf2bin).
    cbf = VECTORS / "cntk" / "cntkrepo_space_separated_f64.bin"
    if cbf.is_file():
        ds = dataformats.open(cbf)
        want = np.asarray(ds.to_arrow(columns=["features2"]).column(0).to_pylist(), dtype=np.float64)
        _assert_view(ds, "features2", want)


def test_column_numpy_of_compressed_values_is_decoded_once(tmp_path):
    path = _table_file(tmp_path, 3000, "idv")  # deflate blocks
    ds = dataformats.open(path)
    a = ds.column_numpy("x")
    assert np.array_equal(a.reshape(-1), np.arange(12000, dtype=np.float32))


def test_convert_reads_parquet_as_pyarrow_writes_it(tmp_path):
    # pyarrow's default Parquet codec is Snappy (Spark's too).
    n = 1000
    src = tmp_path / "snappy.parquet"
    table = pa.table({"id": pa.array(range(n), pa.int64()), "y": pa.array(np.linspace(0, 1, n))})
    pq.write_table(table, src)
    assert pq.ParquetFile(src).metadata.row_group(0).column(0).compression == "SNAPPY"
    out = tmp_path / "snappy.idv"
    assert dataformats.convert(src, out)["records"] == n
    got = dataformats.open(out).to_arrow()
    assert got.column("id").to_pylist() == list(range(n))
    assert np.array_equal(got.column("y").to_numpy(), table.column("y").to_numpy())
    # Codecs left out of the build are refused with a clear error.
    gz = tmp_path / "gzip.parquet"
    pq.write_table(table, gz, compression="gzip")
    with pytest.raises(dataformats.FormatError, match="(?i)gzip|flate"):
        dataformats.convert(gz, tmp_path / "gzip.idv")
    assert not (tmp_path / "gzip.idv").exists()


def _epoch(path, world, workers, epoch, **kw):
    """Every rank's and worker's batches of one epoch: {(rank, worker): [indices]}."""
    out = {}
    for rank in range(world):
        loader = dataformats.Loader(path, rank=rank, world_size=world, with_index=True, **kw)
        loader.set_epoch(epoch)
        for w in range(workers):
            got = []
            with _fake_worker(w, workers):
                for batch in loader:
                    ids = batch["id"]
                    assert np.array_equal(ids, batch["__index__"])
                    assert batch["x"].shape == (len(ids), 4)
                    assert np.array_equal(batch["x"][:, 0], ids.astype(np.float32) * 4)
                    got.extend(ids.tolist())
            assert got == loader.indices(w, workers)
            out[(rank, w)] = got
    return out


class _fake_worker:
    """A stand-in for `torch.utils.data` inside DataLoader worker `w`."""

    def __init__(self, w, n):
        self.w, self.n = w, n

    def __enter__(self):
        info = types.SimpleNamespace(id=self.w, num_workers=self.n)
        mod = types.ModuleType("torch.utils.data")
        mod.get_worker_info = lambda: info if self.n > 1 else None
        self.saved = sys.modules.get("torch.utils.data")
        sys.modules["torch.utils.data"] = mod

    def __exit__(self, *exc):
        if self.saved is None:
            sys.modules.pop("torch.utils.data", None)
        else:
            sys.modules["torch.utils.data"] = self.saved


@pytest.mark.parametrize("world,workers", [(1, 1), (3, 1), (2, 2), (4, 3)])
def test_loader_reads_every_record_once_per_epoch(tmp_path, world, workers):
    path = _table_file(tmp_path, 1003, "mldf")
    e0 = _epoch(path, world, workers, 0, batch_size=64, shuffle=True, seed=7, num_threads=2)
    seen = sorted(i for v in e0.values() for i in v)
    assert seen == list(range(1003))
    # Shards differ by at most one record.
    per_rank = [sum(len(e0[(r, w)]) for w in range(workers)) for r in range(world)]
    assert max(per_rank) - min(per_rank) <= 1
    e1 = _epoch(path, world, workers, 1, batch_size=64, shuffle=True, seed=7)
    assert sorted(i for v in e1.values() for i in v) == list(range(1003))
    assert e0 != e1, "the order must change between epochs"
    assert _epoch(path, world, workers, 0, batch_size=64, shuffle=True, seed=7) == e0
    assert _epoch(path, world, workers, 0, batch_size=64, shuffle=True, seed=8) != e0


def test_loader_drop_last_and_order(tmp_path):
    path = _table_file(tmp_path, 1003, "mldf")
    e = _epoch(path, 4, 1, 0, batch_size=10, shuffle=True, seed=1, drop_last=True)
    for got in e.values():
        assert len(got) == 250  # 1003 // 4 = 250 records, 25 full batches
    flat = [i for v in e.values() for i in v]
    assert len(set(flat)) == len(flat)
    # Without shuffling: the file's order, dealt round-robin over ranks.
    plain = dataformats.Loader(path, batch_size=100, rank=1, world_size=2)
    assert plain.indices() == list(range(1, 1003, 2))
    assert len(plain) == 6
    batches = list(plain)
    assert [len(b["id"]) for b in batches] == [100, 100, 100, 100, 100, 1]


def test_loader_hands_blobs_as_bytes(tmp_path):
    tbl = next((p for f, p, _ in VECTORS_LIST if f == "tbl2" and dataformats.open(p).num_rows > 2), None)
    if tbl is None:
        pytest.skip("no TBL v2 vector")
    ds = dataformats.open(tbl)
    loader = dataformats.Loader(tbl, batch_size=2, shuffle=True, seed=3, with_index=True)
    for batch in loader:
        assert isinstance(batch["data"], list) and all(isinstance(b, bytes) for b in batch["data"])
        for k, i in enumerate(batch["__index__"]):
            assert batch["data"][k] == ds[int(i)]["data"]


def test_loader_is_a_torch_iterable_dataset_when_torch_is_loaded(monkeypatch, tmp_path):
    path = _table_file(tmp_path, 50, "mldf")
    mod = types.ModuleType("torch.utils.data")

    class IterableDataset:
        pass

    mod.IterableDataset = IterableDataset
    mod.get_worker_info = lambda: None
    monkeypatch.setitem(sys.modules, "torch.utils.data", mod)
    loader = dataformats.Loader(path, batch_size=8)
    assert isinstance(loader, IterableDataset) and isinstance(loader, dataformats.Loader)
    assert sum(len(b["id"]) for b in loader) == 50


def test_loader_refuses_bad_ranks(tmp_path):
    path = _table_file(tmp_path, 10, "mldf")
    with pytest.raises(dataformats.FormatError):
        dataformats.Loader(path, batch_size=4, rank=2, world_size=2)
    with pytest.raises(dataformats.FormatError):
        dataformats.Loader(path, batch_size=0)


def test_splits_cover_every_record_once_at_block_starts():
    for fmt, path, _ in VECTORS_LIST:
        ds = dataformats.open(path)
        n = ds.num_rows
        for parts in (1, 3, 50):
            s = ds.splits(parts)
            assert len(s) <= parts
            if n == 0:
                assert s == []
                continue
            assert s[0][0] == 0 and s[-1][1] == n, (path, s)
            assert all(a < b for a, b in s) and all(s[i][1] == s[i + 1][0] for i in range(len(s) - 1)), (path, s)
    # An IDV file of 20,000 records in blocks of 8,192: cuts at block starts.
    idv = dataformats.open(VECTORS / "idv" / "mlnet15_large_default.idv")
    assert idv.splits(3) == [(0, 8192), (8192, 16384), (16384, 20000)]
    with pytest.raises(ValueError):
        idv.splits(0)
