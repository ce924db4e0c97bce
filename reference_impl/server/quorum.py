"""The asyncio shell of one controller voter: the Raft node's timers, its RPCs on the wire, commit waits.

``QuorumShell`` owns what the sans-IO ``QuorumController`` cannot: a task that polls the Raft node when
``next_wakeup_ms`` says, one connection to every other voter (a request the node queued is sent there and
the answer, or the failure, handed back), the handlers of the quorum's RPCs on this controller's
listener (Vote 52, BeginQuorumEpoch 53, EndQuorumEpoch 54, Fetch 1 from voters, DescribeQuorum 55), and
the futures requests wait on: a change's commit (``outcome``), a long-polled fetch's news (the leader
holds a fetch with nothing new up to ``fetch_max_wait_ms``) and new committed metadata for brokers'
pulls. After every interaction ``after`` sends what the node queued, applies committed records (traced)
and wakes whoever waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.quorum_controller import PENDING, QuorumController, Ticket
from reference_impl.protocol.raft import RaftConfig
from reference_impl.protocol.raft.messages import FetchRequest, Outbound
from reference_impl.server import raft_wire
from reference_impl.server.config import NodeConfig
from reference_impl.server.trace import Tracer, log, log_throttled
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.client import WireClient
from reference_impl.server.wire.codec import DecodedRequest

RAFT_API_KEYS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH)


def now_ms() -> int:
    """Protocol time: monotonic ms (the clock nemesis skews only the wall clock)."""
    return time.monotonic_ns() // 1_000_000


def raft_config(config: NodeConfig) -> RaftConfig:
    """The quorum's settings from the node configuration (Kafka's ``controller.quorum.*`` keys)."""
    return RaftConfig(election_timeout_ms=config.controller_quorum_election_timeout_ms,
                      fetch_timeout_ms=config.controller_quorum_fetch_timeout_ms,
                      election_backoff_max_ms=config.controller_quorum_election_backoff_max_ms,
                      retry_backoff_ms=config.controller_quorum_retry_backoff_ms,
                      request_timeout_ms=config.controller_quorum_request_timeout_ms,
                      fetch_max_wait_ms=max(1, min(500, config.controller_quorum_fetch_timeout_ms // 4)),
                      pre_vote=config.controller_quorum_pre_vote_enable)


class QuorumShell:
    """See the module docstring."""

    def __init__(self, config: NodeConfig, qc: QuorumController, tracer: Tracer) -> None:
        self.config = config
        self.qc = qc
        self.raft = qc.raft
        self.tracer = tracer
        self.node = config.name
        timeout_s = config.controller_quorum_request_timeout_ms / 1000
        self.peers = {vid: WireClient(ep.host, ep.port, client_id=f"controller-{config.node_id}-quorum",
                                      timeout_s=timeout_s, connect_timeout_s=min(2.0, timeout_s))
                      for vid, ep in config.voters.items() if vid != config.node_id}
        self._wake = asyncio.Event()
        self._sleep_until = 0
        self._changed: asyncio.Future | None = None
        self._tasks: set[asyncio.Task] = set()
        self._seen = (-1, -1)

    # ------------------------------------------------------------------ the loop
    async def run(self) -> None:
        """Poll the Raft node whenever its next timer is due (or something asks for an earlier look)."""
        while True:
            self._sleep_until = self.raft.next_wakeup_ms()
            delay = max(0, self._sleep_until - now_ms()) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
            self._wake.clear()
            self.raft.poll(now_ms())
            self.after()

    def after(self) -> None:
        """Send what the node queued, apply (and trace) committed records, wake waiters and the loop."""
        for out in self.raft.drain_outbox():
            task = asyncio.get_running_loop().create_task(self._send(out))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self.qc.apply_committed(now_ms())
        self.tracer.drain(self.qc.drain_events())
        seen = (self.raft.version, self.qc.applied)
        if seen != self._seen:
            self._seen = seen
            if self._changed is not None and not self._changed.done():
                self._changed.set_result(None)
            self._changed = None
        if self.raft.next_wakeup_ms() < self._sleep_until:
            self._wake.set()

    async def changed(self, timeout_s: float) -> None:
        """Wait until the log, the HWM, the role or the applied offset changes, at most ``timeout_s``."""
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._changed), max(0.0, timeout_s))

    async def outcome(self, ticket: Ticket) -> tuple[str, Any]:
        """Wait until a submitted change is committed or lost (C1: its answer leaves only then)."""
        while True:
            state, answer = self.qc.outcome(ticket)
            if state != PENDING:
                return state, answer
            await self.changed(1.0)

    # ------------------------------------------------------------------ RPCs out
    async def _send(self, out: Outbound) -> None:
        client = self.peers.get(out.dst)
        if client is None:
            self.raft.request_failed(out.dst, out.correlation_id, now_ms())
            self.after()
            return
        key = raft_wire.api_key_of(out.request)
        message, version = raft_wire.request_to_wire(out.request, self.raft.config.fetch_max_wait_ms)
        timeout_s = self.raft.config.request_timeout_ms / 1000
        if isinstance(out.request, FetchRequest):
            timeout_s += self.raft.config.fetch_max_wait_ms / 1000
        try:
            body = await client.send(message, version, timeout_s=timeout_s)
            response = raft_wire.response_from_wire(key, body)
        except (ConnectionError, TimeoutError, OSError, ValueError) as exc:
            log_throttled(self.node, f"quorum-{out.dst}", f"quorum request to voter {out.dst} failed: {exc!r}")
            self.raft.request_failed(out.dst, out.correlation_id, now_ms())
        else:
            self.raft.handle_response(out.dst, out.correlation_id, response, now_ms())
        self.after()

    # ------------------------------------------------------------------ RPCs in
    async def handle(self, request: DecodedRequest) -> Any:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch, or a voter's Fetch (held while there is nothing new)."""
        key = request.api_key
        parsed = raft_wire.request_from_wire(key, request.body)
        if parsed is None:
            return raft_wire.response_to_wire(key, None, request.api_version)
        src, core_request = parsed
        deadline = now_ms() + self.raft.config.fetch_max_wait_ms
        while True:
            response = self.raft.handle_request(src, core_request, now_ms())
            self.after()
            if now_ms() >= deadline or not self.raft.fetch_should_wait(src, core_request, response):
                return raft_wire.response_to_wire(key, response, request.api_version)
            await self.changed((deadline - now_ms()) / 1000)

    async def handle_describe_quorum(self, request: DecodedRequest) -> Any:
        """DescribeQuorum (55): the leader reports its voters' end offsets; others NOT_LEADER_OR_FOLLOWER."""
        raft = self.raft
        leader = -1 if raft.leader_id is None else raft.leader_id
        if not raft.is_leader or raft.leader is None:
            return raft_wire.describe_quorum(Errors.NOT_LEADER_OR_FOLLOWER, leader, raft.epoch, -1, {},
                                             request.api_version)
        return raft_wire.describe_quorum(Errors.NONE, raft.id, raft.epoch, raft.high_watermark,
                                         dict(raft.leader.end_offsets), request.api_version)

    # ------------------------------------------------------------------ stopping
    async def resign(self, grace_s: float = 0.3) -> None:
        """A graceful stop: a leader gives up its epoch and tells the voters (Q12) before it goes."""
        if self.raft.is_leader:
            self.raft.resign(now_ms())
            self.after()
            log(self.node, f"resigned quorum epoch {self.raft.epoch}")
            await asyncio.sleep(grace_s)

    async def close(self) -> None:
        """Stop sending; close every connection."""
        for task in list(self._tasks):
            task.cancel()
        for client in self.peers.values():
            await client.close()
