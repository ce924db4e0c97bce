"""Replica order during a reassignment, as Apache Kafka orders it (PartitionReassignmentReplicas):
``replicas`` = the target in the requested order, then the replicas being removed in ascending order;
``adding`` and ``removing`` ascending. The first replica is the preferred leader, and ONLINE elections take
the first clean candidate in replica order, so the order decides who leads while a move is in progress.

The seeds state no order: where seed 000 prints a merged list in another order, its list is read as a set
(``test_reassignment_seed000``)."""

from hypothesis import given
from hypothesis import strategies as st

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.partition_change import Election
from reference_impl.protocol.reassignment import merged_assignment

from .controller_helpers import TP, ap, cluster, current, reassign, state, with_partition

BROKERS = (1, 2, 3, 4, 5, 6)


def test_grow_is_target_order_then_removing_ascending():
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([3, 2, 1], [1, 2, 3], 3, 1, 1))
    assert reassign(ctl, [5, 4, 1]).ok
    assert current(ctl) == state([5, 4, 1, 2, 3], [1, 2, 3], 3, 1, 2, adding=[4, 5], removing=[2, 3])
    ongoing = ctl.list_partition_reassignments()[TP]
    assert (ongoing.replicas, ongoing.adding, ongoing.removing) == ((5, 4, 1, 2, 3), (4, 5), (2, 3))


def test_completion_is_exactly_the_requested_target_order():
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([3, 2, 1], [1, 2, 3], 3, 1, 1))
    assert reassign(ctl, [5, 4, 1]).ok
    ctl.apply(ap(ctl, [1, 2, 3, 4, 5]))
    # The leader 3 was removed: the first clean candidate of the target order leads (C10, C11).
    assert current(ctl) == state([5, 4, 1], [1, 4, 5], 5, 2, 3)


def test_preferred_election_during_a_move_favours_the_new_first_replica():
    """With [1, 2, 3] -> [2, 3, 4] in progress the first replica is 2 (Kafka's [2, 3, 4, 1]), so a preferred
    election moves the leadership to 2 before the move completes. (Seed 000's printing order would put 1
    first and answer ELECTION_NOT_NEEDED.)"""
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [2, 3, 4]).ok
    assert current(ctl).replicas == [2, 3, 4, 1]
    res = ctl.elect_leaders(Election.PREFERRED, [TP])
    assert res.response[TP].ok
    ctl.apply(res)
    assert current(ctl) == state([2, 3, 4, 1], [1, 2, 3], 2, 2, 3, adding=[4], removing=[1])
    assert ctl.elect_leaders(Election.PREFERRED, [TP]).response[TP].code == Errors.ELECTION_NOT_NEEDED


def test_leader_lost_during_a_move_is_replaced_in_kafka_order():
    """Replicas [2, 1, 3], leader 3, moving to [1, 4, 5]: Kafka's order is [1, 4, 5, 2, 3]. Fencing the
    leader elects the first ISR member in that order, 1 (an order that kept 2 in front would elect 2)."""
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([2, 1, 3], [1, 2, 3], 3, 1, 1))
    assert reassign(ctl, [1, 4, 5]).ok
    assert current(ctl).replicas == [1, 4, 5, 2, 3]
    ctl.apply(ctl.fence_broker(3))
    assert current(ctl) == state([1, 4, 5, 2, 3], [1, 2], 1, 2, 3, adding=[4, 5], removing=[2, 3])


def test_cancel_keeps_the_reassignment_order_minus_adding():
    """Kafka's revert (PartitionReassignmentRevert) is the replica list minus ``adding``: the original
    replicas as a set (C21), in the order the move left them, not their order before the move. The LE is
    bumped because replicas 4 and 5 leave the replica set (Kafka's rule for a shrinking replica list)."""
    ctl = with_partition(cluster(BROKERS, min_isr=2), state([3, 2, 1], [1, 2, 3], 3, 1, 1))
    assert reassign(ctl, [5, 4, 1]).ok
    assert reassign(ctl, None).ok
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 3, 2, 3)


@given(current_=st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True),
       target=st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True))
def test_merged_assignment_order_property(current_, target):
    """For any current and target: the target comes first and unchanged, then exactly current minus target
    in ascending order; adding and removing are the two set differences, ascending."""
    m = merged_assignment(current_, target)
    assert m.replicas[:len(target)] == target
    assert m.replicas[len(target):] == sorted(set(current_) - set(target))
    assert m.adding == sorted(set(target) - set(current_))
    assert m.removing == sorted(set(current_) - set(target))
    assert [r for r in m.replicas if r not in m.removing] == target  # completion = the requested order
