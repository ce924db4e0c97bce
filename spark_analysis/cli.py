"""Command line of the Spark analysis.

- ``kraftcheck aggregate STORE [--master URL] [--out DIR] ...`` (``main``): aggregate a whole store.
- ``python -m spark_analysis check HISTORY [--input auto|jsonl|parquet] [--master URL] [--json]``
  (``check_main``): the Spark queue checks on one history, and the consumer-group checks when it has group
  ops, from its columnar form when there is one (the engine behind ``--engine spark``). ``kraftcheck export --format parquet`` writes the columnar form.

Exit codes from the table ``harness.verdict.EXIT_CODES``, as everywhere in kraftcheck: that of valid when
done (no anomaly), of invalid when anomalies were found, ``EXIT_USAGE`` for unusable input (a store that is
not a directory, an EDN file where JSONL is expected), that of a harness error when the analysis could not
run (no Java, bad master URL, corrupt input with ``--strict``, a columnar history that does not match its
JSONL, no runs in the store).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from harness.history import edn_problem, malformed_summary
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_INVALID, EXIT_OK, EXIT_USAGE
from spark_analysis.errors import SparkAnalysisError


def _session_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default=None,
                   help="Spark master URL: local[*] (default, embedded), local[N] or spark://HOST:PORT")
    p.add_argument("--shuffle-partitions", type=int, default=None, help="spark.sql.shuffle.partitions")
    p.add_argument("--driver-memory", default=None, help="spark.driver.memory, e.g. 2g")
    p.add_argument("--ui", action="store_true", help="enable the Spark UI (off by default)")


def _session(args: argparse.Namespace, input_bytes: int | None = None):
    from spark_analysis.session import DEFAULT_SHUFFLE_PARTITIONS, get_session

    return get_session(args.master, ui=args.ui, driver_memory=args.driver_memory,
                       shuffle_partitions=args.shuffle_partitions or DEFAULT_SHUFFLE_PARTITIONS,
                       input_bytes=input_bytes)


def main(argv: list[str] | None = None) -> int:
    """``kraftcheck aggregate STORE``: Parquet + CSV + summary.json of every run in the store."""
    p = argparse.ArgumentParser(prog="kraftcheck aggregate",
                                description="Aggregate a whole store with Spark: anomalies by fault mix and "
                                            "variant, availability and latency per nemesis state, recovery.")
    p.add_argument("store", help="store root (e.g. ./store) holding <test>/<start>/history.jsonl runs; "
                   "a run's columnar history (history.parquet) is read instead of its JSONL when it matches")
    p.add_argument("--out", default=None, help="output directory (default: STORE/aggregate)")
    p.add_argument("--no-anomalies", action="store_true", help="skip the per-run queue checks (faster)")
    p.add_argument("--limit-runs", type=int, default=None, help="only the first N runs (sorted by path)")
    p.add_argument("--json", action="store_true", help="print summary.json on stdout")
    _session_args(p)
    args = p.parse_args(argv)
    out = args.out or str(Path(args.store) / "aggregate")
    if not Path(args.store).is_dir():  # before paying for a JVM
        print(f"kraftcheck aggregate: error: store {args.store}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    try:
        from harness.store import list_histories

        spark = _session(args, sum(h.stat().st_size for h in list_histories(args.store)))
        from spark_analysis.aggregate import aggregate_store

        started = time.monotonic()
        summary = aggregate_store(spark, args.store, out, anomalies=not args.no_anomalies,
                                  limit_runs=args.limit_runs)
    except SparkAnalysisError as exc:
        print(f"kraftcheck aggregate: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    finally:
        from spark_analysis.session import stop_session

        stop_session()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['runs']} runs, {summary['anomalies_total']} anomalies, "
              f"{time.monotonic() - started:.1f} s -> {out}")
        for row in summary["by_mix"]:
            print(f"  {row['fault_mix']:<30} {row['variant']:<8} runs={row['runs']:<5} "
                  f"with anomalies={row['runs_with_anomalies']}")
    return EXIT_OK


def check_main(argv: list[str] | None = None) -> int:
    """``check HISTORY``: the Spark queue (and group) checks on one history; exit 1 when any anomaly was found."""
    p = argparse.ArgumentParser(prog="python -m spark_analysis check",
                                description="Queue anomalies of one history computed by Spark, and consumer-group "
                                            "anomalies when it has group ops (the same definitions and results as "
                                            "kraftcheck check's queue and group checkers).")
    p.add_argument("history", help="history.jsonl (or its history.parquet directory)")
    p.add_argument("--input", choices=("auto", "jsonl", "parquet"), default="auto",
                   help="what to read: the columnar history when there is one (auto, the default), only it, "
                        "or the JSONL")
    p.add_argument("--unseen-deadline-ns", type=int, default=None,
                   help="history time after which a write nobody read is unseen (default: none)")
    p.add_argument("--strict", action="store_true", help=f"fail (exit {EXIT_HARNESS_ERROR}) on any malformed line")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    _session_args(p)
    args = p.parse_args(argv)
    from spark_analysis.check import check_history, locate

    problem = edn_problem(args.history) if _local_jsonl(args.history) else None
    if problem:
        print(f"spark check: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        spark = _session(args, locate(args.history, args.input).input_bytes)
        options = {"unseen_deadline_ns": args.unseen_deadline_ns}
        result = check_history(args.history, options, strict=args.strict, spark=spark, source=args.input)
    except SparkAnalysisError as exc:
        print(f"spark check: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    finally:
        from spark_analysis.session import stop_session

        stop_session()
    found = {k: len(v) for k, v in {**result.anomalies, **(result.groups or {})}.items() if v}
    if args.json:
        print(json.dumps({"engine": "spark", "input": result.source, "anomalies": result.anomalies,
                          "group_anomalies": result.groups, "counts": found,
                          "malformed_count": result.malformed_count,
                          "malformed": [str(m) for m in result.malformed]}))
    else:
        for line in malformed_summary(result.malformed, total=result.malformed_count, prefix="malformed: "):
            print(line, file=sys.stderr)
        print("anomalies: " + (", ".join(f"{k}={n}" for k, n in found.items()) or "none"))
    return EXIT_INVALID if found else EXIT_OK


def _local_jsonl(path: str) -> bool:
    """Whether ``path`` is a local JSONL file (not Parquet, not a remote URI) whose first line can be read."""
    return not path.rstrip("/").endswith(".parquet") and os.path.isfile(path)


def dispatch(argv: list[str] | None = None) -> int:
    """``python -m spark_analysis {aggregate,check} ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"aggregate": main, "check": check_main}
    if not argv or argv[0] not in commands:
        print("usage: python -m spark_analysis {aggregate,check} ...", file=sys.stderr)
        return EXIT_USAGE
    return commands[argv[0]](argv[1:])
