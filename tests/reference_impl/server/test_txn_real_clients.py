"""Transactions (KIP-98) with real clients against a real reference cluster (1 controller + 3 brokers).

``jepsen``-marked (real processes), one bounded test per client library: kafka-python's and
confluent-kafka's (librdkafka's) transactional producer initialise, commit, abort, are seen only as
committed by a read_committed consumer (everything by a read_uncommitted one), and a second producer with
the same transactional id fences the first.
"""

from __future__ import annotations

import time

import pytest

from tests.reference_impl.server.test_client_apis_cluster import PROPS, wait_topic

TOPIC = "txn"


@pytest.fixture
def cluster(start_local_cluster):
    """1 controller + 3 brokers with MinISR 2 and short session timeouts."""
    c = start_local_cluster("cluster", 60, controller_props=dict(PROPS), broker_props=dict(PROPS))
    wait_topic(c.bootstrap, TOPIC, 3)
    return c


def read_values(bootstrap: str, isolation_level: str, expected: int, timeout_s: float = 20.0) -> list[bytes]:
    """Every value of the topic's partition 0 up to its end offset at ``isolation_level``."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        deadline = time.monotonic() + timeout_s
        values: list[bytes] = []
        while time.monotonic() < deadline and len(values) < expected:
            for records in consumer.poll(timeout_ms=300).values():
                values += [r.value for r in records]
        # nothing more may arrive: the end offset at this level is behind us
        assert consumer.position(tp) >= consumer.end_offsets([tp])[tp]
        return values
    finally:
        consumer.close()


@pytest.mark.jepsen
def test_kafka_python_transactions_commit_abort_isolate_and_fence(cluster):
    from kafka import KafkaProducer
    from kafka.errors import InvalidProducerEpochError, KafkaError, ProducerFencedError

    def producer():
        p = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="kp", acks="all",
                          max_block_ms=20000)
        p.init_transactions()
        return p

    first = producer()
    first.begin_transaction()
    first.send(TOPIC, b"c1", partition=0)
    first.send(TOPIC, b"c2", partition=0)
    first.commit_transaction()
    first.begin_transaction()
    first.send(TOPIC, b"a1", partition=0).get(10)
    first.abort_transaction()
    first.begin_transaction()
    first.send(TOPIC, b"z1", partition=0).get(10)  # left open: the second producer fences it
    second = producer()
    with pytest.raises((InvalidProducerEpochError, ProducerFencedError)):
        first.send(TOPIC, b"z2", partition=0).get(10)
    with pytest.raises(KafkaError):
        first.commit_transaction()
    first.close(timeout=1)
    second.begin_transaction()
    second.send(TOPIC, b"c3", partition=0)
    second.commit_transaction()
    second.close(timeout=5)

    assert read_values(cluster.bootstrap, "read_committed", 3) == [b"c1", b"c2", b"c3"]
    assert read_values(cluster.bootstrap, "read_uncommitted", 5) == [b"c1", b"c2", b"a1", b"z1", b"c3"]


@pytest.mark.jepsen
def test_confluent_kafka_transactions_commit_abort_isolate_and_fence(cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")

    def producer():
        p = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "ck",
                                      "acks": "all", "enable.idempotence": True})
        p.init_transactions(20)
        return p

    def send(p, value: bytes) -> None:
        p.produce(TOPIC, value, partition=0)
        assert p.flush(10) == 0

    first = producer()
    first.begin_transaction()
    send(first, b"c1")
    first.commit_transaction(20)
    first.begin_transaction()
    send(first, b"a1")
    first.abort_transaction(20)
    first.begin_transaction()
    send(first, b"z1")
    second = producer()  # fences the first and aborts its open transaction
    with pytest.raises(confluent_kafka.KafkaException) as fenced:
        first.commit_transaction(20)
    assert fenced.value.args[0].fatal() or fenced.value.args[0].txn_requires_abort()
    second.begin_transaction()
    send(second, b"c2")
    second.commit_transaction(20)

    assert read_values(cluster.bootstrap, "read_committed", 2) == [b"c1", b"c2"]
    assert read_values(cluster.bootstrap, "read_uncommitted", 4) == [b"c1", b"a1", b"z1", b"c2"]


def late_batch(bootstrap: str, transactional_id: str, producer_id: int, producer_epoch: int, sequence: int) -> int:
    """Send one transactional batch for partition 0 to every broker, as a produce that was stuck behind a
    network partition arrives late, and return the leader's answer (the others are not the leader)."""
    import asyncio

    from kafka.protocol.producer import ProduceRequest
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from reference_impl.server.wire.client import WireClient

    builder = DefaultRecordBatchBuilder(2, 0, 1, producer_id, producer_epoch, sequence, 1 << 20)
    builder.append(0, int(time.time() * 1000), None, b"late", [])
    records = bytes(builder.build())
    data = ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])

    async def ask(address: str) -> int:
        host, port = address.rsplit(":", 1)
        client = WireClient(host, int(port), client_id="late-batch", timeout_s=10, connect_timeout_s=2)
        try:
            resp = await client.send(ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=5000,
                                                    topic_data=[data]), 7)
            return resp.responses[0].partition_responses[0].error_code
        finally:
            await client.close()

    codes = [asyncio.run(ask(a)) for a in bootstrap.split(",")]
    answers = [c for c in codes if c != 6]  # 6: NOT_LEADER_OR_FOLLOWER
    assert len(answers) == 1, codes
    return answers[0]


