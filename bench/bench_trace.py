"""Benchmark: what the log-content trace (``log_summary`` events, I4/I16) costs.

Prints figures, asserts nothing. ``python bench/bench_trace.py [--schedules 300] [--rounds 3]
[--variant kip966]``: runs the same simulator seeds with the summaries on and off
(``SimOptions.trace_log_summaries``), alternating, and reports per setting the best wall time of the
rounds, schedules per minute, the trace events and bytes per schedule (JSON, as a trace file holds them)
and the share of them that are summaries. The simulator runs the servers' protocol core and checks every
event, so the difference is the cost of building, tracing and checking the summaries; the load average
is printed because the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulator import SimOptions  # noqa: E402
from simulator.runner import run_schedule, simulate  # noqa: E402
from simulator.schedule import generate  # noqa: E402


def trace_size(options: SimOptions, seeds: int) -> tuple[int, int, int]:
    """(events, summary events, JSON bytes) over ``seeds`` schedules with the trace kept."""
    events = summaries = size = 0
    for seed in range(seeds):
        for ev in run_schedule(generate(seed, options), keep_trace=True).trace:
            events += 1
            summaries += ev.get("kind") == "log_summary"
            size += len(json.dumps(ev)) + 1
    return events, summaries, size


def timed(options: SimOptions, schedules: int) -> float:
    """Wall seconds to run seeds 0..schedules-1."""
    started = time.monotonic()
    for seed in range(schedules):
        simulate(seed, options)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run both settings, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", default="kip966")
    args = parser.parse_args(argv)
    settings = {"on": SimOptions(variant=args.variant),
                "off": SimOptions(variant=args.variant, trace_log_summaries=False)}
    best = {name: float("inf") for name in settings}
    for _ in range(args.rounds):
        for name, options in settings.items():
            best[name] = min(best[name], timed(options, args.schedules))
    sample = min(args.schedules, 50)
    print(f"{args.variant}, {args.schedules} schedules, best of {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.2f}")
    for name, options in settings.items():
        events, summaries, size = trace_size(options, sample)
        print(f"summaries {name:<3}  {best[name]:6.2f} s  {args.schedules / best[name] * 60:6.0f} schedules/min  "
              f"{events / sample:6.0f} events/schedule ({summaries / sample:4.1f} summaries)  "
              f"{size / sample / 1024:6.1f} KiB/schedule")
    print(f"cost of the summaries: {100 * (best['on'] / best['off'] - 1):+.1f} % wall time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
