"""Choosing which nodes a fault hits: one, minority, majority, all, a partition leader, the (active)
controller, a minority or a majority of the controller quorum, the group or the transaction coordinator.

Pure selection over node lists (unit-tested without a cluster) plus ``resolve_targets``, which asks the
live ``Cluster`` for leaders and the controller (a system without one: a node that is not a broker, such as
its storage node, else one broker). A target that cannot be resolved (no leader right now,
the cluster cannot say) resolves to an empty list: the op then completes without effect, and the
coverage table shows it as attempted but not proven. A fault aimed at "a leader" without naming the
partition picks among the partitions that have one (``pick_partition``): right after another fault some
partitions are leaderless for a moment, and a turn spent on one of them would prove nothing.

Coordinator targets: a Kafka coordinator is the broker that leads a partition of an internal state topic.
``group-coordinator`` is the leader of the ``__consumer_offsets`` partition that holds the run's group
(``<topic>-group``, placed as Kafka places it: ``abs(String.hashCode(group)) % partitions``);
``txn-coordinator`` the leader of a led ``__transaction_state`` partition. Those topics are created on a
client's first FindCoordinator: before that (or when no broker can say) the target falls back to one
broker drawn at random, and the evidence says so. ``coordinator_of`` returns that evidence (topic,
partition, leader id, node, the fallback's reason) for the completion; ``coordinator_targets`` says which
coordinators a run's workload has (a subscribing consumer, a transactional producer).
"""

from __future__ import annotations

import random
import re
from typing import Any

TARGETS = ("one", "minority", "majority", "all", "leader", "controller", "controller-minority",
           "controller-majority", "group-coordinator", "txn-coordinator")
QUORUM_TARGETS = {"controller-minority": "minority", "controller-majority": "majority"}
# Coordinator target -> the internal topic whose partition leaders are the coordinators.
COORDINATOR_TOPICS = {"group-coordinator": "__consumer_offsets", "txn-coordinator": "__transaction_state"}
# Both state topics have 3 partitions on the reference brokers (their defaults, as the issue sets them): the
# count used when Metadata lists none of the topic's partitions.
STATE_TOPIC_PARTITIONS = 3


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


def pick_partition(leaders: dict[int, int], rng: random.Random, partition: Any = None) -> int:
    """``partition`` when it is one of ``leaders``' (partition -> leader id, -1 when leaderless), else one
    drawn with ``rng`` among the partitions with a leader (among all of them when none has one)."""
    if partition is not None and int(partition) in leaders:
        return int(partition)
    led = sorted(p for p, leader in leaders.items() if leader is not None and int(leader) >= 0)
    return rng.choice(led or sorted(leaders))


