"""Reassignment (C16-C21) against seed 000's worked examples and figures, docs/protocol-rules.md section 6
scenarios 15-18 and 19 (= 5.3), and C21's cancel cases. Every step asserts the whole partition state.

Replica order during a reassignment is Apache Kafka's: the target in the requested order, then the replicas
being removed in ascending order (``reassignment`` module docstring). Where seed 000 prints a merged list in
another order (example 1's [1, 2, 3, 4], figure 1's [1, 2, 3, 4, 5]) the seed's list is read as a set: the
seeds define which replicas are there, Kafka defines the order (and so the preferred leader)."""

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.partition_change import CompletionRule

from .controller_helpers import TP, ap, cluster, current, state, with_partition


def reassign(ctl, target, **kw):
    res = ctl.alter_partition_reassignments({TP: target}, **kw)
    ctl.apply(res)
    return res.response[TP]


def test_seed000_example1_move_one_replica_scenario15():
    """Seed 000 4.4.1 example 1. The seed's merged replicas [1, 2, 3, 4] are read as a set: Kafka's order is
    [1, 2, 4, 3] (target, then removing ascending)."""
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2], 1, 1, 2))
    assert reassign(ctl, [1, 2, 4]).ok
    # Step 2 (grow): replicas = target ∪ current, ISR/leader/LE unchanged, PE+1.
    assert current(ctl) == state([1, 2, 4, 3], [1, 2], 1, 1, 3, adding=[4], removing=[3])
    assert ctl.list_partition_reassignments()[TP].adding == (4,)
    res = ap(ctl, [1, 2, 4])
    # Step 5: catch-up (intermediate, uncommitted) then completion in the same change.
    labels = [label for label, _ in res.trace]
    assert labels[0].startswith("phase B") and labels[-1] == "final"
    assert res.trace[0][1] == state([1, 2, 4, 3], [1, 2, 4], 1, 1, 3, adding=[4], removing=[3])
    assert res.response.error.ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 4], [1, 2, 4], 1, 2, 4)
    assert ctl.list_partition_reassignments() == {}


def test_seed000_example2_reduce_rf_waits_for_min_isr():
    """Seed 000 4.4.1 example 2 (also scenario 17 under v3.5 rules).

    Two places where this model differs from the seed's text, both deliberate: the catch-up intermediate
    ISR is [1, 2, 4, 5] (the proposal; the seed prints [1, 2, 5], dropping 4 without a reason), and the
    new leader is 1, not 2: C11 leaves the choice open ("arbitrary", scenario 17 says "leader ∈ {1,2}")
    and Apache Kafka takes the first target replica that is a clean candidate."""
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2), state([1, 2, 3, 4, 5], [4, 5], 5, 1, 2))
    assert reassign(ctl, [1, 2, 3]).ok
    assert current(ctl) == state([1, 2, 3, 4, 5], [4, 5], 5, 1, 3, removing=[4, 5])  # cannot complete yet
    ctl.apply(ap(ctl, [1, 4, 5]))
    assert current(ctl) == state([1, 2, 3, 4, 5], [1, 4, 5], 5, 1, 4, removing=[4, 5])  # final ISR [1] < 2
    res = ap(ctl, [1, 2, 4, 5])
    assert res.trace[0][1] == state([1, 2, 3, 4, 5], [1, 2, 4, 5], 5, 1, 4, removing=[4, 5])
    assert res.response.error.code == Errors.NEW_LEADER_ELECTED  # 5 was removed while leading
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 2, 5)


def test_seed000_figure1_add_and_remove_spanning_several_alter_partitions():
    """Seed 000 figure 1; the merged set is in Kafka's order [1, 4, 5, 2, 3] (the seed's set {1, ..., 5})."""
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [1, 4, 5]).ok
    assert current(ctl) == state([1, 4, 5, 2, 3], [1, 2, 3], 1, 1, 2, adding=[4, 5], removing=[2, 3])
    ctl.apply(ap(ctl, [1, 2, 3, 4]))  # 5 not yet in sync: catch-up only (C19)
    assert current(ctl) == state([1, 4, 5, 2, 3], [1, 2, 3, 4], 1, 1, 3, adding=[4, 5], removing=[2, 3])
    ctl.apply(ap(ctl, [1, 2, 3, 4, 5]))
    assert current(ctl) == state([1, 4, 5], [1, 4, 5], 1, 2, 4)


def test_seed000_figure2_remove_only_single_change_scenario16():
    ctl = with_partition(cluster(min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    res = ctl.alter_partition_reassignments({TP: [1, 2]})
    assert len(res.records) == 1  # C18: C17 already holds, one change
    ctl.apply(res)
    assert current(ctl) == state([1, 2], [1, 2], 1, 2, 2)


def test_seed000_figure3_add_only_grow_then_complete():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [1, 2, 3, 4]).ok
    assert current(ctl) == state([1, 2, 3, 4], [1, 2, 3], 1, 1, 2, adding=[4])
    ctl.apply(ap(ctl, [1, 2, 3, 4]))
    # Completion bumps the LE even though the leader stays (seed 000 4.2 step 3).
    assert current(ctl) == state([1, 2, 3, 4], [1, 2, 3, 4], 1, 2, 3)


def test_scenario17_rf5_to_3_kip966():
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2, elr_enabled=True),
                         state([1, 2, 3, 4, 5], [4, 5], 5, 1, 2))
    assert reassign(ctl, [1, 2, 3]).ok
    assert current(ctl) == state([1, 2, 3, 4, 5], [4, 5], 5, 1, 3, removing=[4, 5])
    ctl.apply(ap(ctl, [1, 4, 5]))
    assert current(ctl) == state([1, 2, 3, 4, 5], [1, 4, 5], 5, 1, 4, removing=[4, 5])
    ctl.apply(ap(ctl, [1, 2, 4, 5]))
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 2, 5)
    assert ctl.invariant_violations() == []


