"""A fixed sample of protocol-core mutants is detected by the simulator (CI fails when detection regresses).

Each mutant is named by its stable key (file, function, change); the test runs it in this process on the
self-test's seed sequence and expects a violation within a bounded number of seconds on a seed the
unmutated core passes (``judge`` checks that). ``test_a_mutant_without_effect_is_not_detected`` is the
control: a mutant known to change nothing observable is not reported, and is called equivalent only once
enough schedules that execute it left trace and history unchanged.
"""

from __future__ import annotations

import pytest

from simulator.mutation import core_mutants, judge
from simulator.mutation.campaign import DETECTED, EQUIVALENT, REPO_DIR, SURVIVED

SAMPLE = {
    "reference_impl/protocol/isr_loop.py:isr_round:flip-comparison:"
    "replica.role != LEADER->replica.role == LEADER#1": "liveness",
    "reference_impl/protocol/isr_loop.py:isr_round:remove-condition:"
    "request is not None->False#1": "liveness",
    "reference_impl/protocol/replica.py:PartitionReplica.append_as_leader:negate-condition:"
    "not check.error.ok->not not check.error.ok#1": "I6",
    "reference_impl/protocol/replica.py:PartitionReplica._complete_acks:flip-comparison:"
    "self._hwm > p.last_offset->self._hwm >= p.last_offset#1": "I14",
    "reference_impl/protocol/replica.py:PartitionReplica.read_committed:flip-comparison:"
    "b.last_offset < limit->b.last_offset <= limit#1": "I7",
    "reference_impl/protocol/records.py:PartitionState.apply_change:remove-condition:"
    "rec.leader_epoch_bump->False#1": "I11",
    # with K7 in the simulated controller (and the steering recalibrated) the first schedule to break these
    # mutants breaks them another way than before: the mutated lookup indexes an empty epoch cache and
    # raises (in the quorum setting) before I4 sees diverged logs, and the refused AlterPartitions leave a
    # partition with ISR [3] of [1, 2, 3] 15 s after the heal before I2 sees a stale member
    "reference_impl/protocol/divergence.py:end_offset_for_epoch:negate-condition:"
    "not epoch_starts->not not epoch_starts#1": "exception",
    "reference_impl/protocol/control/replication.py:ReplicationControl.alter_partition:negate-condition:"
    "record is None->not record is None#1": "liveness",
    "reference_impl/protocol/broker.py:BrokerLifecycle.handle_heartbeat_response:negate-condition:"
    "is_fenced->not is_fenced#1": "trace",
}
# Mutants of the controller quorum (Raft and the controller on it), run on the quorum's seed sequence.
QUORUM_SAMPLE = {
    "reference_impl/protocol/raft/node.py:RaftNode._maybe_win:drop-return:return False->pass#1": "I17",
    "reference_impl/protocol/raft/node.py:RaftNode._fetched:remove-condition:appended->False#1": "I19",
    "reference_impl/protocol/quorum_controller.py:QuorumController.apply_committed:remove-condition:"
    "batch.next_offset > raft.high_watermark->False#1": "I21",
    # a voter that does not move to a newer candidate's epoch records the vote in its old epoch, where that
    # candidate never stood: I22 sees it at the first election, before liveness would
    "reference_impl/protocol/raft/node.py:RaftNode._handle_vote:remove-condition:"
    "req.candidate_epoch > self.epoch->False#1": "I22",
    "reference_impl/protocol/raft/leader_state.py:LeaderState._maybe_advance:drop-return:return True->pass#1": "core",
    # a granted vote never recorded, and a vote dropped on learning the epoch's leader: the candidates'
    # answers and the voter's own state disagree at the first election
    "reference_impl/protocol/raft/node.py:RaftNode._handle_vote:remove-condition:"
    "granted and (not req.pre_vote) and (self.voted_for is None)->False#1": "I22",
    "reference_impl/protocol/raft/node.py:RaftNode._to_follower:flip-comparison:epoch > self.epoch->epoch >= self.epoch#1":
        "I22",
}
NO_EFFECT = ("reference_impl/protocol/isr_loop.py:isr_round:remove-condition:"
             "replica.role != LEADER->False#1")


def _mutant(key: str):
    by_key = {m.key: m for m in core_mutants()}
    assert key in by_key, f"mutant {key} no longer exists (the core changed): pick another"
    return by_key[key]


def _source(mutant) -> str:
    with open(f"{REPO_DIR}/{mutant.path}", encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.jepsen
@pytest.mark.parametrize("key", sorted(SAMPLE))
def test_sample_mutant_is_detected(key):
    mutant = _mutant(key)
    answer = judge(mutant, _source(mutant), 0, 30.0)
    assert answer["status"] == DETECTED, answer
    assert answer["rule"] == SAMPLE[key], answer


@pytest.mark.jepsen
@pytest.mark.parametrize("key", sorted(QUORUM_SAMPLE))
def test_quorum_sample_mutant_is_detected(key):
    mutant = _mutant(key)
    answer = judge(mutant, _source(mutant), 0, 30.0)
    assert answer["status"] == DETECTED, answer
    assert answer["rule"] == QUORUM_SAMPLE[key], answer


def test_a_mutant_without_effect_is_not_detected():
    mutant = _mutant(NO_EFFECT)
    answer = judge(mutant, _source(mutant), 0, 60.0, equivalence=4)
    assert answer["status"] == EQUIVALENT and answer["identical"] == 4 and answer["differs"] is None, answer


def test_too_little_evidence_is_not_equivalence():
    mutant = _mutant(NO_EFFECT)
    answer = judge(mutant, _source(mutant), 0, 0.5)
    assert answer["status"] == SURVIVED and answer["differs"] is None, answer
    assert "fewer than the 200" in answer["detail"], answer


def test_a_mutant_that_changes_behaviour_unseen_survives():
    # a follower sets its high watermark again when it did not change: one more hwm trace event per fetch,
    # no rule broken (a follower's HWM is informative, F4), but the trace differs at once
    mutant = _mutant("reference_impl/protocol/replica.py:PartitionReplica.handle_fetch_response:remove-condition:"
                     "new_hwm != self._hwm and new_hwm >= 0->True and new_hwm >= 0#1")
    answer = judge(mutant, _source(mutant), 0, 3.0)
    assert answer["status"] == SURVIVED and answer["differs"], answer
