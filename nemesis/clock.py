"""Clock faults through libfaketime: per-node wall-clock offsets that change while nodes run.

At ``setup`` (before the cluster starts any node) every node gets, in ``run.node_env``:

- ``LD_PRELOAD`` = libfaketime (the multi-threaded build when present), so every process the cluster
  starts for the node, and every restart, sees the faked clock;
- ``FAKETIME_TIMESTAMP_FILE`` = ``<node_dir>/faketime.rc``, which holds the offset (``+12.5``,
  ``-300``: seconds); the nemesis rewrites it atomically and libfaketime re-reads it at most every
  ``FAKETIME_CACHE_DURATION`` = 1 s, so an offset takes effect in a running process within a second;
- ``FAKETIME_DONT_FAKE_MONOTONIC=1``: **monotonic time is NOT faked**. Only the wall clock
  (``time.time()``, ``CLOCK_REALTIME``) moves; ``time.monotonic_ns()`` stays the host's clock, so the
  nodes' trace times remain comparable with the history, and timeouts measured on the monotonic clock
  are unaffected (a fault that only skews wall-clock-based logic, as in Kafka, where timeouts use
  monotonic time).

Ops: ``bump-clock`` / ``skew-clock`` ``{"target", "max_ms"}`` (a random offset per targeted node within
±max_ms; bump for large jumps, skew for standing differences), ``strobe-clock`` ``{"target",
"delta_ms", "period_ms", "duration_s"}`` (flip between +delta and 0), ``reset-clock`` (every node to 0).
Evidence: the offset measured *inside the node's environment* (a process started with the node's
environment, on docker inside its container) against the host clock, per node; ``effective`` when each
is within ``tolerance_s`` of the requested offset.
"""

from __future__ import annotations

import os
import random
import shlex
import time
from pathlib import Path
from typing import Any

from nemesis.base import NemesisUnsupported
from nemesis.targets import resolve_targets

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]
LIB_NAMES = ["libfaketimeMT.so.1", "libfaketime.so.1"]
RC_NAME = "faketime.rc"
_MEASURE = "import time;print(repr(time.time()))"


def find_libfaketime() -> str | None:
    """Path of libfaketime on this machine (the docker image installs the same Debian package)."""
    for directory in LIB_DIRS:
        for name in LIB_NAMES:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return path
    return None


def expected_nodes(run: Any) -> list[str]:
    """Nodes that will run: the cluster's list when it exists, else the reference cluster's naming
    (``controller``, ``b1``..``bN`` with N = ``spec["brokers"]``), since setup precedes the cluster."""
    cluster = getattr(run, "cluster", None)
    if cluster is not None and callable(getattr(cluster, "nodes", None)):
        return list(cluster.nodes())
    brokers = int(run.spec.get("brokers", 3))
    return ["controller", *[f"b{i}" for i in range(1, brokers + 1)]]


def format_offset(seconds: float) -> str:
    """libfaketime's relative offset syntax: ``+1.250`` / ``-30.000``."""
    return f"{seconds:+.3f}"


