"""Choosing which nodes a fault hits: one, minority, majority, all, a partition leader, the controller.

Pure selection over node lists (unit-tested without a cluster) plus ``resolve_targets``, which asks the
live ``Cluster`` for leaders and the controller. A target that cannot be resolved (no leader right now,
the cluster cannot say) resolves to an empty list: the op then completes without effect, and the
coverage table shows it as attempted but not proven.
"""

from __future__ import annotations

import random
import re
from typing import Any

TARGETS = ("one", "minority", "majority", "all", "leader", "controller")


def minority_size(n: int) -> int:
    """Largest group that is still a minority of ``n`` (at least 1 when n >= 1)."""
    return max(1, (n - 1) // 2) if n else 0


def majority_size(n: int) -> int:
    """Smallest majority of ``n``."""
    return n // 2 + 1 if n else 0


def select(nodes: list[str], target: str, rng: random.Random) -> list[str]:
    """Pick nodes from ``nodes`` for a structural target (one / minority / majority / all)."""
    nodes = sorted(nodes)
    if not nodes:
        return []
    if target == "one":
        return [rng.choice(nodes)]
    if target == "minority":
        return sorted(rng.sample(nodes, minority_size(len(nodes))))
    if target == "majority":
        return sorted(rng.sample(nodes, majority_size(len(nodes))))
    if target == "all":
        return list(nodes)
    raise ValueError(f"unknown structural target {target!r}; known: one, minority, majority, all")


def broker_node(cluster: Any, broker_id: int) -> str | None:
    """Node name of broker ``broker_id``: ``cluster.broker_node(id)`` when the adapter has it, else the
    broker whose name ends in that number (``b1``, ``broker-1``)."""
    lookup = getattr(cluster, "broker_node", None)
    if callable(lookup):
        try:
            return lookup(broker_id)
        except Exception:
            return None
    for name in cluster.brokers():
        match = re.search(r"(\d+)$", name)
        if match and int(match.group(1)) == int(broker_id):
            return name
    return None


def resolve_targets(run: Any, value: dict) -> list[str]:
    """Nodes hit by an op whose value names ``target`` (and ``topic``/``partition`` for leaders).

    ``nodes`` in the value, when present, wins (replayed or hand-written ops name them explicitly).
    Random choices use ``Random(value["pick"])``: the seeded schedule put that number in the op, so
    the same seed picks the same nodes whatever else consumed randomness meanwhile.
    """
    rng = random.Random(value.get("pick", 0))
    if value.get("nodes"):
        return list(value["nodes"])
    cluster = run.cluster
    target = value.get("target", "one")
    if target == "controller":
        try:
            return [cluster.active_controller()]
        except Exception:
            return []
    if target == "leader":
        topic = value.get("topic") or run.spec.get("topic") or "queue"
        try:
            leaders = cluster.leaders(topic)
        except Exception:
            return []
        if not leaders:
            return []
        partition = value.get("partition")
        if partition is None or int(partition) not in leaders:
            partition = rng.choice(sorted(leaders))
        leader = leaders[int(partition)]
        if leader is None or int(leader) < 0:
            return []
        node = broker_node(cluster, int(leader))
        return [node] if node else []
    return select(list(cluster.brokers()), target, rng)
