"""docs/protocol-rules.md 5.1 (Last Replica Standing) end to end in one process, under both variants.

Real protocol code only: the controller (``controller.Controller``), and per broker its lifecycle
(``broker.BrokerLifecycle``), its materialized metadata (``metadata_image.MetadataImage``, fed whole batches
of the controller's records) and its replica (``replica.PartitionReplica`` over an ``InMemoryLog``). The
test plays the network and the faults: "isolate" = the controller fences the broker (its heartbeats are
lost) while it keeps replicating; "crash-lossy" = the process dies and its never-flushed log is lost.

v3.5 is expected to lose the acknowledged write X (the known issue, I6 after step 5); KIP-966 keeps it.
"""

from __future__ import annotations

import random

import pytest

from reference_impl.protocol.broker import RUNNING, BrokerLifecycle
from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.errors import OK
from reference_impl.protocol.log import InMemoryLog
from reference_impl.protocol.metadata_image import NEW, T1_REMOVED, MetadataImage
from reference_impl.protocol.records import NO_LEADER
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import AlterPartitionResponse, ProduceBatch, ReplicaConfig

TOPIC = "lrs"


class Node:
    """One broker: lifecycle, metadata image, its replica of partition 0 and the log on its 'disk'."""

    def __init__(self, broker_id: int) -> None:
        self.id = broker_id
        self.lifecycle = BrokerLifecycle(broker_id)
        self.image = MetadataImage()
        self.log = InMemoryLog()
        self.replica: PartitionReplica | None = None
        self.alive = False


