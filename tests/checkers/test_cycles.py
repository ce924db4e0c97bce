"""The Kahn fast path of the cycle search agrees with Tarjan on the full graph."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.queue import QueueAnalysis
from checkers.queue.cycles import (
    RT,
    WR,
    WW,
    _acyclic_fast,
    _sccs,
    build_graph,
    completion_times,
    dependency_edges,
    vertices_of,
)
from tests.checkers.fixtures import GOLDEN, future_read, wr_only_pair
from tests.support.synth import MUTATIONS, mutate, synth_history


def full_graph_has_cycle(a):
    nodes = vertices_of(a)
    if len(nodes) < 2:
        return False
    g = build_graph(nodes, dependency_edges(a), completion_times(nodes))
    return bool(_sccs(g.total, lambda v: [w for t in (WW, WR, RT) for w, _, _ in g.adj[t][v]]))


def fast_says_cycle(a):
    nodes = vertices_of(a)
    return len(nodes) >= 2 and not _acyclic_fast(a, nodes)


def test_golden_cycles_seen_by_both():
    for name in ("G0", "G1c", "G0-realtime", "G1c-realtime", "realtime-order", "int-send-skip"):
        a = QueueAnalysis(GOLDEN[name][0])
        assert full_graph_has_cycle(a) and fast_says_cycle(a), name


def test_cycles_without_ww_edges_seen_by_both():
    for ops in (wr_only_pair(), future_read()):
        a = QueueAnalysis(ops)
        assert full_graph_has_cycle(a) and fast_says_cycle(a)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(MUTATIONS + ("none",)), st.sampled_from([0.0, 0.5]))
def test_fast_path_agrees_with_tarjan(seed, kind, p_txn):
    ops = synth_history(120, seed=seed, keys=2, concurrency=4, p_txn=p_txn)
    if kind != "none":
        res = mutate(ops, kind, random.Random(seed))
        if res is None:
            return
        ops = res[0]
    a = QueueAnalysis(ops)
    assert fast_says_cycle(a) == full_graph_has_cycle(a)
