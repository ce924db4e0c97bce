"""Transactions (KIP-98) in the sans-IO core: the coordinator's state machine and its log records.

Theory of operation
===================
A transactional producer asks the coordinator of its transactional id (the leader of the
``__transaction_state`` partition the id hashes to, ``partitioning``) for a producer id and epoch,
registers each partition before writing to it, and ends the transaction with a commit or an abort. The
coordinator (``coordinator.TransactionCoordinator``) decides every step as snapshot records
(``state.TxnMetadata``) that the shell appends to the state partition through the ordinary replication
path; the state is whatever replaying that log gives, so it moves with the partition's leadership and
every fault that hits the partition hits the coordinator too. Once the outcome (PrepareCommit /
PrepareAbort) is durable, markers go to every partition of the transaction; once all are written the
transaction completes (CompleteCommit / CompleteAbort).

The partition side (the markers, the last stable offset, the aborted-transaction index and fencing of old
producer epochs) lives with the producer state of each partition (``reference_impl.protocol.producer_state``).

What this package does not do: it opens no connection, keeps no clock (``now_ms`` is an argument) and
allocates no producer id of its own (the shell hands one in).
"""

from reference_impl.protocol.txn.coordinator import (
    MarkerJob,
    TransactionCoordinator,
    TxnDecision,
    produce_error_for_verification,
)
from reference_impl.protocol.txn.partitioning import TRANSACTION_STATE_TOPIC, java_string_hash, partition_for
from reference_impl.protocol.txn.state import TxnMetadata, TxnState

__all__ = ["MarkerJob", "TRANSACTION_STATE_TOPIC", "TransactionCoordinator", "TxnDecision", "TxnMetadata",
           "TxnState", "java_string_hash", "partition_for", "produce_error_for_verification"]
