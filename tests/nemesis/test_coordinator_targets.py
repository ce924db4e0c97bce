"""Coordinator targets: which broker coordinates the run's group or transactions, how the drawers aim at
them, and how a coordinator move is planned. Pure selection, without a cluster."""

import random
from types import SimpleNamespace

import pytest

from harness.spec import RunSpec
from nemesis.admin import plan_coordinator_move
from nemesis.registry import COORDINATOR_SHARE, DRAWERS, build_package, coordinator_drawers
from nemesis.targets import (
    coordinator_of,
    coordinator_partition,
    coordinator_targets,
    group_partition,
    java_string_hash,
    resolve_targets,
    resolve_targets_explained,
    run_group,
)
from reference_impl.protocol.groups.partitioning import partition_for
from workloads.group_client import group_id_for


def test_java_string_hash_matches_java():
    # Values of java.lang.String.hashCode, including wrap-around and a non-ASCII code unit.
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert java_string_hash("é") == 233


def test_group_partition_is_kafkas_placement_and_the_brokers():
    assert group_partition("polygenelubricants", 3) == 0  # Utils.abs(Integer.MIN_VALUE) is 0
    for group in ["queue-group", "t-group", "orders-group", "x", "polygenelubricants", "ünïcode-group"]:
        for partitions in (1, 3, 50):
            assert group_partition(group, partitions) == partition_for(group, partitions)


def test_the_run_group_is_the_workloads():
    assert run_group("queue") == group_id_for(RunSpec(topic="queue"))


@pytest.mark.parametrize("sub_via, txn, expected", [
    ("assign", False, ()),
    ("subscribe", False, ("group-coordinator",)),
    ("assign,subscribe", False, ("group-coordinator",)),
    ("assign", True, ("txn-coordinator",)),
    ("subscribe", True, ("group-coordinator", "txn-coordinator")),
    (None, False, ()),
])
def test_coordinator_targets_follow_the_workload(sub_via, txn, expected):
    assert coordinator_targets(sub_via, txn) == expected


def test_the_group_coordinator_is_the_groups_partition_even_leaderless():
    group = "queue-group"
    leaders = {0: 1, 1: 2, 2: -1}
    for pick in range(20):
        assert coordinator_partition("group-coordinator", leaders, group, random.Random(pick)) == \
            group_partition(group, 3)


def test_the_txn_coordinator_is_a_led_partition():
    leaders = {0: -1, 1: 3, 2: -1}
    assert {coordinator_partition("txn-coordinator", leaders, "g", random.Random(p)) for p in range(30)} == {1}
    with pytest.raises(ValueError):
        coordinator_partition("leader", leaders, "g", random.Random(0))


def _run(state: dict[str, dict[int, int]], topic="queue", brokers=("b1", "b2", "b3")):
    def leaders(name):
        if name not in state:
            raise RuntimeError(f"unknown topic {name}")
        return state[name]

    cluster = SimpleNamespace(brokers=lambda: list(brokers), leaders=leaders, active_controller=lambda: "c1")
    return SimpleNamespace(cluster=cluster, spec=RunSpec(topic=topic))


def test_coordinator_of_names_partition_leader_and_node():
    part = group_partition("queue-group", 3)
    leaders = {p: 1 for p in range(3)}
    leaders[part] = 3
    run = _run({"__consumer_offsets": leaders})
    found = coordinator_of(run, "group-coordinator", {"pick": 7})
    assert found == {"target": "group-coordinator", "topic": "__consumer_offsets", "group": "queue-group",
                     "partition": part, "leader": 3, "node": "b3"}
    nodes, evidence = resolve_targets_explained(run, {"target": "group-coordinator", "pick": 7})
    assert nodes == ["b3"] and evidence == {"coordinator": found}
    assert resolve_targets(run, {"target": "group-coordinator"}) == ["b3"]
    # explicit nodes still win, without coordinator evidence
    assert resolve_targets_explained(run, {"target": "group-coordinator", "nodes": ["b1"]}) == (["b1"], {})


def test_a_missing_state_topic_falls_back_to_a_random_broker_and_says_so():
    run = _run({})
    picks = set()
    for pick in range(40):
        found = coordinator_of(run, "txn-coordinator", {"pick": pick})
        assert "partition" not in found and "does not exist yet" in found["fallback"]
        assert found["node"] in ("b1", "b2", "b3")
        picks.add(found["node"])
        assert coordinator_of(run, "txn-coordinator", {"pick": pick}) == found  # the pick decides
    assert len(picks) > 1


def test_a_leaderless_group_partition_falls_back_and_says_which():
    part = group_partition("queue-group", 3)
    run = _run({"__consumer_offsets": {p: (-1 if p == part else 2) for p in range(3)}})
    found = coordinator_of(run, "group-coordinator", {"pick": 1})
    assert found["partition"] == part and found["leader"] == -1
    assert found["fallback"] == f"partition {part} of __consumer_offsets has no leader"


def test_drawers_aim_a_modest_share_at_the_coordinators():
    drawers = coordinator_drawers(("group-coordinator", "txn-coordinator"), DRAWERS)
    rng = random.Random(11)
    draws = [drawers["kill"](rng) for _ in range(2000)]
    aimed = [v["target"] for _, v in draws if v["target"].endswith("coordinator")]
    assert abs(len(aimed) / len(draws) - COORDINATOR_SHARE) < 0.04
    assert set(aimed) == {"group-coordinator", "txn-coordinator"}
    assert {v["target"] for _, v in draws} - set(aimed) == {"one", "minority", "leader", "controller"}
    topologies = {drawers["partition"](rng)[1]["topology"] for _ in range(500)}
    assert {"isolate-group-coordinator", "isolate-txn-coordinator", "isolate-leader"} <= topologies
    moves = [drawers["admin"](rng) for _ in range(500)]
    assert ("reassign", {"kind": "coordinator", "target": "txn-coordinator"}) in moves
    assert any(f == "elect-preferred" for f, _ in moves)
    assert drawers["clock"] is DRAWERS["clock"]


