"""One rule per trace invariant (docs/protocol-rules.md section 4), keyed by the event kinds it reads.

``RULES`` maps an invariant to its ``Rule``: the kinds of event it is evaluated at (``events.classify``
names them; ``events.END`` is the end of the trace) and a function that judges one such event, reporting
each evaluation with ``res.ok`` or ``res.bad``. A rule reads the cluster state (``state.TraceState``) either
as the event finds it (``before``: rules that compare the event with what was there, such as an epoch
going back) or as the event leaves it (rules about the new state, such as every ISR member holding the
True HWM); it never changes the state. A rule that must remember something the state does not describe
(I13: the replicas it follows since a restart, the incarnations it judged; its rule is in
``restarts.py``) says so with ``memory``, made fresh for every sweep and handed to it at each call. The
invariants judged from the history (I6, I7, I14, I15) are in ``history_checks.py``; I14 and I15 also read
the partitions' True HWM from the state. The coordinators' rules live with their part of the state:
I23-I24 in ``consumer_groups.py``, I25-I26 in ``transactions.py``.

Within one invariant, rules are evaluated in trace order, which keeps its violations in the order the
trace shows them; the order between invariants does not matter (each has its own counts and list).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checkers.invariants.consumer_groups import commits_carry_the_generation, one_owner_per_partition
from checkers.invariants.events import (
    BROKER_APPLIED,
    BROKER_REGISTERED,
    BROKER_SHUTDOWN,
    CONTROLLER_COPY,
    CONTROLLER_FENCED,
    CONTROLLER_RECORD,
    CONTROLLER_REGISTERED,
    CONTROLLER_STATE,
    CONTROLLER_UNFENCED,
    END,
    GROUP_ASSIGNMENT,
    GROUP_COMMIT,
    PRODUCER_BATCH,
    QUORUM_HWM,
    QUORUM_STATE,
    QUORUM_TRUNCATE,
    QUORUM_VOTE,
    TXN_MARKER,
    TXN_TRANSITION,
    Step,
    brief,
    reported_leo,
)
from checkers.invariants.logs import compare_state, match_epochs, match_prefixes
from checkers.invariants.quorum import (
    committed_prefixes_agree,
    epochs_never_go_back,
    hwm_durable,
    one_leader_per_epoch,
    one_vote_per_epoch,
    only_committed_applied,
)
from checkers.invariants.restarts import Restarts, restarts_stay_out
from checkers.invariants.results import Results
from checkers.invariants.state import PartitionView, TraceState
from checkers.invariants.transactions import epochs_never_go_back as producer_epochs_never_go_back
from checkers.invariants.transactions import markers_follow_the_decision

Judge = Callable[[TraceState, Step, Results, Any], None]


@dataclass(frozen=True)
class Rule:
    """How one invariant is judged from the trace (see the module docstring)."""

    reads: frozenset[str]
    judge: Judge
    before: bool = False  # judged on the state the event finds; else on the state it leaves
    memory: Callable[[], Any] | None = None


def leader_holds_committed(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I1: a replica that becomes the controller's current leader holds everything below the True HWM."""
    ev, replica = step.ev, step.replica
    view = state.parts[step.pk]
    ctl = view.ctl
    if ctl is not None and (ctl.get("leader") != replica or ctl.get("leader_epoch") != ev.get("leader_epoch")):
        # A replica taking a leadership the controller has already moved past (e.g. replaying old metadata
        # after a restart): I1 is about the controller's current leader, so not judged.
        res.stale_leader_starts.append(brief(ev))
        return
    got = view.leo.get(replica)  # the LEO it started with, or the last it reported
    if got is None:
        return
    if view.th > 0 and got[0] < view.th:
        res.bad("I1", f"replica {replica} became leader (LE {ev.get('leader_epoch')}) with LEO {got[0]}"
                      f" < True HWM {view.th}", [ev, view.th_event])
    else:
        res.ok("I1")


