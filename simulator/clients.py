"""Simulated clients: producers, consumers and an admin, writing the history the checkers read.

Ops follow the history schema (docs/history-schema.md) (Jepsen's Kafka workload encoding): ``send`` ``[key, value]``
completes as ``[key, [offset, value]]``, ``poll`` completes as ``{key: [[offset, value], ...]}``; key k is
partition k of the simulated topic, values are unique integers. Each op runs in a process of its own, so a
process never has two ops at once and one that ended ``info`` is never reused.

A client finds a partition's leader the way a Kafka client does, from a broker's metadata (here: the image
of a broker picked at random, which may be stale) and asks again after an error. Outcomes: ``ok`` with the
broker's answer; ``fail`` only when the write certainly did not happen (no leader known, the request was
refused before reaching a broker, NOT_ENOUGH_REPLICAS before the append, L1); everything else, including
NOT_LEADER_OR_FOLLOWER (which is also how a leader nacks writes already in its log when it loses
leadership, L5) and timeouts, is ``info``. Reads read the whole committed log from offset 0, so every poll
is a full check of what the leader exposes (I7, I15); the final phase reads each partition with
``final: true`` until one read succeeds (I6). ``history()`` is what the checkers get: when some partition
could not be read at all in the final phase (no leader: KIP-966 keeps a partition leaderless rather than
electing an incomplete replica, K10), its writes are not "unreadable", they are unknown, so the final
marks are dropped and I6 is not judged (the checkers read a final phase as "every ok send must be there").

With ``SimOptions.idempotent`` the sends are those of idempotent producers instead (``simulator.producers``:
producer ids, sequences, retries of the same batch); the history keeps one op per send.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker_session import NOT_CONTROLLER_RETRY_MS, ControllerDiscovery
from reference_impl.protocol.errors import Errors, KafkaError
from simulator import producers
from simulator.producers import IdempotentProducer, Send

if TYPE_CHECKING:
    from simulator.host import Host

CERTAINLY_NOT_WRITTEN = (Errors.NOT_ENOUGH_REPLICAS, Errors.UNKNOWN_TOPIC_OR_PARTITION)
ADMIN_ATTEMPTS = 10
FINAL_READ_ATTEMPTS = 5
FINAL_READ_RETRY_MS = 200


class Clients:
    """Every client of the simulated cluster (one node, ``client``, on links that are never faulty)."""

    def __init__(self, world: Host) -> None:
        self.world = world
        self.id = "client"
        self.dead = False
        self.ops: list[dict[str, Any]] = []
        self._process = 0
        self._value = 0
        self._leaders: dict[int, int] = {}
        self._leader_epochs: dict[int, int] = {}  # the leader epoch of a ListOffsets answer, sent with the next
        self.final_done: set[int] = set()  # partitions whose final reads are over (read, or gave up)
        self.final_read: set[int] = set()  # partitions a final read did read
        self.reassigned: dict[int, list[int]] = {}  # partition -> target of its last accepted reassignment
        # partition -> admin requests in flight, and whether two were at once since it was last zero: then
        # the controller's order of them is unknown here, and so is the target they leave
        self._admin_in_flight: dict[int, int] = {}
        self._admin_overlapped: set[int] = set()
        self._controllers = ControllerDiscovery(world.controller_ids)
        # idempotent producers (SimOptions.idempotent): ids handed out here, as InitProducerId would
        self.producers = [IdempotentProducer(i) for i in range(producers.PRODUCERS)]
        self._sends = 0

    def handle(self, msg: Any) -> None:
        """Clients serve no requests."""
        raise ValueError(f"a client got a request {msg.kind!r}")

    # ------------------------------------------------------------------ history
    def _op(self, type_: str, process: int | str, f: str, value: Any, node: Any = None, err: str | None = None,
            final: bool = False) -> None:
        op = {"index": len(self.ops), "time": self.world.stamp(), "type": type_, "process": process, "f": f,
              "value": value, "node": None if node is None else str(node), "error": err}
        if final:
            op["final"] = True
        self.ops.append(op)

    def nemesis(self, f: str, node: Any) -> None:
        """Record a fault the schedule applies to ``node`` as a nemesis op pair, as a real run's history
        holds it, so the guarantee profile can tell overlapping losses from sequential ones."""
        value = {"nodes": [str(node)], "effective": True}
        self._op("invoke", "nemesis", f, None)
        self._op("ok", "nemesis", f, value)

    def _new_process(self) -> int:
        self._process += 1
        return self._process

    def _leader(self, key: int, refresh: bool) -> int | None:
        """The leader of partition ``key`` as a (random, possibly stale) broker's metadata says."""
        if not refresh and key in self._leaders:
            return self._leaders[key]
        live = [b for b in self.world.broker_ids if not self.world.nodes[b].dead]
        if not live:
            return None
        broker = self.world.nodes[self.world.rng_client.choice(live)]
        topic_id = broker.image.topic_id(self.world.topic)
        state = broker.image.partition(topic_id, key) if topic_id is not None else None
        if state is None or state.leader < 0:
            self._leaders.pop(key, None)
            return None
        self._leaders[key] = state.leader
        return state.leader

    def history(self) -> list[dict[str, Any]]:
        """The ops for the checkers (see the module docstring for when the final marks are dropped)."""
        if len(self.final_read) == len(self.final_done):
            return self.ops
        return [{k: v for k, v in op.items() if k != "final"} for op in self.ops]

    # ------------------------------------------------------------------ produce
    def produce(self, key: int, refresh: bool = False, attempts: int | None = None) -> int:
        """One acks=all write of a fresh value to partition ``key``; returns the op's process (``outcome``
        tells how it ended). ``refresh``: ask a broker for the leader instead of the cached one. With
        idempotent producers, ``attempts`` caps the attempts of this send (default ``producers.ATTEMPTS``)."""
        if self.world.options.idempotent:
            return self._produce_idempotent(key, refresh, attempts or producers.ATTEMPTS)
        self._value += 1
        value, process = self._value, self._new_process()
        self._op("invoke", process, "send", [key, value])
        leader = self._leader(key, refresh=refresh)
        if leader is None:
            self._op("fail", process, "send", [key, value], err="no leader known")
            return process

        def answered(answer: tuple[Errors, int]) -> None:
            code, offset = answer
            if code == Errors.NONE:
                self._op("ok", process, "send", [key, [offset, value]], leader)
                return
            self._leaders.pop(key, None)
            kind = "fail" if code in CERTAINLY_NOT_WRITTEN else "info"
            self._op(kind, process, "send", [key, value], leader, Errors(code).name)

        def refused() -> None:
            self._leaders.pop(key, None)
            self._op("fail", process, "send", [key, value], leader, "connection refused")

        self.world.call(self, leader, "produce", (self._key(key), value), answered,
                        lambda: self._timed_out(process, "send", [key, value], leader, key), on_refused=refused)
        return process

    def _produce_idempotent(self, key: int, refresh: bool, attempts: int) -> int:
        self._value += 1
        value, process = self._value, self._new_process()
        self._op("invoke", process, "send", [key, value])
        o = self.world.options
        producer = self.producers[self._sends % len(self.producers)]
        self._sends += 1
        send = Send(process, key, value, self.world.now + producers.delivery_window_ms(o.settle_ms, o.request_timeout_ms),
                    attempts_left=attempts, refresh=refresh)
        if producer.enqueue(send):
            self._attempt(producer, send)
        return process

    def _attempt(self, producer: IdempotentProducer, send: Send) -> None:
        """One attempt of ``send`` (its first, or a retry of the same batch: same epoch and sequence)."""
        key = send.key
        if self.world.now >= send.deadline_ms:
            # the window closed before it left (it waited behind another batch) or before a retry
            self._end_send(producer, send, send.error or "expired before it was sent")
            return
        producer.stamp(send)
        send.attempts += 1
        send.attempts_left -= 1
        leader = self._leader(key, refresh=send.refresh or send.attempts > 1)
        if leader is None:
            self._retry(producer, send, Errors.UNKNOWN_TOPIC_OR_PARTITION, "no leader known", None)
            return
        send.node = leader

        def answered(answer: tuple[Errors, int]) -> None:
            code, offset = answer
            self._retry(producer, send, code, Errors(code).name, offset)

        def lost() -> None:
            self._retry(producer, send, Errors.REQUEST_TIMED_OUT, "timeout", None)

        def refused() -> None:
            self._retry(producer, send, Errors.UNKNOWN_TOPIC_OR_PARTITION, "connection refused", None)

        body = (self._key(key), send.value, (producer.producer_id, send.epoch, send.sequence))
        self.world.call(self, leader, "produce", body, answered, lost, on_refused=refused)

    def _retry(self, producer: IdempotentProducer, send: Send, code: int, why: str, offset: int | None) -> None:
        """An attempt's outcome (``code``: the leader's answer; a timeout counts as REQUEST_TIMED_OUT, no
        leader and a refused connection as certainly not appended): end the op, or try again."""
        verdict = producers.judge_answer(code, send.attempts_left, self.world.now + producers.RETRY_BACKOFF_MS
                                         < send.deadline_ms)
        if verdict == "ok":
            if code == Errors.DUPLICATE_SEQUENCE_NUMBER or offset is None or offset < 0:
                offset = None  # a duplicate answered without its offset: the offset is unknown
            self._op("ok", send.process, "send", [send.key, [offset, send.value]], send.node)
            self._next(producer, producer.finished(send, "ok"))
            return
        if code not in producers.NOT_APPENDED and code not in producers.REFUSED:
            send.maybe_appended = True  # no answer, or an answer that does not rule the append out
        send.error = why if send.attempts == 1 else f"{why} (attempt {send.attempts})"
        self._leaders.pop(send.key, None)
        if verdict == "retry":
            self.world.at(self.world.now + producers.RETRY_BACKOFF_MS, self._attempt, producer, send)
            return
        self._end_send(producer, send, send.error, refused=code in producers.REFUSED)

    def _end_send(self, producer: IdempotentProducer, send: Send, err: str, refused: bool = False) -> None:
        kind = "info" if send.maybe_appended else "fail"
        self._op(kind, send.process, "send", [send.key, send.value], send.node, err)
        self._next(producer, producer.finished(send, kind, refused))

    def _next(self, producer: IdempotentProducer, send: Send | None) -> None:
        if send is not None:
            self._attempt(producer, send)

    def outcome(self, process: int) -> dict[str, Any] | None:
        """The completion of the op run by ``process`` (None while it is in flight)."""
        for op in reversed(self.ops):
            if op["process"] == process and op["type"] != "invoke":
                return op
        return None

    def _timed_out(self, process: int, f: str, value: Any, node: int, key: int, final: bool = False) -> None:
        self._leaders.pop(key, None)
        self._op("info", process, f, value, node, "timeout", final)

    def _key(self, key: int) -> tuple[str, int]:
        return (self.world.topic, key)

    # ------------------------------------------------------------------ poll
    def poll(self, key: int, final: bool = False, attempt: int = 1) -> None:
        """Read partition ``key``'s committed records from its leader (``final``: the closing read)."""
        process = self._new_process()
        self._op("invoke", process, "poll", None, final=final)
        leader = self._leader(key, refresh=final)
        retry = final and attempt < FINAL_READ_ATTEMPTS

        def again() -> None:
            if retry:
                self.world.at(self.world.now + FINAL_READ_RETRY_MS, self.poll, key, True, attempt + 1)
            elif final:
                self.final_done.add(key)

        if leader is None:
            self._op("fail", process, "poll", None, err="no leader known", final=final)
            again()
            return

        def answered(answer: tuple[Errors, list]) -> None:
            code, batches = answer
            if code == Errors.NONE:
                read = [[offset, int(payload.decode())] for offset, payload in batches]
                self._op("ok", process, "poll", {key: read}, leader, final=final)
                if final:
                    self.final_done.add(key)
                    self.final_read.add(key)
                return
            self._leaders.pop(key, None)
            self._op("fail", process, "poll", None, leader, Errors(code).name, final)
            again()

        def lost() -> None:
            self._timed_out(process, "poll", None, leader, key, final)
            again()

        def refused() -> None:
            self._leaders.pop(key, None)
            self._op("fail", process, "poll", None, leader, "connection refused", final)
            again()

        self.world.call(self, leader, "poll", self._key(key), answered, lost, on_refused=refused)

    # ------------------------------------------------------------------ list offsets
    def list_offsets(self, key: int, timestamp: int) -> None:
        """A consumer's ListOffsets of partition ``key`` (LATEST -1, EARLIEST -2, MAX_TIMESTAMP -3 or a
        timestamp) at its leader, in the leader epoch the client knows (-1: none). The answer is not part of
        the history; the broker checks it (``simulator.rules``, L18)."""
        leader = self._leader(key, refresh=False)
        if leader is None:
            return
        epoch = self._leader_epochs.get(key, -1)

        def answered(answer: Any) -> None:
            if getattr(answer, "leader_epoch", -1) >= 0 and answer.error.ok:
                self._leader_epochs[key] = answer.leader_epoch
            elif not answer.error.ok:
                self._leaders.pop(key, None)
                self._leader_epochs.pop(key, None)

        self.world.call(self, leader, "list_offsets", (self._key(key), timestamp, epoch), answered, lambda: None)

    # ------------------------------------------------------------------ admin
    def admin(self, body: dict[str, Any], attempt: int = 1) -> None:
        """Send an admin request to the active controller (its answer is not part of the queue history; an
        accepted reassignment or cancellation is kept in ``reassigned``: what the partition's replicas must
        become). A refusal from a controller that is not the active one, or no answer, is asked again of the
        next one, a few times (as an admin client retries NOT_CONTROLLER)."""
        key = body.get("key")
        target = self._controllers.target()

        def again() -> None:
            # the change may have been made all the same (a deposed controller's may still commit under
            # its successor): what the replicas must become is unknown until an answer says
            self.reassigned.pop(key, None)
            if attempt < ADMIN_ATTEMPTS:
                self.world.at(self.world.now + NOT_CONTROLLER_RETRY_MS, self.admin, body, attempt + 1)

        def settled() -> bool:
            """One request less in flight; whether the order of this one among others is unknown."""
            self._admin_in_flight[key] -= 1
            overlapped = key in self._admin_overlapped
            if not self._admin_in_flight[key]:
                self._admin_overlapped.discard(key)
            return overlapped

        def answered(answer: Any) -> None:
            overlapped = settled()
            if isinstance(answer, KafkaError) and answer.code == Errors.NOT_CONTROLLER:
                hint = int(answer.message) if answer.message and answer.message.isdigit() else None
                self._controllers.not_controller(target, hint)
                again()
                return
            outcome = answer.get((self.world.topic, key)) if isinstance(answer, dict) else None
            if outcome is None or not outcome.ok:
                return
            if overlapped:
                # answers may come back in another order than the controller committed the requests in
                self.reassigned.pop(key, None)
            elif body["do"] == "reassign":
                self.reassigned[key] = list(body["replicas"])
            elif body["do"] == "cancel":
                self.reassigned.pop(key, None)  # back to the replicas before it (not known here)

        def lost() -> None:
            # no answer: with a quorum, ask the next voter (a lone controller's request is just lost)
            settled()
            self._controllers.failed(target)
            if len(self.world.controller_ids) > 1:
                again()

        if self._admin_in_flight.get(key, 0):
            self._admin_overlapped.add(key)
        self._admin_in_flight[key] = self._admin_in_flight.get(key, 0) + 1
        self.world.call(self, target, "admin", body, answered, lost)
