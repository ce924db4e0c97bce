"""``python -m checkers.linear [--model M] [--format F] [--time-limit S] [--knossos CMD] FILE``.

Prints the verdict as JSON on stdout; the exit code is the verdict's in ``harness.verdict.EXIT_CODES``
(linearizable: valid), or that of a harness error when the file cannot be checked.
Models: auto (from the ops), register, cas-register, kv, kafka-log. Formats: auto, jsonl, edn, etcd-log.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys

from checkers.linear.engine import check_partitions
from checkers.linear.formats import load
from checkers.linear.knossos import configured_command, run_knossos
from checkers.linear.models import MODELS
from harness.verdict import EXIT_CODES, EXIT_HARNESS_ERROR, word_of


def main(argv: list[str] | None = None) -> int:
    """Entry point of the engine executable."""
    p = argparse.ArgumentParser(prog="python -m checkers.linear", description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("--model", default="auto", choices=["auto", *MODELS])
    p.add_argument("--format", default="auto", choices=["auto", "jsonl", "edn", "etcd-log"])
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds for the whole search (default 60)")
    p.add_argument("--all-keys", action="store_true", help="keep searching after a non-linearizable key")
    p.add_argument("--knossos", default=None, help="run this knossos command instead (or KRAFTCHECK_KNOSSOS)")
    args = p.parse_args(argv)
    # The history's ops and the search's memo are millions of objects without reference cycles: the
    # collector's full passes over them would cost a large share of a big check and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        model, parts, _ = load(args.file, args.format, args.model)
        knossos = configured_command(args.knossos)
        if knossos:
            result = run_knossos(knossos, model, parts, args.time_limit)
        else:
            result = check_partitions(model, parts, args.time_limit, all_keys=args.all_keys)
    except (OSError, ValueError, KeyError) as exc:
        print(json.dumps({"valid": "unknown", "error": f"{type(exc).__name__}: {exc}"}))
        return EXIT_HARNESS_ERROR
    finally:
        if collecting:
            gc.enable()
    result["file"] = args.file
    print(json.dumps(result, default=str))
    return EXIT_CODES[word_of(result["valid"])]


if __name__ == "__main__":
    sys.exit(main())
