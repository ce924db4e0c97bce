"""A controller quorum of three real processes (Q1-Q15 on the wire): fail-over under kill -9, brokers that
follow the active controller, committed metadata that survives, a deposed controller that changes nothing.
"""

from __future__ import annotations

import time

import pytest

from reference_impl.server.local_cluster import LocalCluster
from tests.reference_impl.server.test_integration import (
    check_acked_readable,
    consume_kafka_python,
    create_topic,
    produce_kafka_python,
)

PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "4000",
         "broker.heartbeat.interval.ms": "500"}
QUORUM = {"controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "600",
          "controller.quorum.election.backoff.max.ms": "300"}
VOTERS = (1001, 1002, 1003)


def wait_active(c: LocalCluster, other_than=None, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        node = c.active_controller()
        if node is not None and node is not other_than:
            return node
        time.sleep(0.1)
    raise AssertionError("no active controller")


@pytest.fixture
def quorum(start_local_cluster):
    return start_local_cluster("quorum", 60, controller_ids=VOTERS, controller_props={**PROPS, **QUORUM},
                               broker_props=dict(PROPS))


def test_three_voters_elect_one_active_controller_and_replicate_the_log(quorum):
    active = wait_active(quorum)
    create_topic(quorum, "q", partitions=2)
    time.sleep(1.0)
    offsets = {}
    for node in quorum.controllers.values():
        applied = [ev for ev in quorum.trace(node) if ev.get("source") == "controller" and "offset" in ev]
        offsets[node.node_id] = {(ev["offset"], ev["kind"]) for ev in applied}
    assert offsets[active.node_id] and all(o == offsets[active.node_id] for o in offsets.values())  # I20
    leaders = {ev["voter"]: ev["epoch"] for n in quorum.controllers.values() for ev in quorum.trace(n)
               if ev.get("kind") == "quorum_state" and ev.get("state") == "leader"}
    assert active.node_id in leaders


def test_killing_the_active_controller_fails_over_and_loses_nothing(quorum):
    create_topic(quorum, "fo")
    acked = produce_kafka_python(quorum, "fo", [b"a%d" % i for i in range(50)])
    old = wait_active(quorum)
    quorum.kill_node(old)
    new = wait_active(quorum, other_than=old)
    assert new is not old
    # metadata changes go on at the new active controller: a topic created after the fail-over gets leaders
    create_topic(quorum, "after")
    acked.update(produce_kafka_python(quorum, "fo", [b"b%d" % i for i in range(50)]))
    check_acked_readable(acked, consume_kafka_python(quorum, "fo", len(acked)))
    quorum.start_node(old)  # the old leader rejoins as a follower and catches up
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        mine = {(ev["offset"], ev["kind"]) for ev in quorum.trace(old) if ev.get("source") == "controller"
                and "offset" in ev}
        theirs = {(ev["offset"], ev["kind"]) for ev in quorum.trace(new) if ev.get("source") == "controller"
                  and "offset" in ev}
        if theirs <= mine:
            break
        time.sleep(0.2)
    assert theirs <= mine
