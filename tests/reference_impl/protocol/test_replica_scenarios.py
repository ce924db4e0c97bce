"""docs/protocol-rules.md section 6 scenarios for one leader and its followers, by hand (no controller)."""

from __future__ import annotations

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.log import InMemoryLog, LogBatch
from reference_impl.protocol.metadata_image import T5_FOLLOWER_NEW_EPOCH, MetadataImage
from reference_impl.protocol.records import NO_LEADER, PartitionChangeRecord, PartitionRecord, TopicRecord
from reference_impl.protocol.replica import FOLLOWER, LEADER, NO_ROLE, PartitionReplica
from reference_impl.protocol.replica_messages import (
    LATEST_TIMESTAMP,
    AlterPartitionResponse,
    DeleteLog,
    IsrMember,
    ProduceBatch,
    ReplicaConfig,
    StartFetching,
    StopFetching,
)
from tests.reference_impl.protocol.replica_driver import Driver


def verdicts(replica: PartitionReplica) -> list[tuple[int, str | None]]:
    """Completed acks as (base offset, error name) pairs."""
    return [(a.base_offset, a.error.name) for a in replica.drain_completed_acks()]


def test_s1_happy_path():
    d = Driver()
    res = d.produce(b"A")
    assert res.pending and res.base_offset == 0
    d.round()
    assert [d.values(b) for b in (1, 2, 3)] == [[b"A"]] * 3
    assert d.leader.high_watermark == 0 and verdicts(d.leader) == []
    d.round()
    assert d.leader.high_watermark == 1
    assert verdicts(d.leader) == [(0, None)]
    # followers learn the HWM from later responses: 3 fetched after the leader moved it, 2 before
    assert (d.replicas[2].high_watermark, d.replicas[3].high_watermark) == (0, 1)
    d.round()
    assert (d.replicas[2].high_watermark, d.replicas[3].high_watermark) == (1, 1)


def test_s2_not_enough_replicas_v35():
    d = Driver(isr=[1])
    refused = d.produce(b"X")
    assert refused.error.code == Errors.NOT_ENOUGH_REPLICAS and d.leader.log_end_offset == 0
    accepted = d.produce(b"Y", acks=1)
    assert accepted.error.ok and not accepted.pending and accepted.base_offset == 0
    assert d.leader.high_watermark == 1  # v3.5: ISR={leader} commits alone (L4 has no gate)


def test_s2_not_enough_replicas_kip966():
    d = Driver(variant="kip966", isr=[1])
    assert d.produce(b"X").error.code == Errors.NOT_ENOUGH_REPLICAS
    assert d.produce(b"Y", acks=1).error.ok
    assert d.leader.high_watermark == 0  # L4: frozen while ISR < MinISR


