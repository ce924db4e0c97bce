"""Kafka clients for the queue workload (kafka-python), one per logical process.

``QueueClient`` executes ``send``, ``poll`` and ``assign`` invocations (docs/history-schema.md encoding) and
classifies every outcome as ``ok``, ``fail`` (certainly did not happen) or ``info`` (may have happened):
- send: ``KafkaProducer(acks='all')``, idempotent (kafka-python's default), one record to the partition
  named by the key. Success -> ``[key, [offset, value]]``. If the producer cannot even be built or the
  record never left the client (metadata unavailable before ``send`` returned), nothing reached a broker
  -> ``fail``. A non-retriable rejection that Kafka gives before appending (record too large, invalid
  topic, authorization) -> ``fail``. Everything else, including timeouts and retriable errors that the
  idempotent producer retried until its delivery timeout, is ambiguous -> ``info``: an earlier attempt
  may have been appended even if the last attempt failed (e.g. NOT_ENOUGH_REPLICAS_AFTER_APPEND, L5).
- poll: ``KafkaConsumer`` without a group, ``assign()``ed to partitions, ``auto_offset_reset=earliest``
  (every new assignment starts from the beginning). Completes ``{key: [[offset, value], ...]}``. A poll
  that raises is ``info``: the consumer's position may have moved, so the process is retired.
- assign: re-assigns the consumer to ``[keys]``.
- final read (``poll`` with ``"final": true``): a fresh consumer assigned every partition (or the op's
  ``keys``), seeked to the beginning, reading until its position reaches the end offset (the high
  watermark, via ListOffsets) of every partition. Complete reads are ``ok``; if the end is not reached in time the op is ``info``.

Keys are partition numbers of one topic; values are run-unique integers written as decimal text.
"""

from __future__ import annotations

import time
from typing import Any

import kafka.errors as errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from harness.spec import RunSpec
from workloads.group_client import GroupConsumer

READ_POLL_MS = 200


def _errors() -> Any:
    return errors


def decode_value(raw: bytes | None) -> Any:
    """Values are decimal text; anything else (foreign data) is kept as a string so checkers can flag it."""
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return int(text)
    except ValueError:
        return text


def definite_send_failure(exc: BaseException) -> bool:
    """Whether a send error proves the record was never appended (so the op is ``fail``, not ``info``).

    Only non-retriable rejections that brokers give before touching the log qualify; a retriable error
    that the idempotent producer retried may hide an earlier successful append.
    """
    errors = _errors()
    definite = tuple(getattr(errors, name) for name in (
        "MessageSizeTooLargeError", "RecordListTooLargeError", "InvalidTopicError",
        "TopicAuthorizationFailedError", "ClusterAuthorizationFailedError", "CorruptRecordError",
        "InvalidRecordError", "UnsupportedVersionError") if hasattr(errors, name))
    return isinstance(exc, definite)


