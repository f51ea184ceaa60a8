"""Speed of the Python package, in one process (a bench, not a test; run
it by hand with the wheel installed):

    python python/bench/bench_package.py [--mb 1024] [--samples 100000]
        [--rows 10000000] [--dir DIR]
        [--only iter_batches|loader|column_numpy|to_arrow|read_ahead]

1. `iter_batches` over an uncompressed IDV file of MB megabytes of float32
   values (written from Parquet by `dataformats.convert`), against the same
   batches read and dropped in Rust (`_read_all_in_rust`): the ratio of
   their throughputs (target >= 0.7).
2. `Loader` over a TBL v2 file of SAMPLES JPEG-like samples (2-7 KB each,
   a JPEG header around incompressible bytes with a few percent of zeros,
   so LZ4 saves a little as on real JPEGs), written by TurboLoader's own
   `TblWriterV2` with LZ4 and CRC-16s, against a Python loop over
   TurboLoader's `TblReaderV2` (checksums verified) reading the same
   samples in the same shuffled order (the loader's `indices()`), batch
   by batch into lists of bytes: the ratio (target >= 10). Needs the
   `turboloader` package (skipped without it).
3. `column_numpy` of an uncompressed MLDF NDARRAY column (float32[4]) of
   1,000 and of ROWS records: both are views of the file's map. The first
   call on a fresh `open` checks each record's pointer (no value byte is
   read); later calls reuse that and cost the same for both sizes. Both
   against copying the big column once.
4. `to_arrow` on every core against one thread (`threads=1`), over files
   of MB / 4 megabytes of float32 values written from Parquet: an IDV
   (deflate blocks), a Bloscpack file (lz4 chunks, one column) and an
   MLDF: the ratio (every core / one thread).
5. `iter_batches` over a deflate IDV of MB / 4 megabytes with a consumer
   that works on each batch (NumPy passes over its first column, about as
   long in all as reading the batches): batches are decoded on a thread of
   their own ahead of the consumer, so the loop takes about the longer of
   the two, not their sum. Printed: the loop against reading alone plus
   working alone (1.00 would be no overlap), and the best there is (the
   longer of the two against their sum).

Each measurement is the median of 5 alternating runs; the machine's load
average is printed with the results.
"""

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import dataformats


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def alternate(a, b, runs=5):
    ta, tb = [], []
    for _ in range(runs):
        ta.append(timed(a))
        tb.append(timed(b))
    return statistics.median(ta), statistics.median(tb)


def _float_parquet(path, rows):
    """A Parquet file of 16 float32 columns c0..c15 of `rows` random values."""
    cols = {f"c{k}": pa.array(np.random.default_rng(k).random(rows, dtype=np.float32)) for k in range(16)}
    pq.write_table(pa.table(cols), path, compression="zstd")


def bench_iter_batches(work, mb):
    rows = mb * (1 << 20) // (4 * 16)
    src = os.path.join(work, "f.parquet")
    idv = os.path.join(work, "f.idv")
    if not os.path.exists(idv):
        _float_parquet(src, rows)
        dataformats.convert(src, idv, no_compress=True)
        os.remove(src)
    ds = dataformats.open(idv)

    def rust():
        assert ds._native._read_all_in_rust(None, 65536) == rows

    def python():
        n = 0
        for b in ds.iter_batches(batch_size=65536):
            n += b.num_rows
        assert n == rows

    t_rust, t_py = alternate(rust, python)
    size = os.path.getsize(idv) / 1e6
    print(f"iter_batches: {size:.0f} MB IDV, Rust {size / t_rust:.0f} MB/s, "
          f"Python {size / t_py:.0f} MB/s: ratio {t_rust / t_py:.2f} (target >= 0.7)")


