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
   ``ProducerAppendInfo.checkSequence``).

Batches that arrive by replication or from the log on recovery are applied without checks (the leader has
already validated them); ``rebuild`` replays a whole log, which is how the state follows a truncation (F3)
and a restart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from reference_impl.protocol.errors import OK, Errors, KafkaError, error
from reference_impl.protocol.log import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, LogBatch

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


class ProducerStateManager:
    """Idempotent producer state of one partition (see the module docstring for the rules)."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def entry(self, producer_id: int) -> ProducerEntry | None:
        """The state kept for ``producer_id``, if any."""
        return self._producers.get(producer_id)

    def producer_ids(self) -> list[int]:
        """Every producer id with state, sorted."""
        return sorted(self._producers)

    def check(self, producer_id: int, producer_epoch: int, base_sequence: int, record_count: int) -> ProducerCheck:
        """Validate a client batch before the leader appends it (rules 1-5 of the module docstring)."""
        if producer_id == NO_PRODUCER_ID:
            return ProducerCheck()  # not idempotent: nothing to check
        current = self._producers.get(producer_id)
        if current is None or current.producer_epoch == NO_PRODUCER_EPOCH:
            return ProducerCheck()  # rule 5
        if producer_epoch < current.producer_epoch:
            return ProducerCheck(error(Errors.INVALID_PRODUCER_EPOCH,
                                       f"epoch {producer_epoch} < current {current.producer_epoch}"))
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
        entry.batches.append(BatchMetadata(batch.base_sequence, last_sequence(batch.base_sequence,
                                                                               batch.record_count),
                                           batch.base_offset, batch.last_offset))
        del entry.batches[:-MAX_CACHED_BATCHES]

    def rebuild(self, batches: Iterable[LogBatch]) -> None:
        """Forget everything and replay ``batches`` (after truncation, F3, or on recovery)."""
        self._producers.clear()
        for batch in batches:
            self.update(batch)
