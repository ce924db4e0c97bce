"""Replication control, partitions side (Kafka's ReplicationControlManager): topics, ISRs and the
partition changes brokers' comings and goings cause.

- ``builder`` / ``acceptor``: every partition change of every manager starts here, as a
  ``PartitionChangeBuilder`` over the partition's current state with the topic's min.insync.replicas and
  the leader-candidate test of C11 (registered, unfenced, not shutting down);
- ``remove_broker`` (C6, C8, K4) and ``elect_leaderless`` (C5, C10, K3): what a fence, an unclean
  registration, a controlled shutdown or an unfence does to the partitions (Kafka's
  ``handleBrokerFenced`` / ``handleBrokerUncleanShutdown`` / ``handleBrokerInControlledShutdown`` /
  ``handleBrokerUnfenced``); cluster control puts these records before its broker record;
- ``create_topic``: a topic's records (TopicRecord, then one PartitionRecord per partition);
- ``alter_partition`` (C13-C15, C19): a leader's ISR proposal, checked in Kafka's order and in the form each
  AlterPartition version knows.

Elections an operator or a timer asks for (C12, K7) are in ``election``; reassignments in ``reassignment``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import OK, Errors, KafkaError, error
from ..historical_bugs import ELR_SWITCH_FORGOTTEN
from ..partition_change import Election, PartitionChangeBuilder, preview
from ..reassignment import validate_target
from ..records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionState,
    TopicRecord,
)
from .result import ControllerResult, TopicPartition

if TYPE_CHECKING:  # the caller owns randomness; the core only takes a generator
    import random

    from ..controller import Controller

# AlterPartition versions served, as Kafka 3.5-3.9: v2 (KIP-841) names topics by id and brought
# INELIGIBLE_REPLICA, NEW_LEADER_ELECTED and UNKNOWN_TOPIC_ID; v3 (KIP-903) carries broker epochs.
ALTER_PARTITION_VERSIONS = range(0, 4)
_ERRORS_BEFORE_KIP_841 = {
    Errors.INELIGIBLE_REPLICA: Errors.OPERATION_NOT_ATTEMPTED,
    Errors.NEW_LEADER_ELECTED: Errors.FENCED_LEADER_EPOCH,
}
_TOPIC_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def alter_partition_error_for_version(err: KafkaError, request_version: int) -> KafkaError:
    """The error Kafka's ReplicationControlManager answers an AlterPartition of ``request_version`` with:
    before v2 a client cannot decode INELIGIBLE_REPLICA or NEW_LEADER_ELECTED, so it gets
    OPERATION_NOT_ATTEMPTED and FENCED_LEADER_EPOCH instead (both make the leader roll back, L16, and wait
    for the metadata)."""
    if request_version < 2 and err.code in _ERRORS_BEFORE_KIP_841:
        return error(_ERRORS_BEFORE_KIP_841[err.code], err.message)
    return err


@dataclass(frozen=True)
class AlterPartitionResponse:
    """Answer to an AlterPartition for one partition (C13-C15, C19)."""

    error: KafkaError
    leader: int = NO_LEADER
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: str = RECOVERED


@dataclass(frozen=True)
class CreateTopicResponse:
    """Answer to a topic creation."""

    error: KafkaError
    topic_id: str | None = None


class ReplicationControl:
    """Partition changes from broker events, topic creation and AlterPartition (module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self._ctl = controller

    # -- the builder every partition change goes through ---------------------------------------------------
    def acceptor(self, overrides: Mapping[int, bool] | None = None) -> Callable[[int], bool]:
        """A leader candidate must be registered, unfenced and not shutting down (C11); ``overrides`` says
        how brokers whose registration this very change alters will look once it is committed."""
        brokers = self._ctl.brokers

        def acceptable(broker_id: int) -> bool:
            if overrides and broker_id in overrides:
                return overrides[broker_id]
            reg = brokers.get(broker_id)
            return reg is not None and not reg.fenced and not reg.in_controlled_shutdown
        return acceptable

    def builder(self, tp: TopicPartition, overrides: Mapping[int, bool] | None = None, *,
                unclean_shutdown: bool = False) -> PartitionChangeBuilder:
        """A ``PartitionChangeBuilder`` for ``tp`` (a topic name and partition id) as it stands now;
        ``unclean_shutdown``: for the changes of an unclean registration (K4)."""
        info = self._ctl.topics[tp[0]]
        config = self._ctl.config
        elr_enabled = config.elr_enabled
        if unclean_shutdown and config.historical_bug == ELR_SWITCH_FORGOTTEN:
            elr_enabled = False  # the slip: this one path builds as if KIP-966 were off (historical_bugs)
        return PartitionChangeBuilder(
            info.partitions[tp[1]], info.topic_id, tp[1], self.acceptor(overrides),
            min_isr=self._ctl.min_isr(tp[0]), elr_enabled=elr_enabled,
            completion_rule=config.completion_rule)

    # -- broker events (C5, C6, C8, C10, K3, K4) -----------------------------------------------------------
    def remove_broker(self, broker_id: int, *, unclean: bool = False, include_elr: bool = False,
                      overrides: Mapping[int, bool] | None = None) -> list[PartitionChangeRecord]:
        """C6 (v3.5: never the last ISR member; K966: always, then K2/K3), and K4 for an unclean broker."""
        overrides = dict(overrides or {broker_id: False})
        records = []
        for tp, p in self._ctl.partitions():
            if broker_id not in p.isr and p.leader != broker_id and not (include_elr and broker_id in p.elr):
                continue
            builder = self.builder(tp, overrides, unclean_shutdown=unclean).set_target_isr(
                [r for r in p.isr if r != broker_id])
            if unclean:
                builder.set_unclean_shutdown_replicas([broker_id])
            if self._ctl.unclean_enabled(tp[0]):
                builder.set_election(Election.UNCLEAN)
            record = builder.build()
            if record is not None:
                records.append(record)
        return records

    def elect_leaderless(self, overrides: Mapping[int, bool] | None = None) -> list[PartitionChangeRecord]:
        """C10/K3 (C12 where enabled): an election for every leaderless partition, as brokers come back."""
        records = []
        for tp, p in self._ctl.partitions():
            if p.leader != NO_LEADER:
                continue
            builder = self.builder(tp, overrides)
            if self._ctl.unclean_enabled(tp[0]):
                builder.set_election(Election.UNCLEAN)
            record = builder.build()
            if record is not None:
                records.append(record)
        return records

    # -- topics --------------------------------------------------------------------------------------------
    def create_topic(self, name: str, *, partitions: int = 1, replication_factor: int | None = None,
                     assignment: Mapping[int, Sequence[int]] | None = None, topic_id: str | None = None,
                     rng: random.Random | None = None) -> ControllerResult:
        """Create a topic: explicit ``assignment`` or ``replication_factor`` placed round-robin over the
        usable brokers starting at ``rng``'s choice (0 without rng). The ISR is the live replicas; the
        leader the first of them (Kafka)."""
        if name in self._ctl.topics:
            return ControllerResult([], CreateTopicResponse(error(Errors.TOPIC_ALREADY_EXISTS, name)))
        # Kafka's topic name rules: 1-249 of [a-zA-Z0-9._-], not "." or "..".
        if not name or len(name) > 249 or name in (".", "..") or any(c not in _TOPIC_NAME_CHARS for c in name):
            return ControllerResult([], CreateTopicResponse(error(Errors.INVALID_TOPIC_EXCEPTION, name)))
        acceptable = self.acceptor()
        live = [b for b in sorted(self._ctl.brokers) if acceptable(b)]
        if assignment is None:
            if partitions < 1:
                return ControllerResult([], CreateTopicResponse(error(Errors.INVALID_PARTITIONS)))
            rf = replication_factor if replication_factor is not None else min(3, len(live))
            if rf < 1 or rf > len(live):
                return ControllerResult([], CreateTopicResponse(error(
                    Errors.INVALID_REPLICATION_FACTOR, f"replication factor {rf} with {len(live)} usable brokers")))
            start = rng.randrange(len(live)) if rng is not None else 0
            assignment = {p: [live[(start + p + i) % len(live)] for i in range(rf)] for p in range(partitions)}
        elif not assignment or sorted(assignment) != list(range(len(assignment))):
            return ControllerResult([], CreateTopicResponse(error(Errors.INVALID_REPLICA_ASSIGNMENT,
                                                                  "partition ids must be 0..n-1")))
        if topic_id is None:
            topic_id = str(uuid.UUID(int=rng.getrandbits(128)) if rng is not None
                           else uuid.uuid5(uuid.NAMESPACE_OID, f"{name}@{self._ctl.next_offset}"))
        records: list[Any] = [TopicRecord(name, topic_id)]
        for pid in sorted(assignment):
            replicas = list(assignment[pid])
            problem = validate_target(replicas, self._ctl.brokers)
            if not problem.ok:
                return ControllerResult([], CreateTopicResponse(problem))
            isr = [r for r in replicas if acceptable(r)]
            if not isr:
                return ControllerResult([], CreateTopicResponse(error(
                    Errors.INVALID_REPLICATION_FACTOR, f"partition {pid}: no usable replica in {replicas}")))
            records.append(PartitionRecord(topic_id, pid, tuple(replicas), tuple(isr), isr[0]))
        return ControllerResult(records, CreateTopicResponse(OK, topic_id))

    # -- AlterPartition (C13-C15, C19) ---------------------------------------------------------------------
    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, partition_id: int, *,
                        leader_epoch: int, partition_epoch: int,
                        new_isr: Sequence[int | tuple[int, int]],
                        leader_recovery_state: str = RECOVERED,
                        request_version: int = ALTER_PARTITION_VERSIONS[-1]) -> ControllerResult:
        """An AlterPartition from the leader for one partition, checked in Apache Kafka's order:
        STALE_BROKER_EPOCH (sender), UNKNOWN_TOPIC_ID (v2+; before: UNKNOWN_TOPIC_OR_PARTITION) for an
        unknown topic, UNKNOWN_TOPIC_OR_PARTITION for an unknown partition, NOT_CONTROLLER (request epochs
        ahead of ours), FENCED_LEADER_EPOCH, INVALID_REQUEST (not the leader), INVALID_UPDATE_VERSION (stale
        PE, C13), INVALID_REQUEST (ISR not within replicas / without the leader / recovery-state misuse),
        then INELIGIBLE_REPLICA (C14: unregistered, shutting down, fenced or epoch mismatch). On success the
        ISR becomes the proposal (C15) and a reassignment may complete (C19); if that moves the leadership
        away the answer is NEW_LEADER_ELECTED (the change is still committed). Requests older than v2 get
        those two errors in their older form (``alter_partition_error_for_version``). ``topic`` is a name or
        an id; ``new_isr`` items are broker ids or ``(broker_id, broker_epoch)`` with -1 = not checked (all
        members are -1 before v3)."""
        if request_version not in ALTER_PARTITION_VERSIONS:
            return ControllerResult([], AlterPartitionResponse(error(
                Errors.UNSUPPORTED_VERSION, f"AlterPartition v{request_version}")))
        stale = self._ctl.cluster.check_broker_epoch(broker_id, broker_epoch)
        if not stale.ok:
            return ControllerResult([], AlterPartitionResponse(stale))
        info = self._ctl.find_topic(topic)
        if info is None:
            unknown = Errors.UNKNOWN_TOPIC_ID if request_version >= 2 else Errors.UNKNOWN_TOPIC_OR_PARTITION
            return ControllerResult([], AlterPartitionResponse(error(unknown, f"topic {topic}")))
        p = info.partitions.get(partition_id)
        if p is None:
            return ControllerResult([], AlterPartitionResponse(error(Errors.UNKNOWN_TOPIC_OR_PARTITION)))
        states = [(m, -1) if isinstance(m, int) else (int(m[0]), int(m[1])) for m in new_isr]
        if request_version < 3:
            states = [(b, -1) for b, _ in states]  # before KIP-903 the request carries no broker epochs
        isr = [b for b, _ in states]
        problem = self._validate_alter_partition(broker_id, p, leader_epoch, partition_epoch, isr, states,
                                                 leader_recovery_state)
        if not problem.ok:
            return ControllerResult([], AlterPartitionResponse(alter_partition_error_for_version(
                problem, request_version)))
        tp = (info.name, partition_id)
        builder = self.builder(tp).set_target_isr(isr).set_target_leader_recovery_state(leader_recovery_state)
        if self._ctl.unclean_enabled(info.name):
            builder.set_election(Election.UNCLEAN)
        record = builder.build()
        after = preview(p, record)
        err = OK
        if record is not None and record.leader not in (NO_LEADER_CHANGE, broker_id):
            # C19 + Kafka: the change completed a reassignment that removed this leader; the change is
            # committed, but the old leader must wait for the metadata.
            err = alter_partition_error_for_version(
                error(Errors.NEW_LEADER_ELECTED, f"leadership moved to {after.leader}"), request_version)
        return ControllerResult([] if record is None else [record], AlterPartitionResponse(
            err, after.leader, after.leader_epoch, after.partition_epoch, tuple(after.isr),
            after.leader_recovery_state), builder.trace)

    def _validate_alter_partition(self, broker_id: int, p: PartitionState, leader_epoch: int,
                                  partition_epoch: int, isr: list[int], states: list[tuple[int, int]],
                                  recovery: str) -> KafkaError:
        if leader_epoch > p.leader_epoch or partition_epoch > p.partition_epoch:
            # The sender knows a newer state than we do: we are probably a stale controller.
            return error(Errors.NOT_CONTROLLER, "request epochs are ahead of the controller's")
        if leader_epoch < p.leader_epoch:
            return error(Errors.FENCED_LEADER_EPOCH, f"leader epoch {leader_epoch} < {p.leader_epoch}")
        if broker_id != p.leader:
            return error(Errors.INVALID_REQUEST, f"broker {broker_id} is not the leader ({p.leader})")
        if partition_epoch < p.partition_epoch:
            # C13: the proposal was computed against an older partition state.
            return error(Errors.INVALID_UPDATE_VERSION, f"partition epoch {partition_epoch} < {p.partition_epoch}")
        if len(set(isr)) != len(isr) or not set(isr) <= set(p.replicas):
            return error(Errors.INVALID_REQUEST, f"ISR {isr} is not a subset of replicas {p.replicas}")
        if p.leader not in isr:
            return error(Errors.INVALID_REQUEST, f"ISR {isr} does not contain the leader {p.leader}")
        if recovery not in (RECOVERED, RECOVERING):
            return error(Errors.INVALID_REQUEST, f"unknown leader recovery state {recovery!r}")
        if recovery == RECOVERING and len(isr) > 1:
            return error(Errors.INVALID_REQUEST, "a recovering leader cannot expand the ISR")
        if p.leader_recovery_state == RECOVERED and recovery == RECOVERING:
            return error(Errors.INVALID_REQUEST, "leader recovery state cannot go RECOVERED -> RECOVERING")
        ineligible = []
        for member, epoch in states:
            reg = self._ctl.brokers.get(member)
            if reg is None:
                ineligible.append(f"{member}: not registered")
            elif reg.in_controlled_shutdown:
                ineligible.append(f"{member}: shutting down")
            elif reg.fenced:
                ineligible.append(f"{member}: fenced")
            elif epoch != -1 and epoch != reg.epoch:
                # C14: -1 is safe for existing members; invalidating them would have bumped the PE.
                ineligible.append(f"{member}: broker epoch {epoch} != {reg.epoch}")
        if ineligible:
            return error(Errors.INELIGIBLE_REPLICA, "; ".join(ineligible))
        return OK
