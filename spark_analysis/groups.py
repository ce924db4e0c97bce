"""The consumer-group checks (``checkers/groups``) by Spark: the Python checker's own code on the workers.

The group checks judge one key at a time (``checkers.groups.extract``: a key needs its commits and reads
and every rebalance event of its run), so the job is two passes over the op table of
``spark_analysis.read`` / ``spark_analysis.columnar`` (every row with its ``run``, so one run and a whole
store are the same job):

1. ``group_parts``: the rows of every process that has a group op (a commit, a rebalance log or a
   group: a small distinct, collected and broadcast; nothing more is done for runs without one) are
   shuffled by (run, process); on the workers each process's lines are paired and completed by
   ``harness.history`` itself, and each completed op gives its facts (``op_facts``) and its parts
   (``parts``): a commit and a poll's reads under their key, a poll's events under no key. Each part keeps the invocation's place in the file (``o1``, ``o2``) and its place among
   the op's parts (``n``): the history order the checks read. Each task also emits its ``Tally`` per run
   and the keys the events name. The parts are checkpointed: three jobs read them.
2. ``group_rows``: events parts are joined with their run's keys (every key a part names), the parts are
   shuffled by (run, key), and each (run, key) group, sorted into history order, is checked by
   ``checkers.groups.checks.check_key`` on ``checkers.groups.extract.key_facts``. Only anomaly rows leave the
   workers: (run, kind, key, n, row as JSON).

``collect`` sorts the rows as the Python checker orders them (by key, then each key's own order) and
merges the tallies; ``checkers.groups.checker.group_result`` makes the result from them.

What is held whole by one Python worker: one process's lines (pass 1) and one key's parts (pass 2), as
the queue pass holds one key's records. Differences from the Python checker's input: the group fields are
read as the JSONL reader reads every optional field (``spark_analysis.read``): a field that is null is
taken as absent (a completion's null ``generation`` does not hide its invocation's, where the Python
completion rule would keep the null; the workload's completions repeat every field, so its histories are
read alike), and a ``group`` or ``member`` written as a JSON number is read as its text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.groups.checks import CHECKS
from checkers.groups.extract import COMMIT, EVENTS, READS, Tally

# The op columns pass 1 reads (``spark_analysis.read.OPS_COLUMNS``; ``spark_analysis.columnar.ops``).
GROUP_COLUMNS = ("run", "block", "rid", "index", "time", "type", "process", "f", "value", "error", "final",
                 "rebalance", "group", "generation", "member", "stall")
PARTS_SCHEMA = "run string, key string, o1 long, o2 long, n int, kind string, payload string"
ROWS_SCHEMA = "run string, kind string, key string, n int, row string"
TALLY, KEY = "tally", "key"  # pass 1's other rows: a task's tally of a run, a key the events name


def candidates(ops: DataFrame) -> DataFrame:
    """(run, process) of every client process with a line that may be a group op (a superset of
    ``checkers.groups.extract.is_group_op``, which the workers apply)."""
    return (ops.where((F.col("process") != "nemesis") & (
        (F.col("f") == "commit") | F.col("rebalance").isNotNull() | F.col("group").isNotNull()))
        .select("run", "process").distinct())


def group_parts(ops: DataFrame) -> DataFrame | None:
    """Pass 1 over ``ops`` (op rows with ``GROUP_COLUMNS``): the parts of every run's group ops, with a
    tally row per run and task and the keys the events name (``PARTS_SCHEMA``), checkpointed; None when no
    process has a line that may be a group op (then the pass costs one narrow scan)."""
    procs = candidates(ops).collect()  # a row per consumer process of the runs with group ops
    if not procs:
        return None
    wanted = ops.sparkSession.createDataFrame(procs, "run string, process string")
    rows = (ops.join(F.broadcast(wanted), ["run", "process"], "left_semi")
            .select(*GROUP_COLUMNS).repartition("run", "process"))
    return rows.mapInArrow(_extract, PARTS_SCHEMA).localCheckpoint(eager=True)


def _json(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:  # a JSON string comes without its quotes
        return raw


def op_of_row(index: int, time: int, typ: str, process: str, f: str, value: str | None, error: str | None,
              final: str | None, rebalance: str | None, group: str | None, generation: str | None,
              member: str | None, stall: str | None) -> dict:
    """A history line from its op columns (``GROUP_COLUMNS``), a null optional field left out."""
    op = {"index": index, "time": time, "type": typ, "process": int(process), "f": f, "value": _json(value),
          "error": error}
    for name, raw in (("final", final), ("rebalance_log", rebalance), ("generation", generation),
                      ("stall_ms", stall)):
        if raw is not None:
            op[name] = _json(raw)
    if group is not None:
        op["group"] = group
    if member is not None:
        op["member"] = member
    return op


def _extract(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body of pass 1: each process's lines -> its ops' parts; a tally per run."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from checkers.groups.extract import encode_part, op_facts, part_keys, parts
    from harness.history import complete_op, pair_ops

    batches = list(batches)
    if not batches:
        return
    table = pa.Table.from_batches(batches).sort_by(
        [("run", "ascending"), ("process", "ascending"), ("block", "ascending"), ("rid", "ascending")])
    del batches
    runs = pc.dictionary_encode(table["run"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
    procs = pc.dictionary_encode(table["process"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
    cuts = np.flatnonzero((runs[1:] != runs[:-1]) | (procs[1:] != procs[:-1])) + 1
    bounds = [0, *cuts.tolist(), table.num_rows]
    tallies: dict[str, Tally] = {}
    named: dict[str, set[int]] = {}
    columns = GROUP_COLUMNS[3:]
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        group = table.slice(start, end - start)
        run = group["run"][0].as_py()
        tally = tallies.setdefault(run, Tally())
        keys = named.setdefault(run, set())
        places = list(zip(group["block"].to_pylist(), group["rid"].to_pylist(), strict=True))
        lines = [op_of_row(*row) for row in zip(*(group[c].to_pylist() for c in columns), strict=True)]
        place = {id(op): at for op, at in zip(lines, places, strict=True)}
        for op in lines:
            tally.add_line(op)
        out: list[tuple] = []
        for invoke, completion in pair_ops(lines)[0]:
            op = complete_op(invoke, completion)
            commits, poll = op_facts(op)
            tally.add_op(op, commits, poll)
            o1, o2 = place[id(invoke)]
            for n, (key, kind, fact) in enumerate(parts(commits, poll)):
                out.append((None if key is None else str(key), o1, o2, n, kind, encode_part(kind, fact)))
                if key is None:
                    keys |= part_keys(key, kind, fact)
        if out:
            yield _batch(run, out)
    for run, tally in tallies.items():
        extra = [(None, 0, 0, 0, TALLY, tally.to_json())] + [(str(k), 0, 0, 0, KEY, None) for k in sorted(named[run])]
        yield _batch(run, extra)


def _batch(run: str, rows: list[tuple]) -> Any:
    import pyarrow as pa

    key, o1, o2, n, kind, payload = zip(*rows, strict=True)
    return pa.RecordBatch.from_arrays(
        [pa.array([run] * len(rows), pa.string()), pa.array(key, pa.string()), pa.array(o1, pa.int64()),
         pa.array(o2, pa.int64()), pa.array(n, pa.int32()), pa.array(kind, pa.string()),
         pa.array(payload, pa.string())], names=["run", "key", "o1", "o2", "n", "kind", "payload"])


def group_rows(parts: DataFrame) -> DataFrame:
    """Pass 2: the anomaly rows (``ROWS_SCHEMA``) of every (run, key) of ``parts``."""
    cols = ["run", "key", "o1", "o2", "n", "kind", "payload"]
    keyed = parts.where(F.col("kind").isin(READS, COMMIT)).select(*cols)
    run_keys = parts.where(F.col("key").isNotNull()).select("run", "key").distinct()
    events = parts.where(F.col("kind") == EVENTS).drop("key").join(run_keys, "run").select(*cols)
    return keyed.unionByName(events).repartition("run", "key").mapInArrow(_check, ROWS_SCHEMA)


def _check(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body of pass 2: each (run, key)'s parts in history order -> its anomaly rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from checkers.groups.checks import check_key
    from checkers.groups.extract import decode_part, key_facts

    batches = list(batches)
    if not batches:
        return
    table = pa.Table.from_batches(batches).sort_by(
        [("run", "ascending"), ("key", "ascending"), ("o1", "ascending"), ("o2", "ascending"), ("n", "ascending")])
    del batches
    runs = pc.dictionary_encode(table["run"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
    keys = pc.dictionary_encode(table["key"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
    cuts = np.flatnonzero((runs[1:] != runs[:-1]) | (keys[1:] != keys[:-1])) + 1
    bounds = [0, *cuts.tolist(), table.num_rows]
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        group = table.slice(start, end - start)
        run, key = group["run"][0].as_py(), group["key"][0].as_py()
        routed = [(kind, decode_part(kind, payload))
                  for kind, payload in zip(group["kind"].to_pylist(), group["payload"].to_pylist(), strict=True)]
        found = check_key(key_facts(int(key), routed))
        out = [(kind, n, json.dumps(row)) for kind, rows in found.items() for n, row in enumerate(rows)]
        if out:
            kinds, ns, texts = zip(*out, strict=True)
            yield pa.RecordBatch.from_arrays(
                [pa.array([run] * len(out), pa.string()), pa.array(kinds, pa.string()),
                 pa.array([key] * len(out), pa.string()), pa.array(ns, pa.int32()), pa.array(texts, pa.string())],
                names=["run", "kind", "key", "n", "row"])


@dataclass
class GroupFindings:
    """One run's group anomalies (every one, by kind, in the Python checker's order) and its tally."""

    anomalies: dict[str, list[dict]] = field(default_factory=lambda: {kind: [] for kind in CHECKS})
    tally: Tally = field(default_factory=Tally)

    @property
    def applies(self) -> bool:
        """Whether the run has group ops (``checkers.groups.has_group_ops``: the checker is added)."""
        return self.tally.group_lines > 0


def tallies(parts: DataFrame) -> dict[str, Tally]:
    """Each run's tally (a few rows per run and task reach the driver)."""
    out: dict[str, Tally] = {}
    for r in parts.where(F.col("kind") == TALLY).select("run", "payload").collect():
        out.setdefault(r["run"], Tally()).merge(Tally.from_json(r["payload"]))
    return out


def collect(parts: DataFrame) -> dict[str, GroupFindings]:
    """Every run of ``parts`` with group ops -> its findings (the anomaly rows and tallies are collected)."""
    found = {run: GroupFindings(tally=tally) for run, tally in tallies(parts).items()}
    rows = sorted(((r["run"], r["kind"], int(r["key"]), r["n"], r["row"]) for r in group_rows(parts).collect()),
                  key=lambda r: (r[0], r[1], r[2], r[3]))
    for run, kind, _, _, row in rows:
        found.setdefault(run, GroupFindings()).anomalies[kind].append(json.loads(row))
    return {run: f for run, f in found.items() if f.applies}


def count_rows(parts: DataFrame) -> DataFrame:
    """One row per (run, kind) with the number of group anomalies, computed without collecting any."""
    return group_rows(parts).groupBy("run", "kind").agg(F.count(F.lit(1)).alias("count"))
