"""The transaction coordinator shell with a fake log and network: a request whose handler is cancelled (the
client gave up and closed its connection) still finishes its durable write, so the id is not left
"pending" for ever and its markers still go out; every acknowledged state write is traced as a transition."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.replica import LEADER
from reference_impl.protocol.txn import TRANSACTION_STATE_TOPIC, TxnState, partition_for
from reference_impl.server import services as sv
from reference_impl.server.txn_coordinator import TxnCoordinatorShell

NODE = 1


@dataclass
class FakeLog:
    written: list = field(default_factory=list)
    high_watermark: int = 0

    def batches(self):
        return [SimpleNamespace(payload=p, next_offset=i + 1) for i, p in enumerate(self.written)]


class RecordingTracer:
    def __init__(self) -> None:
        self.events: list[dict] = []

    def write(self, event: dict) -> None:
        self.events.append(event)


class FakeManager:
    """One broker that leads every partition; state writes wait while ``hold`` is set."""

    def __init__(self) -> None:
        self.tracer = RecordingTracer()
        self.logs: dict[int, FakeLog] = {}
        self.hold = asyncio.Event()
        self.hold.set()
        self.markers: list[tuple] = []
        self.uncommitted = False

    def lookup(self, topic, partition):
        log = self.logs.setdefault(partition, FakeLog())
        return SimpleNamespace(replica=SimpleNamespace(role=LEADER, leader_epoch=0, high_watermark=log.high_watermark),
                               log=log)

    async def produce(self, topic, partition, records, acks, timeout_ms, known_topic, **_):
        await self.hold.wait()
        log = self.logs.setdefault(partition, FakeLog())
        log.written.append(records)
        if self.uncommitted:  # appended here, but the followers never get it: the write times out
            return sv.ProduceResult(Errors.REQUEST_TIMED_OUT)
        log.high_watermark = len(log.written)
        return sv.ProduceResult(Errors.NONE)

    async def write_marker(self, topic, partition, producer_id, producer_epoch, commit, coordinator_epoch, timeout):
        self.markers.append((topic, partition, producer_epoch, commit))
        return sv.ProduceResult(Errors.NONE)


class FakeImage:
    """Topics ``__transaction_state`` (3 partitions) and ``q`` (1), all led by ``NODE``."""

    def __init__(self) -> None:
        self.ids = {TRANSACTION_STATE_TOPIC: "ts", "q": "q"}
        self.partitions = {("ts", 0): None, ("ts", 1): None, ("ts", 2): None, ("q", 0): None}
        self.brokers = {NODE: SimpleNamespace(broker_id=NODE, host="127.0.0.1", port=1, fenced=False)}

    def topic_id(self, name):
        return self.ids.get(name)

    def partition(self, topic_id, partition):
        return SimpleNamespace(leader=NODE)


def shell() -> tuple[TxnCoordinatorShell, FakeManager]:
    manager = FakeManager()
    pids = iter(range(1000, 2000))

    async def forward(*_):
        raise AssertionError("no topic to create")

    return TxnCoordinatorShell(manager, FakeImage(), NODE, "b1", lambda: next(pids), forward, None), manager


def test_an_end_txn_whose_client_gave_up_still_decides_and_sends_its_markers():
    async def scenario():
        s, manager = shell()
        code, pid, epoch = await s.init_producer_id("t", 60_000, -1, -1)
        assert code == Errors.NONE
        assert await s.add_partitions("t", pid, epoch, [("q", 0)]) == Errors.NONE
        manager.hold.clear()  # the state write of the abort waits (its followers are slow)
        handler = asyncio.create_task(s.end_txn("t", pid, epoch, False))
        await asyncio.sleep(0.05)
        handler.cancel()  # the client timed out and closed its connection: the server cancels the handler
        await asyncio.sleep(0.05)
        manager.hold.set()
        for _ in range(100):
            await asyncio.sleep(0.02)
            coord = s.coordinator("t")
            if coord.txns["t"].state == TxnState.COMPLETE_ABORT:
                break
        coord = s.coordinator("t")
        assert coord.partition == partition_for("t", 3)
        assert "t" not in coord.pending
        assert coord.txns["t"].state == TxnState.COMPLETE_ABORT
        assert manager.markers == [("q", 0, epoch, False)]
        # and the producer can go on: the id is not stuck in CONCURRENT_TRANSACTIONS
        code, _pid, epoch2 = await s.init_producer_id("t", 60_000, pid, epoch)
        assert code == Errors.NONE and epoch2 == epoch + 1
        await s.close()

    asyncio.run(scenario())


def test_after_a_failed_write_the_coordinator_reloads_only_committed_records():
    """A leader cut off from the cluster appends its PrepareCommit locally, the write times out; reloading
    that uncommitted record would send COMMIT markers for a decision its successor never sees."""
    async def scenario():
        s, manager = shell()
        code, pid, epoch = await s.init_producer_id("t", 60_000, -1, -1)
        assert await s.add_partitions("t", pid, epoch, [("q", 0)]) == Errors.NONE
        manager.uncommitted = True
        assert await s.end_txn("t", pid, epoch, True) == Errors.NOT_COORDINATOR
        coord = s.coordinator("t")  # reloaded
        assert coord.txns["t"].state == TxnState.ONGOING
        await asyncio.sleep(0.1)
        assert manager.markers == []
        await s.close()

    asyncio.run(scenario())


def test_each_acknowledged_state_write_is_traced_as_a_transition_and_no_other():
    async def scenario():
        s, manager = shell()
        code, pid, epoch = await s.init_producer_id("t", 60_000, -1, -1)
        assert await s.add_partitions("t", pid, epoch, [("q", 0)]) == Errors.NONE
        assert await s.end_txn("t", pid, epoch, True) == Errors.NONE
        for _ in range(100):
            await asyncio.sleep(0.02)
            if s.coordinator("t").txns["t"].state == TxnState.COMPLETE_COMMIT:
                break
        assert await s.add_partitions("t", pid, epoch, [("q", 0)]) == Errors.NONE
        manager.uncommitted = True  # not acknowledged: not traced
        assert await s.end_txn("t", pid, epoch, False) == Errors.NOT_COORDINATOR
        steps = [(e["from"], e["to"], e["partitions"]) for e in manager.tracer.events]
        assert steps == [(None, "Empty", []), ("Empty", "Ongoing", [["q", 0]]),
                         ("Ongoing", "PrepareCommit", [["q", 0]]),
                         ("PrepareCommit", "CompleteCommit", [["q", 0]]),  # the set its markers went to
                         ("CompleteCommit", "Ongoing", [["q", 0]])]
        first = manager.tracer.events[0]
        assert first["kind"] == "txn_transition" and first["broker"] == NODE and first["transactional_id"] == "t"
        assert (first["producer_id"], first["producer_epoch"]) == (pid, epoch)
        assert first["state_partition"] == partition_for("t", 3) and first["coordinator_epoch"] == 0
        await s.close()

    asyncio.run(scenario())
