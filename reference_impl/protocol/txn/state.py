"""A transactional id's state as the coordinator keeps it and as ``__transaction_state`` stores it.

``TxnMetadata`` is one snapshot of a transactional id (Kafka's ``TransactionMetadata``: producer id and
epoch, transaction timeout, state, the partitions in the transaction and two timestamps). Every change the
coordinator makes is written to the log as a whole new snapshot (Kafka's ``TransactionLogValue``), so
replaying the log in order rebuilds the state exactly; ``to_dict`` / ``from_dict`` are that record's form.

The states and the transitions between them are the table ``ALLOWED_PREVIOUS``: a snapshot whose state
may not follow the current one is a broken invariant (``InvariantViolation`` in ``replay``), never a
silent overwrite.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

NO_PRODUCER_ID = -1
MAX_PRODUCER_EPOCH = 32767  # int16: past it the coordinator hands out a new producer id (KIP-360)


class TxnState(enum.Enum):
    """KIP-98's transaction states (Kafka's names, as they appear in the log and in DescribeTransactions)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def is_prepare(self) -> bool:
        """True while markers are being written (the outcome is decided, the partitions not told yet)."""
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        """True when no transaction is open (a new one may start)."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


# Which state may precede each state (Kafka's ``TransactionState.validPreviousStates``). ``None`` stands
# for "no state yet": only Empty starts a transactional id.
ALLOWED_PREVIOUS: dict[TxnState, frozenset[TxnState | None]] = {
    TxnState.EMPTY: frozenset({None, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
}


@dataclass(frozen=True)
class TxnMetadata:
    """One snapshot of a transactional id (the value of its ``__transaction_state`` record)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: tuple[tuple[str, int], ...] = ()  # sorted (topic, partition) pairs in the transaction
    txn_start_ms: int = -1  # when the open transaction added its first partition (-1: none open)
    last_update_ms: int = -1
    def __post_init__(self) -> None:
        # sorted and deduplicated, so equal states compare equal whatever order partitions were added in
        object.__setattr__(self, "partitions", tuple(sorted({(str(t), int(p)) for t, p in self.partitions})))

    def to_dict(self) -> dict[str, Any]:
        """The log record's JSON form."""
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "timeout_ms": self.timeout_ms, "state": self.state.value,
                "partitions": [[t, p] for t, p in self.partitions], "txn_start_ms": self.txn_start_ms,
                "last_update_ms": self.last_update_ms}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TxnMetadata:
        """Inverse of ``to_dict`` (raises ``KeyError`` / ``ValueError`` on a malformed record)."""
        return cls(str(d["transactional_id"]), int(d["producer_id"]), int(d["producer_epoch"]),
                   int(d["timeout_ms"]), TxnState(d["state"]), tuple((t, p) for t, p in d["partitions"]),
                   int(d.get("txn_start_ms", -1)), int(d.get("last_update_ms", -1)))
