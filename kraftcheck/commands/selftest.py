"""kraftcheck selftest: does kraftcheck find the bugs it is meant to find?

    kraftcheck selftest [--mutants core|bugs|all] [--budget S] [--backend local|docker] [--store DIR]
                        [--bugs NAME,...] [--time-limit S]

``--mutants core`` (the default) mutates the protocol core and runs every mutant against the deterministic
simulator (``simulator.mutation``, loaded by name like ``kraftcheck simulate``: the harness does not import
the reference implementation). ``--mutants bugs`` makes a real run on a real cluster for each deliberate
rule break of ``--inject-bug`` (``harness.spec.INJECTABLE_BUGS``), with the faults that expose it
(``BUG_PLANS``), and prints bug, verdict and what caught it. The historical bugs (designs Kafka replaced,
``harness.spec.HISTORICAL_BUG_REFERENCES``) are not among them: ``kraftcheck simulate --inject-bug`` checks
those (docs/historical-bugs.md). ``all`` does both. ``--budget`` is the core
part's time; each bug run is bounded by its own ``--time-limit`` (default from its plan).

Exit codes (kraftcheck --help lists them): valid when every bug is caught and the core detection rate
reaches its target, invalid otherwise; bad arguments and a harness error as for every command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from dataclasses import dataclass
from typing import Any

from harness.spec import HISTORICAL_BUG_REFERENCES, INJECTABLE_BUGS, SpecError, build_spec
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_INVALID, EXIT_USAGE, EXIT_VALID, Verdict
from kraftcheck import runner

CORE_MODULE = "simulator.mutation.report"
HELP = """Does kraftcheck find the bugs it is meant to find?

--mutants core (the default) mutates the protocol core (one negated or removed condition, dropped early
return or flipped comparison at a time) and runs each mutant against the deterministic simulator within
--budget seconds; the table shows every mutant, detected or not, by which invariant and how fast.
--mutants bugs makes one real run per --inject-bug with faults that expose it and prints bug, verdict and
what caught it. --mutants all does both. Options of the core part (--workers, --max-per-mutant, --only,
--json, --target) are passed through.

Exit codes (kraftcheck --help lists them): valid when every bug is caught and the core detection rate is at
its target, invalid otherwise; bad arguments and a harness error as for every command."""


@dataclass(frozen=True)
class BugPlan:
    """The run that exposes one injected bug: its faults, variant and how long, and what should catch it."""

    nemesis: tuple[str, ...]
    expected: str
    time_limit_s: float = 60.0
    variant: str = "kip966"
    nemesis_interval_s: float = 4.0
    options: tuple[tuple[str, object], ...] = ()  # further spec keys of the run (the workload's mode)


BUG_PLANS: dict[str, BugPlan] = {
    # a leader killed before its followers fetched loses what it acknowledged
    "ack-before-replication": BugPlan(("kill",), "I6 (acknowledged writes lost), I1"),
    "hwm-ignores-isr": BugPlan(("kill",), "I6 / I7 (acknowledged or read writes lost), I1"),
    # a consumer reads past the HWM; a leader change truncates what it read
    "fetch-beyond-hwm": BugPlan(("kill", "partition"), "I15 / I7 (reads above the HWM, lost reads)"),
    # acks=all accepted with the ISR below MinISR once followers drop out
    "ignore-min-isr": BugPlan(("partition", "kill"), "I14 (acknowledged with ISR below MinISR)"),
    # a crash after a clean restart must make the broker unclean; with the marker kept it re-registers
    # claiming the earlier clean stop (crash-lossy's clean-restart draws make that history)
    "skip-unclean-exclusion": BugPlan(("crash-lossy",), "I13 (a crash registered as a clean shutdown, K4)",
                                      time_limit_s=90.0),
    # a controller that loses power forgets records the brokers already acted on
    "metadata-no-fsync": BugPlan(("crash-lossy",), "I5 / I11 (metadata forgotten after a controller crash)",
                                 time_limit_s=90.0),
    # an out-of-sync replica elected although unclean election is off
    # a stranded follower (out of the ISR, every other replica down) elected though unclean election is off
    "unclean-without-opt-in": BugPlan(("strand",), "I1 / I6 (data lost by an unclean election)",
                                      time_limit_s=90.0),
    # a zombie consumer (stalled past its session) commits from its old generation and is accepted; more
    # membership churn (assign_ratio) only keeps the group rebalancing, with fewer commits to regress from
    "offsets-commit-stale-generation": BugPlan(("kill",), "groups: poll-below-commit / commit-regression; I23",
                                               time_limit_s=120.0, nemesis_interval_s=10.0,
                                               options=(("sub_via", "subscribe"),)),
    # every member of a generation handed the leader's partitions
    "group-double-assign": BugPlan(("kill",), "groups: double-assignment; I24", time_limit_s=60.0,
                                   options=(("sub_via", "subscribe"),)),
    # committed transactions whose markers were never written stay invisible at read_committed
    "txn-markers-not-written": BugPlan(("kill",), "acked-unreadable (txn-marker-missing: committed, never "
                                       "readable at read_committed); I25", options=(("txn", True),)),
    # read_committed consumers handed the records of aborted transactions
    "aborted-read-committed": BugPlan(("kill",), "G1a (aborted read)", options=(("txn", True),)),
    # a zombie producer's writes after its fencing land, and later commit with its successor's markers
    "fenced-producer-accepted": BugPlan(("kill",), "G1a / acked-unreadable (a fenced producer's writes "
                                        "accepted); I26", options=(("txn", True),)),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (the core part's own options are passed through to it)."""
    p = argparse.ArgumentParser(prog="kraftcheck selftest", description=HELP,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mutants", choices=("core", "bugs", "all"), default="core",
                   help="core: simulator against protocol-core mutants; bugs: real runs per --inject-bug")
    p.add_argument("--budget", type=float, default=600.0, help="seconds for the core mutants (default 600)")
    p.add_argument("--bugs", help="comma-separated --inject-bug names (default all)")
    p.add_argument("--backend", choices=("local", "docker"), default="local", help="backend of the bug runs")
    p.add_argument("--time-limit", type=float, help="seconds of workload per bug run (default: the plan's)")
    p.add_argument("--store", metavar="DIR", help="store root of the bug runs")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point (``kraftcheck selftest``); see the module docstring."""
    args, core_args = build_parser().parse_known_args(argv)
    if args.budget <= 0:
        print(f"kraftcheck selftest: --budget must be > 0, got {args.budget}", file=sys.stderr)
        return EXIT_USAGE
    if args.time_limit is not None and args.time_limit <= 0:
        print(f"kraftcheck selftest: --time-limit must be > 0, got {args.time_limit}", file=sys.stderr)
        return EXIT_USAGE
    names = [n for n in INJECTABLE_BUGS if n not in HISTORICAL_BUG_REFERENCES]
    if args.bugs:
        names = [n.strip() for n in args.bugs.split(",") if n.strip()]
        unknown = [n for n in names if n not in BUG_PLANS]
        if unknown:
            print(f"kraftcheck selftest: --bugs: unknown {unknown}; known: {', '.join(BUG_PLANS)}",
                  file=sys.stderr)
            return EXIT_USAGE
    if core_args and args.mutants == "bugs":
        print(f"kraftcheck selftest: unrecognized arguments: {' '.join(core_args)}", file=sys.stderr)
        return EXIT_USAGE
    codes = []
    if args.mutants in ("core", "all"):
        core = importlib.import_module(CORE_MODULE)
        codes.append(core.main(["--budget", str(args.budget), *core_args]))
    if args.mutants in ("bugs", "all"):
        codes.append(run_bugs(names, args.backend, args.time_limit, args.store))
    return max(codes)


@dataclass
class BugOutcome:
    """One bug's run: its verdict, the reasons the verdict gives (what caught it) and where it is stored."""

    bug: str
    verdict: str
    caught_by: list[str]
    run_dir: str
    seconds: float

    @property
    def caught(self) -> bool:
        """An injected bug is caught when the run is invalid."""
        return self.verdict == "invalid"


