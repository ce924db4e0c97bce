"""One classic group's state: members, generation, protocol, leader, committed offsets.

A plain container with the few rules that read only the group itself (protocol selection, "has every
member rejoined", transitions checked against ``state.VALID_PREVIOUS``); what happens to a group on a
request or a timer is the coordinator's (``coordinator``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl.protocol.groups.state import GroupState, check_transition


@dataclass
class Member:
    """A member of a group. ``join_token`` / ``sync_token``: the shell's id of a JoinGroup / SyncGroup
    the member is waiting on (Kafka's awaiting-join / awaiting-sync callbacks)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    deadline_ms: int
    assignment: bytes = b""
    join_token: int | None = None
    sync_token: int | None = None

    def metadata_for(self, protocol: str | None) -> bytes:
        """The subscription metadata the member sent for ``protocol`` (empty when it did not name it)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def protocol_names(self) -> tuple[str, ...]:
        """The protocols the member supports, in its order of preference."""
        return tuple(name for name, _ in self.protocols)


@dataclass
class Group:
    """A group as its coordinator holds it."""

    group_id: str
    partition: int
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline (KIP-394)
    offsets: dict[tuple[str, int], tuple[int, int, str]] = field(default_factory=dict)
    # producer id -> offsets its open transaction committed (TxnOffsetCommit), applied by its COMMIT marker
    pending_txn_offsets: dict[int, dict[tuple[str, int], tuple[int, int, str]]] = field(default_factory=dict)
    rebalance_deadline_ms: int | None = None
    initial_rebalance_limit_ms: int | None = None  # the latest an initial delayed join may be pushed to
    generation_persisted: bool = True
    sync_append_pending: bool = False

    def transition(self, target: GroupState) -> None:
        """Enter ``target`` (a broken invariant when the table forbids it)."""
        check_transition(self.state, target)
        self.state = target

    def is_in(self, *states: GroupState) -> bool:
        """True when the group is in one of ``states``."""
        return self.state in states

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's order of preference."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return [p for p in members[0].protocol_names() if p in common]

    def supports(self, protocol_type: str, protocols: tuple[str, ...]) -> bool:
        """Whether a member with these protocols may join (Kafka's ``supportsProtocols``)."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        if self.protocol_type is not None and protocol_type != self.protocol_type:
            return False
        return bool(set(self.candidate_protocols()) & set(protocols))

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; most votes wins (ties: the first
        member's preference), as Kafka's ``selectProtocol``."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"group {self.group_id}: members share no protocol")
        votes = dict.fromkeys(candidates, 0)
        for m in self.members.values():
            votes[next(p for p in m.protocol_names() if p in votes)] += 1
        return max(candidates, key=lambda p: votes[p])

    def all_members_joined(self) -> bool:
        """Every known member is waiting on a JoinGroup and no member id is pending (KIP-394)."""
        return not self.pending_members and all(m.join_token is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout among the members (how long a rebalance may wait for them)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def end_txn(self, producer_id: int, commit: bool) -> None:
        """A marker of ``producer_id`` was written: its pending offsets take effect (commit) or vanish."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if pending and commit:
            self.offsets.update(pending)

    def has_pending_txn_offset(self, tp: tuple[str, int]) -> bool:
        """Whether an open transaction holds an offset for ``tp`` that is not applied yet."""
        return any(tp in pending for pending in self.pending_txn_offsets.values())
