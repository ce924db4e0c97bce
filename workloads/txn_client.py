"""The queue workload's client with transactions (spec ``txn``): kafka-python's transactional producer.

``TxnQueueClient`` runs ``txn`` invocations (docs/history-schema.md: ``[["send", k, v], ["poll"], ...]``) as
one Kafka transaction each, and ``assign`` / final reads as ``QueueClient`` does, with consumers at the
spec's ``isolation_level``. Every completion names the client library that ran it (``client``).

A transaction's outcome is classified as Jepsen's Kafka workload does, from what the producer can know:

- ``ok``: ``commit_transaction`` returned; sends complete as ``["send", k, [offset, v]]``, polls as
  ``["poll", {k: [[offset, v], ...]}]``;
- ``fail``: the transaction certainly did not commit: it was aborted on purpose (``"abort": true``), or
  anything failed before the commit was asked for (a transaction whose EndTxn(commit) was never sent can
  only be aborted: the client drops the producer and the next instance's ``init_transactions`` fences it,
  the coordinator aborting with the epoch bumped), or the coordinator refused the commit because the
  producer was fenced. Its polls are undone too: the consumer seeks back
  to the first offset they returned (as Jepsen's client rewinds on an abort);
- ``info``: the commit itself failed or timed out otherwise (it may have been decided either way).

The producer is transactional with the id ``<topic>-txn-<process mod concurrency>``: a process that
replaces a crashed one takes over its transactional id, so its ``init_transactions`` fences the old
producer and aborts whatever it left open (KIP-98). An op marked ``"zombie": true`` does the same inside
one transaction: after its first send is acknowledged a second producer with the same id is initialised
(fencing the first), the first then tries to send the rest and commit; the coordinator and the partitions
must refuse it (the op completes ``fail``), and the second producer serves the process from then on.

The transaction timeout is short (``TXN_TIMEOUT_MS``), so a transaction a dead producer left open is
aborted by its coordinator well before the final read. The final read waits (half its budget) until
every partition's last stable offset has reached its high watermark, i.e. every transaction was decided,
then reads everything up to the end offsets at its isolation level. While some LSO is still below its HWM
the read completes ``info`` and a fresh reader tries again, until 60 % of ``final_read_timeout_s`` has
passed since the first final read began; after that it reads up to the LSO and names the partitions in
the completion's ``"unstable"`` (``{k: [lso, hwm]}``): committed writes beyond an LSO that never moves are
unreadable at read_committed, which the checkers report.
"""

from __future__ import annotations

import time
from typing import Any

import kafka
import kafka.errors as errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from harness.spec import RunSpec
from workloads.clients import READ_POLL_MS, QueueClient, read_to_ends, records_by_key

TXN_TIMEOUT_MS = 6000
CLIENT_NAME = f"kafka-python {kafka.__version__}"


def _fenced(exc: BaseException) -> bool:
    """The coordinator or a partition refused the producer's epoch: nothing it sends commits any more."""
    names = ("ProducerFencedError", "InvalidProducerEpochError")
    return isinstance(exc, tuple(getattr(errors, n) for n in names if hasattr(errors, n)))


