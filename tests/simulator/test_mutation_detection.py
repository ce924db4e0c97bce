"""A fixed sample of protocol-core mutants is detected by the simulator (CI fails when detection regresses).

Each mutant is named by its stable key (file, function, change); the test runs it in this process on the
self-test's seed sequence and expects a violation within a bounded number of seconds on a seed the
unmutated core passes (``judge`` checks that). ``test_a_mutant_without_effect_is_not_detected`` is the
control: a mutant known to change nothing observable is not reported.
"""

from __future__ import annotations

import pytest

from simulator.mutation import core_mutants, judge
from simulator.mutation.campaign import DETECTED, NO_DIFFERENCE, REPO_DIR

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
    "b.last_offset < self._hwm->b.last_offset <= self._hwm#1": "I7",
    "reference_impl/protocol/records.py:PartitionState.apply_change:remove-condition:"
    "rec.leader_epoch_bump->False#1": "I11",
    "reference_impl/protocol/divergence.py:end_offset_for_epoch:negate-condition:"
    "not epoch_starts->not not epoch_starts#1": "I4",
    "reference_impl/protocol/controller.py:Controller.alter_partition:negate-condition:"
    "record is None->not record is None#1": "I2",
    "reference_impl/protocol/broker.py:BrokerLifecycle.handle_heartbeat_response:negate-condition:"
    "is_fenced->not is_fenced#1": "trace",
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


def test_a_mutant_without_effect_is_not_detected():
    mutant = _mutant(NO_EFFECT)
    answer = judge(mutant, _source(mutant), 0, 1.0)
    assert answer["status"] == NO_DIFFERENCE, answer
