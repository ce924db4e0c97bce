"""The controller process serves AlterPartition v0-3 as advertised, each version on Kafka's terms, over a
real socket: v0-1 name the topic, v2+ give its id (KIP-841), v3 carries broker epochs (KIP-903); an
ineligible replica is OPERATION_NOT_ATTEMPTED before v2 and INELIGIBLE_REPLICA after, a leader moved by a
completing reassignment is FENCED_LEADER_EPOCH before v2 and NEW_LEADER_ELECTED after, an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION before v2 and UNKNOWN_TOPIC_ID after."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import RECOVERING, PartitionChangeRecord
from reference_impl.server import services as sv
from reference_impl.server.config import config_from_properties
from reference_impl.server.controller import Controller
from reference_impl.server.controller_link import ControllerLink
from reference_impl.server.local_cluster import free_port
from reference_impl.server.wire import WireClient
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.codec import ALL_APIS

ALTER_PARTITION = 56


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


class Harness:
    """An in-process controller on loopback with brokers 1-3 unfenced, 4 registered but fenced, and topic
    ``t``: partition 0 on [1, 2, 3, 4] (4 outside the ISR), partitions 1 and 2 on [1, 2, 3]."""

    def __init__(self, tmp_path, **extra: str) -> None:
        self.port = free_port()
        self.config = config_from_properties({
            "node.id": "0", "process.roles": "controller", "listeners": f"127.0.0.1:{self.port}",
            "log.dirs": str(tmp_path / "ctl"), "broker.session.timeout.ms": "60000",
            "min.insync.replicas": "2", **extra})
        self.epochs: dict[int, int] = {}

    async def __aenter__(self) -> Harness:
        self.ctl = Controller(self.config)
        self.task = asyncio.create_task(self.ctl.run())
        for _ in range(100):
            if self.ctl.server._server is not None:
                break
            await asyncio.sleep(0.01)
        self.link = ControllerLink("127.0.0.1", self.port, "test")
        self.client = WireClient("127.0.0.1", self.port, client_id="leader-1")
        for b in (1, 2, 3, 4):
            err, self.epochs[b] = await self.link.register(b, "c", str(uuid.uuid4()), "127.0.0.1", 9000 + b, -1)
            assert err == Errors.NONE
            if b != 4:
                await self.link.heartbeat(b, self.epochs[b], metadata_offset=10**6, want_fence=False,
                                          want_shutdown=False)
        self.admin = self.ctl.server.handlers[19].__self__.admin
        [res] = await self.admin.create_topics(
            [sv.NewTopic("t", assignments={0: (1, 2, 3, 4), 1: (1, 2, 3), 2: (1, 2, 3)})], 1000, False)
        assert res.error == Errors.NONE
        self.topic_id = res.topic_id
        return self

    async def __aexit__(self, *exc) -> None:
        await self.client.close()
        await self.link.close()
        self.ctl.stop_event.set()
        await asyncio.wait_for(self.task, 10)

    def state(self, partition: int):
        return self.ctl.core.partition_state(self.topic_id, partition)

    async def request(self, version: int, partition: int, isr: list[int], *, topic: str | None = None,
                      recovering: bool = False, broker_epoch: int | None = None):
        """One AlterPartition from leader 1 at ``version`` with the partition's current epochs; ``topic`` is
        a name (v0-1) or an id (v2+), by default topic ``t``'s. Returns the whole response."""
        p = self.state(partition)
        part = m.AlterPartitionRequest.TopicData.PartitionData
        members = dict(new_isr_with_epochs=[part.BrokerState(broker_id=b, broker_epoch=-1) for b in isr]) \
            if version >= 3 else dict(new_isr=isr)
        data = part(partition_index=partition, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                    leader_recovery_state=1 if recovering else 0, **members)
        if version < 2:
            topic_data = m.AlterPartitionRequest.TopicData(topic_name=topic or "t", partitions=[data])
        else:
            topic_data = m.AlterPartitionRequest.TopicData(topic_id=uuid.UUID(topic or self.topic_id),
                                                          partitions=[data])
        epoch = self.epochs[1] if broker_epoch is None else broker_epoch
        return await self.client.send(m.AlterPartitionRequest(broker_id=1, broker_epoch=epoch,
                                                              topics=[topic_data]), version)

    async def alter(self, version: int, partition: int, isr: list[int], **kwargs):
        """``request`` expecting no top-level error; returns the one partition entry, after checking the
        topic is echoed the way the version names it."""
        resp = await self.request(version, partition, isr, **kwargs)
        assert resp.error_code == 0
        [topic_out] = resp.topics
        topic = kwargs.get("topic")
        if version < 2:
            assert topic_out.topic_name == (topic or "t")
        else:
            assert str(topic_out.topic_id) == (topic or self.topic_id)
        [out] = topic_out.partitions
        return out


def test_api_versions_advertises_alter_partition_0_to_3(tmp_path):
    async def scenario():
        async with Harness(tmp_path) as h:
            cls = ALL_APIS[18].request_class
            resp = await h.client.send(cls(client_software_name="t", client_software_version="1"), 3)
            ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            return ranges[ALTER_PARTITION]

    assert run(scenario()) == (0, 3)


