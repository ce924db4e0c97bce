"""The one record schema of a run: operations in ``history.jsonl`` (docs/history-schema.md).

An op is a plain dict with Jepsen's field names::

    {"index": int, "time": int ns since run start (monotonic), "type": "invoke"|"ok"|"fail"|"info",
     "process": int | "nemesis", "f": str, "value": any JSON, "node": str|None, "error": str|None}

``HistoryWriter`` streams ops to disk as they happen: every line is written and flushed at once (and the
file is opened line-buffered), so a kill -9 of the harness loses at most the op being written. A torn last
line is expected after such a crash; ``read_history`` reports it as a malformed line and keeps the rest.

``read_history`` never raises on bad lines: it yields the good ops and collects ``MalformedLine`` entries
(file, line number, reason) so that checkers can still check everything that is readable. A file that is
not JSONL at all is another matter: one whose first line is an EDN map (a Jepsen history) raises
``HistoryFormatError`` saying so, instead of reporting every line as malformed. ``malformed_summary``
turns a long list of bad lines into a few examples and a count, for printing.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OP_TYPES = ("invoke", "ok", "fail", "info")
# The first line of an EDN history: a map with keyword keys, possibly opening a vector or a list.
# EDN op maps ({:type ...}), possibly inside a vector or list, or Jepsen's tagged op records; commas are
# whitespace in EDN.
_EDN_START = re.compile(r"^[\[(]?[\s,]*(?:\{[\s,]*:[A-Za-z]|#jepsen\.history\.Op\{)")
MALFORMED_SHOWN = 5
COMPLETION_TYPES = ("ok", "fail", "info")
NEMESIS = "nemesis"


@dataclass(frozen=True)
class MalformedLine:
    """A history line that could not be used, with where it is and why."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def validate_op(op: Any) -> str | None:
    """Return why ``op`` is not a valid history op, or None when it is."""
    if not isinstance(op, dict):
        return "not a JSON object"
    if op.get("type") not in OP_TYPES:
        return f"bad type {op.get('type')!r}"
    process = op.get("process")
    if not (process == NEMESIS or (isinstance(process, int) and not isinstance(process, bool))):
        return f"bad process {process!r}"
    if not isinstance(op.get("f"), str):
        return f"bad f {op.get('f')!r}"
    if not isinstance(op.get("time"), int) or isinstance(op.get("time"), bool):
        return f"bad time {op.get('time')!r}"
    if "index" in op and not isinstance(op["index"], int):
        return f"bad index {op['index']!r}"
    return None


@dataclass
class History:
    """A history read from disk: the valid ops in file order plus the lines that were not usable."""

    ops: list[dict]
    malformed: list[MalformedLine] = field(default_factory=list)


class HistoryFormatError(ValueError):
    """A file given as a JSONL history (or trace) that is something else; the message names the file."""


def looks_like_edn(text: str) -> bool:
    """Whether the start of a file (``text``: its first few kilobytes) reads as EDN (Jepsen's history
    format) rather than JSON."""
    return bool(_EDN_START.match(text.lstrip(" \t\r\n,")))


def file_looks_like_edn(path: str | os.PathLike) -> bool:
    """``looks_like_edn`` on the first 4 KiB of the file at ``path``."""
    with open(path, "rb") as fh:
        return looks_like_edn(fh.read(4096).decode("utf-8", errors="replace"))


def edn_problem(path: str | os.PathLike) -> str | None:
    """A one-line explanation when the file at ``path`` is an EDN history rather than JSONL (None if not)."""
    return _edn_message(path) if file_looks_like_edn(path) else None


def _edn_message(path: str | os.PathLike) -> str:
    return (f"{path}: this is an EDN history (Jepsen's format), not JSONL; kraftcheck check --history reads "
            "EDN, the other commands read the JSONL history of a run")


