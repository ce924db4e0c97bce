"""A bounded fuzz run of malformed frames against a REAL broker process: it never dies of input, keeps
serving real clients, and does not leak connections (its open file descriptors return to the baseline)."""

from __future__ import annotations

import os
import socket
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.server.local_cluster import LocalCluster

pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

API_KEYS = [0, 1, 2, 3, 10, 18, 19, 22, 23, 32, 43, 45, 46, 56, 60, 62, 63, 10000, 999, -1]


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def frames():
    """Size-prefixed frames with a plausible header (real api keys, random versions) and random bodies,
    plus raw garbage, truncated frames and oversized size prefixes."""
    header = st.builds(lambda k, v, cid, body: struct.pack(">hhi", k, v, cid) + body,
                       st.sampled_from(API_KEYS), st.integers(-2, 20), st.integers(-5, 2**31 - 1),
                       st.binary(max_size=300))
    framed = header.map(lambda payload: struct.pack(">i", len(payload)) + payload)
    lying = st.builds(lambda n, payload: struct.pack(">i", n) + payload,
                      st.sampled_from([-1, 0, 3, 2**31 - 1, 200 * 1024 * 1024]), st.binary(max_size=64))
    return st.one_of(framed, lying, st.binary(min_size=1, max_size=200))


@pytest.fixture(scope="module")
def broker_cluster(tmp_path_factory):
    c = LocalCluster(str(tmp_path_factory.mktemp("fuzz")), broker_ids=(1,))
    try:
        c.start(30)
        yield c
    finally:
        c.close()


def test_malformed_frames_never_kill_the_broker(broker_cluster):
    c = broker_cluster
    broker = c.brokers[1]
    host, port = "127.0.0.1", broker.port
    time.sleep(0.5)
    baseline = open_fds(broker.proc.pid)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(frames(), min_size=1, max_size=3))
    def attack(chunks):
        with socket.create_connection((host, port), timeout=2) as s:
            for chunk in chunks:
                try:
                    s.sendall(chunk)
                except OSError:
                    break  # the broker closed this connection: that is the expected answer to garbage
            s.settimeout(0.05)
            try:
                s.recv(65536)
            except OSError:
                pass
        assert broker.proc.poll() is None, "the broker died of input"

    attack()
    # Still serving real clients after the fuzzing.
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
    admin.create_topics({"after-fuzz": {"num_partitions": 1, "replication_factor": 1}})
    admin.close()
    producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all")
    assert producer.send("after-fuzz", value=b"alive", partition=0).get(timeout=20).offset == 0
    producer.close(5)
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap, group_id=None, enable_auto_commit=False)
    consumer.assign([TopicPartition("after-fuzz", 0)])
    consumer.seek(TopicPartition("after-fuzz", 0), 0)
    values = [r.value for recs in consumer.poll(timeout_ms=5000).values() for r in recs]
    consumer.close()
    assert values == [b"alive"]
    # No leaked connections: descriptors settle back near the baseline (client sockets are closed).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and open_fds(broker.proc.pid) > baseline + 4:
        time.sleep(0.2)
    assert open_fds(broker.proc.pid) <= baseline + 4
    assert broker.proc.poll() is None
