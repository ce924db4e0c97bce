"""One simulated run: a clock, an event queue, the nodes, the network, the checks after every step.

The queue holds timer firings and message deliveries, ordered by (simulated ms, insertion number); a
**step** is one of them. After each step the world re-serves fetches that leaders hold while a partition
changed (long polling), runs the core's self-checks on what the step changed, and asks the monitor for a
new violation; the first one ends the run. The run goes through three phases:

1. bootstrap: the controller and the brokers start; once every broker is unfenced the topic is created
   (replicas placed round-robin) and the clock of the schedule starts (``t0``);
2. the fault phase: the schedule's events at ``t0 + at``;
3. the final phase at ``t0 + duration_ms``: every fault healed, every stopped node restarted; after
   ``settle_ms`` the cluster has ``converge_ms`` to converge and then acknowledges one write per led
   partition (``simulator.liveness``; a cluster that does not is a ``liveness`` finding); then each
   partition is read back with ``final: true``; the run ends when every final read has an answer. Then the
   history invariants are checked.

Requests are RPCs: ``call`` sends, and exactly one of the callbacks runs: the reply, a refusal (the
destination process is down, so the connection is refused at once), or the timeout (a cut link, a lost
message). A reply for a sender that died in between is dropped.
"""

from __future__ import annotations

import dataclasses
import heapq
import random
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.raft.messages import VoteRequest
from simulator import evidence, guard_count, liveness
from simulator.broker_node import BrokerDisk, SimBroker
from simulator.clients import Clients
from simulator.controller_node import ControllerDisk, SimController
from simulator.monitor import Finding, Monitor
from simulator.network import LinkFault, Message, Network
from simulator.quorum_watch import QuorumWatch
from simulator.schedule import ACTIVE, LEADER, Event, Schedule, controller_ids

TOPIC = "sim"
BOOTSTRAP_POLL_MS = 20
BOOTSTRAP_LIMIT_MS = 10_000


