"""Kafka's partition-of-a-key rule for its internal topics, bit for bit.

Kafka places a group (``__consumer_offsets``) and a transactional id (``__transaction_state``) at
``Utils.abs(key.hashCode()) % partitions``, where ``hashCode`` is Java's ``String.hashCode`` (31-polynomial
over UTF-16 code units, 32-bit wrap-around) and ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0. Using the
same function means a key lands on the same partition index here as on a Kafka cluster with the same
partition count.
"""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` becomes 0."""
    return 0 if n == -(1 << 31) else abs(n)


def key_partition(key: str, partitions: int) -> int:
    """The partition of ``key`` among ``partitions``."""
    if partitions < 1:
        raise ValueError("an internal topic needs at least one partition")
    return kafka_abs(java_string_hash(key)) % partitions