def test_scenario18_leader_removed_gets_new_leader_elected():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [2, 3, 4]).ok
    assert current(ctl) == state([2, 3, 4, 1], [1, 2, 3], 1, 1, 2, adding=[4], removing=[1])
    res = ap(ctl, [1, 2, 3, 4])
    assert res.response.error.code == Errors.NEW_LEADER_ELECTED and res.response.leader == 2
    ctl.apply(res)
    assert current(ctl) == state([2, 3, 4], [2, 3, 4], 2, 2, 3)


@pytest.mark.parametrize("rule, after_first_ap", [
    # docs/protocol-rules.md 5.3 / scenario 19: v3.5 prose (and Kafka 3.0-3.7) complete with ISR {3}; the
    # seed's rule (the default) waits until 2 is back, so the final ISR has MinISR members.
    (CompletionRule.NON_EMPTY, state([2, 3], [3], 3, 2, 3)),
    (CompletionRule.MIN_ISR, state([2, 3, 1], [1, 3], 1, 1, 3, adding=[3], removing=[1])),
])
def test_degraded_reassignment_completion_rule_5_8_i(rule, after_first_ap):
    ctl = with_partition(cluster(min_isr=2, completion_rule=rule), state([1, 2], [1], 1, 1, 1))
    assert reassign(ctl, [2, 3]).ok
    assert current(ctl) == state([2, 3, 1], [1], 1, 1, 2, adding=[3], removing=[1])
    ctl.apply(ap(ctl, [1, 3]))
    assert current(ctl) == after_first_ap
    if rule is CompletionRule.MIN_ISR:
        ctl.apply(ap(ctl, [1, 2, 3]))
        assert current(ctl) == state([2, 3], [2, 3], 2, 2, 4)


def test_validation_c16():
    ctl = with_partition(cluster((1, 2, 3), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    for target, code in [([], Errors.INVALID_REPLICA_ASSIGNMENT), ([1, 1, 2], Errors.INVALID_REPLICA_ASSIGNMENT),
                         ([1, 2, 9], Errors.INVALID_REPLICA_ASSIGNMENT), ([1], Errors.INVALID_REPLICATION_FACTOR)]:
        res = ctl.alter_partition_reassignments({TP: target})
        assert res.response[TP].code == code and res.records == []
    assert ctl.alter_partition_reassignments({("nope", 0): [1, 2]}).response[("nope", 0)].code == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    res = ctl.alter_partition_reassignments({TP: [1, 2, 3]})  # no change: success without a record
    assert res.response[TP].ok and res.records == []


def test_retarget_in_progress_replaces_the_reassignment():
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [1, 2, 4]).ok
    assert reassign(ctl, [1, 2, 5]).ok  # 4 (still adding) is now removed again, like 3
    assert current(ctl) == state([1, 2, 5, 3, 4], [1, 2, 3], 1, 1, 3, adding=[5], removing=[3, 4])


# -- C21 cancel ---------------------------------------------------------------------------------------------
def test_cancel_reverts_to_original_replicas():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 4, 3], [1, 2, 4], 1, 1, 3,
                                                                adding=[4], removing=[3]))
    assert reassign(ctl, None).ok
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 2, 4)  # LE+1: replica 4 left (Kafka)


def test_cancel_remove_only_keeps_leader_epoch():
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2), state([1, 2, 3, 4, 5], [4, 5], 5, 1, 3,
                                                                   removing=[4, 5]))
    assert reassign(ctl, None).ok
    assert current(ctl) == state([1, 2, 3, 4, 5], [4, 5], 5, 1, 4)


def test_cancel_without_reassignment():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    res = ctl.alter_partition_reassignments({TP: None})
    assert res.response[TP].code == Errors.NO_REASSIGNMENT_IN_PROGRESS and res.records == []


def _no_originals_in_isr(**config):
    ctl = cluster((1, 2, 3, 4, 5, 6), min_isr=2, **config)
    ctl.apply(ctl.fence_broker(1))
    return with_partition(ctl, state([4, 5, 6, 1, 2, 3], [4, 5, 6], 4, 3, 7, adding=[4, 5, 6],
                                     removing=[1, 2, 3]))


def test_cancel_v35_no_original_in_isr_refused_without_unclean():
    ctl = _no_originals_in_isr()
    before = current(ctl)
    res = ctl.alter_partition_reassignments({TP: None})
    assert res.response[TP].code == Errors.INVALID_REPLICA_ASSIGNMENT and res.records == []
    assert current(ctl) == before


def test_cancel_v35_no_original_in_isr_forced_with_unclean_election():
    ctl = _no_originals_in_isr(unclean_election=True)
    assert reassign(ctl, None).ok
    # C21: ISR would be empty -> unclean election among the originals (1 is fenced): 2, RECOVERING.
    assert current(ctl) == state([1, 2, 3], [2], 2, 4, 8, recovery="RECOVERING")


@pytest.mark.parametrize("unclean, expected", [
    (False, None),
    (True, state([1, 2, 3], [1], 1, 2, 4)),
])
def test_cancel_kip966_fewer_than_min_isr_originals(unclean, expected):
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2, elr_enabled=True, unclean_election=unclean),
                         state([1, 2, 4, 3], [1, 4], 1, 1, 3, adding=[4], removing=[3]))
    res = ctl.alter_partition_reassignments({TP: None})
    if expected is None:
        assert res.response[TP].code == Errors.INVALID_REPLICA_ASSIGNMENT and res.records == []
    else:
        ctl.apply(res)
        assert res.response[TP].ok and current(ctl) == expected
        assert ctl.invariant_violations() == []
