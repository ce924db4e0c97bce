"""kraftcheck export: a history as Jepsen EDN or Jepsen-style JSON for other tools, or in columnar form.

    kraftcheck export --history FILE [--format edn|json] [--out FILE]
    kraftcheck export --history FILE --format parquet [--out DIR] [--force] [--verify]
    kraftcheck export --store DIR --format parquet [--force] [--verify]

EDN and JSON go to stdout when no --out is given; malformed lines are left out and reported on stderr (the
first few, then a count).

Parquet writes the columnar history, a directory history.parquet beside the history (or --out DIR): every
op in typed columns, the queue records one row per key, and a manifest tying it to the JSONL it was
derived from. The JSONL stays the record of the run; the Spark engine and kraftcheck aggregate read the
columnar form when it is there. An existing directory is kept unless --force is given; --verify writes it
again in a temporary place and compares the two byte for byte (nothing is changed). --store does this for
every run of a store: runs whose columnar history is already current are left alone.

Exit codes (kraftcheck --help lists them): success when done; the code of invalid when --verify found a
difference; bad arguments for unusable input (a missing or unreadable file, an EDN file, a history without
one usable line, a key or value that is not an integer; the message names the flag); a harness error when
the output cannot be written or pyarrow is missing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from checkers.history import export
from harness import store
from harness.history import HistoryFormatError, iter_history, malformed_summary
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_INVALID, EXIT_OK, EXIT_USAGE

EXIT_DIFFERENT = EXIT_INVALID  # --verify: the columnar history differs from one written afresh
PROG = "kraftcheck export"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--history", metavar="FILE", help="the JSONL history (history.jsonl of a run)")
    source.add_argument("--store", metavar="DIR", help="every run of a store (with --format parquet)")
    p.add_argument("--format", choices=["edn", "json", "parquet"], default="edn",
                   help="Jepsen EDN, Jepsen-style JSON or the columnar history (default: edn)")
    p.add_argument("--out", metavar="PATH", help="output file (edn, json; default: stdout) or directory "
                   "(parquet; default: history.parquet beside the history)")
    p.add_argument("--force", action="store_true", help="parquet: replace a columnar history that exists")
    p.add_argument("--verify", action="store_true", help="parquet: compare the existing columnar history "
                   "with a fresh conversion instead of writing it")
    return p


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point called by ``kraftcheck.cli``."""
    p = _parser()
    args = p.parse_args(argv)
    if args.format != "parquet":
        if args.store:
            return _fail("--store needs --format parquet (EDN and JSON export one history)")
        if args.force or args.verify:
            return _fail("--force and --verify go with --format parquet")
        return _text_export(args)
    if args.store and args.out:
        return _fail("--out names one history's directory; with --store each run gets its own")
    if args.force and args.verify:
        return _fail("--verify compares without writing; drop --force")
    # pyarrow comes with the optional 'spark' extra: imported only when Parquet is asked for.
    from checkers.history import parquet  # noqa: F401 - fails here, before any work, without pyarrow

    if args.store:
        return _store(Path(args.store), args.force, args.verify)
    history = Path(args.history)
    if not history.is_file():
        return _fail(f"--history {history}: no such file")
    return _one(history, Path(args.out) if args.out else None, args.force, args.verify)


