"""Idempotent producers for the simulated clients (``SimOptions.idempotent``; off by default).

Kafka's idempotent producer (``enable.idempotence=true``), simplified to one batch in flight per partition
(Kafka allows up to five): each producer has a producer id and an epoch and, per partition, the sequence of
its next record. Every record is a batch of one with ``(producer_id, producer_epoch, base_sequence)``; the
partition leader's ``ProducerStateManager`` checks it (``reference_impl.protocol.producer_state``). The
history is unchanged in form: one ``send`` op per record, an invocation and one completion.

- **Producer ids.** ``PRODUCERS`` producers; the n-th send of the run goes to producer n mod ``PRODUCERS``.
  Their ids are handed out here, deterministically (0, 1, ...), standing for what a broker's
  InitProducerId would answer: the simulated cluster runs no transaction coordinator, so no broker hands
  out ids. Epochs start at 0.
- **Queueing.** A send to a partition where the producer already has a batch in flight waits behind it
  (Kafka's record accumulator). Its sequence is taken when its first attempt leaves.
- **Retries.** An uncertain attempt (no answer within the request timeout, NOT_LEADER_OR_FOLLOWER,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND, any other error that is not a refusal of the batch) and a certain one
  (no leader known, connection refused, NOT_ENOUGH_REPLICAS, UNKNOWN_TOPIC_OR_PARTITION) are retried with
  the **same** epoch and sequence after ``RETRY_BACKOFF_MS``, at a leader asked afresh, at most
  ``ATTEMPTS`` attempts and only while the delivery window is open (``delivery_window_ms``: the send's last
  attempt ends before the final phase reads, Kafka's ``delivery.timeout.ms`` scaled down like the other
  timeouts). A send still queued when its window closes fails (it was never sent).
- **Outcomes.** ``ok`` when an attempt is acknowledged: the leader answers a retry of a batch it already
  has (a duplicate) with the original batch's offset, so the op carries that offset (a
  DUPLICATE_SEQUENCE_NUMBER answer, which this core never gives, would be ok with the offset unknown,
  null, as Kafka's client reports it). When the attempts are spent: ``fail`` when every attempt certainly
  did not append (refused before the append), else ``info``.
- **Sequences after an outcome.** ``ok``: the partition's next sequence follows. ``fail``: the sequence
  was never used and is used again by the next batch (Kafka adjusts the sequences of a batch that failed
  unsent). ``info``: whether the batch is in the log is unknown, so the producer **bumps its epoch** and
  starts every partition at sequence 0 again (KIP-360, as Kafka's idempotent producer does after an
  expired batch): a late copy of the old batch is then fenced (INVALID_PRODUCER_EPOCH) once the new epoch
  reached the partition, and appended as the ``info`` op's write if it comes first.
- **Refusals of the batch.** OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH and UNKNOWN_PRODUCER_ID
  are not retried: the op ends (``fail`` if no attempt may have appended, else ``info``, with the error's
  name) and the producer bumps its epoch, as Kafka's idempotent producer does for them.

**The idempotence rule** (checked by the simulated broker when it answers, ``check_refusal``): with one
batch in flight and the epoch bumped after every unknown outcome, the batch in flight is either the first
of its epoch on its partition (sequence 0: no other batch of that epoch can be in any log of the
partition, only copies of itself, which are duplicates) or it directly follows the batch the producer saw
acknowledged last there. A leader whose log holds that batch (or that needs none) and refuses the batch
in flight with one of these errors holds a producer state its log does not justify. A leader whose log
lacks it (a zombie leader that missed the write, or a log that lost it) may refuse; that case is the log
invariants' business, not this rule's.

Not modelled: transactions, more than one batch in flight, batches of several records, producer id
expiry.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.errors import Errors
from simulator.rules import RuleBroken

PRODUCERS = 2
ATTEMPTS = 5
RETRY_BACKOFF_MS = 100
# answers that say this attempt certainly appended nothing (the batch may still be in the log from an
# earlier attempt)
NOT_APPENDED = frozenset({Errors.NOT_ENOUGH_REPLICAS, Errors.UNKNOWN_TOPIC_OR_PARTITION})
# the leader's refusals of the batch itself: retrying the same batch cannot help
REFUSED = frozenset({Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.INVALID_PRODUCER_EPOCH,
                     Errors.UNKNOWN_PRODUCER_ID})


def delivery_window_ms(settle_ms: int, request_timeout_ms: int) -> int:
    """How long after its invocation a send may start an attempt: its last attempt, timed out at
    ``request_timeout_ms``, ends before the final phase (``settle_ms`` after the fault phase) reads."""
    return settle_ms - request_timeout_ms


@dataclass
class Send:
    """One record on its way: the op's process, partition and value, and its attempts so far."""

    process: int
    key: int
    value: int
    deadline_ms: int                  # no attempt starts at or after this time
    attempts_left: int = ATTEMPTS
    refresh: bool = False             # ask a broker for the leader before the first attempt
    epoch: int = -1                   # taken with the sequence when the first attempt leaves
    sequence: int = -1
    attempts: int = 0
    maybe_appended: bool = False      # some attempt's outcome is unknown, or it was appended
    error: str | None = None          # the last attempt's error
    node: Any = None                  # the broker of the last attempt


