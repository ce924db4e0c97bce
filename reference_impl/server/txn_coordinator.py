"""The broker's transaction coordinator shell: the core's ``TransactionCoordinator`` given a log and a network.

For each partition of ``__transaction_state`` this broker **leads**, one ``TransactionCoordinator`` holds
the transactional ids that hash to it. Its state is the partition's log and nothing else:

- **Leadership gain** (seen at the first request or the next tick after the replica became leader in a new
  leader epoch): the coordinator is rebuilt by replaying every record of the partition's log, and every
  transaction left in PrepareCommit / PrepareAbort has its markers sent again (a new coordinator finishes
  what a crashed one decided).
- **Loss**: the coordinator is dropped; requests for its ids are answered NOT_COORDINATOR, so clients
  look the coordinator up again (FindCoordinator key type 1 names the partition's current leader).
- **Writes**: the records a request decides are appended to the partition as an ordinary acks=all produce
  (so they are replicated, committed and traced like any data) and replayed only once acknowledged; a
  write that fails is abandoned and answered NOT_COORDINATOR, and the coordinator is reloaded from the
  partition's committed records only (a deposed leader cut off from the cluster must not send markers for
  a decision that never committed).
- **Markers**: once a Prepare* record is durable, a task writes the markers: to a partition this broker
  leads through its own replica manager, to any other leader with WriteTxnMarkers (API 27), retrying
  until every partition has its marker or this broker stops being the coordinator; then the Complete*
  record is written.
- **Timeouts**: a tick aborts every Ongoing transaction older than its timeout (epoch bumped).
- **Trace**: every state record whose write is acknowledged is traced as a ``txn_transition`` (from the
  state this coordinator held to the record's), before it is replayed and before any marker of it is
  sent: acks=all means committed in the state partition, which is the decision whichever coordinator
  finishes it, so it is traced also when this coordinator was deposed meanwhile (I25).
- **Verification** (KIP-890 part 1): a partition leader about to open a transaction asks the id's
  coordinator whether the partition is in it: ``verify`` answers locally or sends AddPartitionsToTxn v4
  with VerifyOnly to the coordinator's broker, which answers with ``verify_local``.

The topic is created the first time a transactional id is looked up (as Kafka creates its internal
topics): ``TXN_STATE_PARTITIONS`` partitions, replication factor min(3, registered brokers) and
``min.insync.replicas`` min(2, that factor).

Deliberate bug acting here: ``txn-markers-not-written`` completes a committed transaction without writing
its markers (the client's EndTxn was answered OK).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, WriteTxnMarkersRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.groups import OFFSETS_TOPIC
from reference_impl.protocol.groups import partition_for as offsets_partition_for
from reference_impl.protocol.replica import LEADER
from reference_impl.protocol.replica_messages import ACKS_ALL
from reference_impl.protocol.trace_events import txn_transition_event
from reference_impl.protocol.txn import (
    TRANSACTION_STATE_TOPIC,
    TransactionCoordinator,
    TxnDecision,
    TxnMetadata,
    TxnState,
    partition_for,
)
from reference_impl.server.bugs import is_active
from reference_impl.server.replica_manager import ReplicaManager, now_ms
from reference_impl.server.trace import log, log_throttled
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.client import WireClient
from reference_impl.server.wire.records import decode_records

TXN_STATE_PARTITIONS = 3
WRITE_TIMEOUT_MS = 5_000
MARKER_RETRY_S = 0.2
TICK_S = 0.2
VERIFY_TIMEOUT_S = 2.0  # a verification the coordinator does not answer in time: the producer retries


def encode_state_records(records: tuple[TxnMetadata, ...]) -> bytes:
    """The snapshots as one v2 batch of JSON values (key = the transactional id, as Kafka keys them)."""
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    ts = int(time.time() * 1000)
    for i, record in enumerate(records):
        builder.append(i, ts, record.transactional_id.encode(),
                       json.dumps(record.to_dict(), separators=(",", ":")).encode(), [])
    return bytes(builder.build())


def decode_state_records(payloads: list[bytes]) -> list[TxnMetadata]:
    """Inverse of ``encode_state_records`` over a partition's batches (in log order)."""
    out = []
    for payload in payloads:
        for r in decode_records(payload):
            if r.value is not None:
                out.append(TxnMetadata.from_dict(json.loads(r.value)))
    return out


