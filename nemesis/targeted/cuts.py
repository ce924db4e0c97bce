"""Targeted partitions: a broker cut off from the controller only, one-way cuts between leader and follower.

``start-cut`` ``{"kind": ...}`` picks a partition's leader (and a follower) and drops, through the host's
``NetworkRules``, exactly these directed edges:

- ``controller-only``: the leader and the controller, both ways; the leader still reaches its peers, so
  followers keep fetching from a leader whose AlterPartition and heartbeats go nowhere;
- ``follower-controller``: the same for a follower;
- ``leader-to-follower``: what the leader sends to one follower (the follower's fetches get no answer);
- ``follower-to-leader``: what one follower sends to the leader (its fetches never arrive).

The rules and their proof are ``nemesis.net``'s (a probe across each dropped edge times out while the
rules hold; ``stop-cut`` removes them and probes again). The pure part is ``cut_edges``.
"""

from __future__ import annotations

import random
from typing import Any

from nemesis.targeted.aim import leader_node, topic_of
from nemesis.targeted.netmember import NetMember
from nemesis.targeted.plans import CUTS


def cut_edges(kind: str, leader: str, follower: str | None, controller: str | None) -> set[tuple[str, str]]:
    """The directed edges ``(src, dst)`` to drop for cut ``kind`` (empty when a needed node is missing)."""
    if kind == "controller-only":
        return {(leader, controller), (controller, leader)} if controller else set()
    if kind == "follower-controller":
        return {(follower, controller), (controller, follower)} if controller and follower else set()
    if kind == "leader-to-follower":
        return {(leader, follower)} if follower else set()
    if kind == "follower-to-leader":
        return {(follower, leader)} if follower else set()
    raise ValueError(f"unknown cut {kind!r}; known: {', '.join(CUTS)}")


class CutNemesis(NetMember):
    """start-cut / stop-cut (see the module docstring)."""

    FS = {"start-cut", "stop-cut"}

    def invoke(self, run: Any, op: dict) -> dict:
        """Install the cut (replacing one in place) or remove it; evidence from ``nemesis.net``."""
        value = dict(op.get("value") or {})
        if op["f"] == "stop-cut":
            done = self.net.invoke(run, {**op, "f": "stop-partition"})
            return {**done, "f": op["f"]}
        kind = value.get("kind", "controller-only")
        rng = random.Random(value.get("pick", 0))
        partition, leader = leader_node(run, topic_of(run, value), rng, value.get("partition"))
        if leader is None:
            self.net.invoke(run, {"f": "stop-partition"})
            return {**op, "type": "ok", "value": {**value, "effective": False, "skipped": "no leader"}}
        others = sorted(n for n in run.cluster.brokers() if n != leader)
        follower = rng.choice(others) if others else None
        try:
            controller = run.cluster.active_controller()
        except Exception:
            controller = None
        edges = sorted(cut_edges(kind, leader, follower, controller))
        done = self.net.invoke(run, {**op, "f": "start-partition",
                                     "value": {**value, "topology": kind, "edges": [list(e) for e in edges]}})
        extra = {"partition": partition, "leader": leader, "follower": follower, "controller": controller}
        if not edges:
            done["value"]["effective"] = False
        return {**done, "f": op["f"], "value": {**done["value"], **extra}}
