"""One history checked by Spark: the entry point behind ``--engine spark``.

``check_history(path)`` returns the same dict as ``checkers.queue.queue_anomalies``: every kind but the cycles
(``checkers.queue.keys.KEY_KINDS``) computed one key at a time by the Python checker's own code
(``spark_analysis.keyed``), and the cycle kinds from the dependency graph that pass emits
(``spark_analysis.cycles``; ``[]`` with the option ``cycles`` False, as in Python). The input is chosen
by ``locate``:

- a columnar history (``history.parquet/`` beside ``history.jsonl``, or such a directory given itself) is
  read when present, after ``checkers.history.parquet.check_current`` has checked that it is whole and
  derived from the JSONL as it is now (a mismatch is an error saying how to rebuild it, never a silent
  fallback); its key table is read as it is;
- otherwise the JSONL is read with an explicit schema (``spark_analysis.read``) and turned into the same
  key table by Spark (``spark_analysis.extract``), then checkpointed, since several jobs read it.

Malformed lines are reported (count and the first ones with file and line) for both inputs, or raised
with ``strict=True``.

The consumer-group checks (``spark_analysis.groups``) read the op table of the same input (``ops.parquet``,
or the parsed JSONL lines), so ``prepare`` runs their first pass while that table is at hand; a history
without group ops has none (``SparkCheckResult.groups`` None), as the Python checker then does not run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.history.parquet import NEMESIS, ParquetHistoryError, check_current, parquet_dir_for
from checkers.queue.keys import KEY_KINDS
from spark_analysis import columnar
from spark_analysis.cycles import queue_anomalies_spark
from spark_analysis.errors import CorruptInput
from spark_analysis.extract import checkpoint, key_table, records, with_committed
from spark_analysis.groups import GroupFindings, collect, group_parts
from spark_analysis.keyed import RunFacts, count_anomalies, key_pass, refuse_odd, run_facts
from spark_analysis.read import (
    Malformed,
    malformed_lines,
    ops_to_dicts,
    raise_if_malformed,
    read_jsonl,
    scan_counts,
    with_order,
)
from spark_analysis.session import LARGE_INPUT_BYTES, get_session

SOURCES = ("auto", "parquet", "jsonl")


@dataclass(frozen=True)
class Located:
    """Which input a check reads: the JSONL history and/or its columnar directory."""

    jsonl: Path | None
    parquet: Path | None

    @property
    def uses_parquet(self) -> bool:
        """Whether the check reads the columnar history."""
        return self.parquet is not None

    @property
    def input_bytes(self) -> int | None:
        """The size of the JSONL history (how large a check this is), when there is one."""
        try:
            return self.jsonl.stat().st_size if self.jsonl is not None else None
        except OSError:
            return None


def locate(path: str | os.PathLike, source: str = "auto") -> Located:
    """The input for ``path`` (a JSONL history or a columnar directory): with ``source`` ``auto`` the
    columnar history when there is one (checked against the JSONL: ``CorruptInput`` saying how to rebuild
    it when it does not match), ``parquet`` insists on it, ``jsonl`` ignores it."""
    try:
        return _locate(Path(path), source)
    except ParquetHistoryError as exc:
        raise CorruptInput(str(exc), []) from None


def _locate(path: Path, source: str) -> Located:
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}")
    if path.is_dir() or path.suffix == ".parquet":
        if source == "jsonl":
            raise ParquetHistoryError(f"{path}: a columnar history, but the JSONL input was asked for")
        sibling = path.with_suffix(".jsonl")
        jsonl = sibling if sibling.is_file() else None
        check_current(path, jsonl)
        return Located(jsonl, path)
    directory = parquet_dir_for(path)
    if source == "jsonl" or (source == "auto" and not directory.exists()):
        return Located(path, None)
    check_current(directory, path)
    return Located(path, directory)


@dataclass
class Prepared:
    """A history ready for the keyed pass: its key table, the facts of its run, what was malformed."""

    table: DataFrame
    facts: RunFacts
    malformed_count: int = 0
    malformed: list[Malformed] = field(default_factory=list)
    nemesis: list[dict] = field(default_factory=list)
    first_final_invoke: int | None = None
    group_parts: DataFrame | None = None  # the group checks' first pass (``spark_analysis.groups``)
    cached: list[DataFrame] = field(default_factory=list)  # what ``release`` drops

    def release(self) -> None:
        """Drop what was cached for the check."""
        for df in self.cached:
            df.unpersist()

    def groups(self) -> GroupFindings | None:
        """The group checks' findings (``prepare`` with ``groups``), None when the history has no group op."""
        return None if self.group_parts is None else collect(self.group_parts).get("")

    def _add_groups(self, ops: DataFrame) -> None:
        self.group_parts = group_parts(ops)
        if self.group_parts is not None:
            self.cached.append(self.group_parts)


def prepare(spark: SparkSession, where: Located, *, strict: bool = False, nemesis: bool = False,
            groups: bool = False) -> Prepared:
    """Read the input of ``where`` into a key table (run ``""``) and the facts the check needs; with
    ``nemesis`` also the nemesis ops and the first final invocation's time (the engine's profile and
    recovery deadline); with ``groups`` the first pass of the group checks (``Prepared.groups``)."""
    if where.uses_parquet:
        return _prepare_parquet(spark, where, strict, nemesis, groups)
    return _prepare_jsonl(spark, str(where.jsonl), strict, nemesis, groups)


