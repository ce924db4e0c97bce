"""The historical-bug switches of the core (``protocol.historical_bugs``): each runs the design Kafka replaced,
and the same steps without the switch run today's rules."""

from __future__ import annotations

import pytest

from reference_impl.protocol.controller import ControllerConfig
from reference_impl.protocol.divergence import NO_EPOCH, EpochEndOffset, diverging_epoch, truncation_offset
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.historical_bugs import (
    ELR_SWITCH_FORGOTTEN,
    FETCH_WITHOUT_LEADER_EPOCH,
    HISTORICAL_BUGS,
    KIP279_FAST_FAILOVER_DIVERGENCE,
    TRUNCATE_TO_HWM,
)
from reference_impl.protocol.log import InMemoryLog, LogBatch
from reference_impl.protocol.replica import PartitionReplica
from reference_impl.protocol.replica_messages import ReplicaConfig

from .controller_helpers import NO_LEADER, cluster, current, state, with_partition
from .replica_driver import Driver


def test_every_bug_names_its_kip_and_unknown_names_are_refused():
    assert set(HISTORICAL_BUGS) == {TRUNCATE_TO_HWM, FETCH_WITHOUT_LEADER_EPOCH, KIP279_FAST_FAILOVER_DIVERGENCE,
                                    ELR_SWITCH_FORGOTTEN}
    assert all(b.reference.startswith("KIP-") for b in HISTORICAL_BUGS.values())
    with pytest.raises(ValueError, match="unknown historical bug"):
        ReplicaConfig(historical_bug="no-such-bug")
    with pytest.raises(ValueError, match="unknown historical bug"):
        ControllerConfig(historical_bug="no-such-bug")


# ---------------------------------------------------------------- truncate-to-hwm (KIP-101)
def _follower_behind_leader_hwm(bug: str | None) -> Driver:
    """Everyone holds record A; the leader's HWM is 1 but follower 2 learned only HWM 0 (S1's state)."""
    d = Driver(historical_bug=bug)
    d.produce(b"A")
    d.round()
    d.round()
    assert d.leader.high_watermark == 1 and d.replicas[2].high_watermark == 0
    return d


def test_truncate_to_hwm_cuts_a_new_follower_at_its_own_hwm():
    d = _follower_behind_leader_hwm(TRUNCATE_TO_HWM)
    d.change(leader=3)  # 2 becomes a follower of 3 in a new epoch (T5)
    assert d.values(2) == []  # the committed record A is gone from an ISR member
    events = [e for e in d.replicas[2].drain_events() if e["kind"] == "truncate"]
    assert events and events[-1]["to_offset"] == 0 and events[-1]["reason"] == "high watermark"


def test_without_the_switch_a_new_follower_keeps_its_log():
    d = _follower_behind_leader_hwm(None)
    d.change(leader=3)
    assert d.values(2) == [b"A"]


def test_truncate_to_hwm_fetches_carry_no_epoch():
    d = _follower_behind_leader_hwm(TRUNCATE_TO_HWM)
    assert d.replicas[2].build_fetch(d.now).last_fetched_epoch == NO_EPOCH
    assert _follower_behind_leader_hwm(None).replicas[2].build_fetch(d.now).last_fetched_epoch == 1


# ---------------------------------------------------------------- fetch-without-leader-epoch (KIP-320)
@pytest.mark.parametrize("bug", [None, FETCH_WITHOUT_LEADER_EPOCH])
def test_a_fetch_of_another_epoch_is_served_only_without_the_epoch_check(bug):
    d = Driver(historical_bug=bug)
    d.produce(b"A")
    stale = d.leader.handle_follower_fetch(2, 102, 0, 0, NO_EPOCH, 1 << 20, d.now)  # LE 0 < 1
    ahead = d.leader.handle_follower_fetch(3, 103, 2, 0, NO_EPOCH, 1 << 20, d.now)  # LE 2 > 1
    read = d.leader.read_committed(0, 1 << 20, current_leader_epoch=0)
    if bug is None:
        assert stale.error.code == Errors.FENCED_LEADER_EPOCH and ahead.error.code == Errors.UNKNOWN_LEADER_EPOCH
        assert read.error.code == Errors.FENCED_LEADER_EPOCH
    else:
        assert stale.error.ok and ahead.error.ok and [b.payload for b in stale.batches] == [b"A"]
        assert read.error.ok


@pytest.mark.parametrize("bug", [None, FETCH_WITHOUT_LEADER_EPOCH])
def test_the_follower_checks_its_log_once_per_transition_without_kip320(bug):
    d = Driver(historical_bug=bug)
    d.produce(b"A")
    assert d.replicas[2].build_fetch(d.now).last_fetched_epoch == NO_EPOCH  # empty log either way
    d.replicas[2].abandon_fetch(d.replicas[2].fetch_in_flight, d.now)
    d.now += 10_000
    d.round()
    d.produce(b"B")
    request = d.replicas[2].build_fetch(d.now)
    assert request.last_fetched_epoch == (1 if bug is None else NO_EPOCH)
    d.replicas[2].abandon_fetch(request, d.now)
    d.now += 10_000
    d.change(leader=3)  # a transition the follower learns of: the first fetch checks again
    assert d.replicas[2].build_fetch(d.now).last_fetched_epoch == 1


