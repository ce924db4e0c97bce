"""kraftcheck image build|status: the node image of the docker backend, built locally (no registry needed)."""

from __future__ import annotations

import argparse
import json
import sys

from harness.image import ImageError, ensure_image, status
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_OK


def main(argv: list[str]) -> int:
    """Build the node image or print its status; ``EXIT_HARNESS_ERROR`` when it cannot be built."""
    parser = argparse.ArgumentParser(prog="kraftcheck image", description=__doc__)
    parser.add_argument("action", choices=["build", "status"],
                        help="build: build the image unless it is up to date; status: print its tags and what is "
                        "present")
    args = parser.parse_args(argv)

    if args.action == "status":
        print(json.dumps(status(), indent=2))
        return EXIT_OK
    try:
        tag = ensure_image()
    except ImageError as exc:
        print(f"kraftcheck image: {exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    print(tag)
    return EXIT_OK