class TxnCoordinatorShell:
    """Transaction coordinators of the state partitions this broker leads (see the module docstring)."""

    def __init__(self, manager: ReplicaManager, image: Any, node_id: int, node: str,
                 allocate_producer_id: Callable[[], int], forward: Callable[..., Any], inject_bug: str | None):
        self.manager = manager
        self.image = image
        self.node_id = node_id
        self.node = node
        self.allocate_producer_id = allocate_producer_id
        self.forward = forward  # BrokerServices.forward_to_controller
        self.skip_commit_markers = is_active(inject_bug, "txn-markers-not-written")
        self.coordinators: dict[int, TransactionCoordinator] = {}
        self._failed_epoch: dict[int, int] = {}  # state partition -> leader epoch in which a write failed
        self._clients: dict[int, WireClient] = {}  # markers
        self._verify_clients: dict[int, WireClient] = {}
        self._tasks: set[asyncio.Task] = set()
        self._creating: asyncio.Task | None = None

    # ------------------------------------------------------------------ where an id lives
    def state_partitions(self) -> int:
        """How many partitions ``__transaction_state`` has (0 while it does not exist)."""
        tid = self.image.topic_id(TRANSACTION_STATE_TOPIC)
        return 0 if tid is None else sum(1 for (t, _p) in self.image.partitions if t == tid)

    def find(self, transactional_id: str) -> tuple[Errors, int, str, int]:
        """FindCoordinator key type 1: ``(error, node id, host, port)`` of the id's coordinator."""
        count = self.state_partitions()
        if count == 0:
            self._create_topic()
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        state = self.image.partition(self.image.topic_id(TRANSACTION_STATE_TOPIC),
                                     partition_for(transactional_id, count))
        reg = self.image.brokers.get(state.leader) if state is not None else None
        if reg is None or reg.fenced:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return Errors.NONE, reg.broker_id, reg.host, reg.port

    def _create_topic(self) -> None:
        if self._creating is not None and not self._creating.done():
            return
        self._creating = asyncio.get_running_loop().create_task(self._create())

    async def _create(self) -> None:
        rf = max(1, min(3, len(self.image.brokers)))
        topic = CreateTopicsRequest.CreatableTopic(
            name=TRANSACTION_STATE_TOPIC, num_partitions=TXN_STATE_PARTITIONS, replication_factor=rf,
            assignments=[], configs=[CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(
                name="min.insync.replicas", value=str(min(2, rf)))])
        request = CreateTopicsRequest(topics=[topic], timeout_ms=WRITE_TIMEOUT_MS, validate_only=False)
        request.with_header(correlation_id=0, client_id=f"txn-coordinator-{self.node_id}")
        version = 5
        try:
            await self.forward(ApiKey.CREATE_TOPICS, version, bytes(request.encode(version=version, header=True)))
            log(self.node, f"asked the controller for {TRANSACTION_STATE_TOPIC} ({TXN_STATE_PARTITIONS} "
                           f"partitions, RF {rf})")
        except Exception as exc:  # the next lookup asks again
            log(self.node, f"creating {TRANSACTION_STATE_TOPIC} failed: {exc!r}")

    def coordinator(self, transactional_id: str) -> TransactionCoordinator | None:
        """This broker's coordinator of ``transactional_id``, loaded for the current leader epoch; None
        when another broker is (or no broker yet is) the coordinator."""
        count = self.state_partitions()
        if count == 0:
            return None
        return self._loaded(partition_for(transactional_id, count))

    def _loaded(self, partition: int) -> TransactionCoordinator | None:
        part = self.manager.lookup(TRANSACTION_STATE_TOPIC, partition)
        if part is None or part.replica.role != LEADER:
            self.coordinators.pop(partition, None)
            return None
        epoch = part.replica.leader_epoch
        coord = self.coordinators.get(partition)
        if coord is not None and coord.coordinator_epoch == epoch:
            return coord
        coord = TransactionCoordinator(partition, coordinator_epoch=epoch)
        # A new leader takes its whole log: it will commit its suffix, and a record acknowledged to its
        # predecessor may still lie above its own HWM. After a write of its own failed in the same leader
        # epoch it takes only what is committed: the failed record may never commit (this broker may be a
        # leader already deposed and cut off), and markers for an outcome nobody acknowledged would be a
        # decision its successor never sees.
        committed_only = self._failed_epoch.pop(partition, None) == epoch
        batches = part.log.batches()
        if committed_only:
            batches = [b for b in batches if b.next_offset <= part.replica.high_watermark]
        coord.load(decode_state_records([b.payload for b in batches]))
        self.coordinators[partition] = coord
        log(self.node, f"transaction coordinator for {TRANSACTION_STATE_TOPIC}-{partition} loaded at leader "
                       f"epoch {epoch}{' (committed records only)' if committed_only else ''}: "
                       f"{len(coord.txns)} ids, {len(coord.incomplete())} awaiting markers")
        for tid in coord.incomplete():
            self._spawn(self._finish(coord, tid))
        return coord

    def _current(self, coord: TransactionCoordinator) -> bool:
        """Is ``coord`` still this broker's coordinator of its partition in the same leader epoch?"""
        part = self.manager.lookup(TRANSACTION_STATE_TOPIC, coord.partition)
        return (part is not None and part.replica.role == LEADER
                and part.replica.leader_epoch == coord.coordinator_epoch
                and self.coordinators.get(coord.partition) is coord)

    # ------------------------------------------------------------------ durable writes
    async def write(self, coord: TransactionCoordinator, decision: TxnDecision) -> Errors:
        """Append the decision's records (acks=all) and replay them once acknowledged."""
        if not decision.records:
            return Errors.NONE
        tid = decision.records[0].transactional_id
        result = await self.manager.produce(TRANSACTION_STATE_TOPIC, coord.partition,
                                            encode_state_records(decision.records), ACKS_ALL, WRITE_TIMEOUT_MS,
                                            True)
        if result.error == Errors.NONE:
            self._trace_transitions(coord, decision.records)
        if result.error != Errors.NONE or not self._current(coord):
            log(self.node, f"state write for {tid} failed ({result.error.name}); reloading the coordinator")
            coord.abandon(tid)
            # The append may have reached the log all the same (a timeout): the next request reloads the
            # coordinator from the log's committed records (``_loaded``), so no decision rests on a record
            # that was never acknowledged; if that record commits later, the log's last snapshot of the id
            # still agrees with memory once the id's next decision is written.
            if self.coordinators.get(coord.partition) is coord:
                del self.coordinators[coord.partition]
                self._failed_epoch[coord.partition] = coord.coordinator_epoch
            return Errors.NOT_COORDINATOR
        for record in decision.records:
            coord.replay(record)
        return Errors.NONE

    def _trace_transitions(self, coord: TransactionCoordinator, records: tuple[TxnMetadata, ...]) -> None:
        """Trace committed state records as transitions from what ``coord`` held. A Complete* record holds no
        partitions: its event names the set of the Prepare* it completes, where the markers went."""
        previous = coord.txns.get(records[0].transactional_id)
        for record in records:
            partitions = record.partitions
            if record.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT) and previous is not None:
                partitions = previous.partitions
            event = txn_transition_event(record.transactional_id, record.producer_id, record.producer_epoch,
                                         None if previous is None else previous.state.value, record.state.value,
                                         list(partitions), coord.partition, coord.coordinator_epoch)
            self.manager.tracer.write({**event, "broker": self.node_id})
            previous = record

    # ------------------------------------------------------------------ requests
    # A client that gives up on a request closes its connection, and the server then cancels the handler.
    # A decision whose records are being written must still be replayed or abandoned, and its markers
    # sent, or the id would stay "pending" (CONCURRENT_TRANSACTIONS for every later request, never timed
    # out) and its open transaction would hold the partitions' last stable offsets forever. So each
    # request runs to its end as a task of its own; the handler only waits for it.
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> tuple[Errors, int, int]:
        """InitProducerId with a transactional id: ``(error, producer id, epoch)``."""
        return await self._detached(self._init_producer_id(transactional_id, timeout_ms, producer_id,
                                                           producer_epoch))

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: list[tuple[str, int]]) -> Errors:
        """AddPartitionsToTxn: one error for every partition of the request."""
        return await self._detached(self._add_partitions(transactional_id, producer_id, producer_epoch,
                                                         partitions))

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> Errors:
        """EndTxn: answered once the outcome (Prepare*) is durable; markers follow in a task."""
        return await self._detached(self._end_txn(transactional_id, producer_id, producer_epoch, commit))

    async def _detached(self, coro: Any) -> Any:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

    async def _init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                                producer_epoch: int) -> tuple[Errors, int, int]:
        coord = self.coordinator(transactional_id)
        if coord is None:
            return Errors.NOT_COORDINATOR, -1, -1
        decision = coord.init_producer_id(transactional_id, timeout_ms, now_ms(), self.allocate_producer_id(),
                                          producer_id, producer_epoch)
        if await self.write(coord, decision) != Errors.NONE:
            return Errors.NOT_COORDINATOR, -1, -1
        if decision.records and decision.records[-1].state.is_prepare:
            self._spawn(self._finish(coord, transactional_id))  # the fenced producer's transaction aborts
        return decision.error.code, decision.producer_id, decision.producer_epoch

    async def _add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: list[tuple[str, int]]) -> Errors:
        coord = self.coordinator(transactional_id)
        if coord is None:
            return Errors.NOT_COORDINATOR
        unknown = [(t, p) for t, p in partitions if self.image.topic_id(t) is None]
        if unknown:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        decision = coord.add_partitions(transactional_id, producer_id, producer_epoch, partitions, now_ms())
        if await self.write(coord, decision) != Errors.NONE:
            return Errors.NOT_COORDINATOR
        return decision.error.code

    async def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> Errors:
        """AddOffsetsToTxn: the ``__consumer_offsets`` partition of ``group_id`` joins the transaction."""
        topic_id = self.image.topic_id(OFFSETS_TOPIC)
        count = 0 if topic_id is None else sum(1 for (t, _p) in self.image.partitions if t == topic_id)
        if count == 0:
            return Errors.COORDINATOR_NOT_AVAILABLE  # no group coordinator yet: the producer retries
        if not group_id:
            return Errors.INVALID_GROUP_ID
        return await self.add_partitions(transactional_id, producer_id, producer_epoch,
                                         [(OFFSETS_TOPIC, offsets_partition_for(group_id, count))])

    async def _end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> Errors:
        coord = self.coordinator(transactional_id)
        if coord is None:
            return Errors.NOT_COORDINATOR
        decision = coord.end_txn(transactional_id, producer_id, producer_epoch, commit, now_ms())
        if await self.write(coord, decision) != Errors.NONE:
            return Errors.NOT_COORDINATOR
        if decision.records:
            self._spawn(self._finish(coord, transactional_id))
        return decision.error.code

    # ------------------------------------------------------------------ verification (KIP-890 part 1)
    def verify_local(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[tuple[str, int]]) -> dict[tuple[str, int], Errors]:
        """AddPartitionsToTxn with VerifyOnly, answered by this broker as the id's coordinator."""
        coord = self.coordinator(transactional_id)
        if coord is None:
            return dict.fromkeys(partitions, Errors.NOT_COORDINATOR)
        return coord.verify(transactional_id, producer_id, producer_epoch, partitions)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> Errors:
        """A partition leader's question before it opens a transaction: is ``topic``-``partition`` in the
        producer's ongoing transaction? Asked of the id's coordinator, here or over the wire
        (AddPartitionsToTxn v4, VerifyOnly)."""
        code, node, _host, _port = self.find(transactional_id)
        if code != Errors.NONE:
            return code
        if node == self.node_id:
            return self.verify_local(transactional_id, producer_id, producer_epoch, [(topic, partition)])[
                (topic, partition)]
        client = await self._client(node, self._verify_clients)
        if client is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        txn = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=True, topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(
                name=topic, partitions=[partition])])
        try:
            resp = await client.send(AddPartitionsToTxnRequest(transactions=[txn]), 4, timeout_s=VERIFY_TIMEOUT_S)
        except Exception:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if resp.error_code:
            return Errors(resp.error_code)
        for result in resp.results_by_transaction:
            for t in result.topic_results:
                for p in t.results_by_partition:
                    if (t.name, p.partition_index) == (topic, partition):
                        return Errors(p.partition_error_code)
        return Errors.UNKNOWN_SERVER_ERROR

    async def _client(self, broker_id: int, pool: dict[int, WireClient]) -> WireClient | None:
        """A connection of ``pool`` to another broker, replaced when the broker's address changed. Markers
        and verifications use separate pools: a broker answers one connection's requests in order, so a
        verification must not queue behind a marker that waits for its replication."""
        reg = self.image.brokers.get(broker_id)
        if reg is None:
            return None
        client = pool.get(broker_id)
        if client is None or (client.host, client.port) != (reg.host, reg.port):
            if client is not None:
                await client.close()
            client = pool[broker_id] = WireClient(
                reg.host, reg.port, client_id=f"txn-{self.node_id}", timeout_s=WRITE_TIMEOUT_MS / 1000 + 2,
                connect_timeout_s=2.0)
        return client

    # ------------------------------------------------------------------ markers
    async def _finish(self, coord: TransactionCoordinator, transactional_id: str) -> None:
        """Write the markers of a decided transaction, then its Complete* record (retrying while current).
        Should anything fail unexpectedly the coordinator is dropped, so the next tick reloads it from the
        log and starts over: a decided transaction is never left without its markers."""
        try:
            await self._finish_once(coord, transactional_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log(self.node, f"markers of {transactional_id} failed: {exc!r}; reloading the coordinator")
            if self.coordinators.get(coord.partition) is coord:
                del self.coordinators[coord.partition]

    async def _finish_once(self, coord: TransactionCoordinator, transactional_id: str) -> None:
        job = coord.markers(transactional_id)
        if job is None:
            return
        log(self.node, f"markers of {transactional_id} (epoch {job.producer_epoch}, "
                       f"{'commit' if job.commit else 'abort'}) for {len(job.partitions)} partition(s)")
        remaining = [] if (job.commit and self.skip_commit_markers) else list(job.partitions)
        while remaining and self._current(coord):
            # every partition at once: one unreachable leader must not hold up the others' markers
            written = await asyncio.gather(*(self._write_marker(topic, partition, job, coord.coordinator_epoch)
                                             for topic, partition in remaining))
            remaining = [tp for tp, done in zip(remaining, written, strict=True) if not done]
            if remaining:
                await asyncio.sleep(MARKER_RETRY_S)
        while self._current(coord) and coord.markers(transactional_id) is not None:
            decision = coord.complete(transactional_id, now_ms())
            if decision.error.code == Errors.CONCURRENT_TRANSACTIONS:
                log_throttled(self.node, f"complete {transactional_id}", f"completing {transactional_id}: "
                              "another state write is in flight; waiting")
                await asyncio.sleep(MARKER_RETRY_S)
                continue
            if await self.write(coord, decision) != Errors.NONE:
                await asyncio.sleep(MARKER_RETRY_S)
        if remaining or coord.markers(transactional_id) is not None:
            log(self.node, f"markers of {transactional_id} left to the next coordinator (no longer current)")

    async def _write_marker(self, topic: str, partition: int, job: Any, coordinator_epoch: int) -> bool:
        """One partition's marker; True once written (or once the partition no longer exists)."""
        topic_id = self.image.topic_id(topic)
        state = self.image.partition(topic_id, partition) if topic_id is not None else None
        if state is None:
            return True  # the topic is gone: nothing to mark
        if state.leader == self.node_id:
            r = await self.manager.write_marker(topic, partition, job.producer_id, job.producer_epoch, job.commit,
                                                coordinator_epoch, WRITE_TIMEOUT_MS)
            code = r.error
        else:
            code = await self._remote_marker(state.leader, topic, partition, job, coordinator_epoch)
        # A marker refused for an epoch older than the partition's would never be accepted: a newer
        # producer epoch's marker already closed whatever this one would (Kafka gives up on it too).
        if code not in (Errors.NONE, Errors.INVALID_PRODUCER_EPOCH):
            log_throttled(self.node, f"marker {job.transactional_id} {topic}-{partition}",
                          f"marker of {job.transactional_id} (epoch {job.producer_epoch}) for {topic}-{partition} "
                          f"(leader {state.leader}): {code.name}; retrying")
            return False
        return True

    async def _remote_marker(self, leader: int, topic: str, partition: int, job: Any,
                             coordinator_epoch: int) -> Errors:
        client = await self._client(leader, self._clients)
        if client is None:
            return Errors.LEADER_NOT_AVAILABLE
        marker = WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=job.producer_id, producer_epoch=job.producer_epoch, transaction_result=job.commit,
            topics=[WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(
                name=topic, partition_indexes=[partition])],
            coordinator_epoch=coordinator_epoch)
        try:
            resp = await client.send(WriteTxnMarkersRequest(markers=[marker]), 1)
        except Exception:
            return Errors.NETWORK_EXCEPTION
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    return Errors(p.error_code)
        return Errors.UNKNOWN_SERVER_ERROR

    # ------------------------------------------------------------------ timers and tasks
    async def run(self) -> None:
        """Tick: notice leadership gained (load, resend markers) and abort timed-out transactions."""
        while True:
            await asyncio.sleep(TICK_S)
            for partition in range(self.state_partitions()):
                coord = self._loaded(partition)
                if coord is None:
                    continue
                for decision in coord.expired(now_ms()):
                    self._spawn(self._abort_expired(coord, decision))

    async def _abort_expired(self, coord: TransactionCoordinator, decision: TxnDecision) -> None:
        tid = decision.records[0].transactional_id
        if await self.write(coord, decision) == Errors.NONE:
            log(self.node, f"transaction of {tid} timed out: aborting at epoch {decision.records[0].producer_epoch}")
            await self._finish(coord, tid)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop the marker tasks and close the connections to other brokers."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for client in [*self._clients.values(), *self._verify_clients.values()]:
            await client.close()