@pytest.mark.parametrize("version, code", [(0, Errors.OPERATION_NOT_ATTEMPTED), (1, Errors.OPERATION_NOT_ATTEMPTED),
                                           (2, Errors.INELIGIBLE_REPLICA), (3, Errors.INELIGIBLE_REPLICA)])
def test_ineligible_replica_error_per_version(tmp_path, version, code):
    async def scenario():
        async with Harness(tmp_path) as h:
            before = h.state(0).copy()
            out = await h.alter(version, 0, [1, 2, 3, 4])  # 4 is fenced
            return out.error_code, h.state(0) == before

    assert run(scenario()) == (code, True)


def test_every_version_can_change_the_isr(tmp_path):
    async def scenario():
        async with Harness(tmp_path) as h:
            codes, isrs = [], []
            for version, isr in [(0, [1, 2]), (1, [1, 2, 3]), (2, [1, 3]), (3, [1, 2, 3])]:
                out = await h.alter(version, 1, isr)
                codes.append(out.error_code)
                isrs.append((list(out.isr), h.state(1).isr))
            return codes, isrs

    codes, isrs = run(scenario())
    assert codes == [0, 0, 0, 0]
    assert isrs == [([1, 2], [1, 2]), ([1, 2, 3], [1, 2, 3]), ([1, 3], [1, 3]), ([1, 2, 3], [1, 2, 3])]


@pytest.mark.parametrize("version, code", [(1, Errors.FENCED_LEADER_EPOCH), (2, Errors.NEW_LEADER_ELECTED)])
def test_completion_moving_the_leader_per_version(tmp_path, version, code):
    """Partition 1: ISR shrunk to {1}, then moved to [2, 3]: it cannot complete (final ISR empty). The leader's
    AlterPartition adding 2 and 3 completes it (C19) and moves the leadership to 2: committed either way."""
    async def scenario():
        async with Harness(tmp_path) as h:
            assert (await h.alter(version, 1, [1])).error_code == 0
            [r] = await h.admin.alter_partition_reassignments([sv.Reassignment("t", 1, (2, 3))], True, 1000)
            assert r.error == Errors.NONE
            out = await h.alter(version, 1, [1, 2, 3])
            p = h.state(1)
            return out.error_code, (p.replicas, p.isr, p.leader, p.adding, p.removing)

    assert run(scenario()) == (code, ([2, 3], [2, 3], 2, [], []))


@pytest.mark.parametrize("version, code", [(1, Errors.UNKNOWN_TOPIC_OR_PARTITION), (2, Errors.UNKNOWN_TOPIC_ID)])
def test_unknown_topic_per_version(tmp_path, version, code):
    async def scenario():
        async with Harness(tmp_path) as h:
            topic = "nope" if version < 2 else str(uuid.uuid4())
            return (await h.alter(version, 1, [1, 2], topic=topic)).error_code

    assert run(scenario()) == code


def test_answer_carries_the_leader_recovery_state_from_v1(tmp_path):
    """A leader still RECOVERING after an unclean election (its ISR is itself) is told so (KIP-704, v1+)."""
    async def scenario():
        async with Harness(tmp_path) as h:
            h.ctl.commit([PartitionChangeRecord(h.topic_id, 2, isr=(1,), leader_recovery_state=RECOVERING,
                                                leader_epoch_bump=True)])
            out = await h.alter(1, 2, [1], recovering=True)
            return out.error_code, out.leader_recovery_state

    assert run(scenario()) == (0, 1)


@pytest.mark.parametrize("version", [0, 3])
def test_stale_sender_epoch_fails_the_whole_request(tmp_path, version):
    """Kafka checks the sender's broker epoch before any partition (checkBrokerEpoch): a top-level
    STALE_BROKER_EPOCH and no per-partition answers; nothing is committed."""
    async def scenario():
        async with Harness(tmp_path) as h:
            before = h.state(1).copy()
            resp = await h.request(version, 1, [1], broker_epoch=h.epochs[1] + 1000)
            return resp.error_code, list(resp.topics), h.state(1) == before

    assert run(scenario()) == (Errors.STALE_BROKER_EPOCH, [], True)


def test_refusals_are_traced_with_the_reason(tmp_path):
    """A refused AlterPartition leaves no metadata record, so the controller traces it (kind
    ``alter_partition_rejected``): the per-partition refusal names topic, partition, the proposal and why
    (C14: broker 4 is fenced); a stale sender is traced without a partition (the whole request failed)."""
    trace = tmp_path / "controller-trace.jsonl"

    async def scenario():
        async with Harness(tmp_path, **{"trace.file": str(trace)}) as h:
            await h.alter(3, 0, [1, 2, 3, 4])
            await h.request(3, 1, [1], broker_epoch=h.epochs[1] + 1000)
            await h.alter(3, 1, [1, 2])  # accepted: not a refusal

    run(scenario())
    refused = [e for e in map(json.loads, trace.read_text().splitlines()) if e["kind"] == "alter_partition_rejected"]
    assert len(refused) == 2
    ineligible, stale = refused
    assert (ineligible["topic"], ineligible["partition"], ineligible["error"]) == ("t", 0, "INELIGIBLE_REPLICA")
    assert [b for b, _ in ineligible["proposed"]] == [1, 2, 3, 4] and "4" in ineligible["message"]
    assert "fenced" in ineligible["message"] and ineligible["broker"] == 1
    assert stale["error"] == "STALE_BROKER_EPOCH" and "partition" not in stale
