"""The replicated log of the quorum (the ``__cluster_metadata`` partition) as the Raft core sees it.

Whole batches are the unit of append, read and truncation: a batch is what the active controller commits
as one change, and brokers apply it as one materialized change (T-rules), so its boundaries must be the
same in every voter's log. A follower appends the leader's batches as they come, so the common prefix of
two logs has the same boundaries, and a divergence cut (Q9) falls on one; ``truncate_to`` rounds a cut
inside a batch down to its start all the same.

Epochs: a log's last epoch is 0 when it is empty (Kafka's convention on the quorum's Fetch and Vote: no
record is ever written in epoch 0, the first leader has epoch 1). The epoch cache answers EndOffsetForEpoch
through ``divergence.end_offset_for_epoch`` (the same L11 rule the partition logs use: Kafka's leader
epoch cache serves both).

``RaftLog`` is the interface; ``InMemoryRaftLog`` implements it for tests and the simulator (with a flush
mark, so a power loss can drop what was never flushed); the controller process keeps the same in a file.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from reference_impl.protocol.divergence import EpochEndOffset, end_offset_for_epoch
from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.raft.messages import RaftBatch

EMPTY_LOG_EPOCH = 0


@runtime_checkable
class RaftLog(Protocol):
    """What the quorum needs from its log."""

    @property
    def end_offset(self) -> int:
        """LEO: one past the last record (0 when empty)."""
        ...

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch; 0 when empty."""
        ...

    @property
    def flushed_offset(self) -> int:
        """How far the log is durable (a power loss keeps exactly this prefix)."""
        ...

    def append(self, batch: RaftBatch) -> None:
        """Append a batch based at the LEO, in an epoch not below the last one."""
        ...

    def read(self, from_offset: int, max_records: int) -> list[RaftBatch]:
        """Whole batches from the one starting at ``from_offset``: at least one if any, then more while the
        record count stays within ``max_records``."""
        ...

    def truncate_to(self, offset: int) -> int:
        """Drop everything from ``offset`` on (rounded down to a batch start); return the new LEO."""
        ...

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """Sorted ``(epoch, first offset)`` pairs of every epoch that has records."""
        ...

    def flush(self) -> None:
        """Make everything appended durable (fsync)."""
        ...


def check_raft_append(log: RaftLog, batch: RaftBatch) -> None:
    """Raise ``InvariantViolation`` unless ``batch`` may follow ``log``'s end: not empty, based at the LEO,
    not in an epoch older than the last (shared by every implementation, so all fail alike)."""
    if not batch.records:
        raise InvariantViolation(f"empty quorum batch at {batch.base_offset}")
    if batch.base_offset != log.end_offset:
        raise InvariantViolation(f"quorum append at {batch.base_offset} but the log ends at {log.end_offset}")
    if batch.epoch < log.last_epoch or batch.epoch <= EMPTY_LOG_EPOCH:
        raise InvariantViolation(f"quorum append in epoch {batch.epoch} after epoch {log.last_epoch}")


def end_offset_for(log: RaftLog, epoch: int, current_epoch: int | None = None) -> EpochEndOffset:
    """L11 over a quorum log: where ``epoch`` ends (the leader passes its current epoch, which counts as
    starting at its LEO)."""
    return end_offset_for_epoch(log.epoch_start_offsets(), log.end_offset, epoch, current_epoch)


class InMemoryRaftLog:
    """A ``RaftLog`` in a Python list (unit tests, the simulator's controller disks)."""

    def __init__(self, batches: Iterable[RaftBatch] = ()) -> None:
        self._batches: list[RaftBatch] = []
        self._epochs: list[tuple[int, int]] = []
        self._flushed = 0
        for batch in batches:
            self.append(batch)
        self.flush()

    @property
    def end_offset(self) -> int:
        """LEO."""
        return self._batches[-1].next_offset if self._batches else 0

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch, 0 when empty."""
        return self._batches[-1].epoch if self._batches else EMPTY_LOG_EPOCH

    @property
    def flushed_offset(self) -> int:
        """The durable prefix's end."""
        return self._flushed

    @property
    def batches(self) -> list[RaftBatch]:
        """Every batch, in order (a copy)."""
        return list(self._batches)

    def append(self, batch: RaftBatch) -> None:
        """Append one batch (``check_raft_append``)."""
        check_raft_append(self, batch)
        self._batches.append(batch)
        if not self._epochs or self._epochs[-1][0] != batch.epoch:
            self._epochs.append((batch.epoch, batch.base_offset))

    def _index(self, offset: int) -> int:
        """Index of the batch containing ``offset`` (len when past the end)."""
        return bisect.bisect_right([b.next_offset for b in self._batches], offset)

    def read(self, from_offset: int, max_records: int) -> list[RaftBatch]:
        """Whole batches from the one containing ``from_offset``."""
        out: list[RaftBatch] = []
        count = 0
        for batch in self._batches[self._index(from_offset):]:
            if out and count + len(batch.records) > max_records:
                break
            out.append(batch)
            count += len(batch.records)
        return out

    def truncate_to(self, offset: int) -> int:
        """Cut at the start of the batch holding ``offset``; rebuild the epoch cache."""
        if offset < self.end_offset:
            del self._batches[self._index(offset):]
            self._epochs = [(e, o) for e, o in self._epochs if o < self.end_offset]
            self._flushed = min(self._flushed, self.end_offset)
        return self.end_offset

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """The epoch cache."""
        return list(self._epochs)

    def flush(self) -> None:
        """Everything appended is durable."""
        self._flushed = self.end_offset

    def lose_unflushed(self) -> None:
        """Power loss: keep only the flushed prefix."""
        self.truncate_to(self._flushed)
