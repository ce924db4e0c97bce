"""The records a coordinator writes to ``__consumer_offsets`` and reads back when it loads a partition.

Two kinds, keyed as Kafka keys them (an offset commit by group, topic and partition; group metadata by
group), so compaction semantics would carry over: the last record of a key wins, a record without a value
(a tombstone) deletes the key.

- ``OffsetCommitRecord``: a committed offset (Kafka's OffsetCommitKey/OffsetCommitValue).
- ``GroupMetadataRecord``: the group's generation, protocol, leader and members with their assignments
  (Kafka's GroupMetadataKey/GroupMetadataValue). It is written when a generation begins (the join
  completed; members without assignments) and when the leader's assignment is stored (SyncGroup).

A transactional producer's offsets (TxnOffsetCommit) are ordinary offset-commit records in a
transactional batch; a load sees them as ``TxnOffsets`` and the transaction's end as ``TxnMarker``.

Encoding: Kafka writes these as versioned binary structs; here key and value are compact JSON (UTF-8),
with ``"t"`` naming the kind. Nothing outside a kraftcheck cluster reads this topic's bytes, and JSON keeps
the log readable in a run's evidence (docs/kafka-differences.md).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class OffsetCommitRecord:
    """One committed offset (``offset`` is the next record the group will read)."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1

    def key(self) -> tuple:
        """The compaction key."""
        return ("offset", self.group, self.topic, self.partition)


@dataclass(frozen=True)
class MemberRecord:
    """A member as group metadata stores it (subscription and assignment are opaque client bytes)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes | None


@dataclass(frozen=True)
class GroupMetadataRecord:
    """A group's generation and membership. ``members`` empty = the group is empty at ``generation``."""

    group: str
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberRecord, ...] = ()

    def key(self) -> tuple:
        """The compaction key."""
        return ("group", self.group)


@dataclass(frozen=True)
class Tombstone:
    """A deleted key (``key`` as the record's ``key()`` returns it)."""

    key: tuple


GroupRecord = OffsetCommitRecord | GroupMetadataRecord | Tombstone


@dataclass(frozen=True)
class TxnOffsets:
    """What a load reads from a transactional batch: offset commits of producer ``producer_id``'s open
    transaction, pending until a marker of that producer follows (not a record kind of its own: the
    batch's header says it is transactional)."""

    producer_id: int
    records: tuple[OffsetCommitRecord, ...]


@dataclass(frozen=True)
class TxnMarker:
    """What a load reads from a control batch: the end of producer ``producer_id``'s transaction."""

    producer_id: int
    commit: bool


LogEntry = GroupRecord | TxnOffsets | TxnMarker  # what ``GroupCoordinator.load`` replays, in log order


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def encode(record: GroupRecord) -> tuple[bytes, bytes | None]:
    """``(key bytes, value bytes or None for a tombstone)``."""
    key = record.key if isinstance(record, Tombstone) else record.key()
    key_bytes = json.dumps(list(key), separators=(",", ":")).encode()
    if isinstance(record, Tombstone):
        return key_bytes, None
    if isinstance(record, OffsetCommitRecord):
        value = {"offset": record.offset, "leader_epoch": record.leader_epoch, "metadata": record.metadata,
                 "commit_timestamp_ms": record.commit_timestamp_ms}
    else:
        value = {"protocol_type": record.protocol_type, "generation": record.generation,
                 "protocol": record.protocol, "leader": record.leader,
                 "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                              "client_id": m.client_id, "client_host": m.client_host,
                              "rebalance_timeout_ms": m.rebalance_timeout_ms,
                              "session_timeout_ms": m.session_timeout_ms,
                              "subscription": _b64(m.subscription), "assignment": _b64(m.assignment)}
                             for m in record.members]}
    return key_bytes, json.dumps(value, separators=(",", ":")).encode()


class UndecodableRecord(ValueError):
    """Bytes in the offsets topic that are not a record of this module."""


def decode(key: bytes | None, value: bytes | None) -> GroupRecord:
    """The record that ``encode`` turned into ``(key, value)``; ``UndecodableRecord`` for anything else."""
    try:
        parts = json.loads(key) if key is not None else None
        if not isinstance(parts, list) or not parts:
            raise UndecodableRecord(f"bad key {key!r}")
        if value is None:
            return Tombstone(tuple(parts))
        v = json.loads(value)
        if parts[0] == "offset":
            _, group, topic, partition = parts
            return OffsetCommitRecord(group, topic, int(partition), int(v["offset"]), int(v["leader_epoch"]),
                                      v["metadata"], int(v["commit_timestamp_ms"]))
        if parts[0] == "group":
            members = tuple(MemberRecord(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                                         int(m["rebalance_timeout_ms"]), int(m["session_timeout_ms"]),
                                         _unb64(m["subscription"]) or b"", _unb64(m["assignment"]))
                            for m in v["members"])
            return GroupMetadataRecord(parts[1], v["protocol_type"], int(v["generation"]), v["protocol"],
                                       v["leader"], members)
    except (ValueError, KeyError, TypeError) as exc:
        raise UndecodableRecord(f"cannot decode offsets-topic record {key!r}: {exc!r}") from exc
    raise UndecodableRecord(f"unknown record kind {parts[0]!r}")