class TxnQueueClient(QueueClient):
    """One logical process's transactional client (see the module docstring)."""

    def __init__(self, spec: RunSpec, bootstrap: list[str], node: str | None = None, process: int = 0,
                 final_reads: dict | None = None, op_timeout_s: float | None = None, subscriber: bool = False):
        super().__init__(spec, bootstrap, node, op_timeout_s, subscriber=subscriber)
        self.transactional_id = f"{spec.topic}-txn-{process % max(1, int(spec.concurrency))}"
        self.isolation_level = spec.isolation_level
        # shared by the clients of one phase: when the first final read began (see _final_read)
        self.final_reads = final_reads if final_reads is not None else {}
        self._zombie: Any = None

    # -- producer --------------------------------------------------------------------------------

    def _new_producer(self) -> Any:
        budget_ms = int(self.op_timeout_s * 1000)
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            transactional_id=self.transactional_id,
            transaction_timeout_ms=TXN_TIMEOUT_MS,
            linger_ms=0,
            request_timeout_ms=max(1000, budget_ms // 3),
            delivery_timeout_ms=max(2000, int(budget_ms * 0.6)),
            # init_transactions waits this long: a predecessor's open transaction must be aborted first,
            # which waits for its partitions' leaders (seconds under faults)
            max_block_ms=max(1000, int(budget_ms * 0.7)),
            retry_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            metadata_max_age_ms=5000,
        )
        try:
            producer.init_transactions()
        except Exception:
            _close_quietly(producer)
            raise
        return producer

    def _producer_handle(self) -> Any:
        if self._producer is None:
            self._producer = self._new_producer()
        return self._producer

    def _drop_producer(self, producer: Any) -> None:
        """After an error the producer's state is unknown: the next op starts a new instance (which
        fences this one and aborts what it left open). A zombie is closed by its op, not here."""
        if producer is self._producer:
            _close_quietly(producer)
            self._producer = None

    # -- ops -------------------------------------------------------------------------------------

    def invoke(self, run: Any, op: dict) -> dict:
        """``txn`` here; everything else as ``QueueClient``."""
        if op["f"] == "txn":
            return dict(self._txn(op), client=CLIENT_NAME)
        if op["f"] == "poll" and op.get("final"):
            return dict(self._final_read(op), client=CLIENT_NAME)
        return super().invoke(run, op)

    def _txn(self, op: dict) -> dict:
        """One transaction; a subscribing process (``sub_via``) reads through its group consumer, and the
        completion carries the rebalances the transaction's polls went through, as a group poll's does."""
        if self.groups is None:
            return self._txn_ops(op)
        self.groups.events.clear()
        done = self._txn_ops(op)
        generation, member = self.groups.generation()
        log, self.groups.events = self.groups.events, []
        return dict(done, rebalance_log=log, group=self.groups.group, generation=generation, member=member)

    def _txn_ops(self, op: dict) -> dict:
        mops = op["value"]
        sends = [m for m in mops if m[0] == "send"]
        if not sends:  # polls only: no producer transaction to open
            try:
                return dict(op, type="ok", value=[self._poll_mop() for _ in mops], error=None)
            except Exception as exc:
                return dict(op, type="info", value=None, error=f"{type(exc).__name__}: {exc}")
        try:
            producer = self._producer_handle()
        except Exception as exc:  # no producer, no transaction: nothing was sent
            return dict(op, type="fail", error=f"init_transactions: {type(exc).__name__}: {exc}")
        out: list[list] = []
        futures: list[tuple[int, Any]] = []
        stage = "send"
        try:
            producer.begin_transaction()
            first_send = True
            for mop in mops:
                if mop[0] == "poll":
                    out.append(self._poll_mop())
                    continue
                _, key, value = mop
                futures.append((len(out), producer.send(self.topic, value=str(value).encode(),
                                                        key=str(key).encode(), partition=key)))
                out.append(["send", key, [None, value]])
                if first_send and op.get("zombie"):
                    first_send = False
                    futures[-1][1].get(timeout=self.op_timeout_s * 0.3)
                    self._replace_midway()
            producer.flush(timeout=self.op_timeout_s * 0.5)
            for pos, future in futures:
                metadata = future.get(timeout=0)
                out[pos] = ["send", out[pos][1], [metadata.offset if metadata.offset >= 0 else None,
                                                  out[pos][2][1]]]
            if op.get("abort"):
                stage = "abort"
                producer.abort_transaction()
                self._rewind(out)
                return dict(op, type="fail", value=out, error="aborted on purpose")
            stage = "commit"
            producer.commit_transaction()
            return dict(op, type="ok", value=out, error=None)
        except Exception as exc:
            error = f"{stage}: {type(exc).__name__}: {exc}"
            if stage == "commit" and not _fenced(exc):
                self._drop_producer(producer)
                return dict(op, type="info", value=out, error=error)
            # Never committed: EndTxn(commit) was not sent, or the coordinator refused it (fenced). The
            # transaction is not aborted by this producer: a batch it gave up on may still reach its
            # partition after an abort marker of the same epoch, open a transaction there, and be made
            # visible by this producer's next commit (seed 31 read such a record: G1a). A fresh instance's
            # init_transactions fences this one instead: the coordinator aborts with the epoch bumped, so
            # such a late batch is refused (as Kafka's Java client bumps the epoch after a timed-out batch).
            self._drop_producer(producer)
            self._rewind(out)
            return dict(op, type="fail", value=out, error=error)
        finally:
            if op.get("zombie") and self._zombie is not None:
                _close_quietly(self._zombie)
                self._zombie = None

    def _replace_midway(self) -> None:
        """A zombie op: a new producer instance takes the transactional id (fencing the current one,
        whose transaction the coordinator aborts); the current one carries on as a zombie."""
        replacement = self._new_producer()
        self._zombie, self._producer = self._producer, replacement

    def _rewind(self, mops: list[list]) -> None:
        """A transaction that did not happen read nothing either (as Jepsen's client does on an abort):
        the consumer goes back to the first offset each of its polls returned, so the process's next
        polls read those records again."""
        first: dict[int, int] = {}
        for mop in mops:
            if mop[0] == "poll" and len(mop) == 2:
                for key, pairs in mop[1].items():
                    if pairs:
                        first.setdefault(int(key), pairs[0][0])
        consumer = self.groups.consumer if self.groups is not None else self._consumer
        if first and consumer is not None:
            for key, offset in first.items():
                tp = TopicPartition(self.topic, key)
                if self.groups is None or tp in consumer.assignment():  # a revoked partition: its next owner reads it
                    consumer.seek(tp, offset)

    def _poll_mop(self) -> list:
        consumer = self.groups.handle() if self.groups is not None else self._consumer_handle()
        return ["poll", records_by_key(consumer.poll(timeout_ms=READ_POLL_MS * 2, max_records=500))]

    # -- consumers -------------------------------------------------------------------------------

    def _new_consumer(self, isolation_level: str | None = None) -> Any:
        budget_ms = int(self.op_timeout_s * 1000)
        return KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=isolation_level or self.isolation_level,
            fetch_max_wait_ms=READ_POLL_MS,
            request_timeout_ms=max(2000, budget_ms // 2),
            retry_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            metadata_max_age_ms=5000,
        )

    def _final_read(self, op: dict) -> dict:
        """Wait until every partition's transactions are decided (LSO == HWM), then read to the end."""
        deadline = time.monotonic() + self.op_timeout_s * 0.9
        first = self.final_reads.setdefault("first", time.monotonic())
        patience = float(self.spec.final_read_timeout_s) * 0.6
        keys = list(op["keys"]) if op.get("keys") is not None else list(range(int(self.spec.keys)))
        if not keys:
            return dict(op, type="info", value=None, error="no partition to read")
        partitions = [TopicPartition(self.topic, k) for k in keys]
        consumer = self._new_consumer()
        probe = self._new_consumer("read_uncommitted") if self.isolation_level == "read_committed" else None
        try:
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            settle_until = time.monotonic() + self.op_timeout_s * 0.5
            while True:
                try:
                    ends = consumer.end_offsets(partitions, timeout_ms=int(max(1.0, deadline - time.monotonic()) * 1000))
                    hwms = probe.end_offsets(partitions, timeout_ms=int(max(1.0, deadline - time.monotonic()) * 1000)) \
                        if probe is not None else ends
                except (errors.KafkaError, KeyError) as exc:
                    return dict(op, type="info", value=None, error=f"final read: end offsets unknown: {exc!r}")
                unstable = {tp: (ends[tp], hwms[tp]) for tp in partitions if ends[tp] < hwms[tp]}
                if not unstable or time.monotonic() > settle_until:
                    break
                time.sleep(0.5)  # open transactions: their coordinator decides them (or times them out)
            if unstable and time.monotonic() - first < patience:
                # Not decided yet: a coordinator may still be failing over or timing a transaction out.
                # The op is retried by a fresh reader; only once most of the final phase has passed is
                # the read completed as it is, naming the partitions still unstable.
                return dict(op, type="info", value=None, error="open transactions: LSO below HWM "
                            f"{ {tp.partition: list(v) for tp, v in unstable.items()} }")
            read, incomplete = read_to_ends(consumer, partitions, ends, deadline)
            if incomplete is not None:
                return dict(op, type="info", value=None, error=incomplete)
            done = dict(op, type="ok", value=read, error=None, ends={str(tp.partition): ends[tp] for tp in partitions})
            if unstable:
                done["unstable"] = {str(tp.partition): list(v) for tp, v in unstable.items()}
            return done
        finally:
            _close_quietly(consumer)
            if probe is not None:
                _close_quietly(probe)

    def close(self) -> None:
        """Close everything (an open transaction is left to the coordinator's timeout)."""
        if self._zombie is not None:
            _close_quietly(self._zombie)
            self._zombie = None
        super().close()


def _close_quietly(handle: Any) -> None:
    try:
        handle.close(timeout=1) if isinstance(handle, KafkaProducer) else handle.close()
    except Exception:
        pass
