"""Translation between the controller process (wire messages, ``services`` dataclasses) and the sans-IO
controller core (``reference_impl.protocol.controller.Controller``).

No decision is made here: each method calls exactly one core handler and converts its ``ControllerResult``
into ``(records, response)`` in the shapes the process answers with. Defaults that Kafka takes from broker
configuration (partition count, replication factor of CreateTopics with -1) come from the node config.
Topic ids are UUID strings (from an OS-seeded rng), because AlterPartition v3 carries them as UUIDs.
"""

from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.broker import HeartbeatReply
from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import RECOVERING, PartitionState
from reference_impl.server import services as sv
from reference_impl.server.bugs import historical_bug
from reference_impl.server.config import NodeConfig
from reference_impl.server.config_alter import RESOURCE_KINDS, plan_alter
from reference_impl.server.config_describe import describe

Change = tuple[list[Any], Any]

ELECTION_TYPES = {0: "PREFERRED", 1: "UNCLEAN"}


@dataclass(frozen=True)
class AlterPartitionReply:
    """One partition of an AlterPartition answer."""

    error: Errors
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = 0  # 0 RECOVERED, 1 RECOVERING (v1+)
    error_message: str | None = None  # why it was refused (traced; the wire response has no field for it)


def controller_config(config: NodeConfig, unclean_election: bool) -> ControllerConfig:
    """The controller core's settings from the node configuration."""
    return ControllerConfig(
        min_isr=config.min_insync_replicas, elr_enabled=config.elr_enabled,
        unclean_election=unclean_election, session_timeout_ms=config.broker_session_timeout_ms,
        incremental_reassignment=config.reassignment_mode == "incremental",
        parallel_replica_count=config.reassignment_parallel_replica_count,
        parallel_partition_count=config.reassignment_parallel_partition_count,
        parallel_leader_movements=config.reassignment_parallel_leader_movements,
        unclean_recovery_strategy=config.unclean_recovery_strategy, node_id=str(config.node_id),
        historical_bug=historical_bug(config.inject_bug))


