"""KIP-435 (seed 002): the incremental planner, the batch collector, and the controller's driver that runs
every step through the ordinary reassignment rules (C16-C21)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.protocol.reassignment import ReassignmentStep, collect_batch, plan_next_step, plan_steps
from reference_impl.protocol.records import IncrementalReassignmentRecord

from .controller_helpers import TP, ap, cluster, current, state, with_partition

SEED_EXAMPLE = [
    (5, 0, 1, 2, 3, 4),  # +5, new leader (5) is elected
    (5, 6, 2, 3, 4),     # -[0,1] +[6]
    (5, 6, 7, 8, 4),     # -[2,3] +[7,8]
    (5, 6, 7, 8, 9),     # -[4] +[9], requested order is matched, reassignment finished
]


def test_seed002_example_exactly():
    steps = plan_steps([0, 1, 2, 3, 4], [5, 6, 7, 8, 9], leader=0, parallel_replica_count=2, min_isr=2)
    assert [s.target for s in steps] == SEED_EXAMPLE
    assert [(s.dropped, s.added) for s in steps] == [((), (5,)), ((0, 1), (6,)), ((2, 3), (7, 8)), ((4,), (9,))]
    assert [s.involves_leader_movement for s in steps] == [True, False, False, False]
    assert [s.last for s in steps] == [False, False, False, True]


def test_first_step_brings_enough_replicas_for_min_isr():
    # Seed 002: 4 brokers, min.insync.replicas 3, only 1 in sync -> add 2 at once, beyond the R=1 limit.
    step = plan_next_step([0, 1, 2, 3], [4, 5, 6, 7], leader=0, isr=[0], parallel_replica_count=1, min_isr=3)
    assert step.target == (4, 0, 1, 2, 3, 5) and step.added == (4, 5) and step.dropped == ()


def test_no_step_when_done_and_reorder_only_is_one_last_step():
    assert plan_next_step([1, 2, 3], [1, 2, 3], leader=1, isr=[1, 2, 3], parallel_replica_count=1, min_isr=2) is None
    step = plan_next_step([1, 2, 3], [3, 2, 1], leader=1, isr=[1, 2, 3], parallel_replica_count=1, min_isr=2)
    assert step.target == (3, 2, 1) and step.last


def test_rf_increase_and_decrease_respect_parallel_replica_count():
    grow = plan_steps([0, 1, 2], [0, 1, 2, 3, 4], leader=0, parallel_replica_count=1, min_isr=2)
    assert [s.target for s in grow] == [(0, 1, 2, 3), (0, 1, 2, 3, 4)]
    shrink = plan_steps([0, 1, 2, 3, 4], [0, 1, 2], leader=0, parallel_replica_count=1, min_isr=2)
    assert [s.target for s in shrink] == [(0, 1, 2, 4), (0, 1, 2)]


def _step(leader_moves: bool) -> ReassignmentStep:
    return ReassignmentStep((1, 2), (3, 2) if leader_moves else (1, 3), (), (), 1, False)


def test_batch_collector_fills_with_leader_movements_first():
    c = {"a": _step(True), "b": _step(True), "c": _step(False), "d": _step(False)}
    assert collect_batch(c, parallel_partition_count=2, parallel_leader_movements=1) == ["a", "c"]
    assert collect_batch(c, parallel_partition_count=3, parallel_leader_movements=5) == ["a", "b", "c"]
    assert collect_batch(c, parallel_partition_count=2, parallel_leader_movements=0) == ["c", "d"]
    assert collect_batch(c, parallel_partition_count=2, parallel_leader_movements=1, running=1) == ["a"]
    assert collect_batch(c, parallel_partition_count=4, parallel_leader_movements=1, running=1,
                         running_leader_movements=1) == ["c", "d"]


def _catch_up(ctl, topic="t"):
    """The leader adds every replica to the ISR (each new follower caught up)."""
    p = ctl.partition(topic, 0)
    if p.reassigning:
        ctl.apply(ap(ctl, p.replicas, topic=topic))


def test_controller_driver_reproduces_seed_example_through_reassignment_rules():
    ctl = with_partition(cluster(range(10), min_isr=2, incremental_reassignment=True, parallel_replica_count=2),
                         state([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 0, 1, 1))
    res = ctl.alter_partition_reassignments({TP: [5, 6, 7, 8, 9]}, allow_rf_change=False)
    assert res.response[TP].ok
    assert [type(r) for r in res.records] == [IncrementalReassignmentRecord]
    ctl.apply(res)
    assert ctl.list_partition_reassignments()[TP].final_target == (5, 6, 7, 8, 9)
    completed, leaders = [], []
    for _ in range(20):  # bounded: 4 steps + elections
        adv = ctl.advance_incremental_reassignments()
        if not adv.records:
            break
        ctl.apply(adv)
        p = current(ctl)
        if p.reassigning:
            _catch_up(ctl)
            p = current(ctl)
            assert not p.reassigning  # every step completes once its new replicas are in sync (C17)
            completed.append(tuple(p.replicas))
            leaders.append(p.leader)
    assert completed == SEED_EXAMPLE
    assert leaders == [0, 5, 5, 5]  # the first step's completion keeps 0; then 5 is elected as preferred
    assert current(ctl).replicas == [5, 6, 7, 8, 9] and current(ctl).leader == 5
    assert ctl.list_partition_reassignments() == {}
    assert ctl.invariant_violations() == []


def test_dynamic_config_change_affects_only_the_next_step():
    ctl = with_partition(cluster(range(10), min_isr=2, incremental_reassignment=True, parallel_replica_count=2),
                         state([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 0, 1, 1))
    ctl.apply(ctl.alter_partition_reassignments({TP: [5, 6, 7, 8, 9]}))
    ctl.apply(ctl.advance_incremental_reassignments())  # step 1 (+5)
    _catch_up(ctl)
    ctl.apply(ctl.advance_incremental_reassignments())  # preferred election of 5
    started = ctl.advance_incremental_reassignments()   # step 2 planned with R=2
    ctl.apply(started)
    running = current(ctl)
    assert [s.target for _, s in started.response] == [(5, 6, 2, 3, 4)]
    ctl.apply(ctl.set_config("broker", "", "reassignment.parallel.replica.count", "5"))
    assert current(ctl) == running  # the running step is untouched
    assert ctl.advance_incremental_reassignments().records == []  # nothing new while a step runs
    _catch_up(ctl)
    nxt = ctl.advance_incremental_reassignments()
    assert [s.target for _, s in nxt.response] == [(5, 6, 7, 8, 9)]  # R=5 now: the rest in one step


def test_driver_honours_parallel_partition_count_and_leader_movements():
    ctl = cluster(range(6), min_isr=1, incremental_reassignment=True, parallel_partition_count=2,
                  parallel_leader_movements=1)
    for name in ("a", "b", "c"):
        with_partition(ctl, state([0, 1], [0, 1], 0, 1, 1), topic=name)
    targets = {("a", 0): [2, 3], ("b", 0): [4, 5], ("c", 0): [0, 1, 2]}  # a, b move leaders; c does not
    ctl.apply(ctl.alter_partition_reassignments(targets))
    first = ctl.advance_incremental_reassignments()
    assert [tp for tp, _ in first.response] == [("a", 0), ("c", 0)]
    ctl.apply(first)
    assert ctl.advance_incremental_reassignments().records == []  # both slots busy


def test_incremental_cancel_reverts_only_the_running_step():
    ctl = with_partition(cluster(range(10), min_isr=2, incremental_reassignment=True, parallel_replica_count=2),
                         state([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 0, 1, 1))
    ctl.apply(ctl.alter_partition_reassignments({TP: [5, 6, 7, 8, 9]}))
    ctl.apply(ctl.advance_incremental_reassignments())
    assert current(ctl) == state([5, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 0, 1, 2, adding=[5])
    res = ctl.alter_partition_reassignments({TP: None})
    assert res.response[TP].ok
    ctl.apply(res)
    assert current(ctl) == state([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], 0, 2, 3)
    assert ctl.list_partition_reassignments() == {}
    assert ctl.advance_incremental_reassignments().records == []


# -- planner properties -------------------------------------------------------------------------------------

brokers_lists = st.lists(st.integers(0, 12), min_size=1, max_size=7, unique=True)


@settings(max_examples=300, deadline=None)
@given(current=brokers_lists, final=brokers_lists, r=st.integers(1, 4), min_isr=st.integers(1, 3),
       isr_size=st.integers(1, 7))
def test_planner_converges_within_limits(current, final, r, min_isr, isr_size):
    isr = current[:isr_size]
    steps = plan_steps(current, final, leader=current[0], parallel_replica_count=r, min_isr=min_isr, isr=isr)
    if current == final:
        assert steps == []
        return
    assert steps[-1].target == tuple(final) and steps[-1].last
    assert all(not s.last for s in steps[:-1])
    for i, s in enumerate(steps):
        assert len(set(s.target)) == len(s.target) and s.target, "a step target is a valid replica list"
        assert len(s.dropped) <= r, "at most R replicas dropped per step"
        if s.dropped:
            assert len(s.added) <= r, "at most R replicas added by a regular step"
        # The replica count never falls below where the move is heading or started (no redundancy dip).
        assert len(s.target) >= min(len(current), len(final))
        prev = tuple(current) if i == 0 else steps[i - 1].target
        assert s.target != prev, "every step makes progress"
