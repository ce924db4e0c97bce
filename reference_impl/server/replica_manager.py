"""The broker's partitions: one ``PartitionReplica`` (protocol core) over one ``SegmentLog`` each.

This is the shell around the replica core on a broker. It owns no protocol decision: it turns wire-level
produce / fetch / list-offsets / epoch queries into calls of the core, waits where the core says a verdict
comes later (acks=all, L5) or where Kafka long-polls (fetch ``max_wait_ms``), executes the core's actions
(join/leave a fetcher, delete a log: T1-T6) and streams the core's trace events.

After every call into a replica, ``_after(replica)`` does three things in order: resolve the futures of
completed acks=all produces (L5), write the drained trace events, and, if there were any (the replica
changed), wake the fetches that are long-polling (new data or a new HWM). Everything runs on one asyncio loop, so a replica is never
entered concurrently.

Besides the core's events, the shell traces each batch of a producer (idempotent or transactional) and each
transaction marker it appends as leader (``producer_batch``, ``txn_marker``: one event per batch, none for
a duplicate, which appends nothing), for the checkers' fencing and marker rules (I25, I26).

Deliberate bugs (``bugs.py``) acting here: ``ack-before-replication`` answers acks=all at once,
``fetch-beyond-hwm`` serves consumers up to the LEO, ``ignore-min-isr`` hands the core MinISR = 1,
``aborted-read-committed`` drops the aborted-transaction list of read_committed answers,
``fenced-producer-accepted`` gives the core a producer state that lets fenced epochs append.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.follower_fetch import answer_now
from reference_impl.protocol.log import (
    CONTROL_ABORT,
    CONTROL_BIT,
    CONTROL_COMMIT,
    TRANSACTIONAL_BIT,
    LogBatch,
)
from reference_impl.protocol.producer_state import ProducerCheck, ProducerStateManager
from reference_impl.protocol.records import PartitionState
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import (
    ACKS_ALL,
    AppendResult,
    DeleteLog,
    ProduceBatch,
    ReplicaConfig,
    StartFetching,
    StopFetching,
)
from reference_impl.protocol.trace_events import (
    log_deleted_event,
    log_recovery_events,
    producer_batch_event,
    txn_marker_event,
)
from reference_impl.protocol.txn import produce_error_for_verification
from reference_impl.server import services as sv
from reference_impl.server.bugs import historical_bug, is_active
from reference_impl.server.config import NodeConfig
from reference_impl.server.storage.segment_log import SegmentLog
from reference_impl.server.trace import Tracer, log
from reference_impl.server.txn_batches import batch_txn_fields, marker_batch
from reference_impl.server.wire.records import CorruptBatch, iter_batches, rewrite_batch

# (transactional id, producer id, producer epoch, topic, partition) -> the coordinator's answer (KIP-890)
Verifier = Callable[[str, int, int, str, int], Awaitable[Errors]]


def now_ms() -> int:
    """Protocol time: the monotonic clock in ms (never the wall clock, which the clock nemesis skews)."""
    return time.monotonic_ns() // 1_000_000


def partition_dir_name(topic: str, partition: int) -> str:
    """Kafka's partition directory name ``<topic>-<partition>``."""
    return f"{topic}-{partition}"


@dataclass
class Partition:
    """One hosted partition: names, the replica core, its log."""

    topic: str
    topic_id: str
    partition: int
    replica: PartitionReplica
    log: SegmentLog