def test_without_coordinators_the_schedule_is_unchanged():
    plain = build_package("kill,pause,partition,admin", seed=3).schedule.take(40)
    assert build_package("kill,pause,partition,admin", seed=3, coordinators=()).schedule.take(40) == plain
    aimed = build_package("kill,pause,partition,admin", seed=3, coordinators=("txn-coordinator",)).schedule
    values = [op["value"] for _, op in aimed.take(200)]
    assert any(v.get("target") == "txn-coordinator" for v in values)
    assert not any(v.get("target") == "group-coordinator" for v in values)


def test_a_coordinator_move_puts_another_in_sync_replica_first():
    for pick in range(20):
        target = plan_coordinator_move([1, 2, 3], 1, [1, 3], [1, 2, 3], random.Random(pick))
        assert target == [3, 1, 2]
    assert plan_coordinator_move([2, 1, 3], 2, [2], [1, 2, 3], random.Random(0))[0] in (1, 3)
    assert plan_coordinator_move([2], 2, [2], [1, 2, 3], random.Random(0)) in ([1], [3])
    assert plan_coordinator_move([1], 1, [1], [1], random.Random(0)) is None


class _RulesHost:
    """Records the cut edges (a mock host for the partition nemesis)."""

    def __init__(self):
        self.blocked = set()

    def block(self, src, dst):
        self.blocked.add((src, dst))

    def unblock(self, src, dst):
        self.blocked.discard((src, dst))

    def probe(self, src, dst):
        return "timeout" if (src, dst) in self.blocked else "refused"

    def rules_in_place(self):
        return len(self.blocked)


def test_isolating_the_coordinator_cuts_its_node_and_names_it():
    from nemesis.net import NetNemesis

    part = group_partition("queue-group", 3)
    run = _run({"__consumer_offsets": {p: (2 if p == part else 1) for p in range(3)}})
    run.cluster.nodes = lambda: ["c1", "b1", "b2", "b3"]
    run.cluster.controllers = lambda: ["c1"]
    run.host = _RulesHost()
    done = NetNemesis().invoke(run, {"f": "start-partition", "value": {"topology": "isolate-group-coordinator",
                                                                          "pick": 4}})
    value = done["value"]
    assert value["topology"] == "isolate-group-coordinator" and value["effective"]
    assert value["coordinator"]["node"] == "b2" and value["coordinator"]["partition"] == part
    assert run.host.blocked == {(a, b) for a in ("b2",) for b in ("c1", "b1", "b3")} | \
        {(b, a) for a in ("b2",) for b in ("c1", "b1", "b3")}


class _Controller:
    """A mock controller for one state-topic partition: a reassignment reorders its replicas, a preferred
    election hands the leadership to the first one."""

    def __init__(self, replicas, leader):
        self.state = {"replicas": list(replicas), "isr": list(replicas), "leader": leader}
        self.elections = []

    def describe(self, run, topic, admin=None):
        return {0: dict(self.state)} if topic == "__transaction_state" else {}

    def alter(self, run, topic, targets, allow_rf_change, admin=None):
        self.state["replicas"] = list(targets[0])
        return {0: None}

    def elect_leaders(self, election_type, partitions, timeout_ms, raise_errors):
        self.elections.append((election_type, partitions))
        self.state["leader"] = self.state["replicas"][0]
        part = SimpleNamespace(partition_id=0, error_code=0)
        return SimpleNamespace(replica_election_results=[SimpleNamespace(partition_result=[part])])


def test_moving_the_txn_coordinator_reorders_its_replicas_and_elects(monkeypatch):
    from nemesis.admin import AdminNemesis

    run = _run({"__transaction_state": {0: 2}})
    controller = _Controller([2, 1, 3], 2)
    nemesis = AdminNemesis()
    monkeypatch.setattr(nemesis, "describe", controller.describe)
    monkeypatch.setattr(nemesis, "alter", controller.alter)
    monkeypatch.setattr(nemesis, "admin", lambda run: controller)
    done = nemesis.invoke(run, {"f": "reassign", "value": {"kind": "coordinator", "target": "txn-coordinator",
                                                           "pick": 9}})
    value = done["value"]
    assert value["target"] == "txn-coordinator" and value["coordinator"]["node"] == "b2"
    assert value["replicas_target"][0] in (1, 3) and sorted(value["replicas_target"]) == [1, 2, 3]
    assert controller.elections == [(0, {"__transaction_state": [0]})]
    assert (value["leader_before"], value["leader_after"]) == (2, value["replicas_target"][0])
    assert value["node_after"] == f"b{value['leader_after']}" and value["effective"] is True


def test_moving_a_coordinator_before_its_topic_exists_is_skipped():
    from nemesis.admin import AdminNemesis

    done = AdminNemesis().invoke(_run({}), {"f": "reassign", "value": {"kind": "coordinator",
                                                                       "target": "group-coordinator"}})
    assert done["value"]["effective"] is False and "does not exist yet" in done["value"]["skipped"]
