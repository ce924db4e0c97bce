"""The controller process: ``python -m reference_impl.server.controller --config FILE``.

A thin asyncio shell around the controller core (``reference_impl.protocol.controller``). The core computes
every change as records plus a response without touching its state; this process makes the change durable
and only then lets it take effect (C1):

    async with the change lock:             # C1: one change at a time
        result = core.handler(...)          # compute (records, response), no mutation
        offsets = metadata_log.append(...)  # JSONL, fsynced before anything else happens
        core.replay(record, offset) ...     # the only mutator; offsets become broker epochs (C4)
        wake brokers long-polling the log, write trace events
    answer the request

At start the whole metadata log is replayed through the same ``replay``. Brokers reach the controller with
Kafka framing: BrokerRegistration (62), BrokerHeartbeat (63), AlterPartition (56) and kraftcheck's
MetadataLogFetch (10000, a long-polling pull of whole batches). Admin APIs (CreateTopics,
AlterPartitionReassignments 0-1, ListPartitionReassignments, ElectLeaders, DescribeConfigs, AlterConfigs
0-2, IncrementalAlterConfigs 0-1) are served by the wire layer's handlers with ``AdminServices``
implemented here; brokers forward clients' admin requests.
Timers: session timeouts (C6), KIP-435 incremental steps and pending elections are polled every 100 ms.
Dynamic configuration: (Incremental)AlterConfigs commit ``reassignment.mode``, the KIP-435 parallelism
settings and the election / min-ISR keys as ConfigRecords (``config_alter`` says which keys, on which
resources); a change affects only reassignments and steps planned after it (seed 002). SIGHUP re-reads the
config file and commits changed dynamic keys the same way, as cluster-wide ConfigRecords.

Deliberate bugs acting here: ``metadata-no-fsync`` (C1) and ``unclean-without-opt-in`` (C12).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Callable
from typing import Any

from reference_impl.protocol.controller_loop import TIMER_INTERVAL_MS, periodic_changes, replay_committed
from reference_impl.protocol.errors import Errors
from reference_impl.server import controller_core as core_adapter
from reference_impl.server.bugs import is_active
from reference_impl.server.config import NodeConfig
from reference_impl.server.entry import parse_node_argv
from reference_impl.server.metadata_log import MetadataLog
from reference_impl.server.tasks import cancel_all
from reference_impl.server.trace import Tracer, fail_stop, log
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.codec import DecodedRequest

TIMER_INTERVAL_S = TIMER_INTERVAL_MS / 1000


def now_ms() -> int:
    """Protocol time: monotonic ms (the wall clock may be skewed by the clock nemesis)."""
    return time.monotonic_ns() // 1_000_000


class Controller:
    """The controller process (see the module docstring)."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.node = config.name
        self.tracer = Tracer(config.trace_file, config.name)
        fsync = not is_active(config.inject_bug, "metadata-no-fsync")
        self.mlog = MetadataLog(config.log_dirs, fsync=fsync)
        for note in self.mlog.recovery_notes:
            log(self.node, f"recovery: {note}")
            self.tracer.emit("recovered", note=note)
        unclean = config.unclean_leader_election_enable or is_active(config.inject_bug, "unclean-without-opt-in")
        self.core = core_adapter.CoreAdapter(config, unclean_election=unclean)
        for record, offset in self.mlog.replay_items():
            self.core.replay(record, offset)
        self.core.drain_events()  # replayed history was traced when it happened
        log(self.node, f"replayed {self.mlog.end_offset} metadata records")
        self._lock = asyncio.Lock()
        self._appended: asyncio.Future | None = None
        self.stop_event = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        from reference_impl.server.client_apis import build_server

        self.server = build_server(config.listeners.host, config.listeners.port, admin=AdminServicesImpl(self),
                                   extra_handlers={62: self.handle_registration, 63: self.handle_heartbeat,
                                                   56: self.handle_alter_partition,
                                                   10000: self.handle_metadata_fetch},
                                   name=f"controller-{config.node_id}")

    # ------------------------------------------------------------------ the one way state changes (C1)
    async def change(self, compute: Callable[[], tuple[list[Any], Any]]) -> Any:
        """Compute (records, response) under the lock, persist (fsync) and replay the records, return the
        response."""
        async with self._lock:
            records, response = compute()
            self.commit(records)
            return response

    def commit(self, records: list[Any]) -> None:
        """C1: durable first, then replay; wakes metadata pulls. Call only under the change lock."""
        if not records:
            return
        offsets = self.mlog.append(records)
        self.tracer.drain(replay_committed(self.core.core, records, offsets))
        self.tracer.drain(self.core.drain_events())
        if self._appended is not None and not self._appended.done():
            self._appended.set_result(None)
        self._appended = None

    def _append_future(self) -> asyncio.Future:
        if self._appended is None:
            self._appended = asyncio.get_running_loop().create_future()
        return self._appended

    # ------------------------------------------------------------------ inter-node handlers
    async def handle_registration(self, request: DecodedRequest):
        """BrokerRegistration (C3, C4, K4)."""
        body = request.body
        listener = body.listeners[0] if body.listeners else None
        prev = getattr(body, "previous_broker_epoch", -1)
        err, epoch = await self.change(lambda: self.core.register_broker(
            body.broker_id, str(body.incarnation_id), listener.host if listener else "",
            listener.port if listener else 0, prev if prev is not None else -1, now_ms()))
        log(self.node, f"registration of broker {body.broker_id}: {err.name} epoch {epoch}")
        return m.BrokerRegistrationResponse(throttle_time_ms=0, error_code=int(err), broker_epoch=epoch)

    async def handle_heartbeat(self, request: DecodedRequest):
        """BrokerHeartbeat (C5, C6 session, C8/C9)."""
        b = request.body
        reply = await self.change(lambda: self.core.heartbeat(
            b.broker_id, b.broker_epoch, b.want_fence, b.want_shut_down, b.current_metadata_offset, now_ms()))
        return m.BrokerHeartbeatResponse(throttle_time_ms=0, error_code=int(reply.error),
                                         is_caught_up=reply.is_caught_up, is_fenced=reply.is_fenced,
                                         should_shut_down=reply.should_shutdown)

    async def handle_alter_partition(self, request: DecodedRequest):
        """AlterPartition v0-3 (C13-C15, C19, K2): v0-1 name topics, v2+ give ids (KIP-841); v3 carries
        broker epochs (KIP-903); errors come in the form the request's version knows."""
        b = request.body
        version = request.api_version
        stale = self.core.stale_broker_epoch(b.broker_id, b.broker_epoch)
        if stale != Errors.NONE:
            # As Kafka: a stale sender fails the whole request (top-level error, no topics).
            self.tracer.emit("alter_partition_rejected", broker=b.broker_id, broker_epoch=b.broker_epoch,
                             error=Errors(stale).name, message="stale sender broker epoch", source="controller")
            return m.AlterPartitionResponse(throttle_time_ms=0, error_code=int(stale), topics=[])
        topics_out = []
        for topic in b.topics:
            parts_out = []
            name_or_id = topic.topic_name if version < 2 else str(topic.topic_id)
            topic_name = topic.topic_name if version < 2 else self.core.topic_name(name_or_id)
            for p in topic.partitions:
                if version >= 3:
                    members = [(x.broker_id, x.broker_epoch) for x in p.new_isr_with_epochs]
                else:
                    members = [(x, -1) for x in (p.new_isr or [])]
                r = await self.change(lambda p=p, members=members, t=name_or_id: self.core.alter_partition(
                    b.broker_id, b.broker_epoch, t, p.partition_index, p.leader_epoch, p.partition_epoch,
                    members, "RECOVERED" if p.leader_recovery_state == 0 else "RECOVERING", version))
                if r.error != Errors.NONE:
                    # Refusals leave no metadata record; the trace is where a reader sees them (C13, C14).
                    self.tracer.emit("alter_partition_rejected", topic=topic_name, partition=p.partition_index, broker=b.broker_id, broker_epoch=b.broker_epoch,
                                     leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                                     proposed=[[x, e] for x, e in members], error=Errors(r.error).name,
                                     message=r.error_message, source="controller")
                cls = m.AlterPartitionResponse.TopicData.PartitionData
                parts_out.append(cls(partition_index=p.partition_index, error_code=int(r.error),
                                     leader_id=r.leader_id, leader_epoch=r.leader_epoch, isr=list(r.isr),
                                     leader_recovery_state=r.leader_recovery_state,
                                     partition_epoch=r.partition_epoch))
            topics_out.append(m.AlterPartitionResponse.TopicData(topic_name=topic.topic_name,
                                                                 topic_id=topic.topic_id, partitions=parts_out))
        return m.AlterPartitionResponse(throttle_time_ms=0, error_code=0, topics=topics_out)

    async def handle_metadata_fetch(self, request: DecodedRequest):
        """MetadataLogFetch: whole batches from ``fetch_offset``; long-polls ``max_wait_ms`` when caught up."""
        b = request.body
        deadline = time.monotonic() + max(0, b.max_wait_ms) / 1000
        while b.fetch_offset >= self.mlog.end_offset and time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._append_future()), deadline - time.monotonic())
        try:
            batches = self.mlog.read_from(b.fetch_offset, max(1, b.max_records))
        except ValueError as exc:
            log(self.node, f"metadata fetch from broker {b.broker_id}: {exc}")
            return m.MetadataLogFetchResponse(throttle_time_ms=0, error_code=int(Errors.OFFSET_OUT_OF_RANGE),
                                              high_watermark=self.mlog.end_offset, records=[])
        recs = [m.MetadataLogFetchResponse.MetadataLogRecord(offset=base, json=json.dumps(items))
                for base, items in batches]
        return m.MetadataLogFetchResponse(throttle_time_ms=0, error_code=0, high_watermark=self.mlog.end_offset,
                                          records=recs)

    # ------------------------------------------------------------------ dynamic configuration (KIP-435)
    DYNAMIC_KEYS = ("reassignment.mode", "reassignment.parallel.replica.count",
                    "reassignment.parallel.partition.count", "reassignment.parallel.leader.movements")

    async def reload_dynamic_config(self, path: str) -> list[tuple[str, str]]:
        """SIGHUP: re-read the config file and commit changed ``reassignment.mode`` / KIP-435 parallelism
        settings as cluster-level ConfigRecords, the records AlterConfigs on resource "" commits (seed 002:
        dynamic, cluster-wide; a change affects only steps planned after it). Other keys need a restart. An invalid file is logged and ignored. Returns the changes committed."""
        from reference_impl.server.config import ConfigError, load_config

        try:
            fresh = load_config(path)
        except ConfigError as exc:
            log(self.node, f"SIGHUP: config not reloaded: {exc}")
            return []
        changed = []
        for key in self.DYNAMIC_KEYS:
            value = str(getattr(fresh, key.replace(".", "_")))
            current = self.core.core.configs.get(("broker", ""), {}).get(
                key, str(getattr(self.config, key.replace(".", "_"))))
            if value != current:
                err = await self.change(lambda key=key, value=value: _as_change(
                    self.core.core.set_config("broker", "", key, value)))
                if err.ok:
                    changed.append((key, value))
                    log(self.node, f"SIGHUP: {key} = {value} (applies from the next reassignment step)")
        return changed

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> int:
        """Serve until SIGTERM."""
        await self.server.start()
        log(self.node, f"controller listening on {self.config.listeners}")
        self._tasks = [asyncio.create_task(self._timer_loop(), name="timers")]
        self._tasks[0].add_done_callback(fail_stop(self.node))
        await self.stop_event.wait()
        await cancel_all(self._tasks)
        await self.server.close()
        self.mlog.close()
        self.tracer.emit("shutdown", clean=True)
        self.tracer.close()
        log(self.node, "controller stopped")
        return 0

    async def _timer_loop(self) -> None:
        """Session timeouts (C6), reassignment steps (KIP-435), pending elections: polled."""
        while True:
            await asyncio.sleep(TIMER_INTERVAL_S)
            try:
                await self.periodic_round(now_ms())
            except (ConnectionError, OSError) as exc:  # e.g. the metadata disk failing: logged, retried
                log(self.node, f"periodic work failed: {exc!r}")

    async def periodic_round(self, now: int) -> None:
        """One timer round: each due change computed and committed in turn (C1)."""
        changes = periodic_changes(self.core.core, now)
        while True:
            async with self._lock:
                change = next(changes, None)
                if change is None:
                    return
                self.commit(change.result.records)
            if change.kind == "session-timeout":
                log(self.node, f"broker {change.result.response}: session timed out, fenced")


