"""Membership churn: replicas removed and added back, the replication factor shrunk and grown, reassignments
cancelled mid-way, with the replica being moved killed or cut off while it happens.

``churn`` ``{"kind": remove-readd|shrink-grow|grow-shrink|cancel-midway, "under": none|kill|partition}``
on one partition (drawn from ``pick``) through the admin API (``nemesis.admin.AdminNemesis``, KIP-860's
flag set, since the replication factor changes):

- ``remove-readd``: drop a follower from the replica set, wait until that is committed, add it back;
- ``shrink-grow``: the same with the leader (the controller must move leadership first);
- ``grow-shrink``: add a broker outside the set, then remove it (``shrink-grow`` when every broker already
  holds a replica);
- ``cancel-midway``: remove a follower, start adding it back and cancel that while it is in flight (the
  under-fault, never ``none`` here, keeps it in flight): the replica set must fall back to the one without it.

``under`` strikes the replica being added right after the step that adds it is accepted: ``kill``
kill -9s it, ``partition`` cuts it from the leader both ways (``NetworkRules``; ``kill`` when the host
has no rules); the fault is healed ``under_s`` seconds later, inside the op, and the op then waits for
the reassignment to finish.

Evidence: each step's target, the controller's answer and the replicas read back; the under-fault's
proof (pid gone; a probe across the cut timing out); the final replicas. ``effective``: every step was
accepted and the final replica set is the one the sequence leads to (for a cancel: the cancel was accepted
while the reassignment was in flight and nothing is in flight after it).
"""

from __future__ import annotations

import random
import time
from typing import Any

from harness.interfaces import Killable, NetworkRules
from nemesis.admin import AdminNemesis
from nemesis.base import NemesisUnsupported, host_label
from nemesis.targeted.aim import broker_ids, node_of, topic_of
from nemesis.targeted.plans import CHURNS

# How long an admin call is retried on fresh clients before the churn op gives up (and ends info).
ASK_TIMEOUT_S = 15.0


def plan_churn(kind: str, replicas: list[int], leader: int | None, brokers: list[int],
               rng: random.Random) -> tuple[list[list[int]], int | None]:
    """The replica lists the sequence sets, in order, and the replica the under-fault hits (None: no plan)."""
    followers = [r for r in replicas if r != leader]
    outside = [b for b in sorted(brokers) if b not in replicas]
    if kind == "grow-shrink" and outside:
        added = rng.choice(outside)
        return [[*replicas, added], list(replicas)], added
    if kind in ("remove-readd", "cancel-midway", "shrink-grow", "grow-shrink"):
        pool = [leader] if kind in ("shrink-grow", "grow-shrink") and leader in replicas else followers
        if len(replicas) < 2 or not pool:
            return [], None
        moved = rng.choice(pool)
        without = [r for r in replicas if r != moved]
        return [without, [*without, moved]], moved
    raise ValueError(f"unknown churn {kind!r}; known: {', '.join(CHURNS)}")


