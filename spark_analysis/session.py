"""The one SparkSession of a process: checks before start, loopback defaults, clear failures.

Spark fails late and verbosely when Java is missing (a Py4J gateway error) or when a standalone master
does not answer (it retries for a minute). Both are checked here first, so the user gets one line that
says what to fix.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from typing import Any

from spark_analysis.errors import BadMasterURL, JavaMissing, SessionConflict

DEFAULT_MASTER = "local[*]"
# Small shuffles: histories are grouped by key/process and the machine has 2 cores; Spark's default of
# 200 partitions would spend most of the time scheduling empty tasks.
DEFAULT_SHUFFLE_PARTITIONS = 4
DEFAULT_LOCAL_DRIVER_MEMORY = "2g"
LOCAL_JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
# Input size (bytes of JSONL) from which a local session keeps the full JIT: a large input's check is a few
# long data-heavy stages (Parquet decoding, the shuffle, rows to Arrow), which C2-compiled code runs about
# twice as fast; below it, C2's compiler threads only take the two cores from short jobs.
LARGE_INPUT_BYTES = 256 * 1024 * 1024

_LOCAL_RE = re.compile(r"^local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?$")
_LOCAL_CLUSTER_RE = re.compile(r"^local-cluster\[[1-9][0-9]*,\s*[1-9][0-9]*,\s*[1-9][0-9]*\]$")
_SPARK_RE = re.compile(r"^spark://([^/:,\s]+:[0-9]{1,5})(,[^/:,\s]+:[0-9]{1,5})*/?$")
_OTHER_PREFIXES = ("yarn", "k8s://")

_lock = threading.Lock()
_session: Any = None
_session_master: str | None = None


def find_java() -> str:
    """Return the path of a working ``java`` (``JAVA_HOME`` first, then PATH) or raise ``JavaMissing``."""
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(os.path.join(java_home, "bin", "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    if not candidates:
        raise JavaMissing("Spark needs Java 17 or 21, but JAVA_HOME is unset and no 'java' is on PATH "
                          "(install a JDK, e.g. 'apt-get install openjdk-17-jre-headless', or set JAVA_HOME)")
    problems = []
    for java in candidates:
        try:
            proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{java}: {exc}")
            continue
        if proc.returncode == 0:
            return java
        problems.append(f"{java} -version exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    raise JavaMissing("no working Java for Spark: " + "; ".join(problems))


def validate_master(master: str, probe_timeout: float = 3.0) -> str:
    """Return ``master`` if it is a Spark master URL Spark will accept, else raise ``BadMasterURL``.

    ``spark://host:port`` masters are also probed with a TCP connect, because Spark itself would retry an
    unreachable master for about a minute before failing with a generic message.
    """
    master = (master or "").strip()
    if _LOCAL_RE.match(master) or _LOCAL_CLUSTER_RE.match(master):
        return master
    if master.startswith(_OTHER_PREFIXES):
        return master
    match = _SPARK_RE.match(master)
    if not match:
        raise BadMasterURL(f"bad Spark master URL {master!r}: expected local, local[N], local[*] or "
                           f"spark://HOST:PORT (e.g. spark://127.0.0.1:7077)")
    addresses = master[len("spark://"):].rstrip("/").split(",")
    errors = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=probe_timeout):
                return master
        except OSError as exc:
            errors.append(f"{address}: {exc}")
    raise BadMasterURL(f"Spark master {master!r} does not answer ({'; '.join(errors)}); is the master "
                       f"running? (spark-class org.apache.spark.deploy.master.Master --host HOST)")


def get_session(master: str | None = None, *, app_name: str = "kraftcheck", ui: bool = False,
                shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS, driver_memory: str | None = None,
                conf: dict[str, str] | None = None, input_bytes: int | None = None) -> Any:
    """Return the process's SparkSession, starting it on first use (one session per process).

    Asking again with the same master (or with ``master=None``) returns the same session; asking for a
    different master while one runs raises ``SessionConflict`` (call ``stop_session`` first).
    ``input_bytes``: the size of what the session will read, when known (it decides the local JIT).
    """
    global _session, _session_master
    with _lock:
        if _session is not None and _session_alive(_session):
            if master is not None and master != _session_master:
                raise SessionConflict(f"a SparkSession on {_session_master!r} is already running in this "
                                      f"process; stop it before using {master!r}")
            return _session
        master = validate_master(master or DEFAULT_MASTER)
        find_java()
        # Executors on a standalone worker must run the same Python (same pyspark, same packages).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        builder = (SparkSession.builder.master(master).appName(app_name)
                   .config("spark.ui.enabled", "true" if ui else "false")
                   .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.ui.showConsoleProgress", "false")
                   # JSON objects with a repeated key keep the last value, as Python's json does.
                   .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
        if master.startswith("local"):
            # Adaptive execution submits every shuffle stage as a job of its own (and re-plans between
            # them): on one small machine that tripled the job count (102 -> 29 jobs for a 1 k-op check)
            # and cost ~40% of the time at 100 k ops, for no skew worth fixing in one process.
            builder = builder.config("spark.sql.adaptive.enabled", "false")
            # The local driver JVM is also the executor. C1-only JIT for small inputs: C2's compiler
            # threads fight the tasks for the two shared cores, and Spark's generated code is mostly
            # short-lived (``conf`` may override it; LARGE_INPUT_BYTES says when C2 pays).
            if input_bytes is None or input_bytes < LARGE_INPUT_BYTES:
                builder = builder.config("spark.driver.extraJavaOptions", LOCAL_JIT_OPTIONS)
        if master.startswith("local") or _loopback_master(master):
            # Only loopback traffic on a shared machine (and executors must reach the driver there).
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = (builder.config("spark.driver.host", "127.0.0.1")
                       .config("spark.driver.bindAddress", "127.0.0.1"))
        if driver_memory is None and master.startswith("local"):
            # In local mode the driver JVM is also the executor: Spark's 1g default is tight for the
            # shared tables of a large history (the rest spills to disk).
            driver_memory = DEFAULT_LOCAL_DRIVER_MEMORY
        if driver_memory:
            builder = builder.config("spark.driver.memory", driver_memory)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        _session, _session_master = session, master
        return session


def _loopback_master(master: str) -> bool:
    """True for ``spark://`` masters whose hosts are all on the loopback interface."""
    if not master.startswith("spark://"):
        return False
    hosts = [a.rpartition(":")[0] for a in master[len("spark://"):].rstrip("/").split(",")]
    return all(h == "localhost" or h.startswith("127.") for h in hosts)


def _session_alive(session: Any) -> bool:
    try:
        return not session.sparkContext._jsc.sc().isStopped()
    except Exception:
        return False


def stop_session() -> None:
    """Stop the process's SparkSession if one runs (idempotent)."""
    global _session, _session_master
    with _lock:
        if _session is not None:
            try:
                _session.stop()
            finally:
                _session, _session_master = None, None


def current_master() -> str | None:
    """The master URL of the running session, or None."""
    return _session_master if _session is not None else None
