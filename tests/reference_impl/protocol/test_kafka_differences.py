"""The deliberate differences from Apache Kafka listed in docs/kafka-differences.md section 1, pinned: each
test asserts the seeds' behaviour and its docstring says what Kafka does instead. A change towards Kafka's
behaviour must change that page too. (Section 1.4, re-targeting, is pinned by test_reassignment_retarget.)"""

from reference_impl.protocol.errors import Errors

from .controller_helpers import NO_LEADER, TP, ap, cluster, current, epoch, reassign, state, with_partition


def test_1_1_add_only_completion_bumps_the_leader_epoch():
    """C2/C18/C19, seed 000 4.2 step 3. Kafka keeps LE 1 here: no replica left and the leader stayed."""
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(ctl, [1, 2, 3, 4]).ok
    ctl.apply(ap(ctl, [1, 2, 3, 4]))
    assert current(ctl) == state([1, 2, 3, 4], [1, 2, 3, 4], 1, 2, 3)


def test_1_2_isr_shrinks_keep_the_leader_epoch():
    """C2 [T]. Kafka before metadata version 3.6 bumps the leader epoch on both shrinks (KAFKA-15021)."""
    ctl = with_partition(cluster((1, 2, 3), min_isr=1), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ap(ctl, [1, 2]))
    ctl.apply(ctl.fence_broker(2))
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3)


def test_1_3_completion_waits_for_min_isr_not_for_every_target_replica():
    """C17/K6, seed 000 example 2's shape. Kafka 3.0-3.7 would complete at the first AlterPartition (final ISR
    {1} is non-empty); Kafka 3.8+ would wait for 3 too (every target replica in the ISR)."""
    ctl = with_partition(cluster((1, 2, 3, 4, 5), min_isr=2), state([1, 2, 3, 4, 5], [4, 5], 5, 1, 2))
    assert reassign(ctl, [1, 2, 3]).ok
    ctl.apply(ap(ctl, [1, 4, 5]))
    assert current(ctl).removing == [4, 5]  # final ISR {1} < MinISR: still in progress
    ctl.apply(ap(ctl, [1, 2, 4, 5]))
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 2, 5)  # 3 is still outside the ISR


def test_1_5_target_below_min_isr_is_refused():
    """C16 [T]. Kafka accepts it (validateManualPartitionAssignment has no MinISR check); so does kraftcheck
    with reject_target_below_min_isr=False."""
    strict = with_partition(cluster((1, 2, 3), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(strict, [1]).code == Errors.INVALID_REPLICATION_FACTOR
    lenient = with_partition(cluster((1, 2, 3), min_isr=2, reject_target_below_min_isr=False),
                             state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    assert reassign(lenient, [1]).ok


def test_1_6_kip966_cancel_needs_min_isr_originals_in_sync():
    """C21, seed 000 4.5. Kafka's PartitionReassignmentRevert reverts here (one original is in the ISR)."""
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2, elr_enabled=True),
                         state([1, 2, 4, 3], [1, 4], 1, 1, 3, adding=[4], removing=[3]))
    before = current(ctl)
    assert reassign(ctl, None).code == Errors.INVALID_REPLICA_ASSIGNMENT
    assert current(ctl) == before


def test_1_7_last_known_elr_holds_ex_elr_members_and_nobody_is_elected_from_it():
    """K5/K7/K8. When the ISR empties, Kafka's default stores the last leader (1) in LastKnownElr, and with
    ISR and ELR both empty its elections may pick that last leader (unclean, RECOVERING). Here LKELR gets
    the replicas that left the ELR, and only a K7 recovery elects from it."""
    ctl = with_partition(cluster((1, 2, 3), min_isr=2, elr_enabled=True), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    for b in (2, 3, 1):
        ctl.apply(ctl.fence_broker(b))
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 4, elr=[3, 1])  # Kafka: LastKnownElr [1]
    for b in (3, 1):  # both restart without their clean-shutdown marker (K4): out of the ELR
        ctl.apply(ctl.register_broker(b, f"again-{b}", previous_broker_epoch=-1))
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 6, lkelr=[3, 1])
    for b in (1, 2, 3):
        ctl.apply(ctl.heartbeat(b, epoch(ctl, b), want_fence=False, want_shutdown=False,
                                metadata_offset=ctl.next_offset, now_ms=0))
    assert current(ctl).leader == NO_LEADER
    assert ctl.unclean_recovery_candidates(TP) == [3, 1]  # K7 balanced: ask every LKELR member
