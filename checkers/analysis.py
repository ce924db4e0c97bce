"""``check_run``: every checker over one run's files, composed into the content of ``results.json``.

Used by the harness after a run, by ``kraftcheck analyze STORE_DIR`` and by ``kraftcheck check``::

    check_run(spec: dict, history_path, trace_path | None, profile=None) -> dict

``spec`` is the run's ``spec.json`` content (``{}`` for a bare history; the keys read are listed in
``checkers/profiles.py``); ``history_path`` a ``history.jsonl``; ``trace_path`` a ``trace.jsonl`` or None;
``profile`` the ``--profile`` override (``None``/"auto", "strict", "kind=status,...", or a dict).
Returns::

    {"valid": True | False | "unknown",          # false > unknown > true over the checkers below
     "checkers": {name: result},                  # each result has "valid" + details naming ops/events
     "not_checked": [str],                        # what the verdict does not cover, and why (see below)
     "profile": {"statuses": {kind: status}, "reasons": {...}, "inputs": {...}},
     "malformed": [{"file", "line", "reason"}],   # unusable lines; everything else was still checked
     "pairing_problems": [str]}                   # completions without invocations etc. (first 100)

Checkers run: ``queue`` (``checkers/queue_checker.py``), ``invariants`` (``checkers/invariants``; every
invariant ``unknown`` without a trace), ``linear`` (the linearizability engine in a subprocess, model
``kafka-log`` per key, skipped with ``options["linear"] = False`` or spec ``"linearizability": false``;
started on the file before the history is read, so it searches while the other checkers work, and
killed if ``check_run`` is left early). The invariants checker reuses the queue checker's anomalies
(``checkers.queue.share_anomalies``) instead of analysing the history a second time.
A checker result with ``"counted": false`` (the invariants without a trace; a linearizability failure
the profile allows) is reported but left out of the verdict. Invariants no trace can show (I4, I5, I16 need
log contents: the invariants result's ``not_checkable``) are ``unknown`` in their own entry but never make
the run ``unknown``; ``not_checked`` lists both kinds in plain words (the report shows it).
A checker that raises yields ``unknown`` with the error (``checkers.base.run_checker``), never a crash.
Malformed history lines do not change the verdict by themselves (they are listed); a history with no
usable op at all is ``unknown``.
"""

from __future__ import annotations

import os
from typing import Any

from checkers.base import merge_valid, run_checker
from checkers.history_fast import read_ops
from checkers.queue import forget_anomalies, start_side
from harness.history import iter_json_lines, pair_ops


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


def load_history(path: str | os.PathLike) -> tuple[list[dict], list[dict]]:
    """Read a history, returning (ops, malformed as dicts)."""
    bad: list = []
    ops = read_ops(path, bad)  # iter_history's result, read with orjson (checkers/history_fast.py)
    return ops, [{"file": m.path, "line": m.line, "reason": m.reason} for m in bad]


def default_checkers(spec: dict, trace_given: bool, profile: Any, options: dict, side: Any = None) -> list:
    """The checkers ``check_run`` composes (``side``: the queue checker's ``start_side`` handle)."""
    from checkers.queue_checker import QueueChecker

    checkers: list = [QueueChecker(options.get("queue"), profile, side=side)]
    try:
        from checkers.invariants import InvariantChecker
        checkers.append(InvariantChecker(trace_given=trace_given))
    except ImportError:  # pragma: no cover - the package is part of this repo
        pass
    if linear_wanted(spec, options):
        try:
            from checkers.linear.runner import LinearChecker
            checkers.append(LinearChecker(time_limit_s=options.get("linear_time_limit_s", 60.0)))
        except ImportError:  # pragma: no cover
            pass
    return checkers


def linear_wanted(spec: dict, options: dict) -> bool:
    """Whether the linearizability engine runs (``options["linear"]``, else spec ``linearizability``)."""
    return options.get("linear", spec.get("linearizability", True)) is not False


def not_checked(results: dict[str, dict]) -> list[str]:
    """Plain sentences naming what the verdict does not cover: checkers left out of it (``"counted":
    false``) and invariants the trace cannot show on any run (``not_checkable``), each with the reason."""
    out = []
    for name, res in results.items():
        if res.get("counted", True) is False:
            out.append(f"{name}: not counted in the verdict: {res.get('reason') or 'no reason given'}")
        for inv, why in (res.get("not_checkable") or {}).items():
            out.append(f"{name} {inv}: not checkable, left out of the verdict ({why})")
    return out


def check_run(spec: dict | None, history_path, trace_path=None, profile=None,
              options: dict | None = None) -> dict[str, Any]:
    """Check one run's files; see the module docstring for the result."""
    spec = dict(spec or {})
    options = options or {}
    from checkers.queue import no_gc
    # The history and the analyses are millions of small acyclic objects: a collection while they are alive
    # costs seconds at 1 M ops, so the collector stays off until they are freed (which also brings its
    # allocation count back down, so it does not start over them afterwards); see checkers.queue.no_gc.
    with no_gc():
        # On a large history the queue checker's cycle search runs in a forked child that reads the file
        # itself, started before this process reads it, so both cores work (checkers.queue.start_side);
        # unless the linearizability engine runs, which keeps the second core busy: a second analysis of
        # the history would then only add work (1 M lines: 44-47 s with it, 39-41 s without).
        queue_options = dict(options.get("queue") or {})
        if linear_wanted(spec, options):
            queue_options.setdefault("parallel", False)
        options = {**options, "queue": queue_options}
        side = start_side(history_path, queue_options)
        trace_given = trace_path is not None and os.path.exists(trace_path)
        checkers: list = []
        try:
            checkers = default_checkers(spec, trace_given, profile, options, side)
            for c in checkers:
                if hasattr(c, "start"):  # the linearizability engine reads the file and searches meanwhile
                    c.start(history_path)
            ops, malformed = load_history(history_path)
            traces: list[dict] = []
            if trace_given:
                traces = read_trace(trace_path, malformed)
            _, problems = pair_ops(ops)
            spec.setdefault("_history_path", str(history_path))
            results = {c.name: run_checker(c, spec, ops, traces) for c in checkers}
        finally:
            if side is not None:
                side.cancel()
            for c in checkers:
                if hasattr(c, "cancel"):
                    c.cancel()
            forget_anomalies()
        spec.pop("_history_path", None)
        no_ops = not ops
        del ops, traces
    # A checker that could not run for lack of input (invariants without a trace) is listed, not counted.
    verdicts = [r["valid"] for r in results.values() if r.get("counted", True)]
    if no_ops:
        verdicts.append("unknown")
    queue = results.get("queue", {})
    return {
        "valid": merge_valid(verdicts),
        "checkers": results,
        "not_checked": not_checked(results),
        "profile": queue.get("profile"),
        "malformed": malformed,
        "pairing_problems": problems[:100],
    }
