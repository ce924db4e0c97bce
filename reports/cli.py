"""``kraftcheck report STORE_DIR``: (re)render ``report.html`` for a stored run."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> int:
    """Render the report of the run in ``STORE_DIR`` (a run directory, its spec.json, or a store root)."""
    parser = argparse.ArgumentParser(prog="kraftcheck report", description=__doc__)
    parser.add_argument("run", metavar="STORE_DIR", help="run directory (or a store root: uses latest)")
    args = parser.parse_args(argv)
    from harness.store import resolve_run_dir
    from reports.run_report import write_report

    try:
        run_dir = resolve_run_dir(args.run)
    except FileNotFoundError as exc:
        print(f"kraftcheck report: {exc}", file=sys.stderr)
        return 2
    path = write_report(run_dir)
    print(path)
    return 0
