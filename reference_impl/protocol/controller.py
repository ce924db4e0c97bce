"""The KRaft controller (Kafka's QuorumController): the replicated state, ``replay``, and the control managers
that decide (``protocol.control``).

Compute records, then replay them. Every handler (``register_broker``, ``heartbeat``, ``alter_partition``,
``alter_partition_reassignments``, ``elect_leaders``, ...) is a method here that hands the request to the
control manager owning its concern; the manager reads the state and returns a
``ControllerResult(records, response)`` without changing it. ``replay(record, offset)`` is the only mutator
of the replicated state, used alike for live operation (after the server made the records durable, C1) and
for recovery from the log. The caller must append and replay one result before asking for the next one:
handlers compute against the state as replayed so far (C1: one change at a time). A result's response is
what the requester gets *once its records are committed*; a result with no records is answered at once.

Soft state (not replicated, as in Kafka's BrokerHeartbeatManager) lives in cluster control
(``control.cluster``): each broker's last heartbeat time and reported metadata offset.

Server guide (one asyncio task owns the controller; every call below returns a ``ControllerResult``):

- requests: ``register_broker``, ``heartbeat`` (``metadata_offset`` = the last metadata offset the broker
  has applied), ``alter_partition``, ``create_topic``, ``alter_partition_reassignments``,
  ``list_partition_reassignments`` (a query, returns a dict), ``elect_leaders``, ``set_config``;
- timers: ``check_session_timeouts(now_ms)`` (repeat until no records), ``maybe_unclean_elect()``,
  ``advance_incremental_reassignments()`` (KIP-435 mode), K7's ``unclean_recovery``;
- for each result: append ``records`` to the log (fsync, C1), ``replay`` each at its offset, then send
  ``response``. An empty ``records`` means answer at once.

Offsets: ``next_offset`` is the offset the next appended record gets. A broker's epoch is the offset of its
``RegisterBrokerRecord`` (C4), so the server must assign offsets contiguously from ``next_offset`` (``replay``
without an offset does exactly that).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .control.cluster import ClusterControl
from .control.configuration import ConfigurationControl, ControllerConfig
from .control.election import ElectionControl
from .control.reassignment import OngoingReassignment, ReassignmentControl
from .control.replication import ReplicationControl
from .control.result import ControllerResult, TopicPartition
from .control.state import BrokerRegistration, TopicInfo
from .elr import elr_invariant_violations
from .errors import InvariantViolation, KafkaError
from .partition_change import Election
from .records import (
    NO_LEADER,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    IncrementalReassignmentRecord,
    LeaderChangeRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionState,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

if TYPE_CHECKING:  # the caller owns randomness; the core only takes a generator
    import random

__all__ = ["Controller", "ControllerConfig", "ControllerResult"]


class Controller:
    """The controller state machine (module docstring): managers compute, ``replay`` mutates."""

    def __init__(self, config: ControllerConfig | None = None) -> None:
        """Start empty; the state is rebuilt by replaying the metadata log."""
        self.config = config or ControllerConfig()
        self.brokers: dict[int, BrokerRegistration] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.configs: dict[tuple[str, str], dict[str, str]] = {}
        self.incremental: dict[TopicPartition, list[int]] = {}  # KIP-435 final targets
        self.last_offset = -1
        self.configuration = ConfigurationControl(self)
        self.cluster = ClusterControl(self)
        self.replication = ReplicationControl(self)
        self.elections = ElectionControl(self)
        self.reassignments = ReassignmentControl(self)

    # ===================================================================================== state queries
    @property
    def next_offset(self) -> int:
        """The offset the next appended record will get (a broker epoch is such an offset, C4)."""
        return self.last_offset + 1

    def find_topic(self, topic: str) -> TopicInfo | None:
        """A topic by name or by id, or None."""
        if topic in self.topics:
            return self.topics[topic]
        name = self.topic_names.get(topic)
        return None if name is None else self.topics.get(name)

    def partition(self, topic: str, partition_id: int) -> PartitionState | None:
        """The partition's state by topic name (or id), or None."""
        info = self.find_topic(topic)
        return None if info is None else info.partitions.get(partition_id)

    def partitions(self) -> list[tuple[TopicPartition, PartitionState]]:
        """Every partition, ordered by topic name then partition id (the order handlers use)."""
        return [((t.name, pid), t.partitions[pid]) for t in sorted(self.topics.values(), key=lambda t: t.name)
                for pid in sorted(t.partitions)]

    def leads_any(self, broker_id: int) -> bool:
        """Whether the broker leads any partition (C8, C9)."""
        return any(p.leader == broker_id for _, p in self.partitions())

    def min_isr(self, topic: str | None = None) -> int:
        """min.insync.replicas for a topic (``ConfigurationControl.min_isr``)."""
        return self.configuration.min_isr(topic)

    def unclean_enabled(self, topic: str | None = None) -> bool:
        """unclean.leader.election.enable for a topic (C12; ``ConfigurationControl.unclean_enabled``)."""
        return self.configuration.unclean_enabled(topic)

    def incremental_mode(self) -> bool:
        """Whether new reassignments run as KIP-435 steps (``ConfigurationControl.incremental_mode``)."""
        return self.configuration.incremental_mode()

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
            self.cluster.reset_session(record.broker_id)
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
        elif isinstance(record, (NoOpRecord, LeaderChangeRecord)):
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

    # ================================================= handlers: cluster control (C3-C9, ClusterControl)
    def register_broker(self, broker_id: int, incarnation_id: str, **options: Any) -> ControllerResult:
        """C3/C4/K4 registration (``ClusterControl.register_broker``: host, port, previous_broker_epoch)."""
        return self.cluster.register_broker(broker_id, incarnation_id, **options)

    def heartbeat(self, broker_id: int, broker_epoch: int, **options: Any) -> ControllerResult:
        """C5-C9 heartbeat (``ClusterControl.heartbeat``: want_fence, want_shutdown, metadata_offset, now_ms)."""
        return self.cluster.heartbeat(broker_id, broker_epoch, **options)

    def fence_broker(self, broker_id: int) -> ControllerResult:
        """C6: fence now (``ClusterControl.fence_broker``)."""
        return self.cluster.fence_broker(broker_id)

    def unfence_broker(self, broker_id: int) -> ControllerResult:
        """C5: unfence without the catch-up check (``ClusterControl.unfence_broker``)."""
        return self.cluster.unfence_broker(broker_id)

    def check_session_timeouts(self, now_ms: int) -> ControllerResult:
        """C6: fence one expired session per result (``ClusterControl.check_session_timeouts``)."""
        return self.cluster.check_session_timeouts(now_ms)

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> KafkaError:
        """STALE_BROKER_EPOCH unless registered with that epoch (``ClusterControl.check_broker_epoch``)."""
        return self.cluster.check_broker_epoch(broker_id, broker_epoch)

    # ============================================= handlers: replication control (ReplicationControl)
    def create_topic(self, name: str, *, partitions: int = 1, replication_factor: int | None = None,
                     assignment: Mapping[int, Sequence[int]] | None = None, topic_id: str | None = None,
                     rng: random.Random | None = None) -> ControllerResult:
        """Create a topic (``ReplicationControl.create_topic``)."""
        return self.replication.create_topic(name, partitions=partitions, replication_factor=replication_factor,
                                             assignment=assignment, topic_id=topic_id, rng=rng)

    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, partition_id: int,
                        **options: Any) -> ControllerResult:
        """C13-C15/C19 AlterPartition (``ReplicationControl.alter_partition``: leader_epoch, partition_epoch,
        new_isr, leader_recovery_state, request_version)."""
        return self.replication.alter_partition(broker_id, broker_epoch, topic, partition_id, **options)

    # ===================================================== handlers: elections (C10, C12, K7, ElectionControl)
    def elect_leaders(self, election_type: Election | str,
                      partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """ElectLeaders, PREFERRED or UNCLEAN (``ElectionControl.elect_leaders``)."""
        return self.elections.elect_leaders(election_type, partitions)

    def maybe_unclean_elect(self) -> ControllerResult:
        """Periodic C12 (``ElectionControl.maybe_unclean_elect``)."""
        return self.elections.maybe_unclean_elect()

    def unclean_recovery_candidates(self, tp: TopicPartition) -> list[int]:
        """K7: whom to ask before an unclean recovery (``ElectionControl.unclean_recovery_candidates``)."""
        return self.elections.unclean_recovery_candidates(tp)

    def unclean_recovery_queries(self) -> dict[int, list[TopicPartition]]:
        """K7: broker -> partitions to ask it about (``ElectionControl.unclean_recovery_queries``)."""
        return self.elections.unclean_recovery_queries()

    def unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]],
                         window_closed: bool = False) -> ControllerResult:
        """K7 under the configured strategy (``ElectionControl.unclean_recovery``)."""
        return self.elections.unclean_recovery(tp, replies, window_closed)

    def balanced_unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]]
                                  ) -> ControllerResult:
        """K7 ``balanced`` (``ElectionControl.balanced_unclean_recovery``)."""
        return self.elections.balanced_unclean_recovery(tp, replies)

    def clear_elr(self, partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """Empty ELR and LKELR (``ElectionControl.clear_elr``)."""
        return self.elections.clear_elr(partitions)

    # ================================================= handlers: reassignment (C16-C21, ReassignmentControl)
    def alter_partition_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None], *,
                                      allow_rf_change: bool = True) -> ControllerResult:
        """Start, re-target or cancel (``ReassignmentControl.alter_partition_reassignments``)."""
        return self.reassignments.alter_partition_reassignments(targets, allow_rf_change=allow_rf_change)

    def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None
                                     ) -> dict[TopicPartition, OngoingReassignment]:
        """Ongoing reassignments (``ReassignmentControl.list_partition_reassignments``)."""
        return self.reassignments.list_partition_reassignments(partitions)

    def advance_incremental_reassignments(self) -> ControllerResult:
        """KIP-435 steps due now (``ReassignmentControl.advance_incremental_reassignments``)."""
        return self.reassignments.advance_incremental_reassignments()

    # ============================================== handlers: configuration (ConfigurationControl)
    def set_config(self, resource_type: str, resource_name: str, name: str, value: str | None) -> ControllerResult:
        """A dynamic config change (``ConfigurationControl.set_config``)."""
        return self.configuration.set_config(resource_type, resource_name, name, value)

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
