"""Checking a simulated run: the checkers' own invariant definitions, fed as the run goes.

Trace invariants (I1-I3, I8-I13) are evaluated by ``checkers.invariants.TraceSweep``, one event at a time,
so a violation is seen at the step that caused it. The history invariants (I6, I7, I14, I15) need the
client ops and the final reads: they run once, at the end (``TraceSweep.verdict``). Besides these, the
protocol core's own consistency checks are called: ``PartitionReplica.check_invariants`` (I10, the local
half of I3) on every replica a step changed, ``Controller.invariant_violations`` (I9, K1) after every
commit, and any ``InvariantViolation`` the core raises (a log gap, an epoch regression) ends the run as a
finding too. Nothing here restates a rule.

With idempotent producers (spec ``idempotence``, ``SimOptions.idempotent``) the queue checker's
``duplicate`` anomaly (a value seen at two offsets of a key) is a finding too, as the guarantee profile
forbids it then; it is left out only where the loss invariants are (the run's loss status ``allowed``: a
read record lost with a log suffix and written again by a retry shows at two offsets). Plain producers may
duplicate (a resent request is appended twice), so without the option it is not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from checkers.invariants import LOSS_INVARIANTS, NEEDS, TraceSweep
from checkers.queue.checker import find_anomalies
from checkers.queue.profiles import derive_profile


@dataclass(frozen=True)
class Finding:
    """A rule broken during a simulated run: which, how (the checker's words), where (step, time)."""

    rule: str
    detail: str
    step: int
    time_ms: int
    events: list[dict[str, Any]] = field(default_factory=list, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (stored in the schedule file)."""
        return {"rule": self.rule, "detail": self.detail, "step": self.step, "time_ms": self.time_ms}


class Monitor:
    """Feeds trace events to the invariant sweep and reports the first violation."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.sweep = TraceSweep(spec)
        self._counted: dict[str, int] = {}  # violations per invariant already looked at
        self._total = 0

    def feed(self, event: dict[str, Any]) -> bool:
        """One trace event, in order; False for a later voter's copy of a controller record (checked against
        the first copy, I20, and otherwise ignored). A K7 recovery is counted for the guarantee profile."""
        if event.get("kind") == "unclean_recovery":
            spec = self.sweep.spec
            self.sweep.spec = replace(spec, unclean_recoveries=spec.unclean_recoveries + 1)
        return self.sweep.feed(event)

    def new_violation(self, step: int, time_ms: int, ops: list[dict[str, Any]] = ()) -> Finding | None:
        """The violation the events since the last call showed, if any (the first, by invariant order).
        ``ops``: the history so far; a loss invariant broken while the run's guarantee profile allows
        data loss (KIP-966 beyond its tolerance, K6) is not a finding, as in a real run's verdict."""
        res = self.sweep.res
        total = self.sweep.violations
        if total == self._total:
            return None  # nothing new: the common case, checked after every step
        self._total = total
        counts = dict(res.counts)
        new = [i for i in NEEDS if counts.get(i, 0) > self._counted.get(i, 0)]
        if not new:
            return None
        self._counted = counts
        if all(i in LOSS_INVARIANTS for i in new) and self.loss_status(ops) == "allowed":
            return None
        inv = new[0]
        last = res.violations[inv][-1]
        return Finding(inv, last["detail"], step, time_ms, last["events"])

    def loss_status(self, ops: list[dict[str, Any]]) -> str:
        """The run's loss status so far (``checkers.queue.profiles``: the lossy crashes and restarts recorded in
        the history as nemesis ops say whether MinISR replicas of a partition lost writes at once)."""
        has_final = any(op.get("final") is True for op in ops)
        return derive_profile(self.sweep.spec, list(ops), has_final)["statuses"]["lost-write"]

    def history_finding(self, ops: list[dict[str, Any]], step: int, time_ms: int) -> Finding | None:
        """The history invariants over the client ops (call once, at the end of the run); violations the
        guarantee profile allows are not findings."""
        loss = self.loss_status(ops)
        queue = find_anomalies(self.sweep.spec, list(ops), {"cycles": False}) if self.sweep.spec.idempotence else None
        verdict = self.sweep.verdict(ops, loss_status=loss, queue=queue)
        for inv in verdict["violated"]:
            entry = verdict["invariants"][inv]
            if entry.get("status") == "allowed":
                continue
            first = entry["violations"][0]
            return Finding(inv, first["detail"], step, time_ms, first.get("events", []))
        if queue is not None and queue.anomalies["duplicate"] and loss != "allowed":
            first = queue.anomalies["duplicate"][0]
            return Finding("duplicate", f"idempotent producer's value {first['value']} of key {first['key']} at "
                                        f"offsets {first['offsets']}", step, time_ms)
        return None
