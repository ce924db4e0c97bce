"""The rules the simulated broker checks itself (``simulator.rules``): each catches the core mutant that
breaks it, on a schedule the unmodified core passes."""

from __future__ import annotations

import pytest

from simulator import SimOptions, simulate
from simulator.mutation import core_mutants
from simulator.mutation.apply import applied
from simulator.mutation.campaign import REPO_DIR

INCREMENTAL = SimOptions(variant="kip966", reassignment_mode="incremental", brokers=4)
KIP966 = SimOptions(variant="kip966")
QUORUM = SimOptions(variant="kip966", controllers=3)
CASES = [
    # C9: the broker takes "you may shut down" from a heartbeat reply that did not say so
    ("reference_impl/protocol/broker.py:BrokerLifecycle.handle_heartbeat_response:remove-condition:"
     "self.state == PENDING_CONTROLLED_SHUTDOWN and should_shutdown->"
     "self.state == PENDING_CONTROLLED_SHUTDOWN and True#1", INCREMENTAL, 0, "C9"),
    # L1: no refusal up front below MinISR (the write would be nacked only after the append)
    ("reference_impl/protocol/replica.py:PartitionReplica.append_as_leader:remove-condition:"
     "acks == ACKS_ALL and len(self.isr) < self.config.min_insync_replicas->False#1", KIP966, 0, "L1"),
    # L8: a fetch naming a newer leader epoch is served
    ("reference_impl/protocol/replica.py:PartitionReplica._epoch_error:negate-condition:"
     "request_epoch > self.leader_epoch->not request_epoch > self.leader_epoch#1", KIP966, 0, "L8"),
    # L12: a new proposal while the pending one waits for its answer
    ("reference_impl/protocol/replica.py:PartitionReplica.maybe_change_isr:drop-return:return None->pass#2",
     KIP966, 1, "L12"),
    # Q4: a follower that still hears from its leader grants pre-votes (its contact is read the wrong way)
    ("reference_impl/protocol/raft/node.py:RaftNode._can_grant:flip-comparison:"
     "self._last_leader_contact is not None->self._last_leader_contact is None#1", QUORUM, 0, "Q4"),
    # Q4: the leader of an epoch grants pre-votes of it
    ("reference_impl/protocol/raft/node.py:RaftNode._can_grant:remove-condition:"
     "role in (LEADER, RESIGNED)->False#1", QUORUM, 0, "Q4"),
]


@pytest.mark.parametrize("key,options,seed,rule", CASES)
def test_the_rule_catches_its_mutant(key, options, seed, rule):
    # from ``seed`` on, the first schedule on which the mutant breaks this rule (another check may see a
    # schedule first) must be one the unmodified core passes
    mutant = {m.key: m for m in core_mutants()}[key]
    with open(f"{REPO_DIR}/{mutant.path}", encoding="utf-8") as fh:
        source = fh.read()
    for candidate in range(seed, seed + 12):
        with applied(mutant, source):
            result = simulate(candidate, options)
        if result.finding is not None and result.finding.rule == rule:
            assert simulate(candidate, options).finding is None
            return
    pytest.fail(f"{rule} did not catch {key} in 12 schedules")


def _leader(hwm=5, leso=3, role="leader", epoch=2):
    from types import SimpleNamespace
    batches = [SimpleNamespace(base_offset=b, last_offset=b) for b in range(8)]
    log = SimpleNamespace(log_start_offset=0, batches=lambda: batches)
    return SimpleNamespace(role=role, leader_epoch=epoch, high_watermark=hwm, leso=leso, log=log)


def _answer(offset, ok=True):
    from types import SimpleNamespace

    from reference_impl.protocol.errors import OK, Errors, error
    return SimpleNamespace(error=OK if ok else error(Errors.OFFSET_NOT_AVAILABLE), offset=offset)


@pytest.mark.parametrize("replica,timestamp,epoch,offset,rule", [
    (_leader(role="follower"), -1, -1, 5, "L8"),
    (_leader(), -1, 1, 5, "L8"),
    (_leader(hwm=2, leso=3), -1, -1, 2, "L18"),
    (_leader(), -1, -1, 6, "L18"),
    (_leader(), -2, -1, 1, "L18"),
    (_leader(), 0, -1, 6, "L18"),
])
def test_a_list_offsets_answer_that_breaks_l18_or_l8(replica, timestamp, epoch, offset, rule):
    from simulator.rules import RuleBroken, check_list_offsets
    with pytest.raises(RuleBroken) as caught:
        check_list_offsets(1, replica, timestamp, epoch, _answer(offset))
    assert caught.value.rule == rule


def test_list_offsets_answers_that_keep_the_rules():
    from simulator.rules import check_list_offsets
    check_list_offsets(1, _leader(), -1, 2, _answer(5))
    check_list_offsets(1, _leader(), -2, -1, _answer(0))
    check_list_offsets(1, _leader(), -3, -1, _answer(4))
    check_list_offsets(1, _leader(), 0, -1, _answer(-1))
    check_list_offsets(1, _leader(hwm=2, leso=3), -1, -1, _answer(-1, ok=False))   # refused: nothing to check


def _vote(candidate=3, epoch=4, pre_vote=True):
    from reference_impl.protocol.raft.messages import VoteRequest
    return VoteRequest(candidate, epoch, 3, 10, pre_vote)


def _vote_answer(granted=True):
    from reference_impl.protocol.errors import Errors
    from reference_impl.protocol.raft.messages import VoteResponse
    return VoteResponse(Errors.NONE, 2, 4, granted)


@pytest.mark.parametrize("request_,heard_ago,rule", [
    (_vote(pre_vote=True), 500, "Q4"),     # the leader answered a fetch half a second ago
    (_vote(pre_vote=False), None, "Q2"),   # a real vote of the epoch whose leader it follows
])
def test_a_vote_answer_that_breaks_q4_or_q2(request_, heard_ago, rule):
    from simulator.rules import RuleBroken, check_vote_answer
    with pytest.raises(RuleBroken) as caught:
        check_vote_answer(1, (4, 2, "follower"), request_, _vote_answer(), heard_ago, 2000)
    assert caught.value.rule == rule


@pytest.mark.parametrize("role,pre_vote,rule", [("leader", True, "Q4"), ("resigned", True, "Q4"),
                                                ("leader", False, "Q2")])
def test_the_leader_of_an_epoch_grants_nothing_of_it(role, pre_vote, rule):
    from simulator.rules import RuleBroken, check_vote_answer
    with pytest.raises(RuleBroken) as caught:
        check_vote_answer(1, (4, 1, role), _vote(pre_vote=pre_vote), _vote_answer(), None, 2000)
    assert caught.value.rule == rule


@pytest.mark.parametrize("before,request_,answer,heard_ago", [
    ((4, 2, "follower"), _vote(), _vote_answer(), 2000),          # silent for the whole fetch timeout
    ((4, 2, "follower"), _vote(), _vote_answer(), None),          # never heard (or told it is gone)
    ((4, 2, "follower"), _vote(), _vote_answer(granted=False), 10),
    ((4, None, "unattached"), _vote(pre_vote=False), _vote_answer(), None),
    ((3, 2, "follower"), _vote(epoch=4, pre_vote=False), _vote_answer(), 10),  # a newer epoch: unattached first
])
def test_vote_answers_that_keep_q2_and_q4(before, request_, answer, heard_ago):
    from simulator.rules import check_vote_answer
    check_vote_answer(1, before, request_, answer, heard_ago, 2000)
