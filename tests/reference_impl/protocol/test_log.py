"""Contract tests for ``Log`` implementations (L2, L11, I10).

``LogContract`` holds every test and needs only a ``log`` fixture returning a fresh, empty ``Log``. Another
implementation reuses the whole suite by subclassing it::

    from tests.reference_impl.protocol.test_log import LogContract

    class TestSegmentLog(LogContract):
        @pytest.fixture
        def log(self, tmp_path):
            return SegmentLog(tmp_path / "t-0")
"""

from __future__ import annotations

import pytest

from reference_impl.protocol.divergence import NO_EPOCH, EpochEndOffset
from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.log import InMemoryLog, Log, LogBatch


def fill(log: Log, epochs_per_batch: list[tuple[int, int]], payload_size: int = 10) -> list[LogBatch]:
    """Append batches given as (epoch, record_count); payloads name their offsets."""
    out = []
    for epoch, count in epochs_per_batch:
        b = LogBatch(log.log_end_offset, count, epoch, payload=f"{log.log_end_offset:0{payload_size}d}".encode())
        log.append(b)
        out.append(b)
    return out


class LogContract:
    """The ``Log`` contract; subclasses provide the ``log`` fixture (see the module docstring)."""

    def test_empty_log(self, log):
        assert (log.log_start_offset, log.log_end_offset, log.last_epoch) == (0, 0, NO_EPOCH)
        assert log.read(0, 1000) == []
        assert log.epoch_start_offsets() == []
        assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 0)
        assert isinstance(log, Log)

    def test_append_read_whole_batches(self, log):
        batches = fill(log, [(1, 2), (1, 3), (2, 1)])
        assert log.log_end_offset == 6 and log.last_epoch == 2
        assert log.read(0, 10_000) == batches
        # the first batch returned is the one containing the offset
        assert log.read(3, 10_000) == batches[1:]
        assert log.read(5, 10_000) == batches[2:]
        assert log.read(6, 10_000) == []
        # max_bytes bounds the read but the first batch is always returned
        assert log.read(0, 1) == batches[:1]
        assert log.read(0, 20) == batches[:2]
        assert log.batches() == batches

    def test_append_rejects_gaps_and_epoch_regression(self, log):
        fill(log, [(2, 2)])
        with pytest.raises(InvariantViolation):
            log.append(LogBatch(3, 1, 2))
        with pytest.raises(InvariantViolation):
            log.append(LogBatch(2, 1, 1))
        assert log.log_end_offset == 2

    def test_epoch_cache_and_truncation(self, log):
        fill(log, [(1, 2), (1, 1), (3, 2), (4, 1)])
        assert log.epoch_start_offsets() == [(1, 0), (3, 3), (4, 5)]
        assert log.truncate_to(4) == 3  # inside the epoch-3 batch: rounds down to its base offset
        assert log.epoch_start_offsets() == [(1, 0)]
        assert log.last_epoch == 1
        assert log.truncate_to(10) == 3  # beyond the LEO: nothing happens
        assert log.truncate_to(2) == 2
        assert log.truncate_to(0) == 0 and log.epoch_start_offsets() == [] and log.last_epoch == NO_EPOCH
        fill(log, [(5, 1)])
        assert log.epoch_start_offsets() == [(5, 0)]

    def test_end_offset_for_epoch_l11(self, log):
        fill(log, [(1, 2), (3, 2)])
        assert log.end_offset_for_epoch(3) == EpochEndOffset(3, 4)  # last epoch: LEO
        assert log.end_offset_for_epoch(1) == EpochEndOffset(1, 2)
        assert log.end_offset_for_epoch(2) == EpochEndOffset(1, 2)  # floor epoch 1, ends where 3 starts
        assert log.end_offset_for_epoch(0) == EpochEndOffset(0, 0)  # below every epoch
        assert log.end_offset_for_epoch(5) == EpochEndOffset(3, 4)
        assert log.end_offset_for_epoch(5, current_leader_epoch=5) == EpochEndOffset(5, 4)

    def test_hwm_checkpoint_and_flush(self, log):
        assert log.checkpointed_high_watermark() == 0
        fill(log, [(1, 3)])
        log.flush()
        log.checkpoint_high_watermark(2)
        assert log.checkpointed_high_watermark() == 2


class TestInMemoryLog(LogContract):
    """The contract run against ``InMemoryLog``."""

    @pytest.fixture
    def log(self) -> Log:
        """A fresh in-memory log."""
        return InMemoryLog()
