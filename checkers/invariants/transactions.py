"""The transaction invariants I25 and I26 (docs/protocol-rules.md sections 2.7 and 4), from the transaction
coordinators' and the partition leaders' own trace events.

The history judges transactions from the clients' side (the queue checker: aborted reads, committed
writes never readable); these rules judge what the brokers did, whichever broker did it:

- ``txn_transition``: a transactional id's state record is committed in ``__transaction_state``
  (``from`` -> ``to``, with the producer id and epoch, and the transaction's partitions: for Complete*,
  whose record holds none, the set its markers went to);
- ``txn_marker``: a partition leader appended a COMMIT or ABORT marker (topic, partition, replica, leader
  epoch, producer id and epoch, offset);
- ``producer_batch``: a partition leader appended a batch of an idempotent or transactional producer.

**I25 (TX1, markers)**: a transaction the coordinator completes as CompleteCommit has, on every partition
of its set, a COMMIT marker of its producer id with a producer epoch at least the transaction's, appended
after its PrepareCommit was traced, and none of its partitions got an ABORT marker of that producer in
between; symmetrically for CompleteAbort. Judged when the Complete* is traced: the coordinator writes it
only once every marker is acknowledged, so every marker it waited for is in the trace by then. Markers of
any leader count (a new coordinator re-sends the markers of every Prepare* it loads, to whichever broker
leads then), and so does a marker that was appended but later truncated (the trace shows appends, not
their fate; the log invariants judge that). A transaction still in Prepare* when the trace ends is not
judged: its markers may still come from a successor coordinator. A Complete* whose Prepare* the trace does
not show (a coordinator killed between its write's acknowledgement and the trace line) is not judged
either. The window starts at the Prepare*: the same producer id and epoch commit transaction after
transaction, so an older marker says nothing about this one. The epoch: the coordinator decides an
abort that fences a producer (InitProducerId over an open transaction, or a timeout) with the epoch
bumped, and the markers carry that epoch, which is the Prepare*'s.

**I26 (TX3, fencing)**: within one leadership of a partition (replica and leader epoch), the producer
epochs of one producer id appended, batches and markers alike, never go back: the leader refuses a batch
of an older epoch than the last it appended or saw in a marker (INVALID_PRODUCER_EPOCH), and a marker of
an older epoch too. Across leaderships it is not judged: a new leader learned the epochs from replicated
batches the trace does not show. A duplicate (an idempotent retry) appends nothing and is not traced.

``TxnView`` is the part of ``state.TraceState`` these rules read (moved by ``apply`` only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkers.invariants.events import TXN_MARKER, TXN_TRANSITION, Step
from harness.checked_spec import CheckedSpec

TXN_NEEDS: dict[str, str] = {
    "I25": "txn_transition{transactional_id, producer_id, producer_epoch, to, partitions} (PrepareCommit/Abort, "
           "CompleteCommit/Abort), txn_marker{topic, partition, producer_id, producer_epoch, marker}",
    "I26": "producer_batch / txn_marker{topic, partition, replica, leader_epoch, producer_id, producer_epoch}",
}
PREPARED = {"PrepareCommit": "COMMIT", "PrepareAbort": "ABORT"}
COMPLETED = {"CompleteCommit": "COMMIT", "CompleteAbort": "ABORT"}


def txn_applicable(spec: CheckedSpec) -> bool:
    """Whether the run used transactions (I26 is also judged wherever idempotent producers traced batches)."""
    return spec.txn is True


@dataclass
class Decision:
    """A transaction decided (its Prepare* traced) and not yet completed, with the markers seen since."""

    prepared: dict
    producer_id: Any
    producer_epoch: int
    outcome: str  # COMMIT | ABORT
    partitions: frozenset
    markers: dict = field(default_factory=dict)  # (topic, partition) -> [marker event, ...]


class TxnView:
    """The transactions' part of the trace state (see the module docstring)."""

    def __init__(self) -> None:
        self.decided: dict[Any, Decision] = {}  # transactional id -> its open decision
        # (topic, partition, replica) -> (leader epoch, {producer id: (highest epoch appended, event)})
        self.appended: dict[tuple, tuple[Any, dict[Any, tuple[int, dict]]]] = {}
        self.transitions = 0  # txn_transition events seen: the coordinators traced (see ``quiet``)

    def apply(self, step: Step) -> None:
        """Move the transactions' state by a coordinator's or leader's event (one of ``events.TXN_KINDS``)."""
        ev, kind = step.ev, step.kind
        if kind == TXN_TRANSITION:
            self.transitions += 1
            tid, to = ev.get("transactional_id"), ev.get("to")
            if to in PREPARED and isinstance(ev.get("producer_epoch"), int):
                self.decided[tid] = Decision(ev, ev.get("producer_id"), ev["producer_epoch"], PREPARED[to],
                                             frozenset(tuple(tp) for tp in ev.get("partitions") or ()))
            else:
                self.decided.pop(tid, None)  # completed (judged before), or a state no decision survives
            return
        if kind == TXN_MARKER:
            self._record_marker(ev)
        self._record_append(step)  # a marker or a producer batch

    def _record_marker(self, ev: dict) -> None:
        tp, epoch = (ev.get("topic"), ev.get("partition")), ev.get("producer_epoch")
        if not isinstance(epoch, int):
            return
        for decision in self.decided.values():
            if (decision.producer_id == ev.get("producer_id") and epoch >= decision.producer_epoch
                    and tp in decision.partitions):
                decision.markers.setdefault(tp, []).append(ev)

    def _record_append(self, step: Step) -> None:
        ev = step.ev
        epoch, le = ev.get("producer_epoch"), ev.get("leader_epoch")
        if not isinstance(epoch, int):
            return
        key = (*step.pk, step.replica)
        current = self.appended.get(key)
        if current is None or current[0] != le:
            current = self.appended[key] = (le, {})  # a new leadership: its own order
        last = current[1].get(ev.get("producer_id"))
        if last is None or epoch >= last[0]:
            current[1][ev.get("producer_id")] = (epoch, ev)


