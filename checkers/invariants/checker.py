"""The invariant checks I1-I26 (see the package docstring): the sweep that feeds each trace event to the
state and to the rules that read its kind, and the verdict over the sweep and the history."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkers.invariants.consumer_groups import GROUP_NEEDS, groups_applicable
from checkers.invariants.events import CONTROLLER_COPY, END, Step, classify
from checkers.invariants.history_checks import check_history
from checkers.invariants.quorum import QUORUM_NEEDS, quorum_applicable
from checkers.invariants.results import Results
from checkers.invariants.rules import RULES
from checkers.invariants.state import TraceState
from checkers.invariants.transactions import TXN_NEEDS, txn_applicable
from checkers.queue.checker import QueueFindings
from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec

# What each invariant reads (docs/protocol-rules.md section 4, "Checked from"), as event kinds/attributes.
NEEDS: dict[str, str] = {
    "I1": "leader_epoch_start{replica, leo}, hwm{replica, role=leader, hwm}",
    "I2": "controller metadata_applied{isr, elr}, leo{replica, leo}|truncate{to_offset}, hwm{role=leader}",
    "I3": "controller metadata_applied{leader, leader_epoch, isr}, role, isr_proposed{maximal_isr}|isr_updated",
    "I4": "log_summary{replica, hwm, hwm_digest, ranges} at truncations, clean stops and log recovery",
    "I5": "replica metadata_applied{partition_epoch, isr, leader, ...} vs controller metadata_applied; "
          "metadata_offset{broker, offset} vs controller record offsets",
    "I6": "history: ok sends and final-phase polls (final: true)",
    "I7": "history: consumer reads (offset -> value)",
    "I8": "controller metadata_applied{isr, elr, last_known_elr}; spec min_isr; variant kip966",
    "I9": "controller metadata_applied{isr, replicas, elr, last_known_elr}, controller fenced/unfenced/registered",
    "I10": "role{replica, role, leader} (the rest needs replica internals, not in the trace)",
    "I11": "controller metadata_applied{leader, leader_epoch, partition_epoch}, controller registered{broker_epoch}, replica metadata_applied",
    "I12": "hwm{replica, role, leader_epoch, hwm}, leo{replica, leo}, leader_epoch_start{hwm, leo}",
    "I13": "controller registered{broker, broker_epoch, previous_broker_epoch}, leo{replica}, controller metadata_applied, hwm",
    "I14": "history: ok sends with offsets; hwm{role=leader} (key k = partition k of the run's topic)",
    "I15": "history: sends and polls; hwm{role=leader} for reads above the True HWM",
    "I16": "log_summary{replica, ranges: [epoch, start, end, range digest, prefix digest]}",
    **QUORUM_NEEDS,  # I17-I22: the controller quorum (checkers.invariants.quorum)
    **GROUP_NEEDS,  # I23-I24: the group coordinators (checkers.invariants.consumer_groups)
    **TXN_NEEDS,  # I25-I26: transaction coordinators and partition leaders (checkers.invariants.transactions)
}
# Invariants no trace can show (reported as "not observable" and left out of the verdict): none left.
NOT_COVERED: dict[str, str] = {}
# I23-I25 judge coordinators whose state is a log: where committed data may be lost, a coordinator may
# lose a generation or a decision and, correctly, hand out or decide again (docs/protocol-rules.md 4).
LOSS_INVARIANTS = ("I1", "I2", "I4", "I6", "I7", "I13", "I15", "I23", "I24", "I25")
# The invariants of a feature a run may not use, with the test of its spec: without the feature, and with
# nothing the rule could judge, the invariant does not apply (rather than being unknown).
FEATURES = {**dict.fromkeys(GROUP_NEEDS, (groups_applicable, "a run without consumer groups (sub_via)")),
            **dict.fromkeys(TXN_NEEDS, (txn_applicable, "a run without transactions (txn)"))}


def _by_kind(before: bool) -> dict[str, tuple[tuple[str, Any], ...]]:
    """Event kind -> (invariant, judge) of the rules that read it, in invariant order."""
    out: dict[str, list] = {}
    for inv, rule in RULES.items():
        if rule.before == before:
            for kind in rule.reads:
                out.setdefault(kind, []).append((inv, rule.judge))
    return {kind: tuple(rules) for kind, rules in out.items()}


_BEFORE, _AFTER = _by_kind(True), _by_kind(False)


class TraceSweep:
    """The trace checks as a sweep fed one event at a time, in time order: ``check_invariants`` feeds a
    whole trace, the deterministic simulator feeds each step's events and reads ``violations`` after it.

    Each event is classified (``events.classify``), judged by the rules that read its kind on the state
    as it finds it, applied to the state (``state.TraceState.apply``), then judged by the rules that read
    the state it leaves."""

    def __init__(self, spec: CheckedSpec | Mapping | None = None) -> None:
        self.spec = CheckedSpec.of(spec)
        self.res = Results()
        self.events = 0
        self.state = TraceState(self.spec)
        memory = {inv: rule.memory() for inv, rule in RULES.items() if rule.memory is not None}
        # kind -> (rules judged before the event is applied, rules judged after), with their memories
        self._rules = {kind: tuple(tuple((judge, memory.get(inv)) for inv, judge in table.get(kind, ()))
                                   for table in (_BEFORE, _AFTER))
                       for kind in _BEFORE.keys() | _AFTER.keys()}

    @property
    def violations(self) -> int:
        """How many violations (of any invariant) the events fed so far showed."""
        return sum(self.res.counts.values())

    def feed(self, ev: dict) -> bool:
        """Take the next trace event: judge it, apply it, judge the state it leaves. False when it was
        another voter's copy of a controller record already taken (judged by I20 against the first copy,
        and nothing else: the rest of the checks see each record once)."""
        self.events += 1
        step = classify(ev)
        if step is None:
            return True
        copy = step.ctl and self.state.quorum.is_copy(ev)
        if copy:
            step = Step(ev, CONTROLLER_COPY, True, step.pk, step.replica)
        rules = self._rules.get(step.kind)
        if rules is None:
            self.state.apply(step)
            return not copy
        state, res = self.state, self.res
        before, after = rules
        for judge, memory in before:
            judge(state, step, res, memory)
        state.apply(step)
        for judge, memory in after:
            judge(state, step, res, memory)
        return not copy

    def verdict(self, ops: list[dict] = (), trace_given: bool = True, loss_status: str = "forbidden",
                queue: QueueFindings | None = None) -> dict[str, Any]:
        """The ``check_invariants`` result for the events fed so far and the history ``ops`` (the history
        checks add to the sweep's results, so ask once, at the end); ``queue``: the queue checker's
        findings for ``ops`` when the caller has them (else the history is analysed here)."""
        end = Step({}, END, False, None, None)
        for judge, memory in sum(self._rules.get(END, ((), ())), ()):
            judge(self.state, end, self.res, memory)
        _note_quiet_coordinators(self.state, self.res)
        return _verdict(self.res, self.state.parts, self.spec, list(ops), self.events, trace_given,
                        loss_status, queue)


def _note_quiet_coordinators(state: Any, res: Results) -> None:
    """I23-I25 with nothing to judge although the coordinators traced: a run whose group formed but never
    had a commit accepted, or whose coordinators wrote state records but completed no transaction, is not
    missing events; those rules held vacuously. Without any such event the tracing itself is in doubt (an
    older trace), and the rules stay unknown; so do rules that noted why they could not judge (an
    undecodable assignment, a decision the trace leaves open)."""
    generations, transitions = len(state.groups.generations), state.txns.transitions
    quiet = {}
    if generations:
        quiet["I23"] = f"no offset commit was accepted (the group coordinator traced {generations} generations)"
        quiet["I24"] = f"no assignment was handed out (the group coordinator traced {generations} generations)"
    if transitions:
        quiet["I25"] = f"no transaction completed (the transaction coordinators traced {transitions} state records)"
    res.vacuous.update({inv: why for inv, why in quiet.items() if inv not in res.notes})

def check_invariants(spec: CheckedSpec | Mapping | None, ops: list[dict], traces: list[dict], trace_given: bool = True,
                     loss_status: str = "forbidden", queue: QueueFindings | None = None) -> dict[str, Any]:
    """Evaluate every invariant; see the package docstring for the verdict rules. ``queue``: the queue
    checker's findings for ``ops`` when the caller has them (else the history is analysed here)."""
    sweep = TraceSweep(spec)
    for ev in traces:
        sweep.feed(ev)
    return sweep.verdict(ops, trace_given, loss_status, queue)


def _verdict(res: Results, parts: dict, spec: CheckedSpec, ops: list[dict], n_events: int, trace_given: bool,
             loss_status: str, queue: QueueFindings | None = None) -> dict[str, Any]:
    check_history(ops, spec, parts, res, trace_given and bool(n_events), queue)
    out: dict[str, Any] = {}
    for inv in NEEDS:
        entry: dict[str, Any] = {"needs": NEEDS[inv]}
        if inv in NOT_COVERED:
            entry.update(valid="unknown", covered=False, reason="not observable: " + NOT_COVERED[inv])
        elif inv == "I8" and spec.variant == "v3.5":
            entry.update(valid=True, applicable=False, reason="KIP-966 only")
        elif inv in QUORUM_NEEDS and not quorum_applicable(spec) and not res.counts.get(inv):
            entry.update(valid=True, applicable=False, reason="a run without a controller quorum in its spec")
        elif inv in FEATURES and not res.evaluated.get(inv) and not FEATURES[inv][0](spec):
            entry.update(valid=True, applicable=False, reason=FEATURES[inv][1])
        elif res.counts.get(inv):
            entry.update(valid=False, count=res.counts[inv], violations=res.violations[inv])
        elif res.evaluated.get(inv):
            entry.update(valid=True, evaluated=res.evaluated[inv])
        elif inv in res.vacuous:
            entry.update(valid=True, evaluated=0, reason=res.vacuous[inv])
        else:
            why = res.notes.get(inv) or ("no trace given" if not n_events and inv not in ("I6", "I7", "I15")
                                         else "the events it needs are absent")
            entry.update(valid="unknown", reason=why)
        if inv in LOSS_INVARIANTS and entry["valid"] is False and loss_status != "forbidden":
            entry["status"] = loss_status
        elif entry["valid"] is False:
            entry["status"] = "forbidden"
        out[inv] = entry
    counted = [e for e in out.values() if e.get("covered", True)]
    if any(e["valid"] is False and e["status"] == "forbidden" for e in counted):
        valid: Any = False
    elif any(e["valid"] == "unknown" for e in counted):
        valid = "unknown"
    else:
        valid = True
    if res.stale_leader_starts:
        out["I1"]["stale_leader_starts"] = {"count": len(res.stale_leader_starts),
                                            "examples": res.stale_leader_starts[:5],
                                            "note": "leader_epoch_start for an epoch the controller had left"}
    # Structurally unobservable invariants are named with the reason, plainly, and left out of the verdict:
    # the trace cannot show them on any run, so they say nothing about this one.
    return {"valid": valid, "invariants": out, "events": n_events,
            "not_checkable": {k: e["reason"] for k, e in out.items() if e.get("covered") is False},
            "undecided": {k: e["reason"] for k, e in out.items()
                          if e["valid"] == "unknown" and e.get("covered", True)},
            "violated": [k for k, e in out.items() if e["valid"] is False],
            "known_issues": [k for k, e in out.items() if e.get("status") not in (None, "forbidden")]}


class InvariantChecker:
    """Checker protocol wrapper; with no trace given its verdict is reported but not counted."""

    name = "invariants"

    def __init__(self, trace_given: bool = True, queue: QueueFindings | None = None):
        """``queue``: the queue checker's findings for the history this checker will be given, shared so
        the history is analysed once (``check_run``); without them ``check`` analyses it itself."""
        self.trace_given = trace_given
        self.queue = queue

    def check(self, spec: CheckedSpec | Mapping | None, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Run ``check_invariants`` with the loss status of the run's guarantee profile."""
        spec = CheckedSpec.of(spec)
        has_final = any(op.get("final") is True for op in history)
        loss = derive_profile(spec, history, has_final)["statuses"]["lost-write"]
        result = check_invariants(spec, history, traces, self.trace_given, loss, self.queue)
        if not self.trace_given:
            result["counted"] = False
            result["reason"] = "no trace given: protocol invariants not checked (history-only parts listed)"
        return result
