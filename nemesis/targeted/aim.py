"""Who a targeted fault hits: a partition's leader, one of its followers, the controller, by broker id.

Thin lookups over the live ``Cluster`` (leaders from Metadata); a lookup that fails resolves to None or
an empty list, and the op then reports itself as not effective rather than hitting someone else.
"""

from __future__ import annotations

import random
from typing import Any

from nemesis.targets import broker_node, pick_partition


def topic_of(run: Any, value: dict) -> str:
    """The op's topic: ``value["topic"]``, else the run's."""
    return value.get("topic") or run.spec.topic or "queue"


def leader_node(run: Any, topic: str, rng: random.Random, partition: int | None = None) -> tuple[int | None, str | None]:
    """``(partition, leader node)`` of ``partition`` (drawn with ``rng`` among the partitions that have a
    leader when None: ``nemesis.targets.pick_partition``); None where unknown."""
    try:
        leaders = run.cluster.leaders(topic)
    except Exception:
        return partition, None
    if not leaders:
        return partition, None
    partition = pick_partition(leaders, rng, partition)
    leader = leaders.get(partition)
    if leader is None or int(leader) < 0:
        return partition, None
    return partition, broker_node(run.cluster, int(leader))


def node_of(run: Any, broker_id: Any) -> str | None:
    """Node name of a broker id (None for a missing or negative id)."""
    if broker_id is None or int(broker_id) < 0:
        return None
    return broker_node(run.cluster, int(broker_id))


def aim(run: Any, value: dict) -> tuple[int | None, list[str]]:
    """Resolve ``value["target"]`` (``leader``, ``follower``, ``one``, ``controller``) to nodes.

    ``follower`` is a broker other than the partition's leader; ``nodes`` in the value wins.
    """
    rng = random.Random(value.get("pick", 0))
    if value.get("nodes"):
        return value.get("partition"), list(value["nodes"])
    target = value.get("target", "leader")
    if target == "controller":
        try:
            return None, [run.cluster.active_controller()]
        except Exception:
            return None, []
    if target == "one":
        return None, [rng.choice(sorted(run.cluster.brokers()))]
    partition, leader = leader_node(run, topic_of(run, value), rng, value.get("partition"))
    if leader is None:
        return partition, []
    if target == "leader":
        return partition, [leader]
    if target == "follower":
        others = sorted(n for n in run.cluster.brokers() if n != leader)
        return partition, [rng.choice(others)] if others else []
    raise ValueError(f"unknown target {target!r}; known: leader, follower, one, controller")


def broker_ids(run: Any) -> list[int]:
    """Kafka ids of the cluster's brokers (``Cluster.node_id`` when the adapter has it, else the name's number)."""
    node_id = getattr(run.cluster, "node_id", None)
    return sorted(int(node_id(n)) if callable(node_id) else int(n.lstrip("b")) for n in run.cluster.brokers())
