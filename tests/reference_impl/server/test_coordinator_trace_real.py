"""The coordinators' trace events from real processes and real clients, judged by I23-I26.

``jepsen``-marked (real processes, about half a minute): on 1 controller + 3 brokers, kafka-python's
transactional producer commits one transaction and aborts another, and two kafka-python consumers of one
group split a two-partition topic and commit their positions. The brokers' merged traces must then give
each of I23-I26 something to judge, and hold.
"""

from __future__ import annotations

import time

import pytest

from checkers.invariants import check_invariants
from tests.reference_impl.server.test_client_apis_cluster import PROPS

pytestmark = pytest.mark.jepsen

TOPIC = "cg"
GROUP = "cg-group"
SPEC = {"variant": "kip966", "sub_via": "subscribe", "txn": True, "min_isr": 2}


@pytest.fixture
def cluster(start_local_cluster):
    from kafka.admin import KafkaAdminClient, NewTopic

    c = start_local_cluster("cluster", 60, controller_props=dict(PROPS), broker_props=dict(PROPS))
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=15000)
    try:
        admin.create_topics([NewTopic(TOPIC, 2, 3)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            parts = admin.describe_topics([TOPIC])[0]["partitions"]
            if len(parts) == 2 and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == 3 for p in parts):
                return c
            time.sleep(0.2)
        raise AssertionError(f"{TOPIC} not ready")
    finally:
        admin.close()


def merged_trace(c) -> list[dict]:
    """Every node's trace so far, on the one monotonic clock they share (same host)."""
    return sorted((ev for node in c.nodes() for ev in c.trace(node)), key=lambda ev: ev["time"])


def transactions(c) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=c.bootstrap, transactional_id="tx", acks="all", max_block_ms=20000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(TOPIC, b"c0", partition=0)
        producer.send(TOPIC, b"c1", partition=1)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, b"a0", partition=0).get(10)
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)


def group_members(c) -> None:
    from kafka import KafkaConsumer

    consumers = [KafkaConsumer(TOPIC, bootstrap_servers=c.bootstrap, group_id=GROUP, enable_auto_commit=False,
                               auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=500,
                               isolation_level="read_committed") for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(len(x.assignment()) == 1 for x in consumers):
            for consumer in consumers:
                consumer.poll(timeout_ms=200)
        assert all(len(x.assignment()) == 1 for x in consumers), [x.assignment() for x in consumers]
        for consumer in consumers:
            consumer.commit()
    finally:
        for consumer in consumers:
            consumer.close()


def test_the_coordinators_trace_their_decisions_and_i23_to_i26_hold(cluster):
    transactions(cluster)
    group_members(cluster)
    deadline = time.monotonic() + 20  # the markers and the Complete* records follow the EndTxn answers
    while time.monotonic() < deadline:
        trace = merged_trace(cluster)
        if sum(1 for ev in trace if ev["kind"] == "txn_transition" and ev["to"].startswith("Complete")) >= 2:
            break
        time.sleep(0.3)
    kinds = {ev["kind"] for ev in trace}
    assert {"group_generation", "group_assignment", "group_commit", "txn_transition", "txn_marker",
            "producer_batch"} <= kinds
    result = check_invariants(SPEC, [], trace)["invariants"]
    for inv in ("I23", "I24", "I25", "I26"):
        assert result[inv]["valid"] is True and result[inv]["evaluated"] > 0, (inv, result[inv])
    # the generation both consumers shared (closing them leaves later ones with fewer members)
    last = max(ev["generation"] for ev in trace if ev["kind"] == "group_generation" and len(ev["members"]) == 2)
    handed = {ev["member"]: ev["assigned"] for ev in trace
              if ev["kind"] == "group_assignment" and ev["generation"] == last}
    assert sorted(tp for assigned in handed.values() for tp in assigned) == [[TOPIC, 0], [TOPIC, 1]]
