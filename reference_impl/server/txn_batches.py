"""KIP-98 fields of v2 record batches: reading a batch's attribute bits and marker type, writing markers.

The protocol core never parses record bytes: it is told whether a batch is transactional or a control
batch, and which marker a control batch holds (``LogBatch.attributes`` / ``control_type``). This module is
where the server reads those from the bytes (for batches from producers, from a leader's fetch answer and
from a log recovered at start) and builds the one kind of batch the broker writes itself, a transaction
marker: a control batch (attribute bits 4 and 5) with one record whose key is ``(version 0, type)``
(ABORT = 0, COMMIT = 1) and whose value is ``(version 0, coordinator epoch)``, as Kafka's
``EndTransactionMarker`` encodes it.
"""

from __future__ import annotations

import struct

import crc32c

from reference_impl.protocol.log import CONTROL_BIT, NO_CONTROL, TRANSACTIONAL_BIT

_ATTRIBUTES_AT = 21
_RECORDS_AT = 61


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's record fields) at ``pos``: (value, next position)."""
    shift, raw = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        if raw & ~0x7F:
            out.append((raw & 0x7F) | 0x80)
            raw >>= 7
        else:
            out.append(raw)
            return bytes(out)


def batch_txn_fields(payload: bytes | memoryview) -> tuple[int, int]:
    """``(attributes, control_type)`` of one v2 batch (control_type ``NO_CONTROL`` unless a marker, or
    when the payload is too short to be a batch: the core's tests and the simulator use opaque payloads)."""
    if len(payload) < _RECORDS_AT or payload[16] != 2 or struct.unpack_from(">i", payload, 8)[0] != len(payload) - 12:
        return 0, NO_CONTROL  # not one whole v2 batch
    attributes = struct.unpack_from(">h", payload, _ATTRIBUTES_AT)[0]
    if not attributes & CONTROL_BIT:
        return attributes, NO_CONTROL
    try:
        body = bytes(payload[_RECORDS_AT:])
        pos = _read_varint(body, 0)[1]  # the first record's length
        pos += 1  # record attributes
        pos = _read_varint(body, pos)[1]  # timestamp delta
        pos = _read_varint(body, pos)[1]  # offset delta
        key_length, pos = _read_varint(body, pos)
        if key_length < 4:
            return attributes, NO_CONTROL
        _version, control_type = struct.unpack_from(">hh", body, pos)
    except (IndexError, ValueError, struct.error):
        return attributes, NO_CONTROL
    return attributes, control_type


def marker_batch(producer_id: int, producer_epoch: int, control_type: int, coordinator_epoch: int,
                 timestamp_ms: int) -> bytes:
    """A complete v2 control batch holding one transaction marker (base offset 0: the leader stamps it)."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    record_body = (b"\x00" + _varint(0) + _varint(0) + _varint(len(key)) + key + _varint(len(value)) + value
                   + _varint(0))
    records = _varint(len(record_body)) + record_body
    attributes = TRANSACTIONAL_BIT | CONTROL_BIT
    after_crc = struct.pack(">hiqqqhii", attributes, 0, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                            -1, 1) + records
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partition leader epoch + magic + crc + the rest
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + after_crc
