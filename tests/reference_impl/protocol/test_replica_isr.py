"""ISR shrink (L14) and expand (L15 a-d) conditions, each shown to fail alone against a passing control;
plus L12 (one AP in flight), L13 (eager Maximal ISR) and L16 (reply handling)."""

from __future__ import annotations

from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.replica_messages import AlterPartitionResponse
from tests.reference_impl.protocol.replica_driver import Driver

LAG = 1000


def shrink_target(d: Driver, now: int):
    req = d.leader.maybe_change_isr(now)
    return None if req is None else req.isr_ids


def test_l14_no_fetch_within_the_window():
    d = Driver(lag_ms=LAG)
    d.now = 500
    d.round()  # both followers at the LEO (0) at t=500
    assert shrink_target(d, 500 + LAG) is None  # control: exactly at the window edge
    d.fetch(2)
    d.now = 500 + LAG + 1
    d.fetch(2)  # 2 keeps fetching, 3 stays silent
    assert shrink_target(d, d.now) == [1, 2]


def test_l14_fetching_but_never_caught_up():
    d = Driver(lag_ms=LAG)
    for i in range(10):
        d.produce(b"%d" % i, acks=1)
    leader = d.leader
    # 3 fetches often but always from offset 0 while the leader is at 10: never caught up
    for t in range(0, 3 * LAG, 200):
        leader.handle_follower_fetch(3, 103, 1, 0, -1, 1, t)
        leader.handle_follower_fetch(2, 102, 1, 10, 1, 1, t)  # 2 is at the LEO
    assert shrink_target(d, 3 * LAG - 200) == [1, 2]


def test_l14_control_fetching_and_caught_up_stays():
    d = Driver(lag_ms=LAG)
    for i in range(10):
        d.produce(b"%d" % i, acks=1)
    leader = d.leader
    for t in range(0, 3 * LAG, 200):
        leader.handle_follower_fetch(3, 103, 1, 10, 1, 1, t)
        leader.handle_follower_fetch(2, 102, 1, 10, 1, 1, t)
    assert shrink_target(d, 3 * LAG - 200) is None


def expand_setup() -> Driver:
    """ISR {1,2}; two committed records (HWM 2, LESO 0)."""
    d = Driver(isr=[1, 2], lag_ms=LAG)
    d.produce(b"a", acks=1)
    d.produce(b"b", acks=1)
    d.fetch(2)
    d.fetch(2)
    assert d.leader.high_watermark == 2
    return d


def test_l15_control_all_conditions_hold():
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    req = d.leader.maybe_change_isr(d.now)
    assert req.isr_ids == [1, 2, 3] and req.new_isr[-1].broker_epoch == 103


def test_l15a_no_fetch_in_the_current_epoch():
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    d.change(bump_le=True)  # same leader, LE2: 3's LE1 fetch no longer counts
    assert d.leader.maybe_change_isr(d.now) is None
    d.leader.handle_follower_fetch(3, 103, 2, 2, 1, 1000, d.now)
    assert d.leader.maybe_change_isr(d.now).isr_ids == [1, 2, 3]


def test_l15b_below_the_hwm():
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 1, 1, 1000, d.now)  # leo 1 < HWM 2, >= LESO 0, recent
    assert d.leader.maybe_change_isr(d.now) is None


def test_l15c_below_the_leso():
    d = Driver(isr=[1, 2], lag_ms=LAG)
    d.produce(b"a", acks=1)
    d.produce(b"b", acks=1)
    d.fetch(2)  # 2 got both records but nobody learned HWM 2... yet: leader HWM is 0
    assert d.leader.high_watermark == 0
    d.change(leader=2, isr=[2, 1])  # 2 leads LE2 with LESO 2 and a stale HWM 0; 1 has not fetched in LE2
    new = d.replicas[2]
    assert (new.leso, new.high_watermark) == (2, 0)
    new.handle_follower_fetch(3, 103, 2, 1, 1, 1000, d.now)  # 3 at 1: >= HWM 0 but < LESO 2
    assert new.maybe_change_isr(d.now) is None
    new.handle_follower_fetch(3, 103, 2, 2, 1, 1000, d.now)
    assert new.maybe_change_isr(d.now).isr_ids == [2, 1, 3]


