"""Reading consumer-protocol assignments: what kafka-python's leader writes, empty ones, newer versions and
bytes that do not follow the layout (an ``Undecodable`` value, never an exception)."""

from __future__ import annotations

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from reference_impl.protocol.groups.consumer_protocol import (
    ConsumerAssignment,
    Undecodable,
    decode_assignment,
)


def encoded(version: int, topics: dict[str, list[int]], user_data: bytes | None = b"") -> bytes:
    value = ConsumerProtocolAssignment(version=version, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=ps) for t, ps in topics.items()],
        user_data=user_data)
    return bytes(value.encode(version=version))


def test_what_kafka_python_writes_is_read_back_in_every_version():
    for version in (0, 1, 2, 3):
        got = decode_assignment(encoded(version, {"q": [2, 0], "r": [1]}, b"x"))
        assert got == ConsumerAssignment(version, (("q", 0), ("q", 2), ("r", 1)))


def test_an_empty_assignment_holds_nothing():
    assert decode_assignment(b"") == ConsumerAssignment(None, ())
    assert decode_assignment(encoded(0, {})) == ConsumerAssignment(0, ())


def test_a_newer_version_is_read_with_the_known_layout():
    data = bytearray(encoded(0, {"q": [1]}, None)) + b"future fields"
    data[0:2] = (9).to_bytes(2, "big")
    assert decode_assignment(bytes(data)) == ConsumerAssignment(9, (("q", 1),))


def test_bytes_off_the_layout_are_undecodable_values():
    good = encoded(0, {"q": [1, 2]})
    for bad in (good[:9], b"\x00", b"\xff\xff", b"\x00\x00\x00\x00\x00\x01\xff\xff"):
        assert isinstance(decode_assignment(bad), Undecodable), bad
    assert isinstance(decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00\x01\xff\x00\x00\x00\x00"), Undecodable)
    assert "protocol type" in decode_assignment(good, "connect").reason