class ClockNemesis:
    """bump / skew / strobe / reset of per-node wall clocks (see the module docstring)."""

    FS = {"bump-clock", "skew-clock", "strobe-clock", "reset-clock"}

    def __init__(self, tolerance_s: float = 0.75):
        self.tolerance_s = tolerance_s
        self.lib: str | None = None
        self.files: dict[str, Path] = {}
        self.offsets: dict[str, float] = {}

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Find libfaketime, create the offset files, put the preload into ``run.node_env``."""
        self.lib = find_libfaketime()
        if self.lib is None:
            raise NemesisUnsupported("libfaketime is not installed (apt-get install libfaketime)")
        for node in expected_nodes(run):
            self._prepare(run, node)

    def _prepare(self, run: Any, node: str) -> None:
        path = Path(run.host.node_dir(node)) / RC_NAME
        self.files[node] = path
        self._write(node, 0.0)
        run.node_env.setdefault(node, {}).update(self.env(run, node))

    def env(self, run: Any, node: str) -> dict[str, str]:
        """The libfaketime environment of ``node`` (paths as the node sees them)."""
        return {
            "LD_PRELOAD": self.lib or "",
            "FAKETIME_TIMESTAMP_FILE": run.host.node_path(node, str(self.files[node])),
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def _write(self, node: str, seconds: float) -> None:
        path = self.files[node]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(format_offset(seconds) + "\n")
        os.replace(tmp, path)  # atomic: libfaketime never reads a half-written offset
        self.offsets[node] = seconds

    def measure(self, run: Any, node: str) -> float | None:
        """Offset of the node's wall clock from the host's, measured by a process in its environment."""
        env_args = [f"{k}={v}" for k, v in self.env(run, node).items()]
        before = time.time()
        code, out = run.host.exec(node, ["env", *env_args, "python3", "-c", _MEASURE], timeout_s=30.0)
        after = time.time()
        if code != 0:
            return None
        try:
            inner = float(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None
        # The process read its clock somewhere between before and after; python start-up dominates.
        return inner - (before + after) / 2

    def _set_and_prove(self, run: Any, targets: dict[str, float]) -> dict:
        for node, seconds in targets.items():
            if node not in self.files:
                self._prepare(run, node)
            self._write(node, seconds)
        measured, proven = {}, {}
        for node, seconds in targets.items():
            got = self.measure(run, node)
            measured[node] = None if got is None else round(got, 3)
            proven[node] = got is not None and abs(got - seconds) <= self.tolerance_s
        return {
            "requested_s": {n: round(s, 3) for n, s in targets.items()},
            "measured_s": measured,
            "monotonic_faked": False,
            "effective": bool(targets) and all(proven.values()),
        }

    def invoke(self, run: Any, op: dict) -> dict:
        """Apply one clock op and return the offsets measured inside the nodes."""
        value = dict(op.get("value") or {})
        f = op["f"]
        rng = random.Random(value.get("pick", 0))
        if f == "reset-clock":
            evidence = self._set_and_prove(run, {n: 0.0 for n in self.files})
            return {**op, "type": "ok", "value": {**value, **evidence}}
        nodes = value.get("nodes") or self._targets(run, value)
        if f in ("bump-clock", "skew-clock"):
            max_s = float(value.get("max_ms", 60_000)) / 1000.0
            # At least a second away from zero so the evidence cannot be confused with no skew.
            targets = {n: rng.choice([-1, 1]) * rng.uniform(min(1.0, max_s), max_s) for n in nodes}
            evidence = self._set_and_prove(run, targets)
        elif f == "strobe-clock":
            evidence = self._strobe(run, nodes, value)
        else:
            raise ValueError(f"unknown clock op {f!r}")
        evidence["nodes"] = nodes
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _targets(self, run: Any, value: dict) -> list[str]:
        target = value.get("target", "one")
        if target in ("all",) and run.cluster is not None:
            return list(expected_nodes(run))
        return resolve_targets(run, value)

    def _strobe(self, run: Any, nodes: list[str], value: dict) -> dict:
        delta_s = float(value.get("delta_ms", 20_000)) / 1000.0
        period_s = max(0.05, float(value.get("period_ms", 500)) / 1000.0)
        duration_s = min(float(value.get("duration_s", 3)), 60.0)
        # Prove the high phase once, then flip for the rest of the duration; end at zero.
        evidence = self._set_and_prove(run, {n: delta_s for n in nodes})
        flips = 0
        end = time.monotonic() + duration_s
        high = True
        while time.monotonic() < end:
            time.sleep(period_s)
            high = not high
            for node in nodes:
                self._write(node, delta_s if high else 0.0)
            flips += 1
        for node in nodes:
            self._write(node, 0.0)
        evidence["flips"] = flips
        return evidence

    def heal_all(self, run: Any) -> dict:
        """Every clock back to zero offset, proven per node that is running."""
        for node in self.files:
            self._write(node, 0.0)
        running = [n for n in self.files if run.host.is_running(n)] if self.files else []
        measured = {n: self.measure(run, n) for n in running}
        ok = all(m is not None and abs(m) <= self.tolerance_s for m in measured.values())
        return {"measured_s": {n: (None if m is None else round(m, 3)) for n, m in measured.items()},
                "effective": ok}

    def teardown(self, run: Any) -> None:
        """Reset every offset file to zero; never raises (the files stay for the logs)."""
        for node in list(self.files):
            try:
                self._write(node, 0.0)
            except OSError:
                pass


def shell_env(env: dict[str, str]) -> str:
    """The environment as a shell prefix (for reproducing a node's clock by hand)."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