def iter_json_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line number, parsed value, None)`` or ``(line number, None, reason)`` for each non-blank
    line of a JSONL file: the one place where histories, traces and conversions meet torn or bad lines.

    Raises ``HistoryFormatError`` when the first non-blank line is not JSON but EDN (the whole file is
    then in the wrong format, not torn)."""
    first = True
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            stripped = line.strip()
            if not stripped:
                continue
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError as exc:
                if first and looks_like_edn(stripped):
                    raise HistoryFormatError(_edn_message(path)) from None
                yield lineno, None, f"invalid JSON ({exc.msg})"
            else:
                yield lineno, value, None
            first = False


def iter_history(path: str | os.PathLike, malformed: list[MalformedLine] | None = None) -> Iterator[dict]:
    """Yield the valid ops of a JSONL history in file order; append bad lines to ``malformed``.

    Ops without an ``index`` get their position among valid ops, so hand-written histories work.
    """
    path = str(path)
    position = 0
    for lineno, op, reason in iter_json_lines(path):
        if reason is None:
            reason = validate_op(op)
        if reason is not None:
            if malformed is not None:
                malformed.append(MalformedLine(path, lineno, reason))
            continue
        op.setdefault("index", position)
        op.setdefault("node", None)
        op.setdefault("error", None)
        op.setdefault("value", None)
        position += 1
        yield op


def first_op(path: str | os.PathLike) -> dict | None:
    """The first valid op of a JSONL history, or None when no line is one (reads no further than it)."""
    return next(iter_history(path), None)


def malformed_summary(malformed: list[Any], total: int | None = None, prefix: str = "",
                      shown: int = MALFORMED_SHOWN) -> list[str]:
    """Lines to print about malformed lines: the first ``shown`` (``MalformedLine``s, or ``{"file", "line",
    "reason"}`` dicts as in results.json), each after ``prefix``, then how many more there are, so a broken
    file does not flood the terminal. ``total``: the full count when ``malformed`` holds only the first ones."""
    total = len(malformed) if total is None else total
    lines = [prefix + (f"{m['file']}:{m['line']}: {m['reason']}" if isinstance(m, dict) else str(m))
             for m in malformed[:shown]]
    if total > len(lines):
        lines.append(f"... and {total - len(lines)} more malformed lines ({total} in all)")
    return lines


def read_history(path: str | os.PathLike) -> History:
    """Read a whole JSONL history into memory (for histories that fit; Spark reads the big ones)."""
    malformed: list[MalformedLine] = []
    ops = list(iter_history(path, malformed))
    return History(ops, malformed)


class HistoryWriter:
    """Append-only, thread-safe writer of ``history.jsonl`` that flushes every op as it is written.

    ``time`` is taken from ``time.monotonic_ns()`` relative to ``start_ns`` unless the caller passes one.
    Indices are assigned here, in write order, so they are unique and dense.
    """

    def __init__(self, path: str | os.PathLike, start_ns: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.start_ns = time.monotonic_ns() if start_ns is None else start_ns
        self._lock = threading.Lock()
        self._next_index = 0
        # buffering=1: line-buffered text, so each op reaches the OS as soon as its newline is written.
        self._fh = open(self.path, "a", buffering=1, encoding="utf-8")

    def now(self) -> int:
        """Nanoseconds since the run started, on the monotonic clock."""
        return time.monotonic_ns() - self.start_ns

    def append(self, op: dict) -> dict:
        """Stamp ``op`` with index (and time when missing), write it as one line and flush it."""
        with self._lock:
            op = dict(op)
            op["index"] = self._next_index
            op.setdefault("time", self.now())
            op.setdefault("node", None)
            op.setdefault("error", None)
            op.setdefault("value", None)
            line = json.dumps(op, separators=(",", ":"), default=str)
            self._fh.write(line + "\n")
            self._fh.flush()
            self._next_index += 1
            return op

    def close(self) -> None:
        """Flush and fsync the history, then close it."""
        with self._lock:
            if self._fh.closed:
                return
            self._fh.flush()
            try:
                os.fsync(self._fh.fileno())
            except OSError:
                pass
            self._fh.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pair_ops(ops: list[dict]) -> tuple[list[tuple[dict, dict | None]], list[str]]:
    """Pair each invocation with its completion by process, in history order.

    Returns ``(pairs, problems)``: ``pairs`` holds ``(invoke, completion-or-None)`` for every invocation
    (None when the history ended before it completed, which counts as ``info``); ``problems`` describes
    completions without an open invocation or with a different ``f``.
    """
    open_by_process: dict[Any, int] = {}
    pairs: list[tuple[dict, dict | None]] = []
    problems: list[str] = []
    for op in ops:
        process = op["process"]
        if op["type"] == "invoke":
            if process in open_by_process:
                problems.append(f"op {op['index']}: process {process!r} invoked twice without completing")
            open_by_process[process] = len(pairs)
            pairs.append((op, None))
            continue
        slot = open_by_process.pop(process, None)
        if slot is None:
            problems.append(f"op {op['index']}: {op['type']} of process {process!r} with no open invocation")
            continue
        invoke = pairs[slot][0]
        if invoke["f"] != op["f"]:
            problems.append(f"op {op['index']}: completion f {op['f']!r} != invocation f {invoke['f']!r}")
        pairs[slot] = (invoke, op)
    return pairs, problems


# The op completion rule, field by field: where each field of a completed op comes from. ``complete_op``
# is the rule for ops in memory; code that cannot call it on each op states it from this table (the
# Spark jobs build their column expressions from it: spark_analysis.completion). A row is (source, the
# op field read, the value when the op never completed); fields not named here are the completion's
# when it has them, else the invocation's.
FROM_COMPLETION, FROM_INVOCATION, FROM_EITHER = "completion", "invocation", "either"
COMPLETED_FIELDS: dict[str, tuple[str, str, Any]] = {
    # The op is named by its completion: index and time of the completion (the invocation's when none).
    "index": (FROM_COMPLETION, "index", FROM_INVOCATION),
    "time": (FROM_COMPLETION, "time", FROM_INVOCATION),
    # An op that never completed may or may not have happened: Jepsen's indeterminate ``info``.
    "type": (FROM_COMPLETION, "type", "info"),
    # What came back (nothing, when nothing did) ...
    "value": (FROM_COMPLETION, "value", None),
    "error": (FROM_COMPLETION, "error", None),
    "complete_time": (FROM_COMPLETION, "time", None),
    # ... including the outcome fields a client adds (docs/history-schema.md), never the invocation's.
    "hwm": (FROM_COMPLETION, "hwm", None),
    "ends": (FROM_COMPLETION, "ends", None),
    "rebalance_log": (FROM_COMPLETION, "rebalance_log", None),
    # What was asked, by whom.
    "process": (FROM_INVOCATION, "process", None),
    "f": (FROM_INVOCATION, "f", None),
    "invoke_index": (FROM_INVOCATION, "index", None),
    "invoke_time": (FROM_INVOCATION, "time", None),
    "invoke_value": (FROM_INVOCATION, "value", None),
    # Marks the harness puts on the invocation and a completion may repeat: true when either says true.
    "final": (FROM_EITHER, "final", None),
    "seek_to_beginning": (FROM_EITHER, "seek_to_beginning", None),
}


_OUTCOME_FIELDS = ("value", "error", "hwm", "ends", "rebalance_log")


def complete_op(invoke: dict, completion: dict | None) -> dict:
    """One operation as one dict: its invocation and its completion of the same process (None when the
    history ended first), merged by the rule of ``COMPLETED_FIELDS``.

    That is: the invocation's fields with the completion's laid over them (a harness completion repeats
    the invocation's fields), where ``index``, ``time`` and ``type`` are the completion's (the
    invocation's index and time, and type ``info``, when it never completed); ``value``, ``error``,
    ``hwm``, ``ends`` and ``rebalance_log`` the completion's alone (None when nothing came back);
    ``f`` the invocation's; ``final`` and ``seek_to_beginning`` true when either says true; and
    ``invoke_index``, ``invoke_time``, ``invoke_value`` and ``complete_time`` (None when it never
    completed) are added. A field neither op has may be absent: read optional ones with ``get``.
    Neither input is changed.

    Every reader that pairs ops completes them here (the queue extraction and with it the columnar key
    table, the linearizability engine's input, the reports; the Spark jobs state the same table as
    column expressions), so they all see the same operation. It runs once per op on the queue checker's
    hot path, hence written out rather than read from the table (tests/harness/test_complete_op.py holds
    the two together)."""
    iget = invoke.get
    if completion is None:
        op = dict(invoke)
        op["type"] = "info"
        for name in _OUTCOME_FIELDS:
            op[name] = None
        op["complete_time"] = None
        op["final"] = iget("final") is True
        op["seek_to_beginning"] = iget("seek_to_beginning") is True
    else:
        op = {**invoke, **completion}
        get = completion.get
        if len(op) != len(completion):  # the invocation has fields the completion lacks
            for name in _OUTCOME_FIELDS:
                op[name] = get(name)
        op["f"] = iget("f")
        op["complete_time"] = get("time")
        if "final" in op:
            op["final"] = iget("final") is True or get("final") is True
        if "seek_to_beginning" in op:
            op["seek_to_beginning"] = iget("seek_to_beginning") is True or get("seek_to_beginning") is True
    op["invoke_index"] = invoke["index"]
    op["invoke_time"] = iget("time")
    op["invoke_value"] = iget("value")
    return op


def completed_ops(ops: list[dict]) -> list[dict]:
    """Every invocation of ``ops`` completed (``pair_ops`` then ``complete_op``), in invocation order;
    completions without an invocation are left out (``pair_ops`` reports them)."""
    pairs, _ = pair_ops(ops)
    return [complete_op(invoke, completion) for invoke, completion in pairs]
