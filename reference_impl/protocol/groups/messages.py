"""The coordinator's requests and answers, as plain values (the shell maps them to and from the wire).

Field names follow Kafka's message schemas (``JoinGroupRequest.json``, ``SyncGroupRequest.json``, ...);
errors are ``Errors`` values. Subscription metadata and assignments are the client's opaque bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl.protocol.errors import Errors

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


@dataclass(frozen=True)
class JoinGroup:
    """JoinGroup: ``protocols`` are ``(name, metadata)`` in the member's order of preference.
    ``require_known_member_id`` is true from v4 on (KIP-394: a new member first gets MEMBER_ID_REQUIRED)."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str = ""
    client_host: str = ""
    group_instance_id: str | None = None
    require_known_member_id: bool = True


@dataclass(frozen=True)
class JoinResult:
    """A JoinGroup answer; the leader's carries every member's metadata for the chosen protocol."""

    error: Errors
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True)
class SyncGroup:
    """SyncGroup: the leader sends ``assignments`` (member id -> bytes); followers send none."""

    group_id: str
    generation: int
    member_id: str
    assignments: dict[str, bytes] = field(default_factory=dict)
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class SyncResult:
    """A SyncGroup answer: the member's assignment of this generation."""

    error: Errors
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class Heartbeat:
    """Heartbeat of a member in a generation."""

    group_id: str
    generation: int
    member_id: str


@dataclass(frozen=True)
class LeaveGroup:
    """LeaveGroup: one or more members leave (v3+ batches them)."""

    group_id: str
    member_ids: tuple[str, ...]


@dataclass(frozen=True)
class LeaveResult:
    """LeaveGroup's answer: a top-level error and one per member."""

    error: Errors
    members: tuple[tuple[str, Errors], ...] = ()


@dataclass(frozen=True)
class OffsetCommit:
    """OffsetCommit: ``offsets`` maps ``(topic, partition)`` to ``(offset, leader_epoch, metadata)``.
    ``generation`` -1 with an empty member id is a commit from outside group management."""

    group_id: str
    generation: int
    member_id: str
    offsets: dict[tuple[str, int], tuple[int, int, str]]
    group_instance_id: str | None = None


@dataclass(frozen=True)
class TxnOffsetCommit:
    """TxnOffsetCommit (KIP-98; KIP-447 adds the member and generation, -1 / "" when not given): offsets a
    transactional producer commits for ``group_id`` as part of its transaction. They are written to the
    offsets partition in a transactional batch and take effect when the transaction's COMMIT marker is
    written there."""

    group_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    offsets: dict[tuple[str, int], tuple[int, int, str]]
    generation: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True)
class OffsetCommitResult:
    """One error per committed partition."""

    errors: dict[tuple[str, int], Errors]


@dataclass(frozen=True)
class OffsetFetchResult:
    """OffsetFetch: ``offsets`` maps ``(topic, partition)`` to ``(offset, leader_epoch, metadata)``;
    -1 for a partition without a committed offset."""

    error: Errors
    offsets: dict[tuple[str, int], tuple[int, int, str]] = field(default_factory=dict)
    # per-partition errors (UNSTABLE_OFFSET_COMMIT for a require_stable fetch while a transaction's
    # offsets for the partition are pending, KIP-447)
    partition_errors: dict[tuple[str, int], Errors] = field(default_factory=dict)


@dataclass(frozen=True)
class MemberDescription:
    """A member as DescribeGroups shows it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """DescribeGroups' answer for one group (state ``Dead`` for a group this coordinator does not hold)."""

    group_id: str
    error: Errors
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True)
class GroupListing:
    """ListGroups' answer for one group."""

    group_id: str
    protocol_type: str
    state: str


# ------------------------------------------------------------------------------------- core -> shell


@dataclass(frozen=True)
class Reply:
    """Answer the request the shell registered as ``token`` with ``result``."""

    token: int
    result: object


@dataclass(frozen=True)
class Append:
    """Write ``records`` (``records.GroupRecord`` values) to ``__consumer_offsets`` partition ``partition``
    with acks=all, then call ``GroupCoordinator.append_done(append_id, error, now_ms)``."""

    append_id: int
    partition: int
    records: tuple
    # (transactional id, producer id, producer epoch) for a transactional batch (TxnOffsetCommit)
    txn: tuple[str, int, int] | None = None


Output = Reply | Append
