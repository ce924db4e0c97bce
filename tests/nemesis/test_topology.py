"""Partition topologies as edge sets (pure)."""

import random

import pytest

from nemesis.topology import edges_for, grudge, majorities_ring

BROKERS = ["b1", "b2", "b3"]


def _reach(edges, nodes):
    return {dst: {src for src in nodes if (src, dst) not in edges} for dst in nodes}


def test_isolate_one_cuts_one_node_both_ways():
    edges = edges_for("isolate-one", BROKERS, "c1", random.Random(2))
    (victim,) = {n for n in BROKERS + ["c1"] if sum(1 for e in edges if n in e) == 6}
    assert len(edges) == 6 and all(victim in e for e in edges)


def test_halves_and_bridge():
    edges = edges_for("halves", BROKERS, "c1", random.Random(0))
    assert edges == {(a, b) for a in ["b1", "b2"] for b in ["b3", "c1"]} | {
        (b, a) for a in ["b1", "b2"] for b in ["b3", "c1"]}
    bridge = edges_for("bridge", ["b1", "b2", "b3", "b4"], "c1", random.Random(1))
    touched = {n for e in bridge for n in e}
    assert len(touched) == 4  # exactly one node (the bridge) keeps talking to everyone


def test_majorities_ring_every_node_sees_a_majority_but_not_the_same():
    nodes = ["n1", "n2", "n3", "n4", "n5"]
    edges = majorities_ring(nodes)
    reach = _reach(edges, nodes)
    assert all(len(v) == 3 for v in reach.values())
    assert len({frozenset(v) for v in reach.values()}) == 5


def test_one_way_and_controller_and_clients():
    one_way = edges_for("one-way", BROKERS, "c1", random.Random(4))
    (src,) = {s for s, _ in one_way}
    assert all(s == src for s, _ in one_way) and len(one_way) == 3
    assert edges_for("isolate-controller", BROKERS, "c1", random.Random(0)) == {
        e for b in BROKERS for e in (("c1", b), (b, "c1"))}
    clients = edges_for("clients-brokers", BROKERS, "c1", random.Random(0))
    assert len(clients) == 2 and all("client" in e for e in clients)
    assert edges_for("isolate-leader", BROKERS, "c1", random.Random(0), special=None) == set()
    assert grudge({("a", "b"), ("c", "b")}) == {"b": ["a", "c"]}
    with pytest.raises(ValueError):
        edges_for("moebius", BROKERS, "c1", random.Random(0))


def test_other_nodes_are_cut_like_the_rest_and_one_broker_alone_leaves_only_the_clients():
    import random as _random

    from harness.interfaces import CLIENTS
    from nemesis.topology import edges_for

    rng = _random.Random(3)
    # a storage node beside two brokers and no controller: halves put it on a side
    cut = edges_for("halves", ["b1", "b2"], None, rng, others=["store"])
    assert ("b1", "b2") in cut and ("b2", "store") not in cut and ("store", "b1") in cut
    # one broker and nothing else: no topology among nodes cuts anything, clients-brokers still does
    assert edges_for("isolate-one", ["b1"], None, rng) == set()
    assert edges_for("clients-brokers", ["b1"], None, rng) == {(CLIENTS, "b1"), ("b1", CLIENTS)}
