"""The controller process: ``python -m reference_impl.server.controller --config FILE``.

One voter of the metadata quorum (``controller.quorum.voters``; without it, a quorum of one). A thin
asyncio shell around ``protocol.quorum_controller.QuorumController``: the Raft node replicates the
metadata log between the voters (``quorum.QuorumShell`` gives it timers and connections), every voter
replays committed records only, and the voter whose node leads is the **active controller** once its
epoch-start record is committed. The core computes every change as records plus a response without
touching its state; this process lets it take effect only once committed (C1, Q14):

    async with the change lock:             # C1: one change at a time
        ticket = quorum.submit(compute)     # compute (records, response) on the committed state, append
        await the quorum's commit           # a majority has the batch (fsynced, Q9), HWM past it
        (replayed on every voter, traced)   # the only mutator; offsets become broker epochs (C4)
    answer the request                      # or NOT_CONTROLLER: not active, or leadership lost first

Brokers reach the active controller with Kafka framing: BrokerRegistration (62), BrokerHeartbeat (63),
AlterPartition (56) and kraftcheck's MetadataLogFetch (10000, a long-polling pull of whole committed
batches; v1 answers name the quorum leader). Any other voter answers them NOT_CONTROLLER (41), so a
broker moves to the active one (``broker_session.ControllerDiscovery``). The voters talk Vote (52),
BeginQuorumEpoch (53), EndQuorumEpoch (54) and Fetch (1) among themselves; DescribeQuorum (55) tells
operators and the harness who leads. Admin APIs (CreateTopics, AlterPartitionReassignments 0-1,
ListPartitionReassignments, ElectLeaders, DescribeConfigs, AlterConfigs 0-2, IncrementalAlterConfigs
0-1) are served by the wire layer's handlers with ``AdminServices`` implemented here (NOT_CONTROLLER in
every item on a voter that is not active); brokers forward clients' admin requests.
Timers on the active controller: session timeouts (C6), KIP-435 incremental steps and pending elections
are polled every 100 ms; every second, K7's unclean recovery asks brokers for their log ends
(GetReplicaLogInfo) about partitions with an empty ISR and ELR (``unclean_recovery``). Dynamic configuration: (Incremental)AlterConfigs commit ``reassignment.mode``, the
KIP-435 parallelism settings and the election / min-ISR keys as ConfigRecords (``config_alter`` says which
keys, on which resources); a change affects only reassignments and steps planned after it (seed 002).
SIGHUP re-reads the config file and commits changed dynamic keys the same way, as cluster-wide
ConfigRecords. SIGTERM: a leader resigns (EndQuorumEpoch) before it stops.

Storage in ``log.dirs``: ``metadata.log`` (the quorum log, ``metadata_log``) and ``quorum-state`` (the
election state, ``election_store``), both fsynced before they count. Deliberate bugs acting here:
``metadata-no-fsync`` (C1, Q1, Q9: neither is fsynced) and ``unclean-without-opt-in`` (C12).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

from reference_impl.protocol.controller import ControllerResult
from reference_impl.protocol.controller_loop import TIMER_INTERVAL_MS, periodic_changes
from reference_impl.protocol.errors import Errors, KafkaError
from reference_impl.protocol.quorum_controller import LOST, QuorumController
from reference_impl.protocol.records import to_dict
from reference_impl.server import controller_core as core_adapter
from reference_impl.server.bugs import is_active
from reference_impl.server.config import NodeConfig
from reference_impl.server.election_store import FileElectionStore
from reference_impl.server.entry import parse_node_argv
from reference_impl.server.metadata_log import MetadataLog, QuorumLog
from reference_impl.server.quorum import RAFT_API_KEYS, QuorumShell, now_ms, raft_config
from reference_impl.server.tasks import cancel_all
from reference_impl.server.trace import Tracer, fail_stop, log
from reference_impl.server.unclean_recovery import ROUND_INTERVAL_S as RECOVERY_INTERVAL_S
from reference_impl.server.unclean_recovery import UncleanRecoveryDriver
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.server import RequestFailed

TIMER_INTERVAL_S = TIMER_INTERVAL_MS / 1000


class NotController(RequestFailed):
    """This voter is not the active controller (or stopped being it before the change committed)."""

    def __init__(self, leader: int | None) -> None:
        super().__init__(int(Errors.NOT_CONTROLLER), f"not the active controller (leader: {leader})")
        self.leader = leader


class Controller:
    """The controller process (see the module docstring)."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.node = config.name
        self.tracer = Tracer(config.trace_file, config.name)
        fsync = not is_active(config.inject_bug, "metadata-no-fsync")
        self.mlog = MetadataLog(config.log_dirs, fsync=fsync)
        store = FileElectionStore(config.log_dirs, fsync=fsync)
        for note in self.mlog.recovery_notes:
            log(self.node, f"recovery: {note}")
            self.tracer.emit("recovered", note=note)
        unclean = config.unclean_leader_election_enable or is_active(config.inject_bug, "unclean-without-opt-in")
        voters = sorted(config.voters)
        self.qc = QuorumController(config.node_id, voters, QuorumLog(self.mlog), store, raft_config(config),
                                   core_adapter.controller_config(config, unclean), random.Random(os.urandom(16)),
                                   now_ms())
        for note in store.notes:
            log(self.node, f"recovery: {note}")
        # A restart replays what is committed already (a quorum of one: its whole log): traced when it first
        # happened, so only the quorum's own events of this start go to the trace.
        self.tracer.drain([ev for ev in self.qc.drain_events() if ev.get("source") != "controller"])
        self.core = core_adapter.CoreAdapter(config, unclean_election=unclean, core=self.qc.controller)
        self.quorum = QuorumShell(config, self.qc, self.tracer)
        log(self.node, f"quorum of {voters}: epoch {self.qc.epoch}, {self.mlog.end_offset} metadata records in "
                       f"the log, {self.qc.applied} applied")
        self._lock = asyncio.Lock()
        self.recovery = UncleanRecoveryDriver(lambda: self.qc.controller, self.change_result, self.tracer,
                                              self.node)
        self.stop_event = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        from reference_impl.server.client_apis import build_server

        handlers = {ApiKey.BROKER_REGISTRATION: self.handle_registration,
                    ApiKey.BROKER_HEARTBEAT: self.handle_heartbeat,
                    ApiKey.ALTER_PARTITION: self.handle_alter_partition,
                    ApiKey.METADATA_LOG_FETCH: self.handle_metadata_fetch,
                    ApiKey.DESCRIBE_QUORUM: self.quorum.handle_describe_quorum}
        handlers.update({key: self.quorum.handle for key in RAFT_API_KEYS})
        self.server = build_server(config.listeners.host, config.listeners.port, admin=AdminServicesImpl(self),
                                   extra_handlers=handlers, name=f"controller-{config.node_id}")

    # ------------------------------------------------------------------ the one way state changes (C1)
    async def change(self, compute: Callable[[], tuple[list[Any], Any]]) -> Any:
        """Compute (records, response) under the lock on the committed state, have the quorum commit the
        records, return the response; ``NotController`` unless this voter is the active controller until
        the commit (Q14)."""
        return await self.change_result(lambda: ControllerResult(*compute()))

    async def change_result(self, compute: Callable[[], ControllerResult]) -> Any:
        """``change`` for a computation that returns the core's ``ControllerResult`` itself."""
        # A task of its own, so a requester that goes away (its connection closed, its wait cancelled) does
        # not release the lock while the change is still in flight: C1 holds until it is settled.
        task = asyncio.ensure_future(self._locked_commit(compute))
        return await asyncio.shield(task)

    async def _locked_commit(self, compute: Callable[[], ControllerResult]) -> Any:
        async with self._lock:
            return await self._commit(compute)

    def commit(self, records: list[Any]) -> None:
        """Append ``records`` as one change without waiting (a quorum of one commits them at once: tests and
        tools that write records directly). ``NotController`` unless active with nothing in flight."""
        if not records:
            return
        ticket = self.qc.submit(lambda _core: ControllerResult(list(records), None), now_ms())
        if isinstance(ticket, KafkaError):
            raise NotController(self.qc.leader_id)
        self.qc.apply_committed(now_ms())
        self.tracer.drain(self.qc.drain_events())
        self.qc.outcome(ticket)  # releases it once committed; a quorum's commit is picked up by ``change``

    async def _commit(self, compute: Callable[[], ControllerResult]) -> Any:
        """C1 under the change lock: submit, wait for the quorum's commit, answer."""
        ticket = self.qc.submit(lambda _core: compute(), now_ms())
        if isinstance(ticket, KafkaError):
            raise NotController(self.qc.leader_id)
        self.quorum.after()
        state, answer = await self.quorum.outcome(ticket)
        if state == LOST:
            raise NotController(self.qc.leader_id)
        return answer

    # ------------------------------------------------------------------ inter-node handlers
    async def handle_registration(self, request: DecodedRequest):
        """BrokerRegistration (C3, C4, K4)."""
        body = request.body
        listener = body.listeners[0] if body.listeners else None
        prev = getattr(body, "previous_broker_epoch", -1)
        try:
            err, epoch = await self.change(lambda: self.core.register_broker(
                body.broker_id, str(body.incarnation_id), listener.host if listener else "",
                listener.port if listener else 0, prev if prev is not None else -1, now_ms()))
        except NotController:
            return m.BrokerRegistrationResponse(throttle_time_ms=0, error_code=int(Errors.NOT_CONTROLLER),
                                                broker_epoch=-1)
        log(self.node, f"registration of broker {body.broker_id}: {err.name} epoch {epoch}")
        return m.BrokerRegistrationResponse(throttle_time_ms=0, error_code=int(err), broker_epoch=epoch)

    async def handle_heartbeat(self, request: DecodedRequest):
        """BrokerHeartbeat (C5, C6 session, C8/C9)."""
        b = request.body
        try:
            reply = await self.change(lambda: self.core.heartbeat(
                b.broker_id, b.broker_epoch, b.want_fence, b.want_shut_down, b.current_metadata_offset, now_ms()))
        except NotController:
            return m.BrokerHeartbeatResponse(throttle_time_ms=0, error_code=int(Errors.NOT_CONTROLLER),
                                             is_caught_up=False, is_fenced=True, should_shut_down=False)
        return m.BrokerHeartbeatResponse(throttle_time_ms=0, error_code=int(reply.error),
                                         is_caught_up=reply.is_caught_up, is_fenced=reply.is_fenced,
                                         should_shut_down=reply.should_shutdown)

    async def handle_alter_partition(self, request: DecodedRequest):
        """AlterPartition v0-3 (C13-C15, C19, K2): v0-1 name topics, v2+ give ids (KIP-841); v3 carries
        broker epochs (KIP-903); errors come in the form the request's version knows."""
        b = request.body
        version = request.api_version
        if not self.qc.active:
            return m.AlterPartitionResponse(throttle_time_ms=0, error_code=int(Errors.NOT_CONTROLLER), topics=[])
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
                try:
                    r = await self.change(lambda p=p, members=members, t=name_or_id: self.core.alter_partition(
                        b.broker_id, b.broker_epoch, t, p.partition_index, p.leader_epoch, p.partition_epoch,
                        members, "RECOVERED" if p.leader_recovery_state == 0 else "RECOVERING", version))
                except NotController:
                    # L16: an unknown outcome for the sender, which asks again (of the active controller)
                    return m.AlterPartitionResponse(throttle_time_ms=0, error_code=int(Errors.NOT_CONTROLLER),
                                                    topics=[])
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
        """MetadataLogFetch: whole committed batches from ``fetch_offset``, from the active controller only
        (Q15); long-polls ``max_wait_ms`` when nothing new is committed. v1 names the quorum leader."""
        b = request.body
        deadline = time.monotonic() + max(0, b.max_wait_ms) / 1000
        while True:
            err, batches = self.qc.serve_metadata(b.fetch_offset, max(1, b.max_records))
            if not err.ok or batches or time.monotonic() >= deadline:
                break
            await self.quorum.changed(deadline - time.monotonic())
        if not err.ok and err.code != Errors.NOT_CONTROLLER:
            log(self.node, f"metadata fetch from broker {b.broker_id}: {err}")
        leader = self.qc.leader_id
        recs = [m.MetadataLogFetchResponse.MetadataLogRecord(
            offset=base, json=json.dumps(self.mlog.dicts(base) or [to_dict(r) for r in records]))
            for base, records in batches]
        return m.MetadataLogFetchResponse(throttle_time_ms=0, error_code=int(err.code), high_watermark=self.qc.applied,
                                          leader_id=-1 if leader is None else leader, leader_epoch=self.qc.epoch,
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
                try:
                    err = await self.change_result(lambda key=key, value=value: self.core.core.set_config(
                        "broker", "", key, value))
                except NotController:
                    log(self.node, f"SIGHUP: {key} not changed here: not the active controller")
                    continue
                if err.ok:
                    changed.append((key, value))
                    log(self.node, f"SIGHUP: {key} = {value} (applies from the next reassignment step)")
        return changed

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> int:
        """Serve until SIGTERM."""
        await self.server.start()
        log(self.node, f"controller listening on {self.config.listeners}")
        self._tasks = [asyncio.create_task(self.quorum.run(), name="quorum"),
                       asyncio.create_task(self._timer_loop(), name="timers"),
                       asyncio.create_task(self._recovery_loop(), name="unclean-recovery")]
        for task in self._tasks:
            task.add_done_callback(fail_stop(self.node))
        await self.stop_event.wait()
        await self.quorum.resign()
        await cancel_all(self._tasks)
        await self.recovery.close()
        await self.quorum.close()
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
            except NotController:
                pass  # leadership moved during the round: the next active controller's timers go on
            except (ConnectionError, OSError) as exc:  # e.g. the metadata disk failing: logged, retried
                log(self.node, f"periodic work failed: {exc!r}")

    async def _recovery_loop(self) -> None:
        """K7 (``unclean_recovery``): on the active controller, a round of GetReplicaLogInfo questions for
        the partitions with no clean candidate, then their elections."""
        while True:
            await asyncio.sleep(RECOVERY_INTERVAL_S)
            if not self.qc.active:
                continue
            try:
                await self.recovery.round()
            except NotController:
                pass  # leadership moved: the next active controller asks again
            except (ConnectionError, OSError) as exc:
                log(self.node, f"unclean recovery round failed: {exc!r}")

    async def periodic_round(self, now: int) -> None:
        """One timer round on the active controller: each due change computed and committed in turn (C1)."""
        if not self.qc.active:
            return
        changes = periodic_changes(self.qc.controller, now)
        while True:
            async with self._lock:
                change = next(changes, None)
                if change is None:
                    return
                if change.result.records:
                    await self._commit(lambda change=change: change.result)
            if change.kind == "session-timeout":
                log(self.node, f"broker {change.result.response}: session timed out, fenced")


class AdminServicesImpl:
    """``services.AdminServices`` for the controller process: each call is one committed change (C1)."""

    def __init__(self, controller: Controller) -> None:
        self.c = controller

    def _require_active(self) -> None:
        """Reads are the active controller's too: another voter's state may be behind (NOT_CONTROLLER)."""
        if not self.c.qc.active:
            raise NotController(self.c.qc.leader_id)

    async def create_topics(self, topics, timeout_ms, validate_only):
        """CreateTopics with default partitions / RF from the config."""
        out = []
        for t in topics:
            out.append(await self.c.change(lambda t=t: self.c.core.create_topic(t, validate_only)))
        return out

    async def describe_configs(self, resources):
        """DescribeConfigs from the controller's configuration and config records (the active one's)."""
        self._require_active()
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
        """Ongoing reassignments (adding/removing non-empty), as the active controller knows them."""
        self._require_active()
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
