"""Target selection: one / minority / majority / all, leaders and the controller."""

import random
from types import SimpleNamespace

import pytest

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
    return SimpleNamespace(cluster=cluster, spec={"topic": "t"})


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
