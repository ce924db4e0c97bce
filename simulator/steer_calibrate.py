"""The calibration of the steering targets (``python -m simulator.steer_calibrate [--schedules N]``).

Runs the default schedules (half of them steered, as a search runs them: a path only the steered episodes
reach, such as a consumer's ListOffsets, is then known by its request kinds too) of several cluster
settings (both variants, both reassignment modes, a quorum of three controllers) with the guards counted (``guard_count``) and writes ``guard_targets.json``: for each
guard that fired, how often and under which request kinds; for each function that holds guards, the kinds
under which it ran. ``steer`` aims at the guards through these kinds. The file is part of the source, so a
seed's schedule depends only on the code and the seed; rerun the calibration after changing the core (a
test fails when a guard of the table names a function the file has never seen run and that function does
run in a short search).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from simulator.guard_count import GuardCounter, counting
from simulator.guards import core_guards
from simulator.options import SimOptions
from simulator.runner import run_schedule
from simulator.schedule import generate
from simulator.steer import TARGETS_FILE

CALIBRATION_SETTINGS = (
    ("kip966", SimOptions(variant="kip966")),
    ("v3.5", SimOptions(variant="v3.5")),
    ("kip966+incremental", SimOptions(variant="kip966", reassignment_mode="incremental", brokers=4)),
    ("v3.5+incremental", SimOptions(variant="v3.5", reassignment_mode="incremental", brokers=4)),
    ("kip966+quorum", SimOptions(variant="kip966", controllers=3)),
)


def calibrate(schedules_per_setting: int) -> dict[str, Any]:
    """Run the schedules of every calibration setting with the guards counted; the targets file."""
    counter = GuardCounter(core_guards())
    with counting(counter):
        for _, options in CALIBRATION_SETTINGS:
            for seed in range(schedules_per_setting):
                run_schedule(generate(seed, options))
    total = schedules_per_setting * len(CALIBRATION_SETTINGS)
    return {
        "about": "simulator/steer.py: the request kinds each guard of the core is aimed at through; "
                 "regenerate with python -m simulator.steer_calibrate",
        "schedules": total,
        "settings": [name for name, _ in CALIBRATION_SETTINGS],
        "guards": {g.name: {"fired": counter.fired[i], "kinds": sorted(counter.kinds[i])}
                   for i, g in enumerate(counter.guards) if counter.fired[i]},
        "functions": {name: sorted(kinds) for name, kinds in sorted(counter.calls.items())},
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m simulator.steer_calibrate [--schedules N]``: rewrite ``guard_targets.json``."""
    p = argparse.ArgumentParser(prog="python -m simulator.steer_calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--schedules", type=int, default=60, help="schedules per setting (default 60)")
    args = p.parse_args(argv)
    data = calibrate(args.schedules)
    with open(TARGETS_FILE, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"{TARGETS_FILE}: {len(data['guards'])} guards fired in {data['schedules']} schedules, "
          f"{len(data['functions'])} guarded functions ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
