"""The node loops in the core (``controller_loop``, ``broker_session``, ``follower_fetch``, ``isr_loop``,
``trace_events``): what the servers and the simulator both run around the protocol objects."""

from __future__ import annotations

import random

import pytest

from reference_impl.protocol.broker import RECOVERY, RUNNING, BrokerLifecycle
from reference_impl.protocol.broker_session import (
    FAST_HEARTBEAT_MS,
    MetadataPull,
    accepts_produce,
    heartbeat_delay_ms,
    registered,
    stop_marker_epoch,
)
from reference_impl.protocol.controller_loop import metadata_batches_from, periodic_changes, replay_committed
from reference_impl.protocol.errors import OK, Errors, error
from reference_impl.protocol.follower_fetch import answer_now, complete_fetch_round, fetch_round
from reference_impl.protocol.isr_loop import alter_partition_unanswered, isr_round
from reference_impl.protocol.metadata_image import MetadataImage
from reference_impl.protocol.records import FenceBrokerRecord, RegisterBrokerRecord, TopicRecord

from .controller_helpers import cluster, current, state, with_partition
from .replica_driver import Driver


# ------------------------------------------------------------------------------------------ controller_loop
def test_periodic_changes_fence_one_expired_broker_per_change_computed_after_the_previous_commit():
    ctl = cluster(session_timeout_ms=100)
    ctl.check_session_timeouts(0)  # first sight starts every session
    changes = periodic_changes(ctl, 1000)
    fenced = []
    for change in changes:
        if change.kind == "session-timeout":
            fenced.append(change.result.response)
            ctl.apply(change.result)  # committed before the next one is computed (C1)
    assert fenced == [1, 2, 3]
    assert all(ctl.brokers[b].fenced for b in (1, 2, 3))


def test_replay_committed_traces_each_record_and_elections():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    result = ctl.fence_broker(1)
    offsets = list(range(ctl.next_offset, ctl.next_offset + len(result.records)))
    events = replay_committed(ctl, result.records, offsets)
    kinds = [e["kind"] for e in events]
    assert kinds == ["metadata_applied", "election", "fenced"]
    assert all(e["source"] == "controller" for e in events)
    election = events[1]
    assert (election["type"], election["previous_leader"], election["leader"]) == ("clean", 1, current(ctl).leader)


def test_metadata_batches_from_serves_whole_batches():
    batches = [(0, ["a", "b"]), (2, ["c"]), (3, ["d", "e", "f"])]
    assert metadata_batches_from(batches, 6, 6, 10) == []
    assert metadata_batches_from(batches, 6, 2, 10) == [(2, ["c"]), (3, ["d", "e", "f"])]
    assert metadata_batches_from(batches, 6, 0, 3) == [(0, ["a", "b"]), (2, ["c"])]
    assert metadata_batches_from(batches, 6, 3, 1) == [(3, ["d", "e", "f"])]  # at least one batch
    with pytest.raises(ValueError):
        metadata_batches_from(batches, 6, 1, 10)  # inside a batch: not a prefix of ours (I5)


# ------------------------------------------------------------------------------------------ broker_session
def test_registration_heartbeat_cadence_produce_gate_and_marker():
    lc = BrokerLifecycle(1)
    lc.start(random.Random(1), None)
    assert not registered(lc, error(Errors.DUPLICATE_BROKER_REGISTRATION), -1)
    assert registered(lc, OK, 7)
    assert (lc.state, lc.recovered, lc.broker_epoch) == (RECOVERY, True, 7)
    assert heartbeat_delay_ms(lc, 2000) == FAST_HEARTBEAT_MS and not accepts_produce(lc)
    lc.handle_heartbeat_response(OK, is_fenced=False, should_shutdown=False)
    assert lc.state == RUNNING and heartbeat_delay_ms(lc, 2000) == 2000 and accepts_produce(lc)
    lc.begin_controlled_shutdown()
    assert accepts_produce(lc)  # still leading while it moves leaderships away (L1)
    assert stop_marker_epoch(lc) == 7  # not confirmed in time: the session's epoch all the same
    lc.handle_heartbeat_response(OK, is_fenced=True, should_shutdown=True)
    assert stop_marker_epoch(lc) == 7 and lc.state == "OFFLINE"


