"""fsync-loss faults: lazyfs under every node's data directory; power loss = drop unsynced + kill -9 +
restart.

At ``setup`` (before any node starts) each node's data directory (``<node_dir>/data``, where the
reference cluster puts ``log.dirs``) becomes a lazyfs mount (``nemesis.lazyfs``) over
``<node_dir>/data.backing``, with fsname ``kraftcheck-<run id>`` so ``kraftcheck clean`` can find it:

the host starts the daemon in the node's environment before the node starts
(``FuseMounts.start_fuse_daemon``), so the node's processes see the mount, and records it so that
``kraftcheck clean`` finds it (on the local backend a host process with a pid file, which needs root and
``/dev/fuse``; on docker inside the node's container). A host without the ability, or one that cannot
mount here, is refused at setup with the host's hint.

Ops (control through the mount's ``/.lazyfs-ctl``, counters from ``/.lazyfs-status``, both read
from inside the node's environment with ``NodeExec.exec``):

- ``lose-unsynced`` ``{"target"}``: drop unsynced data only (the process keeps running: a model of a
  disk that silently lost writes; use with care);
- ``power-loss`` ``{"target"}`` (one / minority / majority / all / leader / nodes): for each target,
  kill -9, drop unsynced data, restart. Several targets lose power together (correlated loss): all are
  killed and dropped before any restarts.

Evidence per node: ``dropped_bytes``; the log end offsets per partition read from the data directory
before the crash (what the node had written, synced or not) and after the restart (what survived), and
``leo_lowered``. ``effective`` is true when unsynced bytes were dropped on every target.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from harness.interfaces import FuseMounts, NodeExec
from nemesis.base import NemesisUnsupported, host_label, restart_nodes
from nemesis.clock import expected_nodes
from nemesis.targets import data_nodes, resolve_targets

CTL = ".lazyfs-ctl"
STATUS = ".lazyfs-status"


class DiskNemesis:
    """power-loss / lose-unsynced over lazyfs mounts (see the module docstring)."""

    FS = {"power-loss", "lose-unsynced"}

    def __init__(self, data_subdir: str = "data", torn: bool = False, restart_wait_s: float = 30.0):
        self.data_subdir = data_subdir
        self.torn = torn
        self.restart_wait_s = restart_wait_s
        self.mounts: dict[str, str] = {}  # node -> mount point, as the node sees it

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    # -- mounting ------------------------------------------------------------------------------
    def setup(self, run: Any) -> None:
        """Mount lazyfs on every node's data directory (before the nodes start)."""
        for ability in (FuseMounts, NodeExec):
            if not isinstance(run.host, ability):
                raise NemesisUnsupported(
                    f"no lazyfs support on the {host_label(run)} host (no {ability.__name__} ability)")
        problem = run.host.fuse_problem()
        if problem:
            raise NemesisUnsupported(problem)
        for node in expected_nodes(run):
            self.mount(run, node)

    def mount(self, run: Any, node: str) -> None:
        """Mount lazyfs for ``node`` and wait until the mount is there."""
        base = run.host.node_path(node, run.host.node_dir(node))
        mnt = os.path.join(base, self.data_subdir)
        backing = os.path.join(base, self.data_subdir + ".backing")
        code, out = run.host.exec(node, ["mkdir", "-p", mnt, backing], timeout_s=20)
        if code != 0:
            raise NemesisUnsupported(f"cannot create {mnt} for {node}: {out.strip()[:200]}")
        argv = ["python3", "-m", "nemesis.lazyfs", backing, mnt, "--fsname", f"kraftcheck-{run.host.run_id}"]
        if self.torn:
            argv.append("--torn")
        run.host.start_fuse_daemon(node, argv, os.path.join(base, "lazyfs.log"))
        deadline = time.monotonic() + 20
        while not self._mounted(run, node, mnt):
            if time.monotonic() > deadline:
                raise NemesisUnsupported(f"lazyfs did not mount on {mnt} for {node}")
            time.sleep(0.1)
        self.mounts[node] = mnt

    def _mounted(self, run: Any, node: str, mnt: str) -> bool:
        code, out = run.host.exec(node, ["cat", "/proc/mounts"], timeout_s=10)
        return code == 0 and any(line.split()[1:2] == [mnt] for line in out.splitlines())

    def _ctl(self, run: Any, node: str, command: str) -> bool:
        path = os.path.join(self.mounts[node], CTL)
        code, _ = run.host.exec(node, ["sh", "-c", f"printf {command} > {path}"], timeout_s=30)
        return code == 0

    def status(self, run: Any, node: str) -> dict:
        """lazyfs counters of ``node``'s mount."""
        code, out = run.host.exec(node, ["cat", os.path.join(self.mounts[node], STATUS)], timeout_s=30)
        try:
            return json.loads(out.strip().splitlines()[-1]) if code == 0 else {}
        except (ValueError, IndexError):
            return {}

    def log_state(self, run: Any, node: str) -> dict:
        """Log end offsets and bytes of the node's data directory, read inside the node's environment
        (on docker only the container sees the FUSE mount)."""
        code, out = run.host.exec(node, ["python3", "-m", "nemesis.logdir", self.mounts[node]], timeout_s=60)
        try:
            return json.loads(out.strip().splitlines()[-1]) if code == 0 else {}
        except (ValueError, IndexError):
            return {}

    # -- ops -----------------------------------------------------------------------------------
    def invoke(self, run: Any, op: dict) -> dict:
        """Drop unsynced data (and for power loss kill -9 and restart) on the target nodes."""
        value = dict(op.get("value") or {})
        nodes = [n for n in data_nodes(run, resolve_targets(run, value), value) if n in self.mounts]
        before = {n: self.status(run, n).get("dropped_bytes", 0) for n in nodes}
        state_before = {n: self.log_state(run, n) for n in nodes}
        killed: dict = {}
        started: dict = {}
        errors: dict = {}
        if op["f"] == "power-loss":
            for node in nodes:  # correlated: every target loses power before any comes back
                killed[node] = run.cluster.kill_node(node)
        for node in nodes:
            self._ctl(run, node, "drop")
        dropped = {n: self.status(run, n).get("dropped_bytes", 0) - before[n] for n in nodes}
        if op["f"] == "power-loss":
            started, errors = restart_nodes(run, nodes)  # a failure is evidence; the heal retries
        state_after = {n: self.log_state(run, n) for n in nodes}
        leo_before = {n: state_before[n].get("leo", {}) for n in nodes}
        leo_after = {n: state_after[n].get("leo", {}) for n in nodes}
        lowered = {
            n: any(leo_after[n].get(p, 0) < leo for p, leo in leo_before[n].items()) for n in nodes
        }
        evidence = {
            "nodes": nodes,
            "dropped_bytes": dropped,
            "leo_before": leo_before,
            "leo_after": leo_after,
            "leo_lowered": lowered,
            "data_bytes_before": {n: state_before[n].get("bytes") for n in nodes},
            "data_bytes_after": {n: state_after[n].get("bytes") for n in nodes},
            "effective": bool(nodes) and all(dropped[n] > 0 for n in nodes) and not errors,
        }
        if op["f"] == "power-loss":
            evidence["killed"] = killed
            evidence["started"] = started
        if errors:
            evidence["errors"] = errors
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def heal_all(self, run: Any) -> dict:
        """Sync every mount (so nothing more can be lost) and report the counters."""
        synced = {}
        for node in self.mounts:
            synced[node] = self._ctl(run, node, "sync")
        return {"synced": synced, "effective": all(synced.values())}

    def teardown(self, run: Any) -> None:
        """Sync and unmount every mount (the daemons end with them); never raises."""
        for node, mnt in list(self.mounts.items()):
            try:
                self._ctl(run, node, "sync")
            except Exception:
                pass
            try:
                run.host.stop_fuse_daemon(node, mnt)
            except Exception:
                pass
        self.mounts.clear()
