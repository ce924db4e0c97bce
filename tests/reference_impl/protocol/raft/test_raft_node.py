"""The quorum rules Q1-Q13 (docs/protocol-rules.md 2.6) on ``RaftNode``, one rule failing at a time.

Vectors follow Apache Kafka's raft tests where they give concrete ones (KafkaRaftClientTest,
LeaderStateTest, KafkaMetadataLogTest): the up-to-date comparison (epoch first, then end offset), the
majority index of the HWM, the strict exponential backoff by successor position, the divergence answers.
"""

from __future__ import annotations

import random

import pytest

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors, InvariantViolation
from reference_impl.protocol.raft import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    ElectionState,
    InMemoryElectionStore,
    InMemoryRaftLog,
    RaftBatch,
    RaftConfig,
    RaftNode,
)
from reference_impl.protocol.raft.leader_state import LeaderState
from reference_impl.protocol.raft.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from tests.reference_impl.protocol.raft.quorum_driver import CONFIG, Quorum, epoch_start


def log_of(*epochs: int) -> InMemoryRaftLog:
    """A log with one single-record batch per listed epoch (record = its offset)."""
    return InMemoryRaftLog(RaftBatch(o, e, (o,)) for o, e in enumerate(epochs))


def voter(node_id=2, voters=(1, 2, 3), log=None, state=None, config=CONFIG, now=0) -> RaftNode:
    return RaftNode(node_id, voters, log or InMemoryRaftLog(), InMemoryElectionStore(state), config,
                    random.Random(0), now, epoch_start)


# ----------------------------------------------------------------------------------------------- Q2 vote
@pytest.mark.parametrize("candidate, local, granted", [
    ((3, 5), (3, 6), False),   # same last epoch, shorter log
    ((3, 6), (3, 6), True),    # equal
    ((3, 7), (3, 6), True),    # longer
    ((4, 1), (3, 10), True),   # newer last epoch wins whatever the length
    ((2, 10), (3, 1), False),  # older last epoch loses whatever the length
])
def test_vote_goes_to_a_log_at_least_as_up_to_date(candidate, local, granted):
    last_epoch, end = local
    node = voter(log=log_of(*([1] * (end - 1) + [last_epoch])), state=ElectionState(5))
    resp = node.handle_request(1, VoteRequest(1, 6, candidate[0], candidate[1]), 0)
    assert resp.error == Errors.NONE and resp.vote_granted is granted
    assert node.epoch == 6 and node.voted_for == (1 if granted else None)


def test_one_vote_per_epoch_and_it_is_durable():
    store = InMemoryElectionStore(ElectionState(1))
    node = RaftNode(2, (1, 2, 3), InMemoryRaftLog(), store, CONFIG, random.Random(0), 0, epoch_start)
    assert node.handle_request(1, VoteRequest(1, 2, 0, 0), 0).vote_granted
    assert store.state == ElectionState(2, voted_for=1)  # Q1: written before the answer
    assert not node.handle_request(3, VoteRequest(3, 2, 0, 0), 0).vote_granted
    assert node.handle_request(1, VoteRequest(1, 2, 0, 0), 0).vote_granted  # a resend from the same candidate
    again = RaftNode(2, (1, 2, 3), InMemoryRaftLog(), store, CONFIG, random.Random(1), 5, epoch_start)
    assert not again.handle_request(3, VoteRequest(3, 2, 0, 0), 5).vote_granted  # remembered across a restart