# Kafka's key-to-partition rule, repeated from the reference implementation's core
# (``reference_impl.protocol.kafka_hash``), which the nemeses may not import: they aim at any system under
# test; tests/test_facts_said_once.py keeps the two equal.
def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` (31-polynomial over UTF-16 code units) as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def group_partition(group: str, partitions: int = STATE_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of ``group``: Kafka's ``Utils.abs(group.hashCode()) % partitions``
    (``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % max(1, partitions)


def run_group(topic: str) -> str:
    """The consumer group of a run's subscribing consumers (the workload names it so: ``<topic>-group``)."""
    return f"{topic}-group"


def coordinator_targets(sub_via: str | None, txn: bool) -> tuple[str, ...]:
    """The coordinator targets a run's workload gives meaning to: the group coordinator when some consumer
    subscribes (``sub_via`` other than plain ``assign``), the transaction coordinator with ``txn``."""
    out = []
    if sub_via and "subscribe" in str(sub_via).split(","):
        out.append("group-coordinator")
    if txn:
        out.append("txn-coordinator")
    return tuple(out)


def coordinator_partition(target: str, leaders: dict[int, int], group: str, rng: random.Random) -> int:
    """The state-topic partition whose leader is ``target``'s coordinator, given that topic's ``leaders``
    (partition -> leader id): the group's own partition for the group coordinator (whether or not it has
    a leader right now: no other broker coordinates that group), a led partition for transactions."""
    if target == "group-coordinator":
        return group_partition(group, len(leaders) or STATE_TOPIC_PARTITIONS)
    if target == "txn-coordinator":
        return pick_partition(leaders, rng)
    raise ValueError(f"unknown coordinator target {target!r}; known: {', '.join(COORDINATOR_TOPICS)}")


def coordinator_of(run: Any, target: str, value: dict) -> dict:
    """Where ``target`` (a coordinator target) is right now: ``{"target", "topic", "partition", "leader",
    "node"}``; when the state topic is not there yet or its partition has no leader: one broker drawn with
    ``value["pick"]`` as ``node`` and the reason as ``fallback``."""
    rng = random.Random(value.get("pick", 0))
    cluster = run.cluster
    topic = COORDINATOR_TOPICS[target]
    group = run_group(value.get("topic") or run.spec.topic or "queue")
    out: dict[str, Any] = {"target": target, "topic": topic}
    if target == "group-coordinator":
        out["group"] = group
    try:
        leaders = cluster.leaders(topic)
    except Exception as exc:
        leaders, out["error"] = {}, f"{type(exc).__name__}: {exc}"
    if leaders:
        partition = coordinator_partition(target, leaders, group, rng)
        leader = leaders.get(partition)
        out.update(partition=partition, leader=leader)
        node = broker_node(cluster, int(leader)) if leader is not None and int(leader) >= 0 else None
        if node:
            out["node"] = node
            return out
        out["fallback"] = f"partition {partition} of {topic} has no leader"
    else:
        out["fallback"] = f"{topic} does not exist yet (no client has asked for its coordinator)"
    out["node"] = select(list(cluster.brokers()), "one", rng)[0] if cluster.brokers() else None
    return out


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


def controller_nodes(cluster: Any) -> list[str]:
    """Every controller of ``cluster`` (its ``controllers()`` when the adapter has it, else the active one)."""
    listed = getattr(cluster, "controllers", None)
    if callable(listed):
        try:
            return list(listed())
        except Exception:
            return []
    try:
        active = cluster.active_controller()
    except Exception:
        return []
    return [] if active is None else [active]  # a system without a controller (tansu) has none


def quorum_members(cluster: Any, structural: str, rng: random.Random) -> list[str]:
    """A minority or majority of the controller quorum. A minority includes the active controller (the
    fault that makes a fail-over); a majority is taken at random (the quorum stops either way)."""
    voters = controller_nodes(cluster)
    if structural != "minority" or len(voters) < 3:
        return select(voters, structural, rng)
    try:
        active = cluster.active_controller()
    except Exception:
        active = None
    others = sorted(v for v in voters if v != active)
    if active not in voters:
        return select(voters, "minority", rng)
    return sorted([active, *rng.sample(others, minority_size(len(voters)) - 1)])


def resolve_targets(run: Any, value: dict) -> list[str]:
    """Nodes hit by an op whose value names ``target`` (and ``topic``/``partition`` for leaders).

    ``nodes`` in the value, when present, wins (replayed or hand-written ops name them explicitly).
    Random choices use ``Random(value["pick"])``: the seeded schedule put that number in the op, so
    the same seed picks the same nodes whatever else consumed randomness meanwhile.
    """
    return resolve_targets_explained(run, value)[0]


def resolve_targets_explained(run: Any, value: dict) -> tuple[list[str], dict]:
    """``resolve_targets`` with the evidence of how a coordinator target was found (``{"coordinator":
    coordinator_of(...)}``; empty for every other target), for the op's completion."""
    target = value.get("target", "one")
    if target in COORDINATOR_TOPICS and not value.get("nodes"):
        found = coordinator_of(run, target, value)
        return ([found["node"]] if found.get("node") else []), {"coordinator": found}
    return _resolve(run, value), {}


def _resolve(run: Any, value: dict) -> list[str]:
    rng = random.Random(value.get("pick", 0))
    if value.get("nodes"):
        return list(value["nodes"])
    cluster = run.cluster
    target = value.get("target", "one")
    if target == "controller":
        try:
            controller = cluster.active_controller()
        except Exception:
            return []
        if controller is None:
            # A system without a controller (tansu): its other coordinating nodes take the controller's
            # place (a storage node every broker depends on), else one broker.
            others = [n for n in cluster.nodes() if n not in cluster.brokers()]
            return [rng.choice(sorted(others))] if others else select(list(cluster.brokers()), "one", rng)
        return [controller]
    if target in QUORUM_TARGETS:
        return quorum_members(cluster, QUORUM_TARGETS[target], rng)
    if target == "leader":
        topic = value.get("topic") or run.spec.topic or "queue"
        try:
            leaders = cluster.leaders(topic)
        except Exception:
            return []
        if not leaders:
            return []
        leader = leaders[pick_partition(leaders, rng, value.get("partition"))]
        if leader is None or int(leader) < 0:
            return []
        node = broker_node(cluster, int(leader))
        return [node] if node else []
    return select(list(cluster.brokers()), target, rng)


def data_nodes(run: Any, nodes: list[str], value: dict) -> list[str]:
    """``nodes`` narrowed to those that keep the system's data, for faults that hit data (power loss, lost
    unsynced writes). A system whose brokers keep none (tansu over PostgreSQL: the store does) says which
    nodes do (``cluster.data_nodes()``); when none of ``nodes`` is one, one of them is drawn instead (with
    ``value["pick"]``), so the fault lands where it can lose something."""
    lookup = getattr(run.cluster, "data_nodes", None)
    if not callable(lookup):
        return nodes
    keeping = lookup()
    kept = [n for n in nodes if n in keeping]
    if kept or not keeping:
        return kept
    return select(keeping, "one", random.Random(value.get("pick", 0)))
