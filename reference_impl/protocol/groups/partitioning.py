"""Which ``__consumer_offsets`` partition holds a group: Kafka's rule (``reference_impl.protocol.kafka_hash``)."""

from __future__ import annotations

from reference_impl.protocol.kafka_hash import java_string_hash, kafka_abs, key_partition

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 3

__all__ = ["DEFAULT_OFFSETS_PARTITIONS", "OFFSETS_TOPIC", "java_string_hash", "kafka_abs", "partition_for"]


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``."""
    return key_partition(group_id, partitions)
