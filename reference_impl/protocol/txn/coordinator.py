"""The transaction coordinator of one ``__transaction_state`` partition (KIP-98), sans-IO.

Kafka's ``TransactionCoordinator`` + ``TransactionStateManager`` for the transactional ids that hash to one
state partition, written the controller's way: every request handler computes the snapshot records it
wants written and the answer to give once they are durable, **without touching state**; ``replay`` is
the only mutator of a live coordinator; ``load`` rebuilds one from the log read back when the partition's
leadership is gained. The shell appends the records to the state partition through the ordinary
replication path (acks=all); only when the append is acknowledged does it replay them and answer. An
append that fails calls ``abandon``, the client is told NOT_COORDINATOR, so it looks the coordinator up
again (Kafka does the same), and the shell reloads the coordinator from the log (the record may be there
after all).

While a transactional id has records in flight (``pending``), every other request for it is answered
CONCURRENT_TRANSACTIONS (Kafka's ``pendingState``), so two writers never race on one id.

The rules, in Kafka's order of checks:

- **InitProducerId** (transactional): a new id gets a fresh producer id at epoch 0 and state Empty. A known
  id whose transaction is complete gets its epoch bumped (a new producer id once the epoch is exhausted),
  which fences every older producer instance. A known id with an Ongoing transaction is fenced first:
  the coordinator writes PrepareAbort **with the epoch bumped**, aborts the transaction with markers of
  that epoch, and answers CONCURRENT_TRANSACTIONS; the client retries and then gets the next epoch.
  Prepare* in progress -> CONCURRENT_TRANSACTIONS.
- **AddPartitionsToTxn**: producer id must match (else INVALID_PRODUCER_ID_MAPPING), epoch must be the
  current one (older: PRODUCER_FENCED); Prepare* -> CONCURRENT_TRANSACTIONS; otherwise the partitions join
  and the state becomes Ongoing (the transaction's start time is set when it begins).
- **EndTxn**: the same fencing; Ongoing -> PrepareCommit / PrepareAbort, answered once that record is
  durable (the outcome is decided there); the markers then go to every partition (``markers``), and
  ``complete`` writes CompleteCommit / CompleteAbort once all are written. A retried EndTxn whose outcome is
  already decided the same way is answered OK (CONCURRENT_TRANSACTIONS while Prepare*), the opposite
  outcome or an EndTxn with no transaction is INVALID_TXN_STATE.
- **Timeouts**: an Ongoing transaction older than its timeout is aborted by the coordinator with the epoch
  bumped (``expired``), so the producer that let it expire is fenced.
- **Leadership gain**: every id left in Prepare* has its markers sent again (``incomplete``).
- **Verification** (KIP-890 part 1): a partition leader about to open a transaction asks whether the
  partition is in the producer's ongoing transaction (``verify``); nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from reference_impl.protocol.errors import OK, Errors, InvariantViolation, KafkaError, error
from reference_impl.protocol.txn.state import ALLOWED_PREVIOUS, MAX_PRODUCER_EPOCH, TxnMetadata, TxnState

MAX_TRANSACTION_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms (Kafka's default: 15 minutes)


@dataclass(frozen=True)
class TxnDecision:
    """What a handler decided: the snapshots to write (in order) and the answer once they are durable.

    With ``records`` empty the answer is final at once. ``producer_id`` / ``producer_epoch`` are the
    InitProducerId answer.
    """

    error: KafkaError = OK
    records: tuple[TxnMetadata, ...] = ()
    producer_id: int = -1
    producer_epoch: int = -1


def produce_error_for_verification(code: Errors) -> Errors:
    """What a producer is told when the verification of its batch (KIP-890 part 1) did not succeed, as
    Kafka's partition leaders answer: trouble reaching or with the coordinator becomes NOT_ENOUGH_REPLICAS,
    which every producer retries (a produce answer of NOT_COORDINATOR would mean nothing to it); a fenced
    epoch is INVALID_PRODUCER_EPOCH, as for a batch the partition itself fences; the rest as answered."""
    if code in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                Errors.CONCURRENT_TRANSACTIONS, Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT):
        return Errors.NOT_ENOUGH_REPLICAS
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    return code


@dataclass(frozen=True)
class MarkerJob:
    """The markers one decided transaction needs: ``commit`` or abort, for ``partitions``, stamped with
    the producer id and epoch (a partition refuses data of an older epoch once it has the marker)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]