def run_bug(bug: str, backend: str = "local", time_limit_s: float | None = None, store_root: Any = None,
            seed: int | None = None) -> BugOutcome:
    """One real run with ``bug`` injected and the faults of its plan."""
    plan = BUG_PLANS[bug]
    spec = build_spec({"inject_bug": bug, "nemesis": list(plan.nemesis), "backend": backend,
                       "variant": plan.variant, "nemesis_interval_s": plan.nemesis_interval_s,
                       "time_limit_s": time_limit_s or plan.time_limit_s, "seed": seed,
                       "test_name": f"selftest-{bug}", **dict(plan.options)})
    started = time.monotonic()
    outcome = runner.execute(spec, store_root, progress=False, report=False)
    verdict = Verdict.of(outcome.results)
    return BugOutcome(bug, outcome.verdict, list(verdict.reasons) or ([outcome.error] if outcome.error else []),
                      str(outcome.run_dir), time.monotonic() - started)


def run_bugs(names: list[str], backend: str, time_limit_s: float | None, store_root: Any) -> int:
    """Run every named bug, print the table; ``EXIT_VALID`` when all are caught, ``EXIT_INVALID`` otherwise."""
    outcomes = []
    print(f"{'bug':24} {'faults':18} {'verdict':8} caught by")
    for name in names:
        try:
            outcome = run_bug(name, backend, time_limit_s, store_root)
        except SpecError as exc:
            print(f"kraftcheck selftest: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except runner.HarnessError as exc:
            print(f"kraftcheck selftest: {name}: {exc}", file=sys.stderr)
            return EXIT_HARNESS_ERROR
        outcomes.append(outcome)
        faults = ",".join(BUG_PLANS[name].nemesis)
        reasons = "; ".join(outcome.caught_by)[:140]
        print(f"{name:24} {faults:18} {outcome.verdict:8} {reasons}  ({outcome.seconds:.0f} s, "
              f"{outcome.run_dir})", flush=True)
    caught = sum(o.caught for o in outcomes)
    print(f"{caught} of {len(outcomes)} injected bugs caught")
    return EXIT_VALID if caught == len(outcomes) else EXIT_INVALID
