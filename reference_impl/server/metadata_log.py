"""The controller's durable metadata log: JSON lines of record batches, fsynced before they take effect (C1).

File ``<log.dirs>/metadata.log``; each line is one batch ``{"base_offset": n, "records": [to_dict(r)...]}``.
A record's offset is ``base_offset + i``; the controller core's ``replay(record, offset)`` gets exactly that
offset (a RegisterBrokerRecord's offset becomes the broker epoch, C4). A batch is the unit brokers apply
atomically (T-rules work on materialized state, so a batch may hide intermediate states, scenario 25).

``append`` writes and fsyncs a batch and only then returns its offsets: the controller replays the records
and answers the request after that, so nothing takes effect before it is durable (C1; the
``metadata-no-fsync`` bug skips the fsync). ``open`` replays the file at start; a torn last line (a crash
mid-write) is cut off and reported, like a torn segment tail. Brokers pull with ``read_from``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from reference_impl.protocol.controller_loop import metadata_batches_from
from reference_impl.protocol.records import record_from_dict, to_dict

FILE_NAME = "metadata.log"


class MetadataLog:
    """An append-only, fsynced JSONL log of metadata record batches with an in-memory copy for readers."""

    def __init__(self, directory: str, fsync: bool = True) -> None:
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, FILE_NAME)
        self.fsync = fsync
        self.recovery_notes: list[str] = []
        # (base_offset, [record dicts]) per batch, in order; the dict form is what brokers are sent.
        self._batches: list[tuple[int, list[dict[str, Any]]]] = []
        self._end = 0
        self._load()
        self._fh = open(self.path, "ab")

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
                    for r in records:
                        record_from_dict(r)
                    if base != self._end or not records:
                        problem = f"base offset {base} does not continue the log at {self._end}"
                except (ValueError, KeyError, TypeError) as exc:
                    problem = f"unparseable batch ({exc})"
            if problem:
                self.recovery_notes.append(f"{self.path}: truncated {len(data) - pos} bytes at {pos}: {problem}")
                with open(self.path, "r+b") as fh:
                    fh.truncate(pos)
                    os.fsync(fh.fileno())
                return
            self._batches.append((base, records))
            self._end = base + len(records)
            pos = nl + 1

    @property
    def end_offset(self) -> int:
        """The offset the next record will get (number of records so far)."""
        return self._end

    def replay_items(self) -> list[tuple[Any, int]]:
        """Every record with its offset, decoded, in order (for the controller's replay at start)."""
        return [(record_from_dict(r), base + i) for base, recs in self._batches for i, r in enumerate(recs)]

    def append(self, records: list[Any]) -> list[int]:
        """Write one batch durably (C1) and return the offsets its records got. Empty input: no write."""
        if not records:
            return []
        dicts = [to_dict(r) for r in records]
        base = self._end
        line = json.dumps({"base_offset": base, "records": dicts}, separators=(",", ":")).encode() + b"\n"
        self._fh.write(line)
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())
        self._batches.append((base, dicts))
        self._end = base + len(records)
        return list(range(base, self._end))

    def read_from(self, offset: int, max_records: int = 10_000) -> list[tuple[int, list[dict[str, Any]]]]:
        """Whole batches starting at ``offset`` (which must be a batch boundary or the end), up to about
        ``max_records`` records (at least one batch). Raises ``ValueError`` for an offset inside a batch or
        beyond the end: a broker asking that has a metadata log that is not a prefix of ours (I5)."""
        return metadata_batches_from(self._batches, self._end, offset, max_records)

    def close(self) -> None:
        """Close the file."""
        self._fh.close()
