"""What the group coordinator core reports for the trace (``drain_events``): a generation once its record is
committed, each assignment a SyncGroup answer hands out (decoded), each offset commit accepted with the
generation and member it carried and the group it was validated against; and the two rule-break switches
as the checkers' I23 / I24 will see them."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import messages as m
from reference_impl.protocol.groups import partition_for
from tests.reference_impl.protocol.groups.test_coordinator import GROUP, Harness, joined_member, txn_commit


class TracedHarness(Harness):
    """The coordinator harness, reporting each append's log offset (its position in the partition's list)
    and keeping every trace event drained."""

    def __init__(self, **config) -> None:
        self.events: list[dict] = []
        super().__init__(**config)

    def pump(self) -> None:
        super().pump()
        self.events += self.core.drain_events()

    def finish(self, append: m.Append) -> None:
        offset = len(self.log[append.partition])
        if self.fail_appends is None:
            self.log[append.partition].extend(append.records)
        self.core.append_done(append.append_id, self.fail_appends or Errors.NONE, self.now, offset)

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["kind"] == kind]


def assignment(*partitions: int, topic: str = "q") -> bytes:
    """A consumer-protocol assignment as kafka-python's leader encodes it."""
    value = ConsumerProtocolAssignment(version=0, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(partitions))], user_data=b"")
    return bytes(value.encode(version=0))


def two_members(h: TracedHarness, a_parts: bytes, b_parts: bytes) -> tuple[str, str]:
    """Generation 1 with ``a`` alone, then generation 2 with ``a`` and ``b`` handed their assignments."""
    a = joined_member(h)
    h.join(a)
    h.advance(100)
    h.call("sync_group", m.SyncGroup(GROUP, 1, a, {a: assignment(0, 1)}))
    b = joined_member(h, "d")
    h.join(b)
    h.join(a)
    sb = h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    h.call("sync_group", m.SyncGroup(GROUP, 2, a, {a: a_parts, b: b_parts}))
    assert h.replies[sb].error == Errors.NONE
    return a, b


def rejoined_with_the_write_held(h: TracedHarness) -> str:
    """A member that joins again; the generation's record is written and held, not yet committed."""
    mid = joined_member(h)
    h.hold = True
    h.join(mid)
    h.advance(100)
    return mid


def test_a_generation_is_reported_once_its_record_commits_with_its_members():
    h = TracedHarness()
    mid = rejoined_with_the_write_held(h)
    assert h.of("group_generation") == []  # written, not committed: nobody was told generation 1
    h.hold = False
    h.finish(h.held.pop())
    h.pump()
    (gen,) = h.of("group_generation")
    part = partition_for(GROUP, h.config.offsets_partitions)
    assert gen == {"kind": "group_generation", "group": GROUP, "generation": 1, "protocol_type": "consumer",
                   "protocol": "range", "leader": mid, "members": [mid], "offsets_partition": part,
                   "log_offset": 0}


def test_a_failed_generation_write_is_not_reported():
    h = TracedHarness()
    rejoined_with_the_write_held(h)
    h.fail_appends = Errors.REQUEST_TIMED_OUT
    h.finish(h.held.pop())
    h.pump()
    assert h.of("group_generation") == []


def test_each_member_handed_its_assignment_is_reported_decoded():
    h = TracedHarness()
    a, b = two_members(h, assignment(0), assignment(1))
    handed = {(e["generation"], e["member"]): e["assigned"] for e in h.of("group_assignment")}
    assert handed == {(1, a): [["q", 0], ["q", 1]], (2, b): [["q", 1]], (2, a): [["q", 0]]}
    gens = [(e["generation"], sorted(e["members"])) for e in h.of("group_generation")]
    assert gens == [(1, [a]), (2, sorted([a, b]))]
    # a SyncGroup repeated in the Stable group hands the same assignment again, and is reported again
    h.call("sync_group", m.SyncGroup(GROUP, 2, b))
    assert h.of("group_assignment")[-1]["assigned"] == [["q", 1]]


def test_an_assignment_that_is_not_the_consumer_protocol_is_reported_undecodable():
    h = TracedHarness()
    _a, b = two_members(h, assignment(0), b"\x00\x00\x00\x00\x00\x05\x00")  # five topics in two bytes
    (last,) = [e for e in h.of("group_assignment") if e["member"] == b]
    assert "assigned" not in last and last["bytes"] == 7 and "end" in last["undecodable"]


def test_an_accepted_commit_is_reported_with_the_generation_it_carried_and_the_group_it_met():
    h = TracedHarness()
    a, _b = two_members(h, assignment(0), assignment(1))
    t = h.call("offset_commit", m.OffsetCommit(GROUP, 2, a, {("q", 0): (7, -1, "")}))
    assert h.replies[t].errors == {("q", 0): Errors.NONE}
    refused = h.call("offset_commit", m.OffsetCommit(GROUP, 1, a, {("q", 0): (3, -1, "")}))
    assert h.replies[refused].errors == {("q", 0): Errors.ILLEGAL_GENERATION}
    (commit,) = h.of("group_commit")
    assert (commit["generation"], commit["member"], commit["group_generation"], commit["group_state"]) == (
        2, a, 2, "Stable")
    assert commit["offsets"] == [["q", 0, 7]] and commit["txn"] is False
    # after the generation's record: the log offsets say in which order they were written
    gen2 = h.of("group_generation")[-1]
    assert commit["log_offset"] > gen2["log_offset"] >= 0


def test_a_transactional_commit_is_reported_with_its_producer():
    h = TracedHarness()
    t = txn_commit(h, {("q", 0): (9, -1, "")})
    assert h.replies[t].errors == {("q", 0): Errors.NONE}
    (commit,) = h.of("group_commit")
    assert commit["txn"] is True and (commit["transactional_id"], commit["producer_id"]) == ("tx", 77)
    assert (commit["generation"], commit["member"], commit["group_state"]) == (-1, "", "Empty")


def test_the_stale_generation_switch_shows_in_the_commit_event():
    h = TracedHarness(accept_stale_generation_commits=True)
    a, _b = two_members(h, assignment(0), assignment(1))
    h.call("offset_commit", m.OffsetCommit(GROUP, 1, a, {("q", 0): (3, -1, "")}))
    (commit,) = h.of("group_commit")
    assert (commit["generation"], commit["group_generation"]) == (1, 2)


@pytest.mark.parametrize("bug", [False, True])
def test_the_double_assign_switch_shows_in_the_assignment_events(bug):
    h = TracedHarness(hand_leader_assignment_to_all=bug)
    a, b = two_members(h, assignment(0), assignment(1))
    second = {e["member"]: e["assigned"] for e in h.of("group_assignment") if e["generation"] == 2}
    assert second == ({a: [["q", 0]], b: [["q", 0]]} if bug else {a: [["q", 0]], b: [["q", 1]]})
