"""The queue checker: queue anomalies judged against the run's guarantee profile.

``unseen`` uses a recovery deadline (``recovery_deadline``): reads completed after it do not count.

Verdict: ``False`` when a ``forbidden`` anomaly occurred; else ``"unknown"`` when an anomaly whose status
is ``unknown`` occurred (``unseen`` without a final phase); else ``True``. Known issues, allowed and
expected anomalies are listed with the ops that show them but do not invalidate the run.
"""

from __future__ import annotations

from typing import Any

from checkers.profiles import apply_override, derive_profile
from checkers.queue import KINDS, QueueAnalysis, anomalies_of, no_gc, share_anomalies, start_side

EXAMPLES = 20  # per kind in results.json; the counts are exact


class QueueChecker:
    """Checker protocol wrapper around ``queue_anomalies`` + ``derive_profile``."""

    name = "queue"

    def __init__(self, options: dict | None = None, profile: str | dict | None = None, side: Any = None):
        self.options = options or {}
        self.profile_override = profile
        # A ``checkers.queue.start_side`` handle started on this history's file before it was read (by
        # ``check_run``); without one, ``check`` starts its own over the history in memory when it is large.
        self.side = side

    def check(self, spec: dict, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Run every queue check and classify what was found."""
        spec = spec or {}
        options = dict(self.options)
        if "unseen_deadline_ns" not in options:
            options["unseen_deadline_ns"] = recovery_deadline(spec, history)
        # The collector stays off until the analysis is freed: freeing it brings the allocation count back
        # down, so re-enabling does not start a collection over millions of short-lived objects (seconds
        # at 1 M ops).
        with no_gc():
            side, self.side = self.side or start_side(history, options), None
            a = QueueAnalysis(history, options)
            found = anomalies_of(a, side)
            share_anomalies(history, found)  # the invariants checker reads some of them
            profile = apply_override(derive_profile(spec, history, a.has_final), self.profile_override)
            result = judge(found, profile, a)
            del a
        result["unseen_deadline_ns"] = options["unseen_deadline_ns"]
        return result


def recovery_deadline(spec: dict, history: list[dict]) -> int | None:
    """The recovery deadline for ``unseen`` (history time, ns): spec ``unseen_deadline_ns`` if given, else
    the invocation of the first final op + spec ``final_read_timeout_s``; None (no limit) otherwise.

    A value that no ok read returned by this deadline is unseen: after the faults are healed the cluster
    has this long to make every acknowledged write visible again."""
    if spec.get("unseen_deadline_ns") is not None:
        return int(spec["unseen_deadline_ns"])
    timeout = spec.get("final_read_timeout_s")
    if timeout is None:
        return None
    for op in history:
        if op.get("final") is True and op.get("type") == "invoke":
            return int(op["time"] + float(timeout) * 1e9)
    return None


def judge(found: dict[str, list[dict]], profile: dict, a: QueueAnalysis | None = None) -> dict[str, Any]:
    """Turn anomalies + profile into a checker result."""
    statuses, reasons = profile["statuses"], profile["reasons"]
    anomalies: dict[str, Any] = {}
    by_status: dict[str, list[str]] = {"forbidden": [], "allowed": [], "known-issue": [], "expected": [],
                                       "unknown": []}
    for kind in KINDS:
        rows = found.get(kind) or []
        if not rows:
            continue
        status = statuses.get(kind, "forbidden")
        by_status[status].append(kind)
        anomalies[kind] = {"count": len(rows), "status": status, "reason": reasons.get(kind),
                           "examples": rows[:EXAMPLES]}
    expected_missing = [k for k in KINDS if statuses.get(k) == "expected" and not found.get(k)]
    if by_status["forbidden"]:
        valid: Any = False
    elif by_status["unknown"]:
        valid = "unknown"
    else:
        valid = True
    result: dict[str, Any] = {
        "valid": valid,
        "anomaly_types": [k for k in KINDS if found.get(k)],
        "violations": by_status["forbidden"],
        "known_issues": by_status["known-issue"],
        "allowed": by_status["allowed"],
        "expected": by_status["expected"],
        "undecided": by_status["unknown"],
        "expected_missing": expected_missing,
        "anomalies": anomalies,
        "profile": profile,
    }
    if a is not None:
        recs = a.recs
        sends = {"ok": 0, "info": 0, "fail": 0}
        ok_polls = 0
        for r in recs:  # one pass (1 M-op histories)
            if r.sends and r.type in sends:
                sends[r.type] += 1
            if r.reads and r.type == "ok" and r.f in ("poll", "txn"):
                ok_polls += 1
        result["stats"] = {
            "client_ops": len(recs),
            "ok_sends": sends["ok"],
            "info_sends": sends["info"],
            "fail_sends": sends["fail"],
            "ok_polls": ok_polls,
            "keys": len(a.vo.offsets),
            "final_phase": a.has_final,
        }
    return result
