"""The queue checker: queue anomalies judged against the run's guarantee profile.

``unseen`` uses a recovery deadline (``recovery_deadline``): reads completed after it do not count.

Verdict: ``False`` when a ``forbidden`` anomaly occurred; else ``"unknown"`` when an anomaly whose status
is ``unknown`` occurred (``unseen`` without a final phase; ``acked-unreadable`` or ``unseen`` rows of
a partition no final read reached) or when the history gave nothing to check (no
ok op that sends or reads: ``"checked": false``); else ``True``. Known issues, allowed and expected
anomalies are listed with the ops that show them but do not invalidate the run. A G1c or G1c-realtime
cycle without a ww edge is forbidden whatever its kind's status (``checkers/queue/profiles.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checkers.forked import Forked
from checkers.queue.anomalies import KINDS, anomalies_of
from checkers.queue.cycles import without_ww
from checkers.queue.keys import QueueAnalysis, unreached_keys
from checkers.queue.profiles import WR_ONLY_RULE, apply_override, derive_profile
from harness.checked_spec import CheckedSpec

EXAMPLES = 20  # per kind in results.json; the counts are exact


@dataclass(frozen=True)
class QueueFindings:
    """One history's queue analysis and the anomalies found in it: computed once per check and passed to
    every checker that reads them (the queue checker, the invariants checker)."""

    analysis: QueueAnalysis
    anomalies: dict[str, list[dict]]

    @property
    def options(self) -> dict:
        """The options the anomalies were computed with (the recovery deadline filled in)."""
        return self.analysis.options


def find_anomalies(spec: CheckedSpec | Mapping | None, history: list[dict], options: dict | None = None,
                   side: Forked | None = None) -> QueueFindings:
    """Analyse ``history`` and find its queue anomalies with the queue checker's ``options``, the recovery
    deadline taken from ``spec`` unless the options give one. ``side``: a ``checkers.queue.start_side``
    handle computing part of the kinds for this history and options in another process."""
    options = dict(options or {})
    if "unseen_deadline_ns" not in options:
        options["unseen_deadline_ns"] = recovery_deadline(spec, history)
    a = QueueAnalysis(history, options)
    return QueueFindings(a, anomalies_of(a, side))


class QueueChecker:
    """Checker protocol wrapper around ``find_anomalies`` + ``derive_profile``."""

    name = "queue"

    def __init__(self, options: dict | None = None, profile: str | dict | None = None,
                 findings: QueueFindings | None = None):
        """``findings``: this history's ``find_anomalies`` with these options, when the caller has them
        already (``check_run`` shares one with the invariants checker); else ``check`` computes them."""
        self.options = options or {}
        self.profile_override = profile
        self.findings = findings

    def check(self, spec: CheckedSpec | Mapping | None, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Run every queue check and classify what was found."""
        spec = CheckedSpec.of(spec)
        found = self.findings or find_anomalies(spec, history, self.options)
        a = found.analysis
        features = {"transactions": any(r.txn for r in a.recs),
                    "subscribe": any(r.f == "subscribe" for r in a.recs)}
        profile = apply_override(derive_profile(spec, history, a.has_final, features), self.profile_override)
        result = judge(found.anomalies, profile, a)
        result["unseen_deadline_ns"] = found.options["unseen_deadline_ns"]
        return result


def recovery_deadline(spec: CheckedSpec | Mapping | None, history: list[dict]) -> int | None:
    """The recovery deadline for ``unseen`` (history time, ns) of ``history`` (``unseen_deadline``)."""
    first_final = next((op["time"] for op in history if op.get("final") is True and op.get("type") == "invoke"),
                       None)
    return unseen_deadline(spec, first_final)


def unseen_deadline(spec: CheckedSpec | Mapping | None, final_invoke_time: int | None) -> int | None:
    """The rule: spec ``unseen_deadline_ns`` if given, else the invocation of the first final op + spec
    ``final_read_timeout_s``; None (no limit) otherwise. Spark applies it to the time it computes.

    A value that no ok read returned by this deadline is unseen: after the faults are healed the cluster
    has this long to make every acknowledged write visible again."""
    spec = CheckedSpec.of(spec)
    if spec.unseen_deadline_ns is not None:
        return int(spec.unseen_deadline_ns)
    if spec.final_read_timeout_s is None or final_invoke_time is None:
        return None
    return int(final_invoke_time + float(spec.final_read_timeout_s) * 1e9)


WR_ONLY_KINDS = ("G1c", "G1c-realtime")
FINAL_KINDS = ("acked-unreadable", "unseen")  # judged by what the final phase read
NOTHING_CHECKED = "nothing to check: no ok op sent or read anything"
NOT_A_QUEUE_HISTORY = "no send, poll or txn op: nothing for the queue checker"


def something_checked(a: QueueAnalysis) -> bool:
    """Whether the history gave the checks anything to look at: an ok op that sent something or read at
    least one record. Without one every check passes vacuously, which proves nothing."""
    return any(r.type == "ok" and (r.sends or any(r.reads.values())) for r in a.recs)


def reads_uncommitted(profile: dict) -> bool:
    """A transactional run whose consumers read at read_uncommitted: they may read an open transaction's
    write, so a cycle of wr edges alone is no longer impossible (the profile then allows it)."""
    return (profile.get("inputs") or {}).get("isolation_level") == "read_uncommitted"


def judge(found: dict[str, list[dict]], profile: dict, a: QueueAnalysis | None = None) -> dict[str, Any]:
    """Turn anomalies + profile into a checker result."""
    statuses, reasons = profile["statuses"], profile["reasons"]
    anomalies: dict[str, Any] = {}
    by_status: dict[str, list[str]] = {"forbidden": [], "allowed": [], "known-issue": [], "expected": [],
                                       "unknown": []}
    unreached = set(unreached_keys(found.get("acked-unreadable") or []))
    for kind in KINDS:
        rows = found.get(kind) or []
        if not rows:
            continue
        status, reason = statuses.get(kind, "forbidden"), reasons.get(kind)
        entry: dict[str, Any] = {}
        if kind in FINAL_KINDS and unreached:
            n = sum(1 for row in rows if row["key"] in unreached)
            if n == len(rows):
                status, reason = "unknown", (
                    f"no final read reached partition(s) {sorted(unreached)}: their acknowledged writes may "
                    "still exist on a replica (e.g. a leaderless KIP-966 partition, K10), so they are not lost")
            elif n:
                entry["unreached"] = n
        if kind in WR_ONLY_KINDS and not reads_uncommitted(profile):
            wr_only = [row for row in rows if without_ww(row)]
            if wr_only:
                status, reason = "forbidden", WR_ONLY_RULE
                rows = wr_only + [row for row in rows if not without_ww(row)]
                entry["without_ww"] = len(wr_only)
        by_status[status].append(kind)
        anomalies[kind] = {"count": len(rows), "status": status, "reason": reason,
                           "examples": rows[:EXAMPLES], **entry}
    expected_missing = [k for k in KINDS if statuses.get(k) == "expected" and not found.get(k)]
    checked = a is None or something_checked(a)
    if by_status["forbidden"]:
        valid: Any = False
    elif by_status["unknown"] or not checked:
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
    if not checked:
        result["checked"] = False
        result["reason"] = NOTHING_CHECKED
        if not any(r.assign is None for r in a.recs):  # no send, poll or txn op: not a queue history
            result["counted"] = False
            result["reason"] = NOT_A_QUEUE_HISTORY
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
