"""Real processes on loopback: 1 controller + 3 brokers, driven by real Kafka clients.

The unmarked smoke test is fast (a few seconds); the big ones are ``jepsen``-marked (``pytest -m jepsen``).
Every test stops all processes it started (``LocalCluster.close`` in a fixture's ``finally``).
"""

from __future__ import annotations

import time

import pytest

from reference_impl.server.local_cluster import LocalCluster

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402

PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "3000",
         "broker.heartbeat.interval.ms": "500"}


@pytest.fixture
def cluster(start_local_cluster):
    """1 controller + 3 brokers with MinISR 2 and short session / lag timeouts."""
    return start_local_cluster("cluster", 30, controller_props=dict(PROPS), broker_props=dict(PROPS))


def create_topic(c: LocalCluster, name: str, partitions: int = 1, rf: int = 3) -> None:
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(name, partitions, rf)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            desc = admin.describe_topics([name])[0]
            parts = desc["partitions"]
            if len(parts) == partitions and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == rf for p in parts):
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {name} not ready: {desc}")
    finally:
        admin.close()


def produce_kafka_python(c: LocalCluster, topic: str, values: list[bytes], partition: int = 0) -> dict[bytes, int]:
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", linger_ms=5, retries=10)
    try:
        futures = [(v, producer.send(topic, value=v, partition=partition)) for v in values]
        return {v: f.get(timeout=60).offset for v, f in futures}
    finally:
        producer.close(10)


def consume_kafka_python(c: LocalCluster, topic: str, expected: int, partition: int = 0,
                         timeout_s: float = 60) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap, enable_auto_commit=False, group_id=None,
                             max_poll_records=5000)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.value) for r in records)
        return out
    finally:
        consumer.close()


def check_acked_readable(acked: dict[bytes, int], read: list[tuple[int, bytes]]) -> None:
    """Every acknowledged record is read back at its acknowledged offset; no duplicates."""
    offsets = [o for o, _ in read]
    assert len(offsets) == len(set(offsets)), "an offset was delivered twice"
    values = [v for _, v in read]
    assert len(values) == len(set(values)), "a value appears at two offsets (duplicate)"
    by_offset = dict(read)
    missing = [(v, o) for v, o in acked.items() if by_offset.get(o) != v]
    assert not missing, f"{len(missing)} acknowledged records not at their offsets, e.g. {missing[:3]}"


def test_smoke_produce_consume_rf3(cluster):
    """Fast smoke: topic RF 3 / MinISR 2, 200 acks=all records via kafka-python, read back at their offsets."""
    create_topic(cluster, "smoke")
    values = [f"v{i}".encode() for i in range(200)]
    acked = produce_kafka_python(cluster, "smoke", values)
    assert sorted(acked.values()) == list(range(200))
    read = consume_kafka_python(cluster, "smoke", 200, timeout_s=20)
    check_acked_readable(acked, read)
    # The followers replicated it: the leader's HWM reached the end (acks=all needs MinISR 2 in the ISR).
    hwms = [e for n in cluster.brokers.values() for e in cluster.trace(n) if e["kind"] == "hwm"]
    assert max(e["hwm"] for e in hwms) == 200


@pytest.mark.jepsen
def test_100k_records_kafka_python_and_confluent_agree(cluster):
    """Issue 3: both clients move 100,000 records; every ack at its offset, no duplicates, same offsets."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    create_topic(cluster, "big")
    n = 100_000
    acked = produce_kafka_python(cluster, "big", [f"kp-{i}".encode() for i in range(n)])
    assert len(acked) == n
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                                         "enable.idempotence": True, "linger.ms": 5})
    confluent_acked: dict[bytes, int] = {}
    errors: list = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            confluent_acked[msg.value()] = msg.offset()

    for i in range(n):
        while True:
            try:
                producer.produce("big", value=f"ck-{i}".encode(), partition=0, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    assert not errors and len(confluent_acked) == n
    acked.update(confluent_acked)

    read_kp = consume_kafka_python(cluster, "big", 2 * n, timeout_s=180)
    check_acked_readable(acked, read_kp)

    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition("big", 0, confluent_kafka.OFFSET_BEGINNING)])
        read_ck: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 180
        while len(read_ck) < 2 * n and time.monotonic() < deadline:
            for msg in consumer.consume(5000, 1.0):
                if msg.error() is None:
                    read_ck.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    check_acked_readable(acked, read_ck)
    assert read_ck == read_kp, "the two clients saw different offset->value mappings"


def partition_leader(c: LocalCluster, topic: str, partition: int = 0) -> tuple[int, list[int]]:
    """(leader, isr) from the controller's latest metadata_applied event for the partition."""
    events = [e for e in c.trace(c.controller) if e["kind"] == "metadata_applied" and e.get("topic") == topic
              and e.get("partition") == partition]
    return events[-1]["leader"], events[-1]["isr"]


