"""The final read against a real cluster with a partition that has no leader: the runner narrows it to the
partitions that have one, and the read of those completes (jepsen-marked, local backend)."""

import time

import pytest
from kafka import KafkaProducer

from harness.spec import RunSpec
from kraftcheck.runner import narrow_final_read
from workloads.queue import client_factory, final_read_op

pytestmark = pytest.mark.jepsen


@pytest.fixture
def kraftcheck_options(kraftcheck_options):
    """One replica per partition needs min.insync.replicas 1: under KIP-966 a high watermark stays put
    while the ISR is below it (L4), so nothing would be readable."""
    return {**kraftcheck_options, "min_isr": 1}


def _wait(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def test_a_leaderless_partition_leaves_the_final_read_of_the_others_whole(kraftcheck_cluster):
    cluster = kraftcheck_cluster
    cluster.create_topic("t", 3, 1)  # one replica each: a killed broker takes its partition offline
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers(), acks="all")
    for key in range(3):
        for i in range(5):
            producer.send("t", str(100 * key + i).encode(), partition=key)
    producer.flush(30)
    producer.close()
    lost = cluster.partitions("t")[0]["leader"]
    cluster.kill_node(cluster.broker_node(lost))
    assert _wait(lambda: cluster.partitions("t")[0]["leader"] == -1, 30)
    led = sorted(p for p, s in cluster.partitions("t").items() if s["leader"] >= 0)
    assert 0 not in led and led

    spec = RunSpec(topic="t", keys=3, op_timeout_s=10.0, workload="queue")
    narrowed, left_out = narrow_final_read(spec, cluster)
    assert narrowed == led and left_out == [0]

    client = client_factory(spec, cluster, op_timeout_s=10.0)(10_000_000)
    try:
        done = client.invoke(None, final_read_op(narrowed))
        assert done["type"] == "ok", done
        assert sorted(done["value"]) == [str(k) for k in led]
        assert all(len(done["value"][str(k)]) == 5 for k in led), done["value"]
        # the whole read cannot finish while partition 0 has no leader
        whole = client.invoke(None, final_read_op())
        assert whole["type"] == "info", whole
    finally:
        client.close()
