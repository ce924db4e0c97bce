"""Every queue kind of one history by Spark, the cycle kinds (G0, G1c and their realtime variants) included.

The cycle kinds are those of ``checkers/queue/cycles.py``, found in three steps:

1. The keyed pass (``spark_analysis.keyed.key_pass`` with ``graph="reduced"``) returns, besides the anomaly
   rows, the ok vertices' completion times (the barriers) and the ww/wr edges no realtime path implies
   (``spark_analysis.edges``), as Arrow to the driver.
2. On the driver, the strongly connected components of the graph those edges make with the barrier chain
   and the realtime edges of their ends (``components``; ``scipy.sparse.csgraph``, compiled). Dropping an
   implied edge keeps every reachability, and an op without a remaining edge joins a component exactly
   when its invocation and completion fall inside the component's barriers (``edges.Part``), so these
   are the components of the whole graph. A valid history has none, and the check ends there.
3. Otherwise a second keyed pass returns the ops of those components and every ww/wr edge between them
   (``edges.part_rows``), and the Python checker's own search (``checkers.queue.cycles.search_cycles``) names the
   cycles on that part of the graph, with the very barriers the whole graph has there
   (``checkers.queue.cycles.build_graph`` with ``kept``): components are searched independently, so the result is
   the whole history's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from checkers.queue import CYCLE_KINDS, KINDS
from checkers.queue.keys import KEY_KINDS
from spark_analysis.edges import Part
from spark_analysis.keyed import RunFacts, key_pass, sort_anomalies


def queue_anomalies_spark(spark: SparkSession, table: DataFrame, facts: RunFacts,
                          options: dict) -> dict[str, list[dict]]:
    """Every kind of ``checkers.queue.KINDS`` of one history's key table (run ``""``), as
    ``checkers.queue.queue_anomalies`` returns them; with ``options["cycles"]`` False the cycle kinds
    are ``[]``, as there."""
    if not options.get("cycles", True):
        from spark_analysis.keyed import collect_anomalies

        found = collect_anomalies(key_pass(spark, table, {"": facts}, {"": options}), [""])[""]
        return {kind: found.get(kind, []) for kind in KINDS}
    rows = key_pass(spark, table, {"": facts}, {"": options}, graph="reduced").toArrow()
    anomalies = rows.filter(pc.is_in(rows["kind"], pa.array(KEY_KINDS)))
    found = sort_anomalies(zip(*(anomalies[c].to_pylist() for c in ("run", "kind", "key", "n", "row")),
                               strict=True), [""])[""]
    found.update(find_cycles(spark, table, facts, options, rows))
    return {kind: found[kind] for kind in KINDS}


def find_cycles(spark: SparkSession, table: DataFrame, facts: RunFacts, options: dict,
                rows: pa.Table) -> dict[str, list[dict]]:
    """The cycle kinds from the reduced graph ``rows`` of the first keyed pass (steps 2 and 3 of the module
    docstring)."""
    from checkers.queue.cycles import build_graph, search_cycles

    found = components(rows)
    if found is None:
        return {kind: [] for kind in CYCLE_KINDS}
    part = key_pass(spark, table, {"": facts}, {"": options}, graph=found.part).toArrow()
    vertices, edges = _part_of(part)
    return search_cycles(build_graph(vertices, edges, found.times, kept=found.kept))


@dataclass
class Components:
    """The strongly connected components of a history's graph: their ops (``part``), the ranks of their
    barriers among all barriers (``kept``) and every barrier's time (``times``, sorted)."""

    part: Part
    kept: list[int]
    times: np.ndarray


def _ints(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """An int64 Arrow column as (values, valid) numpy arrays (nulls as 0 and False)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return (pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64),
            arr.is_valid().to_numpy(zero_copy_only=False))


def components(rows: pa.Table) -> Components | None:
    """The non-trivial strongly connected components of the graph of ``rows`` (``done`` and ``edge`` rows
    of ``spark_analysis.edges.reduced_rows``), or None when it has none.

    Vertices: the ends of the edges, then one barrier per distinct completion time; edges: the given ones,
    the barrier chain, each end's realtime out-edge (to the barrier of its completion, when ok) and in-edge
    (from the last barrier strictly before its invocation), as ``checkers.queue.cycles.build_graph``
    makes them."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    edge_rows = rows.filter(pc.equal(rows["kind"], "edge"))
    if edge_rows.num_rows == 0:  # a cycle needs an edge back in time, which no realtime path implies
        return None
    done = rows.filter(pc.equal(rows["kind"], "done"))["times"]
    times = np.unique(pc.list_flatten(done.combine_chunks()).to_numpy(zero_copy_only=False).astype(np.int64))
    a, _ = _ints(edge_rows["a"])
    b, _ = _ints(edge_rows["b"])
    ops = np.concatenate([a, b])
    began, has_began = (np.concatenate(x) for x in zip(_ints(edge_rows["a_invoke"]), _ints(edge_rows["b_invoke"]),
                                                        strict=True))
    ended, has_ended = (np.concatenate(x) for x in zip(_ints(edge_rows["a_done"]), _ints(edge_rows["b_done"]),
                                                       strict=True))
    uniq, first = np.unique(ops, return_index=True)
    m, nb = len(uniq), len(times)
    began, has_began, ended, has_ended = began[first], has_began[first], ended[first], has_ended[first]
    src = [np.searchsorted(uniq, a), m + np.arange(nb - 1)]
    dst = [np.searchsorted(uniq, b), m + np.arange(1, nb)]
    out = np.flatnonzero(has_ended)
    src.append(out)
    dst.append(m + np.searchsorted(times, ended[out]))
    into = np.flatnonzero(has_began)
    last = np.searchsorted(times, began[into]) - 1  # last barrier strictly before the invocation
    src.append(m + last[last >= 0])
    dst.append(into[last >= 0])
    src_all, dst_all = np.concatenate(src), np.concatenate(dst)
    total = m + nb
    graph = coo_matrix((np.ones(len(src_all), dtype=np.int8), (src_all, dst_all)), shape=(total, total)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    big = np.bincount(labels)[labels] > 1
    if not big.any():
        return None
    kept = np.flatnonzero(big[m:])
    windows = []
    if len(kept):
        # A component's barriers are consecutive (the chain runs through every barrier between two of
        # them), so each component's are one range of ranks.
        comp = labels[m + kept]
        for label in np.unique(comp):
            ranks = kept[comp == label]
            windows.append((int(times[ranks.min()]), int(times[ranks.max()])))
    return Components(Part(frozenset(uniq[big[:m]].tolist()), tuple(windows)), kept.tolist(), times)


def _part_of(rows: pa.Table) -> tuple[list, list[tuple]]:
    """The ``vertex`` rows of a part (as op records, in op-index order) and its ww/wr edges."""
    from checkers.queue.extract import OpRec

    vertices = []
    for r in rows.filter(pc.equal(rows["kind"], "vertex")).select(["a", "a_invoke", "a_done", "row"]).to_pylist():
        vertices.append(OpRec(r["a"], None, None, None, r["row"], r["a_invoke"], r["a_done"], False))
    vertices.sort(key=lambda r: r.index)
    edge_rows = rows.filter(pc.is_in(rows["kind"], pa.array(["ww", "wr"])))
    edges = list(zip(*(edge_rows[c].to_pylist() for c in ("a", "b", "kind", "key", "value")), strict=True))
    return vertices, edges
