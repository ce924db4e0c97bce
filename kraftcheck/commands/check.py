"""kraftcheck check: check any history file of kraftcheck's schema, with its trace and spec if there are any.

The verdict is decided as for runs (with a spec that requests faults, fault
coverage counts too), and so is the exit code (kraftcheck --help lists them); unusable input (a missing
or unreadable file, a spec with a wrong value, a history without one usable line; the message names the
flag and the file) is a bad argument, and a check that could not run a harness error. Malformed lines are reported with their line
numbers (the first few, then a count); the rest is still checked.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from checkers.analysis import check_run
from checkers.history.edn import sniff_format
from checkers.queue.profiles import apply_override, derive_profile
from harness.checked_spec import CheckedSpec
from harness.faults import nemesis_ops
from harness.history import first_op, malformed_summary, read_history
from harness.spec import SpecError, check_keys, load_spec
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_USAGE, Verdict, verdict_lines, word_of
from kraftcheck.commands.analyze import spark_notes
from kraftcheck.judge import judge
from spark_analysis.errors import SparkAnalysisError


class InputError(Exception):
    """An input of ``kraftcheck check`` that cannot be used; the message names the flag and the file."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kraftcheck check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", required=True, metavar="FILE", help="the history: history.jsonl of a run, or a Jepsen Kafka-workload history.edn "
                   "(recognised by its extension or content)")
    p.add_argument("--trace", metavar="FILE", help="the nodes' trace (trace.jsonl of a run); the protocol "
                   "invariants need it")
    p.add_argument("--spec", metavar="FILE", help="spec.json of the run (decides the guarantee profile; "
                   "default: a run with every option at its default)")
    p.add_argument("--profile", default=None, metavar="PROFILE",
                   help="auto (from the spec), strict, jepsen (the anomalies Jepsen's checker counts as errors), or "
                   "kind=status,... with the statuses forbidden, "
                   "allowed, known-issue, expected, unknown (default: auto)")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    p.add_argument("--no-linear", action="store_true", help="skip the linearizability engine")
    p.add_argument("--linear-time-limit", type=float, default=60.0, metavar="S",
                   help="seconds for the linearizability engine (default: 60)")
    p.add_argument("--engine", choices=("python", "spark"), default="python",
                   help="python (every checker) or spark (the queue and group checks as Spark jobs, for histories "
                   "too big for memory) (default: python)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master URL with --engine spark (default: local[*])")
    return p


def readable_file(path: str, flag: str) -> None:
    """Raise ``InputError`` unless ``path`` is a file this process can read."""
    if not os.path.exists(path):
        raise InputError(f"{flag} {path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{flag} {path}: is a directory, not a file")
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot read it ({exc.strerror or exc})") from None


def read_spec_option(path: str | None) -> dict[str, Any]:
    """The ``--spec`` file's content, each key checked against the spec's field table (``{}`` without one)."""
    if path is None:
        return {}
    readable_file(path, "--spec")
    try:
        return check_keys(load_spec(path), source=path)
    except SpecError as exc:
        raise InputError(f"--spec {exc}") from None


def check_other_options(args: argparse.Namespace) -> None:
    """Raise ``InputError`` for a ``--profile`` naming an unknown kind or status, or a time limit that is
    not a positive number."""
    try:
        apply_override(derive_profile({}, [], has_final=True), args.profile)
    except ValueError as exc:
        raise InputError(f"--profile {args.profile}: {exc}") from None
    if not (math.isfinite(args.linear_time_limit) and args.linear_time_limit > 0):
        raise InputError(f"--linear-time-limit: must be a positive number of seconds, got {args.linear_time_limit}")


def check_history_option(path: str) -> None:
    """Raise ``InputError`` unless ``--history`` names a readable history with at least one usable op.

    Reads no further than the first usable line. An EDN history is left to the caller (it is not JSONL).
    """
    readable_file(path, "--history")
    if sniff_format(path) == "jsonl" and first_op(path) is None:
        raise InputError(f"--history {path}: no line of it is a history op (an empty file, or not a "
                         "kraftcheck JSONL history)")


def render(results: dict[str, Any]) -> str:
    """A short human-readable summary of check_run's results."""
    lines = verdict_lines(results)
    prof = results.get("profile") or {}
    if prof.get("statuses"):
        lines.append(f"profile: loss {prof['statuses'].get('lost-write')} ({prof['reasons'].get('lost-write')}); "
                     f"inputs {json.dumps(prof.get('inputs'), default=str)}")
    lines.extend(malformed_summary(results.get("malformed", []), prefix="malformed: "))
    for sentence in results.get("not_checked", []):
        lines.append(f"not checked: {sentence}")
    for name, res in results["checkers"].items():
        counted = "" if res.get("counted", True) else " (not counted)"
        error = f" error={res['error']}" if res.get("error") else ""
        lines.append(f"[{name}] {word_of(res.get('valid'))}{counted}{error}")
        if name == "queue":
            for kind, info in res.get("anomalies", {}).items():
                ex = json.dumps(info["examples"][:2], default=str)
                lines.append(f"  {kind}: {info['count']} ({info['status']}: {info['reason']}) e.g. {ex}")
        elif name == "invariants":
            for inv, r in res.get("invariants", {}).items():
                detail = r.get("reason") or (f"{len(r.get('violations', []))} violation(s)" if r.get("violations") else "")
                lines.append(f"  {inv}: {word_of(r['valid'])} {detail}")
        elif res.get("reason"):
            lines.append(f"  {res['reason']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point called by ``kraftcheck.cli``."""
    args = _parser().parse_args(argv)
    try:
        check_other_options(args)
        check_history_option(args.history)
        if args.trace is not None:
            readable_file(args.trace, "--trace")
        spec = read_spec_option(args.spec)
    except InputError as exc:
        print(f"kraftcheck check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.engine == "spark":
            faults: list[dict] = []
            # pyspark comes with the optional 'spark' extra: imported only when this engine is asked for.
            from spark_analysis.engine import check_run_spark
            try:
                results = check_run_spark(spec, args.history, profile=args.profile, master=args.master,
                                          nemesis_out=faults, trace_path=args.trace)
            except SparkAnalysisError as exc:  # no Java, bad master URL, ...: a harness error, said plainly
                print(f"kraftcheck check: {exc}", file=sys.stderr)
                return EXIT_HARNESS_ERROR
            results = judge(results, spec, faults, spark_notes(results))
        else:
            options = {"linear": not args.no_linear, "linear_time_limit_s": args.linear_time_limit}
            results = check_run(spec, args.history, args.trace, profile=args.profile, options=options)
            faults = list(nemesis_ops(read_history(args.history).ops)) if CheckedSpec.of(spec).nemesis else []
            results = judge(results, spec, faults, [])
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
    for line in malformed_summary(results.get("malformed", []), prefix="malformed line "):
        print(f"kraftcheck check: {line}", file=sys.stderr)
    return Verdict.of(results).exit_code


if __name__ == "__main__":
    sys.exit(main())
