"""``kraftcheck image build|status``: the Docker base image (see ``harness.image``)."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str]) -> int:
    """Build the node image or print its status; exit 0 on success, 255 when it cannot be built."""
    parser = argparse.ArgumentParser(prog="kraftcheck image", description="Docker base image (no registry)")
    parser.add_argument("action", choices=["build", "status"])
    args = parser.parse_args(argv)
    from harness.image import ImageError, ensure_image, status

    if args.action == "status":
        print(json.dumps(status(), indent=2))
        return 0
    try:
        tag = ensure_image()
    except ImageError as exc:
        print(f"kraftcheck image: {exc}", file=sys.stderr)
        return 255
    print(tag)
    return 0