def _text_export(args: argparse.Namespace) -> int:
    bad: list = []
    try:
        ops = list(iter_history(args.history, bad))
    except HistoryFormatError as exc:
        return _fail(f"--history {exc}")
    except OSError as exc:
        return _fail(f"--history {args.history}: cannot read it ({exc.strerror or exc})")
    for line in malformed_summary(bad, prefix="malformed line "):
        print(f"{PROG}: {line}", file=sys.stderr)
    if not ops:
        return _fail(f"--history {args.history}: no line of it is a history op")
    text = export.to_edn(ops) if args.format == "edn" else export.to_jepsen_json(ops)
    try:
        if args.out:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    except OSError as exc:
        print(f"{PROG}: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    return EXIT_OK


def _one(history: Path, out: Path | None, force: bool, verify: bool) -> int:
    from checkers.history.parquet import NotColumnar, parquet_dir_for, write_history_parquet
    from checkers.history.parquet import verify as compare

    out = out or parquet_dir_for(history)
    if verify:
        if not out.exists():
            return _fail(f"{out}: no columnar history to verify (write it: {PROG} --history {history} "
                         "--format parquet)")
        problems = compare(out, history)
        for problem in problems:
            print(f"{PROG}: {out}: {problem}", file=sys.stderr)
        print(f"{out}: {'differs from' if problems else 'matches'} a fresh conversion of {history}")
        return EXIT_DIFFERENT if problems else EXIT_OK
    started = time.monotonic()
    try:
        written = write_history_parquet(history, out, force=force)
    except FileExistsError as exc:
        return _fail(str(exc))
    except (HistoryFormatError, NotColumnar) as exc:
        return _fail(f"--history {history}: {exc}")
    except OSError as exc:
        return _fail(f"{out}: cannot write it ({exc.strerror or exc})", EXIT_HARNESS_ERROR)
    manifest = written.manifest
    bad = manifest["malformed"]
    listed = [{"file": str(history), "line": m["line"], "reason": m["reason"]} for m in bad["first"]]
    for line in malformed_summary(listed, total=bad["count"], prefix="malformed line "):
        print(f"{PROG}: {line}", file=sys.stderr)
    tables = manifest["tables"]
    if not tables["ops"]["rows"]:
        # Nothing was converted: a columnar copy of no op would pass later reads as an empty run.
        shutil.rmtree(written.path, ignore_errors=True)
        return _fail(f"--history {history}: no line of it is a history op")
    print(f"{tables['ops']['rows']} ops, {tables['queue']['rows']} key rows ({manifest['keys']} keys) -> "
          f"{written.path} in {time.monotonic() - started:.1f} s")
    return EXIT_OK


def _store(root: Path, force: bool, verify: bool) -> int:
    from checkers.history.parquet import (
        NotColumnar,
        ParquetHistoryError,
        check_current,
        parquet_dir_for,
        write_history_parquet,
    )
    from checkers.history.parquet import verify as compare

    if not root.is_dir():
        return _fail(f"--store {root}: not a directory")
    histories = store.list_histories(root)
    if not histories:
        return _fail(f"--store {root}: no run with a {store.HISTORY} in it")
    written = current = failed = different = 0
    for history in histories:
        out = parquet_dir_for(history)
        if verify:
            if not out.exists():
                print(f"{history.parent}: no columnar history")
                continue
            problems = compare(out, history)
            different += bool(problems)
            print(f"{history.parent}: {'differs: ' + problems[0] if problems else 'matches'}")
            continue
        if out.exists() and not force:
            try:
                check_current(out, history, full=False)
                current += 1
                continue
            except ParquetHistoryError as exc:
                print(f"{PROG}: {exc}", file=sys.stderr)
                failed += 1
                continue
        try:
            result = write_history_parquet(history, force=force)
            if not result.manifest["tables"]["ops"]["rows"]:
                shutil.rmtree(result.path, ignore_errors=True)
                failed += 1
                print(f"{PROG}: {history}: no line of it is a history op", file=sys.stderr)
                continue
            written += 1
            print(f"{history.parent}: written")
        except (HistoryFormatError, NotColumnar, OSError) as exc:
            failed += 1
            print(f"{PROG}: {history}: {exc}", file=sys.stderr)
    if verify:
        print(f"{len(histories)} runs: {different} differ")
        return EXIT_DIFFERENT if different else EXIT_OK
    print(f"{len(histories)} runs: {written} written, {current} already current, {failed} not written")
    return EXIT_USAGE if failed else EXIT_OK
