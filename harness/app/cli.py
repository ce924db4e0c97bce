"""``kraftcheck``: the command line.

Each subcommand lives in the package that owns it and is loaded lazily (Spark and Docker imports are heavy),
so ``kraftcheck --help`` is instant and a broken optional part cannot break the others. Every subcommand
is a ``main(argv) -> exit code`` function. Exit codes (``harness.core.verdict.EXIT_CODES``): 0 valid,
1 invalid, 2 unknown, 255 harness error; argparse's usage errors exit with 2 as well, with a message naming
the bad argument.
"""

from __future__ import annotations

import importlib
import sys

from harness.app.extras import install_hint
from harness.core.spec import git_commit, package_version
from harness.core.verdict import EXIT_CODES, EXIT_USAGE, HARNESS_ERROR

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("harness.app.commands.run", "a fault-injection run: cluster up, workload + nemesis, check, report"),
    "analyze": ("harness.app.commands.analyze", "re-check a stored run (also a partial one)"),
    "check": ("harness.app.commands.check", "check any history file of the schema"),
    "cluster": ("harness.app.commands.cluster", "cluster up / down for manual work"),
    "clean": ("harness.app.commands.clean", "remove everything kraftcheck started (containers, processes, ...)"),
    "conformance": ("reference_impl.conformance", "run model conformance cases (docs/conformance.md)"),
    "simulate": ("simulator.cli", "deterministic simulation of the protocol core: find, shrink, replay"),
    "selftest": ("harness.app.commands.selftest", "mutation self-test: core mutants in the simulator, injected "
                 "bugs in real runs"),
    "aggregate": ("spark_analysis.cli", "aggregate a whole store with Spark"),
    "export": ("harness.app.commands.export", "export a history to EDN / Jepsen JSON, or write its columnar "
               "(Parquet) form"),
    "report": ("reports.cli", "render report.html for a stored run"),
    "publish": ("harness.app.commands.publish", "a conformance report of a whole store, as a static site"),
    "serve": ("harness.app.commands.serve", "browse a store live over loopback (the publish pages)"),
    "scenario": ("harness.app.commands.scenario", "named reproductions, e.g. last-replica-standing"),
    "suite": ("harness.app.commands.suite", "scenarios and randomized runs over variants x faults x backends"),
    "image": ("harness.app.commands.image", "build the Docker base image (debootstrap + docker import)"),
}


def version_line() -> str:
    """``kraftcheck VERSION (commit SHA[, uncommitted changes])``: what ``kraftcheck --version`` prints."""
    commit, dirty = git_commit()
    where = f"commit {commit}" if commit else "commit unknown (not a git checkout)"
    if dirty:
        where += ", uncommitted changes"
    return f"kraftcheck {package_version() or 'unknown version (not installed)'} ({where})"


def _usage() -> str:
    lines = ["usage: kraftcheck [--version] COMMAND [ARGS...]", "", "commands:"]
    width = max(len(n) for n in SUBCOMMANDS)
    for name, (_, summary) in SUBCOMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {summary}")
    lines.append("")
    lines.append("'kraftcheck COMMAND --help' describes each command; 'kraftcheck --version' prints the version "
                 "and git commit.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``kraftcheck COMMAND ...`` to the owning module's ``main(argv)``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if argv else EXIT_USAGE
    if argv[0] in ("-V", "--version"):
        print(version_line())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"kraftcheck: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return EXIT_USAGE
    module_name, _ = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"kraftcheck {name}: not available ({install_hint(exc) or exc})", file=sys.stderr)
        return EXIT_CODES[HARNESS_ERROR]
    try:
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        print(f"kraftcheck {name}: interrupted", file=sys.stderr)
        return 130
    except ImportError as exc:  # a Spark command (or a Parquet export) without the optional extra
        hint = install_hint(exc)
        if hint is None:
            raise
        print(f"kraftcheck {name}: {hint}", file=sys.stderr)
        return EXIT_CODES[HARNESS_ERROR]


if __name__ == "__main__":
    sys.exit(main())
