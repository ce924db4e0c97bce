"""One pass per key: the Python checker's own per-key checks, run by Spark over a key table.

Every queue kind but the cycles is a function of one key's records plus three facts of the whole history
(``checkers/queue/keys.py``): whether it has a final phase, the recovery deadline (an option) and which
``info`` ops are committed (a column of the key table). So the check of a key table (``queue.parquet`` of
a columnar history, or ``spark_analysis.extract.key_table`` of a JSONL one) is:

1. ``run_facts``: one small aggregation per (run, key): rows, final phase, transactions, subscriptions,
   client ops, and whether a record the table cannot hold was seen (JSONL input).
2. ``key_pass``: the table is shuffled once so that each (run, key) group lands whole in one partition,
   the groups packed into partitions by size (largest first, so the long ones start first); then
   ``mapInArrow`` sorts each partition by (run, key, op) in Arrow, turns each group into that key's
   records (``checkers.queue.rows.records_of_key``) and runs ``checkers.queue.keys.key_anomalies`` on
   them. Only anomaly rows leave the Python workers: (run, kind, key, n, row as JSON), ``n`` the row's
   position in its key's list.
3. ``collect_anomalies`` sorts them into the contract's lists (by key, then by each key's own order);
   ``count_anomalies`` counts them without collecting.

A group is held whole by one Python worker while it is checked, like a key's part of the history in the
Python checker: a history's size is spread over its keys, and a single key of more records than a worker's
memory holds is this design's limit.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.queue.extract import value_sort_key
from checkers.queue.keys import KEY_KINDS
from spark_analysis.errors import CorruptInput

_KEY_KIND_SET = frozenset(KEY_KINDS)
ROWS_SCHEMA = "run string, kind string, key bigint, n int, row string"
# Rows per partition of the keyed pass when groups are many (a whole store): big enough that the
# scheduling cost stays small, small enough that partitions of small runs spread over the cores.
TARGET_ROWS = 1_000_000


@dataclass
class RunFacts:
    """What one aggregation tells about a run before its keys are checked."""

    has_final: bool = False
    transactions: bool = False
    subscribe: bool = False
    client_ops: int = 0
    odd: bool = False
    keys: dict[Any, int] = field(default_factory=dict)  # key -> rows (keys of client records only)


def run_facts(table: DataFrame) -> dict[str, RunFacts]:
    """``RunFacts`` of every run of a key table (one job; a few rows per run reach the driver)."""
    odd = F.max("odd") if "odd" in table.columns else F.lit(False)
    rows = (table.groupBy("run", "key")
            .agg(F.count(F.lit(1)).alias("rows"), F.max("final").alias("final"), F.max("txn").alias("txn"),
                 F.max(F.col("f") == "subscribe").alias("subscribe"),
                 F.sum((F.col("part") == 0).cast("long")).alias("ops"), odd.alias("odd"))
            .collect())
    facts: dict[str, RunFacts] = {}
    for r in rows:
        f = facts.setdefault(r["run"], RunFacts())
        f.has_final |= bool(r["final"])
        f.transactions |= bool(r["txn"])
        f.subscribe |= bool(r["subscribe"])
        f.odd |= bool(r["odd"])
        f.client_ops += int(r["ops"] or 0)
        if r["key"] is not None:
            f.keys[r["key"]] = int(r["rows"])
    return facts


def refuse_odd(facts: dict[str, RunFacts], where: str) -> None:
    """``CorruptInput`` when a run holds a key or value that is not a 64-bit integer (JSONL input)."""
    odd = sorted(run for run, f in facts.items() if f.odd)
    if odd:
        runs = f" (runs {', '.join(odd[:5])}{', ...' if len(odd) > 5 else ''})" if odd != [""] else ""
        raise CorruptInput(f"{where}: a key or value is not a 64-bit integer{runs}; the history schema says they "
                           "are integers, and the Spark engine compares them as such", [])


def _pack(groups: list[tuple[str, Any, int]], parts: int) -> dict[tuple[str, Any], int]:
    """Largest group first into the emptiest partition (LPT); partition numbers follow the order in
    which they first got a group, so the largest groups are in the first partitions (Spark starts
    tasks in partition order)."""
    heap = [(0, p) for p in range(parts)]
    out = {}
    for run, key, rows in sorted(groups, key=lambda g: (-g[2], g[0], value_sort_key(g[1]))):
        load, p = heapq.heappop(heap)
        out[(run, key)] = p
        heapq.heappush(heap, (load + rows, p))
    return out


def _slot_values(spark: SparkSession, parts: int) -> list[int]:
    """For each partition p, a long whose Spark hash partitioning (``pmod(hash(x), parts)``, what
    ``repartition(parts, col)`` uses) is p: so rows can be sent to the partition the packing chose."""
    span = 64 * parts
    while True:
        found = dict(spark.range(0, span).select(F.expr(f"pmod(hash(id), {parts})").alias("p"), "id")
                     .groupBy("p").agg(F.min("id").alias("id")).collect())
        if len(found) == parts:
            return [found[p] for p in range(parts)]
        span *= 4


def key_pass(spark: SparkSession, table: DataFrame, facts: dict[str, RunFacts],
             options: dict[str, dict] | None = None, *, graph: Any = None) -> DataFrame:
    """The anomaly rows (``ROWS_SCHEMA``) of every (run, key) group of ``table``; ``options`` per run
    (e.g. the recovery deadline) as ``checkers.queue.queue_anomalies`` takes them.

    ``graph``: ``"reduced"`` adds the rows of ``spark_analysis.edges.reduced_rows`` to the anomaly rows; a
    ``spark_analysis.edges.Part`` gives only that part's rows (``edges.part_rows``), no anomaly. Either
    way the rows have the columns ``ROWS_SCHEMA`` + ``edges.GRAPH_COLUMNS``."""
    from spark_analysis.edges import GRAPH_COLUMNS

    schema = ROWS_SCHEMA if graph is None else f"{ROWS_SCHEMA}, {GRAPH_COLUMNS}"
    groups = [(run, key, rows) for run, f in facts.items() for key, rows in f.keys.items()]
    if not groups:
        return spark.createDataFrame([], schema)
    total = sum(g[2] for g in groups)
    cores = spark.sparkContext.defaultParallelism
    parts = min(len(groups), max(cores, -(-total // TARGET_ROWS)))
    packing = _pack(groups, parts)
    slots = _slot_values(spark, parts)
    mapping = spark.createDataFrame([(run, key, slots[p]) for (run, key), p in packing.items()],
                                    "run string, key bigint, _slot bigint")
    shuffled = (table.where(F.col("key").isNotNull())
                .join(F.broadcast(mapping), ["run", "key"])
                .repartition(parts, "_slot").drop("_slot"))
    has_final = {run: f.has_final for run, f in facts.items()}
    return shuffled.mapInArrow(_checker(has_final, dict(options or {}), graph), schema)


def _checker(has_final: dict[str, bool], options: dict[str, dict], graph: Any = None):
    """The function ``mapInArrow`` runs on each partition (only what it closes over is shipped)."""

    def check(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from checkers.queue import no_gc
        from checkers.queue.keys import analysis_of_key, key_anomalies
        from checkers.queue.rows import records_of_key
        from spark_analysis.edges import graph_batch, part_rows, reduced_rows

        only_part = graph is not None and graph != "reduced"

        batches = list(batches)
        if not batches:
            return
        table = pa.Table.from_batches(batches).sort_by([("run", "ascending"), ("key", "ascending"),
                                                        ("op", "ascending")])
        del batches
        runs = pc.dictionary_encode(table["run"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
        keys = table["key"].to_numpy()
        cuts = np.flatnonzero((runs[1:] != runs[:-1]) | (keys[1:] != keys[:-1])) + 1
        bounds = [0, *cuts.tolist(), table.num_rows]
        for start, end in zip(bounds[:-1], bounds[1:], strict=True):
            group = table.slice(start, end - start)
            run, key = group["run"][0].as_py(), group["key"][0].as_py()
            with no_gc():
                recs = records_of_key(group)
                committed = {r.index for r, c in zip(recs, group["committed"].to_pylist(), strict=True) if c}
                a = analysis_of_key(recs, options.get(run), has_final.get(run, False), committed)
                found = {} if only_part else key_anomalies(a)
                if graph is not None:
                    parts = group["part"].to_pylist()
                    graph_rows = part_rows(a, recs, parts, graph) if only_part else reduced_rows(a, recs, parts)
                del recs, a
            out = [(kind, n, json.dumps(row)) for kind, rows in found.items() for n, row in enumerate(rows)]
            if out:
                kinds, ns, texts = zip(*out, strict=True)
                if graph is not None:
                    yield graph_batch(run, key, {"kind": list(kinds), "n": list(ns), "row": list(texts)})
                else:
                    yield pa.RecordBatch.from_arrays(
                        [pa.array([run] * len(out), pa.string()), pa.array(kinds, pa.string()),
                         pa.array([key] * len(out), pa.int64()), pa.array(ns, pa.int32()),
                         pa.array(texts, pa.string())],
                        names=["run", "kind", "key", "n", "row"])
            if graph is not None and graph_rows["kind"]:
                yield graph_batch(run, key, graph_rows)

    return check


def collect_anomalies(rows: DataFrame, runs: list[str]) -> dict[str, dict[str, list[dict]]]:
    """run -> every kind of ``KEY_KINDS`` -> its rows, as ``checkers.queue.queue_anomalies`` returns them
    (one job; only anomaly rows reach the driver)."""
    return sort_anomalies(((r["run"], r["kind"], r["key"], r["n"], r["row"]) for r in rows.collect()), runs)


def sort_anomalies(rows: Iterable[tuple], runs: list[str]) -> dict[str, dict[str, list[dict]]]:
    """Anomaly rows ``(run, kind, key, n, row as JSON)`` sorted into the contract's lists (by key, then by
    each key's own order), per run and kind of ``KEY_KINDS``; rows of other kinds are ignored."""
    got: dict[str, dict[str, list[tuple]]] = {run: {kind: [] for kind in KEY_KINDS} for run in runs}
    for run, kind, key, n, row in rows:
        if kind not in _KEY_KIND_SET:
            continue
        per_run = got.setdefault(run, {kind: [] for kind in KEY_KINDS})
        per_run[kind].append((value_sort_key(key), n, row))
    return {run: {kind: [json.loads(text) for _, _, text in sorted(found)] for kind, found in kinds.items()}
            for run, kinds in got.items()}


def count_anomalies(rows: DataFrame) -> DataFrame:
    """One row per (run, kind) with the number of anomalies, computed without collecting any row."""
    return rows.groupBy("run", "kind").agg(F.count(F.lit(1)).alias("count"))
