"""Crash-lossy restart: kill -9 a node, drop its unsynced writes, keep it down, restart it.

``crash-lossy`` ``{"target": leader|follower|one|controller, "down_s": S, "then": none|kill-leader,
"before": none|clean-restart}``:

0. with ``before: clean-restart`` the target is first stopped with SIGTERM (a controlled shutdown that
   writes the clean-shutdown marker) and started again, so the crash below follows a clean stop: the
   history in which a broker must still register as unclean (K4) and lose its ELR place (KIP-966);
1. the target is killed with SIGKILL and its lazyfs mount drops every write not yet fsynced (so the node
   restarts exactly as after a power cut of its own disk);
2. it stays down ``down_s`` seconds, long enough for the controller to fence it and the leader to shrink
   the ISR, so the others move on without it;
3. it restarts; with ``then: kill-leader`` the partition's leader is then killed (and restarted after
   ``down_s``) so the node that lost data is a candidate in the election that follows: the window in
   which "last replica standing" and unclean-recovery bugs show.

The member extends ``nemesis.disk.DiskNemesis`` (same mounts, same counters; it also serves ``power-loss``
and ``lose-unsynced``, so a run asking for both families mounts once).

Evidence: ``dropped_bytes``, log end offsets before the crash and after the restart (``leo_lowered``),
the pids killed and started, and for ``then`` the leader killed and restarted. ``effective``: unsynced
bytes were dropped on the target (on the controller, which syncs every commit, the kill and restart
suffice), it is running again, and the follow-up kill (if asked) was proven.
"""

from __future__ import annotations

import random
import time
from typing import Any

from nemesis.disk import DiskNemesis
from nemesis.targeted.aim import aim, leader_node, topic_of
from nemesis.targets import data_nodes

# Time a restarted broker needs to register (and so read its marker) before it is killed again.
REGISTER_S = 3.0


class LossyRestartNemesis(DiskNemesis):
    """crash-lossy (plus the disk family's ops) over lazyfs mounts (see the module docstring)."""

    FS = DiskNemesis.FS | {"crash-lossy"}

    def __init__(self, down_s: float = 8.0, **disk_options: Any):
        super().__init__(**disk_options)
        self.down_s = down_s

    def invoke(self, run: Any, op: dict) -> dict:
        """``crash-lossy`` here; the disk family's ops as ``DiskNemesis`` does them."""
        if op["f"] != "crash-lossy":
            return super().invoke(run, op)
        value = dict(op.get("value") or {})
        return {**op, "type": "ok", "value": {**value, **self._crash_lossy(run, value)}}

    def _crash_lossy(self, run: Any, value: dict) -> dict:
        partition, nodes = aim(run, value)
        nodes = [n for n in data_nodes(run, nodes, value) if n in self.mounts][:1]
        if not nodes:
            return {"nodes": [], "effective": False, "skipped": "no target with a lazyfs mount"}
        node = nodes[0]
        down_s = float(value.get("down_s", self.down_s))
        before = self.status(run, node).get("dropped_bytes", 0)
        evidence: dict[str, Any] = {}
        if value.get("before") == "clean-restart":
            evidence["clean_restart"] = self._clean_restart(run, node)
            if not evidence["clean_restart"]["effective"]:
                return {"nodes": [node], "partition": partition, **evidence, "effective": False}
        state_before = self.log_state(run, node)
        killed = run.cluster.kill_node(node)
        self._ctl(run, node, "drop")
        dropped = self.status(run, node).get("dropped_bytes", 0) - before
        time.sleep(down_s)
        evidence.update({"nodes": [node], "partition": partition, "killed": {node: killed},
                         "dropped_bytes": {node: dropped}, "down_s": down_s})
        errors = {}
        try:
            evidence["started"] = {node: run.cluster.restart_node(node)}
        except Exception as exc:  # the heal retries; the failure is evidence
            errors[node] = f"{type(exc).__name__}: {exc}"
        state_after = self.log_state(run, node)
        leo_before, leo_after = state_before.get("leo", {}), state_after.get("leo", {})
        evidence.update({
            "leo_before": {node: leo_before},
            "leo_after": {node: leo_after},
            "leo_lowered": {node: any(leo_after.get(p, 0) < leo for p, leo in leo_before.items())},
        })
        follow_up_ok = True
        if value.get("then") == "kill-leader" and not errors:
            evidence["then"] = self._kill_leader(run, value, partition, node, down_s)
            follow_up_ok = evidence["then"].get("effective", False)
        if errors:
            evidence["errors"] = errors
        # The controller syncs its metadata log at every commit, so nothing to drop is what a correct one
        # shows: the crash and restart are the effect there. A broker that dropped nothing lost nothing.
        lost_or_controller = dropped > 0 or node not in run.cluster.brokers()
        evidence["effective"] = (lost_or_controller and not errors and run.host.is_running(node) and follow_up_ok)
        return evidence

    def _clean_restart(self, run: Any, node: str) -> dict:
        """SIGTERM ``node`` (it shuts down in a controlled way and writes its marker), start it again and
        give it time to register, so the crash that follows comes after a clean stop."""
        pid = run.host.pid(node)
        try:
            run.cluster.stop_node(node)
            stopped = not run.host.is_running(node)
            started = run.cluster.restart_node(node)
        except Exception as exc:
            return {"stopped": pid, "error": f"{type(exc).__name__}: {exc}", "effective": False}
        time.sleep(REGISTER_S)
        return {"stopped": pid, "started": started,
                "effective": bool(pid) and stopped and run.host.is_running(node)}

    def _kill_leader(self, run: Any, value: dict, partition: int | None, lossy: str, down_s: float) -> dict:
        """Kill the partition's current leader unless it is the node that just lost data; restart it later."""
        _, leader = leader_node(run, topic_of(run, value), random.Random(value.get("pick", 0)), partition)
        if leader is None or leader == lossy:
            return {"leader": leader, "skipped": "the lossy node leads (or no leader)", "effective": True}
        pid = run.cluster.kill_node(leader)
        gone = not run.host.is_running(leader)
        time.sleep(down_s)
        try:
            started = run.cluster.restart_node(leader)
        except Exception as exc:
            return {"leader": leader, "killed": pid, "error": f"{type(exc).__name__}: {exc}", "effective": False}
        return {"leader": leader, "killed": pid, "started": started,
                "effective": bool(pid) and gone and run.host.is_running(leader)}

