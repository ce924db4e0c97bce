"""A simulated controller process: one voter of the metadata quorum (``QuorumController``) in memory.

It does what ``reference_impl.server.controller`` does, with the same core calls. The quorum's RPCs go
over the simulated network (kind ``raft``): every request is handed to the Raft node, which answers it
(a fetch with nothing new is held up to ``RaftConfig.fetch_max_wait_ms`` and answered as soon as the log or the
HWM moves: long polling, at most a quarter of the fetch timeout, as Kafka's 500 ms of 2 s), and every answer or failure of a request the node sent goes back to it. The
node is polled when ``next_wakeup_ms`` says. After every such step committed records are applied
(``apply_committed``) and traced, and held metadata pulls and queued requests are looked at again.

Broker and admin requests need the active controller: any other voter answers NOT_CONTROLLER with the
leader it knows. The active one serves them one change at a time (C1): a request whose change is in flight
waits in ``_queue`` until the change committed (answered) or was lost (NOT_CONTROLLER). The timer round
runs ``periodic`` every ``TIMER_INTERVAL_MS``, one change at a time too. Every ``RECOVERY_INTERVAL_MS`` the
active controller asks the brokers for their log ends (kind ``log_info``, GetReplicaLogInfo) about the
partitions K7 must recover, and commits the core's choice for each, as the process does.

What survives a crash is the ``ControllerDisk``: the quorum log and the election state, both written
durably before the node acts on them (a lossy crash drops only what was never flushed: nothing, unless the
code forgot to flush). A restart builds a new process over the same disk; its soft state starts over.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker import HeartbeatReply
from reference_impl.protocol.broker_session import METADATA_MAX_WAIT_MS
from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.controller_loop import TIMER_INTERVAL_MS, PeriodicChange
from reference_impl.protocol.errors import Errors, KafkaError, error
from reference_impl.protocol.quorum_controller import COMMITTED, PENDING, QuorumController, Ticket
from reference_impl.protocol.raft import InMemoryElectionStore, InMemoryRaftLog, RaftConfig
from reference_impl.protocol.raft.messages import (
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    Outbound,
    VoteRequest,
)
from reference_impl.protocol.replica_messages import AlterPartitionResponse
from reference_impl.protocol.trace_events import unclean_recovery_event
from simulator.rules import check_vote_answer

if TYPE_CHECKING:
    from simulator.host import Host
    from simulator.network import Message

METADATA_FETCH_MAX_RECORDS = 5000
RECOVERY_INTERVAL_MS = 1000  # K7's round, as ``server.unclean_recovery.ROUND_INTERVAL_S``
CHANGE_KINDS = ("register", "heartbeat", "alter_partition", "admin")


@dataclass
class ControllerDisk:
    """What survives a controller process: its quorum log and its election state."""

    log: InMemoryRaftLog = field(default_factory=InMemoryRaftLog)
    election: InMemoryElectionStore = field(default_factory=InMemoryElectionStore)

    def lose_unflushed(self) -> None:
        """Power loss: the log keeps its flushed prefix (the election state is written durably, Q1)."""
        self.log.lose_unflushed()


@dataclass
class RecoveryRound:
    """One K7 round: the brokers still to answer, and the answers so far per partition."""

    pending: set[int]
    answers: dict[tuple[str, int], dict[int, tuple[int, int]]]


def raft_config(o: Any) -> RaftConfig:
    """The quorum's timers for the simulated cluster (``SimOptions``)."""
    return RaftConfig(election_timeout_ms=o.election_timeout_ms, fetch_timeout_ms=o.quorum_fetch_timeout_ms,
                      election_backoff_max_ms=o.election_timeout_ms, retry_backoff_ms=o.quorum_retry_backoff_ms,
                      request_timeout_ms=o.request_timeout_ms, pre_vote=o.pre_vote,
                      fetch_max_wait_ms=max(1, o.quorum_fetch_timeout_ms // 4))


class SimController:
    """One incarnation of a controller process (a restart builds a new one over the same disk)."""

    def __init__(self, world: Host, node_id: int, voters: list[int], disk: ControllerDisk) -> None:
        self.world = world
        self.id = node_id
        self.name = str(node_id)
        self.dead = False
        self.disk = disk
        o = world.options
        config = ControllerConfig(min_isr=o.min_isr, elr_enabled=o.variant == "kip966",
                                  session_timeout_ms=o.session_timeout_ms, node_id=self.name,
                                  incremental_reassignment=o.reassignment_mode == "incremental",
                                  historical_bug=o.inject_bug)
        rng = random.Random(f"{world.seed}:controller:{node_id}:{world.now}")
        self.qc = QuorumController(node_id, voters, disk.log, disk.election, raft_config(o), config, rng, world.now)
        # a restart replays what is committed already (a quorum of one: its whole log): that was traced when
        # it first happened, so only the quorum's own events of this start are traced (as the process does)
        world.emit(self.name, [ev for ev in self.qc.drain_events() if ev.get("source") != "controller"])
        self._parked_pulls: list[Message] = []
        self._parked_fetches: list[tuple[Message, int]] = []  # (raft fetch, raft version when held)
        self._leader_heard: tuple[int, int, int] | None = None  # (leader, epoch, when) of its last fetch answer
        self._queue: deque[Message] = deque()
        self._waiting: tuple[Ticket, Message | None] | None = None
        self._poll_at: int | None = None
        self._round: Iterator[PeriodicChange] | None = None  # the timer round under way
        self._version = -1
        self._applied = -1
        self._asking: RecoveryRound | None = None  # K7: the GetReplicaLogInfo round under way
        self._recoveries: deque[tuple[tuple[str, int], dict[int, tuple[int, int]]]] = deque()
        self._recovering: list[tuple[Ticket, tuple[str, int], dict[int, tuple[int, int]]]] = []
        self._after()
        world.timer(self, TIMER_INTERVAL_MS, self._tick)
        world.timer(self, RECOVERY_INTERVAL_MS, self._recovery_tick)

    @property
    def core(self) -> Controller:
        """The controller state machine (committed state)."""
        return self.qc.controller

    @property
    def active(self) -> bool:
        """The active controller (Q14)."""
        return self.qc.active

    @property
    def idle(self) -> bool:
        """No change in flight or queued."""
        return self._waiting is None and not self._queue

    # ------------------------------------------------------------------ after every step
    def _after(self) -> None:
        """Send what the Raft node owes, apply commits, answer what they settle, re-arm the poll timer."""
        qc, raft, world = self.qc, self.qc.raft, self.world
        for out in raft.drain_outbox():
            self._send_raft(out)
        qc.apply_committed(world.now)
        world.emit(self.name, qc.drain_events())
        if self._recovering:
            self._trace_recoveries()
        if qc.applied != self._applied:
            self._applied = qc.applied
            world.check_controller(self.core)
            held_pulls, self._parked_pulls = self._parked_pulls, []
            for msg in held_pulls:
                self._serve_metadata(msg, expired=False)
        if self._waiting is not None:
            ticket, msg = self._waiting
            state, answer = qc.outcome(ticket)
            if state != PENDING:
                self._waiting = None
                if msg is not None:
                    self._answer(msg, answer)
                if self._round is not None:
                    self.world.at(world.now, self._guarded, self._run_periodic)
        if self._waiting is None and self._queue:
            self.world.at(world.now, self._guarded, self._serve_queue)
        elif self._waiting is None and self._recoveries:
            self.world.at(world.now, self._guarded, self._serve_recoveries)
        if raft.version != self._version:
            self._version = raft.version
            held, self._parked_fetches = self._parked_fetches, []
            for msg, _ in held:
                self._serve_raft(msg, expired=False)
        wake = max(world.now, raft.next_wakeup_ms())
        if self._poll_at is None or wake < self._poll_at or self._poll_at < world.now:
            self._poll_at = wake
            world.timer(self, wake - world.now, self._poll, wake)

    def _guarded(self, fn: Any) -> Any:
        if self.dead:
            return False
        return fn()

    def _poll(self, when: int) -> bool | None:
        if when != self._poll_at:
            return False  # superseded by an earlier wake-up
        self._poll_at = None
        self.qc.raft.poll(self.world.now)
        self._after()
        return None

    # ------------------------------------------------------------------ the quorum's RPCs
    def _send_raft(self, out: Outbound) -> None:
        raft = self.qc.raft

        def answered(response: Any) -> None:
            current = raft._inflight.get(out.dst, (None,))[0] == out.correlation_id
            raft.handle_response(out.dst, out.correlation_id, response, self.world.now)
            if current and isinstance(response, FetchResponse) and response.error == Errors.NONE:
                # Q4's ground truth: the leader answered a fetch the node was waiting for (not a stale one)
                self._leader_heard = (out.dst, response.leader_epoch, self.world.now)
            self._after()

        def failed() -> None:
            raft.request_failed(out.dst, out.correlation_id, self.world.now)
            self._after()

        timeout = raft.config.fetch_max_wait_ms + self.world.options.request_timeout_ms \
            if isinstance(out.request, FetchRequest) else None
        self.world.call(self, out.dst, "raft", out.request, answered, failed, timeout_ms=timeout)

    def _serve_raft(self, msg: Message, expired: bool) -> None:
        raft, body, now = self.qc.raft, msg.body, self.world.now
        before = (raft.epoch, raft.leader_id, raft.role)
        response = raft.handle_request(msg.src, body, now)
        if isinstance(body, EndQuorumEpochRequest) and body.leader_id == before[1]:
            self._leader_heard = None  # the leader said it is gone
        elif isinstance(body, VoteRequest):
            heard = self._leader_heard
            ago = now - heard[2] if heard is not None and heard[:2] == (before[1], before[0]) else None
            check_vote_answer(self.id, before, body, response, ago, raft.config.fetch_timeout_ms)
        if not expired and raft.fetch_should_wait(msg.src, msg.body, response):
            self._parked_fetches.append((msg, raft.version))
            return
        self.world.reply(msg, response)

    def _expire_fetch(self, msg: Message) -> bool | None:
        for i, (held, _) in enumerate(self._parked_fetches):
            if held is msg:
                del self._parked_fetches[i]
                self._serve_raft(msg, expired=True)
                self._after()
                return None
        return False

    # ------------------------------------------------------------------ requests
    def handle(self, msg: Message) -> None:
        """Serve one request: quorum RPCs, metadata pulls, and changes (queued behind one in flight)."""
        kind = msg.kind
        if kind == "raft":
            self._serve_raft(msg, expired=False)
            if any(held is msg for held, _ in self._parked_fetches):
                self.world.timer(self, self.qc.raft.config.fetch_max_wait_ms, self._expire_fetch, msg)
        elif kind == "metadata":
            self._serve_metadata(msg, expired=False)
            if msg in self._parked_pulls:
                self.world.timer(self, METADATA_MAX_WAIT_MS, self._expire_pull, msg)
        elif kind in CHANGE_KINDS:
            if not self.active:
                self._answer(msg, self._refusal())
            else:
                self._queue.append(msg)
                if self._waiting is None:
                    self._serve_queue()
                    return
        else:
            raise ValueError(f"controller {self.id}: unknown request {kind!r}")
        self._after()

    def submit_direct(self, compute: Any) -> bool:
        """A change from the world itself (the bootstrap's topic): submitted now if this is the active
        controller with nothing in flight; False otherwise (ask again later)."""
        if not self.active or self._waiting is not None or self._queue:
            return False
        ticket = self.qc.submit(compute, self.world.now)
        if isinstance(ticket, KafkaError):
            return False
        if self.qc.outcome(ticket)[0] == PENDING:
            self._waiting = (ticket, None)
        self._after()
        return True

    def _refusal(self) -> KafkaError:
        leader = self.qc.leader_id
        return error(Errors.NOT_CONTROLLER, None if leader is None or leader == self.id else str(leader))

    def _serve_queue(self) -> bool | None:
        """Serve queued changes until one is in flight (C1)."""
        if self._waiting is not None:
            return False
        while self._queue and self._waiting is None:
            msg = self._queue.popleft()
            if not self.active:
                self._answer(msg, self._refusal())
                continue
            ticket = self.qc.submit(lambda core, msg=msg: self._compute(core, msg), self.world.now)
            if isinstance(ticket, KafkaError):
                self._answer(msg, ticket)
                continue
            # what a commit sets off (trace, self-check, held pulls) happens before the answer leaves, as
            # in the process: a change committed at once (a quorum of one) is answered right after it
            self._waiting = (ticket, msg)
            self._after()
        self._after()
        return None

    def _compute(self, core: Controller, msg: Message) -> Any:
        body, kind = msg.body, msg.kind
        if kind == "register":
            return core.register_broker(body.broker_id, body.incarnation_id, host=body.host, port=body.port,
                                        previous_broker_epoch=body.previous_broker_epoch)
        if kind == "heartbeat":
            return core.heartbeat(body.broker_id, body.broker_epoch, want_fence=body.want_fence,
                                  want_shutdown=body.want_shutdown, metadata_offset=body.metadata_offset,
                                  now_ms=self.world.now)
        if kind == "alter_partition":
            return core.alter_partition(body.broker_id, body.broker_epoch, body.topic_id, body.partition_id,
                                        leader_epoch=body.leader_epoch, partition_epoch=body.partition_epoch,
                                        new_isr=[(m.broker_id, m.broker_epoch) for m in body.new_isr],
                                        leader_recovery_state=body.leader_recovery_state)
        return self._admin(core, body)

    def _answer(self, msg: Message, answer: Any) -> None:
        """Reply in the shape each request kind expects; a KafkaError answer is a refusal (NOT_CONTROLLER)."""
        kind, world = msg.kind, self.world
        refused = isinstance(answer, KafkaError)
        if kind == "register":
            world.reply(msg, (answer, -1) if refused else (answer.error, answer.broker_epoch))
        elif kind == "heartbeat":
            if refused:
                world.reply(msg, HeartbeatReply(answer.code, False, True, False))
                return
            reg = self.core.brokers.get(msg.body.broker_id)
            caught_up = reg is not None and msg.body.metadata_offset >= reg.epoch
            world.reply(msg, HeartbeatReply(answer.error.code, caught_up, answer.is_fenced, answer.should_shutdown))
        elif kind == "alter_partition":
            if refused:
                world.reply(msg, AlterPartitionResponse(answer))
                return
            world.reply(msg, AlterPartitionResponse(answer.error, answer.leader, answer.leader_epoch,
                                                    answer.partition_epoch, tuple(answer.isr)))
        else:
            world.reply(msg, answer)

    def _admin(self, core: Controller, body: dict[str, Any]) -> Any:
        topic = self.world.topic
        op = body["do"]
        if op == "create":
            return core.create_topic(topic, assignment=body["assignment"], topic_id=body["topic_id"])
        if op == "reassign":
            return core.alter_partition_reassignments({(topic, body["key"]): list(body["replicas"])})
        if op == "cancel":
            return core.alter_partition_reassignments({(topic, body["key"]): None})
        if op == "elect":
            return core.elect_leaders("PREFERRED", [(topic, body["key"])])
        raise ValueError(f"unknown admin operation {op!r}")

    # ------------------------------------------------------------------ timers (C6, KIP-435, C12)
    def _tick(self) -> None:
        if self._round is None:
            self._round = self.qc.periodic(self.world.now)
        self._run_periodic()
        self.world.timer(self, TIMER_INTERVAL_MS, self._tick)

    def _run_periodic(self) -> bool | None:
        """Go on with the timer round: each due change is committed before the next is computed (C1), so a
        change in flight pauses the round until it is settled."""
        if self._round is None or self._waiting is not None:
            return False
        while self._waiting is None:
            if self._queue or not self.active:
                self._round = None  # requests first; the next tick starts a fresh round
                break
            change = next(self._round, None)
            if change is None:
                self._round = None
                break
            if not change.result.records:
                continue
            ticket = self.qc.submit(lambda _core, r=change.result: r, self.world.now)
            if isinstance(ticket, Ticket) and self.qc.outcome(ticket)[0] == PENDING:
                self._waiting = (ticket, None)
        self._after()
        return None

    # ------------------------------------------------------------------ K7 unclean recovery
    def _recovery_tick(self) -> None:
        """As the process does every second: on the active controller, ask the brokers the core names
        (``unclean_recovery_queries``) for their log ends, unless a round is still out."""
        if self.active and self._asking is None and not self._recoveries:
            queries = self.core.unclean_recovery_queries()
            if queries:
                self._ask_log_ends(queries)
        self.world.timer(self, RECOVERY_INTERVAL_MS, self._recovery_tick)

    def _ask_log_ends(self, queries: dict[int, list[tuple[str, int]]]) -> None:
        asking = self._asking = RecoveryRound(set(queries), {tp: {} for tps in queries.values() for tp in tps})
        for broker, tps in sorted(queries.items()):
            reg = self.core.brokers.get(broker)
            epoch = None if reg is None else reg.epoch

            def answered(reply: Any, broker: int = broker, tps: list = tps, epoch: int | None = epoch) -> None:
                reply_epoch, ends = reply
                if reply_epoch == epoch:  # else an incarnation the controller no longer knows answered
                    for tp in tps:
                        if tp in ends:
                            asking.answers[tp][broker] = ends[tp]
                self._settle(asking, broker)

            self.world.call(self, broker, "log_info", list(tps), answered,
                            lambda broker=broker: self._settle(asking, broker))

    def _settle(self, asking: RecoveryRound, broker: int) -> None:
        asking.pending.discard(broker)
        if asking.pending or self._asking is not asking:
            return
        self._asking = None
        if self.active:
            self._recoveries.extend(sorted(asking.answers.items()))
            self._serve_recoveries()

    def _serve_recoveries(self) -> bool | None:
        """Commit the core's K7 decisions one at a time (C1), behind requests and changes in flight."""
        if self._waiting is not None or self._queue:
            return False
        while self._recoveries and self._waiting is None:
            if not self.active:
                self._recoveries.clear()
                break
            tp, replies = self._recoveries.popleft()
            ticket = self.qc.submit(lambda core, tp=tp, r=replies: core.unclean_recovery(tp, r, window_closed=True),
                                    self.world.now)
            if isinstance(ticket, Ticket):
                self._recovering.append((ticket, tp, replies))
                if self.qc.outcome(ticket)[0] == PENDING:
                    self._waiting = (ticket, None)
        self._after()
        return None

    def _trace_recoveries(self) -> None:
        """Trace each K7 recovery once its change committed (as the process does after ``change``)."""
        still = []
        for ticket, tp, replies in self._recovering:
            state, answer = self.qc.outcome(ticket)
            if state == PENDING:
                still.append((ticket, tp, replies))
            elif state == COMMITTED and isinstance(answer, KafkaError) and answer.ok:
                partition = self.core.partition(*tp)
                self.world.emit(self.name, [unclean_recovery_event(
                    tp[0], tp[1], None if partition is None else partition.leader,
                    self.core.config.unclean_recovery_strategy, replies)])
        self._recovering = still

    # ------------------------------------------------------------------ metadata pulls (Q15)
    def _serve_metadata(self, msg: Message, expired: bool) -> None:
        err, batches = self.qc.serve_metadata(msg.body, METADATA_FETCH_MAX_RECORDS)
        if not err.ok or batches or expired:
            self.world.reply(msg, (err, batches, self.qc.leader_id))
        else:
            self._parked_pulls.append(msg)

    def _expire_pull(self, msg: Message) -> bool | None:
        if msg in self._parked_pulls:
            self._parked_pulls.remove(msg)
            self._serve_metadata(msg, expired=True)
            return None
        return False
