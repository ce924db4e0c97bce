"""Real Kafka clients (kafka-python and confluent-kafka/librdkafka) against the wire layer over loopback.

The node behind the wire layer is the in-memory single-node services object (test scaffolding), so these
tests prove the codec and handlers, not replication. A second WireServer plays the controller: the
broker relays admin requests to it with ``WireClient.send_raw`` (the KRaft forwarding path).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from reference_impl.server.client_apis import build_server
from reference_impl.server.wire import WireClient
from reference_impl.server.wire.codec import ALL_APIS
from tests.reference_impl.server.test_wire_memory_services import MemoryServices


class ForwardingServices(MemoryServices):
    """Memory services whose admin requests go over the wire to a controller server."""

    controller: WireClient | None = None

    async def forward_to_controller(self, api_key, api_version, request):
        return await self.controller.send_raw(api_key, api_version, request, timeout_s=10)


class Node:
    """A broker server + controller server on one background event loop (blocking clients need a thread)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.services = ForwardingServices()

        async def setup():
            self.controller = build_server("127.0.0.1", 0, admin=self.services, name="controller")
            await self.controller.start()
            self.services.controller = WireClient("127.0.0.1", self.controller.port, client_id="broker-1")
            self.broker = build_server("127.0.0.1", 0, broker=self.services, name="broker")
            await self.broker.start()
            self.services.port = self.broker.port

        self.call(setup())

    def call(self, coro, timeout=30):
        """Run ``coro`` on the node's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.port}"

    def close(self):
        async def teardown():
            await self.services.controller.close()
            await self.broker.close()
            await self.controller.close()

        try:
            self.call(teardown())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()


@pytest.fixture
def node():
    n = Node()
    try:
        yield n
    finally:
        n.close()


N = 300


def kafka_python_produce(bootstrap, topic, values):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=10000)
    try:
        futures = [producer.send(topic, key=b"k", value=v, partition=0) for v in values]
        producer.flush(20)
        return [f.get(10).offset for f in futures]
    finally:
        producer.close(5)


def kafka_python_consume(bootstrap, topic, count, timeout_s=20.0):
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend((r.offset, r.value) for r in records)
        return got
    finally:
        consumer.close()


def test_kafka_python_producer_and_consumer_roundtrip(node):
    node.services.create("kp")
    values = [b"kp-%d" % i for i in range(N)]
    offsets = kafka_python_produce(node.bootstrap, "kp", values)
    assert offsets == list(range(N))  # acks=all, one partition: consecutive offsets from 0
    got = kafka_python_consume(node.bootstrap, "kp", N)
    assert got == list(zip(range(N), values, strict=True))
    # kafka-python's default producer is idempotent: batches carry a producer id from InitProducerId
    first_batch = node.services.topics["kp"][0].batches[0][2]
    from reference_impl.server.wire.records import parse_batch_header

    assert parse_batch_header(first_batch).producer_id >= 1000


def test_confluent_kafka_producer_and_consumer_see_the_same_offsets(node):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    node.services.create("ck")
    delivered = []

    def on_delivery(err, msg):
        delivered.append((err, msg.offset(), msg.value()))

    producer = confluent_kafka.Producer({
        "bootstrap.servers": node.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        "api.version.request": True,
    })
    values = [b"ck-%d" % i for i in range(N)]
    for v in values:
        producer.produce("ck", value=v, partition=0, on_delivery=on_delivery)
    assert producer.flush(20) == 0
    assert [e for e, _, _ in delivered if e is not None] == []
    assert sorted(o for _, o, _ in delivered) == list(range(N))
    acked = {v: o for _, o, v in delivered}

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": node.bootstrap, "group.id": "kraftcheck-wire-test", "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
    })
    try:
        consumer.assign([confluent_kafka.TopicPartition("ck", 0, confluent_kafka.OFFSET_BEGINNING)])
        seen = []
        deadline = time.monotonic() + 20
        while len(seen) < N and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    assert seen == sorted((o, v) for v, o in acked.items())
    # ... and kafka-python reads the very same offsets for the same values.
    assert kafka_python_consume(node.bootstrap, "ck", N) == seen


def test_acks_zero_gets_no_response_but_is_appended_in_order(node):
    node.services.create("a0")
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks=0, enable_idempotence=False, linger_ms=5)
    try:
        for i in range(50):
            producer.send("a0", value=b"%d" % i, partition=0)
        producer.flush(10)
    finally:
        producer.close(5)
    got = kafka_python_consume(node.bootstrap, "a0", 50)
    assert [v for _, v in got] == [b"%d" % i for i in range(50)]


def test_admin_client_through_forwarding(node):
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic("adm", num_partitions=3, replication_factor=1)])
        assert len(node.services.topics["adm"]) == 3
        described = admin.describe_topics(["adm"])
        partitions = sorted(described[0]["partitions"], key=lambda p: p["partition_index"])
        assert [p["partition_index"] for p in partitions] == [0, 1, 2]
        assert partitions[0]["leader_id"] == node.services.node_id
        tp = TopicPartition("adm", 0)
        assert admin.alter_partition_reassignments({tp: [node.services.node_id + 1]}) == {tp: None}
        listed = admin.list_partition_reassignments()
        assert listed == {tp: {"replicas": [1, 2], "adding_replicas": [2], "removing_replicas": [1]}}
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == node.services.node_id
    finally:
        admin.close()


def test_alter_reassignments_v1_carries_kip860_flag_through_forwarding(node):
    """kafka-python's admin client has no allow_rf_change argument, so send v1 by hand via the broker."""
    node.services.create("rf")
    cls = ALL_APIS[45].request_class
    request = cls(
        timeout_ms=5000, allow_replication_factor_change=False,
        topics=[cls.ReassignableTopic(name="rf", partitions=[
            cls.ReassignableTopic.ReassignablePartition(partition_index=0, replicas=[1, 2]),
        ])],
    )

    async def send():
        async with WireClient("127.0.0.1", node.broker.port) as client:
            return await client.send(request, 1)

    response = node.call(send())
    assert response.allow_replication_factor_change is False
    assert response.responses[0].partitions[0].error_code == 38  # INVALID_REPLICATION_FACTOR (KIP-860)


