"""Q14/Q15: the controller state machine on the quorum: committed records only, fail-over, zombies."""

from __future__ import annotations

import random

from reference_impl.protocol.controller import ControllerConfig
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.quorum_controller import COMMITTED, LOST, PENDING, QuorumController, Ticket
from reference_impl.protocol.raft import InMemoryElectionStore, InMemoryRaftLog
from reference_impl.protocol.records import RegisterBrokerRecord
from tests.reference_impl.protocol.raft.quorum_driver import CONFIG, Quorum

CTL = ControllerConfig(min_isr=2, elr_enabled=True, session_timeout_ms=1000)


def controllers(ids=(101, 102, 103), config=CTL, seed=0) -> Quorum:
    def build(i, log, store, rng, now):
        return QuorumController(i, ids, log, store, CONFIG, config, rng, now)
    return Quorum(ids, seed=seed, factory=build)


def active(q: Quorum) -> QuorumController:
    q.elect()
    for _ in range(100):
        live = [n for n in q.nodes.values() if n is not None and n.active]
        if live:
            assert len(live) == 1
            return live[0]
        q.advance(5)
    raise AssertionError("no active controller")


def commit(q: Quorum, compute, node: QuorumController | None = None):
    node = node or active(q)
    ticket = node.submit(compute, q.now)
    assert isinstance(ticket, Ticket), ticket
    for _ in range(200):
        state, answer = node.outcome(ticket)
        if state != PENDING:
            assert state == COMMITTED, answer
            return answer
        q.advance(5)
    raise AssertionError("change never committed")


def register(q: Quorum, broker: int, node=None, unfence: bool = True):
    answer = commit(q, lambda c: c.register_broker(broker, f"inc-{broker}"), node)
    if unfence:
        commit(q, lambda c: c.unfence_broker(broker), node)
    return answer


def state_of(n: QuorumController) -> dict:
    c = n.controller
    return {"brokers": {b: (r.epoch, r.fenced) for b, r in c.brokers.items()},
            "partitions": {tp: p.as_dict() for tp, p in c.partitions()}, "offset": c.last_offset}


def test_single_voter_commits_at_once_and_the_first_epoch_is_offset_zero():
    node = QuorumController(1, (1,), InMemoryRaftLog(), InMemoryElectionStore(), CONFIG, CTL, random.Random(0), 0)
    assert node.active
    ticket = node.submit(lambda c: c.register_broker(1, "i"), 0)
    assert node.outcome(ticket) == (COMMITTED, ticket.response) and ticket.response.broker_epoch == 0  # C4


def test_every_voter_applies_the_same_committed_records():
    q = controllers()
    for b in (1, 2, 3):
        register(q, b)
    commit(q, lambda c: c.create_topic("t", assignment={0: [1, 2, 3]}, topic_id="tid"))
    q.advance(20)
    states = [state_of(n) for n in q.nodes.values()]
    assert states[0] == states[1] == states[2] and len(states[0]["brokers"]) == 3
    assert list(states[0]["partitions"]) == [("t", 0)]


def test_broker_epoch_is_the_registration_records_quorum_offset():
    q = controllers()
    node = active(q)
    answer = register(q, 7)
    batch = next(b for b in q.logs[node.id].batches if isinstance(b.records[-1], RegisterBrokerRecord))
    assert answer.broker_epoch == batch.base_offset + len(batch.records) - 1
    assert [b.epoch for b in q.logs[node.id].batches] == [node.epoch] * len(q.logs[node.id].batches)


def test_fail_over_continues_from_the_committed_log():
    q = controllers()
    for b in (1, 2, 3, 4):
        register(q, b)
    commit(q, lambda c: c.create_topic("t", assignment={0: [1, 2, 3]}, topic_id="tid"))
    commit(q, lambda c: c.alter_partition_reassignments({("t", 0): [2, 3, 4]}))  # grows: adding {4}
    commit(q, lambda c: c.fence_broker(2))
    before = state_of(active(q))
    old = active(q)
    q.crash(old.id)
    new = active(q)
    assert new.id != old.id
    after = state_of(new)
    assert after["brokers"] == before["brokers"]
    assert after["partitions"] == before["partitions"]
    p = new.controller.partition("t", 0)
    assert p.adding == [4] and 2 not in p.isr  # the reassignment in progress and the fencing survived
    # the new controller goes on: broker epochs keep increasing
    epoch = register(q, 9).broker_epoch
    assert epoch > max(r.epoch for r in new.controller.brokers.values() if r.broker_id != 9)


def test_a_new_active_controller_gives_every_broker_a_fresh_session():
    q = controllers()
    for b in (1, 2):
        register(q, b)
    old = active(q)
    q.crash(old.id)
    new = active(q)
    changes = list(new.periodic(q.now))
    assert all(not ch.result.records for ch in changes if ch.kind == "session-timeout")


def test_a_zombie_leader_changes_nothing_and_its_records_are_truncated():
    q = controllers()
    register(q, 1)
    zombie = active(q)
    q.isolate(zombie.id)
    ticket = zombie.submit(lambda c: c.register_broker(2, "zombie-inc"), q.now)
    assert isinstance(ticket, Ticket) and ticket.end > ticket.base
    assert isinstance(ticket, Ticket)
    q.advance(CONFIG.check_quorum_timeout_ms + 50)
    assert zombie.outcome(ticket)[0] == LOST and not zombie.active
    assert all(2 not in n.controller.brokers for n in q.nodes.values())  # never applied anywhere
    new = active(q)
    register(q, 3, new)
    q.heal()
    q.advance(600)
    assert 2 not in zombie.controller.brokers and 3 in zombie.controller.brokers
    assert state_of(zombie) == state_of(new)


def test_only_the_active_controller_serves_committed_metadata():
    q = controllers()
    register(q, 1)
    leader = active(q)
    follower = next(n for n in q.nodes.values() if n is not leader)
    err, batches = follower.serve_metadata(0, 100)
    assert err.code == Errors.NOT_CONTROLLER and str(leader.id) in err.message
    err, batches = leader.serve_metadata(0, 100)
    assert err.ok and sum(len(r) for _, r in batches) == leader.applied
    # an appended but uncommitted change is not served
    q.isolate(leader.id)
    leader.submit(lambda c: c.register_broker(5, "x"), q.now)
    err, batches = leader.serve_metadata(0, 100)
    assert err.ok and all(b + len(r) <= leader.applied for b, r in batches)
    assert leader.serve_metadata(leader.applied + 1, 10)[0].code == Errors.OFFSET_OUT_OF_RANGE


def test_requests_wait_for_the_change_in_flight():
    q = controllers()
    node = active(q)
    first = node.submit(lambda c: c.register_broker(1, "a"), q.now)
    assert isinstance(first, Ticket)
    refused = node.submit(lambda c: c.register_broker(2, "b"), q.now)
    assert getattr(refused, "code", None) == Errors.NOT_CONTROLLER  # the driver queues it meanwhile
    q.advance(10)
    assert node.outcome(first)[0] == COMMITTED


def test_a_settled_change_nobody_asked_about_does_not_block_the_next():
    q = controllers()
    node = active(q)
    first = node.submit(lambda c: c.register_broker(1, "a"), q.now)
    assert isinstance(first, Ticket)
    q.advance(10)  # committed, but its requester went away before asking (a cancelled request)
    second = node.submit(lambda c: c.register_broker(2, "b"), q.now)
    assert isinstance(second, Ticket)
