"""kraftcheck scenario NAME: a named, scripted reproduction of a known protocol situation on a real cluster.

    kraftcheck scenario NAME [--backend local|docker] [--variant v3.5|kip966] [--controllers N] [--seed N]
                        [--store DIR]
    kraftcheck scenario --list

--list shows every scenario with the seed section it reproduces and the outcome expected per variant.

Prints the seed and store first, each step as it happens, the decisive facts, the verdict and the replay
command. Exit codes as for runs (kraftcheck --help lists them); a harness error includes "needs root" on
the local backend and a step that never reached its state.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from harness import store
from harness.spec import RunSpec, SpecError, prepare_spec
from harness.spec_cli import add_options
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_OK, EXIT_USAGE
from kraftcheck import scenarios
from kraftcheck.commands.preflight import docker_problem
from kraftcheck.scenarios.script import ScriptedRunner


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="kraftcheck scenario", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="scenario name (see --list)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--store", metavar="DIR", help="store root (default: $KRAFTCHECK_STORE, else ./store)")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    add_options(p, "scenario", default_notes={
        "backend": "local, which needs root for iptables and FUSE",
        "variant": "the scenario's first, v3.5 for last-replica-standing"})
    return p


def list_lines() -> list[str]:
    """Per registered scenario: its name, the variants with their expected outcome, what it shows, and the
    seed (or PROTOCOL.md) section it reproduces."""

    lines = []
    for s in scenarios.all_scenarios():
        expected = ", ".join(f"{v}: {s.expected[v]}" for v in s.variants)
        lines.append(f"{s.name}  [{expected}]")
        lines.append(f"    {s.summary}")
        lines.append(f"    reproduces: {s.reproduces}")
    return lines


def environment_problem(scenario: Any, backend: str) -> str | None:
    """Why this machine cannot run ``scenario`` on ``backend`` (None when it can)."""
    if backend == "local" and scenario.needs_root_locally and os.geteuid() != 0:
        return (f"scenario {scenario.name} on the local backend needs root (iptables rules between nodes and "
                "FUSE mounts for power loss); run it as root or use --backend docker")
    if backend == "docker":
        return docker_problem()
    return None


def build_scenario_spec(scenario: Any, args: argparse.Namespace, argv: list[str]) -> tuple[RunSpec, dict[str, Any]]:
    """The run's spec: the scenario's options + the user's, validated, with ``scenario`` recorded; and its
    environment facts (``harness.spec.prepare_spec``)."""

    options = scenarios.scenario_options(scenario, args.backend, args.variant, args.seed,
                                         getattr(args, "controllers", None))
    options["scenario"] = scenario.name  # read by checkers/queue/profiles.py: this run is a reproduction
    return prepare_spec(options, argv=["kraftcheck", "scenario", *argv])


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck scenario``."""

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(list_lines()))
        return EXIT_OK
    if not args.name:
        parser.print_usage(sys.stderr)
        print("kraftcheck scenario: error: a scenario name is required; known: "
              + ", ".join(scenarios.names()), file=sys.stderr)
        return EXIT_USAGE
    try:
        scenario = scenarios.get(args.name)
        spec, environment = build_scenario_spec(scenario, args, argv)
    except (scenarios.UnknownScenario, ValueError, SpecError) as exc:
        parser.print_usage(sys.stderr)
        print(f"kraftcheck scenario: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = environment_problem(scenario, spec.backend)
    if problem:
        print(f"kraftcheck scenario: {problem}", file=sys.stderr)
        return EXIT_HARNESS_ERROR

    runner = ScriptedRunner(scenario, spec, store.store_root(args.store), progress=False,
                            report=not args.no_report, environment=environment)
    return runner.execute().exit_code


def replay(spec: RunSpec, environment: dict[str, Any], store_arg: str | None, report: bool,
           error: Callable[[str], int]) -> int:
    """Run the scenario a replayed spec names (``kraftcheck run --replay`` of a scenario run's spec.json);
    a bad name or variant goes to ``error`` (which prints it and returns the usage exit code)."""
    try:
        scenario = scenarios.get(spec.scenario)
    except scenarios.UnknownScenario as exc:
        return error(f"scenario: {exc}")
    if spec.variant not in scenario.variants:
        return error(f"scenario {scenario.name} has no variant {spec.variant!r}; choose one of "
                     f"{', '.join(scenario.variants)}")
    problem = environment_problem(scenario, spec.backend)
    if problem:
        print(f"kraftcheck run: {problem}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    runner = ScriptedRunner(scenario, spec, store.store_root(store_arg), progress=False, report=report,
                            environment=environment)
    return runner.execute().exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
