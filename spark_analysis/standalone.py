"""A real Spark standalone master and worker started from the pyspark installation, on loopback.

Used by the slow test that proves ``--master spark://...`` works, by the benchmark (two workers) and handy
for manual work: ``with standalone_cluster(tmp, workers=2) as url: ...`` starts
``org.apache.spark.deploy.master.Master`` and the ``Worker``s through ``spark-class``, waits (bounded) until
every worker has registered, yields the master URL, and always stops every process group on exit
(SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from spark_analysis.errors import SparkAnalysisError


def spark_home() -> Path:
    """The pyspark installation, which carries ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    fh = open(log, "wb")
    try:
        return subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    finally:
        fh.close()


def _stop(proc: subprocess.Popen | None, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for(predicate, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise SparkAnalysisError(f"timed out after {timeout:.0f} s waiting for {what}; log tail:\n{tail}")


@contextlib.contextmanager
def standalone_cluster(workdir: str | os.PathLike, *, cores: int = 1, memory: str = "1g", workers: int = 1,
                       timeout: float = 120.0) -> Iterator[str]:
    """Run a loopback standalone master + ``workers`` workers (``cores`` and ``memory`` each); yield
    ``spark://127.0.0.1:PORT``."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    spark_class = str(home / "bin" / "spark-class")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(workdir),
               SPARK_WORKER_DIR=str(workdir / "work"))
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log = workdir / "master.log"
    master = None
    started: list[subprocess.Popen] = []
    try:
        master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui)], master_log, env)
        _wait_for(lambda: "Starting Spark master" in master_log.read_text(errors="replace")
                  and _port_open(port), timeout, "the Spark master", master_log)
        logs = []
        for n in range(workers):
            log = workdir / f"worker{n}.log"
            logs.append(log)
            started.append(_start([spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host",
                                   "127.0.0.1", "--cores", str(cores), "--memory", memory, "--webui-port",
                                   str(_free_port()), "--work-dir", str(workdir / f"work{n}")], log, env))
        for log in logs:
            _wait_for(lambda log=log: "Successfully registered with master" in log.read_text(errors="replace"),
                      timeout, f"Spark worker {log.stem} to register", log)
        yield url
    finally:
        for worker in started:
            _stop(worker)
        _stop(master)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False
