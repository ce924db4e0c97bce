"""Shared fixtures for the controller tests: a cluster of registered brokers and named partition states."""

from __future__ import annotations

from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.records import NO_LEADER, PartitionRecord, PartitionState

T = "t"
TP = (T, 0)


def state(replicas, isr, leader, le, pe, adding=(), removing=(), elr=(), lkelr=(), recovery="RECOVERED"):
    """A whole partition state, in the order the seeds write them."""
    return PartitionState(list(replicas), list(isr), leader, le, pe, list(adding), list(removing), list(elr),
                          list(lkelr), recovery)


def cluster(brokers=(1, 2, 3), **config) -> Controller:
    """A controller with ``brokers`` registered (through the handlers) and unfenced (C3-C5)."""
    ctl = Controller(ControllerConfig(**config))
    for b in brokers:
        reg = ctl.apply(ctl.register_broker(b, f"incarnation-{b}"))
        assert reg.error.ok and reg.broker_epoch == ctl.last_offset  # C4: epoch = offset of the record
        hb = ctl.apply(ctl.heartbeat(b, reg.broker_epoch, want_fence=False, want_shutdown=False,
                                     metadata_offset=ctl.next_offset, now_ms=0))
        assert hb.error.ok and not hb.is_fenced
    return ctl


def with_partition(ctl: Controller, s: PartitionState, topic: str = T) -> Controller:
    """Create ``topic`` and overwrite partition 0 with state ``s`` (a snapshot-style PartitionRecord)."""
    if topic not in ctl.topics:
        live = [b for b in s.replicas if b in ctl.brokers and not ctl.brokers[b].fenced]
        res = ctl.apply(ctl.create_topic(topic, assignment={0: s.replicas if live else list(ctl.brokers)[:1]}))
        assert res.error.ok, res
    ctl.replay(PartitionRecord(ctl.topics[topic].topic_id, 0, tuple(s.replicas), tuple(s.isr), s.leader,
                               s.leader_epoch, s.partition_epoch, tuple(s.adding), tuple(s.removing),
                               tuple(s.elr), tuple(s.last_known_elr), s.leader_recovery_state))
    return ctl


def current(ctl: Controller, topic: str = T) -> PartitionState:
    """The partition's state (a copy)."""
    return ctl.partition(topic, 0).copy()


def epoch(ctl: Controller, b: int) -> int:
    """The broker's registered epoch."""
    return ctl.brokers[b].epoch


def ap(ctl: Controller, isr, *, leader=None, topic: str = T, epochs=None, le=None, pe=None):
    """An AlterPartition from the current leader proposing ``isr`` (new members carry their epoch)."""
    p = ctl.partition(topic, 0)
    leader = p.leader if leader is None else leader
    epochs = epochs or {}
    new_isr = [(b, epochs.get(b, -1 if b in p.isr else (ctl.brokers[b].epoch if b in ctl.brokers else -1)))
               for b in isr]
    return ctl.alter_partition(leader, ctl.brokers[leader].epoch, topic, 0,
                               leader_epoch=p.leader_epoch if le is None else le,
                               partition_epoch=p.partition_epoch if pe is None else pe, new_isr=new_isr)


__all__ = ["NO_LEADER", "T", "TP", "ap", "cluster", "current", "epoch", "state", "with_partition"]


def reassign(ctl: Controller, target):
    """AlterPartitionReassignments of partition 0 to ``target``, applied; the partition's KafkaError."""
    res = ctl.alter_partition_reassignments({TP: target})
    ctl.apply(res)
    return res.response[TP]
