"""A late copy of a broker's registration, in real processes: the broker registers again, and does not stay
fenced.

Seen in a `--txn --nemesis kill,partition` run (verdict unknown: the cluster did not recover after the heal):
a restarted broker's registration timed out while the network was cut, its retry was accepted and the broker
ran, and when the cut healed TCP delivered the first copy. The controller took it for a same-incarnation
retry and registered the broker again with an epoch the broker never heard of; every heartbeat with its own
epoch was answered STALE_BROKER_EPOCH and the broker stayed fenced until the end of the run. This test sends
that late copy itself, over the wire, with the broker's own incarnation id (read from its trace), and
expects the broker to register again and be unfenced within a few heartbeats.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from reference_impl.server.broker import CLUSTER_ID
from reference_impl.server.controller_link import ControllerLink

from .test_integration import PROPS

pytestmark = pytest.mark.jepsen


def _controller_view(cluster, broker: int) -> list[dict]:
    return [e for e in cluster.trace(cluster.controller)
            if e.get("broker") == broker and e["kind"] in ("registered", "fenced", "unfenced")]


async def _send_late_copy(cluster, broker: int, incarnation: str, port: int) -> tuple[object, int]:
    link = ControllerLink("127.0.0.1", cluster.controller.port, "late-copy")
    try:
        return await link.register(broker, CLUSTER_ID, incarnation, "127.0.0.1", port, -1)
    finally:
        await link.close()


def test_a_late_registration_copy_leaves_the_broker_registered_and_unfenced(start_local_cluster):
    cluster = start_local_cluster("late-registration", 30, controller_props=dict(PROPS), broker_props=dict(PROPS))
    node = cluster.brokers[2]
    [own] = [e for e in cluster.trace(node) if e["kind"] == "registered"]
    err, stale_epoch = asyncio.run(_send_late_copy(cluster, 2, own["incarnation_id"], node.port))
    assert int(err) == 0 and stale_epoch > own["broker_epoch"]

    deadline = time.monotonic() + 20
    again = []
    while time.monotonic() < deadline:
        again = [e for e in cluster.trace(node) if e["kind"] == "registered" and e["broker_epoch"] > stale_epoch]
        view = _controller_view(cluster, 2)
        if again and view[-1]["kind"] == "unfenced" and view[-1]["broker_epoch"] == again[-1]["broker_epoch"]:
            break
        time.sleep(0.5)
    lost = [e for e in cluster.trace(node) if e["kind"] == "registration_lost"]
    assert lost and lost[0]["broker_epoch"] == own["broker_epoch"], lost
    assert again, "the broker never registered again after its registration was replaced"
    view = _controller_view(cluster, 2)
    assert view[-1]["kind"] == "unfenced" and view[-1]["broker_epoch"] == again[-1]["broker_epoch"], view[-4:]
