"""A broker's materialized metadata: the controller's records applied in order, batch by batch (T-rules).

The broker copies the controller's metadata log (I5) and applies it a **batch** at a time, like Kafka's
``MetadataImage`` + ``MetadataDelta``: the records of one batch are replayed onto the image, and only then
are the partitions compared with their state before the batch. A partition's role transition is decided on
that **materialized** state, so intermediate states inside one batch are never seen (docs/protocol-rules.md
2.4, scenario 25: LE2 with leader 2 and LE3 with leader 1 in one batch look like a single change to LE3).

``MetadataDelta.transitions_for(broker_id)`` classifies each changed partition for one broker with the rule
that applies (T1-T6, or ``new`` for a partition the broker hosts for the first time); the server then calls
``PartitionReplica.apply_metadata`` with the materialized state, which performs the transition.

The image also tracks broker registrations (epoch, fenced, controlled shutdown), topics, configs and the
offset of the last applied record; a broker is caught up to its own registration once that offset reaches
its broker epoch (B2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.records import (
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

# Transition labels (docs/protocol-rules.md 2.4)
NEW = "new"
T1_REMOVED = "T1"
T2_LEADER_SAME_EPOCH = "T2"
T3_LEADER_NEW_EPOCH = "T3"
T4_FOLLOWER_SAME = "T4"
T5_FOLLOWER_NEW_EPOCH = "T5"
T6_NO_LEADER = "T6"


@dataclass
class BrokerRegistration:
    """A broker as the metadata log describes it."""

    broker_id: int
    broker_epoch: int
    incarnation_id: str
    fenced: bool = True
    in_controlled_shutdown: bool = False
    host: str = ""
    port: int = 0
    previous_broker_epoch: int = -1


@dataclass(frozen=True)
class PartitionChange:
    """One partition whose materialized state changed in a batch (``before`` None = created)."""

    topic_id: str
    partition_id: int
    before: PartitionState | None
    after: PartitionState


@dataclass(frozen=True)
class PartitionTransition:
    """What a changed partition means for one broker: the T-rule and the state to apply."""

    topic_id: str
    partition_id: int
    rule: str
    state: PartitionState


def classify(broker_id: int, before: PartitionState | None, after: PartitionState) -> str | None:
    """The T-rule a change from ``before`` to ``after`` triggers on ``broker_id`` (None: not its concern)."""
    was_replica = before is not None and broker_id in before.replicas
    if broker_id not in after.replicas:
        return T1_REMOVED if was_replica else None
    if not was_replica:
        return NEW
    assert before is not None
    if after.leader == NO_LEADER:
        return T6_NO_LEADER
    new_epoch = after.leader_epoch != before.leader_epoch
    if after.leader == broker_id:
        return T3_LEADER_NEW_EPOCH if new_epoch or before.leader != broker_id else T2_LEADER_SAME_EPOCH
    if new_epoch or before.leader != after.leader:
        return T5_FOLLOWER_NEW_EPOCH
    return T4_FOLLOWER_SAME


@dataclass
class MetadataDelta:
    """The outcome of applying one batch of metadata records."""

    first_offset: int
    last_offset: int
    partitions: list[PartitionChange] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    configs: list[tuple[str, str, str]] = field(default_factory=list)

    def transitions_for(self, broker_id: int) -> list[PartitionTransition]:
        """The partitions of this batch that concern ``broker_id``, with their T-rule, in partition order."""
        out = []
        for change in self.partitions:
            rule = classify(broker_id, change.before, change.after)
            if rule is not None:
                out.append(PartitionTransition(change.topic_id, change.partition_id, rule, change.after.copy()))
        return out


class MetadataImage:
    """The broker-side materialized metadata (see the module docstring)."""

    def __init__(self) -> None:
        self.offset = -1  # offset of the last applied record
        self.topics: dict[str, str] = {}  # topic id -> name
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.brokers: dict[int, BrokerRegistration] = {}
        self.configs: dict[tuple[str, str], dict[str, str]] = {}

    def topic_id(self, name: str) -> str | None:
        """The id of the topic called ``name``."""
        for tid, tname in self.topics.items():
            if tname == name:
                return tid
        return None

    def partition(self, topic_id: str, partition_id: int) -> PartitionState | None:
        """A copy of the materialized state of one partition."""
        state = self.partitions.get((topic_id, partition_id))
        return state.copy() if state is not None else None

    def partitions_of(self, broker_id: int) -> list[tuple[str, int, PartitionState]]:
        """Every partition ``broker_id`` is a replica of (for a restarted broker taking its roles, B2)."""
        return [(t, p, s.copy()) for (t, p), s in sorted(self.partitions.items()) if broker_id in s.replicas]

    def ineligible_brokers(self) -> set[int]:
        """Registered brokers that may not join an ISR: fenced or in controlled shutdown (C14, KIP-841).
        Unregistered ids are not listed; the controller refuses them too."""
        return {b for b, reg in self.brokers.items() if reg.fenced or reg.in_controlled_shutdown}

    def broker_epochs(self) -> dict[int, int]:
        """The registered epoch of every broker (for the leader's KIP-903 check, L15/C14)."""
        return {b: reg.broker_epoch for b, reg in self.brokers.items()}

    def caught_up_to(self, offset: int) -> bool:
        """True once every record up to ``offset`` is applied (B2: offset = the broker's own epoch)."""
        return self.offset >= offset

    def config(self, resource_type: str, resource_name: str, name: str, default: str | None = None) -> str | None:
        """A config value (topic or cluster-wide), or ``default``."""
        return self.configs.get((resource_type, resource_name), {}).get(name, default)

    def apply_batch(self, entries: Sequence[tuple[int, Any]] | Iterable[tuple[int, Any]]) -> MetadataDelta:
        """Apply ``(offset, record)`` pairs of one batch in order; report the materialized changes.

        Offsets must increase; records at or below the applied offset are skipped (a re-sent batch).
        """
        entries = [(o, r) for o, r in entries if o > self.offset]
        delta = MetadataDelta(entries[0][0] if entries else self.offset + 1, self.offset)
        before: dict[tuple[str, int], PartitionState | None] = {}
        for offset, record in entries:
            if offset <= self.offset:
                raise InvariantViolation(f"metadata offset {offset} after {self.offset}")
            self._apply(record, before, delta)
            self.offset = offset
            delta.last_offset = offset
        for key, old in before.items():
            new = self.partitions[key]
            if old is None or old.as_dict() != new.as_dict():
                delta.partitions.append(PartitionChange(key[0], key[1], old, new.copy()))
        delta.partitions.sort(key=lambda c: (c.topic_id, c.partition_id))
        return delta

    def _apply(self, record: Any, before: dict[tuple[str, int], PartitionState | None],
               delta: MetadataDelta) -> None:
        if isinstance(record, PartitionRecord):
            key = (record.topic_id, record.partition_id)
            if key not in before:
                old = self.partitions.get(key)
                before[key] = old.copy() if old is not None else None
            self.partitions[key] = PartitionState.from_record(record)
        elif isinstance(record, PartitionChangeRecord):
            key = (record.topic_id, record.partition_id)
            if key not in self.partitions:
                raise InvariantViolation(f"change record for unknown partition {key}")
            if key not in before:
                before[key] = self.partitions[key].copy()
            self.partitions[key].apply_change(record)
        elif isinstance(record, TopicRecord):
            self.topics[record.topic_id] = record.name
            delta.topics.append(record.topic_id)
        elif isinstance(record, RegisterBrokerRecord):
            self.brokers[record.broker_id] = BrokerRegistration(
                record.broker_id, record.broker_epoch, record.incarnation_id, record.fenced,
                record.in_controlled_shutdown, record.host, record.port, record.previous_broker_epoch)
            delta.brokers.append(record.broker_id)
        elif isinstance(record, (FenceBrokerRecord, UnfenceBrokerRecord)):
            reg = self.brokers.get(record.broker_id)
            if reg is not None and reg.broker_epoch == record.broker_epoch:
                reg.fenced = isinstance(record, FenceBrokerRecord)
                delta.brokers.append(record.broker_id)
        elif isinstance(record, BrokerRegistrationChangeRecord):
            reg = self.brokers.get(record.broker_id)
            if reg is not None and reg.broker_epoch == record.broker_epoch:
                if record.fenced is not None:
                    reg.fenced = record.fenced
                if record.in_controlled_shutdown is not None:
                    reg.in_controlled_shutdown = record.in_controlled_shutdown
                delta.brokers.append(record.broker_id)
        elif isinstance(record, ConfigRecord):
            values = self.configs.setdefault((record.resource_type, record.resource_name), {})
            if record.value is None:
                values.pop(record.name, None)
            else:
                values[record.name] = record.value
            delta.configs.append((record.resource_type, record.resource_name, record.name))
        elif isinstance(record, (NoOpRecord, LeaderChangeRecord, IncrementalReassignmentRecord)):
            pass  # KIP-435 final targets are controller-side planning state; brokers act on partition records
        else:
            raise InvariantViolation(f"unknown metadata record {record!r}")


class InitialCatchUp:
    """B2 / T*: a (re)starting broker publishes nothing before its image reaches its own registration.

    Kafka's broker replays the metadata log into its image but installs the publishers (replica manager,
    configs) only once the initial catch-up is done; a restarted broker therefore never takes a partition
    role from an old state of the log (for example leadership in an epoch the controller ended while it was
    down). The metadata log arrives in size-limited pulls, so a catch-up can span several of them: ``add``
    holds the pulled ``(offset, record)`` batches until the last one reaches ``target`` (the broker's epoch,
    the offset of its registration record) and then returns everything as ONE batch to apply, so the
    replicas see only the materialized state at that point (scenario 25 at the scale of the whole catch-up).
    After that every pulled batch is returned as it came.
    """

    def __init__(self, target: int, applied_offset: int = -1) -> None:
        self.target = target
        self._held: list[tuple[int, Any]] = []
        self.done = applied_offset >= target

    @property
    def next_offset_after(self) -> int | None:
        """The offset of the last held record (the next pull starts after it), or None if none is held."""
        return self._held[-1][0] if self._held else None

    def add(self, batches: Sequence[Sequence[tuple[int, Any]]]) -> list[list[tuple[int, Any]]]:
        """Take pulled batches in log order; return the batches to apply now (possibly none)."""
        if self.done:
            return [list(b) for b in batches if b]
        for batch in batches:
            self._held.extend(batch)
        if not self._held or self._held[-1][0] < self.target:
            return []  # still behind our own registration: publish nothing yet
        merged, self._held = self._held, []
        self.done = True
        return [merged]
