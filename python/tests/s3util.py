"""An S3-compatible server on loopback for the tests: moto's server (from
PyPI), started and stopped by the test session, behind a small HTTP proxy
of our own that counts the range requests and bytes the client fetches and
can drop or cut short its answers on demand.

Nothing here listens beyond 127.0.0.1.
"""

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ACCESS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc=None, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


class Faults:
    """What the proxy does to GET answers: `mode` is None (pass), "drop"
    (close the connection without an answer), "truncate" (send the headers
    of the whole answer, then half the body, then close) or "short" (a
    well-formed answer holding only half the bytes asked for). The first
    GET and every `every`-th after it are hit; `every=1` hits all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.mode = None
        self.every = 1
        self.seen = 0
        self.hit = 0
        self.requests = 0  # GETs with a Range header
        self.bytes = 0  # body bytes of GET answers sent to the client
        self.gets = 0
        self.ranges = []  # the Range header of each ranged GET

    def set(self, mode=None, every=1):
        with self.lock:
            self.mode, self.every, self.seen, self.hit = mode, every, 0, 0

    def reset_counts(self):
        with self.lock:
            self.requests = self.bytes = self.gets = 0
            self.ranges = []

    def decide(self):
        with self.lock:
            self.seen += 1
            if self.mode and (self.seen - 1) % self.every == 0:
                self.hit += 1
                return self.mode
            return None


def _handler(upstream_port: int, faults: Faults):
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            n = int(self.headers.get("Content-Length", "0") or 0)
            return self.rfile.read(n) if n else b""

        def _forward(self):
            body = self._body()
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                status, reason, rheaders = resp.status, resp.reason, resp.getheaders()
            finally:
                conn.close()
            fault = faults.decide() if self.command == "GET" else None
            if self.command == "GET":
                with faults.lock:
                    faults.gets += 1
                    if "Range" in self.headers:
                        faults.requests += 1
                        faults.ranges.append(self.headers["Range"])
            if fault == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            send = data
            if fault == "short" and len(data) > 1:
                send = data[: len(data) // 2]
            self.send_response(status, reason)
            for k, v in rheaders:
                if k.lower() in ("content-length", "transfer-encoding", "connection", "server", "date"):
                    continue
                if fault == "short" and k.lower() == "content-range" and "-" in v:
                    unit_start, rest = v.split("-", 1)
                    start = int(unit_start.split()[-1])
                    v = f"bytes {start}-{start + len(send) - 1}/{rest.split('/')[-1]}"
                self.send_header(k, v)
            if self.command == "HEAD":
                # No body: the length is the object's, as the server said.
                length = dict((k.lower(), v) for k, v in rheaders).get("content-length", "0")
                self.send_header("Content-Length", length)
                self.end_headers()
                return
            self.send_header("Content-Length", str(len(send)))
            self.end_headers()
            if fault == "truncate" and len(send) > 1:
                self.wfile.write(send[: len(send) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(send)
            if self.command == "GET":
                with faults.lock:
                    faults.bytes += len(send)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

    return Proxy


class S3:
    """moto's server and the counting proxy in front of it."""

    def __init__(self, root: Path):
        self.root = root
        self.faults = Faults()
        self.moto_port = free_port()
        exe = Path(sys.executable).with_name("moto_server")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
        self.log = open(root / "moto.log", "w")
        self.proc = subprocess.Popen(
            [*cmd, "-H", "127.0.0.1", "-p", str(self.moto_port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ACCESS},
        )
        try:
            wait_for_port(self.moto_port, self.proc)
        except Exception:
            self.stop()
            raise
        self.proxy = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.moto_port, self.faults))
        self.proxy.daemon_threads = True
        self.proxy_port = self.proxy.server_address[1]
        self.thread = threading.Thread(target=self.proxy.serve_forever, daemon=True)
        self.thread.start()
        import boto3

        self.client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.moto_port}",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )

    @property
    def env(self):
        """What the dataformats client needs to reach the server (through
        the proxy)."""
        return {**ACCESS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.proxy_port}", "AWS_ALLOW_HTTP": "true"}

    def bucket(self, name: str) -> None:
        self.client.create_bucket(Bucket=name)

    def put(self, bucket: str, key: str, path: Path) -> str:
        self.client.upload_file(str(path), bucket, key)
        return f"s3://{bucket}/{key}"

    def get(self, bucket: str, key: str) -> bytes:
        return self.client.get_object(Bucket=bucket, Key=key)["Body"].read()

    def keys(self, bucket: str, prefix: str = ""):
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(o["Key"] for p in pages for o in p.get("Contents", []))

    def stop(self) -> None:
        if getattr(self, "proxy", None) is not None:
            self.proxy.shutdown()
            self.proxy.server_close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class RangeFiles(BaseHTTPRequestHandler):
    """A plain HTTP server for the files of one folder: HEAD and ranged GET
    answered with positioned reads (what object stores do, without moto's
    cost per range)."""

    protocol_version = "HTTP/1.1"
    root = Path(".")

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def _answer(self, body):
        p = self.root / self.path.lstrip("/").split("?")[0]
        if not p.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = p.stat().st_size
        start, end = 0, size - 1
        rng = self.headers.get("Range")
        if rng:
            a, b = rng.split("=", 1)[1].split("-")
            start, end = int(a), min(int(b) if b else size - 1, size - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if body:
            with open(p, "rb") as f:
                self.wfile.write(os.pread(f.fileno(), end - start + 1, start))


def serve_files(root):
    """Serves the files under `root` on 127.0.0.1 (call .shutdown())."""
    handler = type("Files", (RangeFiles,), {"root": Path(root)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def s3_server(root: Path):
    s = S3(root)
    old = {k: os.environ.get(k) for k in s.env}
    os.environ.update(s.env)
    try:
        yield s
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        s.stop()
