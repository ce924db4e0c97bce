"""What a replica's log holds, in a form the checkers can compare across replicas (I4, I16).

A summary is the log as epoch ranges ``[epoch, start, end, range_digest, prefix_digest]`` (``end``
exclusive) plus the HWM and ``hwm_digest``. ``range_digest`` covers the batches of that epoch range alone
(two replicas with the same range hold the same records at the same offsets and epoch: I16);
``prefix_digest`` covers every batch from the log start to the range's end, and ``hwm_digest`` every batch
below the HWM, so two replicas that report a digest at the same offset agree on the whole prefix below
it exactly when the digests are equal (I4 below both HWMs). A batch contributes its base offset, record
count, epoch and payload: a record's value and position.

Digests are 8-byte BLAKE2b in hex: a collision between two different logs of one run is not a concern,
and the summary stays small (one entry per leader epoch).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from typing import Any

_HEADER = struct.Struct(">qiq")


def _new() -> Any:
    return hashlib.blake2b(digest_size=8)


EMPTY_DIGEST = _new().hexdigest()


def log_summary(batches: Iterable[Any], log_start: int, hwm: int) -> dict[str, Any]:
    """The summary of a log whose batches (in offset order) start at ``log_start``, with HWM ``hwm``:
    ``{"log_start", "leo", "hwm", "hwm_digest", "ranges"}`` (see the module docstring). ``hwm_digest`` is
    None when the HWM falls inside a batch (it never does for a HWM the protocol computed)."""
    ranges: list[list[Any]] = []
    prefix = _new()
    current = None
    hwm_digest = EMPTY_DIGEST if hwm <= log_start else None
    end = log_start
    for b in batches:
        if current is None or ranges[-1][0] != b.epoch:
            if current is not None:
                ranges[-1][3], ranges[-1][4] = current.hexdigest(), prefix.hexdigest()
            current = _new()
            ranges.append([b.epoch, b.base_offset, b.base_offset, None, None])
        chunk = _HEADER.pack(b.base_offset, b.record_count, b.epoch) + b.payload
        current.update(chunk)
        prefix.update(chunk)
        end = b.base_offset + b.record_count
        ranges[-1][2] = end
        if end == hwm:
            hwm_digest = prefix.hexdigest()
    if current is not None:
        ranges[-1][3], ranges[-1][4] = current.hexdigest(), prefix.hexdigest()
    return {"log_start": log_start, "leo": end, "hwm": hwm, "hwm_digest": hwm_digest, "ranges": ranges}