def _prepare_parquet(spark: SparkSession, where: Located, strict: bool, nemesis: bool, groups: bool) -> Prepared:
    from checkers.history.parquet import read_manifest, read_ops

    directory = str(where.parquet)
    manifest = read_manifest(directory)
    bad = manifest["malformed"]
    shown = str(where.jsonl) if where.jsonl is not None else directory
    first = [Malformed(shown, m["line"], m["reason"]) for m in bad["first"]]
    if bad["count"] and strict:
        lines = "\n  ".join(str(m) for m in first[:20])
        raise CorruptInput(f"{bad['count']} malformed history line(s), first ones:\n  {lines}",
                           [(m.path, m.line, m.reason) for m in first[:20]])
    table = columnar.key_table(spark, [directory], run="")
    facts = run_facts(table).get("", RunFacts())
    prepared = Prepared(table, facts, bad["count"], first)
    if nemesis:
        # A few rows (the fault schedule): read on the driver, as the manifest is.
        prepared.nemesis = read_ops(directory, NEMESIS)[0]
        row = (columnar.ops(spark, [directory], run="")
               .where((F.col("final") == "true") & (F.col("type") == "invoke"))
               .agg(F.min_by("time", "rid").alias("t")).collect()[0])
        prepared.first_final_invoke = row["t"]
    if groups:
        prepared._add_groups(columnar.ops(spark, [directory], run=""))
    return prepared


# JSONL bytes per shuffle partition while a JSONL history is parsed and paired (larger partitions of the
# key table do not fit two at a time in a small local heap).
JSONL_BYTES_PER_PARTITION = 64 * 1024 * 1024


def _prepare_jsonl(spark: SparkSession, path: str, strict: bool, nemesis: bool, groups: bool) -> Prepared:
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    large = size >= LARGE_INPUT_BYTES
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(max(int(previous), size // JSONL_BYTES_PER_PARTITION)))
    # Parse the JSON once: the counts, the nemesis ops and the key table all read the persisted rows.
    raw = read_jsonl(spark, path, run="").persist(StorageLevel.DISK_ONLY if large else StorageLevel.MEMORY_AND_DISK)
    try:
        count, missing_index = scan_counts(raw)
        first: list[Malformed] = []
        if count and strict:
            raise_if_malformed(spark, raw)
        elif count:
            _, first = malformed_lines(spark, raw, total=count)
        ops = with_order(spark, raw, missing_index)
        table = checkpoint(key_table(records(ops)), disk_only=large)
        prepared = Prepared(with_committed(table), RunFacts(), count, first, cached=[table])
        facts = run_facts(table)
        if nemesis:
            prepared.nemesis = ops_to_dicts(ops.where(F.col("process") == "nemesis")
                                            .orderBy("block", "rid").collect())
            row = (ops.where((F.col("final") == "true") & (F.col("type") == "invoke"))
                   .agg(F.min_by("time", F.struct("block", "rid")).alias("t")).collect()[0])
            prepared.first_final_invoke = row["t"]
        if groups:  # now, while the parsed lines are cached: the parts are checkpointed
            prepared._add_groups(ops)
    finally:
        raw.unpersist()
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    refuse_odd(facts, path)
    prepared.facts = facts.get("", RunFacts())
    return prepared


@dataclass
class SparkCheckResult:
    """Anomalies by kind (contract shapes), plus the malformed lines seen while reading."""

    anomalies: dict[str, list[dict]]
    malformed_count: int = 0
    malformed: list[Malformed] = field(default_factory=list)
    source: str = "jsonl"
    client_ops: int = 0
    groups: dict[str, list[dict]] | None = None  # every group anomaly by kind; None without group ops


def check_history(path: str, options: dict | None = None, *, master: str | None = None,
                  strict: bool = False, spark: Any = None, source: str = "auto") -> SparkCheckResult:
    """Every queue kind on one history, and the group kinds when it has group ops (see the module docstring
    for the input)."""
    where = locate(path, source)
    spark = spark or get_session(master, input_bytes=where.input_bytes)
    prepared = prepare(spark, where, strict=strict, groups=True)
    try:
        anomalies = queue_anomalies_spark(spark, prepared.table, prepared.facts, dict(options or {}))
        groups = prepared.groups()
    finally:
        prepared.release()
    return SparkCheckResult(anomalies, prepared.malformed_count, prepared.malformed,
                            "parquet" if where.uses_parquet else "jsonl", prepared.facts.client_ops,
                            None if groups is None else groups.anomalies)


def anomaly_counts(path: str, options: dict | None = None, *, spark: Any, source: str = "auto") -> dict[str, int]:
    """Exact anomaly counts per kind of one history (benchmarks): with the option ``cycles`` False
    without collecting any anomaly row, else from ``check_history``'s rows (the cycle search needs the
    graph on the driver anyway)."""
    options = dict(options or {})
    prepared = prepare(spark, locate(path, source))
    try:
        if options.get("cycles", True):
            found = queue_anomalies_spark(spark, prepared.table, prepared.facts, options)
            return {kind: len(rows) for kind, rows in found.items() if rows}
        rows = key_pass(spark, prepared.table, {"": prepared.facts}, {"": options})
        counts = count_anomalies(rows).collect()
    finally:
        prepared.release()
    return {r["kind"]: r["count"] for r in sorted(counts, key=lambda r: KEY_KINDS.index(r["kind"]))}


def spark_queue_anomalies(path: str, options: dict | None = None, **kwargs: Any) -> dict[str, list[dict]]:
    """Just the anomalies of ``check_history`` (the shape of ``checkers.queue.queue_anomalies``)."""
    return check_history(path, options, **kwargs).anomalies
