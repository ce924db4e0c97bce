"""A partition replica's log as the protocol core sees it: whole batches, an epoch cache, an HWM checkpoint.

The core never parses record bytes. A ``LogBatch`` carries the fields the protocol reads (offsets, the
leader epoch it was written in (L2), producer id/epoch/sequence for idempotence, the max timestamp for
ListOffsets) and the opaque Kafka v2 batch bytes, which the server has already rewritten (base offset,
leader epoch, CRC) before the batch reaches the log.

``Log`` is the interface the replica logic is written against; ``InMemoryLog`` implements it for unit tests
and the simulator, and the server's file-backed segment log implements the same protocol (its tests can
reuse ``tests/reference_impl/protocol/test_log.py`` by extending the ``LOG_FACTORIES`` list there).

Conventions (all Kafka's):
- offsets are 0-based, ``log_end_offset`` (LEO) is exclusive;
- ``truncate_to(offset)`` keeps every batch that ends before ``offset`` and drops the batch containing it,
  so a cut inside a batch rounds down to that batch's base offset (Kafka's segment truncation does the same;
  followers only ever cut at batch boundaries anyway);
- the epoch cache maps each epoch that has records to the offset of its first record, is rebuilt by
  truncation, and answers EndOffsetForEpoch through ``divergence.end_offset_for_epoch`` (L11);
- the HWM checkpoint is the value last written with ``checkpoint_high_watermark`` (what a restarted replica
  starts from; it may be stale, docs/protocol-rules.md 5.7).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from reference_impl.protocol.divergence import NO_EPOCH, EpochEndOffset, end_offset_for_epoch
from reference_impl.protocol.errors import InvariantViolation

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
NO_CONTROL = -1
CONTROL_ABORT = 0  # Kafka's ControlRecordType.ABORT
CONTROL_COMMIT = 1  # ControlRecordType.COMMIT


@dataclass(frozen=True)
class LogBatch:
    """One record batch as stored in a log (whole batches are the unit of append, read and truncation)."""

    base_offset: int
    record_count: int
    epoch: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    max_timestamp: int = -1
    payload: bytes = b""
    # KIP-98: the batch's attribute bits (transactional = bit 4, control = bit 5) and, for a control batch,
    # its marker type (``CONTROL_ABORT`` / ``CONTROL_COMMIT``); the server reads both from the batch bytes.
    attributes: int = 0
    control_type: int = NO_CONTROL

    @property
    def is_transactional(self) -> bool:
        """True for a batch written inside a transaction (attribute bit 4)."""
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """True for a transaction marker (attribute bit 5)."""
        return bool(self.attributes & CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record (base + count - 1)."""
        return self.base_offset + self.record_count - 1

    @property
    def next_offset(self) -> int:
        """The offset after this batch (its exclusive end)."""
        return self.base_offset + self.record_count

    @property
    def size_bytes(self) -> int:
        """Bytes the batch counts for against a fetch's ``max_bytes`` (at least 1, so reads make progress)."""
        return max(1, len(self.payload))


@runtime_checkable
class Log(Protocol):
    """The storage interface the replica logic needs (see the module docstring for the conventions)."""

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the log."""
        ...

    @property
    def log_end_offset(self) -> int:
        """LEO: one past the last offset in the log (== ``log_start_offset`` when empty)."""
        ...

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch, ``NO_EPOCH`` when the log is empty (a follower's last fetched epoch)."""
        ...

    def append(self, batch: LogBatch) -> None:
        """Append a batch whose ``base_offset`` equals the LEO and whose epoch is >= ``last_epoch``."""
        ...

    def read(self, from_offset: int, max_bytes: int) -> list[LogBatch]:
        """Whole batches starting with the one containing ``from_offset``; at least one batch if any exists,
        then more while the total stays within ``max_bytes``. Empty at or past the LEO."""
        ...

    def truncate_to(self, offset: int) -> int:
        """Drop everything at and after ``offset`` (rounded down to a batch boundary); return the new LEO."""
        ...

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """The epoch cache: sorted ``(epoch, first offset)`` pairs for every epoch that has records."""
        ...

    def end_offset_for_epoch(self, epoch: int, current_leader_epoch: int | None = None) -> EpochEndOffset:
        """L11 over this log (the leader passes its current LE; the follower's F3 lookup passes None)."""
        ...

    def flush(self) -> None:
        """Make everything appended so far durable (a no-op in memory)."""
        ...

    def checkpointed_high_watermark(self) -> int:
        """The HWM last checkpointed (0 if never)."""
        ...

    def checkpoint_high_watermark(self, hwm: int) -> None:
        """Record the replica's HWM so a restart starts from it."""
        ...

    def batches(self) -> list[LogBatch]:
        """Every batch in offset order (used to rebuild producer state; a segment log may stream them)."""
        ...


