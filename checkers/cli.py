"""``kraftcheck check``: check any history file of the schema (DESIGN.md section 2).

``kraftcheck check --history FILE [--trace FILE] [--spec spec.json] [--profile auto|strict|k=s,...]
[--json] [--no-linear]``. Exit codes: 0 valid, 1 invalid, 2 unknown, 255 harness error (unreadable
file, bad option). Malformed lines are reported with their line numbers; the rest is still checked.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT = {True: 0, False: 1, "unknown": 2}
EXIT_HARNESS_ERROR = 255


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kraftcheck check", description="Check a history (and trace) file.")
    p.add_argument("--history", required=True, help="history.jsonl")
    p.add_argument("--trace", help="trace.jsonl (protocol invariants need it)")
    p.add_argument("--spec", help="spec.json of the run (decides the guarantee profile)")
    p.add_argument("--profile", default=None,
                   help="auto (default: from the spec), strict, or kind=status,... (forbidden/allowed/...)")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--no-linear", action="store_true", help="skip the linearizability engine")
    p.add_argument("--linear-time-limit", type=float, default=60.0, help="seconds for the engine (default 60)")
    p.add_argument("--engine", choices=("python", "spark"), default="python",
                   help="spark: the queue checks as Spark jobs (spark_analysis.engine; histories too big for RAM)")
    p.add_argument("--master", default=None, help="Spark master URL with --engine spark (default local[*])")
    return p


def render(results: dict[str, Any]) -> str:
    """A short human-readable summary of check_run's results."""
    lines = [f"verdict: {results['valid']}"]
    prof = results.get("profile") or {}
    if prof.get("statuses"):
        lines.append(f"profile: loss {prof['statuses'].get('lost-write')} ({prof['reasons'].get('lost-write')}); "
                     f"inputs {json.dumps(prof.get('inputs'), default=str)}")
    for m in results.get("malformed", []):
        lines.append(f"malformed: {m['file']}:{m['line']}: {m['reason']}")
    for sentence in results.get("not_checked", []):
        lines.append(f"not checked: {sentence}")
    for name, res in results["checkers"].items():
        lines.append(f"[{name}] valid={res.get('valid')}" + (f" error={res['error']}" if res.get("error") else ""))
        if name == "queue":
            for kind, info in res.get("anomalies", {}).items():
                ex = json.dumps(info["examples"][:2], default=str)
                lines.append(f"  {kind}: {info['count']} ({info['status']}: {info['reason']}) e.g. {ex}")
        elif name == "invariants":
            for inv, r in res.get("invariants", {}).items():
                detail = r.get("reason") or (f"{len(r.get('violations', []))} violation(s)" if r.get("violations") else "")
                lines.append(f"  {inv}: {r['valid']} {detail}")
        elif res.get("reason"):
            lines.append(f"  {res['reason']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point called by ``harness.cli``."""
    args = _parser().parse_args(argv)
    try:
        spec = {}
        if args.spec:
            with open(args.spec, encoding="utf-8") as fh:
                spec = json.load(fh)
        if args.engine == "spark":
            from spark_analysis.engine import check_run_spark
            from spark_analysis.errors import SparkAnalysisError
            try:
                results = check_run_spark(spec, args.history, profile=args.profile, master=args.master)
            except SparkAnalysisError as exc:  # no Java, bad master URL, ...: a harness error, said plainly
                print(f"kraftcheck check: {exc}", file=sys.stderr)
                return EXIT_HARNESS_ERROR
        else:
            from checkers.analysis import check_run
            options = {"linear": not args.no_linear, "linear_time_limit_s": args.linear_time_limit}
            results = check_run(spec, args.history, args.trace, profile=args.profile, options=options)
    except (OSError, ValueError) as exc:
        print(f"kraftcheck check: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    try:
        if args.json:
            json.dump(results, sys.stdout, default=str, indent=1)
            sys.stdout.write("\n")
        else:
            print(render(results))
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head: the verdict still decides the exit code
        sys.stderr.close()
    for m in results.get("malformed", []):
        print(f"kraftcheck check: malformed line {m['file']}:{m['line']}: {m['reason']}", file=sys.stderr)
    return EXIT[results["valid"]]


if __name__ == "__main__":
    sys.exit(main())
