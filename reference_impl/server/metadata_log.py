"""The controller's durable metadata log: the quorum's replicated log as JSON lines of record batches.

File ``<log.dirs>/metadata.log``; each line is one batch ``{"base_offset": n, "epoch": e, "records":
[to_dict(r)...]}`` (``epoch``: the quorum epoch of the leader that wrote it; a line without one, from a
single controller before the quorum, counts as epoch 1). A record's offset is ``base_offset + i``; the
controller core's ``replay(record, offset)`` gets exactly that offset (a RegisterBrokerRecord's offset
becomes the broker epoch, C4). A batch is the unit brokers apply atomically (T-rules work on materialized
state, so a batch may hide intermediate states, scenario 25) and the unit the quorum replicates.

Two faces: ``MetadataLog`` keeps the file (``append`` writes and fsyncs a whole batch, ``read_from``
serves brokers' pulls, ``replay_items`` reads everything back); ``QuorumLog`` is the same file as the Raft
core's ``RaftLog`` (appends written to the OS, ``flush`` fsyncs them: the core calls it before it counts
or acknowledges them, Q9; ``truncate_to`` cuts a diverged suffix, Q9). ``open`` replays the file at start;
a torn last line (a crash mid-write) is cut off and reported, like a torn segment tail. The
``metadata-no-fsync`` bug skips every fsync.
"""

from __future__ import annotations

import json
import os
from typing import Any

from reference_impl.protocol.controller_loop import metadata_batches_from
from reference_impl.protocol.raft.log import EMPTY_LOG_EPOCH, check_raft_append
from reference_impl.protocol.raft.messages import RaftBatch
from reference_impl.protocol.records import record_from_dict, to_dict

FILE_NAME = "metadata.log"
LEGACY_EPOCH = 1  # a line written before batches carried their epoch: a single controller's first epoch


