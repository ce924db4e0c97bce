"""Record batches (magic v2) as they travel in Produce and Fetch: header parsing, CRC-32C, offset rewrite.

Layout of a v2 batch header (61 bytes, big-endian), as Kafka's ``DefaultRecordBatch`` defines it::
    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8 |
    17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64 |
    35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32 |
    57 recordCount int32 | 61 records...

``batchLength`` counts the bytes after the length field itself (from offset 12). The CRC-32C covers
everything from ``attributes`` to the end of the batch, so a leader can stamp the base offset and its
leader epoch (L2) into a producer's batch WITHOUT recomputing the CRC — and a corrupted record body is
still detected end to end. Producers' batches are rejected with CORRUPT_MESSAGE when the CRC or framing
is wrong (never appended, never a crash).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c
from kafka.record.default_records import DefaultRecordBatch

from reference_impl.protocol.errors import Errors

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part of a batch not counted by batchLength
MAGIC_V2 = 2
CRC_START = 21
_HEADER = struct.Struct(">qiibIhiqqqhii")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20


class CorruptBatch(ValueError):
    """Bytes that are not a valid v2 record batch (bad framing, magic or CRC)."""


@dataclass(frozen=True)
class BatchHeader:
    """The fixed header of one v2 record batch; ``size`` is the whole batch in bytes."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Size of the whole batch in bytes (header included)."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Offset after the batch's last record."""
        return self.last_offset + 1

    @property
    def is_transactional(self) -> bool:
        """True for a transactional batch (attribute bit 4)."""
        return bool(self.attributes & _TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """True for a control batch (attribute bit 5)."""
        return bool(self.attributes & _CONTROL)

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record (-1 when the batch carries no sequence), wrapping as Kafka."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def parse_batch_header(data: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the batch header at ``pos``; raise ``CorruptBatch`` when it is truncated or not magic v2."""
    if len(data) - pos < HEADER_SIZE:
        raise CorruptBatch(f"truncated batch header at {pos}: {len(data) - pos} bytes")
    header = BatchHeader(*_HEADER.unpack_from(data, pos))
    if header.magic != MAGIC_V2:
        raise CorruptBatch(f"batch at {pos} has magic {header.magic}, only v2 is supported")
    if header.size < HEADER_SIZE or header.last_offset_delta < 0 or header.record_count < 0:
        raise CorruptBatch(f"batch at {pos} has impossible length/offset delta/count")
    if pos + header.size > len(data):
        raise CorruptBatch(f"batch at {pos} claims {header.size} bytes, {len(data) - pos} present")
    return header


def compute_crc(data: bytes | memoryview, pos: int, header: BatchHeader) -> int:
    """CRC-32C of the batch at ``pos`` over the bytes the v2 format protects (attributes to the end)."""
    return crc32c.crc32c(bytes(memoryview(data)[pos + CRC_START : pos + header.size]))


def iter_batches(data: bytes | memoryview, verify_crc: bool = True) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each batch in ``data``; raise ``CorruptBatch`` on the first bad one.

    Trailing bytes too short for a batch are corruption here (producers send whole batches); a log reader
    that tolerates a torn tail should catch ``CorruptBatch`` and cut at the last good position.
    """
    pos = 0
    while pos < len(data):
        header = parse_batch_header(data, pos)
        if verify_crc and compute_crc(data, pos, header) != header.crc:
            raise CorruptBatch(f"CRC mismatch in batch at {pos}")
        yield pos, header
        pos += header.size


def validate_produce_records(data: bytes | memoryview | None) -> tuple[Errors, list[BatchHeader]]:
    """Check a Produce request's records: ``(NONE, headers)`` or ``(CORRUPT_MESSAGE / INVALID_RECORD, [])``.

    Empty or missing records are INVALID_RECORD (Kafka refuses produce requests without batches).
    """
    if not data:
        return Errors.INVALID_RECORD, []
    try:
        headers = [h for _, h in iter_batches(data)]
    except CorruptBatch:
        return Errors.CORRUPT_MESSAGE, []
    return Errors.NONE, headers


def rewrite_batch(batch: bytes | bytearray | memoryview, base_offset: int, partition_leader_epoch: int) -> bytes:
    """Return one batch with its base offset and partition leader epoch replaced (CRC unchanged: both
    fields lie before the CRC-protected range)."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, partition_leader_epoch)
    return bytes(out)


def assign_offsets(data: bytes | memoryview, first_offset: int, leader_epoch: int) -> tuple[bytes, int]:
    """Stamp consecutive offsets starting at ``first_offset`` and ``leader_epoch`` (L2) into every batch
    of ``data``; return ``(new_bytes, next_offset)``. Raises ``CorruptBatch`` on bad input."""
    out = bytearray(data)
    offset = first_offset
    for pos, header in iter_batches(data, verify_crc=False):
        struct.pack_into(">q", out, pos, offset)
        struct.pack_into(">i", out, pos + 12, leader_epoch)
        offset += header.last_offset_delta + 1
    return bytes(out), offset


@dataclass(frozen=True)
class DecodedRecord:
    """One record decoded from a batch (for tests, tools and checkers)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    leader_epoch: int


def decode_records(data: bytes | memoryview) -> list[DecodedRecord]:
    """Decode every record of every batch in ``data`` with kafka-python's record classes (control
    batches skipped). Raises ``CorruptBatch`` on a bad batch."""

    out: list[DecodedRecord] = []
    for pos, header in iter_batches(data):
        if header.is_control:
            continue
        batch = DefaultRecordBatch(bytes(memoryview(data)[pos : pos + header.size]))
        for record in batch:
            out.append(
                DecodedRecord(
                    record.offset,
                    record.timestamp,
                    record.key,
                    record.value,
                    tuple(record.headers),
                    header.partition_leader_epoch,
                )
            )
    return out
