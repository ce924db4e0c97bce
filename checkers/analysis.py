"""``check_run``: every checker over one run's files, composed into the content of ``results.json``.

Used by the harness after a run, by ``kraftcheck analyze STORE_DIR`` and by ``kraftcheck check``::

    check_run(spec: dict, history_path, trace_path | None, profile=None) -> dict

``spec`` is the run's ``spec.json`` content (``{}`` for a bare history; the keys read are listed in
``checkers/queue/profiles.py``); ``history_path`` a ``history.jsonl``, or a Jepsen ``history.edn``
(recognised by its extension or its first characters, read by ``checkers.history.edn``; its
linearizability check runs on the ops converted, after the read); ``trace_path`` a ``trace.jsonl`` or None;
``profile`` the ``--profile`` override (``None``/"auto", "strict", "jepsen", "kind=status,...", or a dict).
Returns::

    {"valid": True | False | "unknown",          # false > unknown > true over the checkers below
     "verdict": "valid" | "invalid" | "unknown",  # the same in words (harness.verdict.decide)
     "reasons": [str],                            # why it is not valid: checkers, notes
     "harness_notes": [str],                      # only when the history has no client op
     "checkers": {name: result},                  # each result has "valid" + details naming ops/events
     "not_checked": [str],                        # what the verdict does not cover, and why (see below)
     "profile": {"statuses": {kind: status}, "reasons": {...}, "inputs": {...}},
     "malformed": [{"file", "line", "reason"}],   # unusable lines; everything else was still checked
     "pairing_problems": [str]}                   # completions without invocations etc. (first 100)

Checkers run: ``queue`` (``checkers/queue/checker.py``), ``invariants`` (``checkers/invariants``; every
invariant ``unknown`` without a trace), ``linear`` (the linearizability engine in a subprocess, model
``kafka-log`` per key, skipped with ``options["linear"] = False`` or spec ``"linearizability": false``;
started on the file before the history is read, so it searches while the other checkers work, and
killed if ``check_run`` is left early), ``groups`` (``checkers/groups``: the consumer-group checks, only
when the history has group ops), ``recovery`` (``checkers/recovery.py``: once every fault is
healed, a final read must complete). The history is analysed once: ``check_run`` finds its queue
anomalies (``checkers.queue.checker.find_anomalies``) and passes the same findings to the queue checker
and the invariants checker. Each checker stays a function of (spec, history, traces) and computes what
it is not given, so it can run alone; nothing is kept between calls.

The tricks that only make a large check faster live here, not in the checkers: the cyclic garbage
collector is paused while the history and its analysis are alive (``checkers.queue.no_gc``); the
linearizability engine is launched before the read; and, when that engine is off, on a large history the
queue checker's cycle search runs in a child forked before the read (``checkers.parallel.start_side``).
A checker result with ``"counted": false`` (the invariants without a trace; a linearizability failure
the profile allows) is reported but left out of the verdict. Invariants no trace can show (the invariants result's
``not_checkable``; none since replicas trace their log contents) are ``unknown`` in their own entry but
never make the run ``unknown``; ``not_checked`` lists both kinds in plain words (the report shows it).
A checker that raises yields ``unknown`` with the error (``checkers.base.run_checker``), never a crash.
Malformed history lines do not change the verdict by themselves (they are listed); a history with no
client op is ``unknown``, with a note saying so. The run's final verdict (fault coverage and the
harness's own notes added) is decided by the same function, ``harness.verdict.decide``.

Nothing checked is not valid: a checker result with ``"checked": false`` looked at nothing (the queue
checker without an ok op that sends or reads; the linearizability engine without an operation of its
model). When no counted checker checked anything the verdict is ``unknown`` and ``not_checked`` says so;
a history without any queue op leaves the queue checker out of the verdict (a register history is the
engine's alone).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from checkers.base import run_checker
from checkers.groups import GroupChecker, has_group_ops
from checkers.history.edn import sniff_format
from checkers.history.load import load_history, read_trace
from checkers.invariants import InvariantChecker
from checkers.linear.runner import LinearChecker
from checkers.parallel import start_side
from checkers.queue import no_gc
from checkers.queue.checker import QueueChecker, QueueFindings, find_anomalies
from checkers.recovery import RecoveryChecker
from harness.checked_spec import CheckedSpec
from harness.history import pair_ops
from harness.verdict import NO_CLIENT_OPS, decide, record


def default_checkers(spec: CheckedSpec, trace_given: bool, profile: Any, options: dict,
                     findings: QueueFindings | None = None, linear: LinearChecker | None = None,
                     groups: bool = False) -> list:
    """The checkers ``check_run`` composes. ``findings``: the history's queue findings, made with
    ``options["queue"]``, given to every checker that reads them; ``linear``: the linearizability checker
    (already started) when the engine runs; ``groups``: the history has consumer-group ops (then the
    group checks run beside the queue checks)."""
    checkers: list = [QueueChecker(options.get("queue"), profile, findings)]
    if groups:
        checkers.append(GroupChecker())
    untraced = untraced_system(spec)
    checkers.append(NotApplicable("invariants", untraced) if untraced else
                    InvariantChecker(trace_given=trace_given, queue=findings))
    checkers.append(RecoveryChecker())
    if linear is not None:
        checkers.append(linear)
    return checkers


def untraced_system(spec: CheckedSpec) -> str | None:
    """Why the protocol invariants do not apply to a run: its system under test emits no kraftcheck trace
    (``sut_facts`` in its spec); None when they apply."""
    facts = spec.sut_facts
    if facts is not None and facts.get("traces") is False:
        return (f"not applicable: {facts.get('name', 'the system under test')} emits no kraftcheck trace, so the "
                "protocol invariants I1-I16 cannot be observed; the verdict rests on the client-visible checks")
    return None


class NotApplicable:
    """A checker that does not apply to this run: reported with its reason, never counted."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason

    def check(self, spec: dict, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """The not-applicable result."""
        return {"valid": None, "applicable": False, "checked": False, "counted": False, "reason": self.reason}


def shared_findings(spec: CheckedSpec, ops: list[dict], queue_options: dict, side: Any) -> QueueFindings | None:
    """The queue findings ``check_run`` passes to its checkers; None when finding them raised, and each
    checker then computes them itself and reports the error as its own ``unknown`` result."""
    try:
        return find_anomalies(spec, ops, queue_options, side)
    except Exception:  # reported by the checkers that need the findings (checkers.base.run_checker)
        return None


def linear_wanted(spec: CheckedSpec, options: dict) -> bool:
    """Whether the linearizability engine runs (``options["linear"]``, else spec ``linearizability``). Not
    for a transactional run read at read_uncommitted: its consumers see aborted and open transactions'
    records, which no linearizable log of committed writes holds."""
    if spec.txn and spec.isolation_level == "read_uncommitted":
        return False
    return options.get("linear", spec.linearizability) is not False


NOTHING_CHECKED = "the history gave no checker anything to look at: the verdict is unknown, not valid"


def nothing_checked(results: dict[str, dict]) -> bool:
    """Whether no counted checker looked at anything (each result's ``checked``, default true)."""
    return not any(r.get("checked", True) for r in results.values() if r.get("counted", True))


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


def check_run(spec: CheckedSpec | Mapping | None, history_path, trace_path=None, profile=None,
              options: dict | None = None) -> dict[str, Any]:
    """Check one run's files; see the module docstring for the result."""
    spec = CheckedSpec.of(spec)
    options = options or {}
    # On a large history the queue checker's cycle search runs in a forked child that reads the file
    # itself, started before this process reads it, so both cores work; unless the linearizability engine
    # runs, which keeps the second core busy: a second analysis would then only add work.
    queue_options = dict(options.get("queue") or {})
    fmt = sniff_format(history_path)
    linear = None
    if linear_wanted(spec, options):
        queue_options.setdefault("parallel", False)
        history_file = history_path if fmt == "jsonl" else None
        linear = LinearChecker(time_limit_s=options.get("linear_time_limit_s", 60.0), history_path=history_file)
    options = {**options, "queue": queue_options}
    trace_given = trace_path is not None and os.path.exists(trace_path)
    # The history and the analyses are millions of small acyclic objects: a collection while they are alive
    # costs seconds at 1 M ops, so the collector stays off until they are freed (which also brings its
    # allocation count back down, so it does not start over them afterwards).
    with no_gc():
        # The side process and the engine read the file themselves, as JSONL; an EDN history is read here
        # and the engine gets the converted ops (LinearChecker.check writes them to a temporary file).
        side = start_side(history_path, queue_options) if fmt == "jsonl" else None
        findings = None
        checkers: list = []
        try:
            if linear is not None and fmt == "jsonl":
                linear.start()  # the engine reads the file and searches while this process works
            ops, malformed = load_history(history_path, fmt)
            traces: list[dict] = read_trace(trace_path, malformed) if trace_given else []
            spec = spec.observed(traces)  # K7 recoveries the trace shows: the profile reads them
            _, problems = pair_ops(ops)
            findings = shared_findings(spec, ops, queue_options, side)
            checkers = default_checkers(spec, trace_given, profile, options, findings, linear,
                                        groups=has_group_ops(ops))
            results = {c.name: run_checker(c, spec, ops, traces) for c in checkers}
        finally:
            if side is not None:
                side.cancel()
            if linear is not None:
                linear.cancel()
        no_client_ops = not any(op.get("process") != "nemesis" for op in ops)
        del ops, traces, findings, checkers
    # A checker that could not run for lack of input (invariants without a trace) is listed, not counted.
    unchecked = nothing_checked(results)
    notes = [NO_CLIENT_OPS] if no_client_ops else []
    if unchecked and not no_client_ops:
        notes.append(NOTHING_CHECKED)
    verdict = decide(results, notes=notes)
    queue = results.get("queue", {})
    return record({
        "valid": verdict.valid,  # first in results.json; record() fills in the rest of the verdict
        "checkers": results,
        "not_checked": not_checked(results) + ([NOTHING_CHECKED] if unchecked else []),
        "profile": queue.get("profile"),
        "malformed": malformed,
        "pairing_problems": problems[:100],
    }, verdict)
