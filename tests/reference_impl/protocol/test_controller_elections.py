"""Elections on the controller (C10-C12): ElectLeaders PREFERRED / UNCLEAN with Kafka's per-partition error
codes, the periodic unclean election, and elections triggered by fencing/unfencing."""

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.partition_change import Election

from .controller_helpers import NO_LEADER, TP, cluster, current, epoch, state, with_partition


def test_preferred_election_moves_leadership_to_first_replica():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 2, 2, 3))
    res = ctl.elect_leaders(Election.PREFERRED, [TP])
    assert res.response[TP].ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 3, 4)
    again = ctl.elect_leaders("PREFERRED", [TP])
    assert again.response[TP].code == Errors.ELECTION_NOT_NEEDED and again.records == []


def test_preferred_not_available_when_preferred_is_out_of_isr():
    ctl = with_partition(cluster(), state([1, 2, 3], [2, 3], 2, 2, 3))
    res = ctl.elect_leaders(Election.PREFERRED, [TP])
    assert res.response[TP].code == Errors.PREFERRED_LEADER_NOT_AVAILABLE and res.records == []


def test_unclean_election_only_for_leaderless_partitions_c12():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert ctl.elect_leaders(Election.UNCLEAN, [TP]).response[TP].code == Errors.ELECTION_NOT_NEEDED
    ctl = with_partition(cluster(), state([1, 2, 3], [1], NO_LEADER, 2, 4))
    ctl.apply(ctl.fence_broker(1))
    res = ctl.elect_leaders(Election.UNCLEAN, [TP])
    assert res.response[TP].ok
    ctl.apply(res)
    # C12: an out-of-ISR replica leads; ISR = {leader}, RECOVERING until its first AlterPartition.
    assert current(ctl) == state([1, 2, 3], [2], 2, 3, 5, recovery="RECOVERING")
    assert ctl.invariant_violations() == []


def test_unclean_election_without_live_replica():
    ctl = with_partition(cluster(), state([1, 2, 3], [1], NO_LEADER, 2, 4))
    for b in (1, 2, 3):
        ctl.apply(ctl.fence_broker(b))
    res = ctl.elect_leaders(Election.UNCLEAN, [TP])
    assert res.response[TP].code == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE and res.records == []


def test_elect_all_partitions_leaves_out_not_needed_and_unknown_partition():
    ctl = with_partition(cluster(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    with_partition(ctl, state([1, 2, 3], [1, 2, 3], 3, 1, 1), topic="u")
    res = ctl.elect_leaders(Election.PREFERRED)
    assert list(res.response) == [("u", 0)]
    assert ctl.elect_leaders(Election.PREFERRED, [("x", 0)]).response[("x", 0)].code == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_periodic_unclean_election_follows_the_topic_config():
    ctl = with_partition(cluster(), state([1, 2, 3], [1], NO_LEADER, 2, 4))
    ctl.apply(ctl.fence_broker(1))
    assert ctl.maybe_unclean_elect().records == []
    ctl.apply(ctl.set_config("topic", "t", "unclean.leader.election.enable", "true"))
    res = ctl.maybe_unclean_elect()
    assert res.response == [TP]
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [2], 2, 3, 5, recovery="RECOVERING")


def test_fencing_with_unclean_enabled_elects_outside_the_isr_at_once():
    ctl = with_partition(cluster(unclean_election=True), state([1, 2, 3], [1], 1, 1, 3))
    ctl.apply(ctl.fence_broker(1))
    assert current(ctl) == state([1, 2, 3], [2], 2, 2, 4, recovery="RECOVERING")


def test_unfence_elects_for_leaderless_partition_c10():
    ctl = with_partition(cluster(), state([1, 2, 3], [2, 3], 2, 1, 1))
    ctl.apply(ctl.fence_broker(2))
    ctl.apply(ctl.fence_broker(3))
    assert current(ctl) == state([1, 2, 3], [3], NO_LEADER, 3, 3)
    ctl.apply(ctl.heartbeat(3, epoch(ctl, 3), want_fence=False, want_shutdown=False,
                            metadata_offset=ctl.next_offset, now_ms=0))
    assert current(ctl) == state([1, 2, 3], [3], 3, 4, 4)
