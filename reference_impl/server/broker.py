"""The broker process: ``python -m reference_impl.server.broker --config FILE``.

A thin asyncio shell around the protocol core (``reference_impl.protocol``): the lifecycle state machine
(``protocol.broker.BrokerLifecycle``, B1-B5), the materialized metadata image (``protocol.metadata_image``,
T-rules on whole batches), and one ``PartitionReplica`` per hosted partition (``replica_manager``). This
module owns the sockets, files, timers and signals:

1. Start: read and delete the clean-shutdown marker (K4), recover every partition log (B2 RECOVERY; torn
   tails are cut and traced as ``recovered``), listen for clients, register with the controller (B1,
   retrying with the same incarnation, C3).
2. Run: pull the active controller's committed metadata log (the quorum's answers say which controller
   that is, Q15: ``controller_link``) and apply it batch by batch (T1-T7 through the replicas, fetcher
   changes through ``fetcher``), except that everything up to the broker's own registration is held and
   applied as one batch (``InitialCatchUp``, B2), so a restart never acts on an old state of the log;
   heartbeat (want_fence until caught up to its own registration, B2; the controller unfences, C5); run
   the ISR loop (``isr_round``: ``maybe_change_isr`` with the image's ineligible brokers and broker
   epochs -> AlterPartition -> L16); flush per ``flush.ms`` and checkpoint HWMs once a second.
3. SIGTERM: controlled shutdown (C8/C9: heartbeats with want_shutdown until the controller says it may
   stop), then flush and close every log, write the clean-shutdown marker (B4, K4) and exit 0. SIGKILL is a
   crash: nothing is written, so the next start registers as unclean.

Produce is accepted only while the lifecycle is RUNNING (or shutting down, while still leader) (L1). Logs
go to stderr, one line per event; trace events go to ``trace.file``.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time

from reference_impl.protocol.broker import STARTING, BrokerLifecycle
from reference_impl.protocol.broker_session import (
    HWM_CHECKPOINT_INTERVAL_MS,
    METADATA_MAX_WAIT_MS,
    METADATA_RETRY_MS,
    NOT_CONTROLLER_RETRY_MS,
    PERIODIC_INTERVAL_MS,
    REGISTRATION_RETRY_MS,
    MetadataPull,
    accepts_produce,
    begin_stop,
    heartbeat_delay_ms,
    registered,
    stop_marker_epoch,
    stray_logs,
)
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.groups import OFFSETS_TOPIC
from reference_impl.protocol.isr_loop import ISR_INTERVAL_MS, alter_partition_unanswered, isr_round
from reference_impl.protocol.metadata_image import MetadataImage
from reference_impl.protocol.records import record_from_dict
from reference_impl.protocol.replica_messages import AlterPartitionRequest
from reference_impl.protocol.trace_events import (
    broker_metadata_event,
    log_deleted_event,
    metadata_offset_event,
)
from reference_impl.server import services as sv
from reference_impl.server.bugs import is_active
from reference_impl.server.config import NodeConfig
from reference_impl.server.config_describe import describe
from reference_impl.server.controller_link import ControllerLink
from reference_impl.server.entry import parse_node_argv
from reference_impl.server.fetcher import LeaderFetcher
from reference_impl.server.group_shell import GroupShell
from reference_impl.server.replica_manager import Partition, ReplicaManager, now_ms
from reference_impl.server.storage.checkpoints import (
    consume_clean_shutdown_marker,
    write_clean_shutdown_marker,
)
from reference_impl.server.tasks import cancel_all
from reference_impl.server.trace import Tracer, fail_stop, log, log_throttled
from reference_impl.server.txn_coordinator import TxnCoordinatorShell

CLUSTER_ID = "kraftcheck-cluster"


class Broker:
    """One broker process (see the module docstring)."""

    def __init__(self, config: NodeConfig, segment_bytes: int = 1 << 30) -> None:
        self.config = config
        self.node = config.name
        self.tracer = Tracer(config.trace_file, config.name)
        adv = config.advertised_listeners
        self.lifecycle = BrokerLifecycle(config.node_id, adv.host, adv.port)
        self.image = MetadataImage()
        self.manager = ReplicaManager(config, self.tracer, self._fetcher_change, segment_bytes=segment_bytes)
        # config validation requires the bootstrap controller or the voters for brokers. A request to a
        # controller that does not answer (a deposed one cut off) gives up within half a session, so the
        # broker finds the active controller before that one's fresh session timer fences it (Q15).
        self.link = ControllerLink.for_voters(config.voters, client_id=f"broker-{config.node_id}",
                                              timeout_s=max(0.5, min(10.0, config.broker_session_timeout_ms / 2000)))
        self.fetchers: dict[int, LeaderFetcher] = {}
        self.stop_event = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._ap_tasks: set[asyncio.Task] = set()
        self._next_producer_id = 0
        self._metadata_ready = asyncio.Event()
        self.groups = GroupShell(self)
        self.manager.on_marker_written = self._marker_written
        from reference_impl.server.apis.replica_log_info import ReplicaLogInfoApi
        from reference_impl.server.apis.txn import TxnApis
        from reference_impl.server.client_apis import build_server

        services = BrokerServicesImpl(self)
        self.txn = TxnCoordinatorShell(self.manager, self.image, config.node_id, self.node,
                                       self.allocate_producer_id, services.forward_to_controller, config.inject_bug)
        log_info = ReplicaLogInfoApi(self.manager, lambda topic_id: self.image.topics.get(topic_id),
                                     lambda: self.lifecycle.broker_epoch)
        self.server = build_server(config.listeners.host, config.listeners.port, broker=services,
                                   extra_handlers={**TxnApis(self.txn, self.manager).handlers(),
                                                   **log_info.handlers()},
                                   name=f"broker-{config.node_id}")

    def _marker_written(self, topic: str, partition: int, producer_id: int, commit: bool) -> None:
        if topic == OFFSETS_TOPIC:
            self.groups.on_txn_marker(partition, producer_id, commit)

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> int:
        """Start, serve until SIGTERM (or ``stop_event``), shut down cleanly; returns the exit code."""
        os.makedirs(self.config.log_dirs, exist_ok=True)
        keep = is_active(self.config.inject_bug, "skip-unclean-exclusion")
        marker = consume_clean_shutdown_marker(self.config.log_dirs, keep=keep)
        log(self.node, f"starting; clean-shutdown marker epoch {marker} ({'clean' if marker >= 0 else 'unclean'})")
        for note in self.manager.recover_logs():
            log(self.node, f"recovery: {note}")
        await self.server.start()
        log(self.node, f"listening on {self.config.listeners}")
        self.lifecycle.start(random.Random(os.urandom(16)), marker if marker >= 0 else None)
        self._drain_lifecycle()
        if not await self._register():  # B2: storage was recovered before registering
            await self._close()
            return 1
        self._tasks = [asyncio.create_task(c, name=n) for n, c in (
            ("heartbeat", self._heartbeat_loop()), ("metadata", self._metadata_loop()),
            ("isr", self._isr_loop()), ("periodic", self._periodic_loop()), ("groups", self.groups.run()),
            ("transactions", self.txn.run()))]
        for t in self._tasks:
            t.add_done_callback(fail_stop(self.node))
        await self.stop_event.wait()
        await self._controlled_shutdown()
        return 0

    async def _register(self) -> bool:
        """B1: send the registration until accepted (same incarnation on retries, C3)."""
        while not self.stop_event.is_set():
            req = self.lifecycle.registration_request()
            try:
                err, epoch = await self.link.register(req.broker_id, CLUSTER_ID, req.incarnation_id, req.host,
                                                      req.port, req.previous_broker_epoch)
            except (ConnectionError, TimeoutError, OSError) as exc:
                log_throttled(self.node, "register", f"registration: controller unreachable ({exc!r}); retrying")
                await asyncio.sleep(REGISTRATION_RETRY_MS / 1000)
                continue
            if err == Errors.NOT_CONTROLLER:  # Q15: ask the active controller (the link moved on)
                await asyncio.sleep(NOT_CONTROLLER_RETRY_MS / 1000)
                continue
            accepted = registered(self.lifecycle, error(err), epoch)
            if accepted:
                self.manager.set_broker_epoch(self.lifecycle.broker_epoch)
            self._drain_lifecycle()
            if accepted:
                log(self.node, f"registered with broker epoch {epoch}")
                return True
            # C3: refused while the previous session is still unfenced; retried until it expires.
            log_throttled(self.node, "register-refused", f"registration refused: {err.name}; retrying")
            await asyncio.sleep(REGISTRATION_RETRY_MS / 1000)
        return False

    def _drain_lifecycle(self) -> None:
        self.tracer.drain(self.lifecycle.drain_events())

    async def _controlled_shutdown(self) -> None:
        """C8/C9 then B4/K4: move leaderships away, flush, write the marker, stop."""
        log(self.node, "SIGTERM: controlled shutdown")
        begin_stop(self.lifecycle)
        self._drain_lifecycle()
        # Bounded: a controller that never confirms (gone, or no other broker can lead) must not keep a
        # SIGTERMed broker alive forever; everything is flushed either way, so the marker is still true.
        deadline = time.monotonic() + self.config.broker_session_timeout_ms / 1000
        while not self.lifecycle.should_shutdown and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        allowed = self.lifecycle.should_shutdown
        await self._close()
        epoch = stop_marker_epoch(self.lifecycle)
        if not allowed:
            log(self.node, "controller did not confirm the shutdown in time; stopping anyway")
        self._drain_lifecycle()
        if epoch >= 0:
            # K4: last step of a clean shutdown, after every log was flushed by manager.shutdown().
            write_clean_shutdown_marker(self.config.log_dirs, epoch)
        self.tracer.write(metadata_offset_event(self.config.node_id, self.image.offset, "shutdown"))
        self.tracer.emit("shutdown", clean=True, broker_epoch=epoch)
        log(self.node, f"stopped cleanly (marker epoch {epoch})")
        self.tracer.close()

    async def _close(self) -> None:
        await self.groups.close()
        stuck = await cancel_all(self._tasks + list(self._ap_tasks))
        if stuck:
            log(self.node, f"stopping without waiting for {[t.get_name() for t in stuck]}")
        for f in self.fetchers.values():
            await f.close()
        await self.txn.close()
        await self.server.close()
        self.manager.shutdown()
        await self.link.close()

    # ------------------------------------------------------------------ loops
    async def _heartbeat_loop(self) -> None:
        """B2/C5/C8: heartbeats; fast while starting or shutting down, else every heartbeat interval."""
        while True:
            hb = self.lifecycle.build_heartbeat(self.image.offset)
            if hb is not None:
                try:
                    reply = await self.link.heartbeat(hb.broker_id, hb.broker_epoch, hb.metadata_offset,
                                                      hb.want_fence, hb.want_shutdown)
                    self.lifecycle.handle_heartbeat_response(error(reply.error), reply.is_fenced,
                                                             reply.should_shutdown)
                    self._drain_lifecycle()
                    if reply.error == Errors.NOT_CONTROLLER:  # Q15: again soon, at the active controller
                        await asyncio.sleep(NOT_CONTROLLER_RETRY_MS / 1000)
                        continue
                    if self.lifecycle.state == STARTING:  # the controller replaced our registration
                        log(self.node, f"heartbeat answered {Errors(reply.error).name} for broker epoch "
                                       f"{hb.broker_epoch}: registering again")
                        await self._register()
                        continue
                except (ConnectionError, TimeoutError, OSError) as exc:
                    log_throttled(self.node, "heartbeat", f"heartbeat failed: {exc!r}")
            await asyncio.sleep(heartbeat_delay_ms(self.lifecycle, self.config.broker_heartbeat_interval_ms) / 1000)

    async def _metadata_loop(self) -> None:
        """Pull the metadata log and apply it one batch at a time (T-rules on materialized state).

        B2: until the image reaches this broker's own registration, pulled batches are held (``catch_up``)
        and then applied as one batch, however many pulls the catch-up took, so a restarted broker never
        takes a role from an old state of the log (a leadership the controller ended while it was down).
        """
        pull = MetadataPull(self.image, self.lifecycle.broker_epoch)
        while True:
            try:
                chunk = await self.link.fetch_metadata(self.config.node_id, self.lifecycle.broker_epoch,
                                                       pull.next_offset, max_wait_ms=METADATA_MAX_WAIT_MS,
                                                       max_records=self.config.metadata_fetch_max_records)
            except (ConnectionError, TimeoutError, OSError) as exc:
                log_throttled(self.node, "metadata", f"metadata fetch failed: {exc!r}")
                await asyncio.sleep(METADATA_RETRY_MS / 1000)
                continue
            if chunk.error == Errors.NOT_CONTROLLER:  # Q15: the answer named the leader (or the next voter)
                await asyncio.sleep(NOT_CONTROLLER_RETRY_MS / 1000)
                continue
            if chunk.error != Errors.NONE:
                log(self.node, f"metadata fetch error {chunk.error.name}")
                await asyncio.sleep(METADATA_RETRY_MS / 1000)
                continue
            entries = [[(base + i, record_from_dict(r)) for i, r in enumerate(recs)] for base, recs in chunk.batches]
            was_done = pull.caught_up
            for batch in pull.receive(entries):
                self.apply_metadata_batch(batch)
            if pull.caught_up and not was_done:
                log(self.node, f"initial metadata catch-up done at offset {self.image.offset} "
                               f"(registration {self.lifecycle.broker_epoch})")

    def apply_metadata_batch(self, entries: list) -> None:
        """Apply one metadata batch and drive each affected partition replica (T1-T7)."""
        delta = self.image.apply_batch(entries)
        for resource_type, resource_name, name in delta.configs:
            if resource_type == "topic" and name == "min.insync.replicas":
                value = self.image.config("topic", resource_name, name)
                self.manager.set_topic_min_isr(resource_name, int(value) if value is not None else None)
        for t in delta.transitions_for(self.config.node_id):
            topic = self.image.topics.get(t.topic_id, t.topic_id)
            self.manager.apply_partition_state(topic, t.topic_id, t.partition_id, t.state)
        if self.manager.recovered_logs:
            self._delete_stray_logs()
        self.groups.on_metadata()  # coordinator of the offsets partitions this broker now leads
        for b in delta.brokers:
            reg = self.image.brokers.get(b)
            if reg is not None:
                self.tracer.write(broker_metadata_event(b, reg.broker_epoch, reg.fenced, reg.in_controlled_shutdown,
                                                        self.image.offset))

    def _delete_stray_logs(self) -> None:
        """Logs recovered at start for partitions this broker no longer hosts (``stray_logs``) are deleted."""
        found = [(name, *_split_dir_name(name)) for name in self.manager.recovered_logs]
        for name in stray_logs(found, self.image, self.config.node_id, self.lifecycle.broker_epoch):
            topic, part = _split_dir_name(name)
            self.manager.recovered_logs.pop(name).delete()
            log(self.node, f"deleted stray log {name}: not a replica in the current metadata")
            self.tracer.write(log_deleted_event(topic, part, self.config.node_id, reason="stray"))

    async def _isr_loop(self) -> None:
        """L12-L16: ask each leader replica for an ISR change and send it to the controller."""
        while True:
            await asyncio.sleep(ISR_INTERVAL_MS / 1000)
            for part, req in self.isr_round(now_ms()):
                task = asyncio.create_task(self._send_alter_partition(part, req))
                task.add_done_callback(fail_stop(self.node))
                self._ap_tasks.add(task)
                task.add_done_callback(self._ap_tasks.discard)

    def isr_round(self, now: int) -> list[tuple[Partition, AlterPartitionRequest]]:
        """One pass of the ISR loop (``protocol.isr_loop.isr_round``): the AlterPartition requests due now."""
        due = isr_round(((part, part.replica) for part in list(self.manager.partitions.values())), self.image, now)
        for part, _ in due:
            self.manager.after_fetch_response(part)
        return due

    async def _send_alter_partition(self, part: Partition, req: AlterPartitionRequest) -> None:
        try:
            resp = await self.link.alter_partition(req)
        except (ConnectionError, TimeoutError, OSError) as exc:
            log_throttled(self.node, "alter-partition", f"AlterPartition to controller "
                                                        f"{self.link.discovery.target()} failed: {exc!r}")
            alter_partition_unanswered(part.replica, req, repr(exc), now_ms())
        else:
            part.replica.handle_alter_partition_response(req, resp, now_ms())
        self.manager.after_fetch_response(part)

    async def _periodic_loop(self) -> None:
        last_checkpoint = time.monotonic()
        while True:
            await asyncio.sleep(PERIODIC_INTERVAL_MS / 1000)
            checkpoint = time.monotonic() - last_checkpoint >= HWM_CHECKPOINT_INTERVAL_MS / 1000
            if checkpoint:
                last_checkpoint = time.monotonic()
            self.manager.periodic(now_ms(), checkpoint)

    # ------------------------------------------------------------------ fetchers
    def _fetcher_change(self, part: Partition, leader: int | None) -> None:
        for f in self.fetchers.values():
            f.remove(part)
        if leader is not None:
            fetcher = self.fetchers.get(leader)
            if fetcher is None:
                fetcher = self.fetchers[leader] = LeaderFetcher(self.manager, leader, self._endpoint, self.node)
            fetcher.add(part)

    def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        reg = self.image.brokers.get(broker_id)
        return (reg.host, reg.port) if reg is not None and reg.port else None

    def allocate_producer_id(self) -> int:
        """A producer id unique across brokers and restarts: broker epochs are unique metadata offsets."""
        self._next_producer_id += 1
        return (self.lifecycle.broker_epoch + 1) * (1 << 24) + self._next_producer_id


def _split_dir_name(name: str) -> tuple[str, int]:
    """``<topic>-<partition>`` (a recovered log's directory name) as (topic, partition)."""
    topic, _, part = name.rpartition("-")
    return topic, int(part)


class BrokerServicesImpl(sv.BrokerServices):
    """``services.BrokerServices`` backed by a ``Broker``."""

    def __init__(self, broker: Broker) -> None:
        self.b = broker
        self.groups = broker.groups  # the group coordinator (``apis.groups``)

    def _known(self, topic: str) -> bool:
        return self.b.image.topic_id(topic) is not None

    async def metadata(self, topics: list[str] | None, allow_auto_topic_creation: bool) -> sv.ClusterMetadata:
        """Unfenced registered brokers; controller_id = the lowest unfenced broker (brokers forward admin
        requests to the controller, as KRaft brokers do)."""
        image = self.b.image
        brokers = tuple(sv.BrokerEndpoint(r.broker_id, r.host, r.port) for r in sorted(
            image.brokers.values(), key=lambda r: r.broker_id) if not r.fenced)
        live = {r.broker_id for r in image.brokers.values() if not r.fenced}
        names = topics if topics is not None else sorted(image.topics.values())
        out = []
        for name in names:
            tid = image.topic_id(name)
            if tid is None:
                out.append(sv.TopicMetadata(name, error=Errors.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            parts = tuple(sv.PartitionMetadata(
                p, s.leader, s.leader_epoch, tuple(s.replicas), tuple(s.isr),
                tuple(r for r in s.replicas if r not in live),
                Errors.NONE if s.leader >= 0 else Errors.LEADER_NOT_AVAILABLE)
                for (t, p), s in sorted(image.partitions.items()) if t == tid)
            out.append(sv.TopicMetadata(name, parts, tid, is_internal=name == OFFSETS_TOPIC))
        # Every broker forwards admin requests, so any live one can be named; all brokers name the same one
        # (the lowest unfenced id) so an admin client's view does not flip with whichever broker it asked.
        controller_id = min(live) if live else self.b.config.node_id
        return sv.ClusterMetadata(CLUSTER_ID, controller_id, brokers, tuple(out))

    @property
    def transactions(self) -> TxnCoordinatorShell:
        """The broker's transaction coordinators (FindCoordinator key type 1, ``apis.txn``)."""
        return self.b.txn

    async def produce(self, topic: str, partition: int, records: bytes, acks: int, timeout_ms: int,
                      transactional_id: str | None = None) -> sv.ProduceResult:
        """L1: only a RUNNING broker (or one still leading during controlled shutdown) appends. A
        transactional produce is fenced by the partition's producer state (epochs raised by markers), and
        a batch that would open a transaction is verified with its coordinator first (KIP-890 part 1)."""
        if not accepts_produce(self.b.lifecycle):
            return sv.ProduceResult(Errors.NOT_LEADER_OR_FOLLOWER)
        return await self.b.manager.produce(topic, partition, records, acks, timeout_ms, self._known(topic),
                                            transactional_id=transactional_id, verifier=self.b.txn.verify)

    async def fetch(self, spec: sv.FetchSpec) -> sv.FetchResult:
        """Follower or consumer fetch with long polling."""
        return await self.b.manager.fetch(spec, self._known)

    async def list_offsets(self, replica_id: int, isolation_level: int,
                           partitions: list[sv.ListOffsetsPartitionSpec]) -> list[sv.ListOffsetsResult]:
        """ListOffsets per partition (L18)."""
        return [self.b.manager.list_offsets(q, self._known(q.topic), isolation_level) for q in partitions]

    async def offset_for_leader_epoch(self, replica_id: int, queries: list[sv.EpochQuery]) -> list[sv.EpochEndOffset]:
        """OffsetForLeaderEpoch per partition (L8, L11)."""
        return [self.b.manager.offset_for_leader_epoch(q, self._known(q.topic)) for q in queries]

    async def init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                               producer_id: int = -1, producer_epoch: int = -1) -> sv.ProducerIdResult:
        """Idempotent producers: a fresh id (an epoch bump, KIP-360, keeps the id); transactional ones from
        the id's transaction coordinator (``txn_coordinator``)."""
        if self.b.lifecycle.broker_epoch < 0:
            return sv.ProducerIdResult(Errors.COORDINATOR_NOT_AVAILABLE)
        if transactional_id is not None:
            code, pid, epoch = await self.b.txn.init_producer_id(transactional_id, transaction_timeout_ms,
                                                                 producer_id, producer_epoch)
            return sv.ProducerIdResult(code, pid, epoch)
        if producer_id >= 0 and producer_epoch >= 0:
            return sv.ProducerIdResult(Errors.NONE, producer_id, producer_epoch + 1)
        return sv.ProducerIdResult(Errors.NONE, self.b.allocate_producer_id(), 0)

    async def describe_configs(self, resources: list[tuple[int, str, list[str] | None]]) -> list[sv.ConfigResourceResult]:
        """DescribeConfigs answered here, as Kafka brokers do: this broker's own settings for its BROKER
        resource, the metadata image's config records over its settings for a TOPIC (``config_describe``)."""
        image = self.b.image
        cluster = image.configs.get(("broker", ""), {})
        own = image.configs.get(("broker", str(self.b.config.node_id)), {})
        return [describe(self.b.config, rt, name, keys, topic_exists=image.topic_id(name) is not None,
                         topic_configs=image.configs.get(("topic", name), {}), cluster_configs=cluster,
                         broker_configs=own)
                for rt, name, keys in resources]

    async def forward_to_controller(self, api_key: int, api_version: int, request: bytes) -> bytes:
        """Relay an admin request to the controller (as KRaft brokers forward)."""
        return await self.b.link.forward(api_key, api_version, request)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--config FILE``; exit 2 on an invalid config, 0 after a clean shutdown."""
    config, _ = parse_node_argv(argv, "broker")
    return asyncio.run(_amain(config))


async def _amain(config: NodeConfig) -> int:
    broker = Broker(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, broker.stop_event.set)
    return await broker.run()


if __name__ == "__main__":
    raise SystemExit(main())
