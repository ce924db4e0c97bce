"""On-disk framing of one log batch inside a segment file.

A frame is ``u32 body_length | u32 crc32c(body) | body`` with
``body = i64 base_offset | i32 record_count | i32 epoch | i64 producer_id | i16 producer_epoch |
i32 base_sequence | i64 max_timestamp | payload`` (big-endian, as Kafka's own formats). The payload is the
opaque Kafka v2 record batch the server hands to the log; the frame's own CRC lets recovery find a torn
or corrupt tail whatever the payload is (the payload's inner CRC is the wire layer's business).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

PREFIX = struct.Struct(">II")
HEADER = struct.Struct(">qiiqhiq")
PREFIX_SIZE = PREFIX.size
HEADER_SIZE = HEADER.size
# A frame larger than this is treated as corruption during recovery (Kafka's message.max.bytes is ~1 MiB;
# the broker refuses larger batches long before they reach the log).
MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class FrameHeader:
    """The batch fields stored in a frame (everything but the payload)."""

    base_offset: int
    record_count: int
    epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        """The offset just after this batch's last record."""
        return self.base_offset + self.record_count


def encode_frame(header: FrameHeader, payload: bytes) -> bytes:
    """The frame bytes for one batch."""
    body = HEADER.pack(header.base_offset, header.record_count, header.epoch, header.producer_id,
                       header.producer_epoch, header.base_sequence, header.max_timestamp) + bytes(payload)
    return PREFIX.pack(len(body), crc32c.crc32c(body)) + body


class CorruptFrame(Exception):
    """A frame failed validation (used only inside storage; recovery turns it into a truncation)."""


def decode_frame(buf: bytes | memoryview, pos: int) -> tuple[FrameHeader, bytes, int]:
    """Decode the frame at ``pos`` of ``buf``: (header, payload, next position). Raises ``CorruptFrame``."""
    if pos + PREFIX_SIZE > len(buf):
        raise CorruptFrame(f"truncated frame prefix at {pos}")
    length, crc = PREFIX.unpack_from(buf, pos)
    if length < HEADER_SIZE or length > MAX_BODY:
        raise CorruptFrame(f"implausible frame length {length} at {pos}")
    start, end = pos + PREFIX_SIZE, pos + PREFIX_SIZE + length
    if end > len(buf):
        raise CorruptFrame(f"frame at {pos} runs past the end ({end} > {len(buf)})")
    body = bytes(buf[start:end])
    if crc32c.crc32c(body) != crc:
        raise CorruptFrame(f"CRC mismatch in frame at {pos}")
    header = FrameHeader(*HEADER.unpack_from(body, 0))
    if header.record_count < 1:
        raise CorruptFrame(f"frame at {pos} has record_count {header.record_count}")
    return header, body[HEADER_SIZE:], end
