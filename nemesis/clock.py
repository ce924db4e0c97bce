"""Clock faults: per-node wall-clock offsets that change while nodes run.

At ``setup`` (before the cluster starts any node) the host's clock environment of every node
(``ClockSkew.clock_env``) goes into ``run.node_env``, so every process the cluster starts for the node,
and every restart, has a movable wall clock; an op then sets offsets with ``ClockSkew.set_clock_offset``.
Both backends do it with libfaketime (``harness.hosts.faketime``): **monotonic time is NOT faked**.
Only the wall clock (``time.time()``, ``CLOCK_REALTIME``) moves; ``time.monotonic_ns()`` stays the host's
clock, so the nodes' trace times remain comparable with the history, and timeouts measured on the
monotonic clock are unaffected (a fault that only skews wall-clock-based logic, as in Kafka, where
timeouts use monotonic time).

Ops: ``bump-clock`` / ``skew-clock`` ``{"target", "max_ms"}`` (a random offset per targeted node within
±max_ms; bump for large jumps, skew for standing differences), ``strobe-clock`` ``{"target",
"delta_ms", "period_ms", "duration_s"}`` (flip between +delta and 0), ``reset-clock`` (every node to 0).
Evidence: the offset measured *inside the node's environment* (a process run with ``NodeExec.exec`` and
the node's clock environment) against the host clock, per node; ``effective`` when each is within
``tolerance_s`` of the requested offset.
"""

from __future__ import annotations

import random
import shlex
import time
from typing import Any

from harness.interfaces import ClockSkew, NodeExec
from harness.node_config import controller_names
from nemesis.base import NemesisUnsupported, host_label
from nemesis.targets import resolve_targets

_MEASURE = "import time;print(repr(time.time()))"


def expected_nodes(run: Any) -> list[str]:
    """Nodes that will run: the cluster's list when it exists, else the nodes the run planned before any
    started (``run.planned_nodes``, from the system under test's description), else the reference
    cluster's naming (``controller`` or ``c1``..``cK`` with K = ``spec.controllers``, ``b1``..``bN``),
    since setup precedes the cluster."""
    cluster = getattr(run, "cluster", None)
    if cluster is not None and callable(getattr(cluster, "nodes", None)):
        return list(cluster.nodes())
    planned = getattr(run, "planned_nodes", None)
    if planned:
        return list(planned)
    brokers = int(run.spec.brokers)
    return [*controller_names(int(run.spec.controllers or 1)), *[f"b{i}" for i in range(1, brokers + 1)]]


class ClockNemesis:
    """bump / skew / strobe / reset of per-node wall clocks (see the module docstring)."""

    FS = {"bump-clock", "skew-clock", "strobe-clock", "reset-clock"}

    def __init__(self, tolerance_s: float = 0.75):
        self.tolerance_s = tolerance_s
        self.offsets: dict[str, float] = {}  # node -> the offset last set (every prepared node)

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse without the clock and exec abilities; else put every node's clock environment into
        ``run.node_env`` at offset zero."""
        for ability in (ClockSkew, NodeExec):
            if not isinstance(run.host, ability):
                raise NemesisUnsupported(
                    f"no clock faults on the {host_label(run)} host (no {ability.__name__} ability)")
        problem = run.host.clock_skew_problem()
        if problem:
            raise NemesisUnsupported(problem)
        for node in expected_nodes(run):
            self._prepare(run, node)

    def _prepare(self, run: Any, node: str) -> None:
        self._write(run, node, 0.0)
        run.node_env.setdefault(node, {}).update(run.host.clock_env(node))

    def _write(self, run: Any, node: str, seconds: float) -> None:
        run.host.set_clock_offset(node, seconds)
        self.offsets[node] = seconds

    def measure(self, run: Any, node: str) -> float | None:
        """Offset of the node's wall clock from the host's, measured by a process in its environment."""
        env_args = [f"{k}={v}" for k, v in run.host.clock_env(node).items()]
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
            if node not in self.offsets:
                self._prepare(run, node)
            self._write(run, node, seconds)
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
            evidence = self._set_and_prove(run, {n: 0.0 for n in self.offsets})
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
                self._write(run, node, delta_s if high else 0.0)
            flips += 1
        for node in nodes:
            self._write(run, node, 0.0)
        evidence["flips"] = flips
        return evidence

    def heal_all(self, run: Any) -> dict:
        """Every clock back to zero offset, proven per node that is running."""
        for node in self.offsets:
            self._write(run, node, 0.0)
        running = [n for n in self.offsets if run.host.is_running(n)]
        measured = {n: self.measure(run, n) for n in running}
        ok = all(m is not None and abs(m) <= self.tolerance_s for m in measured.values())
        return {"measured_s": {n: (None if m is None else round(m, 3)) for n, m in measured.items()},
                "effective": ok}

    def teardown(self, run: Any) -> None:
        """Reset every offset to zero; never raises (the offset files stay for the logs)."""
        for node in list(self.offsets):
            try:
                self._write(run, node, 0.0)
            except Exception:
                pass


def shell_env(env: dict[str, str]) -> str:
    """The environment as a shell prefix (for reproducing a node's clock by hand)."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
