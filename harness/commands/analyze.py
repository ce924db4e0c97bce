"""``kraftcheck analyze STORE_DIR``: re-check a stored run with today's checkers (also a partial one).

A partial store (the harness was killed) has ``spec.json`` and a streamed ``history.jsonl`` whose last
line may be torn; torn and malformed lines are reported and the rest is checked. Without a completed
final read nothing proves that acknowledged writes survived, so such a run is at best ``unknown``.
Writes ``results.json`` and ``report.html`` into the run directory; exit codes as for runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def rebuild_partial_evidence(run_dir: Path) -> str | None:
    """A killed harness never merged the node traces nor copied the logs; do it now if the node
    directories are still there (``kraftcheck clean`` removes them) and ``clock.json`` says how to
    rebase the traces. Returns what was done, or None."""
    from harness import store
    from harness.cluster import read_trace_file, write_merged_trace

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


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck analyze``."""
    parser = argparse.ArgumentParser(prog="kraftcheck analyze", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", metavar="STORE_DIR", help="a run directory, its spec.json, or a store root "
                        "(then its latest run)")
    parser.add_argument("--json", action="store_true", help="print results.json to stdout")
    parser.add_argument("--no-report", action="store_true", help="do not re-render report.html")
    args = parser.parse_args(argv)

    from harness import store
    from harness.history import read_history
    from harness.runner import check_store, checker_lines, exit_code_for, verdict_word

    try:
        run_dir = store.resolve_run_dir(args.run)
    except FileNotFoundError as exc:
        print(f"kraftcheck analyze: {exc}", file=sys.stderr)
        return 2
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
    if history_path.is_file():
        history = read_history(history_path)
        for bad in history.malformed[:10]:
            print(f"kraftcheck analyze: malformed line {bad}", file=sys.stderr)
        if not any(op.get("final") and op["type"] == "ok" for op in history.ops):
            notes.append("no completed final read in the history (partial run?): acknowledged writes "
                         "cannot be confirmed")
    results = check_store(run_dir, spec, notes)
    store.write_json(run_dir / store.RESULTS, results)
    if not args.no_report:
        try:
            from reports.run_report import write_report

            report = write_report(run_dir)
            print(f"kraftcheck: report {report}", file=sys.stderr)
        except Exception as exc:
            print(f"kraftcheck analyze: report failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True, default=str))
    valid = results.get("valid")
    print(f"kraftcheck: verdict {verdict_word(valid)}  ({run_dir / store.RESULTS})", file=sys.stderr)
    for line in checker_lines(results):
        print(f"kraftcheck:   {line}", file=sys.stderr)
    for note in results.get("harness_notes", []):
        print(f"kraftcheck:   note: {note}", file=sys.stderr)
    return exit_code_for(valid)
