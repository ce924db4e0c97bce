"""Follower fetchers: one asyncio task per leader broker, pulling every partition this broker follows there.

Each round asks the protocol core which fetches to send (``protocol.follower_fetch.fetch_round``: F1, at
most one outstanding per partition), sends one Kafka Fetch v12 request with ``replica_id`` = this broker and the kraftcheck
``ReplicaState`` tag carrying the broker epoch (L15 needs it for AlterPartition), the partition's current
leader epoch and last fetched epoch (L9), and hands the answers back (``complete_fetch_round``: F2-F4 for
each answered partition; a fetch that got no answer, from a lost connection, a timeout, a whole-request
error or a reply that left the partition out, is abandoned and backs off, F2). The leader long-polls
(``FETCH_MAX_WAIT_MS``), so an idle follower costs one request per wait period.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.follower_fetch import (
    FETCH_IDLE_POLL_MS,
    FETCH_MAX_WAIT_MS,
    FETCH_RETRY_BACKOFF_MS,
    PlannedFetch,
    complete_fetch_round,
    fetch_round,
)
from reference_impl.protocol.replica_messages import FetchPartitionResult, FetchRequest
from reference_impl.server.replica_manager import Partition, ReplicaManager, decode_log_batches, now_ms
from reference_impl.server.tasks import cancel_all
from reference_impl.server.trace import fail_stop, log, log_throttled
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.client import WireClient
from reference_impl.server.wire.records import CorruptBatch

FETCH_VERSION = 12


class LeaderFetcher:
    """Fetches the partitions this broker follows on one leader."""

    def __init__(self, manager: ReplicaManager, leader_id: int, endpoint: Callable[[int], tuple[str, int] | None],
                 node: str) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.endpoint = endpoint
        self.node = node
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._client: WireClient | None = None
        self._client_addr: tuple[str, int] | None = None
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()

    def add(self, part: Partition) -> None:
        """T5: start fetching this partition from the leader."""
        self.partitions[(part.topic, part.partition)] = part
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"fetcher-{self.leader_id}")
            self._task.add_done_callback(fail_stop(self.node))

    def remove(self, part: Partition) -> None:
        """T1/T3/T6: stop fetching it (a reply still in flight is dropped by the core, F2)."""
        self.partitions.pop((part.topic, part.partition), None)

    async def close(self) -> None:
        """Stop the task and the connection."""
        if self._task is not None:
            await cancel_all([self._task])
        if self._client is not None:
            await self._client.close()

    async def _connection(self) -> WireClient | None:
        addr = self.endpoint(self.leader_id)
        if addr is None:
            return None
        if self._client is None or self._client_addr != addr:
            if self._client is not None:
                await self._client.close()
            self._client = WireClient(addr[0], addr[1], client_id=f"replica-{self.node}", timeout_s=10.0,
                                      connect_timeout_s=2.0)
            self._client_addr = addr
        return self._client

    async def _run(self) -> None:
        while self.partitions:
            planned = fetch_round(((key, part.replica) for key, part in list(self.partitions.items())),
                                  self.leader_id, now_ms())
            if not planned:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), FETCH_IDLE_POLL_MS / 1000)
                continue
            await self._round(planned)

    async def _round(self, planned: list[PlannedFetch]) -> None:
        # resolved before the first await: the planned partitions are all still in this fetcher here
        requests = [(self.partitions[p.key], p.request) for p in planned]
        client = await self._connection()
        answers: dict[tuple[str, int], FetchPartitionResult] = {}
        if client is not None:
            try:
                resp = await client.send(_build_request(self.manager.broker_id, self.manager.broker_epoch,
                                                        requests), FETCH_VERSION,
                                         timeout_s=FETCH_MAX_WAIT_MS / 1000 + 10)
                answers = _parse_response(resp, requests)
            except (ConnectionError, TimeoutError, OSError) as exc:
                log_throttled(self.node, f"fetch-{self.leader_id}", f"fetch from broker {self.leader_id} failed: {exc!r}")
            except CorruptBatch as exc:
                log(self.node, f"corrupt batch from broker {self.leader_id}: {exc}")
        answered = complete_fetch_round(planned, answers, now_ms())
        for part, _ in requests:
            self.manager.after_fetch_response(part)
        if not answered:
            await asyncio.sleep(FETCH_RETRY_BACKOFF_MS / 1000)  # F2: back off before the next attempt


def _build_request(broker_id: int, broker_epoch: int, requests: list[tuple[Partition, FetchRequest]]):
    by_topic: dict[str, list] = {}
    for part, req in requests:
        by_topic.setdefault(part.topic, []).append(m.FetchRequest.FetchTopic.FetchPartition(
            partition=part.partition, current_leader_epoch=req.leader_epoch, fetch_offset=req.fetch_offset,
            last_fetched_epoch=req.last_fetched_epoch, log_start_offset=-1, partition_max_bytes=req.max_bytes))
    return m.FetchRequest(
        replica_id=broker_id, replica_state=m.FetchRequest.ReplicaState(replica_id=broker_id,
                                                                         replica_epoch=broker_epoch),
        max_wait_ms=FETCH_MAX_WAIT_MS, min_bytes=1, max_bytes=64 * 1024 * 1024, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[m.FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        forgotten_topics_data=[], rack_id="")


def _parse_response(resp, requests: list[tuple[Partition, FetchRequest]]) -> dict[tuple[str, int], FetchPartitionResult]:
    wanted = {(p.topic, p.partition): r for p, r in requests}
    out: dict[tuple[str, int], FetchPartitionResult] = {}
    if getattr(resp, "error_code", 0):
        return out
    for topic in resp.responses:
        for p in topic.partitions:
            key = (topic.topic, p.partition_index)
            req = wanted.get(key)
            if req is None:
                continue
            div = p.diverging_epoch
            diverging = None
            if div is not None and div.epoch is not None and div.epoch >= 0:
                diverging = EpochEndOffset(div.epoch, div.end_offset)
            records = bytes(p.records) if p.records else b""
            batches = tuple(decode_log_batches(records)) if records and diverging is None else ()
            out[key] = FetchPartitionResult(error(Errors(p.error_code)), req.leader_epoch, req.fetch_offset,
                                            p.high_watermark, p.log_start_offset, p.last_stable_offset,
                                            diverging, batches)
    return out
