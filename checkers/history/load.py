"""A run's files as the checkers read them: the history (JSONL or Jepsen EDN, by its content) and the trace.

Both readers keep going past bad lines and report them as ``{"file", "line", "reason"}`` dicts, the shape
``results.json`` lists under ``malformed``.
"""

from __future__ import annotations

import os

from checkers.history.edn import read_edn_history, sniff_format
from checkers.history.jsonl import read_ops
from harness.history import iter_json_lines


def read_trace(path: str | os.PathLike, malformed: list[dict]) -> list[dict]:
    """Read ``trace.jsonl``; events need ``time`` (int), ``node`` and ``kind`` (str); bad lines are listed."""
    events: list[dict] = []
    path = str(path)
    for lineno, ev, reason in iter_json_lines(path):
        if reason is None and (not isinstance(ev, dict) or not isinstance(ev.get("kind"), str) or not isinstance(
                ev.get("time"), int | float) or "node" not in ev):
            reason = "trace event needs time, node, kind"
        if reason is not None:
            malformed.append({"file": path, "line": lineno, "reason": reason})
            continue
        ev["_line"] = lineno
        events.append(ev)
    events.sort(key=lambda e: (e["time"], e["_line"]))
    return events


def load_history(path: str | os.PathLike, fmt: str | None = None) -> tuple[list[dict], list[dict]]:
    """Read a history (``fmt`` ``"jsonl"`` or ``"edn"``; None: ``sniff_format``), returning (ops,
    malformed as dicts). Raises ``ValueError`` for an EDN file that is not a Jepsen history."""
    bad: list = []
    if (fmt or sniff_format(path)) == "edn":
        ops = read_edn_history(path, bad)
    else:
        ops = read_ops(path, bad)  # iter_history's result, read with orjson (``checkers.history.jsonl``)
    return ops, [{"file": m.path, "line": m.line, "reason": m.reason} for m in bad]
