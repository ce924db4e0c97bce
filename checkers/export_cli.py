"""kraftcheck export: a history as Jepsen EDN, Jepsen-style JSON or Parquet, for other tools.

EDN and JSON go to stdout when no --out is given; Parquet needs --out. Malformed lines are left out and
reported on stderr (the first few, then a count). Exit codes: 0 done, 2 unusable input (a missing or
unreadable file, an EDN file, a history without one usable line, Parquet without --out; the message
names the flag), 255 when the output cannot be written.
"""

from __future__ import annotations

import argparse
import sys

from checkers import export
from harness.core.history import HistoryFormatError, iter_history, malformed_summary

EXIT_USAGE, EXIT_ERROR = 2, 255


def main(argv: list[str] | None = None) -> int:
    """Entry point called by ``harness.app.cli``."""
    p = argparse.ArgumentParser(prog="kraftcheck export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", required=True, metavar="FILE", help="the JSONL history (history.jsonl of a run)")
    p.add_argument("--format", choices=["edn", "json", "parquet"], default="edn",
                   help="Jepsen EDN, Jepsen-style JSON or Parquet (default: edn)")
    p.add_argument("--out", metavar="FILE", help="output file (default: stdout; required for parquet)")
    args = p.parse_args(argv)
    if args.format == "parquet" and not args.out:
        p.print_usage(sys.stderr)
        print("kraftcheck export: error: --out is required with --format parquet", file=sys.stderr)
        return EXIT_USAGE
    bad: list = []
    try:
        ops = list(iter_history(args.history, bad))
    except HistoryFormatError as exc:
        print(f"kraftcheck export: error: --history {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"kraftcheck export: error: --history {args.history}: cannot read it ({exc.strerror or exc})",
              file=sys.stderr)
        return EXIT_USAGE
    for line in malformed_summary(bad, prefix="malformed line "):
        print(f"kraftcheck export: {line}", file=sys.stderr)
    if not ops:
        print(f"kraftcheck export: error: --history {args.history}: no line of it is a history op",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.format == "parquet":
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
        print(f"kraftcheck export: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