def test_a_vote_outlives_learning_the_leader_of_its_epoch():
    store = InMemoryElectionStore(ElectionState(1))
    node = RaftNode(2, (1, 2, 3), InMemoryRaftLog(), store, CONFIG, random.Random(0), 0, epoch_start)
    assert node.handle_request(1, VoteRequest(1, 2, 0, 0), 0).vote_granted
    node.handle_request(1, BeginQuorumEpochRequest(1, 2), 1)
    assert (node.role, node.leader_id, node.voted_for) == (FOLLOWER, 1, 1)
    assert store.state == ElectionState(2, voted_for=1, leader_id=1)  # the vote is still on disk
    # neither the follower, nor the prospective it turns into once the leader falls silent, nor the same
    # voter after a restart grants a second vote in epoch 2
    late = CONFIG.fetch_timeout_ms + 10
    assert not node.handle_request(3, VoteRequest(3, 2, 0, 0), 2).vote_granted
    node.poll(late)
    assert node.role == PROSPECTIVE and node.epoch == 2 and node.voted_for == 1
    assert not node.handle_request(3, VoteRequest(3, 2, 0, 0), late).vote_granted
    again = RaftNode(2, (1, 2, 3), InMemoryRaftLog(), store, CONFIG, random.Random(1), late, epoch_start)
    assert again.voted_for == 1
    assert not again.handle_request(3, VoteRequest(3, 2, 0, 0), late).vote_granted


def test_candidates_trace_every_vote_answer_and_say_which_are_pre_votes():
    q = Quorum()
    leader = q.elect()
    epoch = q.node(leader).epoch
    answers = [e for e in q.events if e["kind"] == "quorum_vote"]
    standard = [e for e in answers if not e["pre_vote"]]
    assert {e["voter"] for e in answers} >= {leader}
    assert all(e["from_voter"] != e["voter"] and isinstance(e["granted"], bool) for e in answers)
    assert any(e["pre_vote"] and e["granted"] and e["epoch"] == epoch - 1 for e in answers)  # KIP-996 round
    assert any(e["voter"] == leader and e["epoch"] == epoch and e["granted"] for e in standard)
    # each voter granted its vote of an epoch to one candidate at most
    granted: dict[tuple, set] = {}
    for e in standard:
        if e["granted"]:
            granted.setdefault((e["from_voter"], e["epoch"]), set()).add(e["voter"])
    assert granted and all(len(c) == 1 for c in granted.values())


def test_vote_from_an_older_epoch_is_fenced_and_a_newer_epoch_is_adopted():
    node = voter(state=ElectionState(4))
    resp = node.handle_request(1, VoteRequest(1, 3, 0, 0), 0)
    assert resp.error == Errors.FENCED_LEADER_EPOCH and not resp.vote_granted and resp.leader_epoch == 4
    node.handle_request(1, VoteRequest(1, 9, 0, 0), 0)
    assert node.epoch == 9


@pytest.mark.parametrize("request_", [VoteRequest(1, 5, 5, 3), VoteRequest(1, 5, -1, 0), VoteRequest(7, 5, 0, 0)])
def test_invalid_vote_requests(request_):
    assert voter(state=ElectionState(4)).handle_request(1, request_, 0).error == Errors.INVALID_REQUEST


def test_a_follower_refuses_votes_and_pre_votes_while_it_hears_from_its_leader():
    node = voter(state=ElectionState(3, leader_id=1))
    assert node.role == FOLLOWER
    assert not node.handle_request(3, VoteRequest(3, 3, 0, 0, pre_vote=True), 10).vote_granted
    assert not node.handle_request(3, VoteRequest(3, 3, 0, 0), 10).vote_granted
    # Q4: once the leader has been silent for a fetch timeout, a pre-vote is granted (no epoch change)
    late = CONFIG.fetch_timeout_ms + 1
    assert node.handle_request(3, VoteRequest(3, 3, 0, 0, pre_vote=True), late).vote_granted
    assert node.epoch == 3 and node.voted_for is None


def test_a_leader_grants_nothing_in_its_epoch():
    q = Quorum()
    leader = q.elect()
    node = q.node(leader)
    other = next(i for i in q.ids if i != leader)
    assert not node.handle_request(other, VoteRequest(other, node.epoch, 0, 0, pre_vote=True), q.now).vote_granted


# ------------------------------------------------------------------------------------- Q3, Q4 elections
def test_single_voter_elects_itself_at_once_and_commits_alone():
    node = voter(node_id=1, voters=(1,))
    assert node.role == LEADER and node.epoch == 1 and node.leader_ready
    assert node.log.end_offset == 0  # Q5: no epoch-start record on an empty log
    assert node.append(["a"], 0) == (0, 1) and node.high_watermark == 1


