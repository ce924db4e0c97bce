"""Reading a scenario's progress from the nodes' trace events (pure functions, no I/O).

A scripted scenario waits for protocol states ("the controller has fenced both followers", "the
partition has a leader again") and reports the decisive facts afterwards. Both come from the same place
the invariant checkers read: the trace events the nodes append (DESIGN.md section 2). The controller's
``metadata_applied`` events (``source: "controller"``) carry the committed partition state (replicas,
ISR, ELR, LKELR, leader, epochs); its ``election`` events say who was elected and from where (clean /
elr / unclean); each replica's ``leader_epoch_start`` carries its LEO and LESO when it took leadership.

Events may be raw (node monotonic ns, as read live from the node files) or rebased onto the history's
clock (``trace.jsonl``); every function here only compares times of the same kind that it is given.
"""

from __future__ import annotations

from typing import Any

STATE_FIELDS = ("replicas", "isr", "elr", "last_known_elr", "leader", "leader_epoch", "partition_epoch")


def _of_partition(event: dict[str, Any], topic: str, partition: int) -> bool:
    return event.get("topic") == topic and event.get("partition") == partition


def controller_states(events: list[dict[str, Any]], topic: str, partition: int) -> list[dict[str, Any]]:
    """The controller's committed states of one partition, in time order, each with its event ``time``."""
    out = []
    for ev in sorted(events, key=lambda e: e.get("time", 0)):
        if ev.get("kind") != "metadata_applied" or ev.get("source") != "controller":
            continue
        if not _of_partition(ev, topic, partition):
            continue
        state = {k: ev.get(k) for k in STATE_FIELDS}
        for key in ("isr", "elr", "last_known_elr", "replicas"):
            state[key] = sorted(state[key] or [])
        state["time"] = ev.get("time")
        out.append(state)
    return out


def controller_state(events: list[dict[str, Any]], topic: str, partition: int,
                     before: int | None = None) -> dict[str, Any] | None:
    """The controller's latest committed state of the partition (strictly before ``before`` if given)."""
    states = [s for s in controller_states(events, topic, partition) if before is None or s["time"] < before]
    return states[-1] if states else None


def fenced_brokers(events: list[dict[str, Any]], before: int | None = None) -> set[int]:
    """Brokers the controller has fenced and not unfenced since (C5, C6), from its trace."""
    fenced: set[int] = set()
    for ev in sorted(events, key=lambda e: e.get("time", 0)):
        if ev.get("source") != "controller" or (before is not None and ev.get("time", 0) >= before):
            continue
        kind = ev.get("kind")
        if kind in ("fenced", "registered"):  # a new registration starts fenced (C4)
            fenced.add(int(ev["broker"]))
        elif kind == "unfenced":
            fenced.discard(int(ev["broker"]))
        elif kind == "broker_registration_change" and ev.get("fenced") is not None:
            (fenced.add if ev["fenced"] else fenced.discard)(int(ev["broker"]))
    return fenced


def elections(events: list[dict[str, Any]], topic: str, partition: int,
              after: int | None = None) -> list[dict[str, Any]]:
    """The controller's ``election`` events for the partition (at or after ``after`` if given)."""
    return [
        {k: ev.get(k) for k in ("time", "type", "leader", "previous_leader", "leader_epoch", "previous_isr")}
        for ev in sorted(events, key=lambda e: e.get("time", 0))
        if ev.get("kind") == "election" and ev.get("source") == "controller"
        and _of_partition(ev, topic, partition) and (after is None or ev.get("time", 0) >= after)
    ]


def leadership_start(events: list[dict[str, Any]], topic: str, partition: int, broker: int,
                     leader_epoch: int | None = None) -> dict[str, Any] | None:
    """The replica's own ``leader_epoch_start`` (its LEO, LESO and HWM when it became leader, T3) for
    ``leader_epoch`` (the first one at or above it when the exact epoch is not in the trace)."""
    starts = [
        ev for ev in sorted(events, key=lambda e: e.get("time", 0))
        if ev.get("kind") == "leader_epoch_start" and _of_partition(ev, topic, partition)
        and ev.get("replica") == broker
        and (leader_epoch is None or (ev.get("leader_epoch") or 0) >= leader_epoch)
    ]
    if not starts:
        return None
    ev = starts[0]
    return {k: ev.get(k) for k in ("time", "leader_epoch", "leo", "leso", "hwm")}


def truncations(events: list[dict[str, Any]], topic: str, partition: int,
                after: int | None = None) -> list[dict[str, Any]]:
    """Replica truncations of the partition (F3) at or after ``after``: who cut from which LEO to where."""
    return [
        {k: ev.get(k) for k in ("time", "replica", "from_leo", "to_offset", "diverging_epoch")}
        for ev in sorted(events, key=lambda e: e.get("time", 0))
        if ev.get("kind") == "truncate" and _of_partition(ev, topic, partition)
        and (after is None or ev.get("time", 0) >= after)
    ]


def describe_state(state: dict[str, Any] | None) -> str:
    """One line for a committed partition state, e.g. ``leader 1 LE 2 PE 4 ISR [1] ELR [3] LKELR []``."""
    if state is None:
        return "(no state)"
    return (f"leader {state['leader']} LE {state['leader_epoch']} PE {state['partition_epoch']} "
            f"ISR {state['isr']} ELR {state['elr']} LKELR {state['last_known_elr']}")