def test_metadata_pull_holds_everything_until_the_brokers_own_registration():
    image = MetadataImage()
    pull = MetadataPull(image, broker_epoch=2)
    assert pull.next_offset == 0
    first = [[(0, TopicRecord("t", "tid")), (1, RegisterBrokerRecord(9, "x", 1))]]
    assert pull.receive(first) == [] and pull.next_offset == 2 and not pull.caught_up
    second = [[(2, RegisterBrokerRecord(1, "me", 2))], [(3, FenceBrokerRecord(9, 1))]]
    out = pull.receive(second)
    assert pull.caught_up and [[o for o, _ in batch] for batch in out] == [[0, 1, 2, 3]]
    image.apply_batch(out[0])
    assert pull.next_offset == 4
    assert pull.receive([[(4, FenceBrokerRecord(1, 2))]]) == [[(4, FenceBrokerRecord(1, 2))]]


# ------------------------------------------------------------------------------------------ follower_fetch
def test_a_fetch_round_abandons_misrouted_fetches_and_unanswered_ones():
    d = Driver(replicas=(1, 2, 3))
    follower, backoff = d.replicas[2], d.config.fetch_backoff_ms
    assert fetch_round([("p", follower)], leader_id=3, now_ms=0) == []  # follows 1, not 3: given up
    assert follower.fetch_in_flight is None
    planned = fetch_round([("p", follower)], leader_id=1, now_ms=backoff)
    assert [p.key for p in planned] == ["p"] and follower.fetch_in_flight == planned[0].request
    assert complete_fetch_round(planned, {}, now_ms=backoff) is False
    assert follower.fetch_in_flight is None and follower.build_fetch(backoff) is None  # backing off (F2)
    planned = fetch_round([("p", follower)], leader_id=1, now_ms=2 * backoff)
    req = planned[0].request
    answer = d.replicas[1].handle_follower_fetch(2, req.broker_epoch, req.leader_epoch, req.fetch_offset,
                                                 req.last_fetched_epoch, req.max_bytes, 2 * backoff)
    assert complete_fetch_round(planned, {"p": answer}, now_ms=2 * backoff) is True
    assert follower.fetch_in_flight is None and follower.build_fetch(2 * backoff) is not None


def test_answer_now_is_the_long_poll_rule():
    assert answer_now(True, 0, 1, False) and answer_now(False, 1, 1, False) and answer_now(False, 0, 1, True)
    assert not answer_now(False, 0, 1, False) and not answer_now(False, 5, 10, False)


# ------------------------------------------------------------------------------------------ isr_loop
def test_isr_round_skips_ineligible_followers_and_resends_after_a_lost_reply():
    d = Driver(replicas=(1, 2, 3), isr=[1, 2], lag_ms=1000)
    d.round()
    image = MetadataImage()
    image.apply_batch([(0, RegisterBrokerRecord(3, "x", 0, fenced=True))])
    assert isr_round([("p", d.replicas[1])], image, 0) == []  # 3 caught up but fenced (KIP-841)
    image.apply_batch([(1, RegisterBrokerRecord(3, "x", 0, fenced=False))])
    image.brokers[3].broker_epoch = d.replicas[3].broker_epoch
    due = isr_round([("p", d.replicas[1]), ("q", d.replicas[2])], image, 0)
    assert [(k, r.isr_ids) for k, r in due] == [("p", [1, 2, 3])]
    leader = d.replicas[1]
    assert leader.maximal_isr == [1, 2, 3]
    alter_partition_unanswered(leader, due[0][1], "timeout", 0)
    # L16: the controller may have committed it; keep the Maximal ISR and send the same request again
    assert leader.pending_alter_partition == due[0][1] and leader.maximal_isr == [1, 2, 3]
    retry = leader.config.alter_partition_retry_ms
    assert isr_round([("p", leader)], image, retry - 1) == []
    assert isr_round([("p", leader)], image, retry) == [("p", due[0][1])]
    assert isr_round([("p", leader)], image, 2 * retry) == []  # one resend per lost reply
