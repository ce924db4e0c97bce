"""The broker shell hands the protocol core what its docstrings ask for (no processes, no sockets).

A real ``Broker`` object (never started) is fed real metadata records and real follower fetches, then its
ISR round and fetcher are run: the leader-side eligibility check (L15 / scenario 10: fenced, shutting down or
older-incarnation followers are not proposed) gets the metadata image's view, and a fetch lost without a
reply is reported to the core with ``abandon_fetch`` instead of a made-up error reply.
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.protocol.follower_fetch import PlannedFetch
from reference_impl.protocol.records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from reference_impl.protocol.replica import PartitionReplica
from reference_impl.server.broker import Broker
from reference_impl.server.config import config_from_properties
from reference_impl.server.fetcher import LeaderFetcher
from reference_impl.server.local_cluster import free_port
from reference_impl.server.replica_manager import now_ms

TID = "00000000-0000-0000-0000-0000000000aa"


def make_broker(tmp_path, node_id: int = 1) -> Broker:
    config = config_from_properties({
        "node.id": str(node_id), "process.roles": "broker", "listeners": "127.0.0.1:1",
        "log.dirs": str(tmp_path / f"data-{node_id}"), "controller.quorum.bootstrap.servers": "127.0.0.1:2",
        "replica.lag.time.max.ms": "10000"})
    return Broker(config)


def registered(broker: Broker, leader: int, follower: int, follower_epoch: int) -> None:
    """Brokers ``leader`` (epoch 0) and ``follower`` registered and unfenced; a topic with one partition
    led by ``leader``, replicas [leader, follower], ISR [leader]."""
    broker.apply_metadata_batch([
        (0, RegisterBrokerRecord(leader, "inc-a", 0, "127.0.0.1", 1)),
        (1, UnfenceBrokerRecord(leader, 0)),
        (follower_epoch, RegisterBrokerRecord(follower, "inc-b", follower_epoch, "127.0.0.1", 3)),
        (follower_epoch + 1, UnfenceBrokerRecord(follower, follower_epoch)),
        (follower_epoch + 2, TopicRecord("t", TID)),
        (follower_epoch + 3, PartitionRecord(TID, 0, (leader, follower), (leader,), leader, 1, 1)),
    ])


def caught_up_fetch(broker: Broker, follower: int, follower_fetch_epoch: int) -> None:
    """The follower fetches at the leader's LEO with the given broker epoch (L10)."""
    part = broker.manager.lookup("t", 0)
    replica = part.replica
    result = replica.handle_follower_fetch(follower, follower_fetch_epoch, replica.leader_epoch,
                                           replica.log_end_offset, -1, 1 << 20, now_ms())
    assert result.error.ok


def proposals(broker: Broker) -> list[list[int]]:
    return [[m.broker_id for m in req.new_isr] for _, req in broker.isr_round(now_ms())]


def test_a_caught_up_follower_is_proposed(tmp_path):
    broker = make_broker(tmp_path)
    registered(broker, 1, 2, follower_epoch=5)
    caught_up_fetch(broker, 2, 5)
    assert proposals(broker) == [[1, 2]]


def test_a_follower_of_an_older_incarnation_is_not_proposed_s10(tmp_path):
    # Scenario 10: the accepted fetch carried epoch 5, but the image shows broker 2 re-registered (epoch 9).
    broker = make_broker(tmp_path)
    registered(broker, 1, 2, follower_epoch=5)
    caught_up_fetch(broker, 2, 5)
    broker.apply_metadata_batch([(20, RegisterBrokerRecord(2, "inc-c", 20, "127.0.0.1", 3))])
    assert broker.image.broker_epochs()[2] == 20
    assert proposals(broker) == []


@pytest.mark.parametrize("record", [FenceBrokerRecord(2, 5),
                                    BrokerRegistrationChangeRecord(2, 5, in_controlled_shutdown=True)])
def test_a_fenced_or_shutting_down_follower_is_not_proposed(tmp_path, record):
    broker = make_broker(tmp_path)
    registered(broker, 1, 2, follower_epoch=5)
    caught_up_fetch(broker, 2, 5)
    broker.apply_metadata_batch([(20, record)])
    assert 2 in broker.image.ineligible_brokers()
    assert proposals(broker) == []


class RecordingReplica(PartitionReplica):
    """The real replica core, noting which follower-side entry points the fetcher called."""

    calls: list[str]

    def abandon_fetch(self, request, now_ms):
        self.calls.append("abandon_fetch")
        super().abandon_fetch(request, now_ms)

    def handle_fetch_response(self, request, response, now_ms):
        self.calls.append(f"handle_fetch_response:{response.error.name}")
        super().handle_fetch_response(request, response, now_ms)


@pytest.mark.parametrize("reachable", [False, True])
def test_a_lost_fetch_is_abandoned_not_answered_with_a_made_up_error(tmp_path, reachable):
    # Broker 2 follows broker 1; broker 1's address refuses connections (or is unknown): the round fails
    # without any reply, and the core must hear exactly that.
    broker = make_broker(tmp_path, node_id=2)
    port = free_port()  # nothing listens there

    async def body():
        registered(broker, 1, 2, follower_epoch=5)  # T5: broker 2 starts a fetcher for leader 1 ...
        for f in broker.fetchers.values():
            await f.close()  # ... which is stopped before its first round: this test drives one by hand
        part = broker.manager.lookup("t", 0)
        part.replica.__class__ = RecordingReplica
        part.replica.calls = []
        fetcher = LeaderFetcher(broker.manager, 1, lambda _b: ("127.0.0.1", port) if reachable else None, "2")
        req = part.replica.build_fetch(now_ms())
        assert req is not None and part.replica.fetch_in_flight == req
        fetcher.partitions[("t", 0)] = part  # in this fetcher, without starting its task
        await fetcher._round([PlannedFetch(("t", 0), part.replica, req)])
        await fetcher.close()
        return part

    part = asyncio.run(asyncio.wait_for(body(), 20))
    assert part.replica.calls == ["abandon_fetch"]
    assert part.replica.fetch_in_flight is None  # F1: the next fetch can be built after the backoff
