"""Coordinator targets against a reference cluster: found from the real Metadata of ``__consumer_offsets``
(after a consumer group made the broker create it), moved by the admin nemesis, killed by the process one."""

import time

import pytest

from nemesis.registry import build_package
from nemesis.targets import coordinator_of, group_partition


def _join_group(cluster, topic: str, group: str) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers(), group_id=group,
                             client_id="kraftcheck-test-coordinator", session_timeout_ms=6000)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 40
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the consumer never joined its group"
    finally:
        consumer.close()


@pytest.mark.jepsen
def test_the_group_coordinator_is_found_moved_and_killed(kraftcheck_cluster):
    cluster = kraftcheck_cluster
    run = cluster.run
    run.cluster = cluster
    cluster.create_topic("coord", 1, 3)
    early = coordinator_of(run, "group-coordinator", {"topic": "coord", "pick": 1})
    assert "does not exist yet" in early["fallback"] and early["node"] in cluster.brokers()

    _join_group(cluster, "coord", "coord-group")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "fallback" in coordinator_of(run, "group-coordinator", {"topic": "coord"}):
        time.sleep(0.5)
    found = coordinator_of(run, "group-coordinator", {"topic": "coord"})
    assert "fallback" not in found, found
    assert found["partition"] == group_partition("coord-group", 3) and found["group"] == "coord-group"

    pkg = build_package("kill,admin", seed=1)
    pkg.setup(run)
    try:
        move = pkg.execute(run, {"f": "reassign", "value": {"kind": "coordinator", "target": "group-coordinator",
                                                             "topic": "coord", "pick": 3}})
        value = move["value"]
        assert move["type"] == "ok" and value["effective"] is True, value
        assert value["coordinator"]["node"] == found["node"] and value["node_after"] != found["node"]
        kill = pkg.execute(run, {"f": "kill", "value": {"target": "group-coordinator", "topic": "coord", "pick": 4}})
        assert kill["value"]["nodes"] == [value["node_after"]] and kill["value"]["effective"] is True, kill["value"]
        assert kill["value"]["coordinator"]["partition"] == found["partition"]
        pkg.execute(run, {"f": "start", "value": {}})
    finally:
        pkg.teardown(run)
