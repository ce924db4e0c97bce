"""B2 / T*: a restarted broker does not act on an old state of the metadata log before its initial
catch-up (real processes, 1 controller + 3 brokers, ``jepsen``-marked).

The brokers pull the metadata log in pulls of 2 records (``metadata.fetch.max.records``), so catching up
after a restart takes many pulls. The partition leader is killed with SIGKILL, the controller fences it and
elects another leader in a later epoch E, and the broker restarts: from its trace, it must never take the
leader role (``role`` leader / ``leader_epoch_start``) in an epoch older than E, even though the log it
replays from offset 0 says it was the leader in epoch E-1.
"""

from __future__ import annotations

import time

import pytest

from reference_impl.server.local_cluster import LocalCluster

pytest.importorskip("kafka")
from kafka.admin import KafkaAdminClient  # noqa: E402

PROPS = {"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000"}


def controller_view(c: LocalCluster, topic: str) -> dict:
    """The controller's latest materialized state of partition 0 of ``topic``."""
    events = [e for e in c.trace(c.controller) if e["kind"] == "metadata_applied" and e.get("topic") == topic
              and e.get("partition") == 0]
    return events[-1] if events else {}


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.jepsen
def test_restarted_leader_never_leads_in_a_stale_epoch(tmp_path):
    c = LocalCluster(str(tmp_path / "cu"), controller_props=dict(PROPS),
                     broker_props=dict(PROPS, **{"metadata.fetch.max.records": "2"}))
    try:
        c.start(30)
        admin = KafkaAdminClient(bootstrap_servers=c.brokers[2].address, request_timeout_ms=10000)
        try:
            admin.create_topics({"cu": {"assignments": {0: [1, 2, 3]}}})
        finally:
            admin.close()
        wait_for(lambda: controller_view(c, "cu").get("leader") == 1
                 and len(controller_view(c, "cu").get("isr", [])) == 3, 20, "leader 1 with a full ISR")
        victim = c.brokers[1]
        old_epoch = controller_view(c, "cu")["leader_epoch"]
        before = len(c.trace(victim))
        c.kill_node(victim)
        wait_for(lambda: controller_view(c, "cu").get("leader") in (2, 3), 20, "a new leader after the kill")
        current = controller_view(c, "cu")["leader_epoch"]
        assert current > old_epoch
        c.start_node(victim)
        c.wait_unfenced([1], 30)
        wait_for(lambda: 1 in controller_view(c, "cu").get("isr", []), 30, "the restarted broker in the ISR")
        events = [e for e in c.trace(victim)[before:] if e.get("topic") == "cu"]
        led = [e for e in events if (e["kind"] == "role" and e.get("role") == "leader")
               or e["kind"] == "leader_epoch_start"]
        stale = [e for e in led if e["leader_epoch"] < current]
        assert not stale, f"restarted broker acted as leader in an old epoch (current {current}): {stale}"
        roles = [e for e in events if e["kind"] == "role"]
        assert roles and roles[0]["role"] == "follower" and roles[0]["leader_epoch"] >= current, roles
    finally:
        c.close()
