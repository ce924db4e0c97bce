"""``--engine spark``: the queue and group checkers' results for a history too large for the Python engine.

``check_run_spark(spec, history_path)`` returns a results dict shaped like
``checkers.analysis.check_run``'s (``valid``, ``checkers``, ``profile``, ``malformed``), with the checker
``queue``, judged by the Python engine's own ``judge`` and guarantee profile (``checkers.queue.profiles``), so the
two engines classify anomalies identically; and, when the history has consumer-group ops (as
``checkers.analysis.check_run`` decides), the checker ``groups``, assembled by the Python checker's own
``group_result`` with the statuses it derives from the same profile (``spark_analysis.groups``). What
reaches the driver: anomaly rows, the nemesis ops (the profile counts the faults that ran), a few scalars
and a tally per run, and for the cycle search the barrier times and the dependency edges no realtime
path implies (``spark_analysis.cycles``).

Every queue kind is computed, the cycle kinds (G0, G1c and their realtime variants) included
(``spark_analysis.cycles``), and every group kind. Not computed by this engine, and said so in the result
(``not_computed``): the linearizability engine and the protocol invariants over traces; run the Python
engine for those. Without a trace, the group checker's ``coordinator_loads`` count is None.
"""

from __future__ import annotations

import json
import os
from typing import Any

from harness.checked_spec import CheckedSpec
from harness.history import HistoryFormatError, edn_problem
from spark_analysis.check import locate, prepare
from spark_analysis.cycles import queue_anomalies_spark
from spark_analysis.session import get_session

NOT_COMPUTED = ["linearizability", "invariants"]


def _refuse_edn(path: str) -> None:
    """``HistoryFormatError`` for an EDN file given as a JSONL history, before a JVM is started for it."""
    if not path.rstrip("/").endswith(".parquet") and os.path.isfile(path):
        problem = edn_problem(path)
        if problem:
            raise HistoryFormatError(problem)


def _recoveries(trace_path: str) -> list[dict]:
    """The trace's ``unclean_recovery`` events (a scan for the kind: the rest of the trace is not read)."""
    found = []
    with open(trace_path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if '"unclean_recovery"' in line:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue  # a torn last line: malformed lines are the Python engine's to report
    return found


def check_run_spark(spec: dict | None, history_path: str, *, profile: Any = None, master: str | None = None,
                    spark: Any = None, nemesis_out: list | None = None, source: str = "auto",
                    trace_path: str | None = None) -> dict[str, Any]:
    """The queue checker's verdict computed by Spark (see the module docstring).

    ``nemesis_out``, when given, receives the history's nemesis ops (small: the fault schedule), so a
    caller can compute fault coverage without reading the history again. ``source``: which input to read
    (``spark_analysis.check.locate``: the columnar history when there is one, by default). ``trace_path``:
    the run's trace, when there is one; the guarantee profile reads the K7 recoveries it shows, as the
    Python engine's does (``CheckedSpec.observed``).
    """
    from checkers.base import merge_valid
    from checkers.groups.checker import group_result, statuses_of
    from checkers.queue.checker import judge, unseen_deadline
    from checkers.queue.profiles import apply_override, derive_profile

    spec = CheckedSpec.of(spec)
    if trace_path is not None and os.path.isfile(trace_path):
        spec = spec.observed(_recoveries(trace_path))
    _refuse_edn(str(history_path))
    where = locate(history_path, source)
    spark = spark or get_session(master, input_bytes=where.input_bytes)
    prepared = prepare(spark, where, nemesis=True, groups=True)
    facts = prepared.facts
    options = {"unseen_deadline_ns": unseen_deadline(spec, prepared.first_final_invoke)}
    try:
        found = queue_anomalies_spark(spark, prepared.table, facts, options)
        groups = prepared.groups()
    finally:
        prepared.release()
    if nemesis_out is not None:
        nemesis_out.extend(prepared.nemesis)
    features = {"transactions": facts.transactions, "subscribe": facts.subscribe}
    derived = derive_profile(spec, prepared.nemesis, facts.has_final, features)
    prof = apply_override(derived, profile)
    queue = judge(found, prof)
    queue["unseen_deadline_ns"] = options["unseen_deadline_ns"]
    queue["engine"] = "spark"
    queue["input"] = "parquet" if where.uses_parquet else "jsonl"
    queue["not_computed"] = NOT_COMPUTED
    queue["stats"] = {"client_ops": facts.client_ops, "final_phase": facts.has_final}
    checkers = {"queue": queue}
    if groups is not None:
        # As the Python checker: the statuses follow the derived profile, not the --profile override.
        checkers["groups"] = group_result(groups.anomalies, groups.tally, *statuses_of(derived), loads=None)
        checkers["groups"]["engine"] = "spark"
    verdicts = [r["valid"] for r in checkers.values()] + ([] if facts.client_ops else ["unknown"])
    return {
        "valid": merge_valid(verdicts),
        "engine": "spark",
        "checkers": checkers,
        "profile": prof,
        "malformed": [{"file": m.path, "line": m.line, "reason": m.reason} for m in prepared.malformed],
        "malformed_count": prepared.malformed_count,
    }
