"""The classic group coordinator core: the join / sync dance, heartbeats, commits, timers, load and the
two rule-break switches, driven with an in-memory "log" that commits or fails each append."""

from __future__ import annotations

import random

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import GroupConfig, GroupCoordinator, GroupState, partition_for
from reference_impl.protocol.groups import messages as m
from reference_impl.protocol.groups.partitioning import java_string_hash
from reference_impl.protocol.groups.records import TxnMarker, TxnOffsets, decode, encode

GROUP = "g"
PROTO = (("range", b"sub"),)


class Harness:
    """A coordinator plus a log per offsets partition; appends commit unless ``fail_appends`` is set."""

    def __init__(self, **config) -> None:
        self.config = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=100, **config)
        self.core = GroupCoordinator(self.config, random.Random(1))
        self.log: dict[int, list] = {p: [] for p in range(self.config.offsets_partitions)}
        self.replies: dict[int, object] = {}
        self.held: list[m.Append] = []
        self.hold = False
        self.fail_appends: Errors | None = None
        self.token = 0
        self.now = 0
        for p in self.log:
            self.core.load(p, 0, [], self.now)

    def pump(self) -> None:
        while True:
            out = self.core.drain()
            if not out:
                return
            for o in out:
                if isinstance(o, m.Reply):
                    self.replies[o.token] = o.result
                elif self.hold:
                    self.held.append(o)
                else:
                    self.finish(o)

    def finish(self, append: m.Append) -> None:
        if self.fail_appends is None:
            # through the byte encoding, as the shell writes it
            records = [decode(*encode(r)) for r in append.records]
            if append.txn is not None:  # a transactional batch: a load sees it as the producer's pending offsets
                self.log[append.partition].append(TxnOffsets(append.txn[1], tuple(records)))
            else:
                self.log[append.partition].extend(records)
        self.core.append_done(append.append_id, self.fail_appends or Errors.NONE, self.now)

    def call(self, method: str, req) -> int:
        self.token += 1
        getattr(self.core, method)(self.token, req, self.now)
        self.pump()
        return self.token

    def join(self, member_id: str = "", client: str = "c", protocols=PROTO) -> int:
        return self.call("join_group", m.JoinGroup(GROUP, member_id, "consumer", protocols, 1000, 2000, client))

    def advance(self, ms: int) -> None:
        self.now += ms
        self.core.tick(self.now)
        self.pump()

    def group(self):
        return self.core.groups[GROUP]


def joined_member(h: Harness, client: str = "c") -> str:
    """A new member through KIP-394: MEMBER_ID_REQUIRED, then a join with the id (still waiting)."""
    first = h.replies[h.join(client=client)]
    assert first.error == Errors.MEMBER_ID_REQUIRED and first.member_id.startswith(client + "-")
    return first.member_id


def stable_single(h: Harness) -> tuple[str, int]:
    mid = joined_member(h)
    t = h.join(mid)
    assert t not in h.replies  # the initial delayed join waits
    h.advance(100)
    res = h.replies[t]
    assert (res.error, res.generation, res.leader, res.member_id) == (Errors.NONE, 1, mid, mid)
    assert [x[0] for x in res.members] == [mid]
    s = h.call("sync_group", m.SyncGroup(GROUP, 1, mid, {mid: b"p0,p1"}))
    assert h.replies[s] == m.SyncResult(Errors.NONE, b"p0,p1", "consumer", "range")
    assert h.group().state == GroupState.STABLE
    return mid, 1


def test_kafka_hash_and_partition():
    assert java_string_hash("foo") == 101574
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Utils.abs gives 0
    assert partition_for("polygenelubricants", 7) == 0
    assert partition_for("foo", 50) == 24


