"""The broker process: clean-shutdown marker (K4, B4), crash without marker, torn-tail recovery at start
(traced as ``recovered``), and the inject.bug switches that act in the broker. Real processes, 1 controller
+ 1 broker (a few seconds)."""

from __future__ import annotations

import os
import time

import pytest

from reference_impl.server.local_cluster import LocalCluster
from reference_impl.server.storage.checkpoints import CLEAN_SHUTDOWN_FILE

pytest.importorskip("kafka")
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

PROPS = {"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "300"}


@pytest.fixture
def single(start_local_cluster):
    """1 controller + 1 broker with short session timeouts."""
    return start_local_cluster("one", 30, broker_ids=(1,), controller_props=dict(PROPS), broker_props=dict(PROPS))


def registrations(c: LocalCluster) -> list[dict]:
    return [e for e in c.trace(c.controller) if e["kind"] == "registered" and e["broker"] == 1]


def produce(c: LocalCluster, topic: str, n: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", retries=20)
    try:
        for f in [producer.send(topic, value=f"{i}".encode(), partition=0) for i in range(n)]:
            f.get(timeout=30)
    finally:
        producer.close(10)


def test_clean_shutdown_marker_and_crash(single):
    c = single
    broker = c.brokers[1]
    first = registrations(c)[-1]
    assert first["previous_broker_epoch"] == -1  # fresh data dir: no marker
    assert c.stop_node(broker) == 0  # SIGTERM: controlled shutdown, exit 0
    marker = os.path.join(broker.data_dir, CLEAN_SHUTDOWN_FILE)
    assert os.path.exists(marker)
    c.start_node(broker)
    c.wait_unfenced([1], 20)
    second = registrations(c)[-1]
    assert second["previous_broker_epoch"] == first["broker_epoch"]  # K4: clean, with its epoch
    assert not os.path.exists(marker)  # consumed at start: only the latest shutdown counts
    c.kill_node(broker)  # crash: no marker
    assert not os.path.exists(marker)
    c.start_node(broker)
    time.sleep(2.5)  # the old session must expire before the new registration is accepted (C3)
    c.wait_unfenced([1], 20)
    third = registrations(c)[-1]
    assert third["previous_broker_epoch"] == -1 and third["broker_epoch"] > second["broker_epoch"]
    shutdowns = [e for e in c.trace(broker) if e["kind"] == "shutdown" and e.get("broker_epoch") is not None]
    assert any(e["clean"] for e in shutdowns)


def test_torn_tail_recovered_at_start(single):
    c = single
    broker = c.brokers[1]
    produce(c, "torn", 50)
    c.kill_node(broker)
    seg = os.path.join(broker.data_dir, "torn-0", "00000000000000000000.log")
    size = os.path.getsize(seg)
    with open(seg, "r+b") as fh:
        fh.truncate(size - 7)  # a torn last write
    c.start_node(broker)
    time.sleep(2.5)
    c.wait_unfenced([1], 20)
    recovered = [e for e in c.trace(broker) if e["kind"] == "recovered" and e.get("topic") == "torn"]
    # One note per repair: the segment's torn tail, and (when the cut removed whole epochs, e.g. all 50
    # records went as one batch) the leader-epoch checkpoint rebuilt from the log after it.
    assert any("truncated" in e["note"] for e in recovered), recovered
    assert recovered[-1]["leo"] < 50


@pytest.mark.jepsen
def test_ignore_min_isr_bug_accepts_acks_all_below_min_isr(tmp_path):
    """inject.bug=ignore-min-isr (L1): RF 1 with min.insync.replicas 2 accepts acks=all (correct: refuse)."""
    from kafka.errors import NotEnoughReplicasError

    for bug, accepted in ((None, False), ("ignore-min-isr", True)):
        props = dict(PROPS, **{"min.insync.replicas": "2"})
        bprops = dict(props, **({"inject.bug": bug} if bug else {}))
        c = LocalCluster(str(tmp_path / f"bug-{bug}"), broker_ids=(1,), controller_props=props,
                         broker_props=bprops)
        try:
            c.start(30)
            admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
            admin.create_topics({"b": {"num_partitions": 1, "replication_factor": 1}})
            admin.close()
            producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", retries=0,
                                     enable_idempotence=False)
            try:
                fut = producer.send("b", value=b"x", partition=0)
                if accepted:
                    assert fut.get(timeout=20).offset == 0
                else:
                    with pytest.raises(NotEnoughReplicasError):
                        fut.get(timeout=20)
            finally:
                producer.close(5)
        finally:
            c.close()


def test_topic_min_isr_config_overrides_the_broker_setting(single):
    """CreateTopics configs {min.insync.replicas: 2} on an RF 1 topic: acks=all is refused (L1) although
    the broker's own min.insync.replicas is 1; another topic without the override accepts."""
    from kafka.errors import NotEnoughReplicasError

    c = single
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics({"strict": {"num_partitions": 1, "replication_factor": 1,
                                        "configs": {"min.insync.replicas": "2"}},
                             "lax": {"num_partitions": 1, "replication_factor": 1}})
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", retries=0, enable_idempotence=False)
    try:
        assert producer.send("lax", value=b"ok", partition=0).get(timeout=20).offset == 0
        with pytest.raises(NotEnoughReplicasError):
            producer.send("strict", value=b"refused", partition=0).get(timeout=20)
    finally:
        producer.close(5)


def test_describe_configs_through_kafka_python_broker_and_topic(single):
    """DescribeConfigs for a BROKER resource is answered by that broker from its own settings, and for a
    TOPIC from the metadata; sources as Kafka reports them (kafka-python's default filter shows only
    modified values, so the static/default ones are asked for with config_filter='all')."""
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    c = single
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic("dc", 1, 1, topic_configs={"min.insync.replicas": "1"})])
        time.sleep(0.5)  # the broker answers TOPIC resources from its metadata image
        broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        got = broker["broker"]["1"]
        assert got["broker.session.timeout.ms"]["value"] == "2000"
        assert got["broker.session.timeout.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
        assert got["min.insync.replicas"]["value"] == "1"
        assert got["min.insync.replicas"]["config_source"] == "DEFAULT_CONFIG"
        assert got["unclean.leader.election.enable"]["value"] == "false"
        assert got["default.replication.factor"]["value"] == "1"
        assert got["reassignment.mode"]["value"] == "all-at-once"
        topic = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "dc")])  # modified only
        assert {k: v["config_source"] for k, v in topic["topic"]["dc"].items()} == \
            {"min.insync.replicas": "DYNAMIC_TOPIC_CONFIG"}
        everything = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "dc")], config_filter="all")
        assert everything["topic"]["dc"]["unclean.leader.election.enable"]["config_source"] == "DEFAULT_CONFIG"
    finally:
        admin.close()
