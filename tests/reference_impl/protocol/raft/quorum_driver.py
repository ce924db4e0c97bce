"""A hand driver for a quorum of ``RaftNode``s in tests: a clock, message delivery, cuts, crashes.

Delivery is synchronous and ordered: ``settle`` keeps handing every queued request to its destination and
every answer back to its sender until nothing is queued. A fetch the leader may hold (long polling,
``fetch_should_wait``) is parked until the leader's log or HWM changes, or until the next ``advance`` step
(its expiry). ``cut(a, b)`` drops messages both ways; ``crash``/``restart`` rebuild a node over
the same log and election store (its durable state), optionally losing the unflushed log suffix.
"""

from __future__ import annotations

import random

from reference_impl.protocol.raft import InMemoryElectionStore, InMemoryRaftLog, RaftConfig, RaftNode
from reference_impl.protocol.raft.messages import Outbound

CONFIG = RaftConfig(election_timeout_ms=100, fetch_timeout_ms=200, election_backoff_max_ms=100,
                    retry_backoff_ms=10, request_timeout_ms=200, pre_vote=True)


def epoch_start(leader: int, epoch: int, voters: tuple, granting: tuple) -> tuple:
    """The epoch-start record the tests' nodes write (what the controller's LeaderChangeRecord stands for)."""
    return ("leader-change", leader, epoch)


class Quorum:
    """Voters ``ids`` on an in-memory network (see the module docstring)."""

    def __init__(self, ids=(1, 2, 3), config: RaftConfig = CONFIG, seed: int = 0, factory=None) -> None:
        self.factory = factory  # (id, log, store, rng, now) -> an object with ``.raft`` (a controller voter)
        self.ids = tuple(ids)
        self.config = config
        self.now = 0
        self.logs = {i: InMemoryRaftLog() for i in self.ids}
        self.stores = {i: InMemoryElectionStore() for i in self.ids}
        self.rngs = {i: random.Random(f"{seed}:{i}") for i in self.ids}
        self.nodes: dict[int, RaftNode | None] = {i: self._build(i) for i in self.ids}
        self.cuts: set[tuple[int, int]] = set()
        self.events: list[dict] = []
        self.dropped = 0
        self.parked: list[tuple[int, Outbound, int]] = []  # (src, fetch, leader version when parked)

    def _build(self, i: int):
        if self.factory is not None:
            return self.factory(i, self.logs[i], self.stores[i], self.rngs[i], self.now)
        return RaftNode(i, self.ids, self.logs[i], self.stores[i], self.config, self.rngs[i], self.now, epoch_start)

    def raft(self, i: int) -> RaftNode | None:
        n = self.nodes[i]
        return getattr(n, "raft", n)

    def _rafts(self) -> dict[int, RaftNode]:
        return {i: self.raft(i) for i in self.ids if self.nodes[i] is not None}

    # -- faults ---------------------------------------------------------------------------------------------
    def cut(self, a: int, b: int) -> None:
        self.cuts |= {(a, b), (b, a)}

    def heal(self) -> None:
        self.cuts.clear()

    def isolate(self, a: int) -> None:
        for b in self.ids:
            if b != a:
                self.cut(a, b)

    def crash(self, i: int, lossy: bool = False) -> None:
        self.nodes[i] = None
        if lossy:
            self.logs[i].lose_unflushed()

    def restart(self, i: int) -> RaftNode:
        self.nodes[i] = self._build(i)
        self.settle()
        return self.nodes[i]

    # -- running --------------------------------------------------------------------------------------------
    def node(self, i: int) -> RaftNode:
        node = self.raft(i)
        assert node is not None, f"node {i} is down"
        return node

    def _after(self) -> None:
        for n in self.nodes.values():
            if n is not None and hasattr(n, "apply_committed"):
                n.apply_committed(self.now)
                self.events += n.drain_events()

    def settle(self, limit: int = 10_000, expire: bool = False) -> None:
        """Deliver until quiet (every request answered, failed or parked); ``expire`` answers parked fetches."""
        for _ in range(limit):
            self._after()
            rafts = self._rafts()
            queued = [(i, out) for i, n in rafts.items() for out in n.drain_outbox()]
            if self.factory is None:
                for n in rafts.values():
                    self.events += n.drain_events()
            parked, self.parked = self.parked, []
            for src, out, version in parked:
                dst = rafts.get(out.dst)
                if expire or dst is None or dst.version != version:
                    queued.append((src, out))
                else:
                    self.parked.append((src, out, version))
            if not queued:
                return
            for src, out in queued:
                self._deliver(src, out, hold=not expire)
            expire = False
        raise AssertionError("the quorum did not settle")

    def _deliver(self, src: int, out: Outbound, hold: bool = True) -> None:
        sender = self.raft(src)
        dst = self.raft(out.dst)
        if sender is None:
            return
        if dst is None or (src, out.dst) in self.cuts or (out.dst, src) in self.cuts:
            self.dropped += 1
            sender.request_failed(out.dst, out.correlation_id, self.now)
            return
        response = dst.handle_request(src, out.request, self.now)
        if hold and dst.fetch_should_wait(src, out.request, response):
            self.parked.append((src, out, dst.version))
            return
        sender.handle_response(out.dst, out.correlation_id, response, self.now)

    def advance(self, ms: int, step: int = 5) -> None:
        """Let ``ms`` pass, polling every node every ``step`` ms and settling in between."""
        end = self.now + ms
        while self.now < end:
            self.now = min(end, self.now + step)
            for n in list(self._rafts().values()):
                n.poll(self.now)
            self.settle(expire=True)

    def leaders(self) -> list[int]:
        return [i for i, n in self._rafts().items() if n.is_leader]

    def elect(self, ms: int = 2000) -> int:
        """Advance until exactly one live node leads and is ready; return it."""
        for _ in range(ms // 10):
            self.advance(10)
            live = self.leaders()
            if len(live) == 1 and self.node(live[0]).leader_ready:
                return live[0]
        raise AssertionError(f"no single ready leader after {ms} ms: {self.leaders()}")

    def append(self, leader: int, *records) -> tuple[int, int]:
        span = self.node(leader).append(list(records), self.now)
        assert span is not None
        self.settle()
        return span

    def records(self, i: int) -> list:
        return [r for b in self.logs[i].batches for r in b.records]
