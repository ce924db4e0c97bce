"""The simulated broker process: lifecycle, metadata image, partition replicas and fetchers, in memory.

It mirrors ``reference_impl.server.broker`` / ``replica_manager`` / ``fetcher`` with the same core calls
and the same cadence constants (``protocol.broker_session``, ``follower_fetch``, ``isr_loop``): register
until accepted, heartbeat (fast until RUNNING and unfenced), pull the metadata log through
``MetadataPull`` and apply it batch by batch (T-rules via ``MetadataDelta.transitions_for`` and
``PartitionReplica.apply_metadata``), one fetcher per leader running ``fetch_round`` /
``complete_fetch_round``, the ISR loop every ``ISR_INTERVAL_MS``, leader-side long polling with
``answer_now``, produce gated by ``accepts_produce`` (L1) and answered when the core's L5 verdict
arrives. What the servers keep on files lives in ``BrokerDisk``, which outlives a crash: the logs (an
``InMemoryLog`` knows how far it was flushed, so a power loss can drop the rest, B4) and the clean-shutdown
marker (K4). Every core event is traced exactly as the servers trace it (plus the partition's topic name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker import STARTING, BrokerLifecycle
from reference_impl.protocol.broker_session import (
    HWM_CHECKPOINT_INTERVAL_MS,
    METADATA_MAX_WAIT_MS,
    METADATA_RETRY_MS,
    NOT_CONTROLLER_RETRY_MS,
    REGISTRATION_RETRY_MS,
    ControllerDiscovery,
    MetadataPull,
    accepts_produce,
    begin_stop,
    heartbeat_delay_ms,
    registered,
    stop_marker_epoch,
    stray_logs,
)
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.follower_fetch import (
    FETCH_IDLE_POLL_MS,
    FETCH_MAX_WAIT_MS,
    FETCH_RETRY_BACKOFF_MS,
    PlannedFetch,
    answer_now,
    complete_fetch_round,
    fetch_round,
)
from reference_impl.protocol.isr_loop import ISR_INTERVAL_MS, alter_partition_unanswered, isr_round
from reference_impl.protocol.log import InMemoryLog
from reference_impl.protocol.metadata_image import MetadataImage
from reference_impl.protocol.records import PartitionState
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import (
    ACKS_ALL,
    AlterPartitionRequest,
    DeleteLog,
    FetchPartitionResult,
    FetchRequest,
    ListOffsetsResult,
    ProduceBatch,
    ReplicaConfig,
    StartFetching,
    StopFetching,
)
from reference_impl.protocol.trace_events import (
    broker_metadata_event,
    log_deleted_event,
    log_recovery_events,
    metadata_offset_event,
    producer_batch_event,
)
from simulator import producers
from simulator.rules import RuleBroken, check_list_offsets

if TYPE_CHECKING:
    from simulator.host import Host
    from simulator.network import Message

Key = tuple[str, int]  # (topic name, partition), as the servers name hosted partitions


@dataclass
class BrokerDisk:
    """What survives a broker process: its partition logs and the clean-shutdown marker epoch."""

    logs: dict[Key, InMemoryLog] = field(default_factory=dict)
    marker: int | None = None
    last_flush_ms: int = 0

    def lose_unflushed(self) -> None:
        """Power loss (B4): every log keeps only what was flushed; the HWM checkpoint cannot be ahead of it."""
        for log in self.logs.values():
            log.truncate_to(log.flushed_offset)
            log.checkpoint_high_watermark(min(log.checkpointed_high_watermark(), log.log_end_offset))


@dataclass(frozen=True)
class FetchBody:
    """One Fetch request from a follower broker: its id and epoch, and one core request per partition."""

    replica_id: int
    broker_epoch: int
    requests: tuple[tuple[Key, FetchRequest], ...]


@dataclass
class Fetcher:
    """The fetcher for one leader: the partitions followed there, whether a request is out, and a token
    that invalidates superseded wake-ups."""

    leader: int
    keys: list[Key] = field(default_factory=list)
    busy: bool = False
    token: int = 0


class SimBroker:
    """One incarnation of a broker process (a restart builds a new one over the same ``BrokerDisk``)."""

    def __init__(self, world: Host, broker_id: int, disk: BrokerDisk) -> None:
        self.world = world
        self.id = broker_id
        self.name = str(broker_id)
        self.dead = False
        self.disk = disk
        o = world.options
        self.config = ReplicaConfig(variant=o.variant, min_insync_replicas=o.min_isr,
                                    replica_lag_time_max_ms=o.replica_lag_time_max_ms,
                                    fetch_backoff_ms=o.fetch_backoff_ms,
                                    trace_log_summaries=o.trace_log_summaries, historical_bug=o.inject_bug)
        self.lifecycle = BrokerLifecycle(broker_id, f"broker-{broker_id}", 9092)
        self.image = MetadataImage()
        self.pull: MetadataPull | None = None
        self.replicas: dict[Key, PartitionReplica] = {}
        self.recovered: dict[Key, InMemoryLog] = {}
        self.fetchers: dict[int, Fetcher] = {}
        self.follows: dict[Key, int] = {}
        self.parked: list[tuple[Message, int]] = []  # leader-side long polls: (fetch, step parked at)
        self.acks: dict[tuple[Key, int], Message] = {}
        self.alter_partition_in_flight: dict[Key, AlterPartitionRequest] = {}  # L12 (simulator.rules)
        self.shutdown_allowed = False                     # C9: the controller said so in a heartbeat reply
        self.stopping = False
        self._last_checkpoint = world.now
        self.discovery = ControllerDiscovery(world.controller_ids)

    # ------------------------------------------------------------------ start (B1, B2)
    def start(self) -> None:
        """Recover the logs on disk, consume the clean-shutdown marker (K4), register."""
        events = []
        for key in sorted(self.disk.logs):
            log = self.disk.logs[key]
            self.recovered[key] = log
            events += log_recovery_events(key[0], key[1], self.id, log.log_end_offset,
                                          log.checkpointed_high_watermark(),
                                          log=log if self.config.trace_log_summaries else None)
        self.world.emit(self.name, events)
        marker, self.disk.marker = self.disk.marker, None
        self.lifecycle.start(self.world.rng_ids, marker)
        self._drain_lifecycle()
        self._register()

    def _drain_lifecycle(self) -> None:
        self.world.emit(self.name, self.lifecycle.drain_events())

    def _controller_call(self, kind: str, body: Any, on_reply: Any, on_fail: Any, timeout_ms: int | None = None) -> None:
        """A request to the controller the broker believes active (Q15); a failure moves it to the next."""
        target = self.discovery.target()

        def failed() -> None:
            self.discovery.failed(target)
            on_fail()

        self.world.call(self, target, kind, body, lambda answer: on_reply(target, answer), failed,
                        timeout_ms=timeout_ms)

    def _refused(self, target: int, err: Any, leader: int | None = None) -> bool:
        """Whether ``err`` is a non-active controller's refusal (then the next request goes elsewhere)."""
        if err.code != Errors.NOT_CONTROLLER:
            return False
        hint = leader if leader is not None else (int(err.message) if err.message and err.message.isdigit() else None)
        self.discovery.not_controller(target, hint)
        return True

    def _register(self) -> None:
        self._controller_call("register", self.lifecycle.registration_request(), self._registered,
                              lambda: self.world.timer(self, REGISTRATION_RETRY_MS, self._register))

    def _registered(self, target: int, answer: tuple[Any, int]) -> None:
        err, epoch = answer
        if self._refused(target, err):
            self.world.timer(self, NOT_CONTROLLER_RETRY_MS, self._register)
            return
        accepted = registered(self.lifecycle, err, epoch)
        if accepted:
            for replica in self.replicas.values():
                replica.broker_epoch = epoch
        self._drain_lifecycle()
        if not accepted:
            self.world.timer(self, REGISTRATION_RETRY_MS, self._register)
            return
        if self.pull is not None:
            # a registration again after the controller replaced ours (STALE_BROKER_EPOCH): the metadata
            # pull and the timer round go on as they were; only the heartbeats start again
            self._heartbeat()
            return
        self.pull = MetadataPull(self.image, epoch)
        self._heartbeat()
        self._pull_metadata()
        self.world.timer(self, ISR_INTERVAL_MS, self._tick)

    # ------------------------------------------------------------------ heartbeats (B2, C5, C8)
    def _heartbeat(self) -> None:
        hb = self.lifecycle.build_heartbeat(self.image.offset)
        if hb is None:
            self._next_heartbeat()
            return
        self._controller_call("heartbeat", hb, self._heartbeat_answer, self._next_heartbeat)

    def _heartbeat_answer(self, target: int, reply: Any) -> None:
        if self._refused(target, error(reply.error)):
            self.world.timer(self, NOT_CONTROLLER_RETRY_MS, self._heartbeat)
            return
        if error(reply.error).ok and reply.should_shutdown:
            self.shutdown_allowed = True
        self.lifecycle.handle_heartbeat_response(error(reply.error), reply.is_fenced, reply.should_shutdown)
        self._drain_lifecycle()
        if self.lifecycle.state == STARTING:  # the controller replaced our registration: register again
            self._register()
            return
        if self.stopping and self.lifecycle.should_shutdown:
            if not self.shutdown_allowed:
                raise RuleBroken("C9", f"broker {self.id} stops before its session timeout although the controller "
                                       f"never allowed it to shut down")
            self._finish_stop()
            return
        self._next_heartbeat()

    def _next_heartbeat(self) -> None:
        delay = heartbeat_delay_ms(self.lifecycle, self.world.options.heartbeat_interval_ms)
        self.world.timer(self, delay, self._heartbeat)

    # ------------------------------------------------------------------ metadata (T1-T7)
    def _pull_metadata(self) -> None:
        assert self.pull is not None
        self._controller_call("metadata", self.pull.next_offset, self._metadata_answer,
                              lambda: self.world.timer(self, METADATA_RETRY_MS, self._pull_metadata),
                              timeout_ms=METADATA_MAX_WAIT_MS + self.world.options.request_timeout_ms)

    def _metadata_answer(self, target: int, answer: tuple[Any, list, int | None]) -> None:
        err, batches, leader = answer
        if self._refused(target, err, leader):
            self.world.timer(self, NOT_CONTROLLER_RETRY_MS, self._pull_metadata)
            return
        self.discovery.learned(target)
        if not err.ok:
            self.world.timer(self, METADATA_RETRY_MS, self._pull_metadata)
            return
        assert self.pull is not None
        entries = [[(base + i, r) for i, r in enumerate(records)] for base, records in batches]
        for batch in self.pull.receive(entries):
            self.apply_metadata_batch(batch)
        self._pull_metadata()

    def apply_metadata_batch(self, entries: list[tuple[int, Any]]) -> None:
        """Apply one metadata batch and drive each affected partition replica (T1-T7)."""
        delta = self.image.apply_batch(entries)
        for t in delta.transitions_for(self.id):
            topic = self.image.topics.get(t.topic_id, t.topic_id)
            self._apply_partition_state(topic, t.topic_id, t.partition_id, t.state)
        if self.recovered:
            for key in stray_logs([(k, k[0], k[1]) for k in self.recovered], self.image, self.id,
                                  self.lifecycle.broker_epoch):
                del self.recovered[key]
                self.disk.logs.pop(key, None)
                self.world.emit(self.name, [log_deleted_event(key[0], key[1], self.id, reason="stray")])
        events = []
        for b in delta.brokers:
            reg = self.image.brokers.get(b)
            if reg is not None:
                events.append(broker_metadata_event(b, reg.broker_epoch, reg.fenced, reg.in_controlled_shutdown,
                                                    self.image.offset))
        self.world.emit(self.name, events)

    def _apply_partition_state(self, topic: str, topic_id: str, partition: int, state: PartitionState) -> None:
        key = (topic, partition)
        replica = self.replicas.get(key)
        if replica is None:
            if self.id not in state.replicas:
                if self.recovered.pop(key, None) is not None:  # T1 for a replica removed while away
                    self.disk.logs.pop(key, None)
                return
            log = self.recovered.pop(key, None)
            if log is None:
                log = self.disk.logs[key] = InMemoryLog()
            replica = PartitionReplica(self.id, topic_id, partition, log, self.config,
                                       broker_epoch=self.lifecycle.broker_epoch)
            self.replicas[key] = replica
        for action in replica.apply_metadata(state, self.world.now):
            if isinstance(action, StartFetching):
                self._follow(key, action.leader_id)
            elif isinstance(action, StopFetching):
                self._follow(key, None)
            elif isinstance(action, DeleteLog):
                self._follow(key, None)
                self._after(key, replica)
                del self.replicas[key]
                self.disk.logs.pop(key, None)
                self.world.emit(self.name, [log_deleted_event(topic, partition, self.id)])
                return
        self._after(key, replica)

    def _after(self, key: Key, replica: PartitionReplica) -> None:
        """After every core call on a replica: answer completed acks=all writes (L5), trace its events."""
        for ack in replica.drain_completed_acks():
            msg = self.acks.pop((key, ack.ack_id), None)
            if msg is not None:
                self.world.reply(msg, (ack.error.code, ack.base_offset))
        events = replica.drain_events()
        if events:
            self.world.emit(self.name, [{"topic": key[0], **ev} for ev in events])
            self.world.touched(self, replica)

    # ------------------------------------------------------------------ fetchers (F1-F4)
    def _follow(self, key: Key, leader: int | None) -> None:
        old = self.follows.pop(key, None)
        if old is not None and key in self.fetchers[old].keys:
            self.fetchers[old].keys.remove(key)
        if leader is None:
            return
        fetcher = self.fetchers.setdefault(leader, Fetcher(leader))
        fetcher.keys.append(key)
        self.follows[key] = leader
        if not fetcher.busy:
            self._schedule_fetch(fetcher, 0)

    def _schedule_fetch(self, fetcher: Fetcher, delay: int) -> None:
        fetcher.token += 1
        self.world.timer(self, delay, self._fetch, fetcher, fetcher.token)

    def _fetch(self, fetcher: Fetcher, token: int) -> bool | None:
        if token != fetcher.token or fetcher.busy or not fetcher.keys:
            return False
        planned = fetch_round(((k, self.replicas[k]) for k in fetcher.keys), fetcher.leader, self.world.now)
        if not planned:
            self._schedule_fetch(fetcher, FETCH_IDLE_POLL_MS)
            return None
        fetcher.busy = True
        body = FetchBody(self.id, self.lifecycle.broker_epoch, tuple((p.key, p.request) for p in planned))
        self.world.call(self, fetcher.leader, "fetch", body,
                        lambda answers: self._fetched(fetcher, planned, answers),
                        lambda: self._fetched(fetcher, planned, {}),
                        timeout_ms=FETCH_MAX_WAIT_MS + self.world.options.request_timeout_ms)
        return None

    def _fetched(self, fetcher: Fetcher, planned: list[PlannedFetch], answers: dict[Key, Any]) -> None:
        answered = complete_fetch_round(planned, answers, self.world.now)
        for p in planned:
            self._after(p.key, p.replica)
        fetcher.busy = False
        self._schedule_fetch(fetcher, 0 if answered else FETCH_RETRY_BACKOFF_MS)

    # ------------------------------------------------------------------ serving fetches (L8-L10)
    def _serve_fetch(self, msg: Message, expired: bool) -> bool:
        """Answer a follower's fetch, or leave it parked (long polling); returns whether it was answered."""
        body: FetchBody = msg.body
        results: dict[Key, FetchPartitionResult] = {}
        urgent, size = False, 0
        for key, req in body.requests:
            replica = self.replicas.get(key)
            if replica is None:
                r = FetchPartitionResult(error(Errors.NOT_LEADER_OR_FOLLOWER), req.leader_epoch, req.fetch_offset)
            else:
                r = replica.handle_follower_fetch(body.replica_id, body.broker_epoch, req.leader_epoch,
                                                  req.fetch_offset, req.last_fetched_epoch, req.max_bytes,
                                                  self.world.now)
                if r.error.ok and (req.leader_epoch != replica.leader_epoch or replica.role != LEADER):
                    raise RuleBroken("L8", f"broker {self.id} ({replica.role} in epoch {replica.leader_epoch}) "
                                           f"served a fetch of broker {body.replica_id} in epoch {req.leader_epoch}")
                self._after(key, replica)
            results[key] = r
            urgent |= not r.error.ok or r.diverging_epoch is not None
            size += sum(b.size_bytes for b in r.batches)
        if answer_now(urgent, size, 1, expired):
            self.world.reply(msg, results)
            return True
        return False

    def wake_parked(self, step: int) -> None:
        """A partition changed in this step: held fetches from earlier steps look again."""
        still = []
        for msg, parked_at in self.parked:
            if parked_at == step or not self._serve_fetch(msg, expired=False):
                still.append((msg, parked_at))
        self.parked = still

    def _expire_fetch(self, msg: Message) -> bool | None:
        for i, (held, _) in enumerate(self.parked):
            if held is msg:
                del self.parked[i]
                self._serve_fetch(msg, expired=True)
                return None
        return False

    # ------------------------------------------------------------------ requests
    def handle(self, msg: Message) -> None:
        """Serve a request from a follower (fetch) or a client (produce, poll)."""
        if msg.kind == "fetch":
            if not self._serve_fetch(msg, expired=False):
                self.parked.append((msg, self.world.steps))
                self.world.timer(self, FETCH_MAX_WAIT_MS, self._expire_fetch, msg)
        elif msg.kind == "produce":
            self._produce(msg)
        elif msg.kind == "poll":
            replica = self.replicas.get(msg.body)
            if replica is None:
                self.world.reply(msg, (Errors.NOT_LEADER_OR_FOLLOWER, []))
                return
            r = replica.read_committed(0, 1 << 30)
            self.world.reply(msg, (r.error.code, [(b.base_offset, b.payload) for b in r.batches]))
        elif msg.kind == "log_info":
            self.world.reply(msg, self._log_info(msg.body))
        elif msg.kind == "list_offsets":
            key, timestamp, epoch = msg.body
            replica = self.replicas.get(key)
            if replica is None:
                self.world.reply(msg, ListOffsetsResult(error(Errors.NOT_LEADER_OR_FOLLOWER)))
                return
            answer = replica.list_offsets(timestamp, epoch)
            check_list_offsets(self.id, replica, timestamp, epoch, answer)
            self.world.reply(msg, answer)
        else:
            raise ValueError(f"broker {self.id}: unknown request {msg.kind!r}")

    def _log_info(self, keys: list[Key]) -> tuple[int, dict[Key, tuple[int, int]]]:
        """GetReplicaLogInfo (K7): this incarnation's broker epoch and, for each asked partition it holds a log
        of (hosted, or found on disk at start and not claimed yet), ``(last epoch, log end offset)``."""
        ends = {key: (log.last_epoch, log.log_end_offset) for key in keys
                if (log := self.disk.logs.get(key)) is not None}
        return self.lifecycle.broker_epoch, ends

    def _produce(self, msg: Message) -> None:
        """L1, L2, L5: append as leader; an acks=all write is answered when its verdict arrives. An idempotent
        producer's batch (``(producer id, epoch, base sequence)`` after the value) is checked by the core's
        producer state; a duplicate is answered with the original offset, and an appended batch is traced
        as ``producer_batch``, as the server traces it."""
        key, value, *idempotence = msg.body
        replica = self.replicas.get(key)
        if replica is None or not accepts_produce(self.lifecycle):
            self.world.reply(msg, (Errors.NOT_LEADER_OR_FOLLOWER, -1))
            return
        batch = ProduceBatch(1, str(value).encode())
        if idempotence:
            producer_id, producer_epoch, sequence = idempotence[0]
            batch = ProduceBatch(1, batch.payload, producer_id=producer_id, producer_epoch=producer_epoch,
                                 base_sequence=sequence)
        result = replica.append_as_leader(batch, ACKS_ALL, self.world.now)
        if (result.error.ok or result.pending) and len(replica.isr) < self.world.options.min_isr:
            raise RuleBroken("L1", f"broker {self.id} appended an acks=all write with ISR {replica.isr} below "
                                   f"min.insync.replicas {self.world.options.min_isr}")
        if result.pending:
            self.acks[(key, result.ack_id)] = msg
        self._after(key, replica)
        if idempotence and result.error.code in producers.REFUSED:
            producers.check_refusal(self.world.clients.producers[batch.producer_id], key[1], batch.producer_epoch,
                                    batch.base_sequence, result.error.code.name, replica.log.batches())
        if idempotence and not result.duplicate and result.base_offset >= 0:
            self.world.emit(self.name, [producer_batch_event(key[0], key[1], self.id, replica.leader_epoch,
                                                             batch.producer_id, batch.producer_epoch,
                                                             result.base_offset, False)])
        if not result.pending:
            self.world.reply(msg, (result.error.code, result.base_offset))

    # ------------------------------------------------------------------ the ISR loop and periodic work
    def _tick(self) -> None:
        now = self.world.now
        for key, req in isr_round(list(self.replicas.items()), self.image, now):
            replica = self.replicas[key]
            self._after(key, replica)
            self._send_alter_partition(key, replica, req)
        flush_ms = self.world.options.flush_ms
        if flush_ms is not None and now - self.disk.last_flush_ms >= flush_ms:
            for log in self.disk.logs.values():
                log.flush()
            self.disk.last_flush_ms = now
        if now - self._last_checkpoint >= HWM_CHECKPOINT_INTERVAL_MS:
            self._last_checkpoint = now
            for replica in self.replicas.values():
                replica.checkpoint_high_watermark()
        self.world.timer(self, ISR_INTERVAL_MS, self._tick)

    def _send_alter_partition(self, key: Key, replica: PartitionReplica, req: AlterPartitionRequest) -> None:
        earlier = self.alter_partition_in_flight.get(key)
        if earlier is not None and (earlier.leader_epoch, earlier.partition_epoch) == (replica.leader_epoch,
                                                                                      replica.partition_epoch):
            raise RuleBroken("L12", f"broker {self.id} sent a second AlterPartition for {key} while one is in flight "
                                    f"and no metadata answered it")
        if set(req.isr_ids) == set(replica.isr):
            raise RuleBroken("L12", f"broker {self.id} proposed ISR {req.isr_ids} for {key}, which is the ISR already")
        self.alter_partition_in_flight[key] = req

        def answered(target: int, resp: Any) -> None:
            self._done_alter_partition(key, req)
            self._refused(target, resp.error)  # NOT_CONTROLLER: an unknown outcome, resent (L16)
            replica.handle_alter_partition_response(req, resp, self.world.now)
            self._after(key, replica)

        def lost() -> None:
            self._done_alter_partition(key, req)
            alter_partition_unanswered(replica, req, "no reply", self.world.now)
            self._after(key, replica)

        self._controller_call("alter_partition", req, answered, lost)

    def _done_alter_partition(self, key: Key, req: AlterPartitionRequest) -> None:
        if self.alter_partition_in_flight.get(key) is req:
            del self.alter_partition_in_flight[key]

    # ------------------------------------------------------------------ stopping (B4, C8/C9, K4)
    def stop(self) -> None:
        """SIGTERM: controlled shutdown, bounded by the session timeout as the server bounds it; before the
        registration was accepted the server just closes (no marker), and so does this."""
        if self.stopping:
            return
        self.stopping = True
        if self.lifecycle.state == STARTING:
            self._close()
            self.dead = True
            return
        begin_stop(self.lifecycle)
        self._drain_lifecycle()
        self.world.timer(self, self.world.options.session_timeout_ms, self._finish_stop)

    def trace_logs(self, reason: str) -> None:
        """Trace a ``log_summary`` of every hosted replica (the end of a run)."""
        for key, replica in list(self.replicas.items()):
            replica.emit_log_summary(reason)  # a no-op with the summaries off
            self._after(key, replica)

    def _close(self) -> None:
        for key, replica in list(self.replicas.items()):
            replica.shutdown()
            self._after(key, replica)
        for log in self.recovered.values():
            log.flush()

    def _finish_stop(self) -> None:
        self._close()
        epoch = stop_marker_epoch(self.lifecycle)
        self._drain_lifecycle()
        if epoch >= 0:
            self.disk.marker = epoch
        self.world.emit(self.name, [metadata_offset_event(self.id, self.image.offset, "shutdown"),
                                    {"kind": "shutdown", "clean": True, "broker_epoch": epoch}])
        self.dead = True

    def crash(self, lossy: bool) -> None:
        """kill -9 (nothing more is traced); with ``lossy`` the unflushed writes are gone too (B4)."""
        self.dead = True
        if lossy:
            self.disk.lose_unflushed()