@pytest.fixture(params=["v3.5", "kip966"])
def variant_cluster(request, start_local_cluster):
    """The ``cluster`` configuration once per protocol variant (v3.5 and KIP-966)."""
    props = dict(PROPS, **{"protocol.variant": request.param})
    return start_local_cluster("cluster", 30, controller_props=props, broker_props=dict(props))


@pytest.mark.jepsen
def test_kill_leader_during_produce_then_rejoin(variant_cluster):
    """kill -9 of the partition leader under acks=all load: the producer fails over, nothing acknowledged
    is lost, the killed broker restarts, catches up and re-enters the ISR (seen in the controller trace).
    Both protocol variants."""
    import threading

    cluster = variant_cluster

    create_topic(cluster, "failover")
    acked: dict[bytes, int] = {}
    failed: list = []
    stop = threading.Event()

    def load() -> None:
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=2, retries=50,
                                 request_timeout_ms=10000, retry_backoff_ms=200)
        i = 0
        pending = []
        try:
            while not stop.is_set() and i < 200_000:
                value = f"f-{i}".encode()
                pending.append((value, producer.send("failover", value=value, partition=0)))
                i += 1
                if len(pending) >= 200:
                    for v, fut in pending:
                        try:
                            acked[v] = fut.get(timeout=60).offset
                        except Exception as exc:  # indeterminate or failed: not acknowledged
                            failed.append((v, repr(exc)))
                    pending = []
            for v, fut in pending:
                try:
                    acked[v] = fut.get(timeout=60).offset
                except Exception as exc:
                    failed.append((v, repr(exc)))
        finally:
            producer.close(10)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 2000 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(acked) >= 2000, "no progress before the fault"
        leader, _ = partition_leader(cluster, "failover")
        victim = cluster.brokers[leader]
        cluster.kill_node(victim)
        killed_at = len(acked)
        end_at_kill = max(acked.values()) + 1
        time.sleep(8)  # session timeout (3 s) + election + client metadata refresh
        assert len(acked) > killed_at, "producer did not fail over to the new leader"
        new_leader, isr = partition_leader(cluster, "failover")
        assert new_leader not in (leader, -1) and leader not in isr
        cluster.start_node(victim)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            _, isr = partition_leader(cluster, "failover")
            if leader in isr:
                break
            time.sleep(0.2)
        assert leader in isr, f"restarted broker {leader} never re-entered the ISR {isr}"
    finally:
        stop.set()
        thread.join(120)
    read = consume_kafka_python(cluster, "failover", len(acked), timeout_s=120)
    check_acked_readable(acked, read)
    # The restarted broker caught up: after its new registration its LEO passed what was acked at the kill.
    events = cluster.trace(victim)
    restart = max(i for i, e in enumerate(events) if e["kind"] == "registered")
    leos = [e["leo"] for e in events[restart:] if e["kind"] == "leo"]
    assert leos and max(leos) >= end_at_kill


@pytest.mark.jepsen
def test_preferred_election_through_admin_client(tmp_path):
    """ElectLeaders (C10) via KafkaAdminClient: after the preferred leader restarts, an election moves
    leadership back to it."""
    props = {"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "300"}
    c = LocalCluster(str(tmp_path / "el"), controller_props=dict(props), broker_props=dict(props))
    try:
        c.start(30)
        admin = KafkaAdminClient(bootstrap_servers=c.brokers[1].address, request_timeout_ms=10000)
        try:
            admin.create_topics({"e": {"assignments": {0: [2, 1, 3]}}})
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and partition_leader(c, "e")[0] != 2:
                time.sleep(0.1)
            c.stop_node(c.brokers[2])  # controlled shutdown moves leadership away (C8)
            assert partition_leader(c, "e")[0] in (1, 3)
            c.start_node(c.brokers[2])
            c.wait_unfenced([2], 20)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and 2 not in partition_leader(c, "e")[1]:
                time.sleep(0.1)  # back in the ISR (L15) before it can be elected
            response = admin.elect_leaders(0, {"e": [0]})
            codes = [p.error_code for r in response.replica_election_results for p in r.partition_result]
            assert codes == [0]
            assert partition_leader(c, "e")[0] == 2
            elections = [e for e in c.trace(c.controller) if e["kind"] == "election" and e.get("topic") == "e"]
            assert elections[-1]["leader"] == 2 and elections[-1]["type"] == "clean"
        finally:
            admin.close()
    finally:
        c.close()
