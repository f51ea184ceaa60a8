"""Reading a file from an S3-compatible server on loopback against reading
it locally, with the same reader, in one process (a bench, not a test; run
it by hand with the wheel and the test requirements installed):

    python python/bench/bench_remote.py [--mb 1024] [--dir DIR] [--format mldf|idv]
        [--s3rver PATH]

A file of MB megabytes (uncompressed float64 columns, written from Parquet
by `dataformats.convert`) is put into moto's S3 server (started here on
127.0.0.1, stopped at the end) and read whole with `iter_batches`:

- locally through positioned reads (`file://` URL: no memory map), and
- from `s3://` (the client talks to the server directly, no proxy),

- from `http://`, a plain ranged-file server of our own on loopback
  (positioned reads of the file: the client without moto's costs),

- with `--s3rver PATH` (the `s3rver` program of the npm package of that
  name, installed outside the project: `npm install s3rver`), from
  `s3://` on s3rver too, a Node.js S3 server that serves ranges from files
  and so does not pay moto's per-request cost,

alternating, 5 runs each; the median throughputs and their ratios are
printed with the machine's load (target: S3 >= 0.8x local), and moto's own
speed for 4 MiB ranged GETs (boto3, serial): moto is a Python program and
each ranged GET costs it time in proportion to the object, so it bounds the
S3 figure whatever the client does.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import dataformats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from s3util import s3_server, serve_files  # noqa: E402


def scan(url):
    n = 0
    for b in dataformats.open(url).iter_batches(batch_size=65536):
        n += b.nbytes
    return n


def start_s3rver(exe, data, bucket):
    """s3rver on 127.0.0.1 (a free port), the bucket made; (process, port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [exe, "-d", str(data), "-a", "127.0.0.1", "-p", str(port), "-s", "--configure-bucket", bucket,
         "--allow-mismatched-signatures"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("s3rver did not start")


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--format", default="mldf", choices=["mldf", "idv"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--s3rver", default=None, help="the s3rver program (npm package s3rver)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.dir) as work:
        work = Path(work)
        rows = a.mb * (1 << 20) // (8 * 8)
        rng = np.random.default_rng(1)
        pq.write_table(
            pa.table({f"c{i}": rng.standard_normal(rows) for i in range(8)}),
            work / "f.parquet",
            compression="none",
        )
        path = work / f"f.{a.format}"
        dataformats.convert(work / "f.parquet", path, **({"no_compress": True} if a.format == "idv" else {}))
        (work / "f.parquet").unlink()
        size = path.stat().st_size
        with s3_server(work) as s3:
            # Straight to the server: the proxy is for counting in tests.
            os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{s3.moto_port}"
            s3.bucket("bench")
            url = s3.put("bench", path.name, path)
            local = path.resolve().as_uri()
            assert scan(url) == scan(local)
            http = serve_files(work)
            plain = f"http://127.0.0.1:{http.server_address[1]}/{path.name}"
            assert scan(plain) == scan(local)
            # moto's own cost of a ranged GET: 16 ranges of 4 MiB, serially.
            whole = min(size, 64 << 20)
            t0 = time.perf_counter()
            for k in range(whole >> 22):
                s3.client.get_object(Bucket="bench", Key=path.name, Range=f"bytes={k << 22}-{((k + 1) << 22) - 1}")[
                    "Body"
                ].read()
            moto_ranges = (whole >> 22 << 22) / (time.perf_counter() - t0)
            tl, tr, th, tn = [], [], [], []
            node = None
            if a.s3rver:
                import boto3

                node, port = start_s3rver(a.s3rver, work / "s3rver", "node")
                endpoint = f"http://127.0.0.1:{port}"
                keys = {"aws_access_key_id": "S3RVER", "aws_secret_access_key": "S3RVER"}
                boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys).upload_file(
                    str(path), "node", path.name
                )
            for _ in range(a.runs):
                tl.append(timed(lambda: scan(local)))
                tr.append(timed(lambda: scan(url)))
                th.append(timed(lambda: scan(plain)))
                if node is not None:
                    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
                    os.environ.update(
                        AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER"
                    )
                    tn.append(timed(lambda: scan(f"s3://node/{path.name}")))
                    for k, v in saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
            if node is not None:
                node.kill()
            http.shutdown()
        ml, mr, mh = statistics.median(tl), statistics.median(tr), statistics.median(th)
        mb = size / 1e6
        print(f"file: {a.format}, {mb:.0f} MB; load average {os.getloadavg()[0]:.2f}; median of {a.runs}")
        print(f"local (positioned reads):          {mb / ml:8.0f} MB/s")
        print(f"s3 (moto on loopback):             {mb / mr:8.0f} MB/s   ratio {ml / mr:.2f}  (target >= 0.8)")
        print(f"http (ranged file server, loopback): {mb / mh:6.0f} MB/s   ratio {ml / mh:.2f}")
        if tn:
            mn = statistics.median(tn)
            print(f"s3 (s3rver on loopback):           {mb / mn:8.0f} MB/s   ratio {ml / mn:.2f}")
        print(f"moto alone, 4 MiB ranged GETs (boto3, serial): {moto_ranges / 1e6:.0f} MB/s")


if __name__ == "__main__":
    main()