def test_single_voter_restart_commits_its_flushed_log_without_an_epoch_start_record():
    log, store = log_of(1, 1), InMemoryElectionStore(ElectionState(1, 1, 1))
    node = RaftNode(1, (1,), log, store, CONFIG, random.Random(0), 0, epoch_start)
    assert node.role == LEADER and node.epoch == 2
    assert log.end_offset == 2  # a quorum of one: its flushed log is a majority by itself
    assert node.high_watermark == 2 and node.leader_ready


def test_restarted_leader_of_three_writes_an_epoch_start_record():
    q = Quorum()
    first = q.elect()
    q.append(first, "x")
    q.advance(20)
    for i in q.ids:
        q.crash(i)
    for i in q.ids:
        q.restart(i)
    second = q.elect()
    assert q.logs[second].batches[-1].records == (("leader-change", second, q.node(second).epoch),)
    assert q.node(second).high_watermark == q.logs[second].end_offset


def test_three_voters_elect_one_leader_who_replicates_and_commits_on_a_majority():
    q = Quorum()
    leader = q.elect()
    assert sorted(q.node(i).role for i in q.ids) == [FOLLOWER, FOLLOWER, LEADER]
    base, end = q.append(leader, "x", "y")
    q.advance(10)
    assert q.node(leader).high_watermark == end
    for i in q.ids:
        assert q.records(i)[base:end] == ["x", "y"]
        assert q.node(i).high_watermark == end and q.node(i).leader_id == leader


def test_prospective_does_not_bump_the_epoch_until_a_majority_would_vote():
    q = Quorum()
    leader = q.elect()
    epoch = q.node(leader).epoch
    lone = next(i for i in q.ids if i != leader)
    q.isolate(lone)
    q.advance(1000)
    assert q.node(lone).role in (PROSPECTIVE, FOLLOWER) and q.node(lone).epoch == epoch  # Q4
    q.heal()
    q.advance(50)
    assert q.node(leader).is_leader and q.node(leader).epoch == epoch  # the healthy leader kept its epoch


def test_without_pre_vote_an_isolated_voter_inflates_its_epoch():
    config = RaftConfig(**{**CONFIG.__dict__, "pre_vote": False})
    q = Quorum(config=config)
    leader = q.elect()
    epoch = q.node(leader).epoch
    lone = next(i for i in q.ids if i != leader)
    q.isolate(lone)
    q.advance(1000)
    assert q.node(lone).role == CANDIDATE and q.node(lone).epoch > epoch + 1


def test_candidate_backs_off_after_a_majority_rejects_it():
    q = Quorum(config=RaftConfig(**{**CONFIG.__dict__, "pre_vote": False}))
    leader = q.elect()
    q.append(leader, "x")
    q.advance(20)
    behind = next(i for i in q.ids if i != leader)
    q.logs[behind].truncate_to(0)  # its log is now behind both others
    node = q.restart(behind)
    q.crash(leader)
    q.advance(CONFIG.fetch_timeout_ms + 5)
    # whoever stood first, the voter with the short log never wins: the other voter's log is longer
    assert q.leaders() != [behind]
    assert node.epoch >= 2


# --------------------------------------------------------------------------------- Q5, Q8 leader and HWM
@pytest.mark.parametrize("offsets, expected", [
    ({1: 10, 2: 8, 3: 5}, 8),          # 3 voters: the second highest
    ({1: 10, 2: None, 3: 5}, 5),       # an unknown voter counts as lowest
    ({1: 10, 2: None, 3: None}, 0),    # no majority yet
])
def test_hwm_is_the_majority_end_offset(offsets, expected):
    state = LeaderState(1, (1, 2, 3), 2, 0, 0, 0, 300)
    for v, o in offsets.items():
        if o is not None:
            state.update_local(o) if v == 1 else state.update_voter(v, o, 0)
    assert state.high_watermark == expected


