"""Broker-side inject.bug switches against real processes: each breaks its one rule, and only when on."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from reference_impl.server.local_cluster import LocalCluster

pytest.importorskip("kafka")
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402


def test_skip_unclean_exclusion_presents_a_stale_epoch_after_a_crash(tmp_path):
    """K4/B3 broken: the marker survives a kill -9, so the crashed broker registers as if clean."""
    props = {"broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300"}
    c = LocalCluster(str(tmp_path / "c"), broker_ids=(1,), controller_props=dict(props),
                     broker_props=dict(props, **{"inject.bug": "skip-unclean-exclusion"}))
    try:
        c.start(30)
        broker = c.brokers[1]
        assert c.stop_node(broker) == 0  # clean: marker with epoch E
        c.start_node(broker)
        c.wait_unfenced([1], 20)
        regs = [e for e in c.trace(c.controller) if e["kind"] == "registered"]
        clean_epoch = regs[-1]["previous_broker_epoch"]
        assert clean_epoch == regs[0]["broker_epoch"]
        c.kill_node(broker)  # crash: a correct broker would now register with -1
        c.start_node(broker)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(
                [e for e in c.trace(c.controller) if e["kind"] == "registered"]) < 3:
            time.sleep(0.1)
        regs = [e for e in c.trace(c.controller) if e["kind"] == "registered"]
        assert len(regs) == 3 and regs[-1]["previous_broker_epoch"] == clean_epoch  # the lie
    finally:
        c.close()


@pytest.mark.jepsen
@pytest.mark.parametrize("bug", [None, "fetch-beyond-hwm"])
def test_fetch_beyond_hwm_serves_uncommitted_records(tmp_path, bug):
    """L10/I15 broken: with both followers paused, an acks=1 record stays above the HWM; a correct leader
    does not serve it to consumers, the buggy one does."""
    props = {"min.insync.replicas": "1", "replica.lag.time.max.ms": "60000",
             "broker.session.timeout.ms": "60000", "broker.heartbeat.interval.ms": "500"}
    bprops = dict(props, **({"inject.bug": bug} if bug else {}))
    c = LocalCluster(str(tmp_path / "c"), controller_props=dict(props), broker_props=bprops)
    paused = []
    try:
        c.start(30)
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
        admin.create_topics({"h": {"assignments": {0: [1, 2, 3]}}})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            parts = admin.describe_topics(["h"])[0]["partitions"]
            if parts and len(parts[0]["isr_nodes"]) == 3:
                break
            time.sleep(0.1)
        admin.close()
        producer = KafkaProducer(bootstrap_servers=c.brokers[1].address, acks=1, enable_idempotence=False)
        assert producer.send("h", value=b"committed", partition=0).get(timeout=10).offset == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and asyncio.run(consumer_fetch(c.brokers[1].address, "h", 0))[1] < 1:
            time.sleep(0.1)
        for b in (2, 3):  # paused, not fenced: they stay in the ISR, so nothing new commits
            os.kill(c.brokers[b].proc.pid, signal.SIGSTOP)
            paused.append(c.brokers[b].proc.pid)
        assert producer.send("h", value=b"uncommitted", partition=0).get(timeout=10).offset == 1
        producer.close(5)
        seen, hwm = asyncio.run(consumer_fetch(c.brokers[1].address, "h", 0))
        assert hwm == 1  # the followers never fetched offset 1: it is not committed
        assert seen == ([b"committed", b"uncommitted"] if bug else [b"committed"])

    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
        c.close()


async def consumer_fetch(address: str, topic: str, partition: int) -> tuple[list[bytes], int]:
    """One consumer Fetch v12 (replica_id -1) straight to ``address``: (record values, high watermark)."""
    from reference_impl.server.wire import messages as m
    from reference_impl.server.wire.client import WireClient
    from reference_impl.server.wire.records import decode_records

    host, port = address.rsplit(":", 1)
    request = m.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[m.FetchRequest.FetchTopic(topic=topic, partitions=[
            m.FetchRequest.FetchTopic.FetchPartition(partition=partition, current_leader_epoch=-1,
                                                     fetch_offset=0, last_fetched_epoch=-1,
                                                     log_start_offset=-1, partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[], rack_id="")
    async with WireClient(host, int(port)) as client:
        response = await client.send(request, 12)
    part = response.responses[0].partitions[0]
    records = bytes(part.records) if part.records else b""
    return [r.value for r in decode_records(records)] if records else [], part.high_watermark


def test_hwm_ignores_isr_bug_commits_before_replication():
    """L3 broken on purpose: the buggy leader's HWM reaches its LEO with no follower fetch; the correct
    core waits (acks=all pending until the followers fetch)."""
    from reference_impl.protocol.log import InMemoryLog
    from reference_impl.protocol.records import PartitionState
    from reference_impl.protocol.replica import PartitionReplica
    from reference_impl.protocol.replica_messages import ProduceBatch, ReplicaConfig
    from reference_impl.server.replica_manager import HwmIgnoresIsrReplica

    outcomes = {}
    for cls in (PartitionReplica, HwmIgnoresIsrReplica):
        replica = cls(1, "t", 0, InMemoryLog(), ReplicaConfig(min_insync_replicas=2))
        replica.apply_metadata(PartitionState([1, 2, 3], [1, 2, 3], 1, 1, 1), 0)
        result = replica.append_as_leader(ProduceBatch(1, b"x"), -1, 0)
        outcomes[cls.__name__] = (replica.high_watermark, result.pending)
    assert outcomes == {"PartitionReplica": (0, True), "HwmIgnoresIsrReplica": (1, False)}
