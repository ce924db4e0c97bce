"""The trace events a node reports besides those the replica core drains (docs/history-schema.md).

Each function returns plain dicts without ``time`` and ``node`` (whoever writes the trace stamps both),
exactly as ``PartitionReplica.drain_events`` and ``BrokerLifecycle.drain_events`` do. The controller
process, the broker process and the deterministic simulator all build these events here, so the checkers
read the same trace from a real cluster and from a simulated one.

- Controller: one event per committed record (``registered``, ``fenced``, ``unfenced``,
  ``metadata_applied`` with the partition's state after the record, ``config_changed``,
  ``broker_registration_change``, ``leader_change`` for a quorum leader's epoch-start record), all with
  ``source: "controller"``, plus ``election`` when a change
  record gave a partition a new leader (``clean`` from the previous ISR, ``elr`` from the previous ELR,
  else ``unclean``).
- Broker: ``recovered`` / ``leo`` (``reason: "recovery"``) for every partition log found at start, before
  the registration (the checkers read them as "this broker is starting up", I13);
  ``broker_metadata`` when the image changes a broker's registration; ``log_deleted``; ``log_summary``
  (``reason: "recovery"``) for every log found at start; ``metadata_offset`` (the last applied metadata
  offset) on a clean stop.
- Controller, not a record: ``unclean_recovery`` after a committed K7 recovery (the answers it chose from).
"""

from __future__ import annotations

from typing import Any

from reference_impl.protocol.log import Log
from reference_impl.protocol.log_summary import log_summary
from reference_impl.protocol.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    LeaderChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionState,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)

CONTROLLER = "controller"


def controller_record_events(controller: Any, record: Any, offset: int,
                             before: PartitionState | None = None) -> list[dict[str, Any]]:
    """The events for ``record``, committed at ``offset`` and already replayed on ``controller``
    (a ``protocol.controller.Controller``); ``before`` is the partition's state before a change record."""
    src = {"source": CONTROLLER}
    if isinstance(record, RegisterBrokerRecord):
        return [{"kind": "registered", "broker": record.broker_id, "broker_epoch": record.broker_epoch,
                 "previous_broker_epoch": record.previous_broker_epoch, "offset": offset, **src}]
    if isinstance(record, FenceBrokerRecord):
        return [{"kind": "fenced", "broker": record.broker_id, "broker_epoch": record.broker_epoch,
                 "offset": offset, **src}]
    if isinstance(record, UnfenceBrokerRecord):
        return [{"kind": "unfenced", "broker": record.broker_id, "broker_epoch": record.broker_epoch,
                 "offset": offset, **src}]
    if isinstance(record, (PartitionRecord, PartitionChangeRecord)):
        state = controller.partition(record.topic_id, record.partition_id)
        topic = controller.topic_names.get(record.topic_id)
        out = [{"kind": "metadata_applied", "topic": topic, "topic_id": record.topic_id,
                "partition": record.partition_id, "offset": offset, "record": type(record).__name__, **src,
                **(state.as_dict() if state is not None else {})}]
        if before is not None and state is not None and state.leader != before.leader and state.leader >= 0:
            kind = "clean" if state.leader in before.isr else "elr" if state.leader in before.elr else "unclean"
            out.append({"kind": "election", "type": kind, "topic": topic, "topic_id": record.topic_id,
                        "partition": record.partition_id, "leader": state.leader,
                        "previous_leader": before.leader, "leader_epoch": state.leader_epoch,
                        "previous_isr": list(before.isr), "offset": offset, **src})
        return out
    if isinstance(record, ConfigRecord):
        # Dynamic config (AlterConfigs, SIGHUP): the offset orders it against reassignment steps (seed 002).
        return [{"kind": "config_changed", "resource_type": record.resource_type,
                 "resource_name": record.resource_name, "name": record.name, "value": record.value,
                 "offset": offset, **src}]
    if isinstance(record, LeaderChangeRecord):
        # a new quorum leader's epoch-start record (Q5): no state changes, but it occupies an offset
        return [{"kind": "leader_change", "leader": record.leader_id, "quorum_epoch": record.leader_epoch,
                 "offset": offset, **src}]
    if isinstance(record, BrokerRegistrationChangeRecord):
        return [{"kind": "broker_registration_change", "broker": record.broker_id, "offset": offset,
                 "fenced": record.fenced, "in_controlled_shutdown": record.in_controlled_shutdown, **src}]
    return []


def log_recovery_events(topic: str, partition: int, replica: int, leo: int, hwm: int,
                        notes: list[str] = (), log: Log | None = None) -> list[dict[str, Any]]:
    """A partition log opened at broker start (B2 RECOVERY): one ``recovered`` per repair note (a torn tail
    cut, ...) and the recovered LEO with the HWM checkpoint; given the ``log``, also its ``log_summary``
    (``reason: "recovery"``): what a node killed without a clean stop had kept is traced when it restarts."""
    out: list[dict[str, Any]] = [{"kind": "recovered", "topic": topic, "partition": partition, "note": note,
                                  "leo": leo} for note in notes]
    out.append({"kind": "leo", "topic": topic, "partition": partition, "leo": leo, "hwm": hwm,
                "replica": replica, "role": "none", "reason": "recovery"})
    if log is not None:
        out.append({"kind": "log_summary", "topic": topic, "partition": partition, "replica": replica,
                    "reason": "recovery", **log_summary(log.batches(), log.log_start_offset, min(hwm, leo))})
    return out


def metadata_offset_event(broker: int, offset: int, reason: str) -> dict[str, Any]:
    """The offset of the last metadata record a broker applied (I5: never past the controller's log)."""
    return {"kind": "metadata_offset", "broker": broker, "offset": offset, "reason": reason}


def broker_metadata_event(broker: int, broker_epoch: int, fenced: bool, in_controlled_shutdown: bool,
                          offset: int) -> dict[str, Any]:
    """A broker's view of another broker's registration changed with the metadata it applied."""
    return {"kind": "broker_metadata", "broker": broker, "broker_epoch": broker_epoch, "fenced": fenced,
            "in_controlled_shutdown": in_controlled_shutdown, "offset": offset}


def log_deleted_event(topic: str, partition: int, replica: int, reason: str | None = None) -> dict[str, Any]:
    """A partition log was deleted (T1, or a stray log found at start)."""
    event: dict[str, Any] = {"kind": "log_deleted", "topic": topic, "partition": partition, "replica": replica}
    if reason is not None:
        event["reason"] = reason
    return event


def unclean_recovery_event(topic: str, partition: int, leader: int | None, strategy: str,
                           answers: dict[int, tuple[int, int]]) -> dict[str, Any]:
    """A committed K7 recovery: who leads now, under which strategy, chosen from which log ends (broker ->
    ``(last written leader epoch, log end offset)``). Not a record: the evidence of an unclean election."""
    return {"kind": "unclean_recovery", "topic": topic, "partition": partition, "leader": leader,
            "strategy": strategy, "answers": {str(b): list(end) for b, end in sorted(answers.items())},
            "source": CONTROLLER}
