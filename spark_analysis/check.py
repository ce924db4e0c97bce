"""One history checked by Spark: the entry point behind ``--engine spark``.

``spark_queue_anomalies(path)`` reads a JSONL or Parquet history, runs the queue checks of
``spark_analysis.queue_jobs`` and returns the same dict as ``checkers.queue.queue_anomalies`` for the
kinds Spark computes (``queue_jobs.KINDS``), plus nothing else. Malformed lines are reported (count and
the first ones with file and line), like the Python engine, or raised with ``strict=True``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel

from spark_analysis.extract import extract
from spark_analysis.queue_jobs import KINDS, anomaly_frames, collect_anomalies
from spark_analysis.read import (
    Malformed,
    malformed_lines,
    raise_if_malformed,
    read_history_df,
    scan_counts,
    with_order,
)
from spark_analysis.session import get_session


@dataclass
class SparkCheckResult:
    """Anomalies by kind (contract shapes), plus the malformed lines seen while reading."""

    anomalies: dict[str, list[dict]]
    malformed_count: int = 0
    malformed: list[Malformed] = field(default_factory=list)


def check_history(path: str, options: dict | None = None, *, master: str | None = None,
                  strict: bool = False, limit: int | None = None, spark: Any = None) -> SparkCheckResult:
    """Run every Spark queue check on one history file (JSONL, or Parquet from ``parquet.py``).

    ``limit`` caps the rows collected per kind (None: all, as the Python checker returns them).
    """
    spark = spark or get_session(master)
    # Parse the JSON once: every later job (counts, pairing, checks) reads the persisted rows.
    raw = read_history_df(spark, path, run="").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        count, missing_index = scan_counts(raw)
        first: list[Malformed] = []
        if count and strict:
            raise_if_malformed(spark, raw)
        elif count:
            _, first = malformed_lines(spark, raw, total=count)
        ops = with_order(spark, raw, missing_index)
        ex = extract(ops).persist()
        jobs, frames = anomaly_frames(ex, options)
        try:
            anomalies = collect_anomalies(frames, run="", limit=limit)
        finally:
            jobs.unpersist()
            ex.unpersist()
    finally:
        raw.unpersist()
    return SparkCheckResult({k: anomalies[k] for k in KINDS}, count, first)


def anomaly_counts(path: str, options: dict | None = None, *, spark: Any) -> dict[str, int]:
    """Exact anomaly counts per kind of one history, without collecting any anomaly row (benchmarks)."""
    from pyspark.sql import functions as F

    from spark_analysis.queue_jobs import count_anomalies

    raw = read_history_df(spark, path, run="").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        _, missing_index = scan_counts(raw)
        ex = extract(with_order(spark, raw, missing_index)).persist()
        jobs, frames = anomaly_frames(ex, options)
        try:
            rows = count_anomalies(frames).where(F.col("count") > 0).collect()
        finally:
            jobs.unpersist()
            ex.unpersist()
    finally:
        raw.unpersist()
    return {r["kind"]: r["count"] for r in rows}


def spark_queue_anomalies(path: str, options: dict | None = None, **kwargs: Any) -> dict[str, list[dict]]:
    """Just the anomalies of ``check_history`` (the shape of ``checkers.queue.queue_anomalies``)."""
    return check_history(path, options, **kwargs).anomalies