@pytest.mark.jepsen
@pytest.mark.parametrize("verification", [True, False], ids=["kip890", "before-kip890"])
def test_a_late_batch_of_an_aborted_transaction_cannot_hang_the_partition(start_local_cluster, verification):
    """KIP-890 part 1: a partition leader asks the coordinator before a batch opens a transaction, so a
    batch that arrives after its transaction was aborted is refused (INVALID_TXN_STATE). Without the check
    (``transaction.partition.verification.enable=false``, Kafka before 3.6) the same batch opens a
    transaction no marker will close: the last stable offset stops and later commits stay unreadable."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    props = dict(PROPS, **{"transaction.partition.verification.enable": str(verification).lower()})
    c = start_local_cluster("kip890", 60, controller_props=dict(PROPS), broker_props=props)
    wait_topic(c.bootstrap, TOPIC, 3)
    p = KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="hang", acks="all", max_block_ms=20000)
    p.init_transactions()
    p.begin_transaction()
    p.send(TOPIC, b"a1", partition=0).get(10)
    p.abort_transaction()
    pid_epoch = p._transaction_manager.producer_id_and_epoch
    p.close(timeout=5)
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap, isolation_level="read_committed")
    try:  # EndTxn is answered before the markers are written: wait for the abort marker (LSO = HWM = 2)
        deadline = time.monotonic() + 20
        while consumer.end_offsets([tp])[tp] < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        consumer.close()
    code = late_batch(c.bootstrap, "hang", pid_epoch.producer_id, pid_epoch.epoch, 1)

    other = KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="after", acks="all", max_block_ms=20000)
    other.init_transactions()
    other.begin_transaction()
    other.send(TOPIC, b"c1", partition=0).get(10)
    other.commit_transaction()
    other.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap, isolation_level="read_committed")
    try:
        end = consumer.end_offsets([tp])[tp]  # read_committed: the last stable offset
    finally:
        consumer.close()
    if verification:
        assert code == 48  # INVALID_TXN_STATE
        assert read_values(c.bootstrap, "read_committed", 1) == [b"c1"]
        assert end == 4  # a1, its abort marker, c1, its commit marker: the LSO reached the HWM
    else:
        assert code == 0
        assert end == 2  # stuck at the late batch: c1 and everything after it never become readable


@pytest.mark.jepsen
def test_kafka_python_consume_transform_produce_commits_offsets_with_the_transaction(cluster):
    """AddOffsetsToTxn + TxnOffsetCommit (KIP-98, KIP-447): a group's consumed offsets sent into a
    transaction take effect with its commit, not with its abort (the pending and require_stable rules are
    unit-tested in tests/reference_impl/protocol/groups)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    feeder = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(6):
        feeder.send(TOPIC, str(i).encode(), partition=0)
    feeder.flush()
    feeder.close()
    tp = TopicPartition(TOPIC, 0)

    def consumer():
        c = KafkaConsumer(TOPIC, bootstrap_servers=cluster.bootstrap, group_id="ctp", enable_auto_commit=False,
                          auto_offset_reset="earliest", isolation_level="read_committed",
                          session_timeout_ms=6000, heartbeat_interval_ms=1000)
        return c

    def committed_offset() -> int | None:
        c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="ctp", enable_auto_commit=False)
        try:
            return c.committed(tp)
        finally:
            c.close()

    source = consumer()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="ctp", acks="all",
                             max_block_ms=20000)
    producer.init_transactions()
    try:
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            got += [r for rs in source.poll(timeout_ms=300).values() for r in rs ]
        assert [int(r.value) for r in got[:6]] == list(range(6))
        # first transaction: the first three, aborted
        producer.begin_transaction()
        producer.send(TOPIC, b"out-a", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(3, "", -1)}, source.group_metadata())
        producer.abort_transaction()
        assert committed_offset() in (None, -1)
        # second transaction: all six, committed
        producer.begin_transaction()
        producer.send(TOPIC, b"out-c", partition=0)
        producer.send_offsets_to_transaction({tp: OffsetAndMetadata(6, "", -1)}, source.group_metadata())
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
        source.close()
    deadline = time.monotonic() + 20
    while committed_offset() != 6 and time.monotonic() < deadline:  # the marker reaches the offsets partition
        time.sleep(0.2)
    assert committed_offset() == 6


@pytest.mark.jepsen
def test_confluent_kafka_send_offsets_to_transaction(cluster):
    """librdkafka's AddOffsetsToTxn and TxnOffsetCommit (its own version choices) against the reference."""
    ck = pytest.importorskip("confluent_kafka")
    feeder = ck.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(4):
        feeder.produce(TOPIC, str(i).encode(), partition=0)
    feeder.flush(10)
    conf = {"bootstrap.servers": cluster.bootstrap, "group.id": "ck-ctp", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": "read_committed"}
    source = ck.Consumer(conf)
    source.subscribe([TOPIC])
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "ck-ctp"})
    producer.init_transactions(20)
    try:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 4 and time.monotonic() < deadline:
            msg = source.poll(0.3)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == 4
        producer.begin_transaction()
        producer.produce(TOPIC, b"out", partition=0)
        producer.send_offsets_to_transaction([ck.TopicPartition(TOPIC, 0, 4)], source.consumer_group_metadata(), 20)
        producer.commit_transaction(20)
    finally:
        source.close()
    check = ck.Consumer(conf)
    try:
        deadline = time.monotonic() + 20
        offset = None
        while time.monotonic() < deadline:
            (tp,) = check.committed([ck.TopicPartition(TOPIC, 0)], timeout=10)
            offset = tp.offset
            if offset == 4:
                break
            time.sleep(0.2)
        assert offset == 4
    finally:
        check.close()
