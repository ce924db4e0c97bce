"""The wire layer in the real processes: 1 controller + 3 brokers on loopback, three Kafka clients.

``jepsen``-marked (real processes). Complements the process integration tests with the wire-level
views: aiokafka, confluent-kafka and kafka-python agreeing on offsets; the ApiVersions
fallback and Metadata of a real broker; KIP-860's flag travelling broker -> controller by forwarding.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from reference_impl.server.wire import WireClient
from reference_impl.server.wire.codec import ALL_APIS

PROPS = {"min.insync.replicas": "2", "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
N = 2000


@pytest.fixture
def cluster(start_local_cluster):
    """1 controller + 3 brokers with MinISR 2 and short session timeouts."""
    return start_local_cluster("cluster", 60, controller_props=dict(PROPS), broker_props=dict(PROPS))


def wait_topic(bootstrap: str, name: str, rf: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        admin.create_topics([NewTopic(name, 1, rf)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            p = admin.describe_topics([name])[0]["partitions"]
            if p and p[0]["leader_id"] >= 0 and len(p[0]["isr_nodes"]) == rf:
                return
            time.sleep(0.2)
        raise AssertionError(f"{name} not ready")
    finally:
        admin.close()


async def wire(address: str, request, version: int):
    host, port = address.split(":")
    async with WireClient(host, int(port)) as client:
        return await client.send(request, version)


@pytest.mark.jepsen
def test_three_clients_agree_on_offsets_through_a_real_cluster(cluster):
    aiokafka = pytest.importorskip("aiokafka")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from aiokafka.structs import TopicPartition as AioTopicPartition
    from kafka import KafkaConsumer, TopicPartition

    wait_topic(cluster.bootstrap, "three", 3)
    values = [b"three-%d" % i for i in range(N)]

    async def produce():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all",
                                             enable_idempotence=True, linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send("three", value=v, partition=0) for v in values]
            return {v: (await f).offset for v, f in zip(values, futures, strict=True)}
        finally:
            await producer.stop()

    acked = asyncio.run(asyncio.wait_for(produce(), 120))
    assert sorted(acked.values()) == list(range(N))

    async def aio_read():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None,
                                             enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            tp = AioTopicPartition("three", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            out = []
            deadline = time.monotonic() + 60
            while len(out) < N and time.monotonic() < deadline:
                for records in (await consumer.getmany(tp, timeout_ms=500)).values():
                    out.extend((r.offset, r.value) for r in records)
            return out
        finally:
            await consumer.stop()

    expected = sorted((o, v) for v, o in acked.items())
    assert asyncio.run(asyncio.wait_for(aio_read(), 90)) == expected

    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition("three", 0, confluent_kafka.OFFSET_BEGINNING)])
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < N and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    assert seen == expected

    kp = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = TopicPartition("three", 0)
        kp.assign([tp])
        kp.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 60
        while len(got) < N and time.monotonic() < deadline:
            for records in kp.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value) for r in records)
    finally:
        kp.close()
    assert got == expected


@pytest.mark.jepsen
def test_real_broker_wire_views(cluster):
    wait_topic(cluster.bootstrap, "views", 3)
    address = cluster.brokers[1].address

    # ApiVersions above our max: a v0 body with UNSUPPORTED_VERSION and our ranges.
    api_versions = ALL_APIS[18].request_class(client_software_name="t", client_software_version="1")
    answer = asyncio.run(wire(address, api_versions, 4))
    assert answer.error_code == 35
    assert {(k.api_key, k.min_version, k.max_version) for k in answer.api_keys} >= {(0, 3, 9), (1, 4, 12)}

    # Metadata v12: three unfenced brokers, a leader with a real epoch, the full ISR.
    meta_cls = ALL_APIS[3].request_class
    meta = asyncio.run(wire(address, meta_cls(topics=[meta_cls.MetadataRequestTopic(name="views")],
                                              allow_auto_topic_creation=False), 12))
    assert sorted(b.node_id for b in meta.brokers) == [1, 2, 3]
    part = meta.topics[0].partitions[0]
    assert part.leader_id in (1, 2, 3) and part.leader_epoch >= 0 and sorted(part.isr_nodes) == [1, 2, 3]
    assert meta.controller_id in (1, 2, 3)  # a broker (it forwards), never the controller's own id

    # AlterPartitionReassignments v1 with AllowReplicationFactorChange=false and an RF change: the
    # controller refuses it (KIP-860) and the answer travels back through the broker's forwarding.
    cls = ALL_APIS[45].request_class
    t = cls.ReassignableTopic
    request = cls(timeout_ms=10000, allow_replication_factor_change=False, topics=[t(name="views", partitions=[
        t.ReassignablePartition(partition_index=0, replicas=[1, 2])])])
    refused = asyncio.run(wire(address, request, 1))
    assert refused.responses[0].partitions[0].error_code == 38  # INVALID_REPLICATION_FACTOR
