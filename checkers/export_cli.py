"""``kraftcheck export``: a history as Jepsen EDN, Jepsen-style JSON or Parquet.

``kraftcheck export --history FILE --format edn|json|parquet [--out FILE]`` (stdout for edn/json when no
``--out``). Malformed lines are reported on stderr with their line numbers and left out. Exit 0, or 255 on
an unreadable file or a bad option.
"""

from __future__ import annotations

import argparse
import sys

from harness.history import iter_history


def main(argv: list[str] | None = None) -> int:
    """Entry point called by ``harness.cli``."""
    p = argparse.ArgumentParser(prog="kraftcheck export", description="Export a history for other tools.")
    p.add_argument("--history", required=True)
    p.add_argument("--format", choices=["edn", "json", "parquet"], default="edn")
    p.add_argument("--out", help="output file (required for parquet)")
    args = p.parse_args(argv)
    from checkers import export
    bad: list = []
    try:
        ops = list(iter_history(args.history, bad))
        for m in bad:
            print(f"kraftcheck export: malformed line {m}", file=sys.stderr)
        if args.format == "parquet":
            if not args.out:
                print("kraftcheck export: --out is required for parquet", file=sys.stderr)
                return 255
            n = export.to_parquet(ops, args.out)
            print(f"{n} ops -> {args.out}", file=sys.stderr)
            return 0
        text = export.to_edn(ops) if args.format == "edn" else export.to_jepsen_json(ops)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    except OSError as exc:
        print(f"kraftcheck export: {exc}", file=sys.stderr)
        return 255
    return 0


if __name__ == "__main__":
    sys.exit(main())