def test_join_sync_stable_and_second_member_rebalances():
    h = Harness()
    a, gen = stable_single(h)
    b = joined_member(h, "d")
    tb = h.join(b)
    assert h.group().state == GroupState.PREPARING_REBALANCE
    assert h.core.heartbeat(m.Heartbeat(GROUP, gen, a), h.now) == Errors.REBALANCE_IN_PROGRESS
    ta = h.join(a)
    ra, rb = h.replies[ta], h.replies[tb]
    assert ra.generation == rb.generation == 2 and ra.leader == a  # the leader stays leader
    assert {x[0] for x in ra.members} == {a, b} and rb.members == ()
    sb = h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    assert sb not in h.replies  # waits for the leader's assignment
    h.call("sync_group", m.SyncGroup(GROUP, 2, a, {a: b"p0", b: b"p1"}))
    assert h.replies[sb].assignment == b"p1"
    assert h.core.heartbeat(m.Heartbeat(GROUP, 1, a), h.now) == Errors.ILLEGAL_GENERATION
    assert h.core.heartbeat(m.Heartbeat(GROUP, 2, "nobody"), h.now) == Errors.UNKNOWN_MEMBER_ID
    assert h.core.heartbeat(m.Heartbeat(GROUP, 2, b), h.now) == Errors.NONE


def test_join_answer_waits_for_the_generation_record_and_a_failed_write_is_an_error():
    h = Harness()
    mid = joined_member(h)
    h.hold = True
    t = h.join(mid)
    h.advance(100)
    assert t not in h.replies and h.group().generation == 1
    h.fail_appends = Errors.REQUEST_TIMED_OUT
    h.finish(h.held.pop())
    h.pump()
    assert h.replies[t].error == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.group().state == GroupState.PREPARING_REBALANCE  # generation 1 was never handed out
    h.hold, h.fail_appends = False, None
    t2 = h.join(mid)
    h.advance(2000)
    assert h.replies[t2].generation == 2


def test_offset_commit_rules_and_visibility_after_the_write():
    h = Harness()
    a, gen = stable_single(h)
    tp = ("t", 0)
    stale = h.call("offset_commit", m.OffsetCommit(GROUP, gen - 1, a, {tp: (5, -1, "")}))
    assert h.replies[stale].errors == {tp: Errors.ILLEGAL_GENERATION}
    stranger = h.call("offset_commit", m.OffsetCommit(GROUP, gen, "x", {tp: (5, -1, "")}))
    assert h.replies[stranger].errors == {tp: Errors.UNKNOWN_MEMBER_ID}
    outsider = h.call("offset_commit", m.OffsetCommit(GROUP, -1, "", {tp: (5, -1, "")}))
    assert h.replies[outsider].errors == {tp: Errors.UNKNOWN_MEMBER_ID}  # the group has members
    h.hold = True
    ok = h.call("offset_commit", m.OffsetCommit(GROUP, gen, a, {tp: (7, 3, "meta")}))
    assert ok not in h.replies
    assert h.core.offset_fetch(GROUP, [tp]).offsets == {tp: (-1, -1, "")}  # not visible before it commits
    h.finish(h.held.pop())
    h.pump()
    assert h.replies[ok].errors == {tp: Errors.NONE}
    assert h.core.offset_fetch(GROUP, None).offsets == {tp: (7, 3, "meta")}


def test_commit_refused_while_the_assignment_is_not_stored():
    h = Harness()
    a, _ = stable_single(h)
    b = joined_member(h, "d")
    h.join(b)
    h.join(a)
    assert h.group().state == GroupState.COMPLETING_REBALANCE
    t = h.call("offset_commit", m.OffsetCommit(GROUP, 2, a, {("t", 0): (1, -1, "")}))
    assert h.replies[t].errors == {("t", 0): Errors.REBALANCE_IN_PROGRESS}


def test_session_expiry_removes_the_member_and_the_group_rebalances():
    h = Harness()
    a, _ = stable_single(h)
    b = joined_member(h, "d")
    tb = h.join(b)
    ta = h.join(a)
    h.call("sync_group", m.SyncGroup(GROUP, 2, a, {a: b"p0", b: b"p1"}))
    h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    assert h.replies[ta].generation == h.replies[tb].generation == 2
    h.advance(600)
    assert h.core.heartbeat(m.Heartbeat(GROUP, 2, a), h.now) == Errors.NONE  # a keeps its session, b does not
    h.advance(600)
    assert b not in h.group().members
    assert h.core.heartbeat(m.Heartbeat(GROUP, 2, a), h.now) == Errors.REBALANCE_IN_PROGRESS
    t = h.join(a)
    assert h.replies[t].generation == 3 and [x[0] for x in h.replies[t].members] == [a]