class TransactionCoordinator:
    """The transactional ids of one state partition (see the module docstring)."""

    def __init__(self, partition: int, coordinator_epoch: int = 0) -> None:
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch  # the state partition's leader epoch (markers carry it)
        self.txns: dict[str, TxnMetadata] = {}
        self.pending: dict[str, tuple[TxnMetadata, ...]] = {}

    # ------------------------------------------------------------------ the only mutator
    def replay(self, record: TxnMetadata) -> None:
        """Apply one snapshot (written by this coordinator or read back from the log)."""
        current = self.txns.get(record.transactional_id)
        before = current.state if current is not None else None
        if before not in ALLOWED_PREVIOUS[record.state]:
            raise InvariantViolation(f"{record.transactional_id}: {before} -> {record.state.value} is not a "
                                     "transaction state transition")
        self.txns[record.transactional_id] = record
        waiting = self.pending.get(record.transactional_id)
        if waiting and waiting[-1] == record:
            del self.pending[record.transactional_id]

    def load(self, records: Iterable[TxnMetadata]) -> None:
        """Rebuild from the state partition's log (on leadership gain): forget everything; each id's last
        snapshot is its state. No transition is checked here: a write whose acknowledgement was lost may
        be in the log after all, followed by one computed without it (Kafka's loader, reading a compacted
        topic, also takes the last value of each id)."""
        self.txns.clear()
        self.pending.clear()
        for record in records:
            self.txns[record.transactional_id] = record

    def begin(self, decision: TxnDecision) -> TxnDecision:
        """Mark the decision's records as in flight for their ids (until replayed or abandoned)."""
        for record in decision.records:
            self.pending[record.transactional_id] = decision.records
        return decision

    def abandon(self, transactional_id: str) -> None:
        """The append of an id's pending records failed: forget them (the durable state is unchanged)."""
        self.pending.pop(transactional_id, None)

    # ------------------------------------------------------------------ requests
    def _busy(self, transactional_id: str) -> TxnDecision | None:
        if transactional_id in self.pending:
            return TxnDecision(error(Errors.CONCURRENT_TRANSACTIONS, "a state change is being written"))
        return None

    def init_producer_id(self, transactional_id: str, timeout_ms: int, now_ms: int, new_producer_id: int,
                         expected_producer_id: int = -1, expected_epoch: int = -1) -> TxnDecision:
        """InitProducerId with a transactional id. ``new_producer_id`` is a fresh id the shell allocated,
        used only for a new transactional id or an exhausted epoch."""
        if not transactional_id:
            return TxnDecision(error(Errors.INVALID_REQUEST, "empty transactional id"))
        if not 0 < timeout_ms <= MAX_TRANSACTION_TIMEOUT_MS:
            return TxnDecision(error(Errors.INVALID_TRANSACTION_TIMEOUT, f"{timeout_ms} ms"))
        busy = self._busy(transactional_id)
        if busy is not None:
            return busy
        current = self.txns.get(transactional_id)
        if current is None:
            record = TxnMetadata(transactional_id, new_producer_id, 0, timeout_ms, TxnState.EMPTY,
                                 last_update_ms=now_ms)
            return self.begin(TxnDecision(OK, (record,), record.producer_id, record.producer_epoch))
        if expected_producer_id >= 0 and (expected_producer_id, expected_epoch) != (
                current.producer_id, current.producer_epoch):
            # KIP-360: a producer re-initialising with an identity that is no longer the current one
            return TxnDecision(error(Errors.PRODUCER_FENCED, f"{expected_producer_id}/{expected_epoch} is not "
                                     f"{current.producer_id}/{current.producer_epoch}"))
        if current.state.is_prepare:
            return TxnDecision(error(Errors.CONCURRENT_TRANSACTIONS, f"{current.state.value} in progress"))
        if current.state == TxnState.ONGOING:
            # Fence the old producer: abort its transaction with the epoch bumped; the client retries.
            fence = self._bumped(current)
            abort = replace(fence, state=TxnState.PREPARE_ABORT, last_update_ms=now_ms)
            decision = self.begin(TxnDecision(OK, (abort,)))
            return TxnDecision(error(Errors.CONCURRENT_TRANSACTIONS, "aborting the fenced producer's "
                                     "transaction"), decision.records)
        bumped = replace(self._bumped(current), timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=(),
                         txn_start_ms=-1, last_update_ms=now_ms)
        if bumped.producer_epoch > MAX_PRODUCER_EPOCH:
            bumped = replace(bumped, producer_id=new_producer_id, producer_epoch=0)
        return self.begin(TxnDecision(OK, (bumped,), bumped.producer_id, bumped.producer_epoch))

    @staticmethod
    def _bumped(current: TxnMetadata) -> TxnMetadata:
        return replace(current, producer_epoch=current.producer_epoch + 1)

    def _fenced(self, current: TxnMetadata | None, producer_id: int, producer_epoch: int) -> TxnDecision | None:
        if current is None:
            return TxnDecision(error(Errors.INVALID_PRODUCER_ID_MAPPING, "unknown transactional id"))
        if producer_id != current.producer_id:
            return TxnDecision(error(Errors.INVALID_PRODUCER_ID_MAPPING,
                                     f"producer id {producer_id} != {current.producer_id}"))
        if producer_epoch != current.producer_epoch:
            return TxnDecision(error(Errors.PRODUCER_FENCED,
                                     f"epoch {producer_epoch} != current {current.producer_epoch}"))
        return None

    def _producer_txn(self, transactional_id: str, producer_id: int,
                      producer_epoch: int) -> tuple[TxnMetadata | None, TxnDecision | None]:
        """The id's state when the producer may act on it, else the refusal (busy coordinator, unknown id,
        another producer or epoch); the state is None exactly when there is a refusal."""
        busy = self._busy(transactional_id)
        if busy is not None:
            return None, busy
        current = self.txns.get(transactional_id)
        fenced = self._fenced(current, producer_id, producer_epoch)
        if fenced is not None:
            return None, fenced
        assert current is not None
        return current, None

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], now_ms: int) -> TxnDecision:
        """AddPartitionsToTxn: the partitions join the open transaction (which starts if none is open)."""
        current, refused = self._producer_txn(transactional_id, producer_id, producer_epoch)
        if refused is not None:
            return refused
        if current.state.is_prepare:
            return TxnDecision(error(Errors.CONCURRENT_TRANSACTIONS, f"{current.state.value} in progress"))
        wanted = set(current.partitions) if current.state == TxnState.ONGOING else set()
        added = wanted | {(t, p) for t, p in partitions}
        if current.state == TxnState.ONGOING and added == wanted:
            return TxnDecision(OK)  # nothing new: no record (a client retry)
        start = current.txn_start_ms if current.state == TxnState.ONGOING else now_ms
        record = replace(current, state=TxnState.ONGOING, partitions=tuple(added), txn_start_ms=start,
                         last_update_ms=now_ms)
        return self.begin(TxnDecision(OK, (record,)))

    def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
               partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Errors]:
        """KIP-890 part 1 (AddPartitionsToTxn with VerifyOnly, from a partition leader): is each partition
        in the producer's open transaction? Nothing is written. A write in flight for the id is not
        waited for (the leader's verification guard is the final check); a decided outcome (Prepare*) is
        CONCURRENT_TRANSACTIONS, a partition the transaction does not hold INVALID_TXN_STATE (Kafka 3.6;
        later versions say TRANSACTION_ABORTABLE to clients that know it)."""
        wanted = list(partitions)
        current = self.txns.get(transactional_id)
        fenced = self._fenced(current, producer_id, producer_epoch)
        if fenced is not None:
            return dict.fromkeys(wanted, fenced.error.code)
        assert current is not None
        if current.state.is_prepare:
            return dict.fromkeys(wanted, Errors.CONCURRENT_TRANSACTIONS)
        held = set(current.partitions) if current.state == TxnState.ONGOING else set()
        return {tp: Errors.NONE if tp in held else Errors.INVALID_TXN_STATE for tp in wanted}

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                now_ms: int) -> TxnDecision:
        """EndTxn: decide the open transaction's outcome (Prepare*); markers follow (``markers``)."""
        current, refused = self._producer_txn(transactional_id, producer_id, producer_epoch)
        if refused is not None:
            return refused
        state = current.state
        if state == TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            return self.begin(TxnDecision(OK, (replace(current, state=target, last_update_ms=now_ms),)))
        same = {TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT} if commit else {TxnState.PREPARE_ABORT,
                                                                                    TxnState.COMPLETE_ABORT}
        if state in same:
            # a retry of a decided outcome (Kafka answers CONCURRENT_TRANSACTIONS until the markers are in)
            return TxnDecision(error(Errors.CONCURRENT_TRANSACTIONS) if state.is_prepare else OK)
        return TxnDecision(error(Errors.INVALID_TXN_STATE, f"EndTxn({'commit' if commit else 'abort'}) in "
                                 f"state {state.value}"))

    # ------------------------------------------------------------------ markers and completion
    def markers(self, transactional_id: str) -> MarkerJob | None:
        """The markers a Prepare* transaction still needs (None if it is not in Prepare*)."""
        current = self.txns.get(transactional_id)
        if current is None or not current.state.is_prepare:
            return None
        return MarkerJob(transactional_id, current.producer_id, current.producer_epoch,
                         current.state == TxnState.PREPARE_COMMIT, current.partitions)

    def complete(self, transactional_id: str, now_ms: int) -> TxnDecision:
        """Every marker is written: Prepare* -> Complete* with no partitions left."""
        busy = self._busy(transactional_id)
        if busy is not None:
            return busy
        current = self.txns.get(transactional_id)
        if current is None or not current.state.is_prepare:
            return TxnDecision(error(Errors.INVALID_TXN_STATE, "no transaction waiting for its markers"))
        target = TxnState.COMPLETE_COMMIT if current.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        return self.begin(TxnDecision(OK, (replace(current, state=target, partitions=(), txn_start_ms=-1,
                                                   last_update_ms=now_ms),)))

    def incomplete(self) -> list[str]:
        """Ids whose outcome is decided but whose markers may be missing (resend on leadership gain)."""
        return sorted(t for t, m in self.txns.items() if m.state.is_prepare)

    def expired(self, now_ms: int) -> list[TxnDecision]:
        """Abort every Ongoing transaction older than its timeout, fencing its producer (epoch bump)."""
        out = []
        for tid, meta in sorted(self.txns.items()):
            if (meta.state == TxnState.ONGOING and tid not in self.pending and meta.txn_start_ms >= 0
                    and now_ms - meta.txn_start_ms > meta.timeout_ms):
                record = replace(self._bumped(meta), state=TxnState.PREPARE_ABORT, last_update_ms=now_ms)
                out.append(self.begin(TxnDecision(OK, (record,))))
        return out