def test_s3_after_append_v35():
    d = Driver()
    res = d.produce(b"C")
    assert res.pending
    d.change(isr=[1])  # 2 and 3 fenced before they fetch
    assert d.leader.high_watermark == 1
    assert verdicts(d.leader) == [(0, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")]
    read = d.leader.read_committed(0, 1 << 20)
    assert [b.payload for b in read.batches] == [b"C"]  # nacked but readable (L6)


def test_s4_after_append_kip966():
    d = Driver(variant="kip966")
    assert d.produce(b"C").pending
    d.change(isr=[1])  # the controller also puts 3 in the ELR; the leader cannot see it (K11)
    assert d.leader.high_watermark == 0 and verdicts(d.leader) == []
    d.now += 100
    d.fetch(3)  # 3 heals and fetches: it reaches HWM and LESO (L15)
    req = d.leader.maybe_change_isr(d.now)
    assert req is not None and req.isr_ids == [1, 3]
    assert [(m.broker_id, m.broker_epoch) for m in req.new_isr] == [(1, -1), (3, 103)]
    d.leader.handle_alter_partition_response(req, d.judge_ap(req), d.now)
    assert d.leader.isr == [1, 3] and d.leader.high_watermark == 0  # 3 has not fetched C's end yet
    d.fetch(3)
    assert d.leader.high_watermark == 1
    assert verdicts(d.leader) == [(0, None)]


def test_s5_clean_failover():
    d = Driver()
    d.produce(b"A")
    d.round()
    d.round()
    d.round()
    assert [r.high_watermark for r in d.replicas.values()] == [1, 1, 1]
    assert verdicts(d.leader) == [(0, None)]
    assert d.produce(b"B").pending  # only on 1
    actions = d.change(leader=2, isr=[2, 3])
    assert d.state.leader_epoch == 2 and d.state.partition_epoch == 2
    assert actions == {1: [StartFetching(2, 2)], 2: [StopFetching()], 3: [StartFetching(2, 2)]}
    assert verdicts(d.replicas[1]) == [(1, "NOT_LEADER_OR_FOLLOWER")]
    new = d.replicas[2]
    assert new.role == LEADER and new.leso == 1
    resp = d.fetch(1)
    assert resp.diverging_epoch == EpochEndOffset(1, 1)
    assert [d.values(b) for b in (1, 2, 3)] == [[b"A"]] * 3
    d.round()
    d.now += 10
    req = new.maybe_change_isr(d.now)
    assert req is not None and req.isr_ids == [2, 3, 1]
    new.handle_alter_partition_response(req, d.judge_ap(req), d.now)
    assert new.isr == [2, 3, 1]


def test_s7_fetch_errors_leave_follower_state_unchanged():
    d = Driver(leader_epoch=2)
    leader = d.leader
    cases = [(1, 1, Errors.FENCED_LEADER_EPOCH), (1, 3, Errors.UNKNOWN_LEADER_EPOCH),
             (2, 2, Errors.NOT_LEADER_OR_FOLLOWER)]
    for target, epoch, code in cases:
        resp = d.replicas[target].handle_follower_fetch(3, 103, epoch, 0, -1, 1000, 0)
        assert resp.error.code == code and resp.batches == ()
    assert leader.followers[3].leo is None


def test_s7_follower_backs_off_after_an_error():
    d = Driver()
    follower = d.replicas[2]
    req = follower.build_fetch(0)
    assert follower.build_fetch(0) is None  # F1: one outstanding fetch
    resp = d.replicas[3].handle_follower_fetch(2, 102, req.leader_epoch, 0, -1, 1000, 0)
    assert resp.error.code == Errors.NOT_LEADER_OR_FOLLOWER
    follower.handle_fetch_response(req, resp, 0)
    assert follower.build_fetch(10) is None  # F2: back off
    assert follower.build_fetch(d.config.fetch_backoff_ms) is not None


def test_s8_eager_maximal_isr():
    d = Driver(isr=[1, 2])
    d.fetch(3)  # empty 3 reaches HWM 0 = LESO
    req = d.leader.maybe_change_isr(d.now)
    assert req.isr_ids == [1, 2, 3] and d.leader.maximal_isr == [1, 2, 3]
    for i in range(10):
        d.produce(b"w%d" % i, acks=1)
    for _ in range(3):
        d.fetch(2)
    assert d.replicas[2].log_end_offset == 10
    # L13: the HWM waits for 3 while the proposal is in flight, so it never exceeds LEO(3) = 0
    assert d.leader.high_watermark == 0 <= d.replicas[3].log_end_offset
    d.leader.handle_alter_partition_response(req, d.judge_ap(req), d.now)
    assert d.leader.isr == [1, 2, 3] and d.leader.high_watermark == 0
    d.change(leader=3, isr=[3])  # 1 and 2 fenced, 3 elected: nothing committed is lost
    assert d.replicas[3].role == LEADER and d.replicas[3].log_end_offset >= 0


def test_s9_shrink_rejected_then_retried_with_new_pe():
    d = Driver(lag_ms=1000)
    d.now = 1500
    d.fetch(2)  # 2 keeps up; 3 is silent past the lag window (L14)
    req = d.leader.maybe_change_isr(d.now)
    assert req.isr_ids == [1, 2] and req.partition_epoch == 1
    assert d.leader.maximal_isr == [1, 2, 3]
    d.produce(b"X")
    d.fetch(2)
    d.fetch(2)
    assert d.leader.high_watermark == 0  # the HWM still waits for 3 until the reply (1.6)
    d.state.isr = [1, 3]  # 2 fenced meanwhile: the controller commits PE2 before judging the AP
    d.state.partition_epoch += 1
    resp = d.judge_ap(req)
    assert resp.error.code == Errors.INVALID_UPDATE_VERSION
    d.leader.handle_alter_partition_response(req, resp, d.now)
    assert d.leader.maximal_isr == [1, 2, 3] and d.leader.pending_alter_partition == req  # L16: await metadata
    d.publish()
    assert d.leader.pending_alter_partition is None  # L17: the newer PE answers it
    assert d.leader.isr == [1, 3]
    retry = d.leader.maybe_change_isr(d.now, ineligible={2})  # the image shows 2 fenced
    assert retry.isr_ids == [1] and retry.partition_epoch == 2


def test_s14_reelected_leader_resets_non_isr_followers():
    d = Driver(isr=[1, 2])
    d.produce(b"A", acks=1)
    d.round()
    d.round()
    assert d.leader.followers[3].leo == 1 >= d.leader.high_watermark
    d.change(bump_le=True)  # re-elected in LE2 (e.g. a reassignment completed)
    assert d.leader.followers[3].leo is None and d.leader.followers[2].leo == 1
    assert d.leader.maybe_change_isr(d.now) is None  # L15(a): no AP +3 before a fetch in LE2
    d.fetch(3)
    assert d.leader.maybe_change_isr(d.now).isr_ids == [1, 2, 3]


def test_s14_control_same_epoch_would_add():
    """The control for s14: without the LE change the old fetch state is enough to add 3."""
    d = Driver(isr=[1, 2])
    d.produce(b"A", acks=1)
    d.round()
    d.round()
    assert d.leader.maybe_change_isr(d.now).isr_ids == [1, 2, 3]


def test_s25_batched_metadata_hides_the_intermediate_leader():
    image = MetadataImage()
    image.apply_batch([(0, TopicRecord("t", "t")),
                       (1, PartitionRecord("t", 0, (1, 2, 3), (1, 2, 3), 1, 1, 1))])
    log3 = InMemoryLog()
    for off in range(2):
        log3.append(LogBatch(off, 1, 1, payload=b"%d" % off))
    follower = PartitionReplica(3, "t", 0, log3, ReplicaConfig(min_insync_replicas=2), broker_epoch=103)
    assert follower.apply_metadata(image.partition("t", 0), 0) == [StartFetching(1, 1)]
    delta = image.apply_batch([(2, PartitionChangeRecord("t", 0, leader=2, isr=(2, 3), leader_epoch_bump=True)),
                               (3, PartitionChangeRecord("t", 0, leader=1, isr=(1, 3), leader_epoch_bump=True))])
    [transition] = delta.transitions_for(3)
    assert (transition.rule, transition.state.leader, transition.state.leader_epoch) == (T5_FOLLOWER_NEW_EPOCH, 1, 3)
    assert follower.apply_metadata(transition.state, 0) == [StartFetching(1, 3)]
    # leader 1 restarted lossy and kept only offset 0; it leads LE3 now
    log1 = InMemoryLog()
    log1.append(LogBatch(0, 1, 1, payload=b"0"))
    leader = PartitionReplica(1, "t", 0, log1, ReplicaConfig(min_insync_replicas=2), broker_epoch=101)
    leader.apply_metadata(transition.state, 0)
    req = follower.build_fetch(0)
    assert (req.fetch_offset, req.last_fetched_epoch, req.leader_epoch) == (2, 1, 3)
    resp = leader.handle_follower_fetch(3, 103, 3, 2, 1, 1000, 0)
    assert resp.diverging_epoch == EpochEndOffset(1, 1)
    follower.handle_fetch_response(req, resp, 0)
    assert follower.log_end_offset == 1


def test_s26_ap_reply_after_the_record_is_ignored():
    d = Driver(isr=[1, 2])
    d.fetch(3)
    req = d.leader.maybe_change_isr(d.now)
    resp = d.judge_ap(req)  # committed as PE2
    d.publish()  # the record arrives first: PE2 applied, pending AP cleared (L17)
    assert d.leader.isr == [1, 2, 3] and d.leader.pending_alter_partition is None
    d.leader.drain_events()
    d.leader.handle_alter_partition_response(req, resp, d.now)
    assert d.leader.drain_events() == [] and d.leader.partition_epoch == 2


def test_s27_follower_hwm_regresses():
    d = Driver(min_isr=1)
    for i in range(5):
        d.produce(b"%d" % i, acks=1)
    d.round()
    d.round()
    d.round()
    assert d.replicas[2].high_watermark == 5
    # 3 becomes leader with a stale HWM of 3
    d.replicas[3]._hwm = 3
    d.change(leader=3, isr=[3, 2, 1])  # 1 has not fetched in LE2 yet, so 3's HWM stays 3
    d.fetch(2)
    assert d.replicas[3].high_watermark == 3
    assert d.replicas[2].high_watermark == 3  # F4: allowed to go down


def test_l18_list_offsets_unknown_until_hwm_reaches_leso():
    d = Driver(min_isr=1)
    d.produce(b"A", acks=1)
    d.round()
    d.round()
    assert d.leader.list_offsets(LATEST_TIMESTAMP).offset == 1
    d.replicas[2]._hwm = 0  # 2 never learned HWM 1 (5.7)
    d.replicas[2].log.checkpoint_high_watermark(0)
    d.change(leader=2, isr=[2, 3])
    new = d.replicas[2]
    assert new.leso == 1 and new.high_watermark == 0
    assert new.list_offsets(LATEST_TIMESTAMP).error.code == Errors.OFFSET_NOT_AVAILABLE
    assert new.read_committed(0, 1000).batches == ()
    d.fetch(3)
    assert new.high_watermark == 1
    assert new.list_offsets(LATEST_TIMESTAMP).offset == 1


def test_t1_removed_replica_deletes_its_log_and_nacks():
    d = Driver()
    d.produce(b"A")
    actions = d.change(publish_to=[1], replicas=[2, 3], isr=[2, 3], leader=2)
    assert actions[1] == [StopFetching(), DeleteLog()]
    assert verdicts(d.replicas[1]) == [(0, "NOT_LEADER_OR_FOLLOWER")]


def test_t6_no_leader():
    d = Driver()
    actions = d.change(leader=NO_LEADER)
    assert actions == {1: [], 2: [StopFetching()], 3: [StopFetching()]}
    assert {r.role for r in d.replicas.values()} == {NO_ROLE}


def test_t4_same_leader_same_epoch_is_a_noop_and_l17_ignores_old_pe():
    d = Driver()
    assert d.change(isr=[1, 2])[2] == []
    old = d.state.copy()
    old.partition_epoch = 1
    assert d.replicas[2].apply_metadata(old, 0) == [] and d.replicas[2].isr == [1, 2]
    assert d.replicas[2].role == FOLLOWER


def test_stamp_rewrites_the_payload_with_assigned_offset_and_epoch():
    d = Driver(min_isr=1, leader_epoch=4)
    d.produce(b"x", acks=1)
    res = d.leader.append_as_leader(ProduceBatch(1, b"y"), 1, 0,
                                    stamp=lambda payload, base, epoch: payload + b"@%d/%d" % (base, epoch))
    assert res.base_offset == 1 and d.values(1) == [b"x", b"y@1/4"]


def test_cancel_ack_and_duplicate_waits_for_the_hwm():
    d = Driver()
    first = d.produce(b"a", producer_id=9, producer_epoch=0, base_sequence=0)
    retry = d.produce(b"a", producer_id=9, producer_epoch=0, base_sequence=0)
    assert retry.duplicate and retry.pending and retry.base_offset == first.base_offset == 0
    assert d.leader.cancel_ack(first.ack_id) and not d.leader.cancel_ack(first.ack_id)
    d.round()
    d.round()
    assert [(a.ack_id, a.error.name) for a in d.leader.drain_completed_acks()] == [(retry.ack_id, None)]
    late = d.produce(b"a", producer_id=9, producer_epoch=0, base_sequence=0)
    assert late.duplicate and not late.pending and late.error.ok  # already below the HWM: answered at once


def test_consumer_reads_stop_at_the_hwm_and_need_the_leader():
    d = Driver()
    d.produce(b"a", acks=1)
    d.produce(b"b", acks=1)
    assert d.leader.read_committed(0, 1000).batches == ()
    d.round()
    d.fetch(2)
    d.fetch(3)
    assert d.leader.high_watermark == 2
    d.produce(b"c", acks=1)
    assert [b.payload for b in d.leader.read_committed(0, 1000).batches] == [b"a", b"b"]
    assert d.leader.read_committed(5, 1000).error.code == Errors.OFFSET_OUT_OF_RANGE
    assert d.replicas[2].read_committed(0, 1000).error.code == Errors.NOT_LEADER_OR_FOLLOWER
    assert d.leader.read_committed(0, 1000, current_leader_epoch=0).error.code == Errors.FENCED_LEADER_EPOCH


def test_b3_s10_restarted_replica_rejoins_only_through_l15_under_its_new_epoch():
    d = Driver(min_isr=1)
    d.produce(b"a", acks=1)
    d.round()
    d.round()
    d.replicas[3].checkpoint_high_watermark()
    d.change(isr=[1, 2])  # 3 crashed and was fenced out of the ISR
    d.produce(b"b", acks=1)
    # 3 restarts over its (intact) log: no truncation at boot (B5), HWM from the checkpoint
    restarted = PartitionReplica(3, "t", 0, d.logs[3], d.config, broker_epoch=203)
    assert (restarted.log_end_offset, restarted.high_watermark, restarted.role) == (1, 1, NO_ROLE)
    d.replicas[3] = restarted
    assert d.publish(to=[3]) == {3: [StartFetching(1, 1)]}
    epochs = {1: 101, 2: 102, 3: 203}
    # scenario 10: the leader still holds the old incarnation's fetch (epoch 103). Without the epochs it
    # would propose 3 with 103, which the controller refuses (C14); with them it waits for a new fetch.
    stale = d.leader.maybe_change_isr(d.now)
    assert stale.new_isr[-1] == IsrMember(3, 103)
    d.leader.handle_alter_partition_response(stale, AlterPartitionResponse(error(Errors.INELIGIBLE_REPLICA)), d.now)
    assert d.leader.maybe_change_isr(d.now, broker_epochs=epochs) is None
    d.fetch(2)
    d.fetch(3)
    d.fetch(3)
    req = d.leader.maybe_change_isr(d.now, broker_epochs=epochs)
    assert req.isr_ids == [1, 2, 3] and req.new_isr[-1] == IsrMember(3, 203)  # the new epoch, from its fetch


def test_f2_stale_replies_are_dropped():
    d = Driver()
    d.produce(b"a", acks=1)
    follower = d.replicas[2]
    req = follower.build_fetch(0)
    resp = d.leader.handle_follower_fetch(2, 102, req.leader_epoch, req.fetch_offset, req.last_fetched_epoch,
                                          req.max_bytes, 0)
    d.change(leader=3, isr=[3, 2, 1])  # LE2 arrives before the reply
    follower.handle_fetch_response(req, resp, 0)
    assert follower.log_end_offset == 0  # dropped: the fetch belonged to the old leader and LE
    req2 = follower.build_fetch(0)
    assert (req2.leader_id, req2.leader_epoch) == (3, 2)
    # a reply whose echoed offset is not the current fetch offset is dropped too
    forged = type(resp)(resp.error, 2, 5, resp.high_watermark, 0, 0, None, resp.batches)
    follower.handle_fetch_response(req2, forged, 0)
    assert follower.log_end_offset == 0 and follower.fetch_in_flight is None


def test_l5_leadership_loss_nacks_and_t3_reelection_keeps_pending():
    d = Driver()
    pending = d.produce(b"a")
    d.change(bump_le=True)  # re-elected: the write may still commit
    d.round()
    d.round()
    assert [(a.ack_id, a.error.name) for a in d.leader.drain_completed_acks()] == [(pending.ack_id, None)]
    lost = d.produce(b"b")
    d.leader.shutdown()  # B4: a clean stop nacks what is pending
    assert [(a.ack_id, a.error.name) for a in d.replicas[1].drain_completed_acks()] == [
        (lost.ack_id, "NOT_LEADER_OR_FOLLOWER")]
    assert d.replicas[1].role == NO_ROLE and d.logs[1].flushed_offset == 2
    assert d.logs[1].checkpointed_high_watermark() == d.replicas[1].high_watermark == 1
    assert d.replicas[1].append_as_leader(ProduceBatch(1, b"c"), 1, 0).error.code == Errors.NOT_LEADER_OR_FOLLOWER
