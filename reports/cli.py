"""kraftcheck report STORE_DIR: render report.html for a stored run again (exit codes: kraftcheck --help)."""

from __future__ import annotations

import argparse
import sys

from harness.history import HistoryFormatError
from harness.store import resolve_run_dir
from harness.verdict import EXIT_OK, EXIT_USAGE
from reports.run_report import write_report


def main(argv: list[str]) -> int:
    """Render the report of the run in ``STORE_DIR`` (a run directory, its spec.json, or a store root)."""
    parser = argparse.ArgumentParser(prog="kraftcheck report", description=__doc__)
    parser.add_argument("run", metavar="STORE_DIR", help="run directory (or a store root: uses latest)")
    args = parser.parse_args(argv)

    try:
        run_dir = resolve_run_dir(args.run)
    except FileNotFoundError as exc:
        print(f"kraftcheck report: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        path = write_report(run_dir)
    except HistoryFormatError as exc:
        print(f"kraftcheck report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(path)
    return EXIT_OK
