"""Live reassignments through kafka-python's KafkaAdminClient against real processes (jepsen-marked).

- all-at-once [1,2,3] -> [1,2,4] under acks=all load: ListPartitionReassignments shows adding/removing
  while it runs, it completes (C18/C19), the removed replica deletes its log (T1), nothing acked is lost;
- KIP-860: an RF change with allow_replication_factor_change=false is refused (INVALID_REPLICATION_FACTOR);
- cancel reverts (C21);
- incremental mode runs seed 002's example (0,1,2,3,4) -> (5,6,7,8,9) live on brokers 0..9.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from reference_impl.server.local_cluster import LocalCluster
from tests.reference_impl.server.test_integration import (
    PROPS,
    check_acked_readable,
    consume_kafka_python,
)

pytest.importorskip("kafka")
from kafka import KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.errors import InvalidReplicationFactorError  # noqa: E402
from kafka.protocol.admin import AlterPartitionReassignmentsRequest  # noqa: E402


def admin_for(c: LocalCluster) -> KafkaAdminClient:
    """An admin client bootstrapped on the lowest broker id (which Metadata also names as controller_id;
    brokers forward admin requests), so it stays off the brokers the tests stop."""
    first = c.brokers[min(c.brokers)]
    return KafkaAdminClient(bootstrap_servers=first.address, request_timeout_ms=15000)


def create_assigned(admin: KafkaAdminClient, topic: str, replicas: list[int]) -> None:
    admin.create_topics({topic: {"assignments": {0: replicas}}})


def alter_v1(admin: KafkaAdminClient, tp: TopicPartition, replicas: list[int] | None, allow_rf_change: bool):
    """AlterPartitionReassignments v1 with KIP-860's flag, sent through the admin client's own machinery
    (its public method does not expose the flag)."""
    topic_cls = AlterPartitionReassignmentsRequest.ReassignableTopic
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=15000, allow_replication_factor_change=allow_rf_change,
        topics=[topic_cls(name=tp.topic, partitions=[topic_cls.ReassignablePartition(
            partition_index=tp.partition, replicas=replicas)])])
    response = admin._manager.run(admin._send_request_to_controller, request, lambda r: iter(()))
    return {(t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}


def describe(admin: KafkaAdminClient, topic: str) -> dict:
    return admin.describe_topics([topic])[0]["partitions"][0]


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (IndexError, KeyError):  # metadata not propagated to the answering broker yet
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Load:
    """A background acks=all producer recording acknowledged (value, offset) pairs."""

    def __init__(self, c: LocalCluster, topic: str) -> None:
        self.acked: dict[bytes, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(c, topic), daemon=True)
        self._thread.start()

    def _run(self, c: LocalCluster, topic: str) -> None:
        producer = KafkaProducer(bootstrap_servers=c.bootstrap, acks="all", linger_ms=2, retries=50,
                                 request_timeout_ms=10000)
        i = 0
        try:
            while not self._stop.is_set() and i < 100_000:
                batch = []
                for _ in range(100):
                    v = f"{topic}-{i}".encode()
                    batch.append((v, producer.send(topic, value=v, partition=0)))
                    i += 1
                for v, fut in batch:
                    try:
                        self.acked[v] = fut.get(timeout=60).offset
                    except Exception:  # not acknowledged: outside the guarantee
                        pass
                time.sleep(0.01)
        finally:
            producer.close(10)

    def stop(self) -> dict[bytes, int]:
        self._stop.set()
        self._thread.join(120)
        return self.acked


@pytest.fixture
def cluster4(start_local_cluster):
    """1 controller + 4 brokers (room to move a replica set of 3)."""
    return start_local_cluster("c4", 40, broker_ids=(1, 2, 3, 4), controller_props=dict(PROPS),
                               broker_props=dict(PROPS))


@pytest.mark.jepsen
def test_move_1_2_3_to_1_2_4_under_load_and_kip860_and_cancel(cluster4):
    c = cluster4
    admin = admin_for(c)
    tp = TopicPartition("move", 0)
    try:
        create_assigned(admin, "move", [1, 2, 3])
        wait_for(lambda: len(describe(admin, "move")["isr_nodes"]) == 3, 15, "ISR of 3")
        load = Load(c, "move")
        wait_for(lambda: len(load.acked) > 500, 30, "load")
        # Broker 4 is down while the reassignment starts, so the catch-up phase is observable.
        c.stop_node(c.brokers[4])
        assert admin.alter_partition_reassignments({tp: [1, 2, 4]}) == {tp: None}
        ongoing = admin.list_partition_reassignments()
        assert ongoing[tp]["adding_replicas"] == [4] and ongoing[tp]["removing_replicas"] == [3]
        assert sorted(ongoing[tp]["replicas"]) == [1, 2, 3, 4]
        # KIP-860: a replication-factor change is refused when not allowed...
        codes = alter_v1(admin, tp, [1, 2], allow_rf_change=False)
        assert codes[("move", 0)] == InvalidReplicationFactorError.errno
        # ...also against the target of the reassignment in progress (seed 003).
        assert alter_v1(admin, tp, [1, 2, 4, 3], allow_rf_change=False)[("move", 0)] == \
            InvalidReplicationFactorError.errno
        # Broker 3 (being removed) goes down before the move completes: on restart its log is stray.
        c.stop_node(c.brokers[3])
        c.start_node(c.brokers[4])
        wait_for(lambda: not admin.list_partition_reassignments(), 60, "reassignment to complete")
        c.start_node(c.brokers[3])
        final = describe(admin, "move")
        assert sorted(final["replica_nodes"]) == [1, 2, 4], final
        time.sleep(2)
        acked = load.stop()
        # T1: broker 3 is no longer a replica and deleted its (stray) log after restarting.
        assert wait_for(lambda: not os.path.exists(os.path.join(c.brokers[3].data_dir, "move-0")), 20,
                        "broker 3 to delete its log")
        read = consume_kafka_python(c, "move", len(acked), timeout_s=60)
        check_acked_readable(acked, read)

        # Cancel reverts (C21): move [1,2,4] -> [1,2,3] with 3 down, then cancel.
        c.stop_node(c.brokers[3])
        assert admin.alter_partition_reassignments({tp: [1, 2, 3]}) == {tp: None}
        assert admin.list_partition_reassignments()[tp]["adding_replicas"] == [3]
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert not admin.list_partition_reassignments()
        assert sorted(describe(admin, "move")["replica_nodes"]) == [1, 2, 4]
        c.start_node(c.brokers[3])
    finally:
        admin.close()


SEED_002_STATES = [[0, 1, 2, 3, 4], [5, 0, 1, 2, 3, 4], [5, 6, 2, 3, 4], [5, 6, 7, 8, 4], [5, 6, 7, 8, 9]]


@pytest.mark.jepsen
def test_incremental_mode_runs_seed_002_example(tmp_path):
    """Seed 002: (0,1,2,3,4) -> (5,6,7,8,9), leader 0, reassignment.parallel.replica.count 2, live."""
    props = dict(PROPS, **{"reassignment.mode": "incremental", "reassignment.parallel.replica.count": "2"})
    c = LocalCluster(str(tmp_path / "c10"), broker_ids=tuple(range(10)), controller_id=100,
                     controller_props=props, broker_props=dict(PROPS))
    try:
        c.start(90)
        admin = admin_for(c)
        tp = TopicPartition("kip435", 0)
        try:
            create_assigned(admin, "kip435", [0, 1, 2, 3, 4])
            wait_for(lambda: len(describe(admin, "kip435")["isr_nodes"]) == 5, 30, "ISR of 5")
            load = Load(c, "kip435")
            wait_for(lambda: len(load.acked) > 200, 30, "load")
            assert admin.alter_partition_reassignments({tp: [5, 6, 7, 8, 9]}) == {tp: None}
            wait_for(lambda: describe(admin, "kip435")["replica_nodes"] == [5, 6, 7, 8, 9] and
                     not admin.list_partition_reassignments(), 120, "incremental reassignment to finish")
            acked = load.stop()
        finally:
            admin.close()
        states = [e for e in c.trace(c.controller) if e["kind"] == "metadata_applied"
                  and e.get("topic") == "kip435" and not e["adding"] and not e["removing"]]
        stable = []
        for e in states:
            if not stable or stable[-1] != e["replicas"]:
                stable.append(e["replicas"])
        assert stable == SEED_002_STATES
        steps = [e for e in c.trace(c.controller) if e["kind"] == "metadata_applied"
                 and e.get("topic") == "kip435" and (e["adding"] or e["removing"])]
        assert all(len(e["adding"]) <= 2 or e["replicas"][:1] == [5] for e in steps)
        assert describe_leader(c, "kip435") == 5
        read = consume_kafka_python(c, "kip435", len(acked), timeout_s=60)
        check_acked_readable(acked, read)
    finally:
        c.close()


def describe_leader(c: LocalCluster, topic: str) -> int:
    events = [e for e in c.trace(c.controller) if e["kind"] == "metadata_applied" and e.get("topic") == topic]
    return events[-1]["leader"]
