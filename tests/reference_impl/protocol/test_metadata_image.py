"""Metadata image: batches applied as materialized state, per-partition transitions (T1-T6), brokers."""

from __future__ import annotations

import pytest

from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.metadata_image import (
    NEW,
    T1_REMOVED,
    T2_LEADER_SAME_EPOCH,
    T3_LEADER_NEW_EPOCH,
    T4_FOLLOWER_SAME,
    T5_FOLLOWER_NEW_EPOCH,
    T6_NO_LEADER,
    MetadataImage,
    classify,
)
from reference_impl.protocol.records import (
    NO_LEADER,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    PartitionState,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)


def image_with_partition() -> MetadataImage:
    image = MetadataImage()
    image.apply_batch([(0, TopicRecord("topic", "tid")),
                       (1, PartitionRecord("tid", 0, (1, 2, 3), (1, 2, 3), 1, 1, 1))])
    return image


def test_created_partition_is_new_for_its_replicas_only():
    image = MetadataImage()
    delta = image.apply_batch([(0, TopicRecord("topic", "tid")),
                               (1, PartitionRecord("tid", 0, (1, 2), (1, 2), 1, 0, 0))])
    assert [t.rule for t in delta.transitions_for(1)] == [NEW]
    assert delta.transitions_for(3) == []
    assert image.topic_id("topic") == "tid" and image.offset == 1


def test_batch_hides_intermediate_states_s25():
    image = image_with_partition()
    delta = image.apply_batch([(2, PartitionChangeRecord("tid", 0, leader=2, leader_epoch_bump=True)),
                               (3, PartitionChangeRecord("tid", 0, leader=1, leader_epoch_bump=True))])
    [change] = delta.partitions
    assert (change.before.leader_epoch, change.after.leader, change.after.leader_epoch,
            change.after.partition_epoch) == (1, 1, 3, 3)
    assert [t.rule for t in delta.transitions_for(1)] == [T3_LEADER_NEW_EPOCH]  # re-elected in LE3
    assert [t.rule for t in delta.transitions_for(3)] == [T5_FOLLOWER_NEW_EPOCH]


def test_a_batch_that_changes_nothing_materially_reports_nothing():
    image = image_with_partition()
    # PE moves, so the materialized state differs: reported (T4 for followers, T2 for the leader)
    delta = image.apply_batch([(2, PartitionChangeRecord("tid", 0, isr=(1, 2)))])
    assert [t.rule for t in delta.transitions_for(1)] == [T2_LEADER_SAME_EPOCH]
    assert [t.rule for t in delta.transitions_for(2)] == [T4_FOLLOWER_SAME]
    # re-sent records (offsets already applied) are skipped
    assert image.apply_batch([(2, PartitionChangeRecord("tid", 0, isr=(1,)))]).partitions == []
    assert image.partition("tid", 0).isr == [1, 2]


def test_classify_all_rules():
    base = PartitionState([1, 2, 3], [1, 2, 3], 1, 1, 1)
    def after(**kw):
        s = base.copy()
        for k, v in kw.items():
            setattr(s, k, v)
        return s
    assert classify(3, base, after(replicas=[1, 2], isr=[1, 2])) == T1_REMOVED
    assert classify(4, base, after(replicas=[1, 2])) is None
    assert classify(4, base, after(replicas=[1, 2, 3, 4])) == NEW
    assert classify(1, base, after(isr=[1, 2])) == T2_LEADER_SAME_EPOCH
    assert classify(2, base, after(leader=2, leader_epoch=2)) == T3_LEADER_NEW_EPOCH
    assert classify(2, base, after(isr=[1, 2])) == T4_FOLLOWER_SAME
    assert classify(1, base, after(leader=2, leader_epoch=2)) == T5_FOLLOWER_NEW_EPOCH
    assert classify(2, base, after(leader=NO_LEADER, leader_epoch=2)) == T6_NO_LEADER


def test_brokers_configs_and_catch_up():
    image = MetadataImage()
    image.apply_batch([(0, RegisterBrokerRecord(1, "inc-a", 0)), (1, RegisterBrokerRecord(2, "inc-b", 1))])
    assert image.ineligible_brokers() == {1, 2}
    image.apply_batch([(2, UnfenceBrokerRecord(1, 0)), (3, UnfenceBrokerRecord(2, 99))])  # stale epoch ignored
    assert image.ineligible_brokers() == {2}
    image.apply_batch([(4, BrokerRegistrationChangeRecord(1, 0, in_controlled_shutdown=True)),
                       (5, FenceBrokerRecord(2, 1)), (6, NoOpRecord()),
                       (7, ConfigRecord("topic", "t", "min.insync.replicas", "2"))])
    assert image.brokers[1].in_controlled_shutdown and image.ineligible_brokers() == {1, 2}
    assert image.config("topic", "t", "min.insync.replicas") == "2"
    assert image.caught_up_to(7) and not image.caught_up_to(8)
    assert image.broker_epochs() == {1: 0, 2: 1}
    image.apply_batch([(8, ConfigRecord("topic", "t", "min.insync.replicas", None))])
    assert image.config("topic", "t", "min.insync.replicas", "1") == "1"


def test_partitions_of_a_broker_and_unknown_partition():
    image = image_with_partition()
    assert [(t, p) for t, p, _ in image.partitions_of(2)] == [("tid", 0)]
    assert image.partitions_of(9) == []
    with pytest.raises(InvariantViolation):
        image.apply_batch([(5, PartitionChangeRecord("nope", 0, isr=(1,)))])
