"""The Spark engine's step 2 of the cycle search (``spark_analysis.cycles.components``) finds exactly the ops
that lie in non-trivial strongly connected components of the Python checker's whole dependency graph.

``components`` sees a reduced graph: the ww/wr edges that a realtime path already implies are dropped
(``spark_analysis.edges.reduced_rows``), so an op whose every edge is implied is not among its vertices at
all, and ``edges.Part`` claims it for a component exactly when its invocation and completion fall inside
that component's barrier window. A differential Spark test cannot isolate that claim (a monkeypatch does
not reach Spark's Python workers), so this test runs, in this process and without a Spark session:

- the ground truth: Tarjan's algorithm (``checkers.queue.cycles._sccs``) on ``checkers.queue.cycles.build_graph`` of the whole
  history (ww + wr + rt through barriers), as the Python checker builds it;
- the reduced path: the history's key table (``queue.parquet`` of its columnar form, what the Spark engine
  reads), grouped by key and fed to the very function Spark's workers run in the keyed pass
  (``keyed._checker`` with ``graph="reduced"``), its rows handed to ``components``;

and asserts that the ops ``found.part`` contains are the ground truth's, barrier ranks included. The
hand-made ``window_history`` has a realtime cycle with ops inside it whose every edge is implied, so the
window rule is what puts them there (and ops just outside the window on each side, which it must leave
out).
"""

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from checkers.history.parquet import QUEUE, write_history_parquet
from checkers.queue.cycles import (
    RT,
    WR,
    WW,
    _sccs,
    build_graph,
    completion_times,
    dependency_edges,
    vertices_of,
)
from checkers.queue.keys import QueueAnalysis
from spark_analysis.cycles import components
from spark_analysis.edges import graph_batch
from spark_analysis.keyed import _checker
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import synth_history

from .planted import cycles_history, planted_history


def window_history() -> tuple[list[dict], dict[str, int]]:
    """A G0-realtime cycle (A completes before B is invoked, yet B's value sits before A's in key 1) with
    ops around it, and the op index of each by name.

    Barriers (completion times) 10 (A), 15 (E), 16 (C), 17 (G), 18 (D, H) lie on the cycle: A -> barrier
    10 -> ... -> barrier 18 (the last one before B's invocation at 20) -> B -> A. So the component's window
    is (10, 18], and:

    - C (a send, 12-16) and D (its reader, 17-18): C -> D is implied by realtime, neither has another
      edge, and both lie inside the window: in the component through the window rule only;
    - H (a send, 11-18) and I (its reader, 19-25): H -> I is implied; H completes exactly at the window's
      end (in), I after it (out);
    - E (a send, 5-15) is invoked before the window begins: out (no barrier precedes its invocation);
    - G (a send, 10-17) is invoked exactly when A completes: out (a realtime in-edge needs a barrier
      strictly before the invocation);
    - P (the poll that orders key 1, 31-32) comes after everything: out.
    """
    timed = [  # (time, name, process, type, f, value)
        (0, "A", 0, "invoke", "send", [1, 1]),
        (5, "E", 5, "invoke", "send", [3, 8]),
        (10, "A", 0, "ok", "send", [1, [1, 1]]),
        (10, "G", 6, "invoke", "send", [5, 7]),
        (11, "H", 4, "invoke", "send", [4, 9]),
        (12, "C", 2, "invoke", "send", [2, 5]),
        (15, "E", 5, "ok", "send", [3, [0, 8]]),
        (16, "C", 2, "ok", "send", [2, [0, 5]]),
        (17, "D", 3, "invoke", "poll", None),
        (17, "G", 6, "ok", "send", [5, [0, 7]]),
        (18, "D", 3, "ok", "poll", {"2": [[0, 5]]}),
        (18, "H", 4, "ok", "send", [4, [0, 9]]),
        (19, "I", 7, "invoke", "poll", None),
        (20, "B", 1, "invoke", "send", [1, 2]),
        (25, "I", 7, "ok", "poll", {"4": [[0, 9]]}),
        (30, "B", 1, "ok", "send", [1, [0, 2]]),
        (31, "P", 8, "invoke", "poll", None),
        (32, "P", 8, "ok", "poll", {"1": [[0, 2], [1, 1]]}),
    ]
    ops, names = [], {}
    for i, (t, name, p, typ, f, value) in enumerate(timed):
        ops.append({"index": i, "time": t, "type": typ, "process": p, "f": f, "value": value, "node": None,
                    "error": None})
        if typ != "invoke":
            names[name] = i  # an op's index is its completion's
    return ops, names