def test_aiokafka_producer_and_consumer_see_kafka_pythons_offsets(node):
    """aiokafka (the third client the issue names) produces with acks=all and idempotence, then reads
    back with assign(); kafka-python reads the very same offsets."""
    aiokafka = pytest.importorskip("aiokafka")
    from aiokafka.structs import TopicPartition as AioTopicPartition

    node.services.create("aio")
    values = [b"aio-%d" % i for i in range(N)]

    async def run():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=node.bootstrap, acks="all", enable_idempotence=True,
                                             linger_ms=5, request_timeout_ms=10000)
        await producer.start()
        try:
            futures = [await producer.send("aio", value=v, partition=0) for v in values]
            acked = [(await f).offset for f in futures]
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=node.bootstrap, group_id=None,
                                             enable_auto_commit=False, auto_offset_reset="earliest",
                                             fetch_max_wait_ms=100)
        await consumer.start()
        try:
            tp = AioTopicPartition("aio", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            seen = []
            deadline = time.monotonic() + 20
            while len(seen) < N and time.monotonic() < deadline:
                batches = await consumer.getmany(tp, timeout_ms=200)
                for records in batches.values():
                    seen.extend((r.offset, r.value) for r in records)
        finally:
            await consumer.stop()
        return acked, seen

    acked, seen = asyncio.run(asyncio.wait_for(run(), 60))
    assert acked == list(range(N))
    assert seen == list(zip(range(N), values, strict=True))
    assert kafka_python_consume(node.bootstrap, "aio", N) == seen
