"""The KRaft controller's decisions: brokers, topics, partitions (Kafka's ClusterControlManager and
ReplicationControlManager in one sans-IO object).

Compute records, then replay them. Every handler (``register_broker``, ``heartbeat``, ``alter_partition``,
``alter_partition_reassignments``, ``elect_leaders``, ...) reads the state and returns a
``ControllerResult(records, response)`` without changing it. ``replay(record, offset)`` is the only mutator
of the replicated state, used alike for live operation (after the server made the records durable, C1) and
for recovery from the log. The caller must append and replay one result before asking for the next one:
handlers compute against the state as replayed so far (C1: one change at a time). A result's response is
what the requester gets *once its records are committed*; a result with no records is answered at once.

Soft state (not replicated, as in Kafka's BrokerHeartbeatManager): the time of each broker's last heartbeat
and the metadata offset it reported. A new controller starts it afresh; ``check_session_timeouts`` gives a
broker it has never heard from a full session from its first call.

Server guide (one asyncio task owns the controller; every call below returns a ``ControllerResult``):

- requests: ``register_broker``, ``heartbeat`` (``metadata_offset`` = the last metadata offset the broker
  has applied), ``alter_partition``, ``create_topic``, ``alter_partition_reassignments``,
  ``list_partition_reassignments`` (a query, returns a dict), ``elect_leaders``, ``set_config``;
- timers: ``check_session_timeouts(now_ms)`` (repeat until no records), ``maybe_unclean_elect()``,
  ``advance_incremental_reassignments()`` (KIP-435 mode), K7's ``balanced_unclean_recovery``;
- for each result: append ``records`` to the log (fsync, C1), ``replay`` each at its offset, then send
  ``response``. An empty ``records`` means answer at once.

Offsets: ``next_offset`` is the offset the next appended record gets. A broker's epoch is the offset of its
``RegisterBrokerRecord`` (C4), so the server must assign offsets contiguously from ``next_offset`` (``replay``
without an offset does exactly that).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .elr import balanced_recovery_leader, elr_invariant_violations, proactive_recovery_leader
from .errors import OK, Errors, InvariantViolation, KafkaError, error
from .partition_change import CompletionRule, Election, PartitionChangeBuilder, preview
from .reassignment import (
    ReassignmentStep,
    check_rf_change,
    collect_batch,
    merged_assignment,
    plan_next_step,
    revert_assignment,
    validate_target,
)
from .records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    IncrementalReassignmentRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionState,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

TopicPartition = tuple[str, int]

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
PARALLEL_REPLICAS = "reassignment.parallel.replica.count"
PARALLEL_PARTITIONS = "reassignment.parallel.partition.count"
PARALLEL_LEADERS = "reassignment.parallel.leader.movements"
REASSIGNMENT_MODE = "reassignment.mode"
REASSIGNMENT_MODES = ("all-at-once", "incremental")
INT_MAX = 2**31 - 1


UNCLEAN_RECOVERY_STRATEGIES = ("balanced", "proactive", "manual")

# AlterPartition versions served, as Kafka 3.5-3.9: v2 (KIP-841) names topics by id and brought
# INELIGIBLE_REPLICA, NEW_LEADER_ELECTED and UNKNOWN_TOPIC_ID; v3 (KIP-903) carries broker epochs.
ALTER_PARTITION_VERSIONS = range(0, 4)
_ERRORS_BEFORE_KIP_841 = {
    Errors.INELIGIBLE_REPLICA: Errors.OPERATION_NOT_ATTEMPTED,
    Errors.NEW_LEADER_ELECTED: Errors.FENCED_LEADER_EPOCH,
}


def alter_partition_error_for_version(err: KafkaError, request_version: int) -> KafkaError:
    """The error Kafka's ReplicationControlManager answers an AlterPartition of ``request_version`` with:
    before v2 a client cannot decode INELIGIBLE_REPLICA or NEW_LEADER_ELECTED, so it gets
    OPERATION_NOT_ATTEMPTED and FENCED_LEADER_EPOCH instead (both make the leader roll back, L16, and wait
    for the metadata)."""
    if request_version < 2 and err.code in _ERRORS_BEFORE_KIP_841:
        return error(_ERRORS_BEFORE_KIP_841[err.code], err.message)
    return err


@dataclass
class ControllerConfig:
    """Static controller configuration (dynamic overrides arrive as ``ConfigRecord``s)."""

    min_isr: int = 1                      # Kafka's default min.insync.replicas
    elr_enabled: bool = False             # protocol.variant = kip966 (K1-K12)
    unclean_election: bool = False        # unclean.leader.election.enable (C12)
    session_timeout_ms: int = 9000        # broker.session.timeout.ms (C6)
    completion_rule: CompletionRule = CompletionRule.MIN_ISR  # C17 / docs/protocol-rules.md 5.8(i)
    incremental_reassignment: bool = False  # KIP-435 mode instead of all-at-once
    parallel_replica_count: int = INT_MAX
    parallel_partition_count: int = INT_MAX
    parallel_leader_movements: int = INT_MAX
    reject_target_below_min_isr: bool = True  # C16 [T]: target RF >= MinISR
    unclean_recovery_strategy: str = "balanced"  # K7: balanced | proactive | manual (KIP-966 only)
    node_id: str | None = None  # this controller's id: a ("broker", node_id) config record overrides ("broker", "")

    def __post_init__(self) -> None:
        if self.unclean_recovery_strategy not in UNCLEAN_RECOVERY_STRATEGIES:
            raise ValueError(f"unknown unclean.recovery.strategy {self.unclean_recovery_strategy!r}; "
                             f"expected one of {', '.join(UNCLEAN_RECOVERY_STRATEGIES)}")


@dataclass
class BrokerRegistration:
    """The controller's view of one broker (docs/protocol-rules.md 1.2)."""

    broker_id: int
    incarnation_id: str
    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False
    host: str = ""
    port: int = 0
    previous_broker_epoch: int = -1
    controlled_shutdown_offset: int | None = None


