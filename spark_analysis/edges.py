"""The dependency graph's rows, emitted key by key by the keyed pass (``spark_analysis.keyed``).

The cycle kinds need the graph of ``checkers/queue/cycles.py`` (ww, wr and realtime edges). Its ww and wr
edges are facts of one key (``checkers.queue.cycles.dependency_edges`` on the key's analysis, the Python checker's
own code), and the realtime edges follow from the vertices' times. The Spark engine builds it in two
steps (``spark_analysis.cycles``), both run inside a keyed pass:

- ``reduced_rows`` (every check): the completion times of the ok vertices whose first row is in this
  key (one barrier each, ``kind`` ``done``, a list in ``times``), and the ww/wr edges that no realtime
  path already implies (``kind`` ``edge``, with both ends' invocation and realtime end). On a valid history
  nearly every edge is implied (a write completed before the read or write that depends on it began),
  so this part stays small, and the strongly connected components of the whole graph follow from it.
- ``part_rows`` (only when a component was found): every ww/wr edge between the ops of ``Part`` with its
  type (``kind`` ``ww`` or ``wr``), key and value, and those ops themselves (``kind`` ``vertex``), for
  the Python checker's cycle search on that part of the graph.

Rows share the keyed pass's columns (``keyed.ROWS_SCHEMA``) plus ``GRAPH_COLUMNS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GRAPH_COLUMNS = ("a bigint, b bigint, a_invoke bigint, a_done bigint, b_invoke bigint, b_done bigint, "
                 "value bigint, times array<bigint>")
_INT_COLUMNS = ("a", "b", "a_invoke", "a_done", "b_invoke", "b_done", "value")


def realtime_end(r) -> int | None:
    """When ``r`` certainly took effect (its realtime out-edge): its completion if ok, else None."""
    return r.complete_time if r.type == "ok" else None


@dataclass(frozen=True)
class Part:
    """The ops of the strongly connected components found: ``active`` (ops with an edge that no realtime
    path implies) plus every ok vertex invoked after ``lo`` and completed by ``hi`` for a component whose
    barriers span the times ``(lo, hi)`` (``windows``): such an op lies on the realtime path from that
    component's first barrier to its last, so it belongs to the component."""

    active: frozenset
    windows: tuple[tuple[int, int], ...]

    def __contains__(self, r: Any) -> bool:
        if r.index in self.active:
            return True
        done, began = realtime_end(r), r.invoke_time
        if done is None or began is None:
            return False
        return any(lo < began and done <= hi for lo, hi in self.windows)


def reduced_rows(a, recs: list, parts: list[int]) -> dict[str, list]:
    """The ``done`` and ``edge`` rows of one key's analysis ``a`` (``recs`` its records, ``parts`` each
    record's ``part``: a record's completion is emitted by the key of its first row only)."""
    from checkers.queue.cycles import dependency_edges, implied_by_realtime, is_vertex

    committed = a.committed
    times = [r.complete_time for r, part in zip(recs, parts, strict=True)
             if part == 0 and r.type == "ok" and r.complete_time is not None and is_vertex(r, committed)]
    rows: dict[str, list] = {c: [] for c in ("kind", "a", "b", "a_invoke", "a_done", "b_invoke", "b_done")}
    for src, dst, _, _, _ in dependency_edges(a):
        if implied_by_realtime(src, dst):
            continue
        for c, x in (("kind", "edge"), ("a", src.index), ("b", dst.index), ("a_invoke", src.invoke_time),
                     ("a_done", realtime_end(src)), ("b_invoke", dst.invoke_time), ("b_done", realtime_end(dst))):
            rows[c].append(x)
    if times:
        rows["kind"].append("done")
        for c in ("a", "b", "a_invoke", "a_done", "b_invoke", "b_done"):
            rows[c].append(None)
        rows["times"] = [None] * (len(rows["kind"]) - 1) + [times]
    return rows


def part_rows(a, recs: list, parts: list[int], part: Part) -> dict[str, list]:
    """The ``ww``/``wr`` edges of one key's analysis ``a`` between ops of ``part``, and the ``vertex`` rows
    of the ops of ``part`` whose first row is in this key (their type in ``row``)."""
    from checkers.queue.cycles import dependency_edges, is_vertex

    committed = a.committed
    rows: dict[str, list] = {c: [] for c in ("kind", "key", "a", "b", "value", "a_invoke", "a_done", "row")}

    def add(**values):
        for c, x in values.items():
            rows[c].append(x)
        for c in rows.keys() - values.keys():
            rows[c].append(None)

    for src, dst, typ, k, v in dependency_edges(a):
        if src in part and dst in part:
            add(kind=typ, key=k, a=src.index, b=dst.index, value=v)
    for r, p in zip(recs, parts, strict=True):
        if p == 0 and is_vertex(r, committed) and r in part:
            add(kind="vertex", a=r.index, a_invoke=r.invoke_time, a_done=realtime_end(r), row=r.type)
    return rows


def graph_batch(run: str, key: Any, rows: dict[str, list]):
    """``rows`` (columns by name, ``kind`` required) as one record batch of the keyed pass's graph schema,
    ``run`` and ``key`` (unless given per row) filled in, absent columns null."""
    import pyarrow as pa

    n = len(rows["kind"])
    cols = {"run": pa.array([run] * n, pa.string()), "kind": pa.array(rows["kind"], pa.string()),
            "key": pa.array(rows.get("key") or [key] * n, pa.int64()),
            "n": pa.array(rows.get("n") or [None] * n, pa.int32()),
            "row": pa.array(rows.get("row") or [None] * n, pa.string())}
    for c in _INT_COLUMNS:
        cols[c] = pa.array(rows.get(c) or [None] * n, pa.int64())
    cols["times"] = pa.array(rows.get("times") or [None] * n, pa.list_(pa.int64()))
    return pa.RecordBatch.from_arrays(list(cols.values()), names=list(cols))
