"""kraftcheck simulate: search schedules for a protocol violation, shrink it, write a replayable file.

    kraftcheck simulate [--seed N] [--schedules K] [--time-limit S] [--variant v3.5|kip966] [--steps M]
                        [--controllers C] [--no-pre-vote] [--workers W] [--faults LIST] [--out DIR]
                        [--shrink-runs R] [--coverage [--json FILE]] [--inject-bug NAME] [--idempotent]
    kraftcheck simulate --replay FILE [--trace OUT.jsonl]

Without ``--replay``: schedules of seeds N, N+1, ... (``--schedules`` of them, default 200, or as many as fit
in ``--time-limit`` seconds when only that is given) run until one breaks a rule. The first failing seed (the
smallest, whatever the number of workers) is reported with the rule, the step and the seed, shrunk, and
written to ``DIR/simulate-<variant>-seed<N>.json``, with the command that replays it. ``--replay`` runs a
schedule file again (``--trace`` also writes the nodes' trace events as JSON lines). ``--inject-bug`` runs a
design Kafka replaced (``reference_impl.protocol.historical_bugs``) in every node's core; the name is stored
with the options in the schedule file, and every finding line names it with its KIP. ``--idempotent``: the
clients write as idempotent producers (``simulator.producers``; stored in the schedule file too).

``--coverage`` counts, per guard of the protocol core (``simulator.guards``), how often its condition was
true, runs every schedule of the budget even after a finding, and prints the guard table (never-fired guards
first); ``--json FILE`` writes the table as JSON. Counting slows the search a few times; without
``--coverage`` nothing is counted.

Standard output depends only on the arguments (same seed, same output, byte for byte); timings go to
standard error. The first two lines are the seed and the command that repeats the search. Exit codes: 0 nothing found, 1 a violation, 2 bad arguments or an unreadable file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any

from reference_impl.protocol.historical_bugs import HISTORICAL_BUGS
from simulator.guard_report import GuardTally, render
from simulator.options import FAULT_KINDS, REASSIGNMENT_MODES, VARIANTS, SimOptions
from simulator.runner import Result, SearchStats, run_schedule, search
from simulator.schedule import Schedule
from simulator.shrink import shrink

# The codes of harness/verdict.py's EXIT_CODES (valid, invalid, bad arguments), repeated: the simulator may
# not import the harness (pyproject.toml's import contracts).
EXIT_NONE, EXIT_FOUND, EXIT_USAGE = 0, 1, 2
DEFAULT_SCHEDULES = 200


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code is 2 as well; keep one line
        print(f"kraftcheck simulate: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kraftcheck simulate", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--schedules", type=int, help=f"how many seeds to run (default {DEFAULT_SCHEDULES})")
    p.add_argument("--time-limit", type=float, help="stop starting new schedules after this many seconds")
    p.add_argument("--variant", choices=VARIANTS, default="v3.5", help="protocol variant (default v3.5)")
    p.add_argument("--steps", type=int, help="cap on simulated steps per schedule")
    p.add_argument("--reassignment-mode", choices=REASSIGNMENT_MODES, default="all-at-once",
                   help="how the controller carries out reassignments (default all-at-once)")
    p.add_argument("--brokers", type=int, default=3, help="brokers (default 3; replication factor 3)")
    p.add_argument("--controllers", type=int, default=1,
                   help="voters of the controller quorum (default 1; 3 or 5 run fail-overs and quorum faults)")
    p.add_argument("--no-pre-vote", action="store_true", help="elections without KIP-996's pre-vote round")
    p.add_argument("--workers", type=int, default=1, help="processes to run schedules on (default 1)")
    p.add_argument("--faults", help=f"comma-separated fault kinds to draw from (default all: {','.join(FAULT_KINDS)})")
    p.add_argument("--out", default=".", help="directory for the shrunk schedule file (default .)")
    p.add_argument("--shrink-runs", type=int, default=400,
                   help="most schedule runs spent shrinking (default 400; a count, so the result is reproducible)")
    p.add_argument("--inject-bug", choices=tuple(HISTORICAL_BUGS), metavar="NAME",
                   help="run a design Kafka replaced in every node's core (stored in the schedule file): "
                        + ", ".join(HISTORICAL_BUGS))
    p.add_argument("--idempotent", action="store_true",
                   help="the clients write as idempotent producers: producer ids, sequences, retries of the same "
                        "batch (stored in the schedule file)")
    p.add_argument("--replay", metavar="FILE", help="run a schedule file")
    p.add_argument("--trace", metavar="OUT", help="with --replay: write the trace events as JSON lines")
    p.add_argument("--steer", type=float, default=SimOptions.steer,
                   help=f"share of seeds that also get episodes aimed at guards (default {SimOptions.steer}; 0: none)")
    p.add_argument("--coverage", action="store_true",
                   help="count guard firings and print the guard table (slower; runs the whole budget)")
    p.add_argument("--json", metavar="FILE", help="with --coverage: also write the guard table as JSON")
    p.add_argument("--coverage-rows", type=int, default=40,
                   help="with --coverage: fired guards shown (default 40; never-fired ones are always all shown)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point (``kraftcheck simulate``); see the module docstring."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.replay:
        return _replay(args.replay, args.trace)
    if args.trace:
        return _usage("--trace needs --replay")
    if args.json and not args.coverage:
        return _usage("--json needs --coverage")
    for flag, value in (("--schedules", args.schedules), ("--steps", args.steps), ("--workers", args.workers),
                        ("--shrink-runs", args.shrink_runs)):
        if value is not None and value < 1:
            return _usage(f"{flag} must be >= 1, got {value}")
    if args.time_limit is not None and args.time_limit <= 0:
        return _usage(f"--time-limit must be > 0, got {args.time_limit}")
    changes: dict[str, Any] = {"variant": args.variant, "reassignment_mode": args.reassignment_mode,
                               "brokers": args.brokers, "controllers": args.controllers,
                               "pre_vote": not args.no_pre_vote, "steer": args.steer,
                               "inject_bug": args.inject_bug, "idempotent": args.idempotent}
    if args.steps is not None:
        changes["max_steps"] = args.steps
    if args.faults is not None:
        faults = tuple(f.strip() for f in args.faults.split(",") if f.strip())
        unknown = [f for f in faults if f not in FAULT_KINDS]
        if unknown:
            return _usage(f"--faults: unknown kinds {unknown}; known: {','.join(FAULT_KINDS)}")
        changes["faults"] = faults
    if not os.path.isdir(args.out):
        return _usage(f"--out: {args.out!r} is not a directory")
    try:
        options = SimOptions().with_(**changes)
    except ValueError as exc:
        return _usage(str(exc))
    count = args.schedules if args.schedules is not None else (None if args.time_limit else DEFAULT_SCHEDULES)
    # The seed and the whole command first, so a search stopped at any point can be repeated.
    print(f"kraftcheck simulate: seed {args.seed}, variant {args.variant}{_bug_note(args.inject_bug)}")
    print(f"command: {search_command(args, count)}")
    stats = SearchStats()
    tally = GuardTally() if args.coverage else None
    found = search(args.seed, count, options, workers=args.workers, time_limit_s=args.time_limit, stats=stats,
                   tally=tally)
    rate = stats.schedules / stats.wall_s * 60 if stats.wall_s else 0.0
    print(f"{stats.schedules} schedules, {stats.steps} steps in {stats.wall_s:.1f} s "
          f"({rate:.0f} schedules/min, {stats.steps / max(stats.wall_s, 1e-9):.0f} steps/s)", file=sys.stderr)
    if tally is not None:
        _coverage_report(tally, options, args.json, args.coverage_rows)
    if stats.truncated:
        print(f"{stats.truncated} schedules stopped at --steps before their final phase (history not judged)")
    if found is None:
        last = args.seed + stats.schedules - 1
        print(f"no violation in seeds {args.seed}..{last} ({args.variant})")
        return EXIT_NONE
    _report(found, "found")
    small = shrink(found, max_runs=args.shrink_runs)
    result = small.result
    assert result.finding is not None
    note = "" if small.complete else " (shrinking stopped at its budget)"
    print(f"shrunk from {len(found.schedule.events)} to {len(result.schedule.events)} events in {small.runs} "
          f"runs{note}; it breaks {result.finding.rule} at step {result.finding.step}")
    path = os.path.join(args.out, f"simulate-{args.variant}-seed{found.seed}.json")
    schedule = Schedule(result.schedule.seed, result.schedule.options, result.schedule.events,
                        result.finding.to_dict())
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(schedule.to_json())
    print(f"schedule written to {path}")
    print(f"replay: kraftcheck simulate --replay {path}")
    return EXIT_FOUND


def _coverage_report(tally: GuardTally, options: SimOptions, json_path: str | None, rows: int) -> None:
    quorum = options.controllers > 1
    for line in render(tally, quorum, limit=rows):
        print(line)
    if tally.failing:
        print(f"{tally.failing} of {tally.schedules} schedules broke a rule (the first is reported below)")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(tally.to_json(quorum), fh, indent=1, sort_keys=True)
            fh.write("\n")
        print(f"guard table written to {json_path}")


def search_command(args: argparse.Namespace, count: int | None) -> str:
    """The command that repeats this search: every option that decides which schedules run, spelled out."""
    argv = ["kraftcheck", "simulate", "--seed", str(args.seed), "--variant", args.variant,
            "--reassignment-mode", args.reassignment_mode, "--brokers", str(args.brokers)]
    if args.controllers != 1:
        argv += ["--controllers", str(args.controllers)]
    if args.no_pre_vote:
        argv += ["--no-pre-vote"]
    if args.inject_bug is not None:
        argv += ["--inject-bug", args.inject_bug]
    if args.idempotent:
        argv += ["--idempotent"]
    if count is not None:
        argv += ["--schedules", str(count)]
    if args.time_limit is not None:
        argv += ["--time-limit", f"{args.time_limit:g}"]
    for flag, value in (("--faults", args.faults), ("--steps", args.steps)):
        if value is not None:
            argv += [flag, str(value)]
    if args.workers != 1:
        argv += ["--workers", str(args.workers)]
    if args.steer != SimOptions.steer:
        argv += ["--steer", f"{args.steer:g}"]
    if args.coverage:
        argv += ["--coverage"]
    return shlex.join(argv)


def _report(result: Result, verb: str) -> None:
    f = result.finding
    assert f is not None
    print(f"{verb}: {f.rule} broken at step {f.step} (simulated {f.time_ms} ms), seed {result.seed}, "
          f"variant {result.schedule.options.variant}{_bug_note(result.schedule.options.inject_bug)}")
    print(f"  {f.detail}")
    for ev in f.events[:6]:
        print(f"  event: {json.dumps(ev, sort_keys=True)}")


def _bug_note(name: str | None) -> str:
    """", injected bug NAME (KIP...: what it does)" for a run with a historical bug switched on, else ""."""
    if name is None:
        return ""
    bug = HISTORICAL_BUGS[name]
    return f", injected bug {name} ({bug.reference}: {bug.summary})"


def _replay(path: str, trace_out: str | None) -> int:
    try:
        with open(path, encoding="utf-8") as fh:
            schedule = Schedule.from_json(fh.read())
    except OSError as exc:
        return _usage(f"--replay: cannot read {path}: {exc.strerror}")
    except ValueError as exc:
        return _usage(f"--replay: {path}: {exc}")
    result = run_schedule(schedule, keep_trace=trace_out is not None)
    if trace_out is not None and result.trace is not None:
        with open(trace_out, "w", encoding="utf-8") as fh:
            for ev in result.trace:
                fh.write(json.dumps(ev, sort_keys=True) + "\n")
    if result.finding is None:
        print(f"no violation replaying {path} ({result.steps} steps)")
        return EXIT_NONE
    _report(result, "replayed")
    return EXIT_FOUND


def _usage(message: str) -> int:
    print(f"kraftcheck simulate: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