class MetadataLog:
    """An append-only JSONL log of metadata record batches with an in-memory copy for readers."""

    def __init__(self, directory: str, fsync: bool = True) -> None:
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, FILE_NAME)
        self.fsync = fsync
        self.recovery_notes: list[str] = []
        # (base_offset, [record dicts]) per batch, in order; the dict form is what brokers are sent.
        self._batches: list[tuple[int, list[dict[str, Any]]]] = []
        self._epochs: list[int] = []          # the quorum epoch of each batch
        self._positions: list[int] = []       # the file position where each batch's line starts
        self._decoded: dict[int, tuple] = {}  # base offset -> decoded records (cache)
        self._end = 0
        self._size = 0
        self._load()
        self._fh = open(self.path, "ab")
        self.flushed_offset = self._end

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            line = data[pos:] if nl < 0 else data[pos:nl]
            problem = None
            if nl < 0:
                problem = "no newline (torn write)"
            else:
                try:
                    entry = json.loads(line)
                    base, records = int(entry["base_offset"]), list(entry["records"])
                    epoch = int(entry.get("epoch", LEGACY_EPOCH))
                    for r in records:
                        record_from_dict(r)
                    if base != self._end or not records:
                        problem = f"base offset {base} does not continue the log at {self._end}"
                    elif self._epochs and epoch < self._epochs[-1]:
                        problem = f"epoch {epoch} after epoch {self._epochs[-1]}"
                except (ValueError, KeyError, TypeError) as exc:
                    problem = f"unparseable batch ({exc})"
            if problem:
                self.recovery_notes.append(f"{self.path}: truncated {len(data) - pos} bytes at {pos}: {problem}")
                with open(self.path, "r+b") as fh:
                    fh.truncate(pos)
                    os.fsync(fh.fileno())
                self._size = pos
                return
            self._batches.append((base, records))
            self._epochs.append(epoch)
            self._positions.append(pos)
            self._end = base + len(records)
            pos = nl + 1
            self._size = pos

    @property
    def end_offset(self) -> int:
        """The offset the next record will get (number of records so far)."""
        return self._end

    @property
    def last_epoch(self) -> int:
        """The quorum epoch of the last batch (0 when empty)."""
        return self._epochs[-1] if self._epochs else EMPTY_LOG_EPOCH

    def replay_items(self) -> list[tuple[Any, int]]:
        """Every record with its offset, decoded, in order."""
        return [(record_from_dict(r), base + i) for base, recs in self._batches for i, r in enumerate(recs)]

    def append(self, records: list[Any], epoch: int | None = None) -> list[int]:
        """Write one batch durably (C1) and return the offsets its records got. Empty input: no write."""
        if not records:
            return []
        base = self._end
        self.append_batch(RaftBatch(base, max(self.last_epoch, LEGACY_EPOCH) if epoch is None else epoch,
                                    tuple(records)))
        self.flush()
        return list(range(base, self._end))

    def append_batch(self, batch: RaftBatch) -> None:
        """Write one batch to the file (not yet fsynced: ``flush``)."""
        dicts = [to_dict(r) for r in batch.records]
        line = json.dumps({"base_offset": batch.base_offset, "epoch": batch.epoch, "records": dicts},
                          separators=(",", ":")).encode() + b"\n"
        self._fh.write(line)
        self._fh.flush()
        self._batches.append((batch.base_offset, dicts))
        self._epochs.append(batch.epoch)
        self._positions.append(self._size)
        self._decoded[batch.base_offset] = tuple(batch.records)
        self._size += len(line)
        self._end = batch.next_offset

    def flush(self) -> None:
        """fsync what was written (skipped by the ``metadata-no-fsync`` bug)."""
        if self.fsync:
            os.fsync(self._fh.fileno())
        self.flushed_offset = self._end

    def truncate_to(self, offset: int) -> int:
        """Drop every batch from the one holding ``offset`` on, in the file too; return the new end."""
        keep = 0
        while keep < len(self._batches) and self._batches[keep][0] + len(self._batches[keep][1]) <= offset:
            keep += 1
        if keep == len(self._batches):
            return self._end
        cut = self._positions[keep]
        for base, _ in self._batches[keep:]:
            self._decoded.pop(base, None)
        del self._batches[keep:], self._epochs[keep:], self._positions[keep:]
        self._fh.close()
        with open(self.path, "r+b") as fh:
            fh.truncate(cut)
            if self.fsync:
                os.fsync(fh.fileno())
        self._fh = open(self.path, "ab")
        self._size = cut
        self._end = self._batches[-1][0] + len(self._batches[-1][1]) if self._batches else 0
        self.flushed_offset = min(self.flushed_offset, self._end)
        return self._end

    def batches(self, from_offset: int, max_records: int) -> list[RaftBatch]:
        """Whole batches (decoded) from the one holding ``from_offset``, at least one, then as many as fit."""
        index = self._index(from_offset)
        out: list[RaftBatch] = []
        count = 0
        for i in range(index, len(self._batches)):
            base, dicts = self._batches[i]
            if out and count + len(dicts) > max_records:
                break
            records = self._decoded.get(base)
            if records is None:
                records = self._decoded[base] = tuple(record_from_dict(d) for d in dicts)
            out.append(RaftBatch(base, self._epochs[i], records))
            count += len(dicts)
        return out

    def _index(self, offset: int) -> int:
        lo, hi = 0, len(self._batches)
        while lo < hi:
            mid = (lo + hi) // 2
            base, recs = self._batches[mid]
            if base + len(recs) <= offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """``(epoch, first offset)`` of every epoch that has records."""
        out: list[tuple[int, int]] = []
        for (base, _), epoch in zip(self._batches, self._epochs, strict=True):
            if not out or out[-1][0] != epoch:
                out.append((epoch, base))
        return out

    def read_from(self, offset: int, max_records: int = 10_000) -> list[tuple[int, list[dict[str, Any]]]]:
        """Whole batches starting at ``offset`` (which must be a batch boundary or the end), up to about
        ``max_records`` records (at least one batch). Raises ``ValueError`` for an offset inside a batch or
        beyond the end: a broker asking that has a metadata log that is not a prefix of ours (I5)."""
        return metadata_batches_from(self._batches, self._end, offset, max_records)

    def dicts(self, base_offset: int) -> list[dict[str, Any]] | None:
        """The stored (JSON) form of the batch at ``base_offset``, or None."""
        i = self._index(base_offset)
        if i < len(self._batches) and self._batches[i][0] == base_offset:
            return self._batches[i][1]
        return None

    def close(self) -> None:
        """Close the file."""
        self._fh.close()


class QuorumLog:
    """``MetadataLog`` as the Raft core's ``RaftLog`` (see the module docstring)."""

    def __init__(self, log: MetadataLog) -> None:
        self.file = log

    @property
    def end_offset(self) -> int:
        """LEO."""
        return self.file.end_offset

    @property
    def last_epoch(self) -> int:
        """Epoch of the last batch (0 when empty)."""
        return self.file.last_epoch

    @property
    def flushed_offset(self) -> int:
        """How far the file is fsynced."""
        return self.file.flushed_offset

    def append(self, batch: RaftBatch) -> None:
        """Write a batch (``check_raft_append`` first)."""
        check_raft_append(self, batch)
        self.file.append_batch(batch)

    def read(self, from_offset: int, max_records: int) -> list[RaftBatch]:
        """Whole batches from ``from_offset``."""
        return self.file.batches(from_offset, max_records)

    def truncate_to(self, offset: int) -> int:
        """Cut the diverged suffix (Q9)."""
        return self.file.truncate_to(offset)

    def epoch_start_offsets(self) -> list[tuple[int, int]]:
        """The epoch cache."""
        return self.file.epoch_start_offsets()

    def flush(self) -> None:
        """fsync."""
        self.file.flush()

