"""Reading a scenario's progress from the nodes' trace events (pure functions, no I/O).

A scripted scenario waits for protocol states ("the controller has fenced both followers", "the
partition has a leader again") and reports the decisive facts afterwards. Both come from the same place
the invariant checkers read: the trace events the nodes append (docs/history-schema.md). The controller's
``metadata_applied`` events (``source: "controller"``) carry the committed partition state (replicas,
ISR, ELR, LKELR, leader, epochs); its ``election`` events say who was elected and from where (clean /
elr / unclean); each replica's ``leader_epoch_start`` carries its LEO and LESO when it took leadership.

Events may be raw (node monotonic ns, as read live from the node files) or rebased onto the history's
clock (``trace.jsonl``); every function here only compares times of the same kind that it is given.

With a controller quorum every voter traces each committed record it applies (``voter`` names it): the
functions here read one copy of each, the first in time (the checkers hold the others to it, I20), so a
scenario counts a registration or a fence once whatever the number of controllers.
"""

from __future__ import annotations

from typing import Any

STATE_FIELDS = ("replicas", "isr", "elr", "last_known_elr", "leader", "leader_epoch", "partition_epoch",
                "adding", "removing")
SET_FIELDS = ("replicas", "isr", "elr", "last_known_elr", "adding", "removing")


def in_time_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` by time, each committed controller record once (the first voter's copy)."""
    seen: set[tuple] = set()
    out = []
    for ev in sorted(events, key=lambda e: (e.get("time", 0), e.get("offset") or 0)):
        if ev.get("source") == "controller" and isinstance(ev.get("offset"), int):
            key = (ev["offset"], ev.get("kind"), ev.get("partition"), ev.get("broker"))
            if key in seen:
                continue
            seen.add(key)
        out.append(ev)
    return out


def _of_partition(event: dict[str, Any], topic: str, partition: int) -> bool:
    return event.get("topic") == topic and event.get("partition") == partition


def _in_window(event: dict[str, Any], after: int | None, before: int | None) -> bool:
    t = event.get("time", 0)
    return (after is None or t >= after) and (before is None or t < before)


def controller_states(events: list[dict[str, Any]], topic: str, partition: int) -> list[dict[str, Any]]:
    """The controller's committed states of one partition, in time order, each with its event ``time`` and
    metadata ``offset``. Set-like fields are sorted (the seeds print sets in their own orders);
    ``replica_order`` keeps the committed order (the preferred leader first, C18's Kafka order)."""
    out = []
    for ev in in_time_order(events):
        if ev.get("kind") != "metadata_applied" or ev.get("source") != "controller":
            continue
        if not _of_partition(ev, topic, partition):
            continue
        state = {k: ev.get(k) for k in STATE_FIELDS}
        state["replica_order"] = list(state["replicas"] or [])
        for key in SET_FIELDS:
            state[key] = sorted(state[key] or [])
        state["time"] = ev.get("time")
        state["offset"] = ev.get("offset")
        out.append(state)
    return out


def states_between(events: list[dict[str, Any]], topic: str, partition: int, after: int | None = None,
                   before: int | None = None) -> list[dict[str, Any]]:
    """The controller's committed states of the partition with ``after <= time < before``."""
    return [s for s in controller_states(events, topic, partition) if _in_window(s, after, before)]


def controller_state(events: list[dict[str, Any]], topic: str, partition: int,
                     before: int | None = None) -> dict[str, Any] | None:
    """The controller's latest committed state of the partition (strictly before ``before`` if given)."""
    states = [s for s in controller_states(events, topic, partition) if before is None or s["time"] < before]
    return states[-1] if states else None


def fenced_brokers(events: list[dict[str, Any]], before: int | None = None) -> set[int]:
    """Brokers the controller has fenced and not unfenced since (C5, C6), from its trace."""
    fenced: set[int] = set()
    for ev in in_time_order(events):
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
        for ev in in_time_order(events)
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
    """One line for a committed partition state, e.g. ``leader 1 LE 2 PE 4 ISR [1] ELR [3] LKELR []``
    (with the replicas and the adding / removing sets when a reassignment is in progress)."""
    if state is None:
        return "(no state)"
    line = (f"leader {state['leader']} LE {state['leader_epoch']} PE {state['partition_epoch']} "
            f"ISR {state['isr']} ELR {state['elr']} LKELR {state['last_known_elr']}")
    if state.get("adding") or state.get("removing"):
        line = (f"replicas {state.get('replica_order', state['replicas'])} adding {state['adding']} "
                f"removing {state['removing']} " + line)
    return line


def describe_assignment(state: dict[str, Any] | None) -> str:
    """One line for the reassignment-relevant part of a state, e.g.
    ``RS [1, 2, 4, 3] AR [4] RR [3] leader 1 ISR [1, 2] LE 1 PE 3``."""
    if state is None:
        return "(no state)"
    return (f"RS {state.get('replica_order', state['replicas'])} AR {state['adding']} RR {state['removing']} "
            f"leader {state['leader']} ISR {state['isr']} LE {state['leader_epoch']} PE {state['partition_epoch']}")


def events_of(events: list[dict[str, Any]], kind: str, *, after: int | None = None, before: int | None = None,
              **match: Any) -> list[dict[str, Any]]:
    """Events of ``kind`` in time order whose fields equal every ``match`` (e.g. ``source="controller"``,
    ``broker=3``, ``topic=t``), with ``after <= time < before``."""
    return [ev for ev in in_time_order(events)
            if ev.get("kind") == kind and _in_window(ev, after, before)
            and all(ev.get(k) == v for k, v in match.items())]


def broker_epochs(events: list[dict[str, Any]], broker: int) -> list[int]:
    """The broker epochs the controller registered for ``broker``, in order (C4: each larger)."""
    return [int(ev["broker_epoch"]) for ev in events_of(events, "registered", source="controller", broker=broker)]


def ap_refusals(events: list[dict[str, Any]], topic: str | None = None, partition: int | None = None,
                after: int | None = None) -> list[dict[str, Any]]:
    """AlterPartition requests the controller refused (C13, C14), from its ``alter_partition_rejected``
    events: ``{time, broker, error, message, proposed}``; a top-level refusal has no topic."""
    out = []
    for ev in events_of(events, "alter_partition_rejected", after=after, source="controller"):
        if topic is not None and (ev.get("topic") != topic or ev.get("partition") != partition):
            continue
        out.append({k: ev.get(k) for k in ("time", "broker", "error", "message", "proposed", "partition_epoch")})
    return out


def replica_events(events: list[dict[str, Any]], kind: str, topic: str, partition: int, replica: int | None = None,
                   after: int | None = None, before: int | None = None) -> list[dict[str, Any]]:
    """A replica-side event of the partition (``hwm``, ``leo``, ``isr_proposed``, ``isr_rollback``,
    ``log_deleted``, ``truncate``, ``role`` ...) from any broker, or from ``replica`` only."""
    return [ev for ev in events_of(events, kind, after=after, before=before, topic=topic, partition=partition)
            if replica is None or ev.get("replica") == replica]
