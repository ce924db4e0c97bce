"""Benchmark: how long a Last Replica Standing reproduction takes (target in docs/benchmarks.md: < 60 s).

Prints figures, asserts nothing. ``python bench/bench_scenario_lrs.py [--backend local] [--variants
v3.5,kip966] [--repeat 1] [--seed 1]``. Each run is a complete ``kraftcheck scenario last-replica-standing``
(cluster up, the scripted steps, final phase, teardown, checkers, report) into a temporary store; the
wall time of the whole run and of each step (from the run's own step timeline) are printed with whether
the variant's expectation held and the load average (the machine is shared, so wall time under load
says little on its own). Needs root on the local backend, a Docker engine on the docker one.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kraftcheck import scenarios  # noqa: E402
from kraftcheck.commands.scenario import build_scenario_spec, environment_problem  # noqa: E402
from kraftcheck.scenarios.script import ScriptedRunner  # noqa: E402


def one_run(backend: str, variant: str, seed: int, root: str) -> None:
    """Run the scenario once and print its figures."""
    scenario = scenarios.get("last-replica-standing")
    args = argparse.Namespace(backend=backend, variant=variant, seed=seed)
    spec = build_scenario_spec(scenario, args, ["last-replica-standing"])
    started = time.monotonic()
    outcome = ScriptedRunner(scenario, spec, root, progress=False, out=io.StringIO()).execute()
    took = time.monotonic() - started
    section = outcome.results.get("scenario") or {}
    print(f"{backend:<7} {variant:<7} seed {seed:<4} total {took:6.1f} s  exit {outcome.exit_code}  "
          f"expectation met {section.get('expectation_met')}  load {os.getloadavg()[0]:.2f}")
    previous = 0
    for step in section.get("steps") or []:
        t = step.get("time") or 0
        print(f"    {step['step']:<20} at {t / 1e9:6.2f} s  (+{(t - previous) / 1e9:5.2f} s)")
        previous = t


def main() -> int:
    """Parse arguments and run the requested reproductions."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["local", "docker"], default="local")
    p.add_argument("--variants", default="v3.5,kip966")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    problem = environment_problem(scenarios.get("last-replica-standing"), args.backend)
    if problem:
        print(f"bench_scenario_lrs: {problem}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="kraftcheck-bench-lrs-") as root:
        for i in range(args.repeat):
            for variant in args.variants.split(","):
                one_run(args.backend, variant.strip(), args.seed + i, root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