def test_l15d_latency_rule():
    def proposal_at(now: int):
        d = expand_setup()
        d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, 0)
        d.leader.handle_follower_fetch(2, 102, 1, 2, 1, 1000, now)  # 2 stays in sync
        req = d.leader.maybe_change_isr(now)
        return None if req is None else req.isr_ids

    assert proposal_at(LAG + 1) is None  # the fetch that qualified 3 is too old
    assert proposal_at(LAG) == [1, 2, 3]


def test_l12_one_ap_in_flight_and_only_real_changes():
    d = expand_setup()
    assert d.leader.maybe_change_isr(d.now) is None  # nothing to change
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    req = d.leader.maybe_change_isr(d.now)
    assert req is not None and d.leader.maybe_change_isr(d.now) is None
    assert d.leader.pending_alter_partition == req


def test_l13_maximal_isr_grows_at_once_and_l16_success():
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    req = d.leader.maybe_change_isr(d.now)
    assert d.leader.isr == [1, 2] and d.leader.maximal_isr == [1, 2, 3]
    d.produce(b"c", acks=1)
    d.fetch(2)
    assert d.leader.high_watermark == 2  # waits for 3 (L3 over the Maximal ISR)
    d.leader.handle_alter_partition_response(req, d.judge_ap(req), d.now)
    assert (d.leader.isr, d.leader.maximal_isr, d.leader.partition_epoch) == ([1, 2, 3], [1, 2, 3], 2)


def test_l16_stale_or_foreign_reply_is_ignored_and_error_rolls_back():
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    req = d.leader.maybe_change_isr(d.now)
    other = type(req)(req.topic_id, req.partition_id, req.broker_id, req.broker_epoch, req.leader_epoch,
                      req.partition_epoch - 1, req.new_isr)
    d.leader.handle_alter_partition_response(other, AlterPartitionResponse(error(Errors.INVALID_UPDATE_VERSION)),
                                             d.now)
    assert d.leader.pending_alter_partition == req  # not our request: ignored
    d.leader.handle_alter_partition_response(req, AlterPartitionResponse(error(Errors.INELIGIBLE_REPLICA)), d.now)
    assert d.leader.pending_alter_partition is None and d.leader.maximal_isr == [1, 2]


def test_l16_lost_reply_to_a_committed_expansion_keeps_the_maximal_isr():
    """The controller commits ISR {1,2,3} but the reply is lost: the leader must keep counting 3 for the
    HWM (a rollback would commit over {1,2} while 3, a committed ISR member, lacks the records) and send
    the same request again; the resend is refused as stale and the metadata settles it (L16, L17)."""
    d = expand_setup()
    d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
    req = d.leader.maybe_change_isr(d.now)
    d.judge_ap(req)  # committed; the reply never arrives
    d.leader.handle_alter_partition_response(req, AlterPartitionResponse(error(Errors.NETWORK_EXCEPTION)), d.now)
    assert d.leader.maximal_isr == [1, 2, 3] and d.leader.pending_alter_partition == req
    d.produce(b"c", acks=1)
    d.fetch(2)
    assert d.leader.high_watermark == 2  # 3 is in the committed ISR: the HWM waits for it
    resend = d.leader.maybe_change_isr(d.now + d.leader.config.alter_partition_retry_ms)
    assert resend == req
    d.leader.handle_alter_partition_response(req, d.judge_ap(req), d.now)  # stale PE now
    assert d.leader.pending_alter_partition == req and d.leader.maximal_isr == [1, 2, 3]
    d.publish()
    assert d.leader.pending_alter_partition is None and d.leader.isr == [1, 2, 3]


def test_l16_not_applied_errors_roll_back_others_keep_pending():
    for code, rolled_back in ((Errors.OPERATION_NOT_ATTEMPTED, True), (Errors.STALE_BROKER_EPOCH, True),
                              (Errors.FENCED_LEADER_EPOCH, False), (Errors.NEW_LEADER_ELECTED, False),
                              (Errors.REQUEST_TIMED_OUT, False), (Errors.NOT_CONTROLLER, False)):
        d = expand_setup()
        d.leader.handle_follower_fetch(3, 103, 1, 2, 1, 1000, d.now)
        req = d.leader.maybe_change_isr(d.now)
        d.leader.handle_alter_partition_response(req, AlterPartitionResponse(error(code)), d.now)
        assert (d.leader.pending_alter_partition is None) is rolled_back, code
        assert d.leader.maximal_isr == ([1, 2] if rolled_back else [1, 2, 3]), code