@dataclass
class IdempotentProducer:
    """One producer's id, epoch and per-partition sequences and queues (no I/O: ``Clients`` drives it)."""

    producer_id: int
    epoch: int = 0
    next_sequence: dict[int, int] = field(default_factory=dict)
    in_flight: dict[int, Send] = field(default_factory=dict)
    queued: dict[int, deque[Send]] = field(default_factory=dict)
    acknowledged: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> (epoch, sequence)
    bumps: int = 0

    def enqueue(self, send: Send) -> bool:
        """Queue ``send``; True when it may leave now (nothing of this producer in flight to its partition)."""
        if send.key in self.in_flight:
            self.queued.setdefault(send.key, deque()).append(send)
            return False
        self.in_flight[send.key] = send
        return True

    def stamp(self, send: Send) -> None:
        """Give ``send`` its epoch and sequence (at its first attempt; retries keep them)."""
        if send.sequence < 0:
            send.epoch = self.epoch
            send.sequence = self.next_sequence.get(send.key, 0)

    def finished(self, send: Send, outcome: str, refused: bool = False) -> Send | None:
        """``send`` ended ``ok``, ``fail`` or ``info``, ``refused`` when the leader refused the batch itself
        (see the module docstring for the sequences); returns the next queued send of its partition, now in
        flight, if any. A bump since ``send`` left has already made its sequence moot."""
        if outcome == "ok" and send.sequence >= 0:
            self.acknowledged[send.key] = (send.epoch, send.sequence)
        if send.sequence >= 0 and send.epoch == self.epoch:
            if outcome == "ok":
                self.next_sequence[send.key] = send.sequence + 1
            elif outcome == "info" or refused:
                self.bump()
            # fail, not refused: the sequence was not used; the next batch takes it
        del self.in_flight[send.key]
        waiting = self.queued.get(send.key)
        if not waiting:
            return None
        nxt = waiting.popleft()
        self.in_flight[send.key] = nxt
        return nxt

    def bump(self) -> None:
        """A new epoch, every partition's sequence back to 0 (KIP-360's bump of an idempotent producer)."""
        self.epoch += 1
        self.bumps += 1
        self.next_sequence.clear()


def judge_answer(code: int, attempts_left: int, window_open: bool) -> str:
    """What an attempt's answer means: ``ok``, ``retry``, or ``end`` (no more attempts)."""
    if code in (Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER):
        return "ok"
    if code in REFUSED:
        return "end"
    return "retry" if attempts_left > 0 and window_open else "end"



def check_refusal(producer: IdempotentProducer, partition: int, epoch: int, sequence: int, error: str,
                  log: list[Any]) -> None:
    """The idempotence rule (module docstring) for a leader that refused the batch ``(epoch, sequence)`` of
    ``producer`` on ``partition`` with ``error``, its log being ``log`` (``LogBatch`` es) when it answered."""
    live = producer.in_flight.get(partition)
    if live is None or (live.epoch, live.sequence) != (epoch, sequence):
        return  # a late copy of a batch that is over: a refusal is what it should get
    if sequence > 0:
        if producer.acknowledged.get(partition) != (epoch, sequence - 1):
            return  # cannot happen (the module docstring); nothing to hold the leader to
        previous = [b for b in log if (b.producer_id, b.producer_epoch, b.base_sequence)
                    == (producer.producer_id, epoch, sequence - 1)]
        if not previous:
            return  # the leader's log lacks the acknowledged batch: the log invariants judge that
        why = f"its log holds the batch before it (sequence {sequence - 1}) at offset {previous[0].base_offset}"
    else:
        why = "it is the first batch of its epoch on the partition"
    raise RuleBroken("idempotence", f"the leader refused with {error} the batch in flight (epoch {epoch}, sequence "
                                    f"{sequence}) of idempotent producer {producer.producer_id} on partition "
                                    f"{partition}, although {why}")
