"""Dynamic reassignment configs through kafka-python against real processes (jepsen-marked).

One controller (id 0) and brokers 1-6, all-at-once by default. Through kafka-python's admin client:
validate_only and Kafka's refusals leave the configs alone; legacy AlterConfigs (api 33) switches
``reassignment.mode`` to incremental with ``reassignment.parallel.replica.count=1`` on the cluster-wide
resource; a reassignment [1,2,3] -> [4,5,6] then runs in steps of one replica (broker 4 is paused with
SIGSTOP so the first step cannot finish); IncrementalAlterConfigs (api 44) raises the count to 3 mid-step:
the running step keeps its single added replica, the next one adds 5 and 6 together (seed 002). The
controller's trace orders the ``config_changed`` record against the steps. The public ``alter_configs``
sets a per-broker override, described as DYNAMIC_BROKER_CONFIG.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from nemesis.admin import alter_cluster_configs, describe_cluster_configs

pytest.importorskip("kafka")
from kafka import KafkaAdminClient, TopicPartition  # noqa: E402
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic  # noqa: E402

PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "15000",
         "broker.heartbeat.interval.ms": "500"}
TOPIC = "dyn"
TP = TopicPartition(TOPIC, 0)


def wait_for(predicate, timeout_s: float, what: str):
    """Poll ``predicate`` every 0.2 s until truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def broker_config(admin: KafkaAdminClient, broker: int, key: str) -> dict:
    """One key of a broker's DescribeConfigs answer (value, config_source)."""
    got = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker), configs=[key])],
                                 config_filter="all")
    return got["broker"][str(broker)].get(key, {})


def replicas(admin: KafkaAdminClient) -> list[int]:
    """The partition's replicas from Metadata."""
    return list(admin.describe_topics([TOPIC])[0]["partitions"][0]["replica_nodes"])


@pytest.mark.jepsen
def test_mode_and_parallelism_switch_live_through_the_admin_api(start_local_cluster):
    c = start_local_cluster("dyn", 60, broker_ids=(1, 2, 3, 4, 5, 6), controller_props=dict(PROPS),
                            broker_props=dict(PROPS))
    admin = KafkaAdminClient(bootstrap_servers=c.brokers[1].address, request_timeout_ms=15000)
    paused = None
    try:
        # Before: all-at-once from the built-in default, nothing set cluster-wide.
        mode = broker_config(admin, 1, "reassignment.mode")
        assert (mode["value"], mode["config_source"]) == ("all-at-once", "DEFAULT_CONFIG")
        assert describe_cluster_configs(admin) == {}

        # validate_only and refusals change nothing.
        assert alter_cluster_configs(admin, {"reassignment.mode": "incremental"}, validate_only=True) == "OK"
        assert "InvalidRequestError" in alter_cluster_configs(admin, {"num.partitions": "3"})
        assert "InvalidConfigurationError" in alter_cluster_configs(admin, {"no.such.config": "1"})
        assert "InvalidConfigurationError" in alter_cluster_configs(admin, {"reassignment.mode": "sometimes"})
        time.sleep(0.5)
        assert describe_cluster_configs(admin) == {}

        # Legacy AlterConfigs (api 33): the resource's whole dynamic set.
        assert alter_cluster_configs(admin, {"reassignment.mode": "incremental",
                                             "reassignment.parallel.replica.count": "1"}, incremental=False) == "OK"
        wait_for(lambda: describe_cluster_configs(admin).get("reassignment.mode", {}).get("value") == "incremental",
                 10, "the cluster default to read back")
        assert describe_cluster_configs(admin)["reassignment.parallel.replica.count"] == {
            "value": "1", "config_source": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
        wait_for(lambda: broker_config(admin, 3, "reassignment.mode").get("config_source")
                 == "DYNAMIC_DEFAULT_BROKER_CONFIG", 10, "broker 3 to apply the config record")

        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [1, 2, 3]})])
        wait_for(lambda: len(admin.describe_topics([TOPIC])[0]["partitions"][0]["isr_nodes"]) == 3, 30, "ISR of 3")

        # Broker 4 frozen: the first incremental step (add 4) cannot complete.
        paused = c.brokers[4].proc.pid
        os.kill(paused, signal.SIGSTOP)
        assert admin.alter_partition_reassignments({TP: [4, 5, 6]}) == {TP: None}
        first = wait_for(lambda: admin.list_partition_reassignments().get(TP, {}).get("adding_replicas"), 10,
                         "the first step")
        assert first == [4]  # incremental with R=1 (all-at-once would add 4, 5 and 6 at once)

        # IncrementalAlterConfigs (api 44) mid-step: only the next step sees it.
        assert alter_cluster_configs(admin, {"reassignment.parallel.replica.count": "3"}) == "OK"
        time.sleep(1.5)  # many controller timer ticks
        running = admin.list_partition_reassignments()[TP]
        assert running["adding_replicas"] == [4] and running["removing_replicas"] == []
        os.kill(paused, signal.SIGCONT)
        paused = None
        wait_for(lambda: replicas(admin) == [4, 5, 6] and not admin.list_partition_reassignments(), 60,
                 "the reassignment to finish")

        # Public alter_configs: a per-broker override (DYNAMIC_BROKER_CONFIG on that broker only).
        resource = ConfigResource(ConfigResourceType.BROKER, "2",
                                  configs={"unclean.leader.election.enable": "false"})
        assert admin.alter_configs([resource]) == {"broker": {"2": "OK"}}
        wait_for(lambda: broker_config(admin, 2, "unclean.leader.election.enable").get("config_source")
                 == "DYNAMIC_BROKER_CONFIG", 10, "the per-broker override")
        assert broker_config(admin, 1, "unclean.leader.election.enable")["config_source"] != "DYNAMIC_BROKER_CONFIG"
    finally:
        if paused is not None:
            os.kill(paused, signal.SIGCONT)
        admin.close()

    trace = c.trace(c.controller)
    (change,) = [e for e in trace if e["kind"] == "config_changed" and e["value"] == "3"]
    steps = [(e["offset"], sorted(e["adding"])) for e in trace
             if e["kind"] == "metadata_applied" and e.get("topic") == TOPIC and e["adding"]]
    before = {tuple(a) for o, a in steps if o < change["offset"]}
    after = {tuple(a) for o, a in steps if o > change["offset"]}
    assert before == {(4,)}
    assert (5, 6) in after and all(len(a) <= 3 for a in after)
