"""The simulated controller process: the ``Controller`` core with its metadata log in memory.

It does what ``reference_impl.server.controller`` does, with the same core calls: each request is one
change (compute, append to the log, ``replay_committed``, answer), the timer round runs
``periodic_changes`` every ``TIMER_INTERVAL_MS``, metadata pulls get ``metadata_batches_from`` and are held
up to ``METADATA_MAX_WAIT_MS`` while there is nothing new (long polling). The log survives a restart
(the server fsyncs it, C1); a restart replays it into a fresh core, whose soft state (sessions) starts over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker import HeartbeatReply
from reference_impl.protocol.broker_session import METADATA_MAX_WAIT_MS
from reference_impl.protocol.controller import Controller, ControllerConfig, ControllerResult
from reference_impl.protocol.controller_loop import (
    TIMER_INTERVAL_MS,
    metadata_batches_from,
    periodic_changes,
    replay_committed,
)
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.replica_messages import AlterPartitionResponse

if TYPE_CHECKING:
    from simulator.host import Host
    from simulator.network import Message

NAME = "0"
METADATA_FETCH_MAX_RECORDS = 5000


class MetadataLog:
    """The controller's durable log: whole batches of records, as committed together."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list[Any]]] = []
        self.end = 0

    def append(self, records: list[Any]) -> list[int]:
        """Append one batch; returns the records' offsets."""
        offsets = list(range(self.end, self.end + len(records)))
        self.batches.append((self.end, list(records)))
        self.end += len(records)
        return offsets


class SimController:
    """One incarnation of the controller process (a restart builds a new one over the same log)."""

    def __init__(self, world: Host, log: MetadataLog) -> None:
        self.world = world
        self.id = 0
        self.dead = False
        self.log = log
        o = world.options
        self.core = Controller(ControllerConfig(min_isr=o.min_isr, elr_enabled=o.variant == "kip966",
                                                session_timeout_ms=o.session_timeout_ms, node_id=NAME,
                                                incremental_reassignment=o.reassignment_mode == "incremental"))
        for base, records in log.batches:
            for i, record in enumerate(records):
                self.core.replay(record, base + i)  # replayed history was traced when it happened
        self._parked: list[Message] = []
        world.timer(self, TIMER_INTERVAL_MS, self._tick)

    # ------------------------------------------------------------------ the one way state changes (C1)
    def commit(self, result: ControllerResult) -> Any:
        """Append the result's records, replay them, trace them; wake held metadata pulls."""
        if result.records:
            offsets = self.log.append(result.records)
            self.world.emit(NAME, replay_committed(self.core, result.records, offsets))
            self.world.check_controller(self.core)
            parked, self._parked = self._parked, []
            for msg in parked:
                self._serve_metadata(msg, expired=False)
        return result.response

    def _tick(self) -> None:
        for change in periodic_changes(self.core, self.world.now):
            self.commit(change.result)
        self.world.timer(self, TIMER_INTERVAL_MS, self._tick)

    # ------------------------------------------------------------------ requests
    def handle(self, msg: Message) -> None:
        """Serve one request (one change each)."""
        body = msg.body
        kind = msg.kind
        if kind == "register":
            r = self.commit(self.core.register_broker(body.broker_id, body.incarnation_id, host=body.host,
                                                      port=body.port,
                                                      previous_broker_epoch=body.previous_broker_epoch))
            self.world.reply(msg, (r.error, r.broker_epoch))
        elif kind == "heartbeat":
            r = self.commit(self.core.heartbeat(body.broker_id, body.broker_epoch, want_fence=body.want_fence,
                                                want_shutdown=body.want_shutdown,
                                                metadata_offset=body.metadata_offset, now_ms=self.world.now))
            reg = self.core.brokers.get(body.broker_id)
            caught_up = reg is not None and body.metadata_offset >= reg.epoch
            self.world.reply(msg, HeartbeatReply(r.error.code, caught_up, r.is_fenced, r.should_shutdown))
        elif kind == "alter_partition":
            r = self.commit(self.core.alter_partition(
                body.broker_id, body.broker_epoch, body.topic_id, body.partition_id,
                leader_epoch=body.leader_epoch, partition_epoch=body.partition_epoch,
                new_isr=[(m.broker_id, m.broker_epoch) for m in body.new_isr],
                leader_recovery_state=body.leader_recovery_state))
            self.world.reply(msg, AlterPartitionResponse(r.error, r.leader, r.leader_epoch, r.partition_epoch,
                                                         tuple(r.isr)))
        elif kind == "metadata":
            self._serve_metadata(msg, expired=False)
            if msg in self._parked:
                self.world.timer(self, METADATA_MAX_WAIT_MS, self._expire, msg)
        elif kind == "admin":
            self.world.reply(msg, self.commit(self._admin(body)))
        else:
            raise ValueError(f"controller: unknown request {kind!r}")

    def _admin(self, body: dict[str, Any]) -> ControllerResult:
        topic = self.world.topic
        op = body["do"]
        if op == "create":
            return self.core.create_topic(topic, assignment=body["assignment"], topic_id=body["topic_id"])
        if op == "reassign":
            return self.core.alter_partition_reassignments({(topic, body["key"]): list(body["replicas"])})
        if op == "cancel":
            return self.core.alter_partition_reassignments({(topic, body["key"]): None})
        if op == "elect":
            return self.core.elect_leaders("PREFERRED", [(topic, body["key"])])
        raise ValueError(f"unknown admin operation {op!r}")

    def _serve_metadata(self, msg: Message, expired: bool) -> None:
        offset = msg.body
        try:
            batches = metadata_batches_from(self.log.batches, self.log.end, offset, METADATA_FETCH_MAX_RECORDS)
        except ValueError:
            self.world.reply(msg, (error(Errors.OFFSET_OUT_OF_RANGE), []))
            return
        if batches or expired:
            self.world.reply(msg, (error(Errors.NONE), batches))
        else:
            self._parked.append(msg)

    def _expire(self, msg: Message) -> None:
        if msg in self._parked:
            self._parked.remove(msg)
            self._serve_metadata(msg, expired=True)