def test_leave_of_the_last_member_empties_the_group_at_a_new_generation():
    h = Harness()
    a, _ = stable_single(h)
    res = h.core.leave_group(m.LeaveGroup(GROUP, (a, "ghost")), h.now)
    h.pump()
    assert res.members == ((a, Errors.NONE), ("ghost", Errors.UNKNOWN_MEMBER_ID))
    assert h.group().state == GroupState.EMPTY and h.group().generation == 2


def test_a_new_coordinator_loads_generation_members_and_offsets_from_the_log():
    h = Harness()
    a, gen = stable_single(h)
    h.call("offset_commit", m.OffsetCommit(GROUP, gen, a, {("t", 1): (42, 0, "")}))
    part = partition_for(GROUP, h.config.offsets_partitions)
    other = GroupCoordinator(h.config, random.Random(2))
    other.load(part, 1, h.log[part], 10_000)
    g = other.groups[GROUP]
    assert (g.state, g.generation, g.leader, list(g.members)) == (GroupState.STABLE, gen, a, [a])
    assert other.offset_fetch(GROUP, [("t", 1)]).offsets == {("t", 1): (42, 0, "")}
    assert other.heartbeat(m.Heartbeat(GROUP, gen, a), 10_000) == Errors.NONE
    h.core.unload(part)
    assert h.core.heartbeat(m.Heartbeat(GROUP, gen, a), h.now) == Errors.NOT_COORDINATOR
    assert h.core.offset_fetch(GROUP, None).error == Errors.NOT_COORDINATOR


def test_unload_answers_waiting_requests_not_coordinator():
    h = Harness()
    mid = joined_member(h)
    t = h.join(mid)
    h.core.unload(partition_for(GROUP, h.config.offsets_partitions))
    h.pump()
    assert h.replies[t].error == Errors.NOT_COORDINATOR


def test_a_loaded_generation_without_assignment_makes_members_rejoin():
    h = Harness()
    mid = joined_member(h)
    h.join(mid)
    h.advance(100)  # generation 1 written, no SyncGroup yet
    part = partition_for(GROUP, h.config.offsets_partitions)
    other = GroupCoordinator(h.config, random.Random(2))
    other.load(part, 1, h.log[part], 0)
    assert other.groups[GROUP].state == GroupState.PREPARING_REBALANCE
    assert other.heartbeat(m.Heartbeat(GROUP, 1, mid), 0) == Errors.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize("bug", [False, True])
def test_switch_accept_stale_generation_commits(bug):
    h = Harness(accept_stale_generation_commits=bug)
    a, gen = stable_single(h)
    t = h.call("offset_commit", m.OffsetCommit(GROUP, gen - 1, "gone", {("t", 0): (1, -1, "")}))
    assert h.replies[t].errors == {("t", 0): Errors.NONE if bug else Errors.UNKNOWN_MEMBER_ID}


@pytest.mark.parametrize("bug", [False, True])
def test_switch_hand_leader_assignment_to_all(bug):
    h = Harness(hand_leader_assignment_to_all=bug)
    a, _ = stable_single(h)
    b = joined_member(h, "d")
    h.join(b)
    h.join(a)
    sb = h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    h.call("sync_group", m.SyncGroup(GROUP, 2, a, {a: b"p0", b: b"p1"}))
    assert h.replies[sb].assignment == (b"p0" if bug else b"p1")


def test_inconsistent_protocols_and_bad_session_timeouts_are_refused():
    h = Harness()
    stable_single(h)
    res = h.replies[h.join(protocols=(("roundrobin", b""),))]
    assert res.error == Errors.INCONSISTENT_GROUP_PROTOCOL
    t = h.call("join_group", m.JoinGroup(GROUP, "", "consumer", PROTO, 10, 2000, "c"))
    assert h.replies[t].error == Errors.INVALID_SESSION_TIMEOUT
    t = h.call("join_group", m.JoinGroup("", "", "consumer", PROTO, 1000, 2000, "c"))
    assert h.replies[t].error == Errors.INVALID_GROUP_ID


def test_a_repeated_join_or_sync_answers_the_one_it_replaces():
    h = Harness()
    a, _ = stable_single(h)
    b = joined_member(h, "d")
    first = h.join(b)
    second = h.join(b)
    assert h.replies[first].error == Errors.REBALANCE_IN_PROGRESS and second not in h.replies
    h.join(a)
    assert h.replies[second].generation == 2
    s1 = h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    s2 = h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    assert h.replies[s1].error == Errors.REBALANCE_IN_PROGRESS and s2 not in h.replies


