"""kraftcheck suite: scenarios and randomized runs over the product of variants, backends and fault
mixes, each run stored as usual, ending with a summary table and an exit code.

    kraftcheck suite NAME | --all  [--variants v3.5,kip966] [--backends local,docker]
                     [--nemesis MIXES] [--test-count N] [--time-limit S] [--seed N] [--store DIR]
                     [--dry-run]
    kraftcheck suite --list

NAME is a named suite (smoke, seeds, full, systems, modes), a scenario (see kraftcheck scenario --list) or the
queue workload; --all is full. MIXES are fault mixes for the randomized runs: families joined
by "+", mixes separated by ",", e.g. none,kill,partition+kill,disk. The suite's store root is
--store DIR (a new directory, or one without a suite.json), else <store>/suites/<NAME>-<UTC>;
suite.json there lists every cell and its outcome.

Exit codes (kraftcheck --help lists them): valid when every cell is as expected (a known issue the variant
documents, such as Last Replica Standing on v3.5, is an expected failure), invalid when a cell is invalid
or failing where it was expected valid, a harness error when one is, unknown otherwise (a cell unknown;
bad arguments share the code).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Any

from harness import store
from harness.faults import FAULT_FAMILIES, requested_families
from harness.spec import BACKENDS, VARIANTS
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_OK, EXIT_USAGE
from kraftcheck import scenarios
from kraftcheck.commands.run import docker_problem
from kraftcheck.suite import plan
from kraftcheck.suite.execute import SUITE_JSON, SuiteRun
from kraftcheck.suite.outcome import render_table

# Need iptables / LD_PRELOAD setup / FUSE on the local backend (the family table's ``local_root``).
ROOT_FAMILIES = frozenset(name for name, row in FAULT_FAMILIES.items() if row.local_root)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="kraftcheck suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="smoke | seeds | full | systems | modes | a scenario | queue")
    p.add_argument("--all", action="store_true", help="every scenario and workload (the full suite)")
    p.add_argument("--list", action="store_true", help="list the named suites and exit")
    p.add_argument("--variants", metavar="V,...", help=f"only these variants ({', '.join(VARIANTS)})")
    p.add_argument("--backends", metavar="B,...", help=f"run on these backends ({', '.join(BACKENDS)})")
    p.add_argument("--nemesis", metavar="MIXES", help="fault mixes of randomized runs, e.g. none,kill+partition")
    p.add_argument("--test-count", type=int, default=1, metavar="N", help="runs per cell (default 1)")
    p.add_argument("--time-limit", type=float, metavar="S", help="main phase of randomized runs, seconds")
    p.add_argument("--seed", type=int, help="suite seed; each cell's seed is drawn from it (default: random)")
    p.add_argument("--store", metavar="DIR", help="the suite's store root (default <store>/suites/NAME-UTC)")
    p.add_argument("--dry-run", action="store_true", help="print the cells and exit without running")
    return p


def suite_lines() -> list[str]:
    """``--list``: each named suite with its cells under default options."""
    lines = []
    for name, entries in plan.named_suites().items():
        cells = plan.expand(entries, require_installed=False)  # listing builds nothing
        lines.append(f"{name}: {len(cells)} cells")
        lines.extend(f"  {c.cell_id}  (expected {c.expected})" for c in cells)
    return lines


def environment_problem(cells: list[plan.Cell]) -> str | None:
    """Why this machine cannot run these cells (None when it can)."""
    if os.geteuid() != 0:
        needs = sorted({c.cell_id for c in cells if c.backend == "local" and (
            (c.kind == "scenario" and scenarios.get(c.name).needs_root_locally)
            or set(requested_families(c.nemesis)) & ROOT_FAMILIES)})
        if needs:
            return (f"{len(needs)} local cells need root (iptables, FUSE), e.g. {needs[0]}; run as root or use "
                    "--backends docker")
    if any(c.backend == "docker" for c in cells):
        problem = docker_problem()
        if problem:
            return problem.replace("--backend local", "--backends local")
    return None


def suite_root(name: str, explicit: str | None) -> Path:
    """The suite's store root; a ``--store`` that already holds a suite is refused (nothing is mixed)."""
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if (root / SUITE_JSON).exists():
            raise plan.PlanError(f"--store: {root} already holds a suite ({SUITE_JSON}); choose a new directory")
        return root
    return store.store_root(None) / "suites" / f"{name}-{store.utc_stamp()}"


def options_doc(args: argparse.Namespace) -> dict[str, Any]:
    """The options as given (suite.json's ``options``)."""
    return {"variants": args.variants, "backends": args.backends, "nemesis": args.nemesis,
            "test_count": args.test_count, "time_limit_s": args.time_limit}


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck suite``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(suite_lines()))
        return EXIT_OK
    try:
        if args.all and args.name:
            raise plan.PlanError("give a suite name or --all, not both")
        if not args.all and not args.name:
            raise plan.PlanError(f"a suite name is required ({', '.join(plan.named_suites())}, a scenario, "
                                 "queue) or --all")
        name = "full" if args.all else args.name
        cells = plan.expand(plan.entries_for(name),
                            variants=plan.parse_list("--variants", args.variants, VARIANTS),
                            backends=plan.parse_list("--backends", args.backends, BACKENDS),
                            mixes=plan.parse_mixes(args.nemesis),
                            test_count=args.test_count, time_limit_s=args.time_limit)
        if args.seed is not None and args.seed < 0:
            raise plan.PlanError(f"--seed: must be >= 0, got {args.seed}")
        root = None if args.dry_run else suite_root(name, args.store)
    except plan.PlanError as exc:
        parser.print_usage(sys.stderr)
        print(f"kraftcheck suite: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.dry_run:
        rows = [["#", "cell", "expected", "accepts"]] + [
            [str(i), c.cell_id, c.expected, ", ".join(c.accepted)] for i, c in enumerate(cells, start=1)]
        print(render_table(rows))
        return EXIT_OK
    problem = environment_problem(cells)
    if problem:
        print(f"kraftcheck suite: {problem}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"kraftcheck suite {name}: {len(cells)} cells, seed {seed}, store {root}", flush=True)
    return SuiteRun(name, cells, root, seed, ["kraftcheck", "suite", *argv], options_doc(args), sys.stdout).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
