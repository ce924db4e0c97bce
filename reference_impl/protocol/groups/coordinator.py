"""The group coordinator of one broker: every group of the ``__consumer_offsets`` partitions it leads.

Requests go in with the shell's ``token`` and a ``now_ms``; what comes out is drained with ``drain()``:
``Reply(token, result)`` answers a request (now or later: a JoinGroup waits for the rebalance, a
SyncGroup for the leader's assignment), ``Append(append_id, partition, records)`` asks the shell to write
records to the offsets partition with acks=all and to report back with ``append_done``. Timers are one
call, ``tick(now_ms)``: member sessions, pending member ids and rebalance deadlines expire there.

What must be durable before it is told (the coordinator's version of acks=all):
- an offset commit is answered NONE, and becomes visible to OffsetFetch, only after its records are
  committed in the offsets partition;
- a new generation is handed to the members (their JoinGroup answers) only after its group metadata
  record is committed, and a SyncGroup assignment only after the record carrying it is. So a generation
  number is never handed out twice, whichever broker coordinates next (Kafka writes the group metadata
  at SyncGroup only; docs/kafka-differences.md).

Leadership: ``load(partition, ...)`` replays the partition's records when this broker becomes its leader,
``unload(partition)`` drops its groups (waiting requests get NOT_COORDINATOR) when it stops being leader.
A request for a group whose partition is not loaded gets NOT_COORDINATOR.

The rules, where Kafka's ``GroupCoordinator`` is followed: KIP-394's MEMBER_ID_REQUIRED for a new member
(JoinGroup v4+), the initial delayed join of an empty group (``initial_rebalance_delay_ms``), members
waiting on a JoinGroup or SyncGroup are not expired, the leader is kept across generations while it stays
a member, protocol selection by vote, Heartbeat's REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID, OffsetCommit's member and generation checks (ILLEGAL_GENERATION for a stale
generation, REBALANCE_IN_PROGRESS while the generation's assignment is not stored yet), and the error
mapping of a failed append (NOT_COORDINATOR when leadership moved, COORDINATOR_NOT_AVAILABLE when the
write did not commit in time).

Transactional offsets (TxnOffsetCommit, KIP-98/KIP-447): written as a transactional batch of the producer
(``Append.txn``), held per producer as pending once durable, applied by the COMMIT marker the transaction
coordinator writes to the offsets partition (``complete_txn``, or the marker met while loading) and
dropped by an ABORT marker. A plain OffsetCommit and a transaction's offsets for the same partition: the
one applied last wins (Kafka compares the records' log offsets; here a transaction applies at its marker).

What it decided is also reported for the trace (``drain_events``, built by ``protocol.trace_events``; the
shell writes them before it executes the outputs of the same call, so a member is never told anything the
trace does not show yet): a generation once its record is committed (``group_generation``), each
assignment a SyncGroup answer hands a member (``group_assignment``, decoded with ``consumer_protocol``)
and each offset commit accepted, with what the request carried and the group it was validated against
(``group_commit``). The checkers judge G-commit and G-assign from them (I23, I24).

Two switches break one rule each on purpose (``reference_impl/server/bugs.py``):
``accept_stale_generation_commits`` and ``hand_leader_assignment_to_all``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from reference_impl.protocol import trace_events
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import messages as m
from reference_impl.protocol.groups.consumer_protocol import Undecodable, decode_assignment
from reference_impl.protocol.groups.group import Group, Member
from reference_impl.protocol.groups.partitioning import DEFAULT_OFFSETS_PARTITIONS, partition_for
from reference_impl.protocol.groups.records import (
    GroupMetadataRecord,
    GroupRecord,
    LogEntry,
    MemberRecord,
    OffsetCommitRecord,
    Tombstone,
    TxnMarker,
    TxnOffsets,
)
from reference_impl.protocol.groups.state import GroupState

MAX_OFFSET_METADATA_BYTES = 4096  # Kafka's offset.metadata.max.bytes


class RandomBits(Protocol):
    """The one thing the coordinator asks of a random generator (member ids)."""

    def getrandbits(self, k: int) -> int: ...


@dataclass(frozen=True)
class GroupConfig:
    """Coordinator settings, with Kafka's defaults (group.min/max.session.timeout.ms,
    group.initial.rebalance.delay.ms, offsets.topic.num.partitions) and the two rule-break switches."""

    offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    accept_stale_generation_commits: bool = False
    hand_leader_assignment_to_all: bool = False


def append_error(code: Errors) -> Errors:
    """What a client is told when the coordinator's write failed (Kafka's GroupMetadataManager mapping)."""
    if code in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT):
        return Errors.COORDINATOR_NOT_AVAILABLE
    if code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR, Errors.FENCED_LEADER_EPOCH):
        return Errors.NOT_COORDINATOR
    if code in (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE):
        return Errors.UNKNOWN_SERVER_ERROR
    return code


@dataclass
class _PendingAppend:
    """What to do when an append completes: ``kind`` is join / empty / sync / commit; ``records`` what it
    writes (a generation's record names its members as they were when it began)."""

    kind: str
    group: Group
    generation: int
    context: Any
    records: tuple = ()


@dataclass(frozen=True)
class _CommitFacts:
    """An offset commit as validated (for its trace event): the generation and member the request carried,
    the group's generation and state then, and the transaction of a TxnOffsetCommit."""

    generation: int
    member_id: str
    group_generation: int
    group_state: str
    txn: tuple[str, int, int] | None = None


class GroupCoordinator:
    """Groups of the offsets partitions this broker leads (module docstring)."""

    def __init__(self, config: GroupConfig, rng: RandomBits) -> None:
        self.config = config
        self.rng = rng
        self.loaded: dict[int, int] = {}  # offsets partition -> leader epoch it was loaded in
        self.groups: dict[str, Group] = {}
        self._out: list[m.Output] = []
        self._events: list[dict[str, Any]] = []
        self._appends: dict[int, _PendingAppend] = {}
        self._next_append = 0

    # ------------------------------------------------------------------------------------ plumbing

    def drain(self) -> list[m.Output]:
        """Replies and appends produced since the last call, in order."""
        out, self._out = self._out, []
        return out

    def drain_events(self) -> list[dict[str, Any]]:
        """Trace events of what was decided since the last call (module docstring), in order."""
        out, self._events = self._events, []
        return out

    def partition_of(self, group_id: str) -> int:
        """The offsets partition that holds ``group_id``."""
        return partition_for(group_id, self.config.offsets_partitions)

    def coordinates(self, group_id: str) -> bool:
        """Whether this broker is the group's coordinator now (its partition is loaded)."""
        return self.partition_of(group_id) in self.loaded

    def _reply(self, token: int | None, result: object) -> None:
        if token is not None:
            self._out.append(m.Reply(token, result))

    def _append(self, kind: str, group: Group, records: list[GroupRecord], context: Any = None,
                txn: tuple[str, int, int] | None = None) -> None:
        self._next_append += 1
        self._appends[self._next_append] = _PendingAppend(kind, group, group.generation, context, tuple(records))
        self._out.append(m.Append(self._next_append, group.partition, tuple(records), txn))

    # --------------------------------------------------------------------------------- leadership

    def load(self, partition: int, leader_epoch: int, records: Iterable[LogEntry], now_ms: int) -> None:
        """Become coordinator of ``partition``: replay its records (in log order) into fresh groups; a
        transaction's offsets stay pending until its marker, which may come after the load
        (``complete_txn``)."""
        self.unload(partition)
        groups: dict[str, Group] = {}
        for record in records:
            _replay(groups, partition, record, now_ms)
        for group in groups.values():
            if group.members and any(mem.assignment is None for mem in group.members.values()):
                # The generation began but its assignment was never stored: the members rejoin.
                for mem in group.members.values():
                    mem.assignment = b""
                group.state = GroupState.PREPARING_REBALANCE
                group.rebalance_deadline_ms = now_ms + group.max_rebalance_timeout_ms()
            elif group.members:
                group.state = GroupState.STABLE
        self.groups.update(groups)
        self.loaded[partition] = leader_epoch

    def unload(self, partition: int) -> None:
        """Stop coordinating ``partition``: its groups go Dead, waiting requests get NOT_COORDINATOR."""
        self.loaded.pop(partition, None)
        for gid in [g for g, grp in self.groups.items() if grp.partition == partition]:
            group = self.groups.pop(gid)
            for mem in group.members.values():
                if mem.join_token is not None:
                    self._reply(mem.join_token, m.JoinResult(Errors.NOT_COORDINATOR, member_id=mem.member_id))
                if mem.sync_token is not None:
                    self._reply(mem.sync_token, m.SyncResult(Errors.NOT_COORDINATOR))
                mem.join_token = mem.sync_token = None
            group.transition(GroupState.DEAD)

    def _live(self, pending: _PendingAppend) -> bool:
        """The group an append was made for is still this coordinator's (not unloaded meanwhile)."""
        return self.groups.get(pending.group.group_id) is pending.group

    # ---------------------------------------------------------------------------------- JoinGroup

    def join_group(self, token: int, req: m.JoinGroup, now_ms: int) -> None:
        """JoinGroup: answered at once (an error, MEMBER_ID_REQUIRED, the current generation) or when
        the rebalance completes and its generation is committed."""
        def fail(code: Errors) -> None:
            self._reply(token, m.JoinResult(code, member_id=req.member_id))

        if not req.group_id:
            return fail(Errors.INVALID_GROUP_ID)
        if not self.coordinates(req.group_id):
            return fail(Errors.NOT_COORDINATOR)
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms <= self.config.max_session_timeout_ms):
            return fail(Errors.INVALID_SESSION_TIMEOUT)
        names = tuple(name for name, _ in req.protocols)
        group = self.groups.get(req.group_id)
        if req.member_id == m.UNKNOWN_MEMBER_ID:
            if group is None:
                group = self.groups[req.group_id] = Group(req.group_id, self.partition_of(req.group_id))
            if not group.supports(req.protocol_type, names):
                return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
            member_id = f"{req.client_id}-{self.rng.getrandbits(128):032x}"
            if req.require_known_member_id:
                # KIP-394: the member must come back with this id, within its session timeout.
                group.pending_members[member_id] = now_ms + req.session_timeout_ms
                return self._reply(token, m.JoinResult(Errors.MEMBER_ID_REQUIRED, member_id=member_id))
            return self._add_member(group, token, req, member_id, now_ms)
        if group is None:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if req.member_id in group.pending_members:
            if not group.supports(req.protocol_type, names):
                return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
            del group.pending_members[req.member_id]
            return self._add_member(group, token, req, req.member_id, now_ms)
        member = group.members.get(req.member_id)
        if member is None:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if not group.supports(req.protocol_type, names):
            return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
        same = member.protocols == req.protocols
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member(member, token, req, now_ms)
            return self._maybe_complete_join(group, now_ms)
        if group.is_in(GroupState.COMPLETING_REBALANCE) and same and group.generation_persisted:
            # The member missed the answer of this generation: send it again (Kafka does the same).
            member.deadline_ms = now_ms + member.session_timeout_ms
            return self._reply(token, self._join_result(group, member))
        if group.is_in(GroupState.STABLE) and same and member.member_id != group.leader:
            member.deadline_ms = now_ms + member.session_timeout_ms
            return self._reply(token, self._join_result(group, member))
        self._update_member(member, token, req, now_ms)
        self._prepare_rebalance(group, now_ms)

    def _add_member(self, group: Group, token: int, req: m.JoinGroup, member_id: str, now_ms: int) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host, req.session_timeout_ms,
                        req.rebalance_timeout_ms, req.protocol_type, req.protocols,
                        deadline_ms=now_ms + req.session_timeout_ms, join_token=token)
        group.members[member_id] = member
        if group.leader is None:
            group.leader = member_id
        if group.protocol_type is None:
            group.protocol_type = req.protocol_type
        if group.is_in(GroupState.PREPARING_REBALANCE):
            if group.initial_rebalance_limit_ms is not None:
                # Kafka's InitialDelayedJoin: every new member pushes the initial join back, up to a limit.
                group.rebalance_deadline_ms = min(now_ms + self.config.initial_rebalance_delay_ms,
                                                  group.initial_rebalance_limit_ms)
            self._maybe_complete_join(group, now_ms)
        else:
            self._prepare_rebalance(group, now_ms)

    def _update_member(self, member: Member, token: int, req: m.JoinGroup, now_ms: int) -> None:
        if member.join_token is not None and member.join_token != token:
            # A second JoinGroup of the same member replaces the first (the client gave up on it). The
            # first is answered now: the shell keeps a connection's answers in order, so an unanswered one
            # would hold every later answer on that connection.
            self._reply(member.join_token, m.JoinResult(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.protocols = req.protocols
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.join_token = token
        member.deadline_ms = now_ms + req.session_timeout_ms

    def _prepare_rebalance(self, group: Group, now_ms: int) -> None:
        """Enter PreparingRebalance; an assignment that was not stored yet is dropped (syncs waiting for
        it get REBALANCE_IN_PROGRESS). An empty group waits the initial delay for more members."""
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            for mem in group.members.values():
                mem.assignment = b""
                if mem.sync_token is not None:
                    self._reply(mem.sync_token, m.SyncResult(Errors.REBALANCE_IN_PROGRESS))
                    mem.sync_token = None
        if group.is_in(GroupState.EMPTY):
            group.initial_rebalance_limit_ms = now_ms + max(group.max_rebalance_timeout_ms(), 0)
            group.rebalance_deadline_ms = min(now_ms + self.config.initial_rebalance_delay_ms,
                                              group.initial_rebalance_limit_ms)
        else:
            group.initial_rebalance_limit_ms = None
            group.rebalance_deadline_ms = now_ms + group.max_rebalance_timeout_ms()
        group.transition(GroupState.PREPARING_REBALANCE)
        self._maybe_complete_join(group, now_ms)

    def _maybe_complete_join(self, group: Group, now_ms: int) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        deadline_passed = group.rebalance_deadline_ms is not None and now_ms >= group.rebalance_deadline_ms
        waits_initial = group.initial_rebalance_limit_ms is not None and not deadline_passed
        if deadline_passed or (group.all_members_joined() and not waits_initial):
            self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        """The rebalance ends: members that did not rejoin are dropped, a new generation begins and is
        written; its members are answered once that record commits (``append_done``)."""
        for mem in [mem for mem in group.members.values() if mem.join_token is None]:
            self._remove_member(group, mem)
        group.generation += 1
        group.rebalance_deadline_ms = None
        group.initial_rebalance_limit_ms = None
        group.generation_persisted = False
        if not group.members:
            group.protocol = group.leader = None
            group.transition(GroupState.EMPTY)
            self._append("empty", group, [self._metadata_record(group, with_assignment=False)])
            return
        group.protocol = group.select_protocol()
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.transition(GroupState.COMPLETING_REBALANCE)
        waiting = [(mem.member_id, mem.join_token) for mem in group.members.values()]
        for mem in group.members.values():
            mem.join_token = None
            mem.deadline_ms = now_ms + mem.session_timeout_ms
        self._append("join", group, [self._metadata_record(group, with_assignment=False)], waiting)

    def _trace_assignment(self, group: Group, member: Member) -> None:
        """Report the assignment a SyncGroup answer is about to hand ``member`` (I24)."""
        data = member.assignment or b""
        decoded = decode_assignment(data, group.protocol_type)
        if isinstance(decoded, Undecodable):
            event = trace_events.group_assignment_event(group.group_id, group.generation, member.member_id,
                                                        group.partition, len(data), None, decoded.reason)
        else:
            event = trace_events.group_assignment_event(group.group_id, group.generation, member.member_id,
                                                        group.partition, len(data), list(decoded.partitions))
        self._events.append(event)

    def _join_result(self, group: Group, member: Member) -> m.JoinResult:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if member.member_id == group.leader:
            members = tuple((x.member_id, x.group_instance_id, x.metadata_for(group.protocol))
                            for x in group.members.values())
        return m.JoinResult(Errors.NONE, group.generation, group.protocol_type, group.protocol,
                            group.leader or "", member.member_id, members)

    def _trace_generation(self, group: Group, record: GroupMetadataRecord, log_offset: int) -> None:
        """Report a generation whose record just committed (before its members are answered), with the
        members, leader and protocol the record names."""
        self._events.append(trace_events.group_generation_event(
            group.group_id, record.generation, record.protocol_type, record.protocol, record.leader,
            [r.member_id for r in record.members], group.partition, log_offset))

    @staticmethod
    def _metadata_record(group: Group, with_assignment: bool) -> GroupMetadataRecord:
        return GroupMetadataRecord(
            group.group_id, group.protocol_type, group.generation, group.protocol, group.leader,
            tuple(MemberRecord(x.member_id, x.group_instance_id, x.client_id, x.client_host,
                               x.rebalance_timeout_ms, x.session_timeout_ms, x.metadata_for(group.protocol),
                               x.assignment if with_assignment else None)
                  for x in group.members.values()))

    # ---------------------------------------------------------------------------------- SyncGroup

    def sync_group(self, token: int, req: m.SyncGroup, now_ms: int) -> None:
        """SyncGroup: the leader's assignment is written; every member is answered once it commits."""
        def fail(code: Errors) -> None:
            self._reply(token, m.SyncResult(code))

        if not self.coordinates(req.group_id):
            return fail(Errors.NOT_COORDINATOR)
        group = self.groups.get(req.group_id)
        member = None if group is None else group.members.get(req.member_id)
        if group is None or member is None:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if req.generation != group.generation:
            return fail(Errors.ILLEGAL_GENERATION)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or \
                (req.protocol_name is not None and req.protocol_name != group.protocol):
            return fail(Errors.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(GroupState.EMPTY):
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return fail(Errors.REBALANCE_IN_PROGRESS)
        member.deadline_ms = now_ms + member.session_timeout_ms
        if group.is_in(GroupState.STABLE):
            self._trace_assignment(group, member)
            return self._reply(token, m.SyncResult(Errors.NONE, member.assignment, group.protocol_type,
                                                   group.protocol))
        if member.sync_token is not None and member.sync_token != token:
            self._reply(member.sync_token, m.SyncResult(Errors.REBALANCE_IN_PROGRESS))  # replaced, as above
        member.sync_token = token
        if member.member_id == group.leader and not group.sync_append_pending:
            assignments = {mid: req.assignments.get(mid, b"") for mid in group.members}
            if self.config.hand_leader_assignment_to_all:
                # bug group-double-assign: every member is handed the leader's own partitions
                assignments = dict.fromkeys(group.members, req.assignments.get(group.leader, b""))
            for mid, data in assignments.items():
                group.members[mid].assignment = data
            group.sync_append_pending = True
            self._append("sync", group, [self._metadata_record(group, with_assignment=True)], assignments)

    # ---------------------------------------------------------------------------------- Heartbeat

    def heartbeat(self, req: m.Heartbeat, now_ms: int) -> Errors:
        """Heartbeat: the member's session goes on; the error tells it to rejoin when it must."""
        if not self.coordinates(req.group_id):
            return Errors.NOT_COORDINATOR
        group = self.groups.get(req.group_id)
        member = None if group is None else group.members.get(req.member_id)
        if group is None or member is None or group.is_in(GroupState.EMPTY):
            return Errors.UNKNOWN_MEMBER_ID
        if req.generation != group.generation:
            return Errors.ILLEGAL_GENERATION
        member.deadline_ms = now_ms + member.session_timeout_ms
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    # --------------------------------------------------------------------------------- LeaveGroup

    def leave_group(self, req: m.LeaveGroup, now_ms: int) -> m.LeaveResult:
        """LeaveGroup: each named member leaves at once, and the group rebalances without it."""
        if not self.coordinates(req.group_id):
            return m.LeaveResult(Errors.NOT_COORDINATOR)
        group = self.groups.get(req.group_id)
        results = []
        for member_id in req.member_ids:
            member = None if group is None else group.members.get(member_id)
            if group is None or member is None:
                results.append((member_id, Errors.UNKNOWN_MEMBER_ID))
                continue
            results.append((member_id, Errors.NONE))
            self._remove_member_and_rebalance(group, member, now_ms)
        return m.LeaveResult(Errors.NONE, tuple(results))

    def _remove_member(self, group: Group, member: Member) -> None:
        if member.join_token is not None:
            self._reply(member.join_token, m.JoinResult(Errors.UNKNOWN_MEMBER_ID, member_id=member.member_id))
        if member.sync_token is not None:
            self._reply(member.sync_token, m.SyncResult(Errors.UNKNOWN_MEMBER_ID))
        member.join_token = member.sync_token = None
        del group.members[member.member_id]
        if group.leader == member.member_id:
            group.leader = next(iter(group.members), None)

    def _remove_member_and_rebalance(self, group: Group, member: Member, now_ms: int) -> None:
        self._remove_member(group, member)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now_ms)

    # ------------------------------------------------------------------------------------- timers

    def tick(self, now_ms: int) -> None:
        """Expire pending member ids, members whose session ran out (unless they wait on a JoinGroup or
        SyncGroup) and rebalances whose deadline passed."""
        for group in list(self.groups.values()):
            expired = [mid for mid, deadline in group.pending_members.items() if now_ms >= deadline]
            for mid in expired:
                del group.pending_members[mid]
            for member in list(group.members.values()):
                waiting = member.join_token is not None or member.sync_token is not None
                if not waiting and now_ms >= member.deadline_ms and member.member_id in group.members:
                    self._remove_member_and_rebalance(group, member, now_ms)
            self._maybe_complete_join(group, now_ms)

    # ------------------------------------------------------------------------------- OffsetCommit

    def offset_commit(self, token: int, req: m.OffsetCommit, now_ms: int) -> None:
        """OffsetCommit: validated against the group's members and generation, then written; answered
        once the records commit."""
        def fail(code: Errors) -> None:
            self._reply(token, m.OffsetCommitResult(dict.fromkeys(req.offsets, code)))

        if not req.group_id:
            return fail(Errors.INVALID_GROUP_ID)
        if not self.coordinates(req.group_id):
            return fail(Errors.NOT_COORDINATOR)
        group = self.groups.get(req.group_id)
        managed = req.generation >= 0 or req.member_id != m.UNKNOWN_MEMBER_ID or req.group_instance_id is not None
        if group is None:
            if managed:
                return fail(Errors.ILLEGAL_GENERATION)
            group = self.groups[req.group_id] = Group(req.group_id, self.partition_of(req.group_id))
        else:
            stale = 0 <= req.generation < group.generation
            if self.config.accept_stale_generation_commits and stale:
                pass  # bug offsets-commit-stale-generation: the old generation's commit goes through
            elif managed:
                if req.member_id not in group.members:
                    return fail(Errors.UNKNOWN_MEMBER_ID)
                if req.generation != group.generation:
                    return fail(Errors.ILLEGAL_GENERATION)
                if group.is_in(GroupState.COMPLETING_REBALANCE):
                    return fail(Errors.REBALANCE_IN_PROGRESS)
                member = group.members[req.member_id]
                member.deadline_ms = now_ms + member.session_timeout_ms
            elif not group.is_in(GroupState.EMPTY):
                return fail(Errors.UNKNOWN_MEMBER_ID)  # only members commit into a group with members
        facts = _CommitFacts(req.generation, req.member_id, group.generation, group.state.value)
        self._write_offsets(token, group, req.offsets, now_ms, facts)

    def _write_offsets(self, token: int, group: Group, offsets: dict[tuple[str, int], tuple[int, int, str]],
                       now_ms: int, facts: _CommitFacts) -> None:
        """Write the offset records of a validated commit (a transaction's when ``facts.txn`` names its
        producer); an offset whose metadata is too large is refused alone."""
        errors: dict[tuple[str, int], Errors] = {}
        records: list[GroupRecord] = []
        for tp, (offset, epoch, metadata) in offsets.items():
            if len((metadata or "").encode()) > MAX_OFFSET_METADATA_BYTES:
                errors[tp] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            records.append(OffsetCommitRecord(group.group_id, tp[0], tp[1], offset, epoch, metadata or "", now_ms))
        if not records:
            return self._reply(token, m.OffsetCommitResult(errors))
        txn = facts.txn
        producer_id = None if txn is None else txn[1]
        self._append("commit", group, records, (token, errors, records, producer_id, facts), txn=txn)

    # ---------------------------------------------------------------------------- TxnOffsetCommit

    def txn_offset_commit(self, token: int, req: m.TxnOffsetCommit, now_ms: int) -> None:
        """TxnOffsetCommit: checked as Kafka checks it (a group unknown here is created empty; a member id
        or generation, when given, must be current), then written as a transactional batch of the
        producer; answered once durable, applied only by the transaction's COMMIT marker."""
        def fail(code: Errors) -> None:
            self._reply(token, m.OffsetCommitResult(dict.fromkeys(req.offsets, code)))

        if not req.group_id:
            return fail(Errors.INVALID_GROUP_ID)
        if not self.coordinates(req.group_id):
            return fail(Errors.NOT_COORDINATOR)
        group = self.groups.get(req.group_id)
        if group is None:
            group = self.groups[req.group_id] = Group(req.group_id, self.partition_of(req.group_id))
        if req.member_id and req.member_id != m.UNKNOWN_MEMBER_ID and req.member_id not in group.members:
            return fail(Errors.UNKNOWN_MEMBER_ID)
        if req.generation >= 0 and req.generation != group.generation:
            return fail(Errors.ILLEGAL_GENERATION)
        facts = _CommitFacts(req.generation, req.member_id, group.generation, group.state.value,
                             (req.transactional_id, req.producer_id, req.producer_epoch))
        self._write_offsets(token, group, req.offsets, now_ms, facts)

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker of ``producer_id`` was written to offsets partition ``partition`` (this broker leads
        it): the transaction's pending offsets in its groups take effect or are dropped."""
        for group in self.groups.values():
            if group.partition == partition:
                group.end_txn(producer_id, commit)

    # -------------------------------------------------------------------------------- append done

    def append_done(self, append_id: int, error: Errors, now_ms: int, log_offset: int = -1) -> None:
        """The shell's report on an ``Append``: committed (NONE) or failed (the produce error);
        ``log_offset``: where its records are in the offsets partition (-1 when not known), for the trace."""
        pending = self._appends.pop(append_id)
        live = self._live(pending)
        group = pending.group
        if pending.kind == "commit":
            token, errors, records, producer_id, facts = pending.context
            if error == Errors.NONE and not live:
                error = Errors.NOT_LEADER_OR_FOLLOWER  # committed, but the group moved: the client retries
            code = append_error(error) if error != Errors.NONE else Errors.NONE
            if code == Errors.NONE:
                self._events.append(trace_events.group_commit_event(
                    group.group_id, facts.generation, facts.member_id, facts.group_generation, facts.group_state,
                    [(r.topic, r.partition, r.offset) for r in records], group.partition, log_offset, facts.txn))
                # a transaction's offsets wait for its COMMIT marker (``complete_txn``)
                target = group.offsets if producer_id is None else group.pending_txn_offsets.setdefault(producer_id, {})
                for r in records:
                    target[(r.topic, r.partition)] = (r.offset, r.leader_epoch, r.metadata)
            errors.update(dict.fromkeys(((r.topic, r.partition) for r in records), code))
            self._reply(token, m.OffsetCommitResult(errors))
            return
        if pending.kind == "sync":
            group.sync_append_pending = False
            if not live or group.generation != pending.generation or not group.is_in(GroupState.COMPLETING_REBALANCE):
                return  # unloaded (answered then) or a new rebalance began (syncs answered REBALANCE_IN_PROGRESS)
            if error != Errors.NONE:
                code = append_error(error)
                for mem in group.members.values():
                    if mem.sync_token is not None:
                        self._reply(mem.sync_token, m.SyncResult(code))
                        mem.sync_token = None
                self._prepare_rebalance(group, now_ms)
                return
            group.transition(GroupState.STABLE)
            for mem in group.members.values():
                mem.deadline_ms = now_ms + mem.session_timeout_ms
                if mem.sync_token is not None:
                    self._trace_assignment(group, mem)
                    self._reply(mem.sync_token, m.SyncResult(Errors.NONE, mem.assignment, group.protocol_type,
                                                             group.protocol))
                    mem.sync_token = None
            return
        # join / empty: the generation's record
        same_generation = live and group.generation == pending.generation
        if error == Errors.NONE and same_generation:
            group.generation_persisted = True
            self._trace_generation(group, pending.records[0], log_offset)
        if pending.kind == "empty":
            return
        if error != Errors.NONE or not live:
            code = append_error(error) if error != Errors.NONE else Errors.NOT_COORDINATOR
            for member_id, token in pending.context:
                self._reply(token, m.JoinResult(code, member_id=member_id))
            if same_generation and group.is_in(GroupState.COMPLETING_REBALANCE):
                self._prepare_rebalance(group, now_ms)
            return
        for member_id, token in pending.context:
            member = group.members.get(member_id) if same_generation else None
            if member is None:
                # Left or expired while the record was written, or the group moved on: rejoin.
                self._reply(token, m.JoinResult(Errors.UNKNOWN_MEMBER_ID if not same_generation
                                                else Errors.REBALANCE_IN_PROGRESS, member_id=member_id))
                continue
            self._reply(token, self._join_result(group, member))

    # ------------------------------------------------------------------- OffsetFetch, Describe, List

    def offset_fetch(self, group_id: str, partitions: list[tuple[str, int]] | None,
                     require_stable: bool = False) -> m.OffsetFetchResult:
        """OffsetFetch: committed offsets of ``partitions`` (None: every partition with one). With
        ``require_stable`` (KIP-447, what read_committed consumers ask) a partition for which an open
        transaction holds an offset is UNSTABLE_OFFSET_COMMIT, so the consumer waits for the outcome."""
        if not self.coordinates(group_id):
            return m.OffsetFetchResult(Errors.NOT_COORDINATOR)
        group = self.groups.get(group_id)
        offsets = {} if group is None else group.offsets
        wanted = list(offsets) if partitions is None else partitions
        unstable = {tp: Errors.UNSTABLE_OFFSET_COMMIT for tp in wanted
                    if require_stable and group is not None and group.has_pending_txn_offset(tp)}
        if partitions is None:
            return m.OffsetFetchResult(Errors.NONE, dict(offsets), unstable)
        return m.OffsetFetchResult(Errors.NONE, {tp: offsets.get(tp, (-1, -1, "")) for tp in partitions}, unstable)

    def describe_group(self, group_id: str) -> m.GroupDescription:
        """DescribeGroups for one group (Dead with no error for a group unknown here, as Kafka)."""
        if not self.coordinates(group_id):
            return m.GroupDescription(group_id, Errors.NOT_COORDINATOR, "", "", "")
        group = self.groups.get(group_id)
        if group is None:
            return m.GroupDescription(group_id, Errors.NONE, GroupState.DEAD.value, "", "")
        stable = group.is_in(GroupState.STABLE)
        members = tuple(m.MemberDescription(x.member_id, x.group_instance_id, x.client_id, x.client_host,
                                            x.metadata_for(group.protocol) if stable else b"",
                                            x.assignment if stable else b"")
                        for x in group.members.values())
        return m.GroupDescription(group_id, Errors.NONE, group.state.value, group.protocol_type or "",
                                  (group.protocol or "") if stable else "", members)

    def list_groups(self, states: set[str] | None = None) -> list[m.GroupListing]:
        """ListGroups: the groups this coordinator holds (optionally only those in ``states``)."""
        return [m.GroupListing(g.group_id, g.protocol_type or "", g.state.value)
                for g in self.groups.values() if not states or g.state.value in states]


def _replay(groups: dict[str, Group], partition: int, record: LogEntry, now_ms: int) -> None:
    """Apply one record of the offsets partition to ``groups`` while loading it."""
    if isinstance(record, TxnOffsets):
        for r in record.records:
            group = groups.setdefault(r.group, Group(r.group, partition))
            group.pending_txn_offsets.setdefault(record.producer_id, {})[(r.topic, r.partition)] = (
                r.offset, r.leader_epoch, r.metadata)
    elif isinstance(record, TxnMarker):
        for group in groups.values():
            group.end_txn(record.producer_id, record.commit)
    elif isinstance(record, OffsetCommitRecord):
        group = groups.setdefault(record.group, Group(record.group, partition))
        group.offsets[(record.topic, record.partition)] = (record.offset, record.leader_epoch, record.metadata)
    elif isinstance(record, GroupMetadataRecord):
        group = groups.setdefault(record.group, Group(record.group, partition))
        group.generation = record.generation
        group.protocol_type = record.protocol_type
        group.protocol = record.protocol
        group.leader = record.leader
        group.state = GroupState.EMPTY
        group.members = {
            r.member_id: Member(r.member_id, r.group_instance_id, r.client_id, r.client_host, r.session_timeout_ms,
                                r.rebalance_timeout_ms, record.protocol_type or "",
                                ((record.protocol or "", r.subscription),), now_ms + r.session_timeout_ms,
                                assignment=r.assignment)  # type: ignore[arg-type]
            for r in record.members}
    elif isinstance(record, Tombstone):
        kind = record.key[0]
        if kind == "offset":
            group = groups.get(record.key[1])
            if group is not None:
                group.offsets.pop((record.key[2], int(record.key[3])), None)
        elif kind == "group":
            groups.pop(record.key[1], None)
