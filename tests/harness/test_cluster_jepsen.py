"""The reference cluster adapter against real nodes (jepsen-marked, local backend unless told otherwise):
readiness, topic creation, leaders from Metadata, kill -9 + restart with recovery, evidence collection."""

import json
import time

import pytest

pytestmark = pytest.mark.jepsen


def wait_for(predicate, timeout_s, step_s=0.3):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return False


def test_kill_and_restart_a_leader(kraftcheck_cluster, tmp_path):
    cluster = kraftcheck_cluster
    assert cluster.metadata_brokers() == {1, 2, 3}
    cluster.create_topic("t", 2, 3)
    partitions = cluster.partitions("t")
    assert sorted(partitions) == [0, 1]
    assert all(sorted(p["replicas"]) == [1, 2, 3] and p["leader"] in (1, 2, 3) for p in partitions.values())

    leader = partitions[0]["leader"]
    node = cluster.broker_node(leader)
    pid = cluster.kill_node(node)
    assert pid is not None and not cluster.host.is_running(node)
    # The controller fences the dead broker after its session timeout; Metadata stops listing it and
    # partition 0 moves to another replica.
    assert wait_for(lambda: leader not in cluster.metadata_brokers(), 30)
    assert wait_for(lambda: cluster.leaders("t")[0] not in (leader, -1), 30)

    new_pid = cluster.restart_node(node)
    assert new_pid != pid and cluster.host.is_running(node)
    assert cluster.wait_recovered(45, "t")
    assert cluster.metadata_brokers() == {1, 2, 3}

    out = tmp_path / "collected"
    cluster.collect_logs(out)
    log = (out / node / "node.log").read_text()
    assert log.count("--- kraftcheck: start") == 2  # the first start and the restart
    assert (out / node / "server.properties").is_file() and (out / node / "data-listing.txt").is_file()
    count = cluster.write_trace(tmp_path / "trace.jsonl", start_ns=0)
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert count == len(events) > 0
    assert [e["time"] for e in events] == sorted(e["time"] for e in events)
    assert {e["node_name"] for e in events} >= {"controller", "b1", "b2", "b3"}