class QueueClient:
    """One logical process's Kafka client (see the module docstring for the outcome rules)."""

    def __init__(self, spec: RunSpec, bootstrap: list[str], node: str | None = None,
                 op_timeout_s: float | None = None, subscriber: bool = False):
        self.spec = spec
        self.topic = spec.topic
        self.bootstrap = list(bootstrap)
        self.node = node
        self.op_timeout_s = float(spec.op_timeout_s if op_timeout_s is None else op_timeout_s)
        self._producer: Any = None
        self._consumer: Any = None
        self._assignment = list(range(int(spec.keys)))
        # A process that consumes through the consumer group (``sub_via``): its consumer ops go there.
        self.groups = GroupConsumer(spec, self.bootstrap, self.op_timeout_s) if subscriber else None

    # -- Client protocol -------------------------------------------------------------------------

    def open(self, run: Any, node: str) -> None:
        """Remember the preferred node; connections are made lazily so a failure belongs to an op."""
        self.node = node

    def close(self) -> None:
        """Close producer and consumer (never raises, never blocks long)."""
        for handle in (self._producer, self._consumer):
            if handle is None:
                continue
            try:
                handle.close(timeout=1) if handle is self._producer else handle.close()
            except Exception:
                pass
        self._producer = self._consumer = None
        if self.groups is not None:
            self.groups.close()

    def invoke(self, run: Any, op: dict) -> dict:
        """Execute a ``send`` / ``poll`` / ``assign`` invocation; return its completion."""
        f = op["f"]
        if self.groups is not None and not op.get("final"):
            if f == "poll":
                return self.groups.poll(op, records_by_key)
            if f in ("subscribe", "commit", "crash"):
                return getattr(self.groups, f)(op)
        if f == "send":
            return self._send(op)
        if f == "poll" and op.get("final"):
            return self._final_read(op)
        if f == "poll":
            return self._poll(op)
        if f == "assign":
            return self._assign(op)
        return dict(op, type="fail", error=f"unsupported f {f!r}")

    # -- producer --------------------------------------------------------------------------------

    def _producer_handle(self) -> Any:
        if self._producer is None:
            budget_ms = int(self.op_timeout_s * 1000)
            acks = self.spec.acks
            self._producer = KafkaProducer(
                bootstrap_servers=self.bootstrap,
                acks=acks,
                # Idempotence (the default) requires acks=all; spec.idempotence says which one ran.
                enable_idempotence=self.spec.idempotence and acks == "all",
                linger_ms=0,
                request_timeout_ms=max(1000, budget_ms // 3),
                delivery_timeout_ms=max(2000, int(budget_ms * 0.8)),
                max_block_ms=max(1000, budget_ms // 2),
                retry_backoff_ms=100,
                reconnect_backoff_max_ms=1000,
                metadata_max_age_ms=5000,
                bootstrap_timeout_ms=max(1000, budget_ms // 2),
            )
        return self._producer

    def _send(self, op: dict) -> dict:
        errors = _errors()
        key, value = op["value"]
        try:
            producer = self._producer_handle()
        except Exception as exc:  # no producer: nothing was sent
            return dict(op, type="fail", value=[key, [None, value]], error=f"{type(exc).__name__}: {exc}")
        try:
            future = producer.send(self.topic, value=str(value).encode(), key=str(key).encode(),
                                   partition=key)
        except errors.KafkaTimeoutError as exc:
            # send() blocked on metadata and gave up before the record entered the accumulator.
            return dict(op, type="fail", value=[key, [None, value]], error=f"KafkaTimeoutError: {exc}")
        except Exception as exc:
            return dict(op, type="info", value=[key, [None, value]], error=f"{type(exc).__name__}: {exc}")
        try:
            metadata = future.get(timeout=self.op_timeout_s * 0.9)
        except Exception as exc:
            kind = "fail" if definite_send_failure(exc) else "info"
            return dict(op, type=kind, value=[key, [None, value]], error=f"{type(exc).__name__}: {exc}")
        # kafka-python, like the Java client, acknowledges a retried batch that the broker reports as a
        # duplicate (DUPLICATE_SEQUENCE_NUMBER) with offset -1: the write is acknowledged, its offset unknown.
        offset = metadata.offset if metadata.offset >= 0 else None
        return dict(op, type="ok", value=[key, [offset, value]], error=None)

    # -- consumer --------------------------------------------------------------------------------

    def _new_consumer(self) -> Any:
        budget_ms = int(self.op_timeout_s * 1000)
        return KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=READ_POLL_MS,
            request_timeout_ms=max(2000, budget_ms // 2),
            retry_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            metadata_max_age_ms=5000,
            bootstrap_timeout_ms=max(1000, budget_ms // 2),
        )

    def _consumer_handle(self) -> Any:
        if self._consumer is None:
            consumer = self._new_consumer()
            consumer.assign([TopicPartition(self.topic, k) for k in self._assignment])
            self._consumer = consumer
        return self._consumer

    def _poll(self, op: dict) -> dict:
        consumer = self._consumer_handle()
        batches = consumer.poll(timeout_ms=READ_POLL_MS * 2, max_records=500)
        return dict(op, type="ok", value=records_by_key(batches), error=None)

    def _assign(self, op: dict) -> dict:
        keys = [int(k) for k in op["value"]]
        consumer = self._consumer_handle()
        consumer.assign([TopicPartition(self.topic, k) for k in keys])
        self._assignment = keys
        return dict(op, type="ok", error=None)

    def _final_read(self, op: dict) -> dict:
        """Read every partition from the beginning up to its end offset, on a dedicated consumer."""

        deadline = time.monotonic() + self.op_timeout_s * 0.9
        keys = list(op["keys"]) if op.get("keys") is not None else list(range(int(self.spec.keys)))
        if not keys:
            return dict(op, type="info", value=None, error="no partition to read")
        partitions = [TopicPartition(self.topic, k) for k in keys]
        consumer = self._new_consumer()
        try:
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            try:
                ends = consumer.end_offsets(partitions,
                                            timeout_ms=int(max(1.0, deadline - time.monotonic()) * 1000))
            except (errors.KafkaError, KeyError) as exc:
                # no end offset for a partition without a leader (kafka-python raises KeyError for one it
                # got no answer for): nothing was read, so the op is retried
                return dict(op, type="info", value=None, error=f"final read: end offsets unknown: {exc!r}")
            read, incomplete = read_to_ends(consumer, partitions, ends, deadline)
            if incomplete is not None:
                return dict(op, type="info", value=None, error=incomplete)
            return dict(op, type="ok", value=read, error=None,
                        ends={str(tp.partition): ends[tp] for tp in partitions})
        finally:
            try:
                consumer.close()
            except Exception:
                pass


def _position(consumer: Any, tp: Any, deadline: float) -> int:
    """The consumer's position on ``tp``, waiting at most until ``deadline`` (then -1: unknown)."""
    try:
        position = consumer.position(tp, timeout_ms=int(max(0.1, deadline - time.monotonic()) * 1000))
    except Exception:
        return -1
    return -1 if position is None else position


def read_to_ends(consumer: Any, partitions: list, ends: dict, deadline: float) -> tuple[dict, str | None]:
    """Poll ``consumer`` (assigned ``partitions``) until every position reaches its end offset in ``ends``:
    the records read by key, and None; or, past ``deadline``, what was left unread (the read is incomplete)."""
    read: dict[str, list[list[Any]]] = {str(tp.partition): [] for tp in partitions}
    while True:
        pending = [tp for tp in partitions if _position(consumer, tp, deadline) < ends[tp]]
        if not pending:
            return read, None
        if time.monotonic() > deadline:
            positions = {tp.partition: _position(consumer, tp, deadline) for tp in pending}
            ends_left = {tp.partition: ends[tp] for tp in pending}
            return read, f"final read incomplete: positions {positions} < ends {ends_left}"
        for key, records in records_by_key(consumer.poll(timeout_ms=READ_POLL_MS, max_records=5000)).items():
            read[key].extend(records)


def records_by_key(batches: dict) -> dict[str, list[list[Any]]]:
    """kafka-python's ``{TopicPartition: [ConsumerRecord]}`` -> ``{"key": [[offset, value], ...]}``."""
    out: dict[str, list[list[Any]]] = {}
    for tp, records in sorted(batches.items(), key=lambda item: item[0].partition):
        out.setdefault(str(tp.partition), []).extend([r.offset, decode_value(r.value)] for r in records)
    return out
