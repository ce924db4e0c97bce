"""Target selection: one / minority / majority / all, leaders and the controller."""

import random
from types import SimpleNamespace

import pytest

from harness.spec import RunSpec
from nemesis.targets import majority_size, minority_size, resolve_targets, select


def test_sizes():
    assert [minority_size(n) for n in range(1, 8)] == [1, 1, 1, 1, 2, 2, 3]
    assert [majority_size(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]


def test_select_structural_targets():
    nodes = ["b1", "b2", "b3", "b4", "b5"]
    rng = random.Random(3)
    assert len(select(nodes, "one", rng)) == 1
    assert len(select(nodes, "minority", rng)) == 2
    assert len(select(nodes, "majority", rng)) == 3
    assert select(nodes, "all", rng) == nodes
    with pytest.raises(ValueError):
        select(nodes, "leader", rng)


def _run(leaders=None, controller="c1", brokers=("b1", "b2", "b3")):
    cluster = SimpleNamespace(
        brokers=lambda: list(brokers),
        active_controller=lambda: controller,
        leaders=lambda topic: leaders if leaders is not None else {},
    )
    return SimpleNamespace(cluster=cluster, spec=RunSpec(topic="t"))


def test_resolve_leader_controller_and_pick_is_deterministic():
    run = _run(leaders={0: 2, 1: 3})
    assert resolve_targets(run, {"target": "leader", "partition": 1}) == ["b3"]
    assert resolve_targets(run, {"target": "controller"}) == ["c1"]
    picks = [resolve_targets(run, {"target": "one", "pick": 42}) for _ in range(3)]
    assert picks[0] == picks[1] == picks[2]
    assert resolve_targets(run, {"nodes": ["b2"]}) == ["b2"]


def test_leaderless_partition_resolves_to_nothing():
    run = _run(leaders={0: -1})
    assert resolve_targets(run, {"target": "leader", "partition": 0}) == []


def test_an_unnamed_leader_target_picks_a_partition_that_has_a_leader():
    # Right after another fault most partitions may be leaderless: every pick lands on the led one.
    run = _run(leaders={0: -1, 1: -1, 2: 3, 3: -1})
    assert {tuple(resolve_targets(run, {"target": "leader", "pick": pick})) for pick in range(50)} == {("b3",)}
    # with no leader anywhere it still resolves to nothing (the op is not effective)
    assert resolve_targets(_run(leaders={0: -1, 1: -1}), {"target": "leader", "pick": 3}) == []


def test_targeted_faults_aim_at_a_led_partition_too():
    from nemesis.targeted.aim import aim

    run = _run(leaders={0: -1, 1: 2, 2: -1})
    assert {aim(run, {"target": "leader", "pick": pick})[0] for pick in range(30)} == {1}
    partition, nodes = aim(run, {"target": "follower", "pick": 5})
    assert partition == 1 and nodes and nodes[0] != "b2"


def test_a_system_without_a_controller_puts_its_storage_node_or_a_broker_in_its_place():
    def run_of(nodes, brokers):
        cluster = SimpleNamespace(brokers=lambda: list(brokers), nodes=lambda: list(nodes),
                                  active_controller=lambda: None)
        return SimpleNamespace(cluster=cluster, spec=RunSpec(topic="t"))

    assert resolve_targets(run_of(["store", "b1", "b2"], ["b1", "b2"]), {"target": "controller"}) == ["store"]
    assert resolve_targets(run_of(["b1"], ["b1"]), {"target": "controller"}) == ["b1"]


def test_data_faults_land_on_the_nodes_that_keep_the_data():
    from nemesis.targets import data_nodes

    def run_of(keeping):
        return SimpleNamespace(cluster=SimpleNamespace(data_nodes=lambda: list(keeping)))

    assert data_nodes(run_of(["store"]), ["b1"], {"pick": 1}) == ["store"]  # brokers keep nothing
    assert data_nodes(run_of(["b1", "b2"]), ["b2"], {}) == ["b2"]
    assert data_nodes(SimpleNamespace(cluster=SimpleNamespace()), ["b1"], {}) == ["b1"]  # no such notion
