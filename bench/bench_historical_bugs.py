"""Benchmark: how soon the simulator finds each historical bug, from ten starting seeds, and that the same
searches without the switch are clean.

Prints figures, asserts nothing. ``python bench/bench_historical_bugs.py [--starts 10] [--workers 2]
[--time-limit 60] [--clean-schedules N] [--bugs NAME,...]``. For every switch of
``reference_impl.protocol.historical_bugs`` (the designs Kafka replaced, docs/historical-bugs.md), and for
Last Replica Standing (``--variant v3.5``, no switch), and every
starting seed ``1000 * k`` (k = 0 .. starts-1) it runs what ``kraftcheck simulate --inject-bug NAME
--variant kip966 --workers W --time-limit T --seed S`` runs, up to its first violation (before shrinking),
and prints the seed that broke a rule, which rule, how many schedules and how long it took, or ``MISSED``
when the time ran out first. Then the same searches without a switch (``--time-limit`` each, or
``--clean-schedules`` schedules each when given) must break no rule: a line per start, ``CLEAN`` or the rule that broke. A summary line per
switch gives found/starts, the median and the longest time. The machine is shared: the load average is
printed with each line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from reference_impl.protocol.historical_bugs import HISTORICAL_BUGS  # noqa: E402
from simulator import SimOptions  # noqa: E402
from simulator.runner import SearchStats, search  # noqa: E402

LAST_REPLICA_STANDING = "last-replica-standing"  # no switch: the v3.5 variant, without ELR


def hunt(bug: str | None, start: int, workers: int, time_limit: float | None,
         count: int | None) -> tuple[object, SearchStats]:
    """One search from ``start`` (with ``bug`` switched on, or none); its first failing result or None."""
    stats = SearchStats()
    options = (SimOptions(variant="v3.5") if bug == LAST_REPLICA_STANDING
               else SimOptions(variant="kip966", inject_bug=bug))
    found = search(start, count, options, workers=workers, time_limit_s=time_limit, stats=stats)
    return found, stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--starts", type=int, default=10, help="starting seeds per switch (1000*k; default 10)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per search (default 60)")
    p.add_argument("--clean-schedules", type=int,
                   help="schedules of each search without a switch (default: --time-limit seconds of them)")
    p.add_argument("--bugs", help="comma-separated switches (default all)")
    args = p.parse_args(argv)
    bugs = args.bugs.split(",") if args.bugs else [*sorted(HISTORICAL_BUGS), LAST_REPLICA_STANDING]
    starts = [1000 * k for k in range(args.starts)]
    print(f"bench_historical_bugs: kip966, {args.workers} workers, {args.time_limit:g} s per search, "
          f"starts {starts[0]}..{starts[-1]}", flush=True)
    summary = []
    for bug in bugs:
        times = []
        for start in starts:
            found, stats = hunt(bug, start, args.workers, args.time_limit, None)
            load = os.getloadavg()[0]
            if found is None:
                print(f"{bug:<34} --seed {start:<6} MISSED after {stats.schedules} schedules, "
                      f"{stats.wall_s:5.1f} s  load {load:.2f}", flush=True)
                continue
            times.append(stats.wall_s)
            print(f"{bug:<34} --seed {start:<6} seed {found.seed:<6} {found.finding.rule:<10} "
                  f"{stats.schedules:4d} schedules {stats.wall_s:5.1f} s  load {load:.2f}", flush=True)
        summary.append((bug, len(times), times))
    for start in starts:
        began = time.monotonic()
        limit = None if args.clean_schedules else args.time_limit
        found, stats = hunt(None, start, args.workers, limit, args.clean_schedules)
        verdict = "CLEAN" if found is None else f"VIOLATION seed {found.seed} {found.finding.rule}"
        print(f"{'(no switch)':<34} --seed {start:<6} {verdict} in {stats.schedules} schedules, "
              f"{time.monotonic() - began:5.1f} s  load {os.getloadavg()[0]:.2f}", flush=True)
    for bug, found, times in summary:
        spread = (f"median {statistics.median(times):.1f} s, longest {max(times):.1f} s" if times
                  else "never found")
        print(f"summary {bug:<34} found {found}/{len(starts)}  {spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
