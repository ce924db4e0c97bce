"""Broker lifecycle on the controller: registration (C3, C4), unfence (C5), fence (C6, C7), session
timeouts, controlled shutdown (C8, C9); docs/protocol-rules.md section 6 scenarios 12, 13, 28 and 5.1 (v3.5,
controller side)."""

from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import FenceBrokerRecord, RegisterBrokerRecord, UnfenceBrokerRecord

from .controller_helpers import NO_LEADER, cluster, current, epoch, state, with_partition


def test_registration_epoch_is_the_record_offset_and_broker_starts_fenced():
    ctl = Controller()
    res = ctl.register_broker(1, "a")
    assert [type(r) for r in res.records] == [RegisterBrokerRecord]
    assert res.response.broker_epoch == ctl.next_offset == 0
    ctl.apply(res)
    assert ctl.brokers[1].fenced and ctl.brokers[1].epoch == 0  # C4: fenced until C5
    res2 = ctl.apply(ctl.register_broker(2, "b"))
    assert res2.broker_epoch == 1  # C4: greater than every earlier epoch


def test_scenario12_registration_gating():
    ctl = cluster()
    e1 = epoch(ctl, 1)
    # New incarnation for an unfenced id: rejected (C3).
    res = ctl.register_broker(1, "someone-else")
    assert res.records == [] and res.response.error.code == Errors.DUPLICATE_BROKER_REGISTRATION
    # Same-incarnation retry: accepted (with a new epoch, and fenced again).
    retry = ctl.apply(ctl.register_broker(1, "incarnation-1"))
    assert retry.error.ok and retry.broker_epoch > e1
    # After fencing: a new incarnation is accepted with a larger epoch.
    ctl.apply(ctl.fence_broker(2))
    e2 = epoch(ctl, 2)
    res = ctl.apply(ctl.register_broker(2, "new-incarnation"))
    assert res.error.ok and res.broker_epoch > e2 and ctl.brokers[2].incarnation_id == "new-incarnation"
    assert ctl.invariant_violations() == []


def test_unfence_waits_for_the_registration_record_c5():
    ctl = Controller()
    reg = ctl.apply(ctl.register_broker(1, "a"))
    ctl.apply(ctl.register_broker(2, "b"))
    behind = ctl.heartbeat(1, reg.broker_epoch, want_fence=False, want_shutdown=False,
                           metadata_offset=reg.broker_epoch - 1, now_ms=0)
    assert behind.records == [] and behind.response.is_fenced
    wants_fence = ctl.heartbeat(1, reg.broker_epoch, want_fence=True, want_shutdown=False,
                                metadata_offset=10, now_ms=0)
    assert wants_fence.records == [] and wants_fence.response.is_fenced
    ok = ctl.heartbeat(1, reg.broker_epoch, want_fence=False, want_shutdown=False,
                       metadata_offset=reg.broker_epoch, now_ms=0)
    assert ok.records == [UnfenceBrokerRecord(1, reg.broker_epoch)] and not ok.response.is_fenced
    stale = ctl.heartbeat(1, reg.broker_epoch + 7, want_fence=False, want_shutdown=False, metadata_offset=9,
                          now_ms=0)
    assert stale.response.error.code == Errors.STALE_BROKER_EPOCH
    assert ctl.heartbeat(9, 0, want_fence=False, want_shutdown=False, metadata_offset=0, now_ms=0
                         ).response.error.code == Errors.BROKER_ID_NOT_REGISTERED


def test_scenario13_fence_and_unfence_keep_epoch_and_do_not_readd():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    e2 = epoch(ctl, 2)
    ctl.apply(ctl.fence_broker(2))  # isolate 2: session timeout
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)  # out of the ISR, PE+1, LE kept (C2)
    hb = ctl.apply(ctl.heartbeat(2, e2, want_fence=False, want_shutdown=False, metadata_offset=ctl.next_offset,
                                 now_ms=5))
    assert not hb.is_fenced and epoch(ctl, 2) == e2  # C7: same epoch
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)  # C5: no ISR change; back only via L15


def test_fence_leader_elects_from_isr_c6_c11():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    res = ctl.fence_broker(1)
    assert isinstance(res.records[-1], FenceBrokerRecord)
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [2, 3], 2, 2, 2)