def markers_follow_the_decision(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I25: a completed transaction has its outcome's marker on every partition of its set, and no marker of
    the other outcome, since its Prepare* (module docstring)."""
    ev = step.ev
    outcome = COMPLETED.get(ev.get("to"))
    if outcome is None:
        return
    tid = ev.get("transactional_id")
    decision = state.txns.decided.get(tid)
    if (decision is None or decision.outcome != outcome or decision.producer_id != ev.get("producer_id")
            or decision.producer_epoch != ev.get("producer_epoch")):
        # its decision is not in the trace (or another one is): nothing to hold the markers to
        res.notes.setdefault("I25", "no completed transaction whose decision (Prepare*) the trace shows")
        return
    other = "ABORT" if outcome == "COMMIT" else "COMMIT"
    missing, wrong = [], []
    for tp in sorted(decision.partitions, key=str):
        seen = {m.get("marker") for m in decision.markers.get(tp, ())}
        if outcome not in seen:
            missing.append(list(tp))
        if other in seen:
            wrong.append(list(tp))
    if not missing and not wrong:
        res.ok("I25")
        return
    problems = []
    if missing:
        problems.append(f"no {outcome} marker of producer {decision.producer_id} (epoch >= "
                        f"{decision.producer_epoch}) on {missing}")
    if wrong:
        problems.append(f"{other} markers on {wrong}")
    markers = [m for tp in wrong for m in decision.markers.get(tuple(tp), ()) if m.get("marker") == other]
    res.bad("I25", f"transaction {tid} completed as {ev.get('to')} after {decision.prepared.get('to')}, but "
                   + "; ".join(problems), [decision.prepared, *markers[:3], ev])


def epochs_never_go_back(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I26: within one leadership of a partition, a producer id's appended epochs never go back."""
    ev = step.ev
    epoch = ev.get("producer_epoch")
    if not isinstance(epoch, int) or step.pk is None:
        return
    current = state.txns.appended.get((*step.pk, step.replica))
    last = None
    if current is not None and current[0] == ev.get("leader_epoch"):
        last = current[1].get(ev.get("producer_id"))
    if last is not None and epoch < last[0]:
        what = "marker" if step.kind == TXN_MARKER else "batch"
        res.bad("I26", f"{step.pk[0]}-{step.pk[1]}: leader {step.replica} (leader epoch {ev.get('leader_epoch')}) "
                       f"appended a {what} of producer {ev.get('producer_id')} at epoch {epoch} after epoch "
                       f"{last[0]}", [last[1], ev])
    else:
        res.ok("I26")