class InProcessCluster:
    """The controller, three brokers and a metadata log; every step is a method call."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.ctl = Controller(ControllerConfig(min_isr=2, elr_enabled=variant == "kip966"))
        self.metadata: list[tuple[int, object]] = []
        self.nodes = {b: Node(b) for b in (1, 2, 3)}
        self.rng = random.Random(5)
        self.now = 0
        self.config = ReplicaConfig(variant=variant, min_insync_replicas=2)
        for b in self.nodes:
            self.start(b)
        res = self.commit(self.ctl.create_topic(TOPIC, assignment={0: [1, 2, 3]}))
        assert res.error.ok
        self.topic_id = res.topic_id
        self.sync_all()

    # ------------------------------------------------------------ controller and metadata
    def commit(self, result):
        """C1: append the records to the metadata log, replay them on the controller, return the answer."""
        for record in result.records:
            self.metadata.append((self.ctl.next_offset, record))
            self.ctl.replay(record)
        return result.response

    def sync(self, b: int) -> None:
        """Deliver every new metadata record to broker b as one batch, then apply its transitions (T*)."""
        node = self.nodes[b]
        if not node.alive:
            return
        delta = node.image.apply_batch([e for e in self.metadata if e[0] > node.image.offset])
        for t in delta.transitions_for(b):
            if t.rule == NEW or node.replica is None:
                node.replica = PartitionReplica(b, t.topic_id, t.partition_id, node.log, self.config,
                                                node.lifecycle.broker_epoch)
            node.replica.apply_metadata(t.state, self.now)
            if t.rule == T1_REMOVED:
                node.replica = None

    def sync_all(self) -> None:
        for b in self.nodes:
            self.sync(b)

    def state(self):
        return self.ctl.partition(TOPIC, 0).copy()

    # ------------------------------------------------------------ broker lifecycle (B1, B2)
    def start(self, b: int, marker_epoch: int | None = None) -> None:
        node = self.nodes[b]
        node.alive = True
        node.image = MetadataImage()
        req = node.lifecycle.start(self.rng, marker_epoch)
        reply = self.commit(self.ctl.register_broker(b, req.incarnation_id,
                                                     previous_broker_epoch=req.previous_broker_epoch))
        node.lifecycle.handle_registration_response(reply.error, reply.broker_epoch)
        node.lifecycle.recovery_complete()
        self.sync(b)
        self.heartbeat(b)
        assert node.lifecycle.state == RUNNING

    def heartbeat(self, b: int) -> None:
        lc = self.nodes[b].lifecycle
        hb = lc.build_heartbeat(self.nodes[b].image.offset)
        reply = self.commit(self.ctl.heartbeat(b, hb.broker_epoch, want_fence=hb.want_fence,
                                               want_shutdown=hb.want_shutdown, metadata_offset=hb.metadata_offset,
                                               now_ms=self.now))
        lc.handle_heartbeat_response(reply.error, reply.is_fenced, reply.should_shutdown)
        self.sync_all()

    def isolate(self, b: int) -> None:
        """Its heartbeats stop reaching the controller: fenced (C6); it keeps replicating."""
        assert self.commit(self.ctl.fence_broker(b)).ok
        self.sync_all()

    def heal(self, b: int) -> None:
        self.heartbeat(b)

    def crash_lossy(self, b: int) -> None:
        """kill -9 plus page-cache loss: the unflushed suffix (here: everything) and the HWM checkpoint go."""
        node = self.nodes[b]
        node.lifecycle.crash()
        node.alive = False
        node.replica = None
        kept = [batch for batch in node.log.batches() if batch.next_offset <= node.log.flushed_offset]
        node.log = InMemoryLog()
        for batch in kept:
            node.log.append(batch)
        assert self.commit(self.ctl.fence_broker(b)).ok  # its session times out
        self.sync_all()

    # ------------------------------------------------------------ data path
    def leader(self) -> PartitionReplica:
        leader = self.state().leader
        assert leader != NO_LEADER
        rep = self.nodes[leader].replica
        assert rep is not None and rep.role == LEADER
        return rep

    def fetch(self, f: int) -> None:
        """One follower fetch round trip (both ends alive)."""
        rep = self.nodes[f].replica
        req = rep.build_fetch(self.now) if rep is not None else None
        if req is None:
            return
        target = self.nodes[req.leader_id]
        if not target.alive or target.replica is None:
            rep.abandon_fetch(req, self.now)
            return
        resp = target.replica.handle_follower_fetch(req.replica_id, req.broker_epoch, req.leader_epoch,
                                                    req.fetch_offset, req.last_fetched_epoch, req.max_bytes,
                                                    self.now)
        rep.handle_fetch_response(req, resp, self.now)

    def isr_round(self) -> None:
        """The leader's ISR timer: AlterPartition through the real controller (L12-L16, C13-C15)."""
        leader = self.leader()
        node = self.nodes[leader.broker_id]
        req = leader.maybe_change_isr(self.now, node.image.ineligible_brokers(), node.image.broker_epochs())
        if req is None:
            return
        reply = self.commit(self.ctl.alter_partition(
            req.broker_id, req.broker_epoch, TOPIC, 0, leader_epoch=req.leader_epoch,
            partition_epoch=req.partition_epoch, new_isr=[(m.broker_id, m.broker_epoch) for m in req.new_isr]))
        leader.handle_alter_partition_response(req, AlterPartitionResponse(
            reply.error, reply.leader, reply.leader_epoch, reply.partition_epoch, reply.isr), self.now)
        self.sync_all()

    def values(self, b: int) -> list[bytes]:
        return [batch.payload for batch in self.nodes[b].log.batches()]


