"""Idempotent producer state of one partition, as Kafka 3.x keeps it (``ProducerStateManager``).

Per producer id the partition remembers the producer epoch and the metadata (first/last sequence, first/last
offset) of the last ``MAX_CACHED_BATCHES`` (5) batches it appended. A leader checks every client batch
against it before appending:

1. a batch from an **older producer epoch** is refused with INVALID_PRODUCER_EPOCH (Kafka answers this, not
   PRODUCER_FENCED, since 2.7 so the client can retry);
2. a batch whose epoch and sequence range equal a cached batch is a **duplicate**: it is not appended and
   the producer is answered with success and the original base offset;
3. a **new epoch** must start at sequence 0 unless the partition knows no epoch for the producer;
4. within an epoch the first sequence must follow the last one (wrapping after 2^31 - 1), else
   OUT_OF_ORDER_SEQUENCE_NUMBER;
5. an **unknown producer** (no state, e.g. its records were truncated away) is accepted at any sequence:
   Kafka 3.x no longer answers UNKNOWN_PRODUCER_ID here ("accept writes with any sequence number" in
   ``ProducerAppendInfo.checkSequence``);
6. a batch **without a sequence** (-1) is a coordinator's transactional write (the group coordinator's
   TxnOffsetCommit records, Kafka's ``AppendOrigin.COORDINATOR``): only its epoch is checked.

Batches that arrive by replication or from the log on recovery are applied without checks (the leader has
already validated them); ``rebuild`` replays a whole log, which is how the state follows a truncation (F3)
and a restart.

Transactions (KIP-98) are tracked from the same batches, so leader, followers and a restarted replica
agree on them without any state of their own on disk:

- a **transactional batch** (attribute bit 4) of a producer with no open transaction opens one at its
  base offset; the earliest transaction that is open, or ended by a marker the HWM has not passed yet,
  gives the partition's **first unstable offset**, and the last stable offset is ``min(HWM, first
  unstable offset)`` (``last_stable_offset``). A marker above the HWM may still be truncated, and a new
  coordinator may then end the transaction the other way, so read_committed must not pass it before;
- a **control batch** (attribute bit 5: a COMMIT or ABORT marker written by the transaction coordinator)
  closes the producer's open transaction; an abort enters the **aborted-transaction index**
  ``(producer id, first offset, marker offset)`` that read_committed fetches return
  (``aborted_transactions``). A marker carries the producer epoch the coordinator decided with, so it
  raises the partition's epoch for that producer: a fenced producer's later batches are refused (rule 1);
- a marker is checked before it is written (``check_marker``): an epoch older than the partition's is
  INVALID_PRODUCER_EPOCH. (Kafka also refuses markers of an older coordinator epoch; here a coordinator
  sends markers only once its decision is committed in the state partition, docs/kafka-differences.md.)

Verification (KIP-890 part 1, Kafka 3.6+): a transactional batch that would **open** a transaction here
(its producer has none open on this partition) is appended only after the transaction coordinator has
confirmed that the partition is in the producer's ongoing transaction. The leader takes a **verification
guard** for the producer (``start_verification``) before it asks, and hands the guard back with the
batch; anything that ends or opens a transaction of that producer meanwhile (a marker, another batch, a
rebuild) drops the guard, so a confirmation that a marker overtook is refused with INVALID_TXN_STATE
(``verified``). A late batch of a transaction that already ended can then no longer open a transaction
no marker will ever close (a *hanging transaction*, KAFKA-14402).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from reference_impl.protocol.errors import OK, Errors, KafkaError, error
from reference_impl.protocol.log import (
    CONTROL_ABORT,
    CONTROL_BIT,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TRANSACTIONAL_BIT,
    LogBatch,
)

MAX_CACHED_BATCHES = 5
_SEQ_MODULUS = 2**31  # sequences are non-negative int32 and wrap to 0 after Integer.MAX_VALUE


def last_sequence(base_sequence: int, record_count: int) -> int:
    """The sequence of a batch's last record, wrapping as Kafka's ``incrementSequence`` does."""
    return (base_sequence + record_count - 1) % _SEQ_MODULUS


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """True when ``next_seq`` directly follows ``last_seq`` (including the wrap to 0)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _SEQ_MODULUS - 1)


