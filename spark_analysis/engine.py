"""``--engine spark``: the queue checker's result for a history too large for the Python engine.

``check_run_spark(spec, history_path)`` returns a results dict shaped like
``checkers.analysis.check_run``'s (``valid``, ``checkers``, ``profile``, ``malformed``), with one checker,
``queue``, judged by the Python engine's own ``judge`` and guarantee profile (``checkers.profiles``), so the
two engines classify anomalies identically. What reaches the driver: anomaly rows, the nemesis ops (the
profile counts the faults that ran), a few scalars, and for the cycle search the barrier times and the
dependency edges no realtime path implies (``spark_analysis.cycles``).

Every queue kind is computed, the cycle kinds (G0, G1c and their realtime variants) included
(``spark_analysis.cycles``). Not computed by this engine, and said so in the result (``not_computed``):
the linearizability engine and the protocol invariants over traces; run the Python engine for those.
"""

from __future__ import annotations

import os
from typing import Any

from harness.core.history import HistoryFormatError, edn_problem
from spark_analysis.check import locate, prepare
from spark_analysis.cycles import queue_anomalies_spark
from spark_analysis.session import get_session

NOT_COMPUTED = ["linearizability", "invariants"]


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
                    spark: Any = None, nemesis_out: list | None = None, source: str = "auto") -> dict[str, Any]:
    """The queue checker's verdict computed by Spark (see the module docstring).

    ``nemesis_out``, when given, receives the history's nemesis ops (small: the fault schedule), so a
    caller can compute fault coverage without reading the history again. ``source``: which input to read
    (``spark_analysis.check.locate``: the columnar history when there is one, by default).
    """
    from checkers.base import merge_valid
    from checkers.profiles import apply_override, derive_profile
    from checkers.queue_checker import judge

    spec = dict(spec or {})
    _refuse_edn(str(history_path))
    where = locate(history_path, source)
    spark = spark or get_session(master, input_bytes=where.input_bytes)
    prepared = prepare(spark, where, nemesis=True)
    facts = prepared.facts
    options = {"unseen_deadline_ns": _deadline(spec, prepared.first_final_invoke)}
    try:
        found = queue_anomalies_spark(spark, prepared.table, facts, options)
    finally:
        prepared.release()
    if nemesis_out is not None:
        nemesis_out.extend(prepared.nemesis)
    features = {"transactions": facts.transactions, "subscribe": facts.subscribe}
    prof = apply_override(derive_profile(spec, prepared.nemesis, facts.has_final, features), profile)
    queue = judge(found, prof)
    queue["unseen_deadline_ns"] = options["unseen_deadline_ns"]
    queue["engine"] = "spark"
    queue["input"] = "parquet" if where.uses_parquet else "jsonl"
    queue["not_computed"] = NOT_COMPUTED
    queue["stats"] = {"client_ops": facts.client_ops, "final_phase": facts.has_final}
    verdicts = [queue["valid"]] + ([] if facts.client_ops else ["unknown"])
    return {
        "valid": merge_valid(verdicts),
        "engine": "spark",
        "checkers": {"queue": queue},
        "profile": prof,
        "malformed": [{"file": m.path, "line": m.line, "reason": m.reason} for m in prepared.malformed],
        "malformed_count": prepared.malformed_count,
    }