def jpeg_like(rng, blob):
    """(bytes, width, height) of a JPEG-like sample: SOI, APP0 and SOF0
    headers (so its size sniffs), 2-7 KB of incompressible bytes with a
    few percent of zeros, EOI."""
    w, h = int(rng.integers(64, 129)), int(rng.integers(64, 129))
    size = int(rng.integers(2000, 7000))
    at = int(rng.integers(0, len(blob) - size))
    head = (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(9)
            + bytes([0xFF, 0xC0, 0, 17, 8, h >> 8, h & 255, w >> 8, w & 255, 3]) + bytes(9))
    return head + blob[at:at + size] + bytes(size // 30) + b"\xff\xd9", w, h


def bench_loader(work, samples, batch_size=256):
    try:
        import turboloader
    except ImportError:
        print("loader: skipped (pip install turboloader to compare with TurboLoader)")
        return
    path = os.path.join(work, "jpeg.tbl")
    rng = np.random.default_rng(7)
    blob = rng.integers(0, 256, size=8 << 20, dtype=np.uint8).tobytes()
    w = turboloader.TblWriterV2(path, True)
    for _ in range(samples):
        data, width, height = jpeg_like(rng, blob)
        w.add_sample(data, turboloader.SampleFormat.JPEG, width, height)
    w.finalize()
    loader = dataformats.Loader(path, batch_size, columns=["data"], shuffle=True, seed=11)
    reader = turboloader.TblReaderV2(path, True)
    epoch = [0]

    def ours():
        loader.set_epoch(epoch[0])
        n = 0
        for b in loader:
            n += len(b["data"])
        assert n == samples

    def theirs():
        loader.set_epoch(epoch[0])
        order = loader.indices()
        n = 0
        for k in range(0, len(order), batch_size):
            batch = [reader.read_sample(i) for i in order[k:k + batch_size]]
            n += len(batch)
        assert n == samples
        epoch[0] += 1

    # Same bytes, same order (first batches of one epoch).
    loader.set_epoch(99)
    order = loader.indices()
    for k, b in enumerate(loader):
        assert b["data"] == [reader.read_sample(i) for i in order[k * batch_size:(k + 1) * batch_size]]
        if k == 3:
            break
    t_ours, t_theirs = alternate(ours, theirs)
    mb = os.path.getsize(path) / 1e6
    print(f"loader: {samples} JPEG-like samples ({mb:.0f} MB TBL v2, LZ4, CRC-16 checked), "
          f"shuffled, batches of {batch_size}: dataformats.Loader {samples / t_ours:,.0f} samples/s, "
          f"TurboLoader TblReaderV2 loop {samples / t_theirs:,.0f} samples/s: "
          f"ratio {t_theirs / t_ours:.1f} (target >= 10)")


def bench_column_numpy(work, rows):
    paths = {}
    schema = os.path.join(work, "mldf-schema.json")
    with open(schema, "w") as f:
        json.dump({"fields": [{"name": "x", "type": "NDARRAY", "dtype": "float32",
                               "shape": [4], "nullable": False}], "compressed": False}, f)
    for n in (1000, rows):
        src = os.path.join(work, f"c{n}.parquet")
        x = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(4 * n, dtype=np.float32)), 4)
        pq.write_table(pa.table({"x": x}), src, compression="zstd")
        paths[n] = os.path.join(work, f"c{n}.mldf")
        dataformats.convert(src, paths[n], schema=schema)
        os.remove(src)
    for n, path in paths.items():
        ds = dataformats.open(path)
        a = ds.column_numpy("x")
        assert not a.flags.owndata and a.ctypes.data == ds.column_numpy("x").ctypes.data
        assert a[-1, 3] == 4 * n - 1
    # The first call on a fresh open checks every record's pointer once;
    # later calls (and every batch read after it) reuse what it found.
    first, again = {}, {}
    for n, path in paths.items():
        t = []
        for _ in range(5):
            ds = dataformats.open(path)
            t.append(timed(lambda: ds.column_numpy("x")))
        first[n] = statistics.median(t)
        again[n] = statistics.median([timed(lambda: ds.column_numpy("x")) for _ in range(5)])
    view = dataformats.open(paths[rows]).column_numpy("x")
    t_copy = statistics.median([timed(lambda: np.array(view)) for _ in range(5)])
    print(f"column_numpy (MLDF float32[4], uncompressed: views of the map): first call "
          f"{first[1000] * 1e3:.2f} ms for 1,000 records, {first[rows] * 1e3:.1f} ms for {rows:,} "
          f"({first[rows] / rows * 1e9:.1f} ns per record, no value byte read); later calls "
          f"{again[1000] * 1e3:.2f} ms and {again[rows] * 1e3:.2f} ms (ratio "
          f"{again[rows] / again[1000]:.1f}); copying the {rows:,}-record column once: "
          f"{t_copy * 1e3:.1f} ms")
    # Compressed columns: decoded in pieces on every core, against one thread.
    src = os.path.join(work, "cf.parquet")
    _float_parquet(src, rows)
    for what, path, options in [
        ("IDV deflate", os.path.join(work, "cf.idv"), {"columns": ["c0"]}),
        ("Bloscpack lz4", os.path.join(work, "cf.blp"), {"columns": ["c0"], "codec": "lz4"}),
        ("Bloscpack zstd", os.path.join(work, "cfz.blp"), {"columns": ["c0"], "codec": "zstd"}),
    ]:
        dataformats.convert(src, path, **options)
        ds = dataformats.open(path)
        name = ds.schema.names[0]
        assert np.array_equal(ds.column_numpy(name, threads=1), ds.column_numpy(name))
        t_one, t_all = alternate(lambda: ds.column_numpy(name, threads=1),
                                 lambda: ds.column_numpy(name), runs=7)
        print(f"column_numpy of {rows:,} float32 in {what}: one thread {t_one * 1e3:.1f} ms, "
              f"every core ({os.cpu_count()}) {t_all * 1e3:.1f} ms: {t_one / t_all:.2f}x")
        os.remove(path)
    os.remove(src)