@dataclass(frozen=True)
class BatchMetadata:
    """What the partition remembers of one appended batch of a producer."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerEntry:
    """State of one producer id: its epoch and its most recent batches (oldest first)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: list[BatchMetadata] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        """Sequence of the last record appended in the current epoch (-1 if none)."""
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(frozen=True)
class ProducerCheck:
    """Outcome of checking a client batch: append it, answer a duplicate, or refuse with ``error``."""

    error: KafkaError = OK
    duplicate_of: BatchMetadata | None = None

    @property
    def should_append(self) -> bool:
        """True when the batch must be appended (no error and not a duplicate)."""
        return self.error.ok and self.duplicate_of is None


@dataclass(frozen=True)
class AbortedTxn:
    """One aborted transaction of the partition: its producer, first offset and abort marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int


class ProducerStateManager:
    """Idempotent producer state of one partition (see the module docstring for the rules)."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self._open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # in marker order (so sorted by last_offset)
        # (first offset, marker offset) of transactions a marker ended here while the HWM has not passed
        # the marker yet (Kafka's unreplicatedTxns): they stay unstable, since an uncommitted marker may
        # still be truncated and the transaction end the other way
        self._unreplicated: list[tuple[int, int]] = []
        self._guards: dict[int, tuple[int, int]] = {}  # producer id -> (guard, producer epoch) (KIP-890)
        self._next_guard = 0

    # ------------------------------------------------------------------ verification (KIP-890 part 1)
    def needs_verification(self, producer_id: int, attributes: int) -> bool:
        """True for a transactional data batch of a producer with no transaction open here: appending it
        would open one, so the coordinator must confirm the partition is in the producer's transaction."""
        return (producer_id != NO_PRODUCER_ID and bool(attributes & TRANSACTIONAL_BIT)
                and not attributes & CONTROL_BIT and producer_id not in self._open_txns)

    def start_verification(self, producer_id: int, producer_epoch: int) -> int:
        """The guard to hand back with the batch once the coordinator confirmed it (an existing guard of
        the same epoch is shared, as concurrent verifications of one producer may be)."""
        held = self._guards.get(producer_id)
        if held is not None and held[1] == producer_epoch:
            return held[0]
        self._next_guard += 1
        self._guards[producer_id] = (self._next_guard, producer_epoch)
        return self._next_guard

    def verified(self, producer_id: int, producer_epoch: int, guard: int | None) -> bool:
        """True when ``guard`` is still the producer's: nothing ended or opened one of its transactions
        here since the verification began."""
        return guard is not None and self._guards.get(producer_id) == (guard, producer_epoch)

    # ------------------------------------------------------------------ transactions (KIP-98)
    def first_unstable_offset(self, high_watermark: int | None = None) -> int | None:
        """The first offset of the earliest transaction that is open, or whose marker is at or above
        ``high_watermark`` (not committed yet); None when there is none."""
        firsts = list(self._open_txns.values())
        firsts += [first for first, marker in self._unreplicated if high_watermark is None or marker >= high_watermark]
        return min(firsts) if firsts else None

    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: nothing at or above it may be served at read_committed (never above the HWM). A
        transaction counts as decided only once its marker is below the HWM."""
        first = self.first_unstable_offset(high_watermark)
        return high_watermark if first is None else min(first, high_watermark)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget the ended transactions whose markers the HWM has passed (they are stable for good)."""
        if self._unreplicated:
            self._unreplicated = [(f, m) for f, m in self._unreplicated if m >= high_watermark]

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of every open transaction."""
        return dict(self._open_txns)

    def aborted_transactions(self, from_offset: int, to_offset: int) -> list[tuple[int, int]]:
        """``(producer id, first offset)`` of every aborted transaction with records in
        ``[from_offset, to_offset)`` (what a read_committed fetch of that range returns)."""
        return [(a.producer_id, a.first_offset) for a in self._aborted
                if a.last_offset >= from_offset and a.first_offset < to_offset]

    def check_marker(self, producer_id: int, producer_epoch: int) -> KafkaError:
        """May a coordinator's marker for ``producer_id`` be written? (module docstring)."""
        current = self._producers.get(producer_id)
        if current is None:
            return OK
        if producer_epoch < current.producer_epoch:
            return error(Errors.INVALID_PRODUCER_EPOCH,
                         f"marker epoch {producer_epoch} < current {current.producer_epoch}")
        return OK

    def entry(self, producer_id: int) -> ProducerEntry | None:
        """The state kept for ``producer_id``, if any."""
        return self._producers.get(producer_id)

    def producer_ids(self) -> list[int]:
        """Every producer id with state, sorted."""
        return sorted(self._producers)

    def check(self, producer_id: int, producer_epoch: int, base_sequence: int, record_count: int,
              attributes: int = 0) -> ProducerCheck:
        """Validate a client batch before the leader appends it (rules 1-5 of the module docstring); a
        control batch (a coordinator's marker) is checked by ``check_marker`` instead."""
        if producer_id == NO_PRODUCER_ID:
            return ProducerCheck()  # not idempotent: nothing to check
        if attributes & CONTROL_BIT:
            return ProducerCheck(self.check_marker(producer_id, producer_epoch))
        current = self._producers.get(producer_id)
        if current is None or current.producer_epoch == NO_PRODUCER_EPOCH:
            return ProducerCheck()  # rule 5
        if producer_epoch < current.producer_epoch:
            return ProducerCheck(error(Errors.INVALID_PRODUCER_EPOCH,
                                       f"epoch {producer_epoch} < current {current.producer_epoch}"))
        if base_sequence == NO_SEQUENCE:
            return ProducerCheck()  # rule 6: a coordinator's transactional write has no sequence to check
        last_seq = last_sequence(base_sequence, record_count)
        if producer_epoch == current.producer_epoch:
            for meta in current.batches:
                if meta.first_seq == base_sequence and meta.last_seq == last_seq:
                    return ProducerCheck(duplicate_of=meta)
            if not in_sequence(current.last_seq, base_sequence):
                return ProducerCheck(error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                           f"sequence {base_sequence} after {current.last_seq}"))
            return ProducerCheck()
        if base_sequence != 0:  # rule 3: a known producer bumped its epoch
            return ProducerCheck(error(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                       f"new epoch {producer_epoch} must start at sequence 0, got {base_sequence}"))
        return ProducerCheck()

    def update(self, batch: LogBatch) -> None:
        """Record an appended batch (leader, replication or recovery path alike)."""
        if batch.producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.setdefault(batch.producer_id, ProducerEntry(batch.producer_id))
        if batch.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = batch.producer_epoch
            entry.batches = []  # a new epoch restarts the sequence space
        if batch.is_control:
            self._guards.pop(batch.producer_id, None)  # a verification begun before the marker is void
            self._end_txn(entry, batch)
            return  # a marker has no sequence: it does not enter the batch cache
        if batch.is_transactional:
            if batch.producer_id not in self._open_txns:
                self._guards.pop(batch.producer_id, None)  # the guard opened this transaction: used up
            self._open_txns.setdefault(batch.producer_id, batch.base_offset)
        if batch.base_sequence == NO_SEQUENCE:
            return  # a coordinator's write (rule 6): no sequence to remember
        entry.batches.append(BatchMetadata(batch.base_sequence, last_sequence(batch.base_sequence,
                                                                               batch.record_count),
                                           batch.base_offset, batch.last_offset))
        del entry.batches[:-MAX_CACHED_BATCHES]

    def rebuild(self, batches: Iterable[LogBatch]) -> None:
        """Forget everything and replay ``batches`` (after truncation, F3, or on recovery)."""
        self._producers.clear()
        self._open_txns.clear()
        self._aborted.clear()
        self._unreplicated.clear()
        self._guards.clear()
        for batch in batches:
            self.update(batch)

    def _end_txn(self, entry: ProducerEntry, marker: LogBatch) -> None:
        """A COMMIT or ABORT marker closes the producer's open transaction (an abort is indexed)."""
        first = self._open_txns.pop(marker.producer_id, None)
        if first is not None:
            self._unreplicated.append((first, marker.base_offset))
        if first is not None and marker.control_type == CONTROL_ABORT:
            self._aborted.append(AbortedTxn(marker.producer_id, first, marker.base_offset))
