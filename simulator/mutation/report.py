"""``kraftcheck selftest --mutants core``: run the core mutants and print the table and the summary.

    kraftcheck selftest --mutants core [--budget S] [--workers W] [--max-per-mutant S] [--only TEXT]
                        [--json FILE]

Every mutant is listed, survivors included: where (file:line), operator, original -> mutated, the outcome,
the invariant or check that caught it, the seed and the time to detect. The summary gives the detection
rate among the non-equivalent mutants: a mutant is equivalent only when 200 schedules that execute it
left trace and history unchanged (``campaign``); every other mutant that was not detected (a survivor, one
not exercised by any baseline schedule) counts against it. Then the median time to detect and the guard
table of the baseline schedules (which guards of the core fired in how many of them, never-fired first).
Exit code 0 when the rate reaches ``--target`` (default 90 %), 1 below it, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from simulator.guard_report import GuardTally, render
from simulator.guards import core_guards
from simulator.mutation.campaign import (
    DETECTED,
    EQUIVALENT,
    HANG,
    NOT_APPLICABLE,
    NOT_EXERCISED,
    NOT_RUN,
    SURVIVED,
    Campaign,
    Outcome,
    baseline_guard_table,
    core_mutants,
    run_campaign,
)

EXIT_OK, EXIT_BELOW, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        print(f"kraftcheck selftest: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kraftcheck selftest --mutants core", description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=float, default=600.0, help="seconds for the whole self-test (default 600)")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    p.add_argument("--max-per-mutant", type=float, default=60.0, help="seconds at most per mutant (default 60)")
    p.add_argument("--coverage-seeds", type=int, default=40,
                   help="seeds per cluster setting of the sequence run by the core first, for the coverage "
                        "judgement and as the evidence of equivalence (default 40)")
    p.add_argument("--only", help="only mutants whose key contains this text (e.g. replica.py)")
    p.add_argument("--target", type=float, default=90.0, help="detection rate in %% to pass (default 90)")
    p.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    for flag, value in (("--budget", args.budget), ("--workers", args.workers),
                        ("--max-per-mutant", args.max_per_mutant), ("--coverage-seeds", args.coverage_seeds)):
        if value <= 0:
            print(f"kraftcheck selftest: {flag} must be > 0, got {value}", file=sys.stderr)
            return EXIT_USAGE
    mutants = [m for m in core_mutants() if args.only is None or args.only in m.key]
    if not mutants:
        print(f"kraftcheck selftest: --only {args.only!r} matches no mutant", file=sys.stderr)
        return EXIT_USAGE
    campaign = Campaign(budget_s=args.budget, workers=args.workers, max_per_mutant_s=args.max_per_mutant,
                        coverage_seeds=args.coverage_seeds, progress=lambda line: print(line, file=sys.stderr))
    print(f"{len(mutants)} mutants of reference_impl/protocol, budget {args.budget:.0f} s on {args.workers} "
          f"processes", file=sys.stderr)
    outcomes = run_campaign(mutants, campaign)
    print(table(outcomes))
    summary_lines, rate = summary(outcomes)
    print("\n".join(summary_lines))
    print("\n".join(guard_table_lines()))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([as_dict(o) for o in outcomes], fh, indent=1)
    return EXIT_OK if rate is not None and rate >= args.target else EXIT_BELOW


def table(outcomes: list[Outcome]) -> str:
    """One line per mutant: where, operator, change, outcome, caught by, seed, time."""
    lines = [f"{'mutant':44} {'operator':17} {'outcome':15} {'caught by':10} {'seed':13} {'time':>7}  change"]
    for o in outcomes:
        m = o.mutant
        seed = f"{o.variant} {o.seed}" if o.seed is not None else ""
        time_text = f"{o.seconds:6.2f}s" if o.status not in (NOT_EXERCISED, NOT_APPLICABLE, NOT_RUN) else ""
        change = f"{_short(m.original)} -> {_short(m.mutated)}"
        line = f"{m.where:44} {m.operator:17} {o.status:15} {o.rule or '':10} {seed:13} {time_text:>7}  {change}"
        if o.status in (SURVIVED, HANG, NOT_APPLICABLE):
            line += f"  [{_short(o.detail, 90)}]"
        lines.append(line)
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> tuple[list[str], float | None]:
    """The summary lines and the detection rate in % among non-equivalent mutants (None if there is none)."""
    count = {s: sum(o.status == s for o in outcomes) for s in
             (DETECTED, HANG, SURVIVED, EQUIVALENT, NOT_EXERCISED, NOT_APPLICABLE, NOT_RUN)}
    caught = count[DETECTED] + count[HANG]
    judged = caught + count[SURVIVED] + count[NOT_EXERCISED]
    rate = 100.0 * caught / judged if judged else None
    times = sorted(o.seconds for o in outcomes if o.status == DETECTED)
    by_rule: dict[str, int] = {}
    for o in outcomes:
        if o.status == DETECTED:
            by_rule[o.rule or "?"] = by_rule.get(o.rule or "?", 0) + 1
    differing = sum(1 for o in outcomes if o.status == SURVIVED and o.differs)
    lines = [
        f"{len(outcomes)} mutants: {count[DETECTED]} detected, {count[HANG]} hang, {count[SURVIVED]} survived "
        f"({differing} with a behaviour seen to differ, {count[SURVIVED] - differing} not shown equivalent), "
        f"{count[EQUIVALENT]} equivalent (unchanged on 200 schedules that execute them), "
        f"{count[NOT_EXERCISED]} not exercised by the baseline "
        f"({100.0 * count[NOT_EXERCISED] / max(len(outcomes), 1):.1f} %), {count[NOT_APPLICABLE]} not applicable, "
        f"{count[NOT_RUN]} not run (budget spent)",
        "detection rate among non-equivalent mutants (detected + hang over detected + hang + survived + not "
        "exercised): " + (f"{rate:.1f} %" if rate is not None else "n/a"),
    ]
    if times:
        lines.append(f"time to detect: median {statistics.median(times):.2f} s, max {times[-1]:.2f} s; "
                     f"over 60 s: {sum(t > 60 for t in times)}")
    lines.append("caught by: " + ", ".join(f"{rule} {n}" for rule, n in sorted(by_rule.items(), key=lambda x: -x[1])))
    return lines, rate


def guard_table_lines(rows: int = 0) -> list[str]:
    """The guard table of the campaign's baseline schedules (times fired: schedules in which it fired)."""
    schedules, firings = baseline_guard_table()
    if not schedules:
        return []
    tally = GuardTally()
    tally.schedules = schedules
    index = {g.name: i for i, g in enumerate(core_guards())}
    for name, n in firings.items():
        if n:
            tally.fired[index[name]] = n
    return ["baseline " + line if i == 0 else line for i, line in enumerate(render(tally, quorum=True, limit=rows))]


def as_dict(o: Outcome) -> dict:
    """An outcome as JSON-ready data."""
    m = o.mutant
    return {"key": m.key, "where": m.where, "operator": m.operator, "original": m.original,
            "mutated": m.mutated, "status": o.status, "rule": o.rule, "variant": o.variant, "seed": o.seed,
            "seconds": round(o.seconds, 3), "schedules": o.schedules, "identical": o.identical,
            "differs": o.differs, "detail": o.detail}


def _short(text: str, width: int = 48) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


if __name__ == "__main__":
    sys.exit(main())
