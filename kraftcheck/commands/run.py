"""kraftcheck run: one fault-injection run (cluster up, workload and nemesis, final reads, check, report).

Prints the seed first and the exact replay command last. Every option is checked before anything
starts, including whether --time-limit leaves one turn for each fault family asked for (at the
--nemesis-interval given; when none is given the interval is shortened to fit, down to a floor). Exit
codes as for every command that reaches a verdict (kraftcheck --help lists them); a bad argument has the
code of unknown, with a message naming it.

Replaying the spec of a scenario run (kraftcheck scenario) runs the scenario's script again.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness import clusters, spec_cli
from harness.faults import requested_families
from harness.spec import RunSpec, SpecError, load_spec, prepare_spec, replay_options
from harness.sut import SutError
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_USAGE
from kraftcheck.commands import scenario as scenario_command
from kraftcheck.commands.preflight import docker_problem
from kraftcheck.runner import execute
from nemesis.registry import build_package
from workloads.registry import UnknownWorkload, workload_for

COMMAND = "run"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: ``--replay`` and the run's own switches, then every spec option of the field
    table (``harness.spec_cli``), each defaulting to None so a replay can tell what was given."""
    p = argparse.ArgumentParser(prog="kraftcheck run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replay", metavar="SPEC_JSON", help="repeat a stored run (its spec.json or run "
                   "directory); other options given here override the stored ones")
    p.add_argument("--store", metavar="DIR", help="store root (default: $KRAFTCHECK_STORE, else ./store)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    spec_cli.add_options(p.add_argument_group("run options"), COMMAND)
    return p


def options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Spec options the user actually gave (None = not given)."""
    return spec_cli.options_from_args(args, COMMAND)


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck run``."""

    parser = build_parser()
    args = parser.parse_args(argv)
    options: dict[str, Any] = {}
    try:
        if args.replay:
            stored = load_spec(args.replay)
            options.update(replay_options(stored, source=args.replay))
            if stored.get("image"):
                options["image"] = stored["image"]
        options.update(options_from_args(args))
        options, fitted = clusters.fit_to_setting(options)
        if fitted:
            print(f"kraftcheck run: {fitted}", file=sys.stderr)
        spec, environment = prepare_spec(options, argv=["kraftcheck", "run", *argv])
    except SpecError as exc:
        return usage_error(parser, str(exc))
    try:
        workload_for(spec.workload)
    except UnknownWorkload as exc:
        return usage_error(parser, f"workload: {exc}")
    if spec.nemesis:
        try:
            build_package(spec.nemesis, seed=spec.seed)  # the families can be built at all
        except ValueError as exc:
            return usage_error(parser, f"--nemesis: {exc}")
    problem = sut_problem(spec)
    if problem:
        return usage_error(parser, problem)
    if spec.scenario:
        return scenario_command.replay(spec, environment, args.store, report=not args.no_report,
                                       error=lambda message: usage_error(parser, message))
    if spec.backend == "docker":
        problem = docker_problem()
        if problem:
            print(f"kraftcheck run: {problem}", file=sys.stderr)
            return EXIT_HARNESS_ERROR

    outcome = execute(spec, args.store, progress=not args.no_progress, report=not args.no_report,
                      environment=environment)
    return outcome.exit_code


def sut_problem(spec: RunSpec) -> str | None:
    """Why the spec's system under test cannot run this workload and these faults (None: it can)."""
    try:
        choice = clusters.resolve(spec)
    except SutError as exc:
        return f"--sut: {exc}"
    refused = clusters.refusals(choice, requested_families(spec.nemesis))
    if refused:
        return "--nemesis: " + "; ".join(refused)
    missing = clusters.missing_apis(choice, workload_for(spec.workload).required_apis)
    if missing:
        return (f"--workload {spec.workload}: {choice.description.name} ({choice.setting.build} build) "
                f"does not offer {', '.join(missing)}")
    return None


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Print the usage and a one-line error; the exit code of a bad argument."""
    parser.print_usage(sys.stderr)
    print(f"kraftcheck run: error: {message}", file=sys.stderr)
    return EXIT_USAGE