class ChurnNemesis:
    """churn (see the module docstring)."""

    FS = {"churn"}

    def __init__(self, under_s: float = 3.0, settle_s: float = 30.0):
        self.under_s = under_s
        self.settle_s = settle_s
        self.admin = AdminNemesis()
        self.down: set[str] = set()
        self.cut: list[tuple[str, str]] = []

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse when the host cannot kill nodes (partitions are used when the host has rules)."""
        if not isinstance(run.host, Killable):
            raise NemesisUnsupported(f"the {host_label(run)} host cannot kill nodes (no Killable ability)")

    def _can_cut(self, run: Any) -> bool:
        return isinstance(run.host, NetworkRules) and not run.host.network_rules_problem()

    def invoke(self, run: Any, op: dict) -> dict:
        """Run one churn sequence (healing its own kill or cut) and return the evidence."""
        value = dict(op.get("value") or {})
        try:
            evidence = self._churn(run, value)
        finally:
            self._heal_under(run)
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _settle(self, run: Any, topic: str, partition: int, target: list[int]) -> dict:
        """Wait until ``target`` is the committed replica set with nothing in flight; the state read back."""
        deadline = time.monotonic() + self.settle_s
        state, ongoing, error = {}, None, None
        while True:
            try:
                state = self.admin.describe(run, topic).get(partition, {})
                ongoing = self.admin.ongoing(run, topic).get(partition)
                error = None
            except Exception as exc:  # a broker just killed or cut: ask again on a fresh client
                error = f"{type(exc).__name__}: {exc}"
                self.admin.teardown(run)
            done = error is None and state.get("replicas") == target and ongoing is None
            if done or time.monotonic() >= deadline:
                out = {"replicas": state.get("replicas"), "isr": state.get("isr"), "ongoing": ongoing}
                return {**out, "error": error} if error else out
            time.sleep(0.3)

    def _ask(self, run: Any, call: str, *args: Any) -> Any:
        """``self.admin.<call>(run, *args)``, again on a fresh client while it fails for up to
        ``ASK_TIMEOUT_S``: the client may still hold a connection to a broker an earlier fault killed or cut
        (socket disconnected, unknown broker id). The last failure is raised."""
        deadline = time.monotonic() + ASK_TIMEOUT_S
        while True:
            try:
                return getattr(self.admin, call)(run, *args)
            except Exception:
                self.admin.teardown(run)
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _churn(self, run: Any, value: dict) -> dict:
        topic = self._topic(run, value)
        rng = random.Random(value.get("pick", 0))
        state = self._ask(run, "described", topic)
        if not state:
            return {"effective": False, "skipped": f"no partition of {topic} in Metadata"}
        partition = int(value["partition"]) if value.get("partition") is not None else rng.choice(sorted(state))
        before = state[partition]
        brokers = broker_ids(run)
        kind, under = value.get("kind", "remove-readd"), value.get("under", "kill")
        if under == "partition" and not self._can_cut(run):
            under = "kill"
        if kind == "cancel-midway" and under == "none":
            under = "kill"  # without it the addition may finish before the cancel arrives
        steps, moved = plan_churn(kind, before["replicas"], before["leader"], brokers, rng)
        out: dict[str, Any] = {"partition": partition, "replicas_before": before["replicas"], "moved": moved,
                               "under": under, "steps": []}
        if not steps:
            return {**out, "effective": False, "skipped": f"{kind} impossible with {before['replicas']}"}
        accepted = True
        for i, target in enumerate(steps):
            # the same target again is harmless if a first attempt did land
            error = self._ask(run, "alter", topic, {partition: target}, True).get(partition, "NO_ANSWER")
            step = {"target": target, "error": error}
            accepted = accepted and error is None
            last = i == len(steps) - 1
            if last and under != "none" and error is None:
                step["under"] = self._strike_under(run, under, moved, before["leader"])
            if last and kind == "cancel-midway":
                step["cancel"] = self._cancel(run, topic, partition)
            step["healed"] = self._heal_under(run)
            if not (last and kind == "cancel-midway"):
                step["read_back"] = self._settle(run, topic, partition, target)
            out["steps"].append(step)
            if error is not None:
                break
        final_target = steps[0] if kind == "cancel-midway" else steps[-1]
        final = self._settle(run, topic, partition, final_target)
        out["replicas_after"] = final["replicas"]
        under_ok = all(s.get("under", {}).get("effective", True) for s in out["steps"])
        out["effective"] = accepted and under_ok and final["replicas"] == final_target
        if kind == "cancel-midway":
            out["effective"] = out["effective"] and out["steps"][-1].get("cancel", {}).get("effective", False)
        return out

    def _topic(self, run: Any, value: dict) -> str:
        return topic_of(run, value)

    def _cancel(self, run: Any, topic: str, partition: int) -> dict:
        ongoing = self._ask(run, "ongoing", topic).get(partition)
        error = self._ask(run, "alter", topic, {partition: None}, True).get(partition, "NO_ANSWER")
        after = self._ask(run, "ongoing", topic).get(partition)
        return {"was_ongoing": ongoing, "error": error, "ongoing_after": after,
                "effective": ongoing is not None and error is None and after is None}

    def _strike_under(self, run: Any, under: str, moved: int | None, leader: int | None) -> dict:
        node, leader_node = node_of(run, moved), node_of(run, leader)
        if node is None:
            return {"effective": False, "skipped": "no node for the moved replica"}
        if under == "kill":
            pid = run.cluster.kill_node(node)
            self.down.add(node)
            return {"killed": {node: pid}, "effective": pid is not None and not run.host.is_running(node)}
        if leader_node is None or leader_node == node:
            others = [n for n in run.cluster.brokers() if n != node]
            leader_node = others[0] if others else None
        if leader_node is None:
            return {"effective": False, "skipped": "nobody to cut from"}
        errors = []
        for edge in ((node, leader_node), (leader_node, node)):
            error = run.host.block(*edge)
            if error is None:
                self.cut.append(edge)
            else:
                errors.append(error)
        probe = run.host.probe(node, leader_node)
        return {"cut": [list(e) for e in self.cut], "probe": probe, "errors": errors,
                "effective": not errors and probe == "timeout"}

    def _heal_under(self, run: Any) -> dict:
        """Restart a killed replica and remove a cut, after ``under_s``."""
        if not self.down and not self.cut:
            return {}
        time.sleep(self.under_s)
        started = {}
        for node in sorted(self.down):
            try:
                started[node] = run.cluster.restart_node(node)
                self.down.discard(node)
            except Exception:
                pass  # left in self.down for the final heal
        removed = 0
        for edge in list(self.cut):
            if run.host.unblock(*edge) is None:
                self.cut.remove(edge)
                removed += 1
        return {"started": started, "rules_removed": removed}

    def heal_all(self, run: Any) -> dict:
        """Restart what is still down and remove any cut left (an op that failed half-way)."""
        self.under_s, under_s = 0.0, self.under_s
        try:
            healed = self._heal_under(run)
        finally:
            self.under_s = under_s
        return {**healed, "effective": not self.down and not self.cut}

    def teardown(self, run: Any) -> None:
        """Close the admin client and remove cuts; never raises."""
        for edge in list(self.cut):
            try:
                run.host.unblock(*edge)
            except Exception:
                pass
        self.cut.clear()
        self.admin.teardown(run)

