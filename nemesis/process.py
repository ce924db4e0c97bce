"""Process faults: kill -9 and restart, pause (SIGSTOP/SIGCONT), graceful stop and start.

Ops (process ``"nemesis"``; the invoke value says what to hit, the completion value proves it):

- ``kill``   ``{"target": one|minority|majority|all|leader|controller|group-coordinator|txn-coordinator}``
  -> SIGKILL through ``Cluster.kill_node``; evidence ``killed: {node: pid}`` and that the pid no longer
  exists; a coordinator target adds ``coordinator`` (its state-topic partition and node, ``nemesis.targets``).
- ``stop``   same targets -> SIGTERM (brokers do controlled shutdown, C8/C9, and write the clean-shutdown
  marker, K4), SIGKILL after a timeout; evidence: the pid and its exit status.
- ``start``  restarts every node this nemesis took down (or ``nodes``); evidence: the new pids, alive.
- ``pause``  the host's ``pause`` (SIGSTOP on both backends); evidence: process state ``T`` afterwards.
- ``resume`` the host's ``resume`` for every paused node; evidence: the state is no longer ``T``.

Every completion carries ``effective``: true only when every targeted node shows the evidence. Node
restarts go through ``Cluster.restart_node`` so the cluster re-applies the node's config and
``run.node_env`` (e.g. the clock nemesis's LD_PRELOAD).

Host abilities: ``Killable`` for everything, ``Pausable`` when the run asks for ``pause``; the process
states in the evidence come from the host (``Killable.process_state``), whatever the backend.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from harness.interfaces import Killable, Pausable
from nemesis.base import NemesisUnsupported, host_label
from nemesis.targets import resolve_targets_explained


def _wait(predicate, timeout_s: float, step_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step_s)


class ProcessNemesis:
    """kill / stop / start / pause / resume of broker and controller processes."""

    FS = {"kill", "stop", "start", "pause", "resume"}

    def __init__(self, stop_timeout_s: float = 10.0, fs: Iterable[str] | None = None):
        """``fs``: the ops the run will ask for (default: all), so that setup refuses only what the host
        cannot do for them."""
        self.stop_timeout_s = stop_timeout_s
        self.wanted = set(self.FS if fs is None else fs)
        self.down: set[str] = set()
        self.paused: set[str] = set()

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse when the host cannot signal node processes, or cannot pause them and pauses are asked for."""
        if not isinstance(run.host, Killable):
            raise NemesisUnsupported(f"the {host_label(run)} host cannot signal node processes (no Killable ability)")
        if "pause" in self.wanted and not isinstance(run.host, Pausable):
            raise NemesisUnsupported(f"the {host_label(run)} host cannot pause node processes (no Pausable ability)")

    def invoke(self, run: Any, op: dict) -> dict:
        """Perform one process fault and return its completion with evidence."""
        value = dict(op.get("value") or {})
        f = op["f"]
        if f == "start":
            nodes = list(value.get("nodes") or sorted(self.down))
        elif f == "resume":
            nodes = list(value.get("nodes") or sorted(self.paused))
        found: dict = {}
        if f not in ("start", "resume"):
            nodes, found = resolve_targets_explained(run, value)
        handler = getattr(self, f"_{f}")
        evidence = {**found, **handler(run, nodes)}
        evidence["nodes"] = nodes
        evidence.setdefault("effective", bool(nodes) and all(evidence.get("per_node", {}).values()))
        return {**op, "type": "ok", "value": {**value, **evidence}}

    # -- faults --------------------------------------------------------------------------------
    def _kill(self, run: Any, nodes: list[str]) -> dict:
        killed, proven = {}, {}
        for node in nodes:
            pid = run.host.pid(node)
            returned = run.cluster.kill_node(node)
            pid = returned if returned is not None else pid
            killed[node] = pid
            self.down.add(node)
            self.paused.discard(node)
            # Evidence: the pid we signalled is gone (or a zombie) and the host no longer runs the node.
            proven[node] = pid is not None and _wait(
                lambda p=pid, n=node: run.host.process_state(n, p) in (None, "Z") and not run.host.is_running(n),
                10.0,
            )
        return {"killed": killed, "per_node": proven}

    def _stop(self, run: Any, nodes: list[str]) -> dict:
        stopped, proven, exit_codes = {}, {}, {}
        for node in nodes:
            pid = run.host.pid(node)
            stopped[node] = pid
            run.host.stop(node, timeout_s=self.stop_timeout_s)
            self.down.add(node)
            self.paused.discard(node)
            exit_codes[node] = run.host.exit_code(node)
            proven[node] = pid is not None and not run.host.is_running(node)
        return {"stopped": stopped, "exit_codes": exit_codes, "per_node": proven}

    def _start(self, run: Any, nodes: list[str]) -> dict:
        started, proven, errors = {}, {}, {}
        for node in nodes:
            if run.host.is_running(node):
                self.down.discard(node)
                started[node] = run.host.pid(node)
                proven[node] = False  # nothing to restart: not evidence of a restart
                continue
            try:
                started[node] = run.cluster.restart_node(node)
            except Exception as exc:  # reported as evidence; the heal will retry
                errors[node] = f"{type(exc).__name__}: {exc}"
                proven[node] = False
                continue
            self.down.discard(node)
            proven[node] = run.host.is_running(node)
        out = {"started": started, "per_node": proven}
        if errors:
            out["errors"] = errors
        return out

    def _pause(self, run: Any, nodes: list[str]) -> dict:
        pids, states, proven = {}, {}, {}
        for node in nodes:
            pid = run.host.pid(node)
            pids[node] = pid
            if pid is None:
                proven[node] = False
                continue
            run.host.pause(node)
            self.paused.add(node)
            # Evidence: the kernel reports the process as stopped (state T) after SIGSTOP.
            proven[node] = _wait(lambda p=pid, n=node: run.host.process_state(n, p) == "T", 5.0)
            states[node] = run.host.process_state(node, pid)
        return {"pids": pids, "proc_state": states, "per_node": proven}

    def _resume(self, run: Any, nodes: list[str]) -> dict:
        pids, states, proven = {}, {}, {}
        for node in nodes:
            pid = run.host.pid(node)
            pids[node] = pid
            if pid is not None:
                run.host.resume(node)
                proven[node] = _wait(lambda p=pid, n=node: run.host.process_state(n, p) not in ("T", "t"), 5.0)
                states[node] = run.host.process_state(node, pid)
            else:
                proven[node] = False
            self.paused.discard(node)
        return {"pids": pids, "proc_state": states, "per_node": proven}

    # -- healing -------------------------------------------------------------------------------
    def heal_all(self, run: Any) -> dict:
        """Continue every paused node and restart every node that is down (ours or otherwise)."""
        resumed = self._resume(run, sorted(self.paused)) if self.paused else {}
        expected = set(self.down)
        # Every node the host ever started should be running after a heal, whoever stopped it.
        expected |= set(run.host.nodes())
        down = sorted(n for n in expected if n and not run.host.is_running(n))
        started = self._start(run, down) if down else {}
        return {
            "resumed": resumed.get("pids", {}),
            "started": started.get("started", {}),
            "errors": started.get("errors", {}),
            "effective": all(run.host.is_running(n) for n in down) if down else True,
        }

    def teardown(self, run: Any) -> None:
        """Continue paused nodes so teardown can stop them; never raises."""
        for node in list(self.paused):
            try:
                run.host.resume(node)
            except Exception:
                pass
        self.paused.clear()