def bench_to_arrow(work, mb):
    rows = max(1, mb // 4) * (1 << 20) // (4 * 16)
    src = os.path.join(work, "t.parquet")
    _float_parquet(src, rows)
    files = [
        ("IDV deflate", os.path.join(work, "t.idv"), {}),
        ("Bloscpack lz4", os.path.join(work, "t.blp"), {"columns": ["c0"], "codec": "lz4"}),
        ("MLDF", os.path.join(work, "t.mldf"), {}),
    ]
    for what, path, options in files:
        dataformats.convert(src, path, **options)
        ds = dataformats.open(path)
        t_one, t_all = alternate(lambda: ds.to_arrow(threads=1), lambda: ds.to_arrow())
        assert ds.to_arrow().equals(ds.to_arrow(threads=1))
        size = os.path.getsize(path) / 1e6
        print(f"to_arrow: {size:.0f} MB {what}, one thread {size / t_one:.0f} MB/s, "
              f"every core ({os.cpu_count()}) {size / t_all:.0f} MB/s: {t_one / t_all:.2f}x")
        os.remove(path)
    os.remove(src)


def bench_read_ahead(work, mb):
    rows = max(1, mb // 4) * (1 << 20) // (4 * 16)
    src = os.path.join(work, "r.parquet")
    path = os.path.join(work, "r.idv")
    _float_parquet(src, rows)
    dataformats.convert(src, path)
    os.remove(src)
    ds = dataformats.open(path)

    def read():
        for _ in ds.iter_batches(batch_size=65536):
            pass

    t_read = statistics.median(timed(read) for _ in range(3))
    batches = list(ds.iter_batches(batch_size=65536))
    passes = [1]

    def use(b):
        a = np.asarray(b.column(0))
        for _ in range(passes[0]):
            a = np.sqrt(a * a + 1.0)

    def work_alone():
        for b in batches:
            use(b)

    # As many passes as make the work about as long as the reading.
    while timed(work_alone) < t_read and passes[0] < 4096:
        passes[0] *= 2
    del batches[:]
    batches.extend(ds.iter_batches(batch_size=65536))

    def loop():
        for b in ds.iter_batches(batch_size=65536):
            use(b)

    t_read, t_loop = alternate(read, loop)
    t_work = statistics.median(timed(work_alone) for _ in range(5))
    size = os.path.getsize(path) / 1e6
    print(f"read_ahead: {size:.0f} MB IDV deflate, reading {t_read * 1e3:.0f} ms, "
          f"working {t_work * 1e3:.0f} ms, the loop doing both {t_loop * 1e3:.0f} ms: "
          f"{t_loop / (t_read + t_work):.2f} of their sum "
          f"(no overlap: 1.00; all of it: {max(t_read, t_work) / (t_read + t_work):.2f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dir")
    ap.add_argument(
        "--only", choices=["iter_batches", "loader", "column_numpy", "to_arrow", "read_ahead"]
    )
    a = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory(dir=a.dir) as work:
        if a.only in (None, "iter_batches"):
            bench_iter_batches(work, a.mb)
        if a.only in (None, "loader"):
            bench_loader(work, a.samples)
        if a.only in (None, "column_numpy"):
            bench_column_numpy(work, a.rows)
        if a.only in (None, "to_arrow"):
            bench_to_arrow(work, a.mb)
        if a.only in (None, "read_ahead"):
            bench_read_ahead(work, a.mb)


if __name__ == "__main__":
    main()
