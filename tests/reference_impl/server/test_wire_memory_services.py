"""An in-memory, single-node ``BrokerServices`` + ``AdminServices`` for testing the wire layer.

This is test scaffolding for the codec and handlers only (the real state lives in the broker and
controller processes): one broker that leads every partition with leader epoch 0, a log per partition
kept as a list of v2 batches, HWM = LEO (no followers), long-polling fetch on an ``asyncio.Condition``,
idempotent-duplicate detection by (producer id, epoch, base sequence). Also a few tests of the scaffolding
itself so it cannot silently lie to the wire tests.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.config_alter import plan_alter
from reference_impl.server.wire.records import assign_offsets, iter_batches


@dataclass
class MemoryPartition:
    """One partition: its batches (with their first offset) and its end offset."""

    batches: list[tuple[int, int, bytes, int]] = field(default_factory=list)  # (base, next, bytes, max_ts)
    leo: int = 0


class MemoryServices:
    """Single-node in-memory implementation of both services protocols (tests only)."""

    def __init__(self, node_id: int = 1, host: str = "127.0.0.1", port: int = 0, cluster_id: str = "memcluster"):
        self.node_id = node_id
        self.host = host
        self.port = port
        self.cluster_id = cluster_id
        self.topics: dict[str, list[MemoryPartition]] = {}
        self.topic_ids: dict[str, str] = {}
        self.reassignments: dict[tuple[str, int], tuple[int, ...]] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.changed = asyncio.Condition()
        self._producer_ids = itertools.count(1000)
        self._dedupe: dict[tuple[int, int, int], int] = {}
        self.produce_calls = 0

    def create(self, name: str, partitions: int = 1) -> None:
        """Create a topic directly (test setup)."""
        import uuid

        self.topics[name] = [MemoryPartition() for _ in range(partitions)]
        self.topic_ids[name] = str(uuid.uuid4())

    # ---- BrokerServices

    async def metadata(self, topics, allow_auto_topic_creation):
        names = list(self.topics) if topics is None else topics
        out = []
        for name in names:
            parts = self.topics.get(name)
            if parts is None:
                out.append(sv.TopicMetadata(name=name, error=Errors.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            out.append(sv.TopicMetadata(
                name=name,
                topic_id=self.topic_ids[name],
                partitions=tuple(
                    sv.PartitionMetadata(i, self.node_id, 0, (self.node_id,), (self.node_id,))
                    for i in range(len(parts))
                ),
            ))
        return sv.ClusterMetadata(
            self.cluster_id, self.node_id, (sv.BrokerEndpoint(self.node_id, self.host, self.port),), tuple(out)
        )

    def _partition(self, topic, partition) -> MemoryPartition | None:
        parts = self.topics.get(topic)
        if parts is None or not 0 <= partition < len(parts):
            return None
        return parts[partition]

    async def produce(self, topic, partition, records, acks, timeout_ms, transactional_id=None):
        self.produce_calls += 1
        part = self._partition(topic, partition)
        if part is None:
            return sv.ProduceResult(error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
        headers = [h for _, h in iter_batches(records)]
        first = headers[0]
        key = (first.producer_id, first.producer_epoch, first.base_sequence)
        if first.producer_id >= 0 and key in self._dedupe:
            return sv.ProduceResult(base_offset=self._dedupe[key], log_start_offset=0)
        base = part.leo
        stamped, next_offset = assign_offsets(records, base, 0)
        for pos, h in iter_batches(stamped, verify_crc=False):
            part.batches.append((h.base_offset, h.next_offset, stamped[pos:pos + h.size], h.max_timestamp))
        part.leo = next_offset
        if first.producer_id >= 0:
            self._dedupe[key] = base
        async with self.changed:
            self.changed.notify_all()
        return sv.ProduceResult(base_offset=base, log_start_offset=0)

    def _read(self, spec: sv.FetchPartitionSpec) -> sv.FetchPartitionResult:
        part = self._partition(spec.topic, spec.partition)
        if part is None:
            return sv.FetchPartitionResult(spec.topic, spec.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        if spec.fetch_offset > part.leo or spec.fetch_offset < 0:
            return sv.FetchPartitionResult(spec.topic, spec.partition, Errors.OFFSET_OUT_OF_RANGE,
                                           high_watermark=part.leo, log_start_offset=0)
        chunks, size = [], 0
        for _base, nxt, data, _ts in part.batches:
            if nxt <= spec.fetch_offset:
                continue
            if chunks and size + len(data) > spec.partition_max_bytes:
                break
            chunks.append(data)
            size += len(data)
        return sv.FetchPartitionResult(spec.topic, spec.partition, high_watermark=part.leo,
                                       last_stable_offset=part.leo, log_start_offset=0, records=b"".join(chunks))

    async def fetch(self, spec: sv.FetchSpec) -> sv.FetchResult:
        deadline = time.monotonic() + spec.max_wait_ms / 1000
        while True:
            results = tuple(self._read(p) for p in spec.partitions)
            have = sum(len(r.records) for r in results)
            if have >= max(1, spec.min_bytes) or any(r.error for r in results):
                return sv.FetchResult(results)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return sv.FetchResult(results)
            async with self.changed:
                try:
                    await asyncio.wait_for(self.changed.wait(), remaining)
                except TimeoutError:
                    pass

    async def list_offsets(self, replica_id, isolation_level, partitions):
        out = []
        for p in partitions:
            part = self._partition(p.topic, p.partition)
            if part is None:
                out.append(sv.ListOffsetsResult(p.topic, p.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            elif p.timestamp == sv.EARLIEST_TIMESTAMP:
                out.append(sv.ListOffsetsResult(p.topic, p.partition, offset=0, leader_epoch=0))
            elif p.timestamp == sv.LATEST_TIMESTAMP:
                out.append(sv.ListOffsetsResult(p.topic, p.partition, offset=part.leo, leader_epoch=0))
            else:
                hit = next(((b, ts) for b, _n, _d, ts in part.batches if ts >= p.timestamp), None)
                out.append(sv.ListOffsetsResult(p.topic, p.partition, offset=hit[0] if hit else -1,
                                                timestamp=hit[1] if hit else -1, leader_epoch=0 if hit else -1))
        return out

    async def offset_for_leader_epoch(self, replica_id, queries):
        out = []
        for q in queries:
            part = self._partition(q.topic, q.partition)
            if part is None:
                out.append(sv.EpochEndOffset(q.topic, q.partition, Errors.UNKNOWN_TOPIC_OR_PARTITION))
            elif q.current_leader_epoch > 0:
                out.append(sv.EpochEndOffset(q.topic, q.partition, Errors.UNKNOWN_LEADER_EPOCH))
            else:
                out.append(sv.EpochEndOffset(q.topic, q.partition, leader_epoch=0, end_offset=part.leo))
        return out

    async def init_producer_id(self, transactional_id, transaction_timeout_ms, producer_id=-1, producer_epoch=-1):
        return sv.ProducerIdResult(producer_id=next(self._producer_ids), producer_epoch=0)

    async def forward_to_controller(self, api_key, api_version, request):
        raise ConnectionError("no controller in this test")

    # ---- AdminServices

    async def create_topics(self, topics, timeout_ms, validate_only):
        out = []
        for t in topics:
            if t.name in self.topics:
                out.append(sv.CreateTopicResult(t.name, Errors.TOPIC_ALREADY_EXISTS, "exists"))
                continue
            if t.replication_factor not in (-1, 1):
                out.append(sv.CreateTopicResult(t.name, Errors.INVALID_REPLICATION_FACTOR, "one broker"))
                continue
            n = t.num_partitions if t.num_partitions > 0 else 1
            if not validate_only:
                self.create(t.name, n)
            out.append(sv.CreateTopicResult(t.name, topic_id=self.topic_ids.get(t.name), num_partitions=n,
                                            replication_factor=1))
        return out

    async def describe_configs(self, resources):
        return [
            sv.ConfigResourceResult(rt, name, configs=(sv.ConfigEntry("min.insync.replicas", "1"),))
            for rt, name, _keys in resources
        ]

    async def alter_configs(self, resources, incremental, validate_only):
        out = []
        for res in resources:
            current = self.configs.setdefault((res.resource_type, res.resource_name), {})
            plan = plan_alter(res, incremental=incremental, current=current, topic_exists=res.resource_name in self.topics)
            if plan.ok and not validate_only:
                for key, value in plan.changes:
                    if value is None:
                        current.pop(key, None)
                    else:
                        current[key] = value
            out.append(sv.AlterConfigsResult(res.resource_type, res.resource_name, plan.error, plan.message))
        return out

    async def elect_leaders(self, election_type, partitions, timeout_ms):
        return [sv.ElectionResult(p.topic, p.partition, Errors.ELECTION_NOT_NEEDED) for p in partitions or []]

    async def alter_partition_reassignments(self, reassignments, allow_replication_factor_change, timeout_ms):
        out = []
        for r in reassignments:
            if r.replicas is None:
                had = self.reassignments.pop((r.topic, r.partition), None)
                out.append(sv.ReassignmentResult(r.topic, r.partition,
                                                 Errors.NONE if had else Errors.NO_REASSIGNMENT_IN_PROGRESS))
            elif not allow_replication_factor_change and len(r.replicas) != 1:
                out.append(sv.ReassignmentResult(r.topic, r.partition, Errors.INVALID_REPLICATION_FACTOR,
                                                 "RF change not allowed"))
            else:
                self.reassignments[(r.topic, r.partition)] = r.replicas
                out.append(sv.ReassignmentResult(r.topic, r.partition))
        return out

    async def list_partition_reassignments(self, partitions):
        return [
            sv.OngoingReassignment(t, p, tuple(sorted({self.node_id, *target})),
                                   tuple(x for x in target if x != self.node_id),
                                   (self.node_id,) if self.node_id not in target else ())
            for (t, p), target in self.reassignments.items()
        ]


def test_memory_services_implement_the_protocols():
    services = MemoryServices()
    assert isinstance(services, sv.BrokerServices)
    assert isinstance(services, sv.AdminServices)


def test_memory_services_append_assigns_consecutive_offsets():
    from kafka.record import MemoryRecordsBuilder

    def batch(n):
        b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
        for i in range(n):
            b.append(timestamp=None, key=None, value=b"v%d" % i, headers=[])
        b.close()
        return bytes(b.buffer())

    async def run():
        s = MemoryServices()
        s.create("t")
        r1 = await s.produce("t", 0, batch(3), -1, 1000)
        r2 = await s.produce("t", 0, batch(2), -1, 1000)
        return r1.base_offset, r2.base_offset, s.topics["t"][0].leo

    assert asyncio.run(run()) == (0, 3, 5)
