"""Benchmark: the deterministic simulator's speed (simulated steps per second, schedules per minute) and how
soon it finds Last Replica Standing.

Prints figures, asserts nothing. ``python bench/bench_simulate.py [--schedules 600] [--workers 1,2]
[--variants v3.5,kip966] [--steer 0,0.5] [--coverage]``. For each variant, worker count and steering share
it runs the same seeds with the fault kinds all on and reports wall time, schedules per minute, simulated
steps per second, simulated seconds per wall second and the simulated time per schedule (``--coverage``:
also with the guards counted, what ``simulate --coverage`` costs); schedules that break a rule stop at the violation, so the v3.5 line (where Last Replica
Standing is found) runs fewer steps per schedule than the kip966 one. Then, per variant, the seeds until
the first violation, the time to find it and to shrink it. The machine is shared: the load average is
printed with each line.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulator import SimOptions, search, shrink  # noqa: E402
from simulator.runner import SearchStats, run_seeds  # noqa: E402


def throughput(variant: str, schedules: int, workers: int, steer: float = SimOptions.steer,
               coverage: bool = False) -> None:
    """Run ``schedules`` seeds (violations included) and print the rates."""
    options = SimOptions(variant=variant, steer=steer)
    started = time.monotonic()
    steps = sim_ms = 0
    for result in run_seeds(0, schedules, options, workers=workers, count_guards=coverage):
        steps += result.steps
        sim_ms += result.sim_ms
    took = time.monotonic() - started
    sim = f"  simulated {sim_ms / 1000 / max(schedules, 1):4.1f} s/schedule, {sim_ms / 1000 / took:6.1f} sim s/wall s"
    print(f"{variant:<7} workers {workers} steer {steer:g}{' coverage' if coverage else ''}  {schedules:5d} "
          f"schedules in {took:6.1f} s  {schedules / took * 60:7.0f} schedules/min  {steps / took:8.0f} steps/s{sim}  "
          f"load {os.getloadavg()[0]:.2f}")


def time_to_find(variant: str, limit: int) -> None:
    """Seeds and seconds until the first violation, then the shrinking of it."""
    stats = SearchStats()
    found = search(0, limit, SimOptions(variant=variant), stats=stats)
    if found is None or found.finding is None:
        print(f"{variant:<7} no violation in {stats.schedules} schedules ({stats.wall_s:.1f} s)")
        return
    started = time.monotonic()
    small = shrink(found)
    took = time.monotonic() - started
    print(f"{variant:<7} first violation: seed {found.seed} ({found.finding.rule}) after {stats.schedules} "
          f"schedules, {stats.wall_s:.2f} s; shrunk {len(found.schedule.events)} -> "
          f"{len(small.result.schedule.events)} events in {small.runs} runs, {took:.1f} s")


def main() -> int:
    """Parse arguments, print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--schedules", type=int, default=600)
    p.add_argument("--workers", default="1,2")
    p.add_argument("--variants", default="v3.5,kip966")
    p.add_argument("--steer", default=f"{SimOptions.steer:g}", help="steering shares to compare (e.g. 0,0.5)")
    p.add_argument("--coverage", action="store_true", help="also measure with the guards counted")
    args = p.parse_args()
    variants = [v.strip() for v in args.variants.split(",")]
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    for variant in variants:
        for workers in (int(w) for w in args.workers.split(",")):
            for steer in (float(x) for x in args.steer.split(",")):
                throughput(variant, args.schedules, workers, steer)
            if args.coverage:
                throughput(variant, args.schedules, workers, coverage=True)
    for variant in variants:
        time_to_find(variant, args.schedules)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
