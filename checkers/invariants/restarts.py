"""I13: restarts. A broker restarted with a log shorter than the True HWM stays out of ISR/ELR and
leadership until it has caught up; and a broker's registration claims a clean shutdown only after one.

The rule of ``rules.RULES["I13"]``, with what it follows between events (``Restarts``): the state says
what the cluster is; which replicas came back short since their restart, and which incarnations were
already judged, is this rule's own memory.
"""

from __future__ import annotations

from typing import Any

from checkers.invariants.events import (
    BROKER_REGISTERED,
    BROKER_SHUTDOWN,
    CONTROLLER_REGISTERED,
    CONTROLLER_STATE,
    Step,
    broker_of,
    reported_leo,
)
from checkers.invariants.results import Results
from checkers.invariants.state import TraceState


class Restarts:
    """What I13 follows: registrations after a restart awaiting the replica's first LEO report, replicas
    whose log came back below the True HWM (until they catch up or are reported), each broker's last clean
    stop (until a new incarnation uses it) and the incarnations already judged."""

    def __init__(self) -> None:
        self.restarted: dict[Any, dict] = {}           # broker -> its registration after a restart
        self.incomplete: dict[tuple, dict] = {}        # (pk, broker) -> {"registration", "leo"} events
        self.clean_stop: dict[Any, int] = {}           # broker -> epoch of its last clean stop, until used
        self.judged: set[tuple[Any, Any]] = set()      # (broker, incarnation id) already checked


def restarts_stay_out(state: TraceState, step: Step, res: Results, memory: Restarts) -> None:
    """I13: a broker restarted with a log shorter than the True HWM stays out of ISR/ELR and leadership
    until it has caught up; and a registration claims a clean shutdown (K4) only after one.

    The claim: a broker writes its clean-shutdown marker (the broker epoch it stopped with) only at the very
    end of a controlled shutdown and deletes it once read at the next start, so the
    ``previous_broker_epoch`` it registers with is either -1 (its last stop was not clean) or the epoch of
    the clean stop just before. The controller trusts that claim: under KIP-966 a broker that says it
    stopped cleanly keeps its place in the ELR although a crash may have cost it unflushed records. So the
    claim is checked against what the broker traced: its last stop before this incarnation must be a
    ``shutdown`` event with ``clean: true`` and that epoch (a ``kill -9`` leaves no such event, a crash of
    the simulated broker traces ``clean: false``). Each incarnation is judged once (a registration retried
    by the same incarnation repeats its claim), and a clean stop is used up by the incarnation after it.
    """
    ev, kind = step.ev, step.kind
    if kind in (BROKER_SHUTDOWN, BROKER_REGISTERED):
        _judge_claim(ev, kind, res, memory)
    elif kind == CONTROLLER_REGISTERED:
        epoch, prev = ev.get("broker_epoch"), ev.get("previous_broker_epoch")
        b = ev["broker"]
        if prev is not None and prev != -1 and prev != epoch:
            memory.restarted[b] = ev
            # its log as recovered at startup (reported before the registration) may already show the loss
            for pk, view in state.parts.items():
                got = view.leo.get(b)
                if got is not None and got[1].get("reason") == "recovery" and view.th > 0 and got[0] < view.th:
                    memory.incomplete[(pk, b)] = {"registration": ev, "leo": got[1]}
        res.ok("I13")  # the registration was checked: a lossy restart is followed below
    elif kind == CONTROLLER_STATE:
        _judge_incomplete(state, step.pk, None, res, memory)
    else:  # a replica reported its LEO
        leo = reported_leo(ev)
        if leo is None:
            return
        pk, replica = step.pk, step.replica
        th = state.parts[pk].th
        if replica in memory.restarted:
            registration = memory.restarted.pop(replica)
            if th > 0 and leo < th:
                memory.incomplete[(pk, replica)] = {"registration": registration, "leo": ev}
        if (pk, replica) in memory.incomplete and leo >= th:
            del memory.incomplete[(pk, replica)]
        _judge_incomplete(state, pk, replica, res, memory)


def _judge_incomplete(state: TraceState, pk: tuple, only: Any, res: Results, memory: Restarts) -> None:
    view = state.parts[pk]
    ctl = view.ctl
    if ctl is None:
        return
    members = state.members(ctl)
    leader = ctl.get("leader")
    for (p, b), info in list(memory.incomplete.items()):
        if p != pk or (only is not None and b != only):
            continue
        if b in members or leader == b:
            res.bad("I13", f"replica {b} restarted with LEO {info['leo'].get('leo', info['leo'].get('to_offset'))}"
                           f" < True HWM {view.th} yet is in ISR/ELR or leader", [info["registration"], info["leo"], ctl])
            del memory.incomplete[(p, b)]  # reported once
        else:
            res.ok("I13")


def _judge_claim(ev: dict, kind: str, res: Results, memory: Restarts) -> None:
    if ev.get("partition") is not None:
        return
    b = broker_of(ev)
    if b is None:
        return
    if kind == BROKER_SHUTDOWN:
        epoch = ev.get("broker_epoch")
        if ev.get("clean") is True and isinstance(epoch, int) and epoch >= 0:
            memory.clean_stop[b] = epoch
        elif ev.get("clean") is False:
            memory.clean_stop.pop(b, None)
        return
    incarnation = ev.get("incarnation_id")
    if incarnation is None or (b, incarnation) in memory.judged:
        return
    memory.judged.add((b, incarnation))
    claimed = ev.get("previous_broker_epoch")
    stopped_clean_at = memory.clean_stop.pop(b, None)
    if not isinstance(claimed, int) or claimed < 0:
        res.ok("I13")  # no claim: the controller treats it as an unclean restart
    elif claimed == stopped_clean_at:
        res.ok("I13")
    else:
        last = ("no clean stop traced since its previous registration" if stopped_clean_at is None
                else f"its last clean stop was at broker epoch {stopped_clean_at}")
        res.bad("I13", f"broker {b} registered claiming a clean shutdown at broker epoch {claimed} (K4), "
                       f"but {last}", [ev])
