"""B2 / T*: a restarted broker applies nothing before it has caught up to its own registration, then the
whole catch-up as one materialized batch (so no stale role is ever taken)."""

from __future__ import annotations

from reference_impl.protocol.metadata_image import InitialCatchUp, MetadataImage
from reference_impl.protocol.records import (
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

# The log a restarted broker 1 pulls: it led the partition in LE 0, lost it (LE 1, leader 2) while down,
# then re-registered at offset 6.
LOG = [
    (0, RegisterBrokerRecord(1, "a", 0)),
    (1, RegisterBrokerRecord(2, "b", 1)),
    (2, TopicRecord("t", "tid")),
    (3, PartitionRecord("tid", 0, (1, 2), (1, 2), 1, 0, 0)),
    (4, UnfenceBrokerRecord(2, 1)),
    (5, PartitionChangeRecord("tid", 0, leader=2, isr=(2,), leader_epoch_bump=True)),
    (6, RegisterBrokerRecord(1, "c", 6)),
    (7, PartitionChangeRecord("tid", 0, isr=(2, 1))),
]


def pulls(size: int) -> list[list[list[tuple[int, object]]]]:
    """The log in pulls of ``size`` records, each pull one batch per record."""
    return [[[e] for e in LOG[i:i + size]] for i in range(0, len(LOG), size)]


def test_nothing_is_applied_before_the_registration_then_one_batch():
    catch_up = InitialCatchUp(target=6)
    out = [catch_up.add(p) for p in pulls(2)]
    assert out[:3] == [[], [], []]  # offsets 0-5: held
    assert catch_up.next_offset_after is None and catch_up.done
    [merged] = out[3]  # offsets 6-7 arrive in the 4th pull
    assert [o for o, _ in merged] == list(range(8))


def test_the_restarted_broker_never_sees_its_stale_leadership():
    for size in (1, 2, 3, 5, 8):
        image, catch_up = MetadataImage(), InitialCatchUp(target=6)
        roles = []
        for pull in pulls(size):
            for batch in catch_up.add(pull):
                delta = image.apply_batch(batch)
                roles += [(t.state.leader, t.state.leader_epoch) for t in delta.transitions_for(1)]
        # The first state broker 1 acts on is the current one (leader 2 in LE 1), never (1, LE 0).
        assert roles and roles[0] == (2, 1), (size, roles)
        assert all(le >= 1 for _, le in roles)


def test_a_broker_already_caught_up_passes_batches_through():
    catch_up = InitialCatchUp(target=3, applied_offset=5)
    assert catch_up.done
    assert catch_up.add([[LOG[6]], [], [LOG[7]]]) == [[LOG[6]], [LOG[7]]]


def test_held_offset_for_the_next_pull():
    catch_up = InitialCatchUp(target=6)
    catch_up.add(pulls(3)[0])
    assert catch_up.next_offset_after == 2 and not catch_up.done
