"""Which ``__transaction_state`` partition owns a transactional id: Kafka's ``partitionFor``
(``reference_impl.protocol.kafka_hash``)."""

from __future__ import annotations

from reference_impl.protocol.kafka_hash import java_string_hash, key_partition

TRANSACTION_STATE_TOPIC = "__transaction_state"

__all__ = ["TRANSACTION_STATE_TOPIC", "java_string_hash", "partition_for"]


def partition_for(transactional_id: str, partitions: int) -> int:
    """The state partition of ``transactional_id`` among ``partitions``."""
    return key_partition(transactional_id, partitions)