# ------------------------------------------------------------------ transactional offsets (KIP-98, KIP-447)

PID = 77


def txn_commit(h: Harness, offsets, generation: int = -1, member: str = "", pid: int = PID) -> int:
    return h.call("txn_offset_commit", m.TxnOffsetCommit(GROUP, "tx", pid, 0, offsets, generation, member))


def marker(h: Harness, commit: bool, pid: int = PID) -> None:
    """The transaction coordinator's marker reaches the offsets partition (written and replicated)."""
    part = partition_for(GROUP, h.config.offsets_partitions)
    h.log[part].append(TxnMarker(pid, commit))
    h.core.complete_txn(part, pid, commit)


def test_txn_offsets_are_written_transactionally_and_apply_only_with_the_commit_marker():
    h = Harness()
    h.hold = True
    tp = ("t", 0)
    t = txn_commit(h, {tp: (9, -1, "")})
    (append,) = h.held
    assert append.txn == ("tx", PID, 0)  # the shell writes a transactional batch of the producer
    h.hold = False
    h.finish(append)
    h.pump()
    assert h.replies[t].errors == {tp: Errors.NONE}
    assert h.core.offset_fetch(GROUP, [tp]).offsets == {tp: (-1, -1, "")}  # pending: not visible
    stable = h.core.offset_fetch(GROUP, [tp], require_stable=True)
    assert stable.partition_errors == {tp: Errors.UNSTABLE_OFFSET_COMMIT}
    marker(h, commit=True)
    assert h.core.offset_fetch(GROUP, [tp]).offsets == {tp: (9, -1, "")}
    assert h.core.offset_fetch(GROUP, [tp], require_stable=True).partition_errors == {}


def test_an_aborted_transaction_leaves_the_committed_offset_alone():
    h = Harness()
    a, gen = stable_single(h)
    tp = ("t", 0)
    h.call("offset_commit", m.OffsetCommit(GROUP, gen, a, {tp: (4, -1, "")}))
    assert h.replies[txn_commit(h, {tp: (9, -1, "")}, gen, a)].errors == {tp: Errors.NONE}
    marker(h, commit=False)
    assert h.core.offset_fetch(GROUP, [tp]).offsets == {tp: (4, -1, "")}
    assert not h.group().pending_txn_offsets


def test_txn_offset_commit_checks_member_and_generation_when_given():
    h = Harness()
    a, gen = stable_single(h)
    tp = ("t", 0)
    assert h.replies[txn_commit(h, {tp: (1, -1, "")}, gen, "stranger")].errors == {tp: Errors.UNKNOWN_MEMBER_ID}
    assert h.replies[txn_commit(h, {tp: (1, -1, "")}, gen - 1, a)].errors == {tp: Errors.ILLEGAL_GENERATION}
    assert h.replies[txn_commit(h, {tp: (1, -1, "")}, gen, a)].errors == {tp: Errors.NONE}
    h.core.unload(partition_for(GROUP, h.config.offsets_partitions))
    assert h.replies[txn_commit(h, {tp: (1, -1, "")})].errors == {tp: Errors.NOT_COORDINATOR}


def test_a_new_coordinator_replays_pending_and_completed_transactions_from_the_log():
    h = Harness()
    done, open_ = ("t", 0), ("t", 1)
    txn_commit(h, {done: (5, -1, "")}, pid=1)
    marker(h, commit=True, pid=1)
    txn_commit(h, {open_: (8, -1, "")}, pid=2)   # still open when leadership moves
    part = partition_for(GROUP, h.config.offsets_partitions)
    other = GroupCoordinator(h.config, random.Random(2))
    other.load(part, 1, list(h.log[part]), 0)
    assert other.offset_fetch(GROUP, [done, open_]).offsets == {done: (5, -1, ""), open_: (-1, -1, "")}
    assert other.offset_fetch(GROUP, [open_], require_stable=True).partition_errors == {
        open_: Errors.UNSTABLE_OFFSET_COMMIT}
    other.complete_txn(part, 2, True)  # its marker arrives at the new coordinator
    assert other.offset_fetch(GROUP, [open_]).offsets == {open_: (8, -1, "")}
