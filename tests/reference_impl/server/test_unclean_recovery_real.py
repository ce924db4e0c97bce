"""K7 balanced unclean recovery in real processes: GetReplicaLogInfo from the controller to the brokers.

KIP-966, MinISR 2, three brokers. Every broker is killed with ``kill -9`` (no clean-shutdown marker, so
each restart is unclean, K4): the ISR empties into the ELR as the brokers are fenced, and the unclean
re-registrations move the ELR into the last-known ELR, leaving ISR = ELR = ∅ with no leader. Without K7
the partition would stay leaderless for good (K10). With ``unclean.recovery.strategy=balanced`` the active
controller asks every last-known-ELR member for its log end, elects the most complete, and, since a
``kill -9`` with the OS alive loses nothing (B4), every acknowledged record is read back.
"""

from __future__ import annotations

import time

import pytest

from .test_integration import (
    PROPS,
    check_acked_readable,
    consume_kafka_python,
    create_topic,
    produce_kafka_python,
)

pytestmark = pytest.mark.jepsen

K966 = dict(PROPS, **{"protocol.variant": "kip966", "unclean.recovery.strategy": "balanced"})


def controller_states(cluster, topic: str) -> list[dict]:
    return [e for e in cluster.trace(cluster.controller)
            if e["kind"] == "metadata_applied" and e.get("topic") == topic and e.get("partition") == 0]


def test_balanced_recovery_elects_the_most_complete_last_known_elr_member(start_local_cluster):
    cluster = start_local_cluster("k7", 30, controller_props=dict(K966), broker_props=dict(K966))
    create_topic(cluster, "k7")
    acked = produce_kafka_python(cluster, "k7", [f"v-{i}".encode() for i in range(300)])
    for broker in cluster.brokers.values():
        cluster.kill_node(broker)
    time.sleep(5)  # past the 3 s session timeout: every broker is fenced, the ISR is empty
    for broker in cluster.brokers.values():
        cluster.start_node(broker)

    deadline = time.monotonic() + 45
    recoveries: list[dict] = []
    while not recoveries and time.monotonic() < deadline:
        time.sleep(0.5)
        recoveries = [e for e in cluster.trace(cluster.controller) if e["kind"] == "unclean_recovery"]
    states = controller_states(cluster, "k7")
    assert recoveries, f"no unclean recovery within 45 s; last state {states[-1] if states else None}"
    # It was needed: the partition went leaderless with ISR = ELR = ∅ before it.
    assert any(s["leader"] == -1 and not s["isr"] and not s.get("elr") and s.get("last_known_elr")
               for s in states), states
    [recovery] = recoveries
    answers = {int(b): tuple(end) for b, end in recovery["answers"].items()}
    assert answers and answers[recovery["leader"]] == max(answers.values())  # the most complete
    assert all(end[1] >= max(acked.values()) + 1 for end in answers.values())  # nothing was lost by kill -9
    check_acked_readable(acked, consume_kafka_python(cluster, "k7", len(acked), timeout_s=60))
