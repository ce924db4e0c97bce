"""Divergence units: docs/protocol-rules.md scenario 6 cases A-H (L9, L11, F3), each with reply and cut."""

from __future__ import annotations

import pytest

from reference_impl.protocol.divergence import (
    NO_EPOCH,
    EpochEndOffset,
    diverging_epoch,
    end_offset_for_epoch,
    truncation_offset,
)
from reference_impl.protocol.log import InMemoryLog, LogBatch
from reference_impl.protocol.records import PartitionState
from reference_impl.protocol.replica import PartitionReplica
from reference_impl.protocol.replica_messages import ReplicaConfig, StartFetching


def epoch_starts(per_offset: list[int]) -> list[tuple[int, int]]:
    """The epoch cache of a log given as per-offset epochs."""
    out: list[tuple[int, int]] = []
    for offset, epoch in enumerate(per_offset):
        if not out or out[-1][0] != epoch:
            out.append((epoch, offset))
    return out


def run_case(leader: list[int], leader_epoch: int, follower: list[int], fetch_offset: int,
             last_epoch: int) -> tuple[EpochEndOffset | None, int | None]:
    """The leader's reply (L9) and, if diverging, the follower's cut point (F3)."""
    reply = diverging_epoch(epoch_starts(leader), len(leader), leader_epoch, fetch_offset, last_epoch)
    cut = None if reply is None else truncation_offset(epoch_starts(follower), len(follower), reply)
    return reply, cut


def test_case_a_no_divergence():
    assert run_case([1, 1, 1, 1], 2, [1, 1], 2, 1) == (None, None)


def test_case_c_follower_longer_same_epoch():
    assert run_case([1, 1], 2, [1, 1, 1, 1], 4, 1) == (EpochEndOffset(1, 2), 2)


def test_case_d_follower_has_unknown_epoch():
    assert run_case([1, 1], 3, [1, 1, 2, 2], 4, 2) == (EpochEndOffset(1, 2), 2)


def test_case_e_both_moved_on_differently():
    assert run_case([1, 1, 3, 3], 4, [1, 1, 2, 2], 4, 2) == (EpochEndOffset(1, 2), 2)


def test_case_f_follower_epoch_started_earlier():
    assert run_case([1, 1], 3, [1, 2, 2], 3, 2) == (EpochEndOffset(1, 2), 1)


def test_case_g_leader_epoch_below_follower_start():
    assert run_case([1, 3], 4, [2], 1, 2) == (EpochEndOffset(1, 1), 0)


def test_case_h_follower_lacks_the_leaders_epoch():
    # e' (1) != diverging epoch (2): the follower cuts at the end of its own floor epoch
    assert run_case([1, 2, 2], 4, [1, 3], 2, 3) == (EpochEndOffset(2, 3), 1)


def test_l11_current_leader_epoch_counts():
    # the leader's current LE answers (LE, LEO) even without records in it
    assert end_offset_for_epoch([(1, 0)], 2, 5, current_leader_epoch=5) == EpochEndOffset(5, 2)
    assert end_offset_for_epoch([], 0, 4) == EpochEndOffset(4, 0)


def test_no_last_fetched_epoch_never_diverges():
    assert diverging_epoch(epoch_starts([3, 3]), 2, 4, 0, NO_EPOCH) is None


@pytest.mark.parametrize("case", [
    ("C", [1, 1], 2, [1, 1, 1, 1], 2),
    ("D", [1, 1], 3, [1, 1, 2, 2], 2),
    ("E", [1, 1, 3, 3], 4, [1, 1, 2, 2], 2),
    ("F", [1, 1], 3, [1, 2, 2], 1),
    ("G", [1, 3], 4, [2], 0),
    ("H", [1, 2, 2], 4, [1, 3], 1),
])
def test_cases_through_replicas(case):
    """The same cases end to end through two ``PartitionReplica``s: one fetch, one truncation (F3)."""
    _, leader_epochs, le, follower_epochs, cut = case
    leader_log, follower_log = InMemoryLog(), InMemoryLog()
    for log, epochs in ((leader_log, leader_epochs), (follower_log, follower_epochs)):
        for offset, e in enumerate(epochs):
            log.append(LogBatch(offset, 1, e, payload=b"%d" % e))
    leader = PartitionReplica(1, "t", 0, leader_log, ReplicaConfig())
    follower = PartitionReplica(2, "t", 0, follower_log, ReplicaConfig())
    state = PartitionState([1, 2], [1, 2], leader=1, leader_epoch=le, partition_epoch=1)
    leader.apply_metadata(state, 0)
    assert follower.apply_metadata(state, 0) == [StartFetching(1, le)]
    req = follower.build_fetch(0)
    resp = leader.handle_follower_fetch(req.replica_id, 7, req.leader_epoch, req.fetch_offset,
                                        req.last_fetched_epoch, req.max_bytes, 0)
    assert resp.diverging_epoch is not None and resp.batches == ()
    assert leader.followers[2].leo is None  # L9: no follower-state update
    follower.handle_fetch_response(req, resp, 0)
    assert follower.log_end_offset == cut
    assert [e["kind"] for e in follower.drain_events()].count("truncate") == 1
    # the next fetch starts at the cut, and the follower ends up with the leader's log
    for _ in range(4):
        req = follower.build_fetch(0)
        resp = leader.handle_follower_fetch(2, 7, req.leader_epoch, req.fetch_offset, req.last_fetched_epoch,
                                            req.max_bytes, 0)
        follower.handle_fetch_response(req, resp, 0)
    assert [b.epoch for b in follower_log.batches()] == leader_epochs
