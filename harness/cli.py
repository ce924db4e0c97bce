"""``kraftcheck``: the command line.

Each subcommand lives in the package that owns it and is loaded lazily (Spark and Docker imports are heavy),
so ``kraftcheck --help`` is instant and a broken optional part cannot break the others. Every subcommand
is a ``main(argv) -> exit code`` function. Exit codes: 0 valid, 1 invalid, 2 unknown, 255 harness error;
argparse's usage errors exit with 2 as well, with a message naming the bad argument.
"""

from __future__ import annotations

import importlib
import sys

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN, EXIT_HARNESS_ERROR = 0, 1, 2, 255

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("harness.commands.run", "a fault-injection run: cluster up, workload + nemesis, check, report"),
    "analyze": ("harness.commands.analyze", "re-check a stored run (also a partial one)"),
    "check": ("checkers.cli", "check any history file of the schema"),
    "cluster": ("harness.commands.cluster", "cluster up / down for manual work"),
    "clean": ("harness.commands.clean", "remove everything kraftcheck started (containers, processes, ...)"),
    "conformance": ("reference_impl.conformance", "run model conformance cases (DESIGN.md section 8)"),
    "aggregate": ("spark_analysis.cli", "aggregate a whole store with Spark"),
    "export": ("checkers.export_cli", "export a history to EDN / Jepsen JSON / Parquet"),
    "report": ("reports.cli", "render report.html for a stored run"),
    "scenario": ("harness.commands.scenario", "named reproductions, e.g. last-replica-standing"),
    "image": ("harness.commands.image", "build the Docker base image (debootstrap + docker import)"),
}


def _usage() -> str:
    lines = ["usage: kraftcheck COMMAND [ARGS...]", "", "commands:"]
    width = max(len(n) for n in SUBCOMMANDS)
    for name, (_, summary) in SUBCOMMANDS.items():
        lines.append(f"  {name.ljust(width)}  {summary}")
    lines.append("")
    lines.append("'kraftcheck COMMAND --help' describes each command.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``kraftcheck COMMAND ...`` to the owning module's ``main(argv)``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"kraftcheck: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _ = SUBCOMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        print(f"kraftcheck {name}: not available ({exc})", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    try:
        return int(module.main(rest) or 0)
    except KeyboardInterrupt:
        print(f"kraftcheck {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
