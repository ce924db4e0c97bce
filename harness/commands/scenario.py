"""``kraftcheck scenario NAME``: a named, scripted reproduction on a real cluster (``harness.scenarios``).

    kraftcheck scenario last-replica-standing [--backend local|docker] [--variant v3.5|kip966]
                                              [--seed N] [--store DIR]
    kraftcheck scenario --list

Prints the seed and store first, each step as it happens, the decisive facts, the verdict and the replay
command. Exit codes as for runs: 0 valid, 1 invalid, 2 unknown (also for bad arguments), 255 harness
error (including "needs root" on the local backend and a step that never reached its state).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

EXIT_USAGE, EXIT_HARNESS_ERROR = 2, 255


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="kraftcheck scenario", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="scenario name (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--backend", choices=["local", "docker"], default="local",
                   help="where nodes run (default: local; needs root for iptables and FUSE)")
    p.add_argument("--variant", choices=["v3.5", "kip966"],
                   help="protocol variant (default: the scenario's first, v3.5 for last-replica-standing)")
    p.add_argument("--seed", type=int, help="seed (default: random, printed)")
    p.add_argument("--store", metavar="DIR", help="store root (default $KRAFTCHECK_STORE or ./store)")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    return p


def list_lines() -> list[str]:
    """One line per registered scenario: name, variants, summary."""
    from harness import scenarios

    lines = []
    for name in scenarios.names():
        s = scenarios.get(name)
        lines.append(f"{name}  [{' | '.join(s.variants)}]  {s.summary}")
    return lines


def environment_problem(scenario: Any, backend: str) -> str | None:
    """Why this machine cannot run ``scenario`` on ``backend`` (None when it can)."""
    if backend == "local" and scenario.needs_root_locally and os.geteuid() != 0:
        return (f"scenario {scenario.name} on the local backend needs root (iptables rules between nodes and "
                "FUSE mounts for power loss); run it as root or use --backend docker")
    if backend == "docker":
        from harness.commands.run import docker_problem

        return docker_problem()
    return None


def build_scenario_spec(scenario: Any, args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """The run's spec: the scenario's options + the user's, validated, with ``scenario`` recorded."""
    from harness import scenarios
    from harness.spec import build_spec

    options = scenarios.scenario_options(scenario, args.backend, args.variant, args.seed)
    spec = build_spec(options, argv=["kraftcheck", "scenario", *argv])
    spec["scenario"] = scenario.name  # read by checkers/profiles.py: this run is a reproduction
    return spec


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck scenario``."""
    from harness import scenarios
    from harness.spec import SpecError

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(list_lines()))
        return 0
    if not args.name:
        parser.print_usage(sys.stderr)
        print("kraftcheck scenario: error: a scenario name is required; known: "
              + ", ".join(scenarios.names()), file=sys.stderr)
        return EXIT_USAGE
    try:
        scenario = scenarios.get(args.name)
        spec = build_scenario_spec(scenario, args, argv)
    except (scenarios.UnknownScenario, ValueError, SpecError) as exc:
        parser.print_usage(sys.stderr)
        print(f"kraftcheck scenario: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = environment_problem(scenario, spec["backend"])
    if problem:
        print(f"kraftcheck scenario: {problem}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    from harness import store
    from harness.scenarios.script import ScriptedRunner

    runner = ScriptedRunner(scenario, spec, store.store_root(args.store), progress=False,
                            report=not args.no_report)
    return runner.execute().exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
