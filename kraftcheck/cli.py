"""``kraftcheck``: the command line.

Each subcommand lives in the package that owns it and is loaded lazily (Spark and Docker imports are heavy),
so ``kraftcheck --help`` is instant and a broken optional part cannot break the others. Every subcommand
is a ``main(argv) -> exit code`` function, its codes from the table ``harness.verdict.EXIT_CODES``
(argparse's usage errors share the code of ``unknown``, with a message naming the bad argument).
"""

from __future__ import annotations

import importlib
import sys

from harness.spec import git_commit, package_version
from harness.verdict import EXIT_CODES, EXIT_HARNESS_ERROR, EXIT_OK, EXIT_USAGE
from kraftcheck.extras import install_hint

# The shell's code for a process ended by SIGINT (128 + 2); outside the verdict table, as Ctrl-C is.
EXIT_INTERRUPTED = 130

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("kraftcheck.commands.run", "a fault-injection run: cluster up, workload + nemesis, check, report"),
    "analyze": ("kraftcheck.commands.analyze", "re-check a stored run (also a partial one)"),
    "check": ("kraftcheck.commands.check", "check any history file of the schema"),
    "cluster": ("kraftcheck.commands.cluster", "cluster up / down for manual work"),
    "clean": ("kraftcheck.commands.clean", "remove everything kraftcheck started (containers, processes, ...)"),
    "conformance": ("reference_impl.conformance", "run model conformance cases (docs/conformance.md)"),
    "simulate": ("simulator.cli", "deterministic simulation of the protocol core: find, shrink, replay"),
    "selftest": ("kraftcheck.commands.selftest", "mutation self-test: core mutants in the simulator, injected "
                 "bugs in real runs"),
    "aggregate": ("spark_analysis.cli", "aggregate a whole store with Spark"),
    "export": ("kraftcheck.commands.export", "export a history to EDN / Jepsen JSON, or write its columnar "
               "(Parquet) form"),
    "report": ("reports.cli", "render report.html for a stored run"),
    "publish": ("kraftcheck.commands.publish", "a conformance report of a whole store, as a static site"),
    "serve": ("kraftcheck.commands.serve", "browse a store live over loopback (the publish pages)"),
    "scenario": ("kraftcheck.commands.scenario", "named reproductions, e.g. last-replica-standing"),
    "suite": ("kraftcheck.commands.suite", "scenarios and randomized runs over variants x faults x backends"),
    "image": ("kraftcheck.commands.image", "build the Docker base image (debootstrap + docker import)"),
    "sut": ("kraftcheck.commands.sut", "systems under test: list the descriptions, install one (tansu, ...)"),
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
    lines.append("exit codes: " + ", ".join(f"{code} {word}" for word, code in EXIT_CODES.items())
                 + f" ({EXIT_USAGE} also for bad arguments)")
    lines.append("'kraftcheck COMMAND --help' describes each command; 'kraftcheck --version' prints the version "
                 "and git commit.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``kraftcheck COMMAND ...`` to the owning module's ``main(argv)``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return EXIT_OK if argv else EXIT_USAGE
    if argv[0] in ("-V", "--version"):
        print(version_line())
        return EXIT_OK
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"kraftcheck: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return EXIT_USAGE
    module_name, _ = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"kraftcheck {name}: not available ({install_hint(exc) or exc})", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    try:
        return int(module.main(rest) or EXIT_OK)
    except KeyboardInterrupt:
        print(f"kraftcheck {name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImportError as exc:  # a Spark command (or a Parquet export) without the optional extra
        hint = install_hint(exc)
        if hint is None:
            raise
        print(f"kraftcheck {name}: {hint}", file=sys.stderr)
        return EXIT_HARNESS_ERROR


if __name__ == "__main__":
    sys.exit(main())
