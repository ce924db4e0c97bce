"""Metadata records: the only way controller state changes (compute records, then ``replay`` them).

These mirror Apache Kafka's metadata record types (``metadata/src/main/resources/common/metadata/``) with
the fields this protocol needs. The controller's log is a sequence of these; brokers copy it in order and
materialize it (T-rules). Every record round-trips through ``to_dict`` / ``record_from_dict`` so the server
can persist the log as JSON lines and ship it to brokers.

Conventions (as in Kafka): a ``PartitionChangeRecord`` field left as ``None`` means "unchanged"; its
``leader`` uses ``NO_LEADER_CHANGE`` (-2) for unchanged and ``NO_LEADER`` (-1) for "no leader". Replaying a
change record bumps the partition epoch, and the leader epoch when the record says so (``leader_epoch_bump``),
following C2: the builder that creates the record decides, replay only applies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = "RECOVERED"
RECOVERING = "RECOVERING"


@dataclass(frozen=True)
class RegisterBrokerRecord:
    """A broker registration accepted by the controller (C3, C4); ``broker_epoch`` is its log offset."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    host: str = ""
    port: int = 0
    fenced: bool = True
    in_controlled_shutdown: bool = False
    # K4: the broker epoch read from the clean-shutdown marker, -1 when the marker was missing (unclean).
    previous_broker_epoch: int = -1


@dataclass(frozen=True)
class FenceBrokerRecord:
    """The broker is fenced (C6): session timeout or shutdown."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class UnfenceBrokerRecord:
    """The broker is unfenced (C5); its epoch is kept (C7)."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord:
    """A change to a broker's registration flags (controlled shutdown, C8/C9); None = unchanged."""

    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None


@dataclass(frozen=True)
class TopicRecord:
    """A topic was created."""

    name: str
    topic_id: str


@dataclass(frozen=True)
class PartitionRecord:
    """A partition's full state (created with a topic, or a snapshot)."""

    topic_id: str
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader_recovery_state: str = RECOVERED


@dataclass(frozen=True)
class PartitionChangeRecord:
    """A change to one partition; ``None`` fields are unchanged. Replay sets PE+1 (C2)."""

    topic_id: str
    partition_id: int
    leader: int = NO_LEADER_CHANGE
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    adding: tuple[int, ...] | None = None
    removing: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    leader_recovery_state: str | None = None
    # C2: LE+1 iff the leader changes or a reassignment completes; the builder decides and says so here.
    leader_epoch_bump: bool = False


@dataclass(frozen=True)
class ConfigRecord:
    """A cluster- or topic-level configuration value (e.g. reassignment.parallel.replica.count)."""

    resource_type: str  # "broker" (cluster default) or "topic"
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class IncrementalReassignmentRecord:
    """KIP-435: the final target of an incremental reassignment (``None`` = finished or cancelled).

    The controller moves the partition towards it one step at a time; each step is an ordinary
    reassignment (C16-C21). Kept in the log so a controller replaying the log resumes the same plan.
    """

    topic_id: str
    partition_id: int
    final_replicas: tuple[int, ...] | None


@dataclass(frozen=True)
class NoOpRecord:
    """Written by the controller to advance the log (heartbeat-driven catch-up checks)."""


@dataclass(frozen=True)
class LeaderChangeRecord:
    """The epoch-start record of a new quorum leader (Kafka's LeaderChangeMessage control record, Q5): the
    first record of its epoch, whose commitment commits every earlier record. Changes no controller or
    broker state; replaying it only advances the offset."""

    leader_id: int
    leader_epoch: int
    voters: tuple[int, ...] = ()
    granting_voters: tuple[int, ...] = ()


RECORD_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        RegisterBrokerRecord,
        FenceBrokerRecord,
        UnfenceBrokerRecord,
        BrokerRegistrationChangeRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        ConfigRecord,
        NoOpRecord,
        LeaderChangeRecord,
        IncrementalReassignmentRecord,
    )
}


@dataclass
class PartitionState:
    """The controller's (and a broker's materialized) state of one partition (docs/protocol-rules.md 1.1)."""

    replicas: list[int]
    isr: list[int]
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    leader_recovery_state: str = RECOVERED

    @property
    def reassigning(self) -> bool:
        """A reassignment is in progress iff adding or removing is non-empty (1.1)."""
        return bool(self.adding or self.removing)

    def copy(self) -> PartitionState:
        """A deep copy (lists are copied)."""
        return PartitionState(**{k: (list(v) if isinstance(v, list) else v) for k, v in self.as_dict().items()})

    def as_dict(self) -> dict[str, Any]:
        """The state as a JSON-ready dict with the field names of docs/conformance.md."""
        return {f.name: (list(getattr(self, f.name)) if isinstance(getattr(self, f.name), list)
                         else getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_record(cls, rec: PartitionRecord) -> PartitionState:
        """Build the state a ``PartitionRecord`` describes."""
        return cls(list(rec.replicas), list(rec.isr), rec.leader, rec.leader_epoch, rec.partition_epoch,
                   list(rec.adding), list(rec.removing), list(rec.elr), list(rec.last_known_elr),
                   rec.leader_recovery_state)

    def apply_change(self, rec: PartitionChangeRecord) -> None:
        """Replay one change record onto this state (the only mutator of a partition, C2)."""
        if rec.isr is not None:
            self.isr = list(rec.isr)
        if rec.replicas is not None:
            self.replicas = list(rec.replicas)
        if rec.adding is not None:
            self.adding = list(rec.adding)
        if rec.removing is not None:
            self.removing = list(rec.removing)
        if rec.elr is not None:
            self.elr = list(rec.elr)
        if rec.last_known_elr is not None:
            self.last_known_elr = list(rec.last_known_elr)
        if rec.leader_recovery_state is not None:
            self.leader_recovery_state = rec.leader_recovery_state
        if rec.leader != NO_LEADER_CHANGE and rec.leader != self.leader:
            self.leader = rec.leader
        if rec.leader_epoch_bump:
            self.leader_epoch += 1
        self.partition_epoch += 1


def to_dict(record: Any) -> dict[str, Any]:
    """Serialize a record as ``{"type": ClassName, ...fields}`` (tuples become lists)."""
    body = {f.name: (list(v) if isinstance(v := getattr(record, f.name), tuple) else v)
            for f in dataclasses.fields(record)}
    return {"type": type(record).__name__, **body}


def record_from_dict(data: dict[str, Any]) -> Any:
    """Inverse of ``to_dict``; raises ``ValueError`` naming the problem for a malformed record."""
    if not isinstance(data, dict) or data.get("type") not in RECORD_TYPES:
        raise ValueError(f"unknown record type in {data!r}")
    cls = RECORD_TYPES[data["type"]]
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k != "type"}
    unknown = set(kwargs) - names
    if unknown:
        raise ValueError(f"{data['type']}: unknown fields {sorted(unknown)}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"{data['type']}: {exc}") from None