class CoreAdapter:
    """The controller core configured from the node config, with wire-shaped inputs and outputs."""

    def __init__(self, config: NodeConfig, unclean_election: bool, core: Controller | None = None) -> None:
        self.node_config = config
        # the quorum's state machine when the process runs one (it replays committed records into it)
        self.core = core if core is not None else Controller(controller_config(config, unclean_election))
        self.rng = random.Random(os.urandom(16))

    # ------------------------------------------------------------------ replay and queries
    def replay(self, record: Any, offset: int) -> None:
        """The only mutator (committed records, live or at start)."""
        self.core.replay(record, offset)

    def drain_events(self) -> list[dict[str, Any]]:
        """The core reports through its records; the process traces those (nothing else to drain)."""
        return []

    def topic_name(self, topic_id: str) -> str | None:
        """Name of a topic id."""
        return self.core.topic_names.get(topic_id)

    def topic_id(self, name: str | None) -> str | None:
        """Id of a topic name."""
        info = self.core.topics.get(name or "")
        return info.topic_id if info is not None else None

    def partition_state(self, topic_id: str, partition: int) -> PartitionState | None:
        """The controller's state of one partition."""
        return self.core.partition(topic_id, partition)

    # ------------------------------------------------------------------ brokers
    def register_broker(self, broker_id: int, incarnation_id: str, host: str, port: int,
                        previous_broker_epoch: int, now_ms: int) -> Change:
        """C3/C4/K4."""
        r = self.core.register_broker(broker_id, incarnation_id, host=host, port=port,
                                      previous_broker_epoch=previous_broker_epoch)
        return r.records, (r.response.error.code, r.response.broker_epoch)

    def heartbeat(self, broker_id: int, broker_epoch: int, want_fence: bool, want_shutdown: bool,
                  metadata_offset: int, now_ms: int) -> Change:
        """C5/C6/C8/C9."""
        r = self.core.heartbeat(broker_id, broker_epoch, want_fence=want_fence, want_shutdown=want_shutdown,
                                metadata_offset=metadata_offset, now_ms=now_ms)
        resp = r.response
        reg = self.core.brokers.get(broker_id)
        caught_up = reg is not None and metadata_offset >= reg.epoch
        return r.records, HeartbeatReply(resp.error.code, caught_up, resp.is_fenced, resp.should_shutdown)

    def stale_broker_epoch(self, broker_id: int, broker_epoch: int) -> Errors:
        """C13: the request-level check of the sender's broker epoch (NONE when it is current)."""
        return self.core.check_broker_epoch(broker_id, broker_epoch).code

    def alter_partition(self, broker_id: int, broker_epoch: int, topic: str, partition: int,
                        leader_epoch: int, partition_epoch: int, members: list[tuple[int, int]],
                        leader_recovery_state: str, request_version: int) -> Change:
        """C13-C15, C19; ``topic`` is the request's topic name (v0-1) or id (v2+), and the answer's error
        is the one Kafka gives that request version."""
        r = self.core.alter_partition(broker_id, broker_epoch, topic, partition, leader_epoch=leader_epoch,
                                      partition_epoch=partition_epoch, new_isr=members,
                                      leader_recovery_state=leader_recovery_state,
                                      request_version=request_version)
        a = r.response
        return r.records, AlterPartitionReply(a.error.code, a.leader, a.leader_epoch, a.partition_epoch,
                                              tuple(a.isr), 1 if a.leader_recovery_state == RECOVERING else 0,
                                              a.error.message)

    # ------------------------------------------------------------------ admin APIs
    def create_topic(self, t: sv.NewTopic, validate_only: bool) -> Change:
        """CreateTopics entry: defaults from the node config; topic configs become ConfigRecords."""
        partitions = t.num_partitions if t.num_partitions > 0 else self.node_config.num_partitions
        rf = t.replication_factor if t.replication_factor > 0 else self.node_config.default_replication_factor
        topic_id = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        r = self.core.create_topic(t.name, partitions=partitions, replication_factor=rf,
                                   assignment={k: list(v) for k, v in t.assignments.items()} or None,
                                   topic_id=topic_id, rng=self.rng)
        err = r.response.error
        if not err.ok:
            return [], sv.CreateTopicResult(t.name, err.code, err.message)
        records = list(r.records)
        for key, value in t.configs.items():
            c = self.core.set_config("topic", t.name, key, value)
            if c.records:
                records += c.records
            elif not c.response.ok:
                return [], sv.CreateTopicResult(t.name, c.response.code, c.response.message)
        n = len(t.assignments) or partitions
        first = next(iter(t.assignments.values()), None)
        result = sv.CreateTopicResult(t.name, Errors.NONE, None, r.response.topic_id, n,
                                      len(first) if first is not None else rf)
        return ([] if validate_only else records), result

    def describe_config(self, resource_type: int, name: str, keys: list[str] | None) -> sv.ConfigResourceResult:
        """DescribeConfigs sent to the controller itself: a topic (its config records over this node's
        settings) or this node's BROKER resource (its id or ""); see ``config_describe``."""
        return describe(self.node_config, resource_type, name, keys, topic_exists=name in self.core.topics,
                        topic_configs=self.core.configs.get(("topic", name), {}),
                        cluster_configs=self.core.configs.get(("broker", ""), {}),
                        broker_configs=self.core.configs.get(("broker", str(self.node_config.node_id)), {}))

    def alter_configs(self, resources: list[sv.AlterConfigsResource], incremental: bool,
                      validate_only: bool) -> Change:
        """AlterConfigs / IncrementalAlterConfigs: each resource planned (``config_alter``), every change a
        ConfigRecord from the core's ``set_config``; a resource is all-or-nothing, ``validate_only``
        commits nothing. KIP-435 settings and ``reassignment.mode`` take effect from the next step."""
        records: list[Any] = []
        results = []
        for res in resources:
            kind = RESOURCE_KINDS.get(res.resource_type)
            current = self.core.configs.get((kind or "", res.resource_name), {})
            plan = plan_alter(res, incremental=incremental, current=current,
                              topic_exists=res.resource_name in self.core.topics)
            error, message, resource_records = plan.error, plan.message, []
            for key, value in plan.changes if plan.ok else ():
                r = self.core.set_config(kind, res.resource_name, key, value)
                if not r.response.ok:
                    error, message, resource_records = r.response.code, r.response.message, []
                    break
                resource_records += r.records
            if not validate_only:
                records += resource_records
            results.append(sv.AlterConfigsResult(res.resource_type, res.resource_name, error, message))
        return records, results

    def elect_leaders(self, election_type: int, partitions: list[sv.TopicPartition] | None) -> Change:
        """ElectLeaders (C10, C12)."""
        kind = ELECTION_TYPES.get(election_type)
        wanted = None if partitions is None else [(p.topic, p.partition) for p in partitions]
        if kind is None:
            return [], [sv.ElectionResult(t, p, Errors.INVALID_REQUEST) for t, p in wanted or []]
        r = self.core.elect_leaders(kind, wanted)
        return r.records, [sv.ElectionResult(t, p, e.code, e.message) for (t, p), e in r.response.items()]

    def alter_partition_reassignments(self, reassignments: list[sv.Reassignment], allow_rf_change: bool) -> Change:
        """AlterPartitionReassignments (C16-C21, KIP-860; KIP-435 in incremental mode)."""
        targets = {(x.topic, x.partition): (list(x.replicas) if x.replicas is not None else None)
                   for x in reassignments}
        r = self.core.alter_partition_reassignments(targets, allow_rf_change=allow_rf_change)
        out = []
        for x in reassignments:
            e = r.response.get((x.topic, x.partition))
            out.append(sv.ReassignmentResult(x.topic, x.partition, e.code if e else Errors.UNKNOWN_SERVER_ERROR,
                                             e.message if e else None))
        return r.records, out

    def list_partition_reassignments(self, partitions: list[sv.TopicPartition] | None) -> list[sv.OngoingReassignment]:
        """ListPartitionReassignments."""
        wanted = None if partitions is None else [(p.topic, p.partition) for p in partitions]
        ongoing = self.core.list_partition_reassignments(wanted)
        return [sv.OngoingReassignment(t, p, o.replicas, o.adding, o.removing)
                for (t, p), o in sorted(ongoing.items())]
