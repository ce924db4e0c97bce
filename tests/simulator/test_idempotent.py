"""Idempotent producers in the simulator (``SimOptions.idempotent``, ``simulator.producers``): the client's
sequences and retries, the runs they make, the checks that catch a broken producer state, and the
default settings left as they were."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.log import LogBatch
from simulator import SimOptions, generate, run_schedule, simulate
from simulator import producers as P
from simulator.clients import Clients
from simulator.mutation import core_mutants, judge
from simulator.mutation.apply import applied
from simulator.mutation.campaign import DETECTED, IDEMPOTENT, REPO_DIR, seed_at, sequence_of
from simulator.rules import RuleBroken
from simulator.schedule import Schedule

FINDINGS = os.path.join(REPO_DIR, "docs", "simulator-findings")
KIP966 = SimOptions(variant="kip966", idempotent=True)


# ------------------------------------------------------------------ the producer's state (no I/O)
def _send(key=0, process=1, value=1, deadline=10_000):
    return P.Send(process, key, value, deadline)


def test_sequences_follow_acknowledgements_and_a_failure_gives_its_sequence_back():
    producer = P.IdempotentProducer(7)
    first = _send()
    assert producer.enqueue(first)
    producer.stamp(first)
    assert (first.epoch, first.sequence) == (0, 0)
    assert producer.finished(first, "ok") is None
    second = _send(value=2)
    producer.enqueue(second)
    producer.stamp(second)
    assert second.sequence == 1
    producer.finished(second, "fail")  # certainly not appended: sequence 1 is free again
    third = _send(value=3)
    producer.enqueue(third)
    producer.stamp(third)
    producer.stamp(third)  # a retry keeps its epoch and sequence
    assert (third.epoch, third.sequence) == (0, 1)
    assert producer.acknowledged == {0: (0, 0)}


def test_an_unknown_outcome_or_a_refusal_bumps_the_epoch_and_restarts_every_sequence():
    producer = P.IdempotentProducer(0)
    for key in (0, 1):
        s = _send(key=key)
        producer.enqueue(s)
        producer.stamp(s)
        producer.finished(s, "ok")
    lost = _send(key=0)
    producer.enqueue(lost)
    producer.stamp(lost)
    producer.finished(lost, "info")
    assert producer.epoch == 1 and producer.next_sequence == {}
    other = _send(key=1)
    producer.enqueue(other)
    producer.stamp(other)
    assert (other.epoch, other.sequence) == (1, 0)
    producer.finished(other, "fail", refused=True)  # OUT_OF_ORDER_SEQUENCE_NUMBER: bumped again
    assert producer.epoch == 2


def test_an_outcome_of_an_older_epoch_does_not_bump_again():
    producer = P.IdempotentProducer(0)
    a, b = _send(key=0), _send(key=1)
    for s in (a, b):
        producer.enqueue(s)
        producer.stamp(s)
    producer.finished(a, "info")
    producer.finished(b, "info")  # sent in epoch 0, ended after the bump: its sequence is moot already
    assert producer.epoch == 1
    c = _send(key=1)
    producer.enqueue(c)
    producer.stamp(c)
    assert (c.epoch, c.sequence) == (1, 0)


def test_one_batch_in_flight_per_partition_the_next_waits():
    producer = P.IdempotentProducer(0)
    a, b, c = _send(key=0, process=1), _send(key=0, process=2), _send(key=1, process=3)
    assert producer.enqueue(a)
    assert not producer.enqueue(b)
    assert producer.enqueue(c)
    producer.stamp(a)
    assert producer.finished(a, "ok") is b
    assert producer.in_flight == {0: b, 1: c}


@pytest.mark.parametrize("code,left,window,verdict", [
    (Errors.NONE, 0, False, "ok"),
    (Errors.DUPLICATE_SEQUENCE_NUMBER, 3, True, "ok"),
    (Errors.NOT_LEADER_OR_FOLLOWER, 2, True, "retry"),
    (Errors.REQUEST_TIMED_OUT, 0, True, "end"),
    (Errors.NOT_ENOUGH_REPLICAS, 2, False, "end"),
    (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, 4, True, "end"),
    (Errors.INVALID_PRODUCER_EPOCH, 4, True, "end"),
])
def test_what_an_answer_means(code, left, window, verdict):
    assert P.judge_answer(code, left, window) == verdict


def _batch(offset, producer_id, epoch, sequence):
    return LogBatch(base_offset=offset, record_count=1, epoch=0, producer_id=producer_id, producer_epoch=epoch,
                    base_sequence=sequence)


def test_the_idempotence_rule_holds_a_leader_whose_log_justifies_no_refusal():
    producer = P.IdempotentProducer(3)
    a = _send()
    producer.enqueue(a)
    producer.stamp(a)
    with pytest.raises(RuleBroken) as caught:  # the first batch of an epoch: nothing can be out of order
        P.check_refusal(producer, 0, 0, 0, "OUT_OF_ORDER_SEQUENCE_NUMBER", [])
    assert caught.value.rule == "idempotence"
    producer.finished(a, "ok")
    b = _send(value=2)
    producer.enqueue(b)
    producer.stamp(b)
    # a leader whose log lacks the acknowledged batch (a zombie, a lost write) may refuse: not this rule's
    P.check_refusal(producer, 0, 0, 1, "OUT_OF_ORDER_SEQUENCE_NUMBER", [_batch(0, 9, 0, 0)])
    # a late copy of a batch that is over is refused as it should be
    P.check_refusal(producer, 0, 0, 0, "OUT_OF_ORDER_SEQUENCE_NUMBER", [_batch(0, 3, 0, 0)])
    with pytest.raises(RuleBroken):
        P.check_refusal(producer, 0, 0, 1, "OUT_OF_ORDER_SEQUENCE_NUMBER", [_batch(0, 3, 0, 0)])


# ------------------------------------------------------------------ the client's retries (a stub world)
class _World:
    def __init__(self):
        self.options = SimOptions(idempotent=True)
        self.now = 0
        self.topic = "sim"
        self.controller_ids = [0]
        self.calls = []
        self.later = []
        self._n = 0

    def stamp(self):
        self._n += 1
        return self.now * 1_000_000 + self._n

    def call(self, src, dst, kind, body, on_reply, on_fail, timeout_ms=None, on_refused=None):
        self.calls.append(SimpleNamespace(dst=dst, body=body, reply=on_reply, lost=on_fail, refused=on_refused))

    def at(self, when, fn, *args):
        self.later.append((when, fn, args))

    def advance(self):
        """Run the retries due next (the backoff)."""
        pending, self.later = self.later, []
        for when, fn, args in pending:
            self.now = max(self.now, when)
            fn(*args)


def _clients():
    world = _World()
    clients = Clients(world)
    clients._leader = lambda key, refresh: 1
    return world, clients


def _sends(clients):
    return [op for op in clients.ops if op["f"] == "send"]


def test_a_lost_answer_is_retried_with_the_same_batch_and_a_duplicate_answer_is_ok():
    world, clients = _clients()
    process = clients.produce(0)
    world.calls[-1].lost()               # no answer: the batch may be in the log
    world.advance()
    first, retry = world.calls
    assert first.body == retry.body == (("sim", 0), 1, (0, 0, 0))
    retry.reply((Errors.NONE, 4))        # the leader found it in its cache: the original offset
    assert [op["type"] for op in _sends(clients)] == ["invoke", "ok"]
    assert clients.outcome(process)["value"] == [0, [4, 1]]
    assert clients.producers[0].next_sequence == {0: 1}


def test_attempts_that_certainly_appended_nothing_fail_and_leave_the_sequence_free():
    world, clients = _clients()
    process = clients.produce(0)
    for _ in range(P.ATTEMPTS):
        world.calls[-1].reply((Errors.NOT_ENOUGH_REPLICAS, -1))
        world.advance()
    assert len(world.calls) == P.ATTEMPTS
    assert clients.outcome(process)["type"] == "fail"
    assert clients.producers[0].epoch == 0 and clients.producers[0].next_sequence == {}


def test_spent_attempts_with_an_unknown_outcome_end_info_and_bump_the_epoch():
    world, clients = _clients()
    process = clients.produce(0)
    world.calls[-1].reply((Errors.NOT_LEADER_OR_FOLLOWER, -1))
    world.advance()
    for _ in range(P.ATTEMPTS - 1):
        world.calls[-1].refused()
        world.advance()
    op = clients.outcome(process)
    assert op["type"] == "info" and op["error"].startswith("connection refused")
    assert clients.producers[0].epoch == 1
    clients.produce(0)   # producer 1
    clients.produce(0)   # producer 0 again: the new epoch, sequence 0
    assert world.calls[-1].body[2] == (0, 1, 0)


def test_a_refusal_of_the_batch_is_not_retried():
    world, clients = _clients()
    clients.producers[0].acknowledged[0] = (0, 4)  # as if the log had lost what was acknowledged
    clients.producers[0].next_sequence[0] = 5
    process = clients.produce(0)
    world.calls[-1].reply((Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1))
    world.advance()
    assert len(world.calls) == 1
    op = clients.outcome(process)
    assert (op["type"], op["error"]) == ("fail", "OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert clients.producers[0].epoch == 1


def test_a_send_queued_past_its_window_fails_unsent():
    world, clients = _clients()
    clients.producers = clients.producers[:1]  # one producer: both sends to partition 0 queue on it
    first = clients.produce(0)
    second = clients.produce(0)
    assert len(world.calls) == 1
    world.now = P.delivery_window_ms(world.options.settle_ms, world.options.request_timeout_ms)
    world.calls[-1].lost()
    world.advance()
    assert clients.outcome(first)["type"] == "info"
    op = clients.outcome(second)
    assert (op["type"], op["error"]) == ("fail", "expired before it was sent")
    assert len(world.calls) == 1


# ------------------------------------------------------------------ runs
def _dump(result):
    return json.dumps([result.trace, result.ops, result.finding and result.finding.to_dict()], sort_keys=True,
                      default=str)


@pytest.mark.parametrize("options", [KIP966, SimOptions(variant="kip966", idempotent=True, controllers=3),
                                     SimOptions(variant="kip966", idempotent=True, reassignment_mode="incremental",
                                                brokers=4)])
def test_idempotent_runs_are_clean_and_deterministic(options):
    for seed in range(4):
        first = run_schedule(generate(seed, options), keep_trace=True)
        assert first.finding is None, (seed, first.finding)
        assert _dump(first) == _dump(run_schedule(generate(seed, options), keep_trace=True))
    sends = [op for op in first.ops if op["f"] == "send" and op["type"] == "ok"]
    assert sends and all(op["value"][1][0] is not None for op in sends)
    assert any(ev["kind"] == "producer_batch" for ev in first.trace)


def test_the_option_is_stored_and_replayed_and_the_default_file_is_unchanged():
    schedule = generate(3, KIP966)
    again = Schedule.from_json(schedule.to_json())
    assert again.options.idempotent is True and again == schedule
    assert '"idempotent"' not in generate(3, SimOptions()).to_json()
    assert SimOptions.from_dict(SimOptions().to_dict()) == SimOptions()
    for name in ("k7-recovery-elected-a-less-complete-member.json", "broker-fenced-after-duplicated-registration.json"):
        with open(os.path.join(FINDINGS, name), encoding="utf-8") as fh:
            text = fh.read()
        kept = Schedule.from_json(text)
        assert kept.options.idempotent is False
        assert kept.to_json() == text  # the options of a kept file serialise to the same bytes
        assert run_schedule(kept).finding is None


def test_the_cli_flag(capsys):
    from simulator.cli import main
    assert main(["--variant", "kip966", "--idempotent", "--schedules", "2"]) == 0
    assert "--idempotent" in capsys.readouterr().out.splitlines()[1]


# ------------------------------------------------------------------ broken producer states are found
MUTANTS = {
    # every idempotent batch taken as a plain one: retries are appended again (the queue's duplicate)
    "reference_impl/protocol/producer_state.py:ProducerStateManager.check:flip-comparison:"
    "producer_id == NO_PRODUCER_ID->producer_id != NO_PRODUCER_ID#1": "duplicate",
    # the cache forgets a batch of the same epoch: a retry passes as new
    "reference_impl/protocol/producer_state.py:ProducerStateManager.update:remove-condition:"
    "batch.producer_epoch != entry.producer_epoch->False#1": "duplicate",
    # the duplicate check disabled: the retry of the last batch is refused as out of order
    "reference_impl/protocol/producer_state.py:ProducerStateManager.check:drop-return:"
    "return ProducerCheck(duplicate_of=meta)->pass#1": "idempotence",
    "reference_impl/protocol/producer_state.py:ProducerStateManager.check:remove-condition:"
    "meta.first_seq == base_sequence and meta.last_seq == last_seq->False#1": "idempotence",
    # the sequence test inverted
    "reference_impl/protocol/producer_state.py:in_sequence:flip-comparison:"
    "next_seq == last_seq + 1->next_seq != last_seq + 1#1": "idempotence",
}


@pytest.mark.parametrize("key,rule", list(MUTANTS.items()))
def test_a_broken_producer_state_is_found_on_a_seed_the_core_passes(key, rule):
    mutant = {m.key: m for m in core_mutants()}[key]
    with open(os.path.join(REPO_DIR, mutant.path), encoding="utf-8") as fh:
        source = fh.read()
    for seed in range(4):
        with applied(mutant, source):
            result = simulate(seed, KIP966)
        if result.finding is not None:
            assert result.finding.rule == rule, result.finding
            assert simulate(seed, KIP966).finding is None
            return
    pytest.fail(f"{key} not found in 4 idempotent schedules")


def test_without_the_option_the_same_mutant_goes_unseen():
    key = next(iter(MUTANTS))
    mutant = {m.key: m for m in core_mutants()}[key]
    with open(os.path.join(REPO_DIR, mutant.path), encoding="utf-8") as fh:
        source = fh.read()
    with applied(mutant, source):
        assert simulate(1, SimOptions(variant="kip966")).finding is None


def test_the_self_test_runs_producer_state_mutants_on_idempotent_settings():
    mutant = {m.key: m for m in core_mutants()}[next(iter(MUTANTS))]
    assert sequence_of(mutant) == IDEMPOTENT
    assert [seed_at(i, IDEMPOTENT) for i in range(3)] == [("kip966+idempotent", 0), ("v3.5+idempotent", 0),
                                                           ("kip966+idempotent", 1)]
    with open(os.path.join(REPO_DIR, mutant.path), encoding="utf-8") as fh:
        answer = judge(mutant, fh.read(), 0, 20.0)
    assert answer["status"] == DETECTED and answer["rule"] == "duplicate"
    assert answer["variant"].endswith("+idempotent")