def _as_change(result: Any) -> tuple[list[Any], Any]:
    """A core ``ControllerResult`` as the ``(records, response)`` pair ``Controller.change`` expects."""
    return result.records, result.response


class AdminServicesImpl:
    """``services.AdminServices`` for the controller process: each call is one committed change (C1)."""

    def __init__(self, controller: Controller) -> None:
        self.c = controller

    async def create_topics(self, topics, timeout_ms, validate_only):
        """CreateTopics with default partitions / RF from the config."""
        out = []
        for t in topics:
            out.append(await self.c.change(lambda t=t: self.c.core.create_topic(t, validate_only)))
        return out

    async def describe_configs(self, resources):
        """DescribeConfigs from the controller's configuration and config records."""
        return [self.c.core.describe_config(rt, name, keys) for rt, name, keys in resources]

    async def alter_configs(self, resources, incremental, validate_only):
        """AlterConfigs / IncrementalAlterConfigs: dynamic keys committed as ConfigRecords (one change)."""
        results = await self.c.change(lambda: self.c.core.alter_configs(resources, incremental, validate_only))
        for res, r in zip(resources, results, strict=True):
            outcome = "validated" if validate_only else "committed"
            log(self.c.node, f"alter configs {res.resource_type}/{res.resource_name!r} {list(res.configs)}: "
                             f"{outcome if r.error == Errors.NONE else Errors(r.error).name}")
        return results

    async def elect_leaders(self, election_type, partitions, timeout_ms):
        """Preferred (0) or unclean (1) elections (C10, C12)."""
        return await self.c.change(lambda: self.c.core.elect_leaders(election_type, partitions))

    async def alter_partition_reassignments(self, reassignments, allow_replication_factor_change, timeout_ms):
        """Start or cancel reassignments (C16-C21, KIP-860, KIP-435 planning)."""
        return await self.c.change(lambda: self.c.core.alter_partition_reassignments(
            reassignments, allow_replication_factor_change))

    async def list_partition_reassignments(self, partitions):
        """Ongoing reassignments (adding/removing non-empty)."""
        return self.c.core.list_partition_reassignments(partitions)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--config FILE``; exit 2 on an invalid config."""
    config, path = parse_node_argv(argv, "controller")
    return asyncio.run(_amain(config, path))


async def _amain(config: NodeConfig, path: str) -> int:
    controller = Controller(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, controller.stop_event.set)
    loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(controller.reload_dynamic_config(path)))
    return await controller.run()


if __name__ == "__main__":
    raise SystemExit(main())
