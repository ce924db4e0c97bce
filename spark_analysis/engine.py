"""``--engine spark``: the queue checker's result for a history too large for the Python engine.

``check_run_spark(spec, history_path)`` returns a results dict shaped like
``checkers.analysis.check_run``'s (``valid``, ``checkers``, ``profile``, ``malformed``), with one checker,
``queue``, judged by the Python engine's own ``judge`` and guarantee profile (``checkers.profiles``), so the
two engines classify anomalies identically. Only small things reach the driver: anomaly rows, the
nemesis ops (the profile counts the faults that ran) and a few scalars.

Not computed by this engine, and said so in the result (``not_computed``): the cycle kinds (G0, G1c and
their realtime variants), the linearizability engine and the protocol invariants over traces; run the
Python engine for those.
"""

from __future__ import annotations

import os
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import functions as F

from harness.core.history import HistoryFormatError, edn_problem
from spark_analysis.extract import extract
from spark_analysis.queue_jobs import QueueJobs, collect_anomalies
from spark_analysis.read import malformed_lines, ops_to_dicts, read_history_df, scan_counts, with_order
from spark_analysis.session import get_session

NOT_COMPUTED = ["G0", "G1c", "G0-realtime", "G1c-realtime", "linearizability", "invariants"]


def _deadline(spec: dict, final_invoke_time: int | None) -> int | None:
    # Same rule as checkers.queue_checker.recovery_deadline, from a scalar computed by Spark.
    if spec.get("unseen_deadline_ns") is not None:
        return int(spec["unseen_deadline_ns"])
    timeout = spec.get("final_read_timeout_s")
    if timeout is None or final_invoke_time is None:
        return None
    return int(final_invoke_time + float(timeout) * 1e9)


def _refuse_edn(path: str) -> None:
    """``HistoryFormatError`` for an EDN file given as a JSONL history, before a JVM is started for it."""
    if not path.rstrip("/").endswith(".parquet") and os.path.isfile(path):
        problem = edn_problem(path)
        if problem:
            raise HistoryFormatError(problem)


def check_run_spark(spec: dict | None, history_path: str, *, profile: Any = None, master: str | None = None,
                    spark: Any = None, nemesis_out: list | None = None) -> dict[str, Any]:
    """The queue checker's verdict computed by Spark (see the module docstring).

    ``nemesis_out``, when given, receives the history's nemesis ops (small: the fault schedule), so a
    caller can compute fault coverage without reading the history again.
    """
    from checkers.base import merge_valid
    from checkers.profiles import apply_override, derive_profile
    from checkers.queue_checker import judge

    spec = dict(spec or {})
    _refuse_edn(str(history_path))
    spark = spark or get_session(master)
    # Parse the JSON once: the counts, the nemesis ops and the extraction all read the persisted rows.
    raw = read_history_df(spark, str(history_path), run="").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        malformed_count, missing_index = scan_counts(raw)
        malformed = malformed_lines(spark, raw, total=malformed_count)[1] if malformed_count else []
        ops = with_order(spark, raw, missing_index)
        nemesis = ops_to_dicts(ops.where(F.col("process") == "nemesis").orderBy("block", "rid").collect())
        ex = extract(ops).persist()
    finally:
        raw.unpersist()  # the extraction tables are checkpoints: they no longer need it
    if nemesis_out is not None:
        nemesis_out.extend(nemesis)
    final_row = (ex.recs.where(F.col("final")).agg(F.count(F.lit(1)).alias("n"),
                                                    F.min("invoke_time").alias("t")).collect()[0])
    has_final = final_row["n"] > 0
    options = {"unseen_deadline_ns": _deadline(spec, final_row["t"] if has_final else None)}
    jobs = QueueJobs(ex, options).persist()
    try:
        found = collect_anomalies(jobs.frames(), run="")
        client_ops = ex.recs.count()
    finally:
        jobs.unpersist()
        ex.unpersist()
    prof = apply_override(derive_profile(spec, nemesis, has_final), profile)
    queue = judge(found, prof)
    queue["unseen_deadline_ns"] = options["unseen_deadline_ns"]
    queue["engine"] = "spark"
    queue["not_computed"] = NOT_COMPUTED
    queue["stats"] = {"client_ops": client_ops, "final_phase": has_final}
    verdicts = [queue["valid"]] + ([] if client_ops else ["unknown"])
    return {
        "valid": merge_valid(verdicts),
        "engine": "spark",
        "checkers": {"queue": queue},
        "profile": prof,
        "malformed": [{"file": m.path, "line": m.line, "reason": m.reason} for m in malformed],
        "malformed_count": malformed_count,
    }