def test_hwm_of_five_voters_needs_three():
    state = LeaderState(1, (1, 2, 3, 4, 5), 2, 0, 0, 0, 300)
    state.update_local(10)
    state.update_voter(2, 9, 0)
    assert state.high_watermark == 0
    state.update_voter(3, 7, 0)
    assert state.high_watermark == 7


def test_hwm_waits_for_a_record_of_the_leaders_own_epoch_and_never_goes_back():
    state = LeaderState(1, (1, 2, 3), 3, epoch_start_offset=4, high_watermark=2, now_ms=0,
                        check_quorum_timeout_ms=300)
    assert state.commit_point == 4
    state.update_local(5)
    assert not state.update_voter(2, 4, 0) and state.high_watermark == 2  # 4 is not above the epoch start
    assert state.update_voter(2, 5, 0) and state.high_watermark == 5
    assert not state.update_voter(2, 3, 0) and state.high_watermark == 5  # a voter that lost records (I19)


def test_new_leader_commits_earlier_epochs_only_through_its_epoch_start_record():
    q = Quorum()
    first = q.elect()
    q.append(first, "a")
    q.advance(20)
    committed = q.node(first).high_watermark
    # an uncommitted record from the first leader reaches one follower only
    f1, f2 = [i for i in q.ids if i != first]
    q.cut(first, f2)
    q.append(first, "b")
    q.advance(10)
    assert "b" in q.records(f1) and "b" not in q.records(f2)
    q.crash(first)
    q.heal()
    second = q.elect()
    node = q.node(second)
    start = node.epoch_start_offset
    assert q.logs[second].batches[-1].records[0][0] == "leader-change"
    assert node.high_watermark > start >= committed
    if second == f1:  # it had "b": committed now, through its own epoch's record
        assert "b" in q.records(f2)


def test_leader_sends_begin_quorum_epoch_until_acknowledged():
    q = Quorum()
    leader = q.elect()
    state = q.node(leader).leader
    assert state is not None and state.acknowledged == set(q.ids)


# ------------------------------------------------------------------------------------ Q6 begin/end epoch
def test_begin_quorum_epoch_makes_a_follower_and_older_ones_are_fenced():
    node = voter(state=ElectionState(2))
    resp = node.handle_request(3, BeginQuorumEpochRequest(3, 4), 0)
    assert resp.error == Errors.NONE and node.role == FOLLOWER and node.leader_id == 3 and node.epoch == 4
    assert node.handle_request(1, BeginQuorumEpochRequest(1, 3), 0).error == Errors.FENCED_LEADER_EPOCH
    assert node.leader_id == 3


def test_two_leaders_named_for_one_epoch_is_a_broken_invariant():
    node = voter(state=ElectionState(4, leader_id=3))
    with pytest.raises(InvariantViolation):
        node.handle_request(1, BeginQuorumEpochRequest(1, 4), 0)


@pytest.mark.parametrize("successors, expected", [
    ((2, 3), 0), ((3, 2), 500), ((3, 4, 2), 500), ((4, 2, 3), 250), ((3, 4), 1000)])
def test_end_quorum_epoch_backoff_by_successor_position(successors, expected):
    node = voter(state=ElectionState(4, leader_id=1), voters=(1, 2, 3, 4),
                 config=RaftConfig(**{**CONFIG.__dict__, "election_backoff_max_ms": 1000}))
    node.handle_request(1, EndQuorumEpochRequest(1, 4, successors), 100)
    if expected:
        node.poll(100 + expected - 1)
        assert node.role == FOLLOWER
    node.poll(100 + expected)
    assert node.role == PROSPECTIVE and node.epoch == 4  # Q12, then Q4


def test_graceful_resignation_hands_over_to_the_first_successor():
    q = Quorum()
    leader = q.elect()
    q.append(leader, "x")
    q.advance(20)
    q.node(leader).resign(q.now)
    q.settle()
    assert q.node(leader).role == RESIGNED
    new = q.elect()
    assert new != leader and q.node(new).epoch == q.node(leader).epoch