def members_hold_committed(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I2: every running ISR (and, under KIP-966, ELR) member holds everything below the True HWM; judged
    for all members when the controller commits a state, for one replica when it reports its LEO."""
    view = state.parts[step.pk]
    ctl = view.ctl
    if ctl is None:
        return
    if step.kind == CONTROLLER_STATE:
        only = None
    elif reported_leo(step.ev) is None:
        return
    else:
        only = step.replica
    members = state.members(ctl)
    for b in members if only is None else [only]:
        if b not in members or b in state.down:  # I2 is about running brokers only (run(b))
            continue
        got = view.leo.get(b)
        if got is None or view.th <= 0:
            continue
        if got[0] < view.th:
            res.bad("I2", f"replica {b} in ISR/ELR with LEO {got[0]} < True HWM {view.th}",
                    [got[1], ctl, view.th_event])
        else:
            res.ok("I2")


def isr_within_maximal_isr(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I3: the controller's ISR is within its leader's Maximal ISR; judged when the controller commits a
    state and when that leader's own view changes."""
    view = state.parts[step.pk]
    ctl = view.ctl
    if step.kind != CONTROLLER_STATE and (ctl is None or ctl.get("leader") != step.replica):
        return
    leader = ctl.get("leader")
    if leader is None or leader < 0 or "isr" not in ctl:
        return
    role = view.role.get(leader)
    local = view.local_isr.get(leader)
    if role is None or local is None or role[0] != "leader" or role[1] != ctl.get("leader_epoch"):
        return
    if state.variant != "v3.5" and state.min_isr is not None and len(local) < state.min_isr:
        return  # K966: only while the leader's ISR has MinISR members (K11)
    if not set(ctl["isr"]) <= set(local):
        res.bad("I3", f"controller ISR {ctl['isr']} not within leader {leader}'s Maximal ISR {local}", [ctl])
    else:
        res.ok("I3")


def _other_summaries(view: PartitionView, step: Step):
    return [other for replica, other in view.summaries.items() if replica != step.replica]


def logs_match(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I4: a replica's new log summary agrees with every other replica's latest below both HWMs."""
    for other in _other_summaries(state.parts[step.pk], step):
        match_prefixes(step.ev, other, res)


def _new_judged() -> dict:
    return {"broker_offsets": 0}


def metadata_matches(state: TraceState, step: Step, res: Results, memory: dict) -> None:
    """I5: a replica applies at a partition epoch the state the controller committed at it (compared when
    the second of the two is seen); at the end, no broker applied metadata past the controller's log."""
    if step.kind == END:
        if state.ctl_offset < 0:
            return
        for ev in state.broker_offsets[memory["broker_offsets"]:]:
            if ev.get("offset", -1) > state.ctl_offset:
                res.bad("I5", f"broker {ev.get('broker')} applied metadata up to offset {ev['offset']}, past "
                              f"the controller's last committed offset {state.ctl_offset}", [ev])
            else:
                res.ok("I5")
        memory["broker_offsets"] = len(state.broker_offsets)
        return
    ev = step.ev
    pe = ev.get("partition_epoch")
    if pe is None:
        return
    view = state.parts[step.pk]
    if step.kind == CONTROLLER_STATE:
        for replica_ev in view.unmatched.get(pe, ()):
            compare_state(replica_ev, ev, res)
    else:
        ctl = view.ctl_by_pe.get(pe)
        if ctl is not None:
            compare_state(ev, ctl, res)


def minisr_quorum(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I8 (KIP-966): an empty ISR and ELR leave a last-known ELR of at least MinISR replicas. At least,
    not exactly: when one change drops several replicas below MinISR all of them enter the ELR (K2 as the
    TLA+ and Kafka's PartitionChangeBuilder do it), so the LKELR can outgrow MinISR; recovery stays
    lossless while fewer than MinISR of them lost data. The quorum is built while the ISR shrinks from
    MinISR members: an unclean election (C12, or K7's recovery: the state turns RECOVERING) leaves a
    leader alone in the ISR with the LKELR cleared, and until the ISR reaches MinISR again nothing can
    rebuild it (``memory``: the partitions in that stretch)."""
    ev = step.ev
    if "isr" not in ev or state.variant == "v3.5" or state.min_isr is None:
        return
    isr, elr = list(ev.get("isr") or []), list(ev.get("elr") or [])
    lkelr = list(ev.get("last_known_elr") or [])
    if len(isr) >= state.min_isr:
        memory.discard(step.pk)
    elif ev.get("leader_recovery_state") == "RECOVERING":
        memory.add(step.pk)
    if step.pk in memory:
        return
    if not isr and not elr and len(lkelr) < state.min_isr:
        res.bad("I8", f"ISR and ELR empty but |LKELR {lkelr}| < MinISR {state.min_isr}", [ev])
    else:
        res.ok("I8")


def controller_sane(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I9: the controller's committed partition state is well formed (C6 under v3.5, K1 under KIP-966)."""
    ev = step.ev
    if "isr" not in ev:
        return
    isr = list(ev.get("isr") or [])
    fenced = state.fenced
    if state.variant == "v3.5":
        if not isr:
            res.bad("I9", "v3.5: the ISR became empty (C6 keeps the last member)", [ev])
        elif any(b in fenced for b in isr) and len(isr) > 1:
            res.bad("I9", f"v3.5: fenced member(s) {[b for b in isr if b in fenced]} in ISR {isr}", [ev])
        else:
            res.ok("I9")
        return
    elr = list(ev.get("elr") or [])
    lkelr = list(ev.get("last_known_elr") or [])
    replicas = list(ev.get("replicas") or [])
    problems = []
    if set(isr) & set(elr):
        problems.append(f"ELR {elr} intersects ISR {isr}")
    if not set(isr) <= set(replicas) or not set(elr) <= set(replicas):
        problems.append(f"ISR {isr} / ELR {elr} not within replicas {replicas}")
    if state.min_isr is not None and len(isr) >= state.min_isr and (elr or lkelr):
        problems.append(f"|ISR| >= MinISR {state.min_isr} but ELR {elr} / LKELR {lkelr} not empty")
    if any(b in fenced for b in isr):
        problems.append(f"fenced member(s) {[b for b in isr if b in fenced]} in ISR {isr}")
    if problems:
        res.bad("I9", "K1: " + "; ".join(problems), [ev])
    else:
        res.ok("I9")


def leader_is_itself(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I10 (the part the trace shows): a replica in the leader role names itself as the leader."""
    ev = step.ev
    if ev.get("role") == "leader" and "leader" in ev:
        if ev["leader"] != step.replica:
            res.bad("I10", f"replica {step.replica} in leader role with local leader {ev['leader']}", [ev])
        else:
            res.ok("I10")


def epochs_advance(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I11: broker epochs strictly increase and are unique; each committed partition change has PE =
    previous + 1, and LE never decreases and bumps on a leader change (C2); a replica's applied LE and PE
    never go back."""
    ev = step.ev
    if step.kind == CONTROLLER_REGISTERED:
        epoch = ev.get("broker_epoch")
        if epoch is None:
            return
        last = state.last_registration
        if last is not None and epoch <= last[0]:
            res.bad("I11", f"broker epoch {epoch} of broker {ev['broker']} not above {last[0]}", [last[1], ev])
        elif epoch in state.epoch_owner and state.epoch_owner[epoch][0] != ev["broker"]:
            res.bad("I11", f"broker epoch {epoch} reused", [state.epoch_owner[epoch][1], ev])
        else:
            res.ok("I11")
    elif step.kind == CONTROLLER_STATE:
        prev = state.parts[step.pk].ctl
        pe, le, leader = ev.get("partition_epoch"), ev.get("leader_epoch"), ev.get("leader")
        if prev is None or pe is None or prev.get("partition_epoch") is None:
            return
        ppe, ple = prev["partition_epoch"], prev.get("leader_epoch")
        if pe != ppe + 1:
            res.bad("I11", f"partition epoch {ppe} -> {pe} (expected +1, C2)", [prev, ev])
        elif le is not None and ple is not None and le < ple:
            res.bad("I11", f"leader epoch went back {ple} -> {le}", [prev, ev])
        elif leader != prev.get("leader") and le is not None and ple is not None and le <= ple:
            res.bad("I11", f"leader changed {prev.get('leader')} -> {leader} without an LE bump (C2)", [prev, ev])
        else:
            res.ok("I11")
    else:  # a replica applied a partition state
        le, pe = ev.get("leader_epoch"), ev.get("partition_epoch")
        if le is None or pe is None:
            return
        prev = state.applied_epochs.get((step.replica, step.pk))
        if prev is not None and (pe < prev[1] or le < prev[0]):
            res.bad("I11", f"replica {step.replica} local LE/PE went back {prev[:2]} -> {(le, pe)}", [prev[2], ev])
        else:
            res.ok("I11")


def hwm_sane(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I12: a leader's HWM never passes its LEO and never goes back within one leader epoch."""
    ev, replica = step.ev, step.replica
    view = state.parts[step.pk]
    if step.kind == "leader_epoch_start":
        leo = ev.get("leo")
        if leo is None and replica in view.leo:
            leo = view.leo[replica][0]
        if ev.get("hwm") is not None and leo is not None:
            if ev["hwm"] > leo:
                res.bad("I12", f"new leader {replica} HWM {ev['hwm']} > LEO {leo}", [ev])
            else:
                res.ok("I12")
        return
    hwm = ev.get("hwm")
    if hwm is None or ev.get("role", "leader") != "leader":
        return
    le = ev.get("leader_epoch")
    prev = view.leader_hwm.get(replica)
    if prev is not None and prev[0] == le and hwm < prev[1]:
        res.bad("I12", f"leader {replica} lowered its HWM {prev[1]} -> {hwm} in LE {le}", [prev[2], ev])
    else:
        res.ok("I12")
    own_leo = view.leo.get(replica)
    if own_leo is not None and hwm > own_leo[0]:
        res.bad("I12", f"leader {replica} HWM {hwm} > its LEO {own_leo[0]}", [own_leo[1], ev])


def epochs_name_records(state: TraceState, step: Step, res: Results, memory: Any) -> None:
    """I16: a record's epoch and offset name one leader's write: a replica's new log summary holds the same
    records as every other replica's latest in each epoch range both report with the same extent."""
    for other in _other_summaries(state.parts[step.pk], step):
        match_epochs(step.ev, other, res)


_ISR_VIEWS = ("isr_proposed", "isr_updated", "isr_rollback")

# Every kind a controller record's event gets, first copy or later (I20, I21).
_CONTROLLER_RECORDS = frozenset({CONTROLLER_COPY, CONTROLLER_RECORD, CONTROLLER_STATE, CONTROLLER_REGISTERED,
                                 CONTROLLER_FENCED, CONTROLLER_UNFENCED})

RULES: dict[str, Rule] = {
    "I1": Rule(frozenset({"leader_epoch_start"}), leader_holds_committed),
    "I2": Rule(frozenset({CONTROLLER_STATE, "leo", "truncate"}), members_hold_committed),
    "I3": Rule(frozenset({CONTROLLER_STATE, "leader_epoch_start", "metadata_applied", *_ISR_VIEWS}),
               isr_within_maximal_isr),
    "I4": Rule(frozenset({"log_summary"}), logs_match),
    "I5": Rule(frozenset({CONTROLLER_STATE, "metadata_applied", END}), metadata_matches, before=True,
               memory=_new_judged),
    "I8": Rule(frozenset({CONTROLLER_STATE}), minisr_quorum, before=True, memory=set),
    "I9": Rule(frozenset({CONTROLLER_STATE}), controller_sane, before=True),
    "I10": Rule(frozenset({"role"}), leader_is_itself, before=True),
    "I11": Rule(frozenset({CONTROLLER_REGISTERED, CONTROLLER_STATE, "metadata_applied"}), epochs_advance,
                before=True),
    "I12": Rule(frozenset({"leader_epoch_start", "hwm"}), hwm_sane, before=True),
    "I13": Rule(frozenset({BROKER_SHUTDOWN, BROKER_REGISTERED, CONTROLLER_REGISTERED, CONTROLLER_STATE, "leo",
                           "truncate"}), restarts_stay_out, memory=Restarts),
    "I16": Rule(frozenset({"log_summary"}), epochs_name_records),
    # the controller quorum (quorum.py): judged on the quorum's state as the event finds it
    "I17": Rule(frozenset({QUORUM_STATE}), one_leader_per_epoch, before=True),
    "I18": Rule(frozenset({QUORUM_STATE}), epochs_never_go_back, before=True),
    "I19": Rule(frozenset({QUORUM_STATE, QUORUM_HWM, QUORUM_TRUNCATE}), hwm_durable, before=True),
    "I20": Rule(_CONTROLLER_RECORDS, committed_prefixes_agree, before=True),
    "I21": Rule(_CONTROLLER_RECORDS | {BROKER_APPLIED}, only_committed_applied, before=True),
    "I22": Rule(frozenset({QUORUM_STATE, QUORUM_VOTE}), one_vote_per_epoch, before=True),
    # the coordinators and producer appends (consumer_groups.py, transactions.py): judged on the state the
    # event finds (what was handed out, decided, appended before it)
    "I23": Rule(frozenset({GROUP_COMMIT}), commits_carry_the_generation, before=True),
    "I24": Rule(frozenset({GROUP_ASSIGNMENT}), one_owner_per_partition, before=True),
    "I25": Rule(frozenset({TXN_TRANSITION}), markers_follow_the_decision, before=True),
    "I26": Rule(frozenset({TXN_MARKER, PRODUCER_BATCH}), producer_epochs_never_go_back, before=True),
}
