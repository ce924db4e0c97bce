"""``SegmentLog``: the file-backed implementation of the protocol core's ``Log`` for one partition replica.

Layout of a partition directory ``<log.dirs>/<topic>-<partition>/``: segment files
``<base>.log`` / ``<base>.index`` (see ``segment``), ``leader-epoch-checkpoint`` and ``hwm-checkpoint``
(see ``checkpoints``). A new segment starts when the active one would exceed ``segment_bytes``.

Durability is the flush policy's business (B4): ``flush.messages`` fsyncs after that many records,
``flush.ms`` is driven by the broker calling ``maybe_flush(now_ms)``, a segment roll fsyncs the finished
segment, and the default (both Long.MAX) leaves it to the OS, as Kafka does. Everything not fsynced may be
lost by a power failure (the harness models that with its FUSE file system).

Recovery at open: every segment is scanned and each frame's CRC and offset continuity is verified; the
first bad frame and everything after it (later segments included) is cut, and each cut is reported through
``recovery_notes`` (the broker logs and traces them). B5: there is no epoch-based truncation at boot; the
epoch cache is rebuilt from the surviving batches (the checkpoint file is rewritten to match), and
divergence is left to the first fetch (F3).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from reference_impl.protocol import divergence
from reference_impl.protocol.log import check_append
from reference_impl.server.storage import checkpoints
from reference_impl.server.storage.frames import FrameHeader
from reference_impl.server.storage.segment import Segment

LONG_MAX = 2**63 - 1
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
HWM_CHECKPOINT = "hwm-checkpoint"


def _default_batch_factory(header: FrameHeader, payload: bytes) -> Any:
    # Imported here: the batch type belongs to the protocol core's log module.
    from reference_impl.protocol.log import LogBatch
    from reference_impl.server.txn_batches import batch_txn_fields

    attributes, control_type = batch_txn_fields(payload)  # KIP-98 state is rebuilt from these at recovery
    return LogBatch(base_offset=header.base_offset, record_count=header.record_count, epoch=header.epoch,
                    producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                    base_sequence=header.base_sequence, max_timestamp=header.max_timestamp,
                    payload=payload, attributes=attributes, control_type=control_type)


class SegmentLog:
    """A partition's log on disk: segments, offset index, epoch cache, HWM checkpoint, flush policy."""

    def __init__(self, directory: str, *, segment_bytes: int = 1 << 30, index_interval_bytes: int = 4096,
                 flush_messages: int = LONG_MAX, flush_ms: int = LONG_MAX,
                 batch_factory: Callable[[FrameHeader, bytes], Any] | None = None) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.flush_messages = flush_messages
        self.flush_ms = flush_ms
        self._make_batch = batch_factory or _default_batch_factory
        self.recovery_notes: list[str] = []
        self._unflushed_records = 0
        self._last_flush_ms: int | None = None
        self._hwm = 0
        self._hwm_dirty = False
        os.makedirs(directory, exist_ok=True)
        self.segments: list[Segment] = []
        self._epochs: list[tuple[int, int]] = []
        self._recover()

    # -- open / recovery -----------------------------------------------------------------------------
    def _recover(self) -> None:
        bases = sorted(int(name[:-4]) for name in os.listdir(self.directory)
                       if name.endswith(".log") and name[:-4].isdigit())
        expected: int | None = None
        broken = False
        for base in bases:
            seg = Segment(self.directory, base, self.index_interval_bytes)
            if broken or (expected is not None and base != expected):
                if not broken:
                    self.recovery_notes.append(f"{seg.log_path}: base offset {base} does not continue the "
                                               f"log at {expected}; deleted with later segments")
                broken = True
                seg.delete()
                continue
            headers, cut = seg.recover(base if expected is None else expected)
            if cut:
                self.recovery_notes.append(cut)
                broken = True  # everything after a torn frame is unreachable (offsets must be contiguous)
            for h in headers:
                self._note_epoch(h.epoch, h.base_offset)
            self.segments.append(seg)
            expected = seg.next_offset
        # Stray index files of deleted segments.
        for name in os.listdir(self.directory):
            if name.endswith(".index") and name[:-6].isdigit() and int(name[:-6]) not in {
                    s.base_offset for s in self.segments}:
                os.unlink(os.path.join(self.directory, name))
        if not self.segments:
            self.segments.append(Segment(self.directory, 0, self.index_interval_bytes))
        saved = checkpoints.read_epoch_checkpoint(self._path(EPOCH_CHECKPOINT))
        if saved != self._epochs:
            if saved is not None:
                self.recovery_notes.append(f"{self._path(EPOCH_CHECKPOINT)}: {saved} rebuilt from the "
                                           f"log as {self._epochs}")
            self._write_epochs()
        hwms = checkpoints.read_hwm_checkpoint(self._path(HWM_CHECKPOINT))
        # A checkpointed HWM beyond the recovered LEO is clamped: the records it covered are gone.
        self._hwm = min(hwms.get(("hwm", 0), 0), self.log_end_offset)

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _note_epoch(self, epoch: int, offset: int) -> bool:
        if not self._epochs or epoch != self._epochs[-1][0]:
            self._epochs.append((epoch, offset))
            return True
        return False

    def _write_epochs(self) -> None:
        checkpoints.write_epoch_checkpoint(self._path(EPOCH_CHECKPOINT), self._epochs)

    # -- Log protocol: reads ---------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        """LEO (exclusive)."""
        return self.segments[-1].next_offset

    @property
    def log_start_offset(self) -> int:
        """The first offset still in the log (no retention here, so the first segment's base)."""
        return self.segments[0].base_offset

    @property
    def last_epoch(self) -> int:
        """The epoch of the last batch (-1 for an empty log)."""
        return self._epochs[-1][0] if self._epochs else divergence.NO_EPOCH

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """The epoch cache: ``(epoch, start_offset)`` per epoch that has records, increasing."""
        return list(self._epochs)

    def end_offset_for_epoch(self, epoch: int, current_leader_epoch: int | None = None
                             ) -> divergence.EpochEndOffset:
        """L11 over this log (the current-LE clause only when ``current_leader_epoch`` is given)."""
        return divergence.end_offset_for_epoch(self._epochs, self.log_end_offset, epoch, current_leader_epoch)

    def epoch_at(self, offset: int) -> int:
        """The epoch of the record at ``offset`` (-1 when outside the log)."""
        if not self.log_start_offset <= offset < self.log_end_offset:
            return divergence.NO_EPOCH
        best = divergence.NO_EPOCH
        for e, start in self._epochs:
            if start <= offset:
                best = e
        return best

    def read(self, from_offset: int, max_bytes: int) -> list[Any]:
        """Whole batches from the one containing ``from_offset``; the first always, then more while the
        total payload stays within ``max_bytes``. Empty at or past the LEO."""
        from_offset = max(from_offset, self.log_start_offset)
        if from_offset >= self.log_end_offset:
            return []
        out: list[Any] = []
        total = 0
        for seg in self.segments[self._segment_index(from_offset):]:
            for header, payload, _pos in seg.scan_from(from_offset, max_bytes - total):
                size = max(1, len(payload))
                if out and total + size > max_bytes:
                    return out
                out.append(self._make_batch(header, payload))
                total += size
            if total >= max_bytes:
                break
        return out

    def batches(self) -> list[Any]:
        """Every batch in offset order (rebuilds producer state after recovery or truncation)."""
        out: list[Any] = []
        for seg in self.segments:
            out.extend(self._make_batch(h, p) for h, p, _pos in seg.scan_from(seg.base_offset, 1 << 62))
        return out

    def _segment_index(self, offset: int) -> int:
        lo = 0
        for i, seg in enumerate(self.segments):
            if seg.base_offset <= offset:
                lo = i
        return lo

    # -- Log protocol: writes --------------------------------------------------------------------------
    def append(self, batch: Any) -> None:
        """Append a batch whose ``base_offset`` must equal the LEO (the replica core assigns offsets)."""
        check_append(self, batch)
        header = FrameHeader(batch.base_offset, batch.record_count, batch.epoch, batch.producer_id,
                             batch.producer_epoch, batch.base_sequence, batch.max_timestamp)
        active = self.segments[-1]
        if active.size > 0 and active.size + len(batch.payload) + 64 > self.segment_bytes:
            self._roll()
            active = self.segments[-1]
        active.append(header, batch.payload)
        if self._note_epoch(batch.epoch, batch.base_offset):
            self._write_epochs()
        self._unflushed_records += batch.record_count
        if self._unflushed_records >= self.flush_messages:
            self.flush()

    def _roll(self) -> None:
        # B4: a finished segment is flushed when it is rolled (Kafka flushes rolled segments too).
        old = self.segments[-1]
        old.flush()
        self.segments.append(Segment(self.directory, old.next_offset, self.index_interval_bytes))

    def truncate_to(self, offset: int) -> int:
        """Remove every batch at or after ``offset`` (cut at the start of the batch holding it); new LEO."""
        if offset >= self.log_end_offset:
            return self.log_end_offset
        offset = max(offset, self.log_start_offset)
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        seg = self.segments[-1]
        batches = seg.scan_from(offset, 1)
        if batches:
            header, _payload, pos = batches[0]
            seg.truncate_at(pos, header.base_offset)
        self._epochs = [(e, s) for e, s in self._epochs if s < seg.next_offset]
        self._write_epochs()
        return self.log_end_offset

    # -- durability ------------------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync the active segment (rolled ones were fsynced when rolled)."""
        self.segments[-1].flush()
        self._unflushed_records = 0

    def maybe_flush(self, now_ms: int) -> bool:
        """``flush.ms``: flush when the last flush is older than the interval; returns whether it did."""
        if self._last_flush_ms is None:
            self._last_flush_ms = now_ms
        if self.flush_ms == LONG_MAX or now_ms - self._last_flush_ms < self.flush_ms:
            return False
        self._last_flush_ms = now_ms
        if self._unflushed_records:
            self.flush()
            return True
        return False

    def checkpointed_high_watermark(self) -> int:
        """The HWM last given to ``checkpoint_high_watermark`` (or recovered from ``hwm-checkpoint``)."""
        return self._hwm

    def checkpoint_high_watermark(self, hwm: int) -> None:
        """Record the HWM in memory; ``persist_high_watermark`` writes it (the broker does so periodically,
        as Kafka's replica.high.watermark.checkpoint.interval.ms, and at shutdown)."""
        if hwm != self._hwm:
            self._hwm = hwm
            self._hwm_dirty = True

    def persist_high_watermark(self) -> bool:
        """Write ``hwm-checkpoint`` if the HWM changed since the last write; returns whether it wrote."""
        if not self._hwm_dirty:
            return False
        checkpoints.write_hwm_checkpoint(self._path(HWM_CHECKPOINT), {("hwm", 0): self._hwm})
        self._hwm_dirty = False
        return True

    def close(self) -> None:
        """Flush and close all segments and persist the HWM (clean shutdown, B4)."""
        self.persist_high_watermark()
        for seg in self.segments:
            seg.flush()
            seg.close()

    def delete(self) -> None:
        """T1: remove this replica's files entirely."""
        for seg in self.segments:
            seg.delete()
        for name in os.listdir(self.directory):
            os.unlink(os.path.join(self.directory, name))
        os.rmdir(self.directory)
