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
- Group coordinator (I23, I24): ``group_generation`` once a generation's record is committed (its members
  are told it only then), ``group_assignment`` for each SyncGroup answer that hands a member its share,
  ``group_commit`` for each OffsetCommit / TxnOffsetCommit whose records were committed and answered NONE,
  with the request's generation and member and the group's generation and state it was validated against.
- Transaction coordinator (I25): ``txn_transition`` for each state record of a transactional id, once the
  write is acknowledged (acks=all: committed in ``__transaction_state``).
- Partition leader (I25, I26): ``txn_marker`` for each COMMIT / ABORT marker it appended, and
  ``producer_batch`` for each batch of an idempotent or transactional producer it appended (duplicates,
  which append nothing, are not traced).

The coordinators' events name the ``__consumer_offsets`` / ``__transaction_state`` partition they come from
as ``offsets_partition`` / ``state_partition``, never ``partition``: the replica events of those partitions
are the log invariants' business, and a ``partition`` attribute would make them look like one.
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


# ---------------------------------------------------------------- coordinators and producer appends (I23-I26)

def group_generation_event(group: str, generation: int, protocol_type: str | None, protocol: str | None,
                           leader: str | None, members: list[str], offsets_partition: int,
                           log_offset: int) -> dict[str, Any]:
    """A group generation began: its record (at ``log_offset`` of the offsets partition, -1 when not known)
    is committed and its members are answered. An empty generation (every member gone) has no members."""
    return {"kind": "group_generation", "group": group, "generation": generation,
            "protocol_type": protocol_type, "protocol": protocol, "leader": leader, "members": list(members),
            "offsets_partition": offsets_partition, "log_offset": log_offset}


def group_assignment_event(group: str, generation: int, member: str, offsets_partition: int, size: int,
                           assigned: list[tuple[str, int]] | None, undecodable: str | None = None) -> dict[str, Any]:
    """A SyncGroup answer handed ``member`` its assignment of ``generation``: the ``assigned``
    topic-partitions, or, when its ``size`` bytes could not be read, ``undecodable`` with the reason."""
    event: dict[str, Any] = {"kind": "group_assignment", "group": group, "generation": generation,
                             "member": member, "offsets_partition": offsets_partition, "bytes": size}
    if undecodable is None:
        event["assigned"] = [[t, p] for t, p in sorted(assigned or ())]
    else:
        event["undecodable"] = undecodable
    return event


def group_commit_event(group: str, generation: int, member: str, group_generation: int, group_state: str,
                       offsets: list[tuple[str, int, int]], offsets_partition: int, log_offset: int,
                       txn: tuple[str, int, int] | None = None) -> dict[str, Any]:
    """The coordinator accepted an offset commit: its records (at ``log_offset``) are committed and it was
    answered NONE. ``generation`` / ``member`` are what the request carried, ``group_generation`` /
    ``group_state`` what the group was when the coordinator validated it; ``txn`` (transactional id, producer
    id, producer epoch) marks a TxnOffsetCommit, whose offsets take effect with the COMMIT marker."""
    event: dict[str, Any] = {"kind": "group_commit", "group": group, "generation": generation, "member": member,
                             "group_generation": group_generation, "group_state": group_state,
                             "offsets": [[t, p, o] for t, p, o in offsets], "offsets_partition": offsets_partition,
                             "log_offset": log_offset, "txn": txn is not None}
    if txn is not None:
        event.update(transactional_id=txn[0], producer_id=txn[1], producer_epoch=txn[2])
    return event


def txn_transition_event(transactional_id: str, producer_id: int, producer_epoch: int, before: str | None,
                         after: str, partitions: list[tuple[str, int]], state_partition: int,
                         coordinator_epoch: int) -> dict[str, Any]:
    """A transactional id's state record is committed: ``before`` -> ``after`` (Kafka's state names; None
    for a new id). ``partitions`` is the transaction's set: for CompleteCommit / CompleteAbort, whose
    record holds none, the set the markers went to (the state it completes)."""
    return {"kind": "txn_transition", "transactional_id": transactional_id, "producer_id": producer_id,
            "producer_epoch": producer_epoch, "from": before, "to": after,
            "partitions": [[t, p] for t, p in partitions], "state_partition": state_partition,
            "coordinator_epoch": coordinator_epoch}


def txn_marker_event(topic: str, partition: int, replica: int, leader_epoch: int, producer_id: int,
                     producer_epoch: int, commit: bool, offset: int) -> dict[str, Any]:
    """A partition leader appended a transaction marker at ``offset``."""
    return {"kind": "txn_marker", "topic": topic, "partition": partition, "replica": replica,
            "leader_epoch": leader_epoch, "producer_id": producer_id, "producer_epoch": producer_epoch,
            "marker": "COMMIT" if commit else "ABORT", "offset": offset}


def producer_batch_event(topic: str, partition: int, replica: int, leader_epoch: int, producer_id: int,
                         producer_epoch: int, base_offset: int, transactional: bool) -> dict[str, Any]:
    """A partition leader appended a batch of an idempotent or transactional producer at ``base_offset``."""
    return {"kind": "producer_batch", "topic": topic, "partition": partition, "replica": replica,
            "leader_epoch": leader_epoch, "producer_id": producer_id, "producer_epoch": producer_epoch,
            "base_offset": base_offset, "transactional": transactional}
