"""The controller's work around its core, without the IO: committing results and the periodic changes.

A controller process (and the deterministic simulator, which runs the same loop in memory) does two
things with the ``Controller`` besides answering requests:

- **commit** a ``ControllerResult``: make its records durable at consecutive offsets (the caller's job:
  C1 says durable first), then ``replay_committed`` applies them in order and returns the trace events
  they imply (``trace_events.controller_record_events``);
- **timers**, every ``TIMER_INTERVAL_MS``: ``periodic_changes`` yields, one at a time, the changes due now:
  session timeouts (C6, one fenced broker per change, repeated until none is expired), the next KIP-435
  steps, and opt-in unclean elections (C12). It is a generator on purpose: each change is computed from
  the state the previous one left, so the caller must commit a result before asking for the next (C1);
- **serve the log** to brokers: ``metadata_batches_from`` picks the whole batches a pull gets (records
  committed together stay together, so a broker applies them as one materialized change).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from reference_impl.protocol.controller import Controller, ControllerResult
from reference_impl.protocol.records import PartitionChangeRecord
from reference_impl.protocol.trace_events import controller_record_events

T = TypeVar("T")

TIMER_INTERVAL_MS = 100
MAX_FENCES_PER_ROUND = 100  # a bound on one timer round, so a mass expiry cannot starve requests


@dataclass(frozen=True)
class PeriodicChange:
    """One change a timer round found due: ``kind`` is ``session-timeout``, ``reassignment-steps`` or
    ``unclean-elections``; ``result`` is the core's answer (its records may be empty)."""

    kind: str
    result: ControllerResult


def replay_committed(controller: Controller, records: Sequence[Any], offsets: Sequence[int]) -> list[dict]:
    """Replay records already made durable at ``offsets``; return the trace events they imply."""
    events: list[dict] = []
    for record, offset in zip(records, offsets, strict=True):
        before = None
        if isinstance(record, PartitionChangeRecord):
            state = controller.partition(record.topic_id, record.partition_id)
            before = state.copy() if state is not None else None
        controller.replay(record, offset)
        events += controller_record_events(controller, record, offset, before)
    return events


def periodic_changes(controller: Controller, now_ms: int) -> Iterator[PeriodicChange]:
    """The changes one timer round makes, lazily (commit each before taking the next, C1)."""
    for _ in range(MAX_FENCES_PER_ROUND):
        result = controller.check_session_timeouts(now_ms)
        if not result.records:
            break
        yield PeriodicChange("session-timeout", result)
    yield PeriodicChange("reassignment-steps", controller.advance_incremental_reassignments())
    yield PeriodicChange("unclean-elections", controller.maybe_unclean_elect())


def metadata_batches_from(batches: Sequence[tuple[int, Sequence[T]]], end_offset: int, offset: int,
                          max_records: int) -> list[tuple[int, Sequence[T]]]:
    """The whole ``(base offset, records)`` batches a pull from ``offset`` gets: from the batch starting
    there, as many as fit in about ``max_records`` (at least one); empty at the end. Raises ``ValueError``
    for an offset inside a batch or past the end: a broker asking that has a metadata log that is not a
    prefix of the controller's (I5)."""
    if offset == end_offset:
        return []
    lo, hi = 0, len(batches)
    while lo < hi:
        mid = (lo + hi) // 2
        if batches[mid][0] < offset:
            lo = mid + 1
        else:
            hi = mid
    if lo >= len(batches) or batches[lo][0] != offset:
        raise ValueError(f"offset {offset} is not a batch boundary of the metadata log (end {end_offset})")
    out: list[tuple[int, Sequence[T]]] = []
    count = 0
    for base, records in batches[lo:]:
        if out and count + len(records) > max_records:
            break
        out.append((base, records))
        count += len(records)
    return out