def test_lrs_v35_controller_side_sole_isr_member_stays_and_is_reelected():
    """docs/protocol-rules.md 5.1 steps 2-4 on the controller (v3.5): ISR {1} frozen, then 1 re-elected."""
    ctl = with_partition(cluster(min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ctl.fence_broker(2))
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)
    ctl.apply(ctl.fence_broker(3))
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3)
    ctl.apply(ctl.fence_broker(1))  # crash: the ISR is never empty in v3.5 (C6)
    assert current(ctl) == state([1, 2, 3], [1], NO_LEADER, 2, 4)
    reg = ctl.apply(ctl.register_broker(1, "restarted"))
    assert current(ctl) == state([1, 2, 3], [1], NO_LEADER, 2, 4)  # registration alone changes nothing
    ctl.apply(ctl.heartbeat(1, reg.broker_epoch, want_fence=False, want_shutdown=False,
                            metadata_offset=ctl.next_offset, now_ms=0))
    assert current(ctl) == state([1, 2, 3], [1], 1, 3, 5)  # the sole ISR member is elected (LRS)
    assert ctl.invariant_violations() == []


def test_session_timeout_fences_one_broker_per_result():
    ctl = with_partition(cluster(session_timeout_ms=100), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert ctl.check_session_timeouts(0).records == []  # first sight starts every session
    for b in (1, 3):
        ctl.heartbeat(b, epoch(ctl, b), want_fence=False, want_shutdown=False, metadata_offset=99, now_ms=90)
    res = ctl.check_session_timeouts(150)
    assert res.response == 2
    ctl.apply(res)
    assert ctl.check_session_timeouts(150).records == []
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)
    fenced = []
    for _ in range(5):
        res = ctl.check_session_timeouts(1000)
        if not res.records:
            break
        fenced.append(res.response)
        ctl.apply(res)
    assert fenced == [1, 3]
    assert current(ctl) == state([1, 2, 3], [3], NO_LEADER, 3, 4)  # 1 fenced: leader 3 (LE2); 3 fenced: NONE (LE3)


def test_scenario28_controlled_shutdown_moves_leadership_before_shutdown_now():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    e1 = epoch(ctl, 1)
    res = ctl.heartbeat(1, e1, want_fence=False, want_shutdown=True, metadata_offset=ctl.next_offset, now_ms=0)
    assert res.response.in_controlled_shutdown and not res.response.should_shutdown and not res.response.is_fenced
    ctl.apply(res)
    reg = ctl.brokers[1]
    assert reg.in_controlled_shutdown and not reg.fenced  # C8: CONTROLLED_SHUTDOWN, still unfenced
    assert current(ctl) == state([1, 2, 3], [2, 3], 2, 2, 2)  # leadership moved away first
    cs_offset = reg.controlled_shutdown_offset
    assert cs_offset == ctl.last_offset  # the offset of the registration change, last of its batch
    # C9: 2 and 3 have not reached the controlled-shutdown offset yet.
    ctl.heartbeat(2, epoch(ctl, 2), want_fence=False, want_shutdown=False, metadata_offset=cs_offset - 1, now_ms=1)
    ctl.heartbeat(3, epoch(ctl, 3), want_fence=False, want_shutdown=False, metadata_offset=cs_offset, now_ms=1)
    wait = ctl.heartbeat(1, e1, want_fence=False, want_shutdown=True, metadata_offset=cs_offset, now_ms=2)
    assert wait.records == [] and not wait.response.should_shutdown
    ctl.heartbeat(2, epoch(ctl, 2), want_fence=False, want_shutdown=False, metadata_offset=cs_offset, now_ms=3)
    done = ctl.heartbeat(1, e1, want_fence=False, want_shutdown=True, metadata_offset=cs_offset, now_ms=4)
    assert done.response.should_shutdown and done.response.is_fenced
    ctl.apply(done)
    assert ctl.brokers[1].fenced and current(ctl) == state([1, 2, 3], [2, 3], 2, 2, 2)


def test_controlled_shutdown_of_a_non_leader_is_shutdown_now():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    res = ctl.heartbeat(3, epoch(ctl, 3), want_fence=False, want_shutdown=True, metadata_offset=99, now_ms=0)
    assert res.response.should_shutdown and res.response.is_fenced
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 1, 2)


