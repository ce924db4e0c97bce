"""Benchmark: how many protocol-core mutants the simulator detects, and how fast.

Prints figures, asserts nothing. ``python bench/bench_selftest.py [--budget 600] [--workers 2] [--only TEXT]``
runs the core mutation self-test (``simulator.mutation``) and prints the detection rate among the mutants
that change some behaviour, the median and maximum time to detect, and the counts per outcome and per
invariant. The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simulator.mutation import Campaign, core_mutants, run_campaign  # noqa: E402
from simulator.mutation.report import summary  # noqa: E402


def main() -> None:
    """Run the campaign and print its summary."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budget", type=float, default=600.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--only", help="only mutants whose key contains this text")
    args = p.parse_args()
    mutants = [m for m in core_mutants() if args.only is None or args.only in m.key]
    started = time.monotonic()
    outcomes = run_campaign(mutants, Campaign(budget_s=args.budget, workers=args.workers))
    wall = time.monotonic() - started
    lines, _ = summary(outcomes)
    load = os.getloadavg()[0]
    print(f"{len(mutants)} mutants, budget {args.budget:.0f} s, {args.workers} workers, wall {wall:.0f} s, "
          f"load average {load:.1f}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
