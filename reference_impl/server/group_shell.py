"""A broker's group coordinator shell: the sans-IO core (``protocol.groups``) given a log, a clock and time.

What the shell does for the core:
- **requests**: each JoinGroup / SyncGroup / OffsetCommit gets a token and a future; the core's ``Reply``
  outputs resolve them (at once, or when a rebalance or a write completes);
- **writes**: each ``Append`` output becomes one v2 record batch appended to its ``__consumer_offsets``
  partition through the replica manager, with acks=all and the produce gate of L1, exactly as a client's
  produce; the outcome (NONE once the batch is below the HWM, else the produce error) goes back to the
  core with ``append_done``;
- **leadership**: after every metadata batch, ``on_metadata`` compares the offsets partitions this broker
  leads (and their leader epochs) with what the core has loaded: a partition it newly leads is read from
  the log (log start to log end) and loaded, one it no longer leads is unloaded;
- **transactions**: a TxnOffsetCommit's records go as a transactional batch of its producer; a marker
  the transaction coordinator writes to an offsets partition this broker leads is passed on
  (``on_txn_marker``), and a load reads transactional batches and markers as such;
- **trace**: what the core decided (a generation begun, an assignment handed, an offset commit accepted:
  ``GroupCoordinator.drain_events``) is written with this broker's id before the outputs of the same call
  are executed, so the trace shows a generation, an assignment or an accepted commit before any client is
  told of it; an append's log offset goes back to the core with its outcome, for those events;
- **time**: ``tick`` every ``TICK_MS`` (sessions, pending member ids, rebalance deadlines);
- **the topic**: ``ensure_offsets_topic`` asks the controller to create ``__consumer_offsets`` (through the
  broker's forwarding link, as Kafka brokers auto-create it on the first FindCoordinator).

Bugs acting here (``bugs.py``), as core switches: ``offsets-commit-stale-generation`` and
``group-double-assign``.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import TYPE_CHECKING, Any

from kafka.protocol.admin import CreateTopicsRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from reference_impl.protocol.broker_session import accepts_produce
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import OFFSETS_TOPIC, GroupConfig, GroupCoordinator
from reference_impl.protocol.groups import messages as m
from reference_impl.protocol.groups.records import (
    OffsetCommitRecord,
    TxnMarker,
    TxnOffsets,
    UndecodableRecord,
    decode,
    encode,
)
from reference_impl.protocol.log import CONTROL_COMMIT
from reference_impl.protocol.replica import LEADER
from reference_impl.protocol.replica_messages import ACKS_ALL
from reference_impl.server.bugs import is_active
from reference_impl.server.replica_manager import now_ms
from reference_impl.server.trace import log
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.records import CorruptBatch, decode_records

if TYPE_CHECKING:
    from reference_impl.server.broker import Broker

TICK_MS = 100
APPEND_TIMEOUT_MS = 5000  # Kafka's offsets.commit.timeout.ms
OFFSETS_REPLICATION_FACTOR = 3  # Kafka's offsets.topic.replication.factor (capped by the brokers there are)
CREATE_TOPICS_VERSION = 5


class GroupShell:
    """The coordinator of one broker (module docstring)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        bug = broker.config.inject_bug
        self.config = GroupConfig(
            accept_stale_generation_commits=is_active(bug, "offsets-commit-stale-generation"),
            hand_leader_assignment_to_all=is_active(bug, "group-double-assign"))
        self.core = GroupCoordinator(self.config, random.Random(os.urandom(16)))
        self._futures: dict[int, asyncio.Future] = {}
        self._next_token = 0
        self._tasks: set[asyncio.Task] = set()
        self._creating: asyncio.Task | None = None

    # ------------------------------------------------------------------------- requests
    async def call(self, method: str, request: Any) -> Any:
        """Hand ``request`` to the core's ``method`` (join_group / sync_group / offset_commit) and wait
        for its reply."""
        self._next_token += 1
        token = self._next_token
        fut = self._futures[token] = asyncio.get_running_loop().create_future()
        getattr(self.core, method)(token, request, now_ms())
        self._pump()
        try:
            return await fut
        finally:
            self._futures.pop(token, None)

    def direct(self, method: str, *args: Any) -> Any:
        """A request the core answers at once (heartbeat, leave, fetch, describe, list)."""
        if method in ("heartbeat", "leave_group"):
            result = getattr(self.core, method)(*args, now_ms())
        else:
            result = getattr(self.core, method)(*args)
        self._pump()
        return result

    def _pump(self) -> None:
        events = self.core.drain_events()
        if events:
            self.broker.tracer.drain(events, broker=self.broker.config.node_id)
        for out in self.core.drain():
            if isinstance(out, m.Reply):
                fut = self._futures.get(out.token)
                if fut is not None and not fut.done():
                    fut.set_result(out.result)
            else:
                task = asyncio.create_task(self._write(out))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _write(self, append: m.Append) -> None:
        """One ``Append``: a record batch through the same produce path as clients' (acks=all). A
        transaction's offsets (``append.txn``) go as a transactional batch of its producer, without a
        sequence, verified with the transaction coordinator like any batch that opens a transaction."""
        transactional_id, producer_id, producer_epoch = append.txn or (None, -1, -1)
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=append.txn is not None,
                                            producer_id=producer_id, producer_epoch=producer_epoch,
                                            base_sequence=-1, batch_size=1 << 30)
        stamp = int(now_ms())
        for i, record in enumerate(append.records):
            key, value = encode(record)
            builder.append(i, timestamp=stamp, key=key, value=value, headers=[])
        batch = bytes(builder.build())
        log_offset = -1
        if not accepts_produce(self.broker.lifecycle):
            error = Errors.NOT_LEADER_OR_FOLLOWER
        else:
            try:
                result = await self.broker.manager.produce(OFFSETS_TOPIC, append.partition, batch, ACKS_ALL,
                                                           APPEND_TIMEOUT_MS, True, from_coordinator=True,
                                                           transactional_id=transactional_id,
                                                           verifier=self.broker.txn.verify)
                error, log_offset = result.error, result.base_offset
            except asyncio.CancelledError:
                raise
        self.core.append_done(append.append_id, error, now_ms(), log_offset)
        self._pump()

    # ------------------------------------------------------------------------- leadership
    def on_metadata(self) -> None:
        """Load the offsets partitions this broker now leads, unload those it stopped leading."""
        leading: dict[int, int] = {}
        for (topic, partition), part in self.broker.manager.partitions.items():
            if topic == OFFSETS_TOPIC and part.replica.role == LEADER:
                leading[partition] = part.replica.leader_epoch
        for partition in [p for p in self.core.loaded if p not in leading]:
            epoch = self.core.loaded[partition]
            self.core.unload(partition)
            log(self.broker.node, f"group coordinator: unloaded {OFFSETS_TOPIC}-{partition}")
            self._trace("unload", partition, epoch)
        for partition, epoch in leading.items():
            if self.core.loaded.get(partition) != epoch:
                records = self._read_partition(partition)
                self.core.load(partition, epoch, records, now_ms())
                log(self.broker.node, f"group coordinator: loaded {OFFSETS_TOPIC}-{partition} at leader epoch "
                                      f"{epoch} ({len(records)} records, {len(self.core.groups)} groups)")
                self._trace("load", partition, epoch, records=len(records),
                            groups=sorted(g for g, grp in self.core.groups.items() if grp.partition == partition))
        self._pump()

    def on_txn_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written (acks=all) to offsets partition ``partition`` as its leader:
        the transaction's offsets there take effect or are dropped (Kafka's onTransactionCompleted)."""
        self.core.complete_txn(partition, producer_id, commit)
        self._pump()

    def _trace(self, action: str, partition: int, leader_epoch: int, **extra: Any) -> None:
        # ``offsets_partition``, not ``partition``: the replica events of that partition are the invariants'
        # business; this one only says where the groups' coordinator is.
        self.broker.tracer.emit("group_coordinator", action=action, broker=self.broker.config.node_id,
                                offsets_partition=partition, leader_epoch=leader_epoch, **extra)

    def _read_partition(self, partition: int) -> list:
        part = self.broker.manager.lookup(OFFSETS_TOPIC, partition)
        if part is None:
            return []
        out: list = []
        offset = part.log.log_start_offset
        while offset < part.log.log_end_offset:
            batches = part.log.read(offset, 1 << 20)
            if not batches:
                break
            for b in batches:
                try:
                    if b.is_control:
                        out.append(TxnMarker(b.producer_id, b.control_type == CONTROL_COMMIT))
                    elif b.is_transactional:
                        out.append(TxnOffsets(b.producer_id, tuple(
                            r for r in (decode(x.key, x.value) for x in decode_records(b.payload))
                            if isinstance(r, OffsetCommitRecord))))
                    else:
                        for r in decode_records(b.payload):
                            out.append(decode(r.key, r.value))
                except (CorruptBatch, UndecodableRecord) as exc:
                    log(self.broker.node, f"group coordinator: skipped a record of {OFFSETS_TOPIC}-{partition}: "
                                          f"{exc}")
                offset = max(offset, b.next_offset)
        return out

    # ------------------------------------------------------------------------- timers, topic
    async def run(self) -> None:
        """The coordinator's timer (sessions, pending member ids, rebalance deadlines)."""
        while True:
            await asyncio.sleep(TICK_MS / 1000)
            self.core.tick(now_ms())
            self._pump()

    def leader_of(self, group_id: str) -> int:
        """The broker that leads the group's offsets partition (-1: none, or the topic does not exist)."""
        image = self.broker.image
        tid = image.topic_id(OFFSETS_TOPIC)
        if tid is None:
            return -1
        state = image.partitions.get((tid, self.core.partition_of(group_id)))
        return -1 if state is None else state.leader

    def endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where clients reach ``broker_id`` (None while it is unknown)."""
        return self.broker._endpoint(broker_id)

    def ensure_offsets_topic(self) -> None:
        """Ask the controller to create ``__consumer_offsets`` if it does not exist (once at a time)."""
        if self.broker.image.topic_id(OFFSETS_TOPIC) is not None:
            return
        if self._creating is not None and not self._creating.done():
            return
        self._creating = asyncio.create_task(self._create_offsets_topic())

    async def _create_offsets_topic(self) -> None:
        brokers = len(self.broker.image.brokers)
        rf = max(1, min(OFFSETS_REPLICATION_FACTOR, brokers))
        cls = CreateTopicsRequest
        request = cls(version=CREATE_TOPICS_VERSION, timeout_ms=10_000, validate_only=False, topics=[
            cls.CreatableTopic(name=OFFSETS_TOPIC, num_partitions=self.config.offsets_partitions,
                               replication_factor=rf, assignments=[], configs=[])])
        request.with_header(correlation_id=0, client_id=f"broker-{self.broker.config.node_id}")
        raw = bytes(request.encode(header=True, framed=False))
        try:
            await self.broker.link.forward(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, raw)
            log(self.broker.node, f"asked the controller to create {OFFSETS_TOPIC} "
                                  f"({self.config.offsets_partitions} partitions, replication factor {rf})")
        except (ConnectionError, TimeoutError, OSError) as exc:
            log(self.broker.node, f"creating {OFFSETS_TOPIC} failed: {exc!r}")

    async def close(self) -> None:
        """Cancel the writes in flight (their requests are answered by the connection's end)."""
        for task in list(self._tasks):
            task.cancel()
        if self._creating is not None:
            self._creating.cancel()
