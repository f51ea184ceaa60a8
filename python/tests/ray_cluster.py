"""A Ray cluster on loopback for the tests and `cargo xtask scale`: a head
node with no CPU of its own and worker nodes of one CPU each, started with
`ray start` and stopped (`ray stop --force`) when done.

Run as a script, it starts the cluster, runs one job described by a JSON file
(`dataformats.ray.read` of some files, and of others by s3:// URL from moto's
server started beside the cluster; `dataformats.ray.convert` of others),
writes what came back, and stops the cluster and the server:

    python ray_cluster.py JOB.json

Ray's servers listen on every interface they have, so `start_job` starts this
script in a network namespace of its own that has only a loopback interface
(`unshare --net`), when the machine allows one; elsewhere the cluster takes
a random token (`RAY_AUTH_MODE=token`) so that no other program can join or
submit work.
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 6399


def _ray() -> str:
    exe = Path(sys.executable).with_name("ray")
    return str(exe) if exe.exists() else "ray"


@contextmanager
def cluster(workers: int = 2):
    """Starts the cluster; yields its address; stops it."""
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    tmp = tempfile.mkdtemp(prefix="dfray")
    common = ["--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    try:
        subprocess.run(
            [_ray(), "start", "--head", "--port", str(PORT), "--num-cpus", "0",
             "--include-dashboard", "false", "--temp-dir", tmp, *common],
            env=env, check=True, timeout=180, capture_output=True,
        )
        for _ in range(workers):
            subprocess.run(
                [_ray(), "start", "--address", f"127.0.0.1:{PORT}", "--num-cpus", "1", *common],
                env=env, check=True, timeout=180, capture_output=True,
            )
        yield f"127.0.0.1:{PORT}"
    finally:
        subprocess.run([_ray(), "stop", "--force"], env=env, timeout=120, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


class Job:
    """A job of this script running in a child process (see `start_job`)."""

    def __init__(self, job: dict, workdir: Path):
        self.workdir = workdir
        self.started = time.monotonic()
        spec = workdir / "job.json"
        spec.write_text(json.dumps(job))
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
        script = [sys.executable, str(HERE / "ray_cluster.py"), str(spec)]
        isolated = shutil.which("unshare") and subprocess.run(
            ["unshare", "--net", "true"], capture_output=True
        ).returncode == 0
        if isolated:
            env["RAY_AUTH_MODE"] = "disabled"
            cmd = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *script]
        else:
            env["RAY_AUTH_MODE"] = "token"
            env["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
            cmd = script
        self._out = open(workdir / "job.stdout", "w+")
        self._err = open(workdir / "job.stderr", "w+")
        # A session of its own: `stop` interrupts the job (whose `finally`
        # stops the cluster) without signalling pytest.
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._out, stderr=self._err, text=True,
                                     start_new_session=True)

    def result(self, timeout: int = 1200) -> dict:
        """Waits for the job (at most `timeout` seconds from its start);
        returns what it wrote, or raises with the driver's traceback."""
        left = max(1.0, timeout - (time.monotonic() - self.started))
        try:
            code = self.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"the Ray job ran past {timeout} s; log in {self.workdir / 'job.log'}")
        finally:
            self._log()
        result = self.workdir / "result.json"
        if code != 0 or not result.exists():
            # The driver's own traceback, not the cluster's log lines.
            lines = [x for x in self._stderr.splitlines() if "[state-dump]" not in x and "(raylet)" not in x]
            tb = next((i for i, x in enumerate(lines) if x.startswith("Traceback")), max(0, len(lines) - 60))
            raise AssertionError(
                f"the Ray job failed ({code}); log in {self.workdir / 'job.log'}:\n" + "\n".join(lines[tb : tb + 80])
            )
        return json.loads(result.read_text())

    def stop(self) -> None:
        """Interrupts the job if it still runs (it stops its cluster on the
        way out), killing it after two minutes."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log()

    def _log(self) -> None:
        if self._out.closed:
            return
        self._out.seek(0)
        self._err.seek(0)
        out, self._stderr = self._out.read(), self._err.read()
        self._out.close()
        self._err.close()
        (self.workdir / "job.log").write_text(out + "\n" + self._stderr)


def start_job(job: dict, workdir: Path) -> Job:
    """Starts `job` on a fresh cluster in a child process, in the background."""
    return Job(job, workdir)


def _work(ray, pa, dfray, address, spec, out, result, env) -> None:
    # The workers reach the S3 server (if any) with the driver's settings.
    ray.init(address=address, log_to_driver=False, runtime_env={"env_vars": env} if env else None)
    result["nodes"] = len([n for n in ray.nodes() if n["Alive"]])
    result["cpus"] = ray.cluster_resources().get("CPU", 0)
    for name, paths in (("read", spec.get("read")), ("read_urls", spec.get("read_urls"))):
        if not paths:
            continue
        t = time.time()
        ds = dfray.read(paths, provenance=True, override_num_blocks=spec.get("blocks"))
        table = pa.concat_tables(ray.get(ds.to_arrow_refs()))
        with pa.OSFile(str(out / f"{name}.arrows"), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
            w.write_table(table)
        result[f"{name}_s"] = time.time() - t
        result[f"{name}_rows"] = table.num_rows
    for name, conv in spec.get("convert", {}).items():
        t = time.time()
        summary = dfray.convert(conv["inputs"], conv["output_dir"], conv["to"], **conv.get("options", {}))
        result[f"convert_{name}"] = summary
        result[f"convert_{name}_s"] = time.time() - t


def _job(spec_path: str) -> None:
    import pyarrow as pa
    import pyarrow.ipc  # noqa: F401
    import ray

    import dataformats.ray as dfray

    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["workdir"])
    result = {}
    s3 = None
    env = {}
    if spec.get("s3_upload"):
        # moto's server on loopback (here, in the cluster's namespace) with
        # these files in bucket `vectors`, read by their s3:// URLs.
        sys.path.insert(0, str(HERE))
        from s3util import S3

        (out / "s3").mkdir(exist_ok=True)
        s3 = S3(out / "s3")
        s3.bucket("vectors")
        spec["read_urls"] = [s3.put("vectors", key, Path(p)) for key, p in spec["s3_upload"].items()]
        env = s3.env
        os.environ.update(env)
    t0 = time.time()
    try:
        with cluster(spec.get("workers", 2)) as address:
            result["cluster_start_s"] = time.time() - t0
            try:
                _work(ray, pa, dfray, address, spec, out, result, env)
            except BaseException:
                # Printed before the cluster stops: a driver still connected
                # when it does is ended by Ray before Python could print it.
                traceback.print_exc()
                sys.stderr.flush()
                ray.shutdown()
                raise
            ray.shutdown()
    finally:
        if s3 is not None:
            result["s3_bytes"] = s3.faults.bytes
            s3.stop()
    (out / "result.json").write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    _job(sys.argv[1])
