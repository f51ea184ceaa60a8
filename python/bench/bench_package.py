"""Speed of the Python package against its own Rust reader, in one process
(a bench, not a test; run it by hand with the wheel installed):

    python python/bench/bench_package.py [--mb 1024] [--dir DIR]

1. `iter_batches` over an uncompressed IDV file of MB megabytes of float32
   values (written from Parquet by `dataformats.convert`), against the same
   batches read and dropped in Rust (`_read_all_in_rust`): the ratio of
   their throughputs (target >= 0.7).

Each measurement is the median of 5 alternating runs; the machine's load
average is printed with the results.
"""

import argparse
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


def bench_iter_batches(work, mb):
    rows = mb * (1 << 20) // (4 * 16)
    src = os.path.join(work, "f.parquet")
    idv = os.path.join(work, "f.idv")
    if not os.path.exists(idv):
        cols = {f"c{k}": pa.array(np.random.default_rng(k).random(rows, dtype=np.float32)) for k in range(16)}
        pq.write_table(pa.table(cols), src, compression="zstd")
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--dir")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory(dir=a.dir) as work:
        bench_iter_batches(work, a.mb)


if __name__ == "__main__":
    main()