@dataclass
class TopicInfo:
    """A topic: name, id and its partitions' controller state."""

    name: str
    topic_id: str
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass
class ControllerResult:
    """What a handler returns: records to commit (then replay) and the response to send after commit."""

    records: list[Any]
    response: Any = None
    # The partition-change builder's named intermediate states (seed 001's steps), for tests and traces.
    trace: list[tuple[str, PartitionState]] = field(default_factory=list)


@dataclass(frozen=True)
class RegisterBrokerResponse:
    """Answer to a registration (C3, C4)."""

    error: KafkaError
    broker_epoch: int = -1


@dataclass(frozen=True)
class HeartbeatResponse:
    """Answer to a heartbeat (C5-C9)."""

    error: KafkaError
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shutdown: bool = False


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


@dataclass(frozen=True)
class OngoingReassignment:
    """A ListPartitionReassignments entry (KIP-435 adds the final target of an incremental one)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    final_target: tuple[int, ...] | None = None


def _parse_bool(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValueError(f"not a boolean: {value!r}")
    return value.lower() == "true"


class Controller:
    """The controller state machine (module docstring): handlers compute, ``replay`` mutates."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        """Start empty; the state is rebuilt by replaying the metadata log."""
        self.config = config or ControllerConfig()
        self.brokers: dict[int, BrokerRegistration] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.incremental: dict[TopicPartition, list[int]] = {}
        self.last_offset = -1
        # Soft state (module docstring).
        self.last_contact_ms: dict[int, int] = {}
        self.metadata_offsets: dict[int, int] = {}

    # ===================================================================================== state queries
    @property
    def next_offset(self) -> int:
        """The offset the next appended record will get (a broker epoch is such an offset, C4)."""
        return self.last_offset + 1

    def partition(self, topic: str, partition_id: int) -> PartitionState | None:
        """The partition's state by topic name (or id), or None."""
        info = self._topic(topic)
        return None if info is None else info.partitions.get(partition_id)

    def partitions(self) -> list[tuple[TopicPartition, PartitionState]]:
        """Every partition, ordered by topic name then partition id (the order handlers use)."""
        return [((t.name, pid), t.partitions[pid]) for t in sorted(self.topics.values(), key=lambda t: t.name)
                for pid in sorted(t.partitions)]

    def min_isr(self, topic: str | None = None) -> int:
        """min.insync.replicas for a topic (topic override, then cluster override, then static config)."""
        return int(self._config_value(topic, MIN_ISR, str(self.config.min_isr)))

    def unclean_enabled(self, topic: str | None = None) -> bool:
        """unclean.leader.election.enable for a topic (C12)."""
        return _parse_bool(self._config_value(topic, UNCLEAN, str(self.config.unclean_election).lower()))

    def leads_any(self, broker_id: int) -> bool:
        """Whether the broker leads any partition (C8, C9)."""
        return any(p.leader == broker_id for _, p in self.partitions())

    def incremental_mode(self) -> bool:
        """Whether new reassignments are planned as KIP-435 incremental steps: the ``reassignment.mode``
        config record (per-controller, then cluster-wide) over the static setting."""
        static = "incremental" if self.config.incremental_reassignment else "all-at-once"
        return self._config_value(None, REASSIGNMENT_MODE, static) == "incremental"

    def _config_value(self, topic: str | None, key: str, default: str) -> str:
        # Kafka's precedence: topic override, dynamic per-broker (this controller), dynamic cluster default,
        # then the static setting.
        if topic is not None and key in self.configs.get(("topic", topic), {}):
            return self.configs[("topic", topic)][key]
        if self.config.node_id is not None and key in self.configs.get(("broker", self.config.node_id), {}):
            return self.configs[("broker", self.config.node_id)][key]
        return self.configs.get(("broker", ""), {}).get(key, default)

    def _cluster_int(self, key: str, default: int) -> int:
        return int(self._config_value(None, key, str(default)))

    def _topic(self, topic: str) -> TopicInfo | None:
        if topic in self.topics:
            return self.topics[topic]
        name = self.topic_names.get(topic)
        return None if name is None else self.topics.get(name)

    def _acceptor(self, overrides: Mapping[int, bool] | None = None) -> Callable[[int], bool]:
        """A leader candidate must be registered, unfenced and not shutting down (C11); ``overrides`` says
        how brokers whose registration this very change alters will look once it is committed."""
        def acceptable(broker_id: int) -> bool:
            if overrides and broker_id in overrides:
                return overrides[broker_id]
            reg = self.brokers.get(broker_id)
            return reg is not None and not reg.fenced and not reg.in_controlled_shutdown
        return acceptable

    def _builder(self, tp: TopicPartition, overrides: Mapping[int, bool] | None = None) -> PartitionChangeBuilder:
        info = self.topics[tp[0]]
        return PartitionChangeBuilder(
            info.partitions[tp[1]], info.topic_id, tp[1], self._acceptor(overrides),
            min_isr=self.min_isr(tp[0]), elr_enabled=self.config.elr_enabled,
            completion_rule=self.config.completion_rule)

    # ============================================================================================ replay
    def replay(self, record: Any, offset: int | None = None) -> None:
        """Apply one committed record (the only mutator). ``offset`` defaults to ``next_offset``."""
        offset = self.next_offset if offset is None else offset
        if offset <= self.last_offset:
            raise InvariantViolation(f"replay offset {offset} not after {self.last_offset}")
        self.last_offset = offset
        if isinstance(record, RegisterBrokerRecord):
            self.brokers[record.broker_id] = BrokerRegistration(
                record.broker_id, record.incarnation_id, record.broker_epoch, record.fenced,
                record.in_controlled_shutdown, record.host, record.port, record.previous_broker_epoch)
            self.last_contact_ms.pop(record.broker_id, None)
        elif isinstance(record, (FenceBrokerRecord, UnfenceBrokerRecord, BrokerRegistrationChangeRecord)):
            reg = self.brokers.get(record.broker_id)
            if reg is None or reg.epoch != record.broker_epoch:
                raise InvariantViolation(f"{type(record).__name__} for unknown broker epoch: {record}")
            if isinstance(record, FenceBrokerRecord):
                reg.fenced, reg.in_controlled_shutdown, reg.controlled_shutdown_offset = True, False, None
            elif isinstance(record, UnfenceBrokerRecord):
                reg.fenced = False
            else:
                if record.fenced is not None:
                    reg.fenced = record.fenced
                if record.in_controlled_shutdown is not None:
                    reg.in_controlled_shutdown = record.in_controlled_shutdown
                    # C8: the shutdown waits until every other live broker has applied this record (it is the
                    # last of its batch, after the leadership moves). Metadata offsets are last-applied offsets,
                    # as in C5's "metadata offset >= registration offset".
                    reg.controlled_shutdown_offset = offset if record.in_controlled_shutdown else None
        elif isinstance(record, TopicRecord):
            self.topics[record.name] = TopicInfo(record.name, record.topic_id)
            self.topic_names[record.topic_id] = record.name
        elif isinstance(record, PartitionRecord):
            self._topic_by_id(record.topic_id).partitions[record.partition_id] = PartitionState.from_record(record)
        elif isinstance(record, PartitionChangeRecord):
            info = self._topic_by_id(record.topic_id)
            if record.partition_id not in info.partitions:
                raise InvariantViolation(f"change for unknown partition {record}")
            info.partitions[record.partition_id].apply_change(record)
        elif isinstance(record, ConfigRecord):
            values = self.configs.setdefault((record.resource_type, record.resource_name), {})
            if record.value is None:
                values.pop(record.name, None)
            else:
                values[record.name] = record.value
        elif isinstance(record, IncrementalReassignmentRecord):
            tp = (self._topic_by_id(record.topic_id).name, record.partition_id)
            if record.final_replicas is None:
                self.incremental.pop(tp, None)
            else:
                self.incremental[tp] = list(record.final_replicas)
        elif isinstance(record, NoOpRecord):
            pass
        else:
            raise InvariantViolation(f"unknown record {record!r}")

    def apply(self, result: ControllerResult) -> Any:
        """Replay every record of ``result`` at the next offsets and return its response (tests, simulator)."""
        for record in result.records:
            self.replay(record)
        return result.response

    def _topic_by_id(self, topic_id: str) -> TopicInfo:
        name = self.topic_names.get(topic_id)
        if name is None:
            raise InvariantViolation(f"unknown topic id {topic_id}")
        return self.topics[name]

    # ================================================================================= brokers (C3-C9)
    def register_broker(self, broker_id: int, incarnation_id: str, *, host: str = "", port: int = 0,
                        previous_broker_epoch: int = -1) -> ControllerResult:
        """C3/C4 (+K4): accept unless another live incarnation holds the id; the new epoch is the offset of
        the registration record and the broker starts fenced. ``previous_broker_epoch`` is the epoch read
        from the clean-shutdown marker (-1: none). With ELR, a registration whose marker does not match the
        previous registration's epoch is an unclean shutdown: the broker leaves every ISR, ELR (to the
        LKELR) and leadership (K4)."""
        existing = self.brokers.get(broker_id)
        if existing is not None and not existing.fenced and existing.incarnation_id != incarnation_id:
            # C3: a new epoch needs the old session fenced first.
            return ControllerResult([], RegisterBrokerResponse(
                error(Errors.DUPLICATE_BROKER_REGISTRATION, f"broker {broker_id} is registered and unfenced")))
        records: list[Any] = []
        if existing is not None:
            unclean = self.config.elr_enabled and previous_broker_epoch != existing.epoch
            # The new registration is fenced (C4), so a retry from an unfenced incarnation leaves the ISRs
            # the way a fence does (C6); an unclean one is also purged from the ELR (K4).
            records += self._remove_broker(broker_id, unclean=unclean, include_elr=unclean)
        epoch = self.next_offset + len(records)
        records.append(RegisterBrokerRecord(broker_id, incarnation_id, epoch, host, port, fenced=True,
                                            previous_broker_epoch=previous_broker_epoch))
        return ControllerResult(records, RegisterBrokerResponse(OK, epoch))

    def heartbeat(self, broker_id: int, broker_epoch: int, *, want_fence: bool, want_shutdown: bool,
                  metadata_offset: int, now_ms: int) -> ControllerResult:
        """A broker heartbeat: unfence (C5), fence on request (C6), controlled shutdown (C8, C9)."""
        reg = self.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], HeartbeatResponse(error(Errors.BROKER_ID_NOT_REGISTERED)))
        if reg.epoch != broker_epoch:
            return ControllerResult([], HeartbeatResponse(error(Errors.STALE_BROKER_EPOCH),
                                                          reg.fenced, reg.in_controlled_shutdown))
        self.last_contact_ms[broker_id] = now_ms
        self.metadata_offsets[broker_id] = metadata_offset
        if want_shutdown:
            if reg.fenced:
                return ControllerResult([], HeartbeatResponse(OK, True, False, True))
            if reg.in_controlled_shutdown:
                if self._may_shut_down(broker_id):
                    return ControllerResult(self._fence_records(broker_id), HeartbeatResponse(OK, True, False, True))
                return ControllerResult([], HeartbeatResponse(OK, False, True, False))
            if self.leads_any(broker_id):
                # C8: CONTROLLED_SHUTDOWN: move its leaderships (Kafka also takes it out of every ISR), then
                # the registration change last, so its offset is the one others must reach (C9).
                records = self._remove_broker(broker_id, overrides={broker_id: False})
                records.append(BrokerRegistrationChangeRecord(broker_id, reg.epoch, in_controlled_shutdown=True))
                return ControllerResult(records, HeartbeatResponse(OK, False, True, False))
            # C8: leads nothing: SHUTDOWN_NOW.
            return ControllerResult(self._fence_records(broker_id), HeartbeatResponse(OK, True, False, True))
        if reg.fenced:
            if not want_fence and metadata_offset >= reg.epoch:
                # C5: caught up to its own registration record.
                return ControllerResult(self._unfence_records(broker_id), HeartbeatResponse(OK, False))
            return ControllerResult([], HeartbeatResponse(OK, True))
        if want_fence:
            return ControllerResult(self._fence_records(broker_id), HeartbeatResponse(OK, True))
        return ControllerResult([], HeartbeatResponse(OK, False, reg.in_controlled_shutdown))

    def _may_shut_down(self, broker_id: int) -> bool:
        """C9: CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every other unfenced, not
        shutting-down broker has reached its controlled-shutdown offset."""
        if self.leads_any(broker_id):
            return False
        target = self.brokers[broker_id].controlled_shutdown_offset or 0
        return all(self.metadata_offsets.get(b, -1) >= target for b, r in self.brokers.items()
                   if b != broker_id and not r.fenced and not r.in_controlled_shutdown)

    def fence_broker(self, broker_id: int) -> ControllerResult:
        """Fence a broker now (session timeout, operator); response: a KafkaError (C6)."""
        reg = self.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], error(Errors.BROKER_ID_NOT_REGISTERED))
        if reg.fenced:
            return ControllerResult([], OK)
        return ControllerResult(self._fence_records(broker_id), OK)

    def unfence_broker(self, broker_id: int) -> ControllerResult:
        """Unfence a broker without a heartbeat's catch-up check (C5); response: a KafkaError."""
        reg = self.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], error(Errors.BROKER_ID_NOT_REGISTERED))
        if not reg.fenced:
            return ControllerResult([], OK)
        return ControllerResult(self._unfence_records(broker_id), OK)

    def check_session_timeouts(self, now_ms: int) -> ControllerResult:
        """C6: fence the first unfenced broker (by id) whose session expired; response: its id or None.
        One broker per result (C1): call again after replaying until it returns no records."""
        for broker_id in sorted(self.brokers):
            reg = self.brokers[broker_id]
            if reg.fenced:
                continue
            last = self.last_contact_ms.setdefault(broker_id, now_ms)
            if now_ms - last > self.config.session_timeout_ms:
                return ControllerResult(self._fence_records(broker_id), broker_id)
        return ControllerResult([], None)

    def _fence_records(self, broker_id: int) -> list[Any]:
        reg = self.brokers[broker_id]
        records = self._remove_broker(broker_id, overrides={broker_id: False})
        records.append(FenceBrokerRecord(broker_id, reg.epoch))
        return records

    def _unfence_records(self, broker_id: int) -> list[Any]:
        reg = self.brokers[broker_id]
        # C5: no ISR change; C10/K3: leaderless partitions may now elect this broker.
        return [UnfenceBrokerRecord(broker_id, reg.epoch), *self._elect_leaderless({broker_id: True})]

    def _remove_broker(self, broker_id: int, *, unclean: bool = False, include_elr: bool = False,
                       overrides: Mapping[int, bool] | None = None) -> list[PartitionChangeRecord]:
        """C6 (v3.5: never the last ISR member; K966: always, then K2/K3), and K4 for an unclean broker."""
        overrides = dict(overrides or {broker_id: False})
        records = []
        for tp, p in self.partitions():
            if broker_id not in p.isr and p.leader != broker_id and not (include_elr and broker_id in p.elr):
                continue
            builder = self._builder(tp, overrides).set_target_isr([r for r in p.isr if r != broker_id])
            if unclean:
                builder.set_unclean_shutdown_replicas([broker_id])
            if self.unclean_enabled(tp[0]):
                builder.set_election(Election.UNCLEAN)
            record = builder.build()
            if record is not None:
                records.append(record)
        return records

    def _elect_leaderless(self, overrides: Mapping[int, bool] | None = None) -> list[PartitionChangeRecord]:
        records = []
        for tp, p in self.partitions():
            if p.leader != NO_LEADER:
                continue
            builder = self._builder(tp, overrides)
            if self.unclean_enabled(tp[0]):
                builder.set_election(Election.UNCLEAN)
            record = builder.build()
            if record is not None:
                records.append(record)
        return records

    # ================================================================================== topics / config
    def create_topic(self, name: str, *, partitions: int = 1, replication_factor: int | None = None,
                     assignment: Mapping[int, Sequence[int]] | None = None, topic_id: str | None = None,
                     rng: random.Random | None = None) -> ControllerResult:
        """Create a topic: explicit ``assignment`` or ``replication_factor`` placed round-robin over the
        usable brokers starting at ``rng``'s choice (0 without rng). The ISR is the live replicas; the
        leader the first of them (Kafka)."""
        if name in self.topics:
            return ControllerResult([], CreateTopicResponse(error(Errors.TOPIC_ALREADY_EXISTS, name)))
        # Kafka's topic name rules: 1-249 of [a-zA-Z0-9._-], not "." or "..".
        if not name or len(name) > 249 or name in (".", "..") or any(
                c not in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-" for c in name):
            return ControllerResult([], CreateTopicResponse(error(Errors.INVALID_TOPIC_EXCEPTION, name)))
        live = [b for b in sorted(self.brokers) if self._acceptor()(b)]
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
                           else uuid.uuid5(uuid.NAMESPACE_OID, f"{name}@{self.next_offset}"))
        records: list[Any] = [TopicRecord(name, topic_id)]
        for pid in sorted(assignment):
            replicas = list(assignment[pid])
            problem = validate_target(replicas, self.brokers)
            if not problem.ok:
                return ControllerResult([], CreateTopicResponse(problem))
            isr = [r for r in replicas if self._acceptor()(r)]
            if not isr:
                return ControllerResult([], CreateTopicResponse(error(
                    Errors.INVALID_REPLICATION_FACTOR, f"partition {pid}: no usable replica in {replicas}")))
            records.append(PartitionRecord(topic_id, pid, tuple(replicas), tuple(isr), isr[0]))
        return ControllerResult(records, CreateTopicResponse(OK, topic_id))

    def set_config(self, resource_type: str, resource_name: str, name: str, value: str | None) -> ControllerResult:
        """A dynamic config change (cluster: resource ("broker", "")) as a ConfigRecord; KIP-435's
        parallelism settings affect only steps planned after it (seed 002). ``reassignment.mode`` decides how
        reassignments submitted afterwards are driven; a running incremental one takes its next step under
        the mode then in force (all-at-once: the rest of the move in one step)."""
        if resource_type not in ("broker", "topic"):
            return ControllerResult([], error(Errors.INVALID_REQUEST, f"resource type {resource_type!r}"))
        try:
            if value is not None and name in (MIN_ISR, PARALLEL_REPLICAS, PARALLEL_PARTITIONS, PARALLEL_LEADERS):
                if int(value) < 1:
                    raise ValueError(f"{name} must be >= 1")
            if value is not None and name == UNCLEAN:
                _parse_bool(value)
            if value is not None and name == REASSIGNMENT_MODE and value not in REASSIGNMENT_MODES:
                raise ValueError(f"{name} must be one of {', '.join(REASSIGNMENT_MODES)}, not {value!r}")
        except ValueError as exc:
            return ControllerResult([], error(Errors.INVALID_CONFIG, str(exc)))
        return ControllerResult([ConfigRecord(resource_type, resource_name, name, value)], OK)

    # ======================================================================== AlterPartition (C13-C15)
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
        stale = self.check_broker_epoch(broker_id, broker_epoch)
        if not stale.ok:
            return ControllerResult([], AlterPartitionResponse(stale))
        info = self._topic(topic)
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
        builder = self._builder(tp).set_target_isr(isr).set_target_leader_recovery_state(leader_recovery_state)
        if self.unclean_enabled(info.name):
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

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> KafkaError:
        """STALE_BROKER_EPOCH unless ``broker_epoch`` is the broker's registered epoch (Kafka's
        ClusterControlManager.checkBrokerEpoch: a whole AlterPartition request fails on it, C13)."""
        reg = self.brokers.get(broker_id)
        if reg is None or reg.epoch != broker_epoch:
            return error(Errors.STALE_BROKER_EPOCH, f"broker {broker_id} epoch {broker_epoch} is not registered")
        return OK

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
            reg = self.brokers.get(member)
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

    # ======================================================================== reassignment (C16-C21)
    def alter_partition_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None], *,
                                      allow_rf_change: bool = True) -> ControllerResult:
        """Start, replace (Kafka allows re-targeting a partition in progress) or cancel (target None)
        reassignments; response: ``{(topic, partition): KafkaError}``. Per partition, in Kafka's order:
        UNKNOWN_TOPIC_OR_PARTITION; for a cancel NO_REASSIGNMENT_IN_PROGRESS or (C21) INVALID_REPLICA_ASSIGNMENT
        when the revert would need a disabled unclean election; otherwise INVALID_REPLICA_ASSIGNMENT (empty,
        duplicate, unregistered), INVALID_REPLICATION_FACTOR (KIP-860 guard, then C16's RF >= MinISR)."""
        records: list[Any] = []
        response: dict[TopicPartition, KafkaError] = {}
        for (topic, pid), target in targets.items():
            info = self._topic(topic)
            if info is None or pid not in info.partitions:
                response[(topic, pid)] = error(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            tp = (info.name, pid)
            if target is None:
                err, recs = self._cancel(tp)
            elif self.incremental_mode():
                err, recs = self._start_incremental(tp, list(target), allow_rf_change)
            else:
                err, recs = self._reassign(tp, list(target), allow_rf_change)
            response[(topic, pid)] = err
            records += recs
        return ControllerResult(records, response)

    def _validate_reassignment(self, tp: TopicPartition, target: list[int], allow_rf_change: bool) -> KafkaError:
        p = self.topics[tp[0]].partitions[tp[1]]
        problem = validate_target(target, self.brokers)
        if not problem.ok:
            return problem
        problem = check_rf_change(p, target, allow_rf_change, self.incremental.get(tp))
        if not problem.ok:
            return problem
        if self.config.reject_target_below_min_isr:
            return validate_target(target, self.brokers, self.min_isr(tp[0]))
        return OK

    def _reassign(self, tp: TopicPartition, target: list[int], allow_rf_change: bool,
                  validate: bool = True) -> tuple[KafkaError, list[Any]]:
        """C16 validation, then C18: a single change if C17 already holds, else the grow phase. Re-targeting
        a reassignment in progress merges against the current (merged) replicas and keeps the replicas it was
        adding that the new target keeps in ``adding`` (``reassignment`` module docstring)."""
        if validate:
            problem = self._validate_reassignment(tp, target, allow_rf_change)
            if not problem.ok:
                return problem, []
        p = self.topics[tp[0]].partitions[tp[1]]
        merged = merged_assignment(p.replicas, target, p.adding)
        builder = (self._builder(tp).set_target_replicas(merged.replicas)
                   .set_target_adding(merged.adding).set_target_removing(merged.removing))
        record = builder.build()
        return OK, [] if record is None else [record]

    def _cancel(self, tp: TopicPartition) -> tuple[KafkaError, list[Any]]:
        """C21: revert to the original replicas (cancels ignore KIP-860's flag)."""
        p = self.topics[tp[0]].partitions[tp[1]]
        records: list[Any] = []
        had_incremental = tp in self.incremental
        if had_incremental:
            records.append(IncrementalReassignmentRecord(self.topics[tp[0]].topic_id, tp[1], None))
        if not p.reassigning:
            if had_incremental:
                return OK, records
            return error(Errors.NO_REASSIGNMENT_IN_PROGRESS), []
        revert = revert_assignment(p, self.min_isr(tp[0]), self.config.elr_enabled)
        if revert.needs_unclean:
            if not self.unclean_enabled(tp[0]):
                return error(Errors.INVALID_REPLICA_ASSIGNMENT,
                             "reverting would need an unclean leader election (C21)"), []
            if not revert.isr and not any(self._acceptor()(r) for r in revert.replicas):
                return error(Errors.INVALID_REPLICA_ASSIGNMENT, "no live original replica to revert to"), []
        builder = (self._builder(tp).set_target_replicas(revert.replicas).set_target_isr(revert.isr)
                   .set_target_adding([]).set_target_removing([]))
        if revert.needs_unclean and not revert.isr:
            builder.set_election(Election.UNCLEAN)  # C21: unclean when the ISR would be empty
        record = builder.build()
        return OK, records + ([] if record is None else [record])

    def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None
                                     ) -> dict[TopicPartition, OngoingReassignment]:
        """Ongoing reassignments (adding or removing non-empty, or a KIP-435 final target pending)."""
        wanted = None if partitions is None else {(self._topic(t).name if self._topic(t) else t, p)
                                                   for t, p in partitions}
        out = {}
        for tp, p in self.partitions():
            if wanted is not None and tp not in wanted:
                continue
            final = self.incremental.get(tp)
            if p.reassigning or final is not None:
                out[tp] = OngoingReassignment(tuple(p.replicas), tuple(p.adding), tuple(p.removing),
                                              None if final is None else tuple(final))
        return out

    # ---------------------------------------------------------------------------- KIP-435 (seed 002)
    def _start_incremental(self, tp: TopicPartition, target: list[int],
                           allow_rf_change: bool) -> tuple[KafkaError, list[Any]]:
        problem = self._validate_reassignment(tp, target, allow_rf_change)
        if not problem.ok:
            return problem, []
        p = self.topics[tp[0]].partitions[tp[1]]
        topic_id = self.topics[tp[0]].topic_id
        if p.replicas == target and not p.reassigning:
            # Already there: nothing to plan (and a pending plan towards another target is dropped).
            return OK, [IncrementalReassignmentRecord(topic_id, tp[1], None)] if tp in self.incremental else []
        return OK, [IncrementalReassignmentRecord(topic_id, tp[1], tuple(target))]

    def advance_incremental_reassignments(self) -> ControllerResult:
        """KIP-435 driver, called periodically and after each replay: for partitions with a final target
        and no step running, finish (target reached), elect the new preferred leader after a leader step,
        or plan the next step; the seed's batch collector picks which steps start now, honouring the
        parallel partition / leader-movement limits as configured *now* (dynamic changes affect only the
        next step). Each step is an ordinary reassignment (C16-C21). Response: the steps started."""
        r_count = self._cluster_int(PARALLEL_REPLICAS, self.config.parallel_replica_count)
        p_count = self._cluster_int(PARALLEL_PARTITIONS, self.config.parallel_partition_count)
        l_count = self._cluster_int(PARALLEL_LEADERS, self.config.parallel_leader_movements)
        if not self.incremental_mode():
            # Switched to all-at-once while incremental plans were pending: their next step is the rest of
            # the move, unthrottled (the step already running is left as it is, seed 002).
            r_count = p_count = l_count = INT_MAX
        records: list[Any] = []
        running = running_leaders = 0
        candidates: dict[TopicPartition, ReassignmentStep] = {}
        for tp, final in sorted(self.incremental.items()):
            info = self.topics[tp[0]]
            p = info.partitions[tp[1]]
            if p.reassigning:
                running += 1
                step_target = [r for r in p.replicas if r not in p.removing]
                running_leaders += p.leader not in step_target or step_target[0] != p.leader
                continue
            if p.leader == NO_LEADER:
                continue  # seed 002: an offline partition is not reassigned
            if p.replicas[0] != p.leader and p.replicas[0] in p.isr and self._acceptor()(p.replicas[0]):
                # Seed 002: "in the first step we'll elect the new preferred leader".
                record = self._builder(tp).set_election(Election.PREFERRED).build()
                if record is not None:
                    records.append(record)
                    continue
            if p.replicas == final:
                records.append(IncrementalReassignmentRecord(info.topic_id, tp[1], None))
                continue
            step = plan_next_step(p.replicas, final, leader=p.leader, isr=p.isr,
                                  parallel_replica_count=r_count, min_isr=self.min_isr(tp[0]))
            if step is not None:
                candidates[tp] = step
        started = []
        for tp in collect_batch(candidates, parallel_partition_count=p_count, parallel_leader_movements=l_count,
                                running=running, running_leader_movements=running_leaders):
            err, recs = self._reassign(tp, list(candidates[tp].target), True, validate=False)
            if err.ok and recs:
                records += recs
                started.append((tp, candidates[tp]))
        return ControllerResult(records, started)

    # ============================================================================= elections (C10-C12)
    def elect_leaders(self, election_type: Election | str,
                      partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """ElectLeaders (PREFERRED or UNCLEAN); response ``{tp: KafkaError}``: ELECTION_NOT_NEEDED (the
        preferred replica leads / a leader exists), PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. With ``partitions`` None every partition
        is tried and the ELECTION_NOT_NEEDED ones are left out (as Kafka does)."""
        kind = Election(election_type) if isinstance(election_type, str) else election_type
        if kind is Election.ONLINE:
            raise ValueError("ElectLeaders takes PREFERRED or UNCLEAN")
        everything = partitions is None
        wanted = [tp for tp, _ in self.partitions()] if everything else list(partitions)
        records: list[Any] = []
        response: dict[TopicPartition, KafkaError] = {}
        for topic, pid in wanted:
            info = self._topic(topic)
            if info is None or pid not in info.partitions:
                response[(topic, pid)] = error(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            p = info.partitions[pid]
            if (kind is Election.PREFERRED and p.leader == p.replicas[0]) or \
                    (kind is Election.UNCLEAN and p.leader != NO_LEADER):
                if not everything:
                    response[(topic, pid)] = error(Errors.ELECTION_NOT_NEEDED)
                continue
            record = self._builder((info.name, pid)).set_election(kind).build()
            if record is None:
                response[(topic, pid)] = error(Errors.PREFERRED_LEADER_NOT_AVAILABLE if kind is Election.PREFERRED
                                               else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE)
                continue
            records.append(record)
            response[(topic, pid)] = OK
        return ControllerResult(records, response)

    def maybe_unclean_elect(self) -> ControllerResult:
        """Periodic C12: leaderless partitions of topics with unclean election enabled get any live
        replica as leader (declared unsafe). Response: the partitions elected."""
        records, elected = [], []
        for tp, p in self.partitions():
            if p.leader != NO_LEADER or not self.unclean_enabled(tp[0]):
                continue
            record = self._builder(tp).set_election(Election.UNCLEAN).build()
            if record is not None:
                records.append(record)
                elected.append(tp)
        return ControllerResult(records, elected)

    def balanced_unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]]
                                  ) -> ControllerResult:
        """K7 ``balanced``: for a partition with ISR = ELR = ∅, elect the LKELR member with the highest
        ``(last epoch, end offset)`` once every LKELR member answered (``replies``, from GetReplicaLogInfo).
        The new leader is the ISR alone, RECOVERING, and ELR/LKELR are cleared (as after C12). Response:
        KafkaError (ELIGIBLE_LEADERS_NOT_AVAILABLE while answers are missing or nobody is live)."""
        info = self._topic(tp[0])
        if info is None or tp[1] not in info.partitions:
            return ControllerResult([], error(Errors.UNKNOWN_TOPIC_OR_PARTITION))
        p = info.partitions[tp[1]]
        if p.leader != NO_LEADER or p.isr or p.elr:
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "ISR or ELR can still elect (K3)"))
        acceptable = self._acceptor()
        leader = balanced_recovery_leader(p.last_known_elr, dict(replies),
                                          [r for r in p.replicas if acceptable(r)])
        if leader is None:
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "waiting for every last-known-ELR member (K7)"))
        return ControllerResult([self._recovery_record(info.topic_id, tp[1], leader)], OK)

    def unclean_recovery_candidates(self, tp: TopicPartition) -> list[int]:
        """K7: the replicas to ask for their ``(last epoch, end offset)`` (GetReplicaLogInfo) before an
        unclean recovery of ``tp`` under the configured strategy; empty when no recovery is due.

        ``balanced``: only a leaderless partition with ISR = ELR = ∅; every LKELR member is asked (and all
        must answer). ``proactive``: also a leaderless partition whose ISR is empty and whose ELR members
        are all ineligible (fenced or shutting down: K3 cannot elect); every live replica is asked.
        ``manual``: never (the operator runs an unclean ElectLeaders). Without KIP-966: never (C12 applies).
        """
        info = self._topic(tp[0])
        if not self.config.elr_enabled or info is None or tp[1] not in info.partitions:
            return []
        p = info.partitions[tp[1]]
        if p.leader != NO_LEADER or p.isr:
            return []
        strategy = self.config.unclean_recovery_strategy
        acceptable = self._acceptor()
        if strategy == "balanced":
            return [] if p.elr else list(p.last_known_elr)
        if strategy == "proactive":
            if any(acceptable(r) for r in p.elr):
                return []  # K3 elects an ELR member: nothing unclean about it
            return [r for r in p.replicas if acceptable(r)]
        return []  # manual

    def unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]],
                         window_closed: bool = False) -> ControllerResult:
        """K7 under ``unclean.recovery.strategy``: elect from the answers of the replicas named by
        ``unclean_recovery_candidates``. ``balanced`` waits for every LKELR member
        (``balanced_unclean_recovery``); ``proactive`` takes the best live answer once every live replica
        answered or ``window_closed``; ``manual`` never elects here. The new leader is the ISR alone,
        RECOVERING, ELR/LKELR cleared; the election is always possible data loss. Response: KafkaError
        (ELIGIBLE_LEADERS_NOT_AVAILABLE while waiting or under ``manual``; ELECTION_NOT_NEEDED when the
        strategy has nothing to recover)."""
        strategy = self.config.unclean_recovery_strategy
        if strategy == "balanced":
            return self.balanced_unclean_recovery(tp, replies)
        info = self._topic(tp[0])
        if info is None or tp[1] not in info.partitions:
            return ControllerResult([], error(Errors.UNKNOWN_TOPIC_OR_PARTITION))
        if strategy == "manual":
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "unclean.recovery.strategy=manual: waiting for an operator's "
                                              "unclean election (K7)"))
        asked = self.unclean_recovery_candidates(tp)
        if not asked and info.partitions[tp[1]].leader != NO_LEADER:
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "the partition has a leader"))
        acceptable = self._acceptor()
        p = info.partitions[tp[1]]
        if p.isr or any(acceptable(r) for r in p.elr):
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "ISR or ELR can still elect (K3)"))
        leader = proactive_recovery_leader(asked, dict(replies), [r for r in p.replicas if acceptable(r)],
                                           window_closed)
        if leader is None:
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "waiting for the live replicas' answers (K7 proactive)"))
        return ControllerResult([self._recovery_record(info.topic_id, tp[1], leader)], OK)

    def _recovery_record(self, topic_id: str, partition_id: int, leader: int) -> PartitionChangeRecord:
        """K7: the recovered leader leads alone, RECOVERING, with ELR and LKELR cleared (a new LE)."""
        return PartitionChangeRecord(topic_id, partition_id, leader=leader, isr=(leader,), elr=(),
                                     last_known_elr=(), leader_recovery_state=RECOVERING,
                                     leader_epoch_bump=True)

    def clear_elr(self, partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """Empty ELR and LKELR (Kafka's ClearElrRecord, e.g. when the ELR feature is turned off)."""
        wanted = None if partitions is None else set(partitions)
        records = []
        for tp, p in self.partitions():
            if (wanted is None or tp in wanted) and (p.elr or p.last_known_elr):
                record = self._builder(tp).set_clear_elr().build()
                if record is not None:
                    records.append(record)
        return ControllerResult(records, OK)

    # =========================================================================== invariants (I9, K1)
    def invariant_violations(self) -> list[str]:
        """I9 (v3.5: ISR non-empty, a fenced ISR member only as the sole member; K966: K1 and no fenced
        ISR member) and structural sanity of every partition."""
        problems = []
        for (topic, pid), p in self.partitions():
            where = f"{topic}-{pid}"
            fenced_in_isr = [b for b in p.isr if b not in self.brokers or self.brokers[b].fenced]
            if not set(p.isr) <= set(p.replicas):
                problems.append(f"{where}: ISR {p.isr} not within replicas {p.replicas}")
            if p.leader != NO_LEADER and p.leader not in p.isr:
                problems.append(f"{where}: leader {p.leader} not in ISR {p.isr}")
            if not set(p.adding) <= set(p.replicas) or not set(p.removing) <= set(p.replicas) or \
                    set(p.adding) & set(p.removing):
                problems.append(f"{where}: adding {p.adding} / removing {p.removing} vs replicas {p.replicas}")
            if self.config.elr_enabled:
                problems += [f"{where}: {m}" for m in elr_invariant_violations(
                    p.replicas, p.isr, p.elr, p.last_known_elr, self.min_isr(topic))]
                if fenced_in_isr:
                    problems.append(f"{where}: K1 fenced {fenced_in_isr} in ISR {p.isr}")
            else:
                if not p.isr:
                    problems.append(f"{where}: I9 empty ISR")
                if fenced_in_isr and len(p.isr) > 1:
                    problems.append(f"{where}: I9 fenced {fenced_in_isr} in ISR {p.isr}")
                if p.elr or p.last_known_elr:
                    problems.append(f"{where}: ELR {p.elr} / LKELR {p.last_known_elr} without KIP-966")
        return problems