# -------------------------------------------------------------------------------------- Q7 fetch checks
def test_fetch_validation_by_epoch_and_role():
    q = Quorum()
    leader = q.elect()
    node, epoch = q.node(leader), q.node(leader).epoch
    f = next(i for i in q.ids if i != leader)
    assert node.handle_request(f, FetchRequest(f, epoch - 1, 0, 0), q.now).error == Errors.FENCED_LEADER_EPOCH
    assert node.handle_request(f, FetchRequest(f, epoch + 1, 0, 0), q.now).error == Errors.UNKNOWN_LEADER_EPOCH
    assert q.node(f).handle_request(leader, FetchRequest(leader, epoch, 0, 0), q.now).error == \
        Errors.NOT_LEADER_OR_FOLLOWER
    assert node.handle_request(f, FetchRequest(f, epoch, 0, epoch + 1), q.now).error == Errors.INVALID_REQUEST


# leader log epochs / follower log epochs / leader epoch -> diverging answer -> follower cut
DIVERGENCE = [
    ([1, 1, 1, 1], [1, 1], 2, None, 2),
    ([1, 1], [1, 1, 1, 1], 2, EpochEndOffset(1, 2), 2),
    ([1, 1], [1, 1, 2, 2], 3, EpochEndOffset(1, 2), 2),
    ([1, 1, 3, 3], [1, 1, 2, 2], 4, EpochEndOffset(1, 2), 2),
    ([1, 1], [1, 2, 2], 3, EpochEndOffset(1, 2), 1),
    ([1, 3], [2], 4, EpochEndOffset(1, 1), 0),
    ([1, 2, 2], [1, 3], 4, EpochEndOffset(2, 3), 1),
]


@pytest.mark.parametrize("leader_log, follower_log, epoch, answer, cut", DIVERGENCE)
def test_divergence_answers_and_cuts(leader_log, follower_log, epoch, answer, cut):
    leader = RaftNode(1, (1, 2, 3), log_of(*leader_log), InMemoryElectionStore(ElectionState(epoch - 1)),
                      RaftConfig(**{**CONFIG.__dict__, "pre_vote": False}), random.Random(0), 0, epoch_start)
    leader.poll(10_000)  # election timeout: candidate in ``epoch``
    assert (leader.role, leader.epoch) == (CANDIDATE, epoch)
    vote = next(o for o in leader.drain_outbox() if isinstance(o.request, VoteRequest))
    leader.handle_response(vote.dst, vote.correlation_id, VoteResponse(Errors.NONE, -1, epoch, True), 10_000)
    assert leader.role == LEADER
    flog = log_of(*follower_log)
    resp = leader.handle_request(2, FetchRequest(2, epoch, flog.end_offset, flog.last_epoch), 10_000)
    assert resp.error == Errors.NONE and resp.diverging_epoch == answer
    follower = RaftNode(2, (1, 2, 3), flog, InMemoryElectionStore(ElectionState(epoch, leader_id=1)), CONFIG,
                        random.Random(0), 10_000, epoch_start)
    fetch = next(o for o in follower.drain_outbox() if isinstance(o.request, FetchRequest))
    follower.handle_response(1, fetch.correlation_id, resp, 10_000)
    if answer is not None:
        assert flog.end_offset == cut


def test_divergence_below_the_hwm_is_a_broken_invariant():
    follower = RaftNode(2, (1, 2, 3), log_of(1, 1, 2), InMemoryElectionStore(ElectionState(3, leader_id=1)),
                        CONFIG, random.Random(0), 0, epoch_start)
    fetch = next(o for o in follower.drain_outbox() if isinstance(o.request, FetchRequest))
    follower.handle_response(1, fetch.correlation_id, FetchResponse(Errors.NONE, 1, 3, 3), 0)
    assert follower.high_watermark == 3
    fetch = next(o for o in follower.drain_outbox() if isinstance(o.request, FetchRequest))
    with pytest.raises(InvariantViolation):
        follower.handle_response(1, fetch.correlation_id, FetchResponse(Errors.NONE, 1, 3, 3, EpochEndOffset(1, 2)), 0)


