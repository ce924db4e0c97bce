"""The consumer protocol's assignment bytes, read: which topic-partitions a SyncGroup answer hands a member.

Theory of operation. The group coordinator treats assignments as opaque bytes: the group's leader computes
them and every member decodes its own. Only the trace needs to know what they say (I24: no topic-partition
is handed to two members of one generation), so this module reads Kafka's ``ConsumerProtocolAssignment``
(``protocol_type`` ``"consumer"``), versions 0-3, which share one layout:

    version int16, assigned partitions [topic string, partitions [int32]], user data nullable bytes

As Kafka's own reader does, a newer version is read with this layout (new versions may only append
fields), so bytes after the assigned partitions are not looked at. An empty assignment (the leader gave the
member nothing; the coordinator stores ``b""``) holds no partitions.

Errors are values: bytes that do not follow the layout give ``Undecodable`` with the reason, never an
exception, so a member whose assignment cannot be read is traced as such and the rule skips it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class ConsumerAssignment:
    """What a member was handed: ``partitions`` as sorted ``(topic, partition)`` pairs; ``version`` is
    None for an empty assignment."""

    version: int | None
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Undecodable:
    """Assignment bytes this module cannot read, and why."""

    reason: str


class _Short(Exception):
    """The bytes end inside a field (internal: turned into ``Undecodable``)."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise _Short(f"{len(self.data)} bytes end inside a field at byte {self.pos}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        length = self.take(">h")
        if length < 0:
            raise ValueError("a null topic name")
        if self.pos + length > len(self.data):
            raise _Short(f"a topic name of {length} bytes runs past the end")
        raw = self.data[self.pos:self.pos + length]
        self.pos += length
        return raw.decode("utf-8")


def decode_assignment(data: bytes, protocol_type: str | None = CONSUMER_PROTOCOL_TYPE) -> ConsumerAssignment | Undecodable:
    """The topic-partitions ``data`` (a SyncGroup assignment of a group of ``protocol_type``) hands its member."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return Undecodable(f"protocol type {protocol_type!r} is not the consumer protocol")
    if not data:
        return ConsumerAssignment(None, ())
    reader = _Reader(bytes(data))
    try:
        version = reader.take(">h")
        if version < 0:
            return Undecodable(f"version {version}")
        out: set[tuple[str, int]] = set()
        topics = reader.take(">i")
        for _ in range(max(topics, 0)):  # -1: a null array, no partitions
            topic = reader.string()
            count = reader.take(">i")
            for _ in range(max(count, 0)):
                out.add((topic, reader.take(">i")))
    except (_Short, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        return Undecodable(str(exc))
    return ConsumerAssignment(version, tuple(sorted(out)))