class ReplicaManager:
    """All partition replicas of this broker, with the fetch-waiting and ack-waiting machinery."""

    def __init__(self, config: NodeConfig, tracer: Tracer,
                 on_fetcher_change: Callable[[Partition, int | None], None] | None = None,
                 segment_bytes: int = 1 << 30) -> None:
        self.config = config
        self.tracer = tracer
        self.node = config.name
        self.broker_id = config.node_id
        self.broker_epoch = -1
        self.segment_bytes = segment_bytes
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.recovered_logs: dict[str, SegmentLog] = {}
        # (topic, partition) -> leader id it fetches from, or None: the fetcher manager listens here.
        self.on_fetcher_change = on_fetcher_change or (lambda p, leader: None)
        self._acks: dict[tuple[tuple[str, int], int], asyncio.Future] = {}
        self._change: asyncio.Future | None = None
        self.topic_min_isr: dict[str, int] = {}
        # (topic, partition, producer id) -> its transactional batches' turn (``_append``; one lock per
        # producer that ever wrote here, kept: dropping one while a waiter holds it would let two through)
        self._txn_locks: dict[tuple[str, int, int], asyncio.Lock] = {}
        # (topic, partition, producer id, commit): a marker this broker wrote as leader is replicated (the
        # group coordinator applies a transaction's offsets then)
        self.on_marker_written: Callable[[str, int, int, bool], None] = lambda t, p, pid, commit: None
        min_isr = 1 if is_active(config.inject_bug, "ignore-min-isr") else config.min_insync_replicas
        self.replica_config = ReplicaConfig(variant=config.protocol_variant, min_insync_replicas=min_isr,
                                            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
                                            historical_bug=historical_bug(config.inject_bug),
                                            # the fenced-producer bug would be refused by the coordinator's
                                            # epoch check before it could act: it turns verification off
                                            transaction_verification=config.transaction_partition_verification_enable
                                            and not is_active(config.inject_bug, "fenced-producer-accepted"))

    # ------------------------------------------------------------------ storage lifecycle
    def recover_logs(self) -> list[str]:
        """B2 RECOVERY: open (and so recover) every partition directory under ``log.dirs``; notes returned."""
        notes: list[str] = []
        base = self.config.log_dirs
        for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            path = os.path.join(base, name)
            topic, sep, part = name.rpartition("-")
            if not sep or not part.isdigit() or not os.path.isdir(path):
                continue
            seg_log = self._open_log(path)
            self.recovered_logs[name] = seg_log
            notes += seg_log.recovery_notes
            summary_of = seg_log if self.replica_config.trace_log_summaries else None
            self.tracer.drain(log_recovery_events(topic, int(part), self.broker_id, seg_log.log_end_offset,
                                                  seg_log.checkpointed_high_watermark(), seg_log.recovery_notes,
                                                  log=summary_of))
        return notes

    def _open_log(self, path: str) -> SegmentLog:
        return SegmentLog(path, segment_bytes=self.segment_bytes, flush_messages=self.config.flush_messages,
                          flush_ms=self.config.flush_ms)

    def set_broker_epoch(self, epoch: int) -> None:
        """After registration: fetches and APs carry the new broker epoch (L15, C14)."""
        self.broker_epoch = epoch
        for p in self.partitions.values():
            p.replica.broker_epoch = epoch

    # ------------------------------------------------------------------ per-topic settings
    def config_for(self, topic: str) -> ReplicaConfig:
        """The replica settings of a topic: a topic-level ``min.insync.replicas`` (a ConfigRecord from
        CreateTopics configs) overrides the broker's, as in Kafka (not under the ``ignore-min-isr`` bug)."""
        override = self.topic_min_isr.get(topic)
        if override is None or is_active(self.config.inject_bug, "ignore-min-isr"):
            return self.replica_config
        return dataclasses.replace(self.replica_config, min_insync_replicas=override)

    def set_topic_min_isr(self, topic: str, value: int | None) -> None:
        """A topic's min.insync.replicas changed in the metadata: hosted replicas use it from now on."""
        if value is None:
            self.topic_min_isr.pop(topic, None)
        else:
            self.topic_min_isr[topic] = value
        for part in self.partitions.values():
            if part.topic == topic:
                part.replica.config = self.config_for(topic)
                self._after(part)

    # ------------------------------------------------------------------ metadata (T1-T7)
    def apply_partition_state(self, topic: str, topic_id: str, partition: int, state: PartitionState) -> None:
        """Hand the materialized state of one partition to its replica and execute the resulting actions."""
        key = (topic, partition)
        part = self.partitions.get(key)
        if part is None:
            name = partition_dir_name(topic, partition)
            if self.broker_id not in state.replicas:
                # T1 for a replica removed while this broker was away: its leftover log goes.
                stale = self.recovered_logs.pop(name, None)
                if stale is not None:
                    stale.delete()
                    log(self.node, f"deleted leftover log {name} (not a replica)")
                return
            seg_log = self.recovered_logs.pop(name, None) or self._open_log(
                os.path.join(self.config.log_dirs, name))
            cls = HwmIgnoresIsrReplica if is_active(self.config.inject_bug, "hwm-ignores-isr") else PartitionReplica
            replica = cls(self.broker_id, topic_id, partition, seg_log, self.config_for(topic),
                          broker_epoch=self.broker_epoch)
            if is_active(self.config.inject_bug, "fenced-producer-accepted"):
                replica.producer_state = ZombieAcceptingProducerState()
                replica.producer_state.rebuild(seg_log.batches())
            part = Partition(topic, topic_id, partition, replica, seg_log)
            self.partitions[key] = part
        actions = part.replica.apply_metadata(state, now_ms())
        for action in actions:
            if isinstance(action, StartFetching):
                self.on_fetcher_change(part, action.leader_id)
            elif isinstance(action, StopFetching):
                self.on_fetcher_change(part, None)
            elif isinstance(action, DeleteLog):
                self.on_fetcher_change(part, None)
                self._after(part)
                del self.partitions[key]
                part.log.delete()
                self.tracer.write(log_deleted_event(topic, partition, self.broker_id))
                return
        self._after(part)

    # ------------------------------------------------------------------ after every core call
    def _after(self, part: Partition) -> None:
        acks = part.replica.drain_completed_acks()
        for ack in acks:
            fut = self._acks.pop(((part.topic, part.partition), ack.ack_id), None)
            if fut is not None and not fut.done():
                fut.set_result(ack)
        events = part.replica.drain_events()
        if events:
            self.tracer.drain(events, topic=part.topic)
        # Only a real change wakes long-polling fetches: every change a fetch answer depends on (records,
        # HWM, role, epochs, ISR) is traced by the core. A call that changed nothing (a parked fetch looking
        # again) must not wake the others, or two parked fetches would wake each other without end.
        if (events or acks) and self._change is not None and not self._change.done():
            self._change.set_result(None)
            self._change = None

    def _change_future(self) -> asyncio.Future:
        """A future resolved at the next change of any partition (taken BEFORE checking, so a change
        between the check and the wait is never missed)."""
        if self._change is None:
            self._change = asyncio.get_running_loop().create_future()
        return self._change

    def lookup(self, topic: str, partition: int) -> Partition | None:
        """The hosted partition, or None."""
        return self.partitions.get((topic, partition))

    def recovered_log(self, topic: str, partition: int) -> SegmentLog | None:
        """A log found on disk at start that the metadata has not claimed yet (``recover_logs``), or None."""
        return self.recovered_logs.get(partition_dir_name(topic, partition))

    # ------------------------------------------------------------------ produce (L1, L2, L5)
    async def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                           commit: bool, coordinator_epoch: int, timeout_ms: int) -> sv.ProduceResult:
        """WriteTxnMarkers for one partition: append a COMMIT / ABORT control batch as leader and wait
        until it is replicated (acks=all, as Kafka's coordinator-origin appends)."""
        batch = marker_batch(producer_id, producer_epoch, CONTROL_COMMIT if commit else CONTROL_ABORT,
                             coordinator_epoch, int(time.time() * 1000))
        result = await self.produce(topic, partition, batch, ACKS_ALL, timeout_ms, True, from_coordinator=True)
        if result.error == Errors.NONE:
            self.on_marker_written(topic, partition, producer_id, commit)
        return result

    async def produce(self, topic: str, partition: int, records: bytes, acks: int, timeout_ms: int,
                      known_topic: bool, from_coordinator: bool = False, transactional_id: str | None = None,
                      verifier: Verifier | None = None) -> sv.ProduceResult:
        """Append each batch of ``records`` as leader; for acks=all wait for the L5 verdict of the last one.
        Control batches (transaction markers) are accepted only ``from_coordinator``. A transactional
        batch that would open a transaction here is first verified with its coordinator (``verifier``,
        KIP-890 part 1) when the core asks for verification."""
        part = self.lookup(topic, partition)
        if part is None:
            return sv.ProduceResult(Errors.NOT_LEADER_OR_FOLLOWER if known_topic
                                    else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            headers = list(iter_batches(records))
        except CorruptBatch as exc:
            return sv.ProduceResult(Errors.CORRUPT_MESSAGE, error_message=str(exc))
        first_base, result, fut = -1, None, None
        wait = acks == ACKS_ALL and not is_active(self.config.inject_bug, "ack-before-replication")
        for pos, h in headers:
            raw = records[pos:pos + h.size]
            if h.is_control and not from_coordinator:  # only a coordinator writes markers, as in Kafka
                return sv.ProduceResult(Errors.INVALID_RECORD, error_message="control batch from a producer")
            if h.producer_id >= 0 and h.base_sequence < 0 and not from_coordinator:
                # only a coordinator's batches go without a sequence (the core skips their sequence check)
                return sv.ProduceResult(Errors.INVALID_RECORD, error_message="producer batch without a sequence")
            fields = batch_txn_fields(raw)  # (attributes, control type): read once, for the core and the trace
            appended = await self._append(part, topic, partition, raw, h, fields, acks, transactional_id, verifier)
            if isinstance(appended, sv.ProduceResult):
                return appended  # refused before the core saw it (verification)
            result = appended
            self._trace_producer_append(part, h, fields, result)
            key = ((topic, partition), result.ack_id)
            if result.pending and wait:
                # registered before _after() drains completed acks, so no verdict can slip past it
                fut = asyncio.get_running_loop().create_future()
                self._acks[key] = fut
            self._after(part)
            if not result.error.ok:
                return sv.ProduceResult(result.error.code, log_start_offset=part.log.log_start_offset,
                                        error_message=result.error.message)
            if first_base < 0:
                first_base = result.base_offset
        assert result is not None  # iter_batches yields at least one batch for non-empty records
        if fut is not None and result.pending:
            try:
                ack = await asyncio.wait_for(asyncio.shield(fut), timeout_ms / 1000)
            except TimeoutError:
                self._acks.pop(((topic, partition), result.ack_id), None)
                return sv.ProduceResult(Errors.REQUEST_TIMED_OUT, first_base, -1, part.log.log_start_offset)
            except asyncio.CancelledError:
                raise
            return sv.ProduceResult(ack.error.code, first_base, -1, part.log.log_start_offset,
                                    ack.error.message)
        return sv.ProduceResult(Errors.NONE, first_base, -1, part.log.log_start_offset)

    def _trace_producer_append(self, part: Partition, h: Any, fields: tuple[int, int], result: AppendResult) -> None:
        """Trace a producer's batch or a marker the core appended as leader (a refused batch and a
        duplicate have no offset of their own: nothing was appended)."""
        if h.producer_id < 0 or result.duplicate or result.base_offset < 0:
            return
        attributes, control_type = fields
        replica = part.replica
        if h.is_control:
            event = txn_marker_event(part.topic, part.partition, self.broker_id, replica.leader_epoch, h.producer_id,
                                     h.producer_epoch, control_type == CONTROL_COMMIT, result.base_offset)
        else:
            event = producer_batch_event(part.topic, part.partition, self.broker_id, replica.leader_epoch,
                                         h.producer_id, h.producer_epoch, result.base_offset,
                                         bool(attributes & TRANSACTIONAL_BIT))
        self.tracer.write(event)

    async def _append(self, part: Partition, topic: str, partition: int, raw: bytes, h: Any,
                      fields: tuple[int, int], acks: int,
                      transactional_id: str | None, verifier: Verifier | None) -> AppendResult | sv.ProduceResult:
        """One batch into the core. A producer's transactional batches go one at a time per partition, so a
        batch waiting for its verification (KIP-890 part 1, when it would open a transaction) is not
        overtaken by the next one: Kafka serialises a connection's requests, this server runs them
        concurrently and only answers them in order. Nothing awaits after the core's append, so the caller
        registers its ack before any verdict can be drained."""
        attributes, control_type = fields
        if not attributes & TRANSACTIONAL_BIT or h.is_control:
            return self._append_now(part, raw, h, acks, attributes, control_type, None)
        async with self._txn_locks.setdefault((topic, partition, h.producer_id), asyncio.Lock()):
            guard = None
            state = part.replica.producer_state
            if (transactional_id and verifier is not None and part.replica.role == LEADER
                    and self.replica_config.transaction_verification
                    and state.needs_verification(h.producer_id, attributes)):
                guard = state.start_verification(h.producer_id, h.producer_epoch)
                answer = await verifier(transactional_id, h.producer_id, h.producer_epoch, topic, partition)
                code = produce_error_for_verification(answer)
                if code != Errors.NONE:
                    return sv.ProduceResult(code, error_message="transaction verification failed")
                if self.lookup(topic, partition) is not part:
                    return sv.ProduceResult(Errors.NOT_LEADER_OR_FOLLOWER)
            return self._append_now(part, raw, h, acks, attributes, control_type, guard)

    @staticmethod
    def _append_now(part: Partition, raw: bytes, h: Any, acks: int, attributes: int, control_type: int,
                    guard: int | None) -> AppendResult:
        replica = part.replica
        # L2: stamp the offsets and epoch the core will assign (it appends at its LEO in its LE).
        payload = rewrite_batch(raw, replica.log_end_offset, replica.leader_epoch) if replica.role == LEADER else raw
        return replica.append_as_leader(
            ProduceBatch(h.last_offset_delta + 1, payload, h.producer_id, h.producer_epoch, h.base_sequence,
                         h.max_timestamp, attributes, control_type, verification_guard=guard),
            acks, now_ms())

    # ------------------------------------------------------------------ fetch (L8-L10, long polling)
    async def fetch(self, spec: sv.FetchSpec, known_topic: Callable[[str], bool]) -> sv.FetchResult:
        """Serve a follower or consumer fetch, waiting up to ``max_wait_ms`` for ``min_bytes``."""
        deadline = time.monotonic() + spec.max_wait_ms / 1000
        while True:
            results, size, urgent = [], 0, False
            for p in spec.partitions:
                r = self._fetch_one(spec, p, known_topic)
                results.append(r)
                size += len(r.records)
                urgent |= r.error != Errors.NONE or r.diverging_epoch is not None
            remaining = deadline - time.monotonic()
            if answer_now(urgent, size, spec.min_bytes, remaining <= 0):
                return sv.FetchResult(tuple(results))
            # Taken after this fetch's own core calls (whose ``_after`` counts as a change and would wake it
            # at once, a busy loop until the deadline), and before any await, so no other change is missed.
            change = self._change_future()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(change), remaining)

    def _fetch_one(self, spec: sv.FetchSpec, p: sv.FetchPartitionSpec,
                   known_topic: Callable[[str], bool]) -> sv.FetchPartitionResult:
        part = self.lookup(p.topic, p.partition)
        if part is None:
            err = Errors.NOT_LEADER_OR_FOLLOWER if known_topic(p.topic) else Errors.UNKNOWN_TOPIC_OR_PARTITION
            return sv.FetchPartitionResult(p.topic, p.partition, err)
        replica = part.replica
        if spec.replica_id >= 0:
            r = replica.handle_follower_fetch(spec.replica_id, spec.replica_epoch, p.current_leader_epoch,
                                              p.fetch_offset, p.last_fetched_epoch, p.partition_max_bytes,
                                              now_ms())
            self._after(part)
        elif is_active(self.config.inject_bug, "fetch-beyond-hwm") and replica.role == LEADER:
            r = replica.read_committed(p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
            if r.error.ok:  # bug: everything up to the LEO, not only below the HWM (breaks I15)
                r = type(r)(r.error, r.leader_epoch, r.fetch_offset, r.high_watermark, r.log_start_offset,
                            r.last_stable_offset, None, tuple(part.log.read(p.fetch_offset, p.partition_max_bytes)))
        else:
            r = replica.read_committed(p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                                       spec.isolation_level)
        current = None
        if r.error.code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH):
            current = (replica.leader_id, replica.leader_epoch)
        div = r.diverging_epoch
        return sv.FetchPartitionResult(
            p.topic, p.partition, r.error.code, r.high_watermark, r.last_stable_offset, r.log_start_offset,
            b"".join(b.payload for b in r.batches), (div.epoch, div.end_offset) if div else None, current,
            aborted_transactions=self._aborted_list(r, spec.isolation_level))

    def _aborted_list(self, r: Any, isolation_level: int) -> tuple[tuple[int, int], ...] | None:
        """The aborted transactions a read_committed answer carries (none at read_uncommitted); the
        ``aborted-read-committed`` bug leaves them out, so consumers keep aborted records."""
        if not isolation_level:
            return None
        return () if is_active(self.config.inject_bug, "aborted-read-committed") else r.aborted_transactions

    # ------------------------------------------------------------------ list offsets / epochs (L11, L18)
    def list_offsets(self, q: sv.ListOffsetsPartitionSpec, known_topic: bool,
                     isolation_level: int = 0) -> sv.ListOffsetsResult:
        """ListOffsets for one partition through the core (L18; LATEST is the LSO at read_committed)."""
        part = self.lookup(q.topic, q.partition)
        if part is None:
            return sv.ListOffsetsResult(q.topic, q.partition, Errors.NOT_LEADER_OR_FOLLOWER if known_topic
                                        else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        r = part.replica.list_offsets(q.timestamp, q.current_leader_epoch, isolation_level)
        return sv.ListOffsetsResult(q.topic, q.partition, r.error.code, r.timestamp, r.offset, r.leader_epoch)

    def offset_for_leader_epoch(self, q: sv.EpochQuery, known_topic: bool) -> sv.EpochEndOffset:
        """OffsetForLeaderEpoch as leader: L8's epoch check, then L11 with the current-LE clause."""
        part = self.lookup(q.topic, q.partition)
        if part is None:
            return sv.EpochEndOffset(q.topic, q.partition, Errors.NOT_LEADER_OR_FOLLOWER if known_topic
                                     else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        replica = part.replica
        # L8: the same fencing a fetch gets (the core's check is private to its fetch path).
        if q.current_leader_epoch >= 0 and q.current_leader_epoch > replica.leader_epoch:
            return sv.EpochEndOffset(q.topic, q.partition, Errors.UNKNOWN_LEADER_EPOCH)
        if q.current_leader_epoch >= 0 and q.current_leader_epoch < replica.leader_epoch:
            return sv.EpochEndOffset(q.topic, q.partition, Errors.FENCED_LEADER_EPOCH)
        if replica.role != LEADER:
            return sv.EpochEndOffset(q.topic, q.partition, Errors.NOT_LEADER_OR_FOLLOWER)
        ans: EpochEndOffset = part.log.end_offset_for_epoch(q.leader_epoch, replica.leader_epoch)
        return sv.EpochEndOffset(q.topic, q.partition, Errors.NONE, ans.epoch, ans.end_offset)

    # ------------------------------------------------------------------ follower side hooks
    def after_fetch_response(self, part: Partition) -> None:
        """Called by a fetcher after ``handle_fetch_response`` (drains events, wakes waiters)."""
        self._after(part)

    # ------------------------------------------------------------------ periodic work
    def periodic(self, flush_now_ms: int, checkpoint: bool) -> None:
        """flush.ms policy and the HWM checkpoint (Kafka: every 5 s and at shutdown)."""
        for part in list(self.partitions.values()):
            part.log.maybe_flush(flush_now_ms)
            if checkpoint:
                part.replica.checkpoint_high_watermark()
                part.log.persist_high_watermark()

    def shutdown(self) -> None:
        """B4 clean stop: nack pending writes, flush, checkpoint, close every log."""
        for part in list(self.partitions.values()):
            part.replica.shutdown()
            self._after(part)
            part.log.close()
        for seg_log in self.recovered_logs.values():
            seg_log.close()
        for fut in self._acks.values():
            if not fut.done():
                fut.cancel()
        self._acks.clear()


class HwmIgnoresIsrReplica(PartitionReplica):
    """The ``hwm-ignores-isr`` bug (L3 broken on purpose): a leader's HWM jumps to its LEO on every
    recomputation, without waiting for the ISR followers. Everything else is the correct core."""

    def _maybe_advance_hwm(self) -> None:
        if self.role == LEADER and self.log.log_end_offset > self.high_watermark:
            self._set_hwm(self.log.log_end_offset)
            self._complete_acks()


class ZombieAcceptingProducerState(ProducerStateManager):
    """The ``fenced-producer-accepted`` bug (KIP-98 fencing broken on purpose): a transactional batch of a
    producer epoch older than the partition's is appended instead of refused. Everything else is the core."""

    def check(self, producer_id: int, producer_epoch: int, base_sequence: int, record_count: int,
              attributes: int = 0) -> ProducerCheck:
        current = self.entry(producer_id)
        if (attributes & TRANSACTIONAL_BIT and not attributes & CONTROL_BIT and current is not None
                and producer_epoch < current.producer_epoch):
            return ProducerCheck()
        return super().check(producer_id, producer_epoch, base_sequence, record_count, attributes)


def decode_log_batches(records: bytes) -> list[LogBatch]:
    """Turn raw v2 batches from a leader's fetch answer into ``LogBatch`` values for the follower core."""
    out: list[LogBatch] = []
    for pos, h in iter_batches(records):
        payload = bytes(records[pos:pos + h.size])
        attributes, control_type = batch_txn_fields(payload)
        out.append(LogBatch(h.base_offset, h.last_offset_delta + 1, h.partition_leader_epoch, h.producer_id,
                            h.producer_epoch, h.base_sequence, h.max_timestamp, payload, attributes, control_type))
    return out


def describe_partition(part: Partition) -> dict[str, Any]:
    """A summary for logs and tests."""
    r = part.replica
    return {"topic": part.topic, "partition": part.partition, "role": r.role, "leader": r.leader_id,
            "leader_epoch": r.leader_epoch, "isr": list(r.isr), "hwm": r.high_watermark,
            "leo": r.log_end_offset}