def full_graph_truth(ops: list[dict]) -> tuple[set[int], list[int]]:
    """The op indices of the real vertices in non-trivial strongly connected components of the Python
    checker's whole graph (ww + wr + rt), and the ranks of the barriers in them."""
    a = QueueAnalysis(ops)
    nodes = vertices_of(a)
    g = build_graph(nodes, dependency_edges(a), completion_times(nodes))
    n = len(nodes)
    comps = _sccs(g.total, lambda v: [w for t in (WW, WR, RT) for w, _, _ in g.adj[t][v]])
    members = [v for comp in comps for v in comp]
    return {nodes[v].index for v in members if v < n}, sorted(v - n for v in members if v >= n)


def reduced_rows_table(ops: list[dict], tmp_path) -> pa.Table:
    """The rows the Spark engine's first keyed pass (``graph="reduced"``) returns for ``ops``: its key
    table, each key's rows handed to the keyed pass's own worker function, in this process."""
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(op) + "\n" for op in ops))
    table = pq.read_table(write_history_parquet(history).path / QUEUE)
    # What key_pass hands the workers: the run's rows with a key, a run column (one run, named "").
    table = table.filter(pc.is_valid(table["key"]))
    table = table.append_column("run", pa.array([""] * table.num_rows, pa.string()))
    has_final = bool(pc.any(table["final"]).as_py())
    batches = list(_checker({"": has_final}, {"": {}}, "reduced")(table.to_batches()))
    return pa.Table.from_batches(batches, schema=graph_batch("", None, {"kind": []}).schema)


def found_ops(ops: list[dict], rows: pa.Table):
    """``components(rows)`` and the op indices of the history's vertices its part contains."""
    found = components(rows)
    if found is None:
        return None, set()
    return found, {r.index for r in vertices_of(QueueAnalysis(ops)) if r in found.part}


def assert_same_components(ops: list[dict], tmp_path):
    """Both paths agree on the ops (and barriers) in components; returns the truth and what was found."""
    truth, ranks = full_graph_truth(ops)
    found, got = found_ops(ops, reduced_rows_table(ops, tmp_path))
    assert got == truth
    assert (found is None) == (not truth)
    if found is not None:
        # Step 3 builds the part's graph with these barriers: they must be the whole graph's.
        assert found.kept == ranks
        assert found.times.tolist() == completion_times(vertices_of(QueueAnalysis(ops)))
    return truth, found


def test_ops_reachable_only_through_the_window_are_claimed_exactly(tmp_path):
    ops, names = window_history()
    truth, found = assert_same_components(ops, tmp_path)
    assert truth == {names[x] for x in "ABCDH"}
    assert found.part.windows == ((10, 18),)
    # The window rule is exercised: C, D and H have no edge left in the reduced graph, so only the
    # window puts them in the part (a Part that ignored windows would fail the equality above).
    assert found.part.active == {names["A"], names["B"]}
    assert truth - found.part.active == {names[x] for x in "CDH"}


def test_cycles_history(tmp_path):
    ops = cycles_history()
    truth, found = assert_same_components(ops, tmp_path)
    assert truth
    # These realtime cycles, too, hold ops that only the window rule reaches.
    assert truth - found.part.active


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_histories(name, tmp_path):
    assert_same_components(GOLDEN[name][0], tmp_path)


@pytest.mark.parametrize("seed", [0, 1])
def test_valid_histories_have_no_component(seed, tmp_path):
    ops = synth_history(300, keys=3, concurrency=5, seed=seed, p_txn=0.3, p_info=0.05)
    truth, found = assert_same_components(ops, tmp_path)
    assert not truth and found is None


def test_planted_history(tmp_path):
    assert_same_components(planted_history(600, seed=0), tmp_path)
