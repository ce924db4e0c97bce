"""kraftcheck analyze STORE_DIR: check a stored run again with today's checkers (also a partial one).

A partial run (the harness was killed) has spec.json and a history.jsonl whose last line may be torn;
torn and malformed lines are reported and the rest is checked. Without a completed final read nothing
proves that acknowledged writes survived, so such a run is at best unknown. Writes results.json and
report.html into the run directory; the verdict is decided as for runs, and
so is the exit code.

--engine spark [--master URL] checks the history with Spark instead, for histories too large for the
Python checkers: the queue checks and the consumer-group checks, judged exactly as the Python engine
judges them, with what Spark does not compute (linearizability, the invariants) listed as not computed. It reads the run's columnar history (history.parquet,
written after every run and by kraftcheck export --format parquet) when there is one, else the JSONL; a
columnar history that no longer matches the JSONL is an error. Fault coverage is computed from the
nemesis ops Spark returns, so the history is never read whole into this process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from harness import store
from harness.history import edn_problem, malformed_summary, read_history
from harness.node_evidence import read_trace_file, write_merged_trace
from harness.verdict import EXIT_UNKNOWN, EXIT_USAGE, NO_CLIENT_OPS, Verdict, verdict_lines
from kraftcheck.judge import check_store, judge
from reports.run_report import write_report
from spark_analysis.errors import SparkAnalysisError
from spark_analysis.session import current_master, stop_session


def rebuild_partial_evidence(run_dir: Path) -> str | None:
    """A killed harness never merged the node traces nor copied the logs; do it now if the node
    directories are still there (``kraftcheck clean`` removes them) and ``clock.json`` says how to
    rebase the traces. Returns what was done, or None."""

    node_dirs = run_dir / "node-dirs"
    if (run_dir / store.TRACE).exists() or not node_dirs.is_dir():
        return None
    try:
        clock = store.read_json(run_dir / store.CLOCK)
    except (OSError, ValueError):
        return "no clock.json: node traces cannot be rebased onto the history"
    if clock.get("boot_id") != store.boot_id():
        return "the machine rebooted since the run: node trace times are not comparable, trace skipped"
    events = []
    for node_dir in sorted(p for p in node_dirs.iterdir() if p.is_dir()):
        events.extend(read_trace_file(node_dir / "trace.jsonl", node_dir.name))
        log = node_dir / "node.log"
        if log.is_file():
            dest = run_dir / store.NODES / node_dir.name
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, dest / "node.log")
    count = write_merged_trace(run_dir / store.TRACE, events, int(clock["history_start_monotonic_ns"]))
    return f"rebuilt trace.jsonl ({count} events) and node logs from {node_dirs}"


NO_FINAL_READ = ("no completed final read in the history (partial run?): acknowledged writes cannot be "
                 "confirmed")


def spark_notes(results: dict) -> list[str]:
    """What the Spark engine's results say about the evidence itself: a history without client ops
    proves nothing (the Python engine's ``check_run`` makes the same note)."""
    queue = results["checkers"]["queue"]
    return [] if queue.get("stats", {}).get("client_ops") else [NO_CLIENT_OPS]


def check_store_spark(run_dir: Path, spec: dict, notes: list[str], master: str | None) -> dict | None:
    """``check_store``'s result computed by Spark (the queue and group checkers), or None after printing why not.

    The verdict is decided as on the Python path (``runner.judge``): requested faults that never took
    effect and a missing final phase turn a green verdict into ``unknown``.
    """

    history_path = run_dir / store.HISTORY
    if not history_path.is_file():
        print(f"kraftcheck analyze: no {store.HISTORY} in {run_dir}", file=sys.stderr)
        return None

    # pyspark comes with the optional 'spark' extra: imported only when this engine is asked for.
    from spark_analysis.engine import check_run_spark

    nemesis_ops: list[dict] = []
    ours = current_master() is None  # stop the session only if this command started it
    try:
        results = check_run_spark(spec, str(history_path), master=master, nemesis_out=nemesis_ops,
                                  trace_path=str(history_path.parent / store.TRACE))
    except SparkAnalysisError as exc:
        print(f"kraftcheck analyze: spark: {exc}", file=sys.stderr)
        return None
    finally:
        if ours:
            stop_session()
    queue = results["checkers"]["queue"]
    results["not_computed"] = list(queue.get("not_computed", []))
    for line in malformed_summary(results.get("malformed", []), total=results.get("malformed_count"),
                                  prefix="malformed line "):
        print(f"kraftcheck analyze: {line}", file=sys.stderr)
    caps = [*spark_notes(results), *notes]
    if not queue.get("stats", {}).get("final_phase"):
        caps.append(NO_FINAL_READ)
    return judge(results, spec, nemesis_ops, caps)


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck analyze``."""
    parser = argparse.ArgumentParser(prog="kraftcheck analyze", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", metavar="STORE_DIR", help="a run directory, its spec.json, or a store root "
                        "(then its latest run)")
    parser.add_argument("--json", action="store_true", help="print results.json to stdout")
    parser.add_argument("--no-report", action="store_true", help="do not re-render report.html")
    parser.add_argument("--engine", choices=("python", "spark"), default="python",
                        help="python (every checker) or spark (the queue and group checks as Spark jobs) "
                        "(default: python)")
    parser.add_argument("--master", default=None, metavar="URL", help="Spark master URL for --engine spark: "
                        "local[*] (the default) or spark://HOST:PORT for a standalone cluster")
    args = parser.parse_args(argv)
    if args.master and args.engine != "spark":
        parser.error("--master needs --engine spark")


    try:
        run_dir = store.resolve_run_dir(args.run)
    except FileNotFoundError as exc:
        print(f"kraftcheck analyze: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        spec = store.read_json(run_dir / store.SPEC)
    except (OSError, ValueError):
        spec = {}
        print(f"kraftcheck analyze: warning: no usable {store.SPEC} in {run_dir}; checking with defaults",
              file=sys.stderr)
    notes = []
    rebuilt = rebuild_partial_evidence(run_dir)
    if rebuilt:
        print(f"kraftcheck analyze: {rebuilt}", file=sys.stderr)
    history_path = run_dir / store.HISTORY
    problem = edn_problem(history_path) if history_path.is_file() else None
    if problem:
        print(f"kraftcheck analyze: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.engine == "spark":
        results = check_store_spark(run_dir, spec, notes, args.master)
        if results is None:  # nothing was checked, so nothing is known (the reason is printed)
            return EXIT_UNKNOWN
    elif history_path.is_file():
        history = read_history(history_path)
        for line in malformed_summary(history.malformed, prefix="malformed line "):
            print(f"kraftcheck analyze: {line}", file=sys.stderr)
        if not any(op.get("final") and op["type"] == "ok" for op in history.ops):
            notes.append(NO_FINAL_READ)
    if args.engine == "python":
        results = check_store(run_dir, spec, notes)
    store.write_json(run_dir / store.RESULTS, results)
    if not args.no_report:
        try:
            report = write_report(run_dir)
            print(f"kraftcheck: report {report}", file=sys.stderr)
        except Exception as exc:
            print(f"kraftcheck analyze: report failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True, default=str))
    for line in verdict_lines(results):
        print(f"kraftcheck: {line}", file=sys.stderr)
    print(f"kraftcheck: results {run_dir / store.RESULTS}", file=sys.stderr)
    if results.get("not_computed"):
        print(f"kraftcheck:   not computed by the {args.engine} engine: {', '.join(results['not_computed'])}",
              file=sys.stderr)
    return Verdict.of(results).exit_code
