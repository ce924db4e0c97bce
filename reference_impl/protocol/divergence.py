"""Log divergence: the leader's EndOffsetForEpoch answer (L11), its check (L9) and the follower's cut (F3).

Everything here is a pure function of a log's epoch cache, given as a sorted sequence of
``(epoch, start_offset)`` pairs (one pair per epoch that has records, the same data Kafka keeps in
``leader-epoch-checkpoint``), and of the log end offset. Keeping it pure lets the same code serve the
in-memory log, the server's segment log and the simulator, and lets tests state the catalog cases of
docs/protocol-rules.md 6.6 as plain lists.

Epochs are Kafka's: ``NO_EPOCH`` (-1) stands for "no epoch" (an empty log's last epoch, or a fetch that
carries no last-fetched epoch, in which case no divergence check runs, as in Kafka). Offsets are 0-based and
end offsets are exclusive.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

NO_EPOCH = -1


@dataclass(frozen=True)
class EpochEndOffset:
    """An answer of EndOffsetForEpoch: the largest known epoch <= the one asked for, and where it ends."""

    epoch: int
    end_offset: int


def end_offset_for_epoch(epoch_starts: Sequence[tuple[int, int]], log_end_offset: int, requested_epoch: int,
                         current_leader_epoch: int | None = None) -> EpochEndOffset:
    """L11: EndOffsetForEpoch(requested_epoch) over a log's epoch cache.

    ``current_leader_epoch`` is given only on the leader: there the current LE counts as an epoch that starts
    at the LEO even before it has records (Kafka assigns it in the epoch cache on becoming leader). The
    follower's local lookup of F3 passes None.
    """
    if not epoch_starts:
        return EpochEndOffset(requested_epoch, log_end_offset)
    last_epoch = epoch_starts[-1][0]
    if requested_epoch == last_epoch or requested_epoch == current_leader_epoch:
        return EpochEndOffset(requested_epoch, log_end_offset)
    epochs = [e for e, _ in epoch_starts]
    # index of the first epoch strictly greater than requested_epoch
    higher = bisect.bisect_right(epochs, requested_epoch)
    floor_epoch = epochs[higher - 1] if higher > 0 else requested_epoch
    # L11: the current LE counts as higher, so when no log epoch is higher the answer ends at the LEO.
    end = epoch_starts[higher][1] if higher < len(epochs) else log_end_offset
    return EpochEndOffset(floor_epoch, end)


def diverging_epoch(epoch_starts: Sequence[tuple[int, int]], log_end_offset: int, current_leader_epoch: int,
                    fetch_offset: int, last_fetched_epoch: int, *,
                    answer_requested_epoch: bool = False) -> EpochEndOffset | None:
    """L9: the leader's divergence check for one follower fetch; None when the follower's log matches.

    A fetch without a last-fetched epoch (``NO_EPOCH``, an empty follower log) is never diverging.
    ``answer_requested_epoch`` is the design before KIP-279 (historical bug
    ``kip279-fast-failover-divergence``): the answer carried only an end offset, which stood for the
    requested epoch even when the leader never had that epoch and the offset is where its next one starts.
    """
    if last_fetched_epoch < 0:
        return None
    answer = end_offset_for_epoch(epoch_starts, log_end_offset, last_fetched_epoch, current_leader_epoch)
    if answer_requested_epoch:
        answer = EpochEndOffset(last_fetched_epoch, answer.end_offset)
    if answer.epoch < last_fetched_epoch or answer.end_offset < fetch_offset:
        return answer
    return None


def truncation_offset(epoch_starts: Sequence[tuple[int, int]], log_end_offset: int,
                      diverging: EpochEndOffset) -> int:
    """F3: where a follower cuts its log (exclusive) after the leader replied ``diverging``.

    The follower looks the leader's epoch up in its own log (L11 without the current-LE clause): if it knows
    that epoch the cut is the smaller of the two end offsets, otherwise its own end of the floor epoch.
    The result never exceeds the follower's LEO.
    """
    local = end_offset_for_epoch(epoch_starts, log_end_offset, diverging.epoch)
    cut = local.end_offset if local.epoch != diverging.epoch else min(local.end_offset, diverging.end_offset)
    return min(cut, log_end_offset)