class _SelfCheck(InvariantViolation):
    """A check of the world failed (``rule``: I9 for the controller's self-check, I10 for a replica's,
    ``liveness`` for a cluster that does not converge after healing, ``trace`` for a trace that contradicts
    the nodes' state)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


class World:
    """A simulated cluster running one schedule (see the module docstring)."""

    def __init__(self, schedule: Schedule, keep_trace: bool = False) -> None:
        self.schedule = schedule
        self.options = o = schedule.options
        self.seed = seed = schedule.seed
        self.rng_ids = random.Random(f"{seed}:ids")
        self.rng_client = random.Random(f"{seed}:client")
        self.network = Network(random.Random(f"{seed}:network"))
        self.topic = TOPIC
        self.now = 0
        self.steps = 0
        self.finding: Finding | None = None
        self.done = False
        self.truncated = False
        self.t0: int | None = None
        self._written: set[int] = set()  # partitions the final phase wrote to (their final read must succeed)
        self.trace: list[dict[str, Any]] | None = [] if keep_trace else None
        self.last_events = evidence.LastEvents()
        spec = {"variant": o.variant, "min_isr": o.min_isr, "topic": TOPIC,
                "replica_lag_time_max_ms": o.replica_lag_time_max_ms, "controllers": o.controllers}
        if o.idempotent:
            spec["idempotence"] = True  # the queue checker's ``duplicate`` is then forbidden (monitor)
        self.monitor = Monitor(spec)
        self._queue: list[tuple[int, int, Callable[..., Any], tuple]] = []
        self._seq = 0
        self._rpcs: dict[int, tuple[Any, Callable, Callable, Callable, str]] = {}
        self._refused: set[int] = set()  # rpcs answered by a refusal: their other copies are never delivered
        self._stamp_ms = -1
        self._stamp_n = 0
        self._touched_brokers: list[SimBroker] = []
        self._touched_replicas: list[Any] = []
        self.broker_ids = list(range(1, o.brokers + 1))
        self.controller_ids = controller_ids(o)
        self.controller_disks = {c: ControllerDisk() for c in self.controller_ids}
        self.disks = {b: BrokerDisk() for b in self.broker_ids}
        self.clients = Clients(self)
        self.nodes: dict[Any, Any] = {"client": self.clients}
        self._episodes: dict[int, Any] = {}  # episode -> the node its ``active`` target resolved to
        self.quorum_watch = QuorumWatch(self)
        for c in self.controller_ids:
            self._start_controller(c)
        for b in self.broker_ids:
            self.at(b, self._start_broker, b)
        self.at(BOOTSTRAP_POLL_MS, self._bootstrap)

    # ------------------------------------------------------------------ the loop
    def at(self, when: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` as a step at simulated time ``when``."""
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, fn, args))

    def timer(self, node: Any, delay: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` after ``delay`` ms unless ``node`` has died by then."""
        self.at(self.now + delay, self._fire, node, fn, args)

    @staticmethod
    def _fire(node: Any, fn: Callable[..., Any], args: tuple) -> Any:
        if node.dead:
            return False
        guard_count.note_delivery("timer")
        return fn(*args)

    def run(self) -> World:
        """Run to the end (or the first finding, or ``max_steps``); then check the history."""
        queue = self._queue
        limit = self.options.max_steps
        note = guard_count.note_delivery
        while queue and not self.done:
            when, _, fn, args = heapq.heappop(queue)
            self.now = when
            note("world")  # the world's own steps (bootstrap, phases, checks); deliveries and timers say more
            try:
                if fn(*args) is False:
                    continue  # nothing happened (a timer of a dead node, an answered request's timeout)
                self.steps += 1
                self._after_step()
            except InvariantViolation as exc:
                self.finding = Finding(getattr(exc, "rule", "core"), str(exc), self.steps, self.now)
            except Exception as exc:  # a crash inside the protocol code is a finding, never hidden
                tb = traceback.format_exception(exc)
                self.finding = Finding("exception", "".join(tb[-3:]).strip(), self.steps, self.now)
            if self.finding is not None:
                break
            if self.steps >= limit:
                self.truncated = True
                break
        if self.finding is None and self.done:
            self.finding = self.monitor.history_finding(self.clients.history(), self.steps, self.now)
        return self

    def _after_step(self) -> None:
        brokers, self._touched_brokers = self._touched_brokers, []
        for broker in brokers:
            if not broker.dead:
                broker.wake_parked(self.steps)
        self._touched_brokers.clear()  # re-serving answers only data, errors or expiry: no second round
        for replica in self._touched_replicas:
            try:
                replica.check_invariants()
            except InvariantViolation as exc:
                raise _SelfCheck("I10", f"replica {replica.broker_id}: {exc}") from None
        self._touched_replicas.clear()
        self.finding = self.monitor.new_violation(self.steps, self.now, self.clients.ops)

    # ------------------------------------------------------------------ hooks for the nodes
    def stamp(self) -> int:
        """A trace/history time in ns: the simulated ms, then a counter so times never tie."""
        if self.now != self._stamp_ms:
            self._stamp_ms, self._stamp_n = self.now, 0
        self._stamp_n += 1
        return self.now * 1_000_000 + self._stamp_n

    def emit(self, node: str, events: list[dict[str, Any]]) -> None:
        """Trace events of ``node`` (stamped here, checked at once). A controller record another voter traced
        first is checked against it (I20) and is not news to the evidence check."""
        for ev in events:
            ev["time"] = self.stamp()
            ev["node"] = node
            if self.monitor.feed(ev):
                self.last_events.feed(ev)
            if self.trace is not None:
                self.trace.append(ev)

    def touched(self, broker: SimBroker, replica: Any) -> None:
        """A replica of ``broker`` changed in this step (re-serve held fetches, self-check it)."""
        if broker not in self._touched_brokers:
            self._touched_brokers.append(broker)
        if replica not in self._touched_replicas:
            self._touched_replicas.append(replica)

    def active_controller(self) -> SimController | None:
        """The live active controller (the newest epoch's, should two believe they are)."""
        live = [self.nodes[c] for c in self.controller_ids if not self.nodes[c].dead and self.nodes[c].active]
        return max(live, key=lambda n: n.qc.epoch) if live else None

    def check_controller(self, core: Any) -> None:
        """The controller core's own consistency check after a commit (I9, K1)."""
        problems = core.invariant_violations()
        if problems:
            raise _SelfCheck("I9", "controller: " + "; ".join(problems))

    # ------------------------------------------------------------------ RPCs
    def call(self, src: Any, dst: Any, kind: str, body: Any, on_reply: Callable[[Any], Any],
             on_fail: Callable[[], Any], timeout_ms: int | None = None,
             on_refused: Callable[[], Any] | None = None) -> None:
        """Send a request; exactly one of the callbacks runs later (see the module docstring)."""
        self._seq += 1
        rpc = self._seq
        msg = Message(src.id, dst, kind, body, rpc)
        self._rpcs[rpc] = (src, on_reply, on_fail, on_refused or on_fail, traffic_kind(msg))
        self._send(msg)
        self.at(self.now + (timeout_ms or self.options.request_timeout_ms), self._timeout, rpc)

    def reply(self, request: Message, body: Any) -> None:
        """Answer a request."""
        if not request.reply_lost:
            self._send(Message(request.dst, request.src, "reply", body, request.rpc))

    def _send(self, msg: Message) -> None:
        kind = traffic_kind(msg)
        if kind == "reply":
            entry = self._rpcs.get(msg.rpc)
            kind = entry[4] if entry is not None else kind
        delays = sorted(self.network.delays(msg.src, msg.dst, kind))
        for i, delay in enumerate(delays):
            # a duplicated request: only the copy handled last is answered (see simulator.network)
            copy = msg if i == len(delays) - 1 or msg.kind == "reply" else dataclasses.replace(msg, reply_lost=True)
            self.at(self.now + delay, self._deliver, copy)

    def _deliver(self, msg: Message) -> Any:
        if self.network.is_cut(msg.src, msg.dst):
            return None
        # the kind of the request (also for its reply, a refusal or a timeout): what a guard that fires
        # in this step is about (guard_count, steer)
        if msg.kind == "reply":
            entry = self._rpcs.pop(msg.rpc, None)
            if entry is None or entry[0].dead:
                return False
            guard_count.note_delivery(entry[4])
            return entry[1](msg.body)
        if msg.rpc in self._refused:
            return False  # a copy of a request its sender saw refused: TCP delivered no copy of it
        node = self.nodes.get(msg.dst)
        if node is None or node.dead:
            entry = self._rpcs.pop(msg.rpc, None)
            if entry is not None:
                # A refusal (nothing listening) means the request reached no server: a duplicate copy
                # still in flight stands for a resend after a lost answer, which this sender never made.
                self._refused.add(msg.rpc)
            if entry is None or entry[0].dead:
                return False
            guard_count.note_delivery(entry[4])
            return entry[3]()
        guard_count.note_delivery(traffic_kind(msg))
        return node.handle(msg)

    def _timeout(self, rpc: int) -> Any:
        entry = self._rpcs.pop(rpc, None)
        if entry is None or entry[0].dead:
            return False
        guard_count.note_delivery(entry[4])
        return entry[2]()

    # ------------------------------------------------------------------ bootstrap and phases
    def _start_broker(self, broker_id: int) -> None:
        broker = SimBroker(self, broker_id, self.disks[broker_id])
        self.nodes[broker_id] = broker
        broker.start()

    def _bootstrap(self) -> None:
        controller = self.active_controller()
        regs = controller.core.brokers if controller is not None else {}
        if controller is None or not all(b in regs and not regs[b].fenced for b in self.broker_ids):
            if self.now > BOOTSTRAP_LIMIT_MS:
                raise InvariantViolation(f"bootstrap: brokers not all unfenced after {BOOTSTRAP_LIMIT_MS} ms")
            self.at(self.now + BOOTSTRAP_POLL_MS, self._bootstrap)
            return
        o = self.options
        n = len(self.broker_ids)
        assignment = {p: [self.broker_ids[(p + i) % n] for i in range(o.replication_factor)]
                      for p in range(o.partitions)}
        topic_id = str(uuid.UUID(int=self.rng_ids.getrandbits(128), version=4))
        self._create_topic(assignment, topic_id)

    def _create_topic(self, assignment: dict[int, list[int]], topic_id: str) -> bool | None:
        """Create the topic on the active controller (a change like any other: committed, then applied);
        the schedule's clock starts once it is (``t0``)."""
        controller = self.active_controller()
        if controller is None or not controller.submit_direct(
                lambda core: core.create_topic(TOPIC, assignment=assignment, topic_id=topic_id)):
            if self.now > BOOTSTRAP_LIMIT_MS:
                raise InvariantViolation(f"bootstrap: the topic was not created within {BOOTSTRAP_LIMIT_MS} ms")
            self.at(self.now + BOOTSTRAP_POLL_MS, self._create_topic, assignment, topic_id)
            return False
        self._await_topic(assignment, topic_id)
        return None

    def _await_topic(self, assignment: dict[int, list[int]], topic_id: str) -> bool | None:
        controller = self.active_controller()
        if controller is None or TOPIC not in controller.core.topics:
            if self.now > BOOTSTRAP_LIMIT_MS:
                raise InvariantViolation(f"bootstrap: the topic was not committed within {BOOTSTRAP_LIMIT_MS} ms")
            if controller is not None and controller.idle:
                self.at(self.now, self._create_topic, assignment, topic_id)  # the change was lost: again
            else:
                self.at(self.now + 1, self._await_topic, assignment, topic_id)
            return False
        o = self.options
        self.t0 = self.now
        for event in self.schedule.events:
            self.at(self.t0 + event["at"], self._external, event)
        self.at(self.t0 + o.duration_ms, self._final_phase)
        self.at(self.t0, self._check_evidence)
        return None

    def _check_evidence(self, at_end: bool = False) -> bool:
        wrong = evidence.mismatches(self, self.last_events)
        if at_end:
            wrong += evidence.summary_mismatches(self, self.last_events)
        if wrong:
            raise _SelfCheck(evidence.RULE, "the trace contradicts the nodes' state: " + "; ".join(wrong[:3]))
        stuck = self.quorum_watch.problems(self)
        if stuck:
            raise _SelfCheck(liveness.RULE, "; ".join(stuck[:2]))
        if not self.done:
            self.at(self.now + evidence.CHECK_EVERY_MS, self._check_evidence)
        return False

    def _final_phase(self) -> None:
        self.network.heal()
        self._restart_dead()
        settled = self.now + self.options.settle_ms
        if self.options.converge_ms > 0:
            self.at(settled, self._await_convergence, settled + self.options.converge_ms)
        else:
            self.at(settled, self._final_reads)

    def _restart_dead(self) -> None:
        for c in self.controller_ids:
            if self.nodes[c].dead:
                self._start_controller(c)
        for b in self.broker_ids:
            if self.nodes[b].dead:
                self._start_broker(b)

    def _await_convergence(self, deadline: int) -> bool | None:
        self._restart_dead()  # a controlled shutdown begun before the heal may have ended since
        problems = liveness.unmet(self)
        if not problems:
            # one attempt each, idempotent producers too: a converged cluster acknowledges the first
            probes = {key: self.clients.produce(key, refresh=True, attempts=1) for key in liveness.led_partitions(self)}
            self.at(self.now, self._await_probes, probes)
            return None
        if self.now >= deadline:
            raise _SelfCheck(liveness.RULE, f"not converged {self.options.converge_ms} ms after every fault "
                                            f"was healed: " + "; ".join(problems[:4]))
        self.at(self.now + liveness.POLL_MS, self._await_convergence, deadline)
        return False

    def _await_probes(self, probes: dict[int, int]) -> bool | None:
        outcomes = {key: self.clients.outcome(process) for key, process in probes.items()}
        if any(op is None for op in outcomes.values()):
            self.at(self.now + liveness.POLL_MS, self._await_probes, probes)
            return False
        failed = {key: op for key, op in outcomes.items() if op["type"] != "ok"}
        if failed:
            raise _SelfCheck(liveness.RULE, "a converged cluster did not acknowledge an acks=all write: " + "; ".join(
                f"partition {key}: {op['type']} ({op['error']})" for key, op in sorted(failed.items())))
        self._written = set(probes)
        self._final_reads()
        return None

    def _final_reads(self) -> None:
        for key in range(self.options.partitions):
            self.clients.poll(key, final=True)
        self.at(self.now, self._check_final)

    def _check_final(self) -> bool | None:
        if len(self.clients.final_done) == self.options.partitions:
            self.done = True
            for broker_id in self.broker_ids:
                broker = self.nodes.get(broker_id)
                if broker is not None and not broker.dead:
                    broker.trace_logs("end")  # I4/I16 on the logs as the run leaves them
            self._check_evidence(at_end=True)
            unread = sorted(self._written - self.clients.final_read)
            if unread:
                raise _SelfCheck(liveness.RULE, f"a converged cluster did not serve the final read of partition(s) "
                                                f"{unread}, written to just before")
            return None
        self.at(self.now + 50, self._check_final)
        return False

    def _start_controller(self, node_id: int) -> None:
        self.nodes[node_id] = SimController(self, node_id, self.controller_ids, self.controller_disks[node_id])

    def _target(self, e: Event) -> Any:
        """An event's node: ``active`` is the active controller when the episode's first event happens (or
        the first voter if there is none), ``leader`` the leader of partition ``key`` (default 0) then (as the
        active controller knows it; else the first broker); later events of the same ``episode`` act on
        that node."""
        node = e["node"]
        if node not in (ACTIVE, LEADER):
            return node
        episode = e.get("episode")
        if episode is not None and episode in self._episodes:
            return self._episodes[episode]
        if node == LEADER:
            node = self._leader_of(int(e.get("key", 0)))
        else:
            active = self.active_controller()
            node = active.id if active is not None else self.controller_ids[0]
        if episode is not None:
            self._episodes[episode] = node
        return node

    def _leader_of(self, key: int) -> int:
        controller = self.active_controller()
        state = controller.core.partition(TOPIC, key) if controller is not None else None
        if state is not None and state.leader in self.broker_ids:
            return state.leader
        return self.broker_ids[0]

    def _controller_links(self, node: Any) -> list[tuple[Any, Any]]:
        """The links ``isolate`` cuts: a broker's to every controller; a controller's to every other node."""
        if node in self.controller_ids:
            return [(node, other) for other in self.controller_ids + self.broker_ids if other != node]
        return [(node, c) for c in self.controller_ids]

    # ------------------------------------------------------------------ external events
    def _external(self, e: Event) -> None:
        kind = e["do"]
        guard_count.note_delivery(kind if kind in ("produce", "poll") else "list_offsets" if kind == "offsets"
                                  else "admin" if kind in ("reassign", "cancel", "elect") else "fault")
        net = self.network
        if kind == "produce":
            self.clients.produce(e["key"])
        elif kind == "poll":
            self.clients.poll(e["key"])
        elif kind == "offsets":
            self.clients.list_offsets(e["key"], int(e["timestamp"]))
        elif kind == "crash":
            target = self._target(e)
            node = self.nodes[target]
            if not node.dead:
                if target in self.controller_ids:
                    node.dead = True
                    if e.get("lossy"):
                        self.controller_disks[target].lose_unflushed()
                else:
                    if e.get("lossy"):
                        self.clients.nemesis("lose-unsynced", target)
                    node.crash(bool(e.get("lossy")))
        elif kind == "stop":
            node = self.nodes[self._target(e)]
            if not node.dead:
                node.stop()
        elif kind == "restart":
            target = self._target(e)
            if self.nodes[target].dead:
                if target in self.controller_ids:
                    self._start_controller(target)
                else:
                    self.clients.nemesis("start", target)
                    self._start_broker(target)
        elif kind == "isolate":
            for a, b in self._controller_links(self._target(e)):
                net.cut(a, b)
        elif kind == "rejoin":
            for a, b in self._controller_links(self._target(e)):
                net.uncut(a, b)
        elif kind == "cut":
            net.cut(e["a"], e["b"], bool(e.get("oneway")))
        elif kind == "uncut":
            net.uncut(e["a"], e["b"], bool(e.get("oneway")))
        elif kind == "link":
            kinds = frozenset(e["kinds"]) if e.get("kinds") else None
            net.set_fault(e["a"], e["b"], LinkFault(float(e.get("drop", 0)), float(e.get("dup", 0)),
                                                    int(e.get("delay", 0)), kinds))
        elif kind == "unlink":
            net.set_fault(e["a"], e["b"], None)
        elif kind == "controller-restart":
            target = self._target({"node": ACTIVE})
            controller = self.nodes[target]
            if not controller.dead:
                controller.dead = True
                self.at(self.now + int(e.get("down_ms", 100)), self._restart_controller_if_dead, target)
        elif kind in ("reassign", "cancel", "elect"):
            self.clients.admin({k: v for k, v in e.items() if k != "at"})
        else:
            raise ValueError(f"unknown event kind {kind!r}")

    def _restart_controller_if_dead(self, node_id: int) -> None:
        if self.nodes[node_id].dead:
            self._start_controller(node_id)


def traffic_kind(msg: Message) -> str:
    """The kind a link fault and the guard count see for a request: its kind, but ``vote`` for the quorum's
    Vote requests (a part of ``raft``, simulator.network.PART_OF); a reply is ``reply`` here."""
    if msg.kind == "raft" and isinstance(msg.body, VoteRequest):
        return "vote"
    return msg.kind