# ---------------------------------------------------------------- kip279-fast-failover-divergence (KIP-279)
# Leader: epoch 1 at offsets 0-4, epoch 3 from 5 (it never had epoch 2). Follower: epoch 1 at 0-2, then its own
# epoch-2 record at 3 (the leader of epoch 2 wrote it and failed at once).
LEADER_EPOCHS, LEADER_LEO = [(1, 0), (3, 5)], 6
FOLLOWER_EPOCHS, FOLLOWER_LEO = [(1, 0), (2, 3)], 4


def test_pre_kip279_answer_hides_the_divergence():
    fixed = diverging_epoch(LEADER_EPOCHS, LEADER_LEO, 3, FOLLOWER_LEO, 2)
    assert fixed == EpochEndOffset(1, 5)
    assert truncation_offset(FOLLOWER_EPOCHS, FOLLOWER_LEO, fixed) == 3  # the epoch-2 record goes
    old = diverging_epoch(LEADER_EPOCHS, LEADER_LEO, 3, FOLLOWER_LEO, 2, answer_requested_epoch=True)
    assert old is None  # "epoch 2 ends at 5": beyond the follower's log, so it keeps offset 3


def test_pre_kip279_answer_truncates_to_the_wrong_offset_when_it_does_fire():
    old = diverging_epoch(LEADER_EPOCHS, LEADER_LEO, 3, 6, 2, answer_requested_epoch=True)
    assert old == EpochEndOffset(2, 5)
    assert truncation_offset([(1, 0), (2, 3)], 6, old) == 5  # keeps 3-4 of epoch 2; the fix cuts at 3
    assert truncation_offset([(1, 0), (2, 3)], 6, diverging_epoch(LEADER_EPOCHS, LEADER_LEO, 3, 6, 2)) == 3


def _leader_without_epoch_2(bug: str | None) -> PartitionReplica:
    log = InMemoryLog()
    for offset in range(LEADER_LEO):
        log.append(LogBatch(base_offset=offset, record_count=1, epoch=1 if offset < 5 else 3))
    leader = PartitionReplica(1, "t", 0, log, ReplicaConfig(historical_bug=bug))
    leader.apply_metadata(state([1, 2, 3], [1, 2, 3], 1, 3, 1), 0)
    return leader


@pytest.mark.parametrize("bug", [None, KIP279_FAST_FAILOVER_DIVERGENCE])
def test_the_leader_answers_with_the_floor_epoch_only_after_kip279(bug):
    leader = _leader_without_epoch_2(bug)
    answer = leader.handle_follower_fetch(2, -1, 3, FOLLOWER_LEO, 2, 1 << 20, 0)
    if bug is None:
        assert answer.diverging_epoch == EpochEndOffset(1, 5) and not answer.batches
    else:
        assert answer.diverging_epoch is None and [b.epoch for b in answer.batches] == [1, 3]


# ---------------------------------------------------------------- elr-switch-forgotten (KIP-966)
@pytest.mark.parametrize("bug", [None, ELR_SWITCH_FORGOTTEN])
def test_an_unclean_registration_keeps_the_elr_only_with_the_switch_honoured(bug):
    ctl = cluster((1, 2, 3), min_isr=2, elr_enabled=True, historical_bug=bug)
    ctl.apply(ctl.fence_broker(3))
    ctl = with_partition(ctl, state([1, 2, 3], [1], 1, 1, 3, elr=[3]))
    ctl.apply(ctl.fence_broker(1))  # ISR {} and ELR {3, 1}: 3 and 1 hold every committed record (K2)
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 4, elr=[3, 1])
    ctl.apply(ctl.register_broker(1, "after-crash", previous_broker_epoch=-1))  # no marker: unclean (K4)
    if bug is None:
        assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 5, elr=[3], lkelr=[1])
    else:
        # built as if ELR were off: the ELR and the LKELR are wiped, so 3 can never be elected (I8)
        assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 5)


def test_elr_switch_forgotten_leaves_the_other_paths_alone():
    for bug in (None, ELR_SWITCH_FORGOTTEN):
        ctl = with_partition(cluster((1, 2, 3), min_isr=2, elr_enabled=True, historical_bug=bug),
                             state([1, 2, 3], [1, 3], 1, 1, 2))
        ctl.apply(ctl.fence_broker(3))  # the fence path honours the switch either way (K2)
        assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3, elr=[3])


def test_the_harness_names_the_same_kips_as_the_core():
    from harness.spec import HISTORICAL_BUG_REFERENCES, INJECTABLE_BUGS, injected_bug_label

    assert HISTORICAL_BUG_REFERENCES == {name: bug.reference for name, bug in HISTORICAL_BUGS.items()}
    assert set(HISTORICAL_BUGS) <= set(INJECTABLE_BUGS)
    assert injected_bug_label(TRUNCATE_TO_HWM) == "truncate-to-hwm (KIP-101 (KAFKA-1211))"
    assert injected_bug_label("ack-before-replication") == "ack-before-replication"
    assert injected_bug_label(None) is None
