"""KIP-860 (seed 003): AllowReplicationFactorChange=false refuses RF changes with INVALID_REPLICATION_FACTOR,
compares against the in-progress reassignment's target, leaves other partitions of the request alone, and
is ignored by cancels."""

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.reassignment import check_rf_change

from .controller_helpers import TP, cluster, current, state, with_partition

IRF = Errors.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize("target, allow, code", [
    ([1, 2, 4], False, Errors.NONE),       # a move keeps the RF
    ([4, 5, 6], False, Errors.NONE),
    ([1, 2, 3, 4], False, IRF),            # growth refused
    ([1, 2], False, IRF),                  # shrink refused
    ([1, 2, 3, 4], True, Errors.NONE),     # default (true): allowed
    ([1, 2], True, Errors.NONE),
])
def test_rule_against_current_replica_set(target, allow, code):
    ctl = with_partition(cluster((1, 2, 3, 4, 5, 6), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    res = ctl.alter_partition_reassignments({TP: target}, allow_rf_change=allow)
    assert res.response[TP].code == code
    assert (res.records == []) == (code != Errors.NONE)


@pytest.mark.parametrize("target, code", [
    ([1, 2, 5], Errors.NONE),    # same size as the in-progress target [1, 2, 4], though replicas has 4
    ([1, 2, 4, 5], IRF),         # size 4 = len(replicas) but != the in-progress target's size 3
    ([1, 2], IRF),
])
def test_rule_against_reassignment_in_progress(target, code):
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2),
                         state([1, 2, 4, 3], [1, 2], 1, 1, 3, adding=[4], removing=[3]))
    res = ctl.alter_partition_reassignments({TP: target}, allow_rf_change=False)
    assert res.response[TP].code == code


def test_cancel_ignores_the_flag():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2),
                         state([1, 2, 3, 4], [1, 2], 1, 1, 3, adding=[4]))
    res = ctl.alter_partition_reassignments({TP: None}, allow_rf_change=False)
    assert res.response[TP].ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 2, 4)


def test_valid_partitions_of_the_same_request_still_succeed():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    with_partition(ctl, state([1, 2, 3], [1, 2, 3], 1, 1, 1), topic="u")
    res = ctl.alter_partition_reassignments({TP: [1, 2, 4], ("u", 0): [1, 2, 3, 4]}, allow_rf_change=False)
    assert res.response[TP].ok and res.response[("u", 0)].code == IRF
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 4, 3], [1, 2, 3], 1, 1, 2, adding=[4], removing=[3])
    assert current(ctl, "u") == state([1, 2, 3], [1, 2, 3], 1, 1, 1)


def test_pure_function_uses_final_target_of_incremental_reassignment():
    p = state([5, 0, 1, 2, 3, 4], [5, 0, 1, 2, 3, 4], 5, 2, 3)
    assert check_rf_change(p, [5, 6, 7, 8, 9], False, final_target=[5, 6, 7, 8, 9]).ok
    assert check_rf_change(p, [5, 6, 7, 8, 9, 1], False, final_target=[5, 6, 7, 8, 9]).code == IRF