def test_follower_hwm_is_capped_by_its_log_and_never_goes_back():
    follower = voter(log=log_of(1, 1), state=ElectionState(2, leader_id=1))
    fetch = next(o for o in follower.drain_outbox() if isinstance(o.request, FetchRequest))
    follower.handle_response(1, fetch.correlation_id, FetchResponse(Errors.NONE, 1, 2, 5), 0)
    assert follower.high_watermark == 2
    fetch = next(o for o in follower.drain_outbox() if isinstance(o.request, FetchRequest))
    follower.handle_response(1, fetch.correlation_id, FetchResponse(Errors.NONE, 1, 2, 1), 0)
    assert follower.high_watermark == 2


def test_fetched_records_are_flushed_before_the_next_fetch_acknowledges_them():
    q = Quorum()
    leader = q.elect()
    q.append(leader, "x", "y")
    q.advance(10)
    for i in q.ids:
        assert q.logs[i].flushed_offset == q.logs[i].end_offset


# ---------------------------------------------------------------------------------- Q10, Q11, Q13 timers
def test_a_silent_leader_is_replaced_after_the_fetch_timeout():
    q = Quorum()
    first = q.elect()
    epoch = q.node(first).epoch
    q.crash(first)
    second = q.elect()
    assert second != first and q.node(second).epoch > epoch


def test_check_quorum_deposes_a_partitioned_leader():
    q = Quorum()
    leader = q.elect()
    q.isolate(leader)
    q.advance(CONFIG.check_quorum_timeout_ms + 20)
    assert q.node(leader).role in (RESIGNED, CANDIDATE, PROSPECTIVE)  # Q11: it stopped leading
    assert len([i for i in q.leaders() if i != leader]) == 1


def test_deposed_leaders_uncommitted_records_are_truncated_on_rejoin():
    q = Quorum()
    old = q.elect()
    q.append(old, "committed")
    q.advance(10)
    q.isolate(old)
    q.append(old, "zombie-1", "zombie-2")
    assert q.node(old).high_watermark < q.logs[old].end_offset  # never committed
    q.advance(CONFIG.fetch_timeout_ms * 2)
    new = next(i for i in q.leaders() if i != old)
    q.append(new, "new")
    q.heal()
    q.advance(CONFIG.election_timeout_ms * 4)
    assert "zombie-1" not in q.records(old) and q.records(old)[-1] == "new"
    assert [e for e in q.events if e["kind"] == "quorum_truncate" and e["voter"] == old]


def test_a_restarted_leader_resigns_its_epoch():
    node = RaftNode(1, (1, 2, 3), log_of(1), InMemoryElectionStore(ElectionState(1, 1, 1)), CONFIG,
                    random.Random(0), 0, epoch_start)
    assert node.role == RESIGNED and node.epoch == 1


def test_a_response_from_a_newer_epoch_moves_the_node():
    node = voter(state=ElectionState(2, leader_id=1))
    fetch = next(o for o in node.drain_outbox() if isinstance(o.request, FetchRequest))
    node.handle_response(1, fetch.correlation_id, FetchResponse(Errors.FENCED_LEADER_EPOCH, 3, 5), 0)
    assert (node.role, node.epoch, node.leader_id) == (FOLLOWER, 5, 3)
    node2 = voter(state=ElectionState(2, leader_id=1))
    fetch = next(o for o in node2.drain_outbox() if isinstance(o.request, FetchRequest))
    node2.handle_response(1, fetch.correlation_id, FetchResponse(Errors.FENCED_LEADER_EPOCH, -1, 5), 0)
    assert (node2.role, node2.epoch, node2.leader_id) == (UNATTACHED, 5, None)


def test_lossy_crash_of_one_voter_loses_nothing_committed():
    q = Quorum()
    leader = q.elect()
    for n in range(5):
        q.append(leader, n)
    q.advance(20)
    hwm = q.node(leader).high_watermark
    victim = next(i for i in q.ids if i != leader)
    q.crash(victim, lossy=True)
    assert q.logs[victim].end_offset >= hwm  # Q9: flushed before acknowledged
    q.restart(victim)
    q.advance(50)
    assert q.records(victim) == q.records(leader)
