"""Re-targeting a reassignment in progress (C16, C17, C18, C21).

Definitions used: a reassignment's ``adding`` replicas are the target replicas that were not replicas
before it started (seed 001: AR = TRS - ORS); C17 completes only once every one of them is in the final
ISR. A new AlterPartitionReassignments for a partition in progress replaces the old target (Kafka allows
it). So a replica that the first target was adding, that the new target keeps and that is still catching up
(outside the ISR) must stay in ``adding``: completing without it would finish the move with a target
replica outside the ISR, and bump the leader epoch for a completion that never happened.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.protocol.controller import Controller

from .controller_helpers import TP, ap, cluster, current, reassign, state, with_partition

BROKERS = (1, 2, 3, 4, 5, 6)


def moving_to_124():
    """[1, 2, 3] -> [1, 2, 4] started; 4 is catching up (outside the ISR)."""
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [1, 2, 4]).ok
    assert current(ctl) == state([1, 2, 4, 3], [1, 2, 3], 1, 1, 2, adding=[4], removing=[3])
    return ctl


def test_retarget_keeps_a_catching_up_replica_in_adding():
    ctl = moving_to_124()
    assert reassign(ctl, [1, 2, 4, 5]).ok
    # 4 is still not an original replica and still outside the ISR: it stays in adding, next to 5.
    assert current(ctl) == state([1, 2, 4, 5, 3], [1, 2, 3], 1, 1, 3, adding=[4, 5], removing=[3])


def test_retarget_does_not_complete_before_the_kept_replica_is_in_sync():
    ctl = moving_to_124()
    assert reassign(ctl, [1, 2, 4, 5]).ok
    res = ap(ctl, [1, 2, 3, 5])  # 5 caught up first; 4 has not
    assert res.response.error.ok
    ctl.apply(res)
    # C19: only the ISR changes; no completion, so no leader-epoch bump (C2).
    assert current(ctl) == state([1, 2, 4, 5, 3], [1, 2, 3, 5], 1, 1, 4, adding=[4, 5], removing=[3])
    ctl.apply(ap(ctl, [1, 2, 3, 4, 5]))
    assert current(ctl) == state([1, 2, 4, 5], [1, 2, 4, 5], 1, 2, 5)


def test_retarget_keeps_an_in_sync_adding_replica_in_adding():
    """Under the seed's rule a move can wait with its added replica already in the ISR (final ISR below
    MinISR); re-targeting keeps it in adding too (it is not an original replica), where it no longer blocks
    completion."""
    ctl = with_partition(cluster(BROKERS, min_isr=3), state([1, 2, 3], [1, 3], 1, 1, 1))  # 2 lagging
    assert reassign(ctl, [1, 2, 4]).ok
    ctl.apply(ap(ctl, [1, 3, 4]))  # final ISR {1, 4} < 3: the move waits
    assert current(ctl) == state([1, 2, 4, 3], [1, 3, 4], 1, 1, 3, adding=[4], removing=[3])
    assert reassign(ctl, [1, 2, 4, 5]).ok
    assert current(ctl) == state([1, 2, 4, 5, 3], [1, 3, 4], 1, 1, 4, adding=[4, 5], removing=[3])
    ctl.apply(ap(ctl, [1, 2, 3, 4, 5]))
    assert current(ctl) == state([1, 2, 4, 5], [1, 2, 4, 5], 1, 2, 5)


def test_retarget_dropping_an_adding_replica_removes_it():
    ctl = moving_to_124()
    assert reassign(ctl, [1, 2, 5]).ok
    assert current(ctl) == state([1, 2, 5, 3, 4], [1, 2, 3], 1, 1, 3, adding=[5], removing=[3, 4])


def test_retarget_back_to_the_original_replicas_completes_at_once():
    """Nothing is being added any more and the final ISR {1, 2, 3} satisfies C17: one change (C18)."""
    ctl = moving_to_124()
    res = ctl.alter_partition_reassignments({TP: [1, 2, 3]})
    assert len(res.records) == 1
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 2, 3)


def test_cancel_after_retarget_reverts_to_the_original_replicas():
    """C21: a cancel drops the adding replicas; the kept one (4) was never an original replica."""
    ctl = moving_to_124()
    assert reassign(ctl, [1, 2, 4, 5]).ok
    assert reassign(ctl, None).ok
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 2, 4)


# -- property: a completed reassignment never leaves a replica it is adding outside the ISR -----------------
# The test tracks, over the history of requests, which replicas the move in progress is adding: on a start,
# the target minus the replicas; on a re-target, those it was adding that the new target keeps, plus the new
# target's replicas that are not in the replica set at all. A replica that a re-target dropped (it then waits
# in ``removing``) and a later one takes back is a replica of the partition at that point, not an added one:
# Kafka's state, like ours, keeps no memory of where a replica in ``removing`` came from.

OPS = st.lists(st.tuples(st.sampled_from(("reassign", "ap", "cancel")),
                         st.lists(st.sampled_from(BROKERS), min_size=1, max_size=5, unique=True),
                         st.integers(0, 2**16)), min_size=1, max_size=25)


def _step(ctl: Controller, op: str, members: list[int], pick: int, adding: set[int]) -> set[int]:
    """Run one operation, check C17 if it completed a move, return what the move in progress is adding."""
    before = ctl.partition(*TP).copy()
    if op == "cancel":
        ctl.apply(ctl.alter_partition_reassignments({TP: None}))
        return set()
    if op == "reassign":
        if not ctl.apply(ctl.alter_partition_reassignments({TP: members}))[TP].ok:
            return adding
        adding = (adding & set(members) if before.reassigning else set()) | (set(members) - set(before.replicas))
    else:
        # AlterPartition from the leader proposing a subset of the replicas that keeps the leader.
        proposal = [before.leader] + [r for r in before.replicas if r != before.leader and (pick >> r) & 1]
        ctl.apply(ap(ctl, proposal))
    after = ctl.partition(*TP)
    if after.reassigning:
        return adding
    if before.reassigning or set(after.replicas) != set(before.replicas):  # a reorder alone is no move
        assert adding <= set(after.isr), f"C17: adding {sorted(adding)} but ISR {after.isr} ({before} -> {after})"
        assert len(after.isr) >= ctl.min_isr(), "C17: final ISR below MinISR"
    return set()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, min_isr=st.integers(1, 3))
def test_completion_never_leaves_an_added_replica_outside_the_isr(ops, min_isr):
    ctl = with_partition(cluster(BROKERS, min_isr=min_isr), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    adding: set[int] = set()
    for op, members, pick in ops:
        adding = _step(ctl, op, members, pick, adding)
        assert ctl.invariant_violations() == []
