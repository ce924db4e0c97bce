"""``reassignment.mode`` as a dynamic config record (issue 3, seed 002): switching to incremental affects
reassignments submitted afterwards; switching back makes the next step of a pending plan the rest of the
move; per-controller records override the cluster default (Kafka's precedence)."""

from reference_impl.protocol.control.configuration import REASSIGNMENT_MODE
from reference_impl.protocol.records import ConfigRecord, IncrementalReassignmentRecord

from .controller_helpers import TP, ap, cluster, state, with_partition


def _set(ctl, key, value, name=""):
    r = ctl.set_config("broker", name, key, value)
    assert r.response.ok, r.response
    ctl.apply(r)


def _catch_up(ctl):
    p = ctl.partition("t", 0)
    if p.reassigning:
        ctl.apply(ap(ctl, p.replicas))


def test_invalid_mode_is_refused_with_invalid_config():
    ctl = cluster(range(6))
    r = ctl.set_config("broker", "", REASSIGNMENT_MODE, "sometimes")
    assert not r.records and r.response.code.name == "INVALID_CONFIG"


def test_switch_to_incremental_plans_new_reassignments_in_steps():
    ctl = with_partition(cluster(range(6), min_isr=1), state([0, 1, 2], [0, 1, 2], 0, 1, 1))
    assert not ctl.incremental_mode()
    _set(ctl, REASSIGNMENT_MODE, "incremental")
    _set(ctl, "reassignment.parallel.replica.count", "1")
    assert ctl.incremental_mode()
    res = ctl.alter_partition_reassignments({TP: [3, 4, 5]})
    assert [type(r) for r in res.records] == [IncrementalReassignmentRecord]
    ctl.apply(res)
    adv = ctl.advance_incremental_reassignments()
    ctl.apply(adv)
    p = ctl.partition("t", 0)
    assert p.adding == [3]  # one replica at a time (R = 1), not all three


def test_all_at_once_stays_the_default_and_runs_in_one_step():
    ctl = with_partition(cluster(range(6), min_isr=1), state([0, 1, 2], [0, 1, 2], 0, 1, 1))
    res = ctl.alter_partition_reassignments({TP: [3, 4, 5]})
    assert not any(isinstance(r, IncrementalReassignmentRecord) for r in res.records)
    ctl.apply(res)
    assert sorted(ctl.partition("t", 0).adding) == [3, 4, 5]


def test_change_mid_reassignment_affects_only_the_next_step():
    ctl = with_partition(cluster(range(8), min_isr=1, incremental_reassignment=True, parallel_replica_count=1),
                         state([0, 1, 2, 3], [0, 1, 2, 3], 0, 1, 1))
    ctl.apply(ctl.alter_partition_reassignments({TP: [4, 5, 6, 7]}))
    ctl.apply(ctl.advance_incremental_reassignments())
    running = ctl.partition("t", 0)
    assert len(running.adding) == 1
    _set(ctl, "reassignment.parallel.replica.count", "3")
    # The running step is untouched by the change.
    assert ctl.partition("t", 0).adding == running.adding and not ctl.advance_incremental_reassignments().records
    sizes = []
    for _ in range(20):  # bounded
        _catch_up(ctl)
        adv = ctl.advance_incremental_reassignments()
        if not adv.records:
            break
        ctl.apply(adv)
        if ctl.partition("t", 0).adding:
            sizes.append(len(ctl.partition("t", 0).adding))
    assert sizes and max(sizes) > 1  # the next steps move more than one replica
    assert ctl.partition("t", 0).replicas == [4, 5, 6, 7]


def test_switch_back_to_all_at_once_finishes_pending_plan_in_one_step():
    ctl = with_partition(cluster(range(8), min_isr=1, incremental_reassignment=True, parallel_replica_count=1),
                         state([0, 1, 2, 3], [0, 1, 2, 3], 0, 1, 1))
    ctl.apply(ctl.alter_partition_reassignments({TP: [4, 5, 6, 7]}))
    ctl.apply(ctl.advance_incremental_reassignments())
    first = list(ctl.partition("t", 0).adding)
    _set(ctl, REASSIGNMENT_MODE, "all-at-once")
    assert ctl.partition("t", 0).adding == first  # running step left as it is
    steps = []
    for _ in range(20):
        _catch_up(ctl)
        adv = ctl.advance_incremental_reassignments()
        if not adv.records:
            break
        ctl.apply(adv)
        steps += adv.response
    assert ctl.partition("t", 0).replicas == [4, 5, 6, 7]
    assert len(steps) == 1  # the rest of the move was one step
    assert not ctl.incremental


def test_per_controller_record_overrides_cluster_default():
    ctl = cluster(range(3), node_id="0")
    _set(ctl, REASSIGNMENT_MODE, "incremental")
    assert ctl.incremental_mode()
    ctl.apply(ctl.set_config("broker", "0", REASSIGNMENT_MODE, "all-at-once"))
    assert not ctl.incremental_mode()
    ctl.apply(ctl.set_config("broker", "1", REASSIGNMENT_MODE, "incremental"))  # another node's record
    assert not ctl.incremental_mode()
    ctl.replay(ConfigRecord("broker", "0", REASSIGNMENT_MODE, None))
    assert ctl.incremental_mode()
