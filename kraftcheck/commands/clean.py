"""kraftcheck clean: remove everything kraftcheck started (containers, networks, processes, firewall rules,
mounts, data directories), also after the harness itself was killed.

Stops a manual cluster (kraftcheck cluster up) first. By default runs whose harness is still alive are
left alone; --all removes those too.
"""

from __future__ import annotations

import argparse
import json

from harness.cleanup import clean_all, summary
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_OK
from kraftcheck.commands.cluster import down


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck clean``."""
    parser = argparse.ArgumentParser(prog="kraftcheck clean", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="also remove runs whose harness is still alive")
    parser.add_argument("--no-docker", action="store_true", help="do not contact the Docker engine")
    parser.add_argument("--json", action="store_true", help="print what was removed as JSON")
    args = parser.parse_args(argv)

    down_status = down()
    report = clean_all(include_live=args.all, docker=not args.no_docker)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True, default=str))
    else:
        print(summary(report))
    # A manual cluster that would not stop is a harness error; no cluster at all is fine.
    return EXIT_HARNESS_ERROR if down_status == EXIT_HARNESS_ERROR else EXIT_OK