def check_append(log: Log, batch: LogBatch) -> None:
    """Raise ``InvariantViolation`` unless ``batch`` may be appended to ``log``: non-empty, based at the LEO
    (I10: offsets are contiguous) and not in an epoch older than the log's last (I11: record epochs never
    decrease along a log). Shared by every ``Log`` implementation, so they fail on the same appends."""
    if batch.record_count < 1:
        raise InvariantViolation(f"empty batch at {batch.base_offset}")
    if batch.base_offset != log.log_end_offset:
        raise InvariantViolation(f"append at {batch.base_offset} but LEO is {log.log_end_offset}")
    if batch.epoch < log.last_epoch:
        raise InvariantViolation(f"append of epoch {batch.epoch} after epoch {log.last_epoch}")


class InMemoryLog:
    """A ``Log`` kept in a Python list; for unit tests and the deterministic simulator."""

    def __init__(self, log_start_offset: int = 0) -> None:
        self._start = log_start_offset
        self._batches: list[LogBatch] = []
        self._epochs: list[tuple[int, int]] = []
        self._hwm_checkpoint = 0
        self.flushed_offset = log_start_offset  # how far ``flush`` has made the log durable

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the log."""
        return self._start

    @property
    def log_end_offset(self) -> int:
        """LEO (exclusive)."""
        return self._batches[-1].next_offset if self._batches else self._start

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch, or ``NO_EPOCH`` when empty."""
        return self._batches[-1].epoch if self._batches else NO_EPOCH

    def append(self, batch: LogBatch) -> None:
        """Append one batch; out-of-place offsets or a lower epoch are broken invariants (I10, I11)."""
        check_append(self, batch)
        self._batches.append(batch)
        if not self._epochs or self._epochs[-1][0] != batch.epoch:
            self._epochs.append((batch.epoch, batch.base_offset))

    def _index_of(self, offset: int) -> int:
        """Index of the batch containing ``offset`` (or the first batch after it)."""
        ends = [b.next_offset for b in self._batches]
        return bisect.bisect_right(ends, offset)

    def read(self, from_offset: int, max_bytes: int) -> list[LogBatch]:
        """Whole batches from the one containing ``from_offset``, bounded by ``max_bytes`` (first always)."""
        out: list[LogBatch] = []
        total = 0
        for batch in self._batches[self._index_of(max(from_offset, self._start)):]:
            if out and total + batch.size_bytes > max_bytes:
                break
            out.append(batch)
            total += batch.size_bytes
        return out

    def truncate_to(self, offset: int) -> int:
        """Cut at the start of the batch containing ``offset``; rebuild the epoch cache; return the LEO."""
        if offset < self.log_end_offset:
            keep = self._index_of(offset)
            del self._batches[keep:]
            self._epochs = [(e, o) for e, o in self._epochs if o < self.log_end_offset]
            self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        return self.log_end_offset

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """Sorted ``(epoch, first offset)`` pairs."""
        return list(self._epochs)

    def end_offset_for_epoch(self, epoch: int, current_leader_epoch: int | None = None) -> EpochEndOffset:
        """L11 over this log."""
        return end_offset_for_epoch(self._epochs, self.log_end_offset, epoch, current_leader_epoch)

    def flush(self) -> None:
        """Mark everything durable (lets tests model the unflushed suffix a lossy crash drops, B4)."""
        self.flushed_offset = self.log_end_offset

    def checkpointed_high_watermark(self) -> int:
        """The last checkpointed HWM."""
        return self._hwm_checkpoint

    def checkpoint_high_watermark(self, hwm: int) -> None:
        """Store the HWM checkpoint."""
        self._hwm_checkpoint = hwm

    def batches(self) -> list[LogBatch]:
        """A copy of the batch list."""
        return list(self._batches)
