"""A leader's view of its voters: their end offsets (HWM, Q8), who acknowledged it (Q5), check-quorum (Q11).

The HWM is the largest offset a majority of voters have in their logs, the leader's own flushed end
counting for itself (Kafka's ``LeaderState.maybeUpdateHighWatermark``: sort the voters' end offsets in
descending order and take the one at index ``len(voters) // 2``). Two more conditions (Q8):

- it advances only above the **epoch start offset** (the LEO when the leader was elected): the leader
  must commit a record of its own epoch before it exposes records of earlier epochs, so that any later
  leader's log holds them too (Raft's rule against committing a previous term's entries by counting).
  Where no epoch-start record is written (an empty log, or a quorum of one, whose flushed log is a
  majority by itself) the bar is one lower: ``commit_point`` is the offset whose commitment makes the
  leader ready;
- it never goes back: a lower majority offset (a voter that lost committed records, I19) is ignored.

Check-quorum (Q11): a leader that has not been fetched from by a majority (itself included) within the
check-quorum timeout resigns, so a leader cut off from the quorum stops acting as one (a zombie) instead
of waiting for a higher epoch that cannot reach it.
"""

from __future__ import annotations

from collections.abc import Sequence


class LeaderState:
    """Replication state of one leader epoch (see the module docstring)."""

    def __init__(self, leader_id: int, voters: Sequence[int], epoch: int, epoch_start_offset: int,
                 high_watermark: int, now_ms: int, check_quorum_timeout_ms: int,
                 writes_epoch_start: bool = True) -> None:
        self.leader_id = leader_id
        self.voters = tuple(voters)
        self.epoch = epoch
        self.epoch_start_offset = epoch_start_offset
        # Q5/Q8: the HWM must pass this offset (the epoch-start record's) before it moves at all
        self.commit_point = epoch_start_offset if writes_epoch_start else epoch_start_offset - 1
        self.high_watermark = high_watermark
        # None until the voter fetched in this epoch: an unknown end offset counts as the lowest (Q8).
        self.end_offsets: dict[int, int | None] = {v: None for v in self.voters}
        self.last_fetch_ms: dict[int, int] = {}
        self.acknowledged: set[int] = {leader_id}
        self.hwm_sent: dict[int, int] = {}  # voter -> the HWM its last fetch answer carried (long polling)
        self._fetched: set[int] = set()
        self._check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum_deadline = now_ms + check_quorum_timeout_ms

    @property
    def majority(self) -> int:
        """Voters needed for a quorum."""
        return len(self.voters) // 2 + 1

    def update_local(self, flushed_end_offset: int) -> bool:
        """The leader's own durable end offset moved; True when the HWM advanced."""
        self.end_offsets[self.leader_id] = flushed_end_offset
        return self._maybe_advance()

    def update_voter(self, voter: int, fetch_offset: int, now_ms: int) -> bool:
        """A valid fetch from ``voter`` (Q7): its log ends at ``fetch_offset``; True when the HWM advanced."""
        self.end_offsets[voter] = fetch_offset
        self.last_fetch_ms[voter] = now_ms
        self.acknowledged.add(voter)
        self.record_follower_contact(voter, now_ms)
        return self._maybe_advance()

    def record_follower_contact(self, voter: int, now_ms: int) -> None:
        """Q11: a voter fetched in this epoch; once a majority (the leader counting) did, the check-quorum
        window starts over."""
        self._fetched.add(voter)
        if len(self._fetched) + 1 >= self.majority:
            self._fetched.clear()
            self.check_quorum_deadline = now_ms + self._check_quorum_timeout_ms

    def _maybe_advance(self) -> bool:
        ranked = sorted((-1 if o is None else o for o in self.end_offsets.values()), reverse=True)
        candidate = ranked[len(self.voters) // 2]
        if candidate > self.commit_point and candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def successors(self) -> list[int]:
        """The other voters, most up to date first (EndQuorumEpoch's preferred successors, Q12)."""
        others = [v for v in self.voters if v != self.leader_id]
        return sorted(others, key=lambda v: (-(self.end_offsets.get(v) or -1), v))