def test_config_min_isr_topic_override_and_bad_values():
    ctl = Controller(ControllerConfig(min_isr=2))
    ctl.apply(ctl.set_config("topic", "t", "min.insync.replicas", "3"))
    assert ctl.min_isr("t") == 3 and ctl.min_isr("u") == 2
    assert ctl.set_config("broker", "", "min.insync.replicas", "0").response.code == Errors.INVALID_CONFIG
    assert ctl.set_config("broker", "", "unclean.leader.election.enable", "maybe").response.code == \
        Errors.INVALID_CONFIG


def test_create_topic_places_replicas_and_validates():
    ctl = cluster((1, 2, 3, 4))
    res = ctl.apply(ctl.create_topic("a", partitions=2, replication_factor=3))
    assert res.error.ok
    assert current(ctl, "a") == state([1, 2, 3], [1, 2, 3], 1, 0, 0)
    assert ctl.partition("a", 1).replicas == [2, 3, 4]
    assert ctl.create_topic("a", partitions=1).response.error.code == Errors.TOPIC_ALREADY_EXISTS
    assert ctl.create_topic("b", replication_factor=5).response.error.code == Errors.INVALID_REPLICATION_FACTOR
    assert ctl.create_topic("c", assignment={0: [1, 1]}).response.error.code == Errors.INVALID_REPLICA_ASSIGNMENT
    assert ctl.create_topic("d", assignment={0: [1, 9]}).response.error.code == Errors.INVALID_REPLICA_ASSIGNMENT
    for bad in ("", "..", "a/b", "x" * 250):
        assert ctl.create_topic(bad).response.error.code == Errors.INVALID_TOPIC_EXCEPTION


def test_a_late_copy_of_a_registration_then_the_broker_registers_again():
    # A broker's registration times out while the network is cut; its retry is accepted (E1) and it runs.
    # When the cut heals, TCP delivers the first copy, which the controller takes as a same-incarnation
    # retry: a new epoch E2 the broker never hears of. Its heartbeats with E1 get STALE_BROKER_EPOCH, and it
    # registers again (same incarnation), learns E3, catches up and is unfenced: it does not stay fenced.
    import random

    from reference_impl.protocol.broker import RUNNING, STARTING, BrokerLifecycle
    from reference_impl.protocol.broker_session import registered

    ctl = cluster(brokers=(1, 2))
    b = BrokerLifecycle(3)
    req = b.start(random.Random(3), None)
    first = ctl.register_broker(3, req.incarnation_id)      # the copy that will arrive late
    accepted = ctl.apply(ctl.register_broker(3, req.incarnation_id))
    assert registered(b, accepted.error, accepted.broker_epoch)
    hb = ctl.apply(ctl.heartbeat(3, b.broker_epoch, want_fence=False, want_shutdown=False,
                                 metadata_offset=ctl.next_offset, now_ms=0))
    b.handle_heartbeat_response(hb.error, hb.is_fenced, False)
    assert b.state == RUNNING
    late = ctl.apply(ctl.register_broker(3, req.incarnation_id))  # processed now, like ``first``
    assert late.error.ok and late.broker_epoch > b.broker_epoch and first.response.error.ok
    hb = ctl.apply(ctl.heartbeat(3, b.broker_epoch, want_fence=False, want_shutdown=False,
                                 metadata_offset=ctl.next_offset, now_ms=0))
    assert hb.error.code == Errors.STALE_BROKER_EPOCH and ctl.brokers[3].fenced
    b.handle_heartbeat_response(hb.error, hb.is_fenced, False)
    assert b.state == STARTING
    again = ctl.apply(ctl.register_broker(3, b.registration_request().incarnation_id,
                                          previous_broker_epoch=b.registration_request().previous_broker_epoch))
    assert registered(b, again.error, again.broker_epoch) and b.broker_epoch == ctl.brokers[3].epoch
    hb = ctl.apply(ctl.heartbeat(3, b.broker_epoch, want_fence=False, want_shutdown=False,
                                 metadata_offset=ctl.next_offset, now_ms=0))
    b.handle_heartbeat_response(hb.error, hb.is_fenced, False)
    assert b.state == RUNNING and not ctl.brokers[3].fenced
    assert ctl.invariant_violations() == []