@pytest.mark.parametrize("variant", ["v3.5", "kip966"])
def test_last_replica_standing(variant):
    c = InProcessCluster(variant)
    s = c.state()
    assert (s.replicas, sorted(s.isr), s.leader) == ([1, 2, 3], [1, 2, 3], 1)
    # 1. produce X (acks=all); 2 and 3 fetch twice -> HWM 1, X acked +
    res = c.leader().append_as_leader(ProduceBatch(1, b"X"), -1, c.now)
    assert res.pending
    for _ in range(2):
        c.fetch(2)
        c.fetch(3)
    assert c.leader().high_watermark == 1
    assert [(a.base_offset, a.error) for a in c.leader().drain_completed_acks()] == [(0, OK)]
    assert all(c.values(b) == [b"X"] for b in (1, 2, 3))
    # 2. isolate 2 and 3 -> fenced
    c.isolate(2)
    c.isolate(3)
    s = c.state()
    if variant == "v3.5":
        assert (s.isr, s.leader) == ([1], 1)
    else:
        assert (s.isr, s.elr, s.leader) == ([1], [3], 1)
    # 3. crash-lossy 1 -> fenced, leaderless
    c.crash_lossy(1)
    s = c.state()
    assert s.leader == NO_LEADER
    if variant == "v3.5":
        assert s.isr == [1]
    else:
        assert (s.isr, sorted(s.elr)) == ([], [1, 3])
    # 4. restart 1 (no clean-shutdown marker: K4 marks it unclean)
    c.start(1, marker_epoch=None)
    s = c.state()
    if variant == "v3.5":
        # the sole ISR member is elected with an empty log: LESO 0, HWM 0 (I1, I7, I13 fail here)
        assert (s.leader, s.isr) == (1, [1])
        assert (c.leader().log_end_offset, c.leader().leso, c.leader().high_watermark) == (0, 0, 0)
    else:
        assert (s.leader, s.isr, s.elr, s.last_known_elr) == (NO_LEADER, [], [3], [1])
    # 5. heal 2 and 3
    c.heal(2)
    c.heal(3)
    for _ in range(3):
        for b in (1, 2, 3):
            c.fetch(b)
        c.isr_round()
        for b in (1, 2, 3):
            c.fetch(b)
    s = c.state()
    if variant == "v3.5":
        # divergence truncates 2 and 3 to 0: the acknowledged X is gone everywhere (I6, the known issue)
        assert s.leader == 1
        assert all(c.values(b) == [] for b in (1, 2, 3))
    else:
        # unfencing 3 elects it from the ELR; 1 and 2 follow and X survives on every replica
        assert s.leader == 3 and sorted(s.isr) == [1, 2, 3] and s.elr == [] and s.last_known_elr == []
        assert all(c.values(b) == [b"X"] for b in (1, 2, 3))
        assert c.leader().high_watermark == 1


@pytest.mark.parametrize("variant", ["v3.5", "kip966"])
def test_lrs_visible_data_regresses(variant):
    """5.2: Y committed by the leader alone (v3.5) is read, then lost; K966 never lets it be read."""
    c = InProcessCluster(variant)
    c.fetch(2)
    c.fetch(3)  # both followers have fetched once in this LE (at offset 0)
    res = c.leader().append_as_leader(ProduceBatch(1, b"Y"), -1, c.now)
    assert res.pending
    c.isolate(2)
    c.isolate(3)  # before they fetch Y
    leader = c.leader()
    read = [b.payload for b in leader.read_committed(0, 1 << 20).batches]
    acks = [(a.base_offset, a.error.name) for a in leader.drain_completed_acks()]
    if variant == "v3.5":
        assert leader.high_watermark == 1 and read == [b"Y"]
        assert acks == [(0, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")]
    else:
        assert leader.high_watermark == 0 and read == [] and acks == []
    c.crash_lossy(1)
    c.start(1, marker_epoch=None)
    c.heal(2)
    c.heal(3)
    for _ in range(3):
        for b in (1, 2, 3):
            c.fetch(b)
        c.isr_round()
    new_leader = c.leader()
    assert new_leader.append_as_leader(ProduceBatch(1, b"Y'"), 1, c.now).base_offset == 0
    for _ in range(2):
        for b in (1, 2, 3):
            c.fetch(b)
    read_after = [b.payload for b in new_leader.read_committed(0, 1 << 20).batches]
    assert read_after == [b"Y'"]
    if variant == "v3.5":
        assert c.state().leader == 1  # re-elected with an empty log: offset 0 changed from Y to Y' (I15)
    else:
        assert c.state().leader == 3  # from the ELR; Y was never visible, so nothing regressed
