"""A hand driver for leader + followers in tests: replicas, a partition state and a minimal AP judge.

No controller logic beyond what the replica tests need: ``change`` publishes a new partition state
(PE+1, LE+1 when the leader changes or ``bump_le``), ``judge_ap`` accepts an AlterPartition iff the sender is
the current leader with the current LE and PE (C13) and every proposed member is a replica (a stand-in for
C14), as the controller would.
"""

from __future__ import annotations

from reference_impl.protocol.errors import OK, Errors, error
from reference_impl.protocol.log import InMemoryLog
from reference_impl.protocol.records import NO_LEADER, PartitionState
from reference_impl.protocol.replica import PartitionReplica
from reference_impl.protocol.replica_messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    FetchPartitionResult,
    ProduceBatch,
    ReplicaConfig,
)

BROKER_EPOCH_BASE = 100


class Driver:
    """Replicas of one partition, driven by hand (see the module docstring)."""

    def __init__(self, variant: str = "v3.5", min_isr: int = 2, replicas=(1, 2, 3), isr=None, leader: int = 1,
                 leader_epoch: int = 1, partition_epoch: int = 1, lag_ms: int = 10_000,
                 historical_bug: str | None = None, transaction_verification: bool = True) -> None:
        self.config = ReplicaConfig(variant=variant, min_insync_replicas=min_isr, replica_lag_time_max_ms=lag_ms,
                                    historical_bug=historical_bug, transaction_verification=transaction_verification)
        self.logs = {b: InMemoryLog() for b in replicas}
        self.replicas = {b: PartitionReplica(b, "t", 0, self.logs[b], self.config,
                                             broker_epoch=BROKER_EPOCH_BASE + b) for b in replicas}
        self.state = PartitionState(list(replicas), list(isr if isr is not None else replicas), leader,
                                    leader_epoch, partition_epoch)
        self.now = 0
        self.actions = self.publish()

    def publish(self, to=None) -> dict:
        """Apply the current state to the given replicas (all by default); return their actions."""
        return {b: self.replicas[b].apply_metadata(self.state.copy(), self.now)
                for b in (to if to is not None else self.replicas)}

    def change(self, publish_to=None, bump_le: bool = False, **fields) -> dict:
        """Commit a partition change (C2: PE+1, LE+1 on a leader change) and publish it."""
        old_leader = self.state.leader
        for k, v in fields.items():
            setattr(self.state, k, list(v) if isinstance(v, (list, tuple, set)) else v)
        if bump_le or self.state.leader != old_leader:
            self.state.leader_epoch += 1
        self.state.partition_epoch += 1
        return self.publish(publish_to)

    @property
    def leader(self) -> PartitionReplica:
        """The replica the current state names leader."""
        assert self.state.leader != NO_LEADER
        return self.replicas[self.state.leader]

    def produce(self, payload: bytes, acks: int = -1, leader: int | None = None, **producer):
        """Produce one record to the (given or current) leader."""
        target = self.replicas[leader if leader is not None else self.state.leader]
        return target.append_as_leader(ProduceBatch(1, payload, **producer), acks, self.now)

    def fetch(self, follower: int, leader: int | None = None) -> FetchPartitionResult | None:
        """One complete fetch round trip of ``follower`` (to ``leader``, default its own view of the leader)."""
        rep = self.replicas[follower]
        req = rep.build_fetch(self.now)
        if req is None:
            return None
        target = self.replicas[leader if leader is not None else req.leader_id]
        resp = target.handle_follower_fetch(req.replica_id, req.broker_epoch, req.leader_epoch, req.fetch_offset,
                                            req.last_fetched_epoch, req.max_bytes, self.now)
        rep.handle_fetch_response(req, resp, self.now)
        return resp

    def round(self, *followers: int) -> None:
        """Every given follower (default: all non-leaders) fetches once."""
        for b in followers or [b for b in self.replicas if b != self.state.leader]:
            self.fetch(b)

    def judge_ap(self, req: AlterPartitionRequest) -> AlterPartitionResponse:
        """Accept or refuse an AP as the controller would (C13; members must be replicas); commit on accept."""
        s = self.state
        if req.broker_id != s.leader or req.leader_epoch != s.leader_epoch:
            return AlterPartitionResponse(error(Errors.FENCED_LEADER_EPOCH))
        if req.partition_epoch != s.partition_epoch:
            return AlterPartitionResponse(error(Errors.INVALID_UPDATE_VERSION))
        if not set(req.isr_ids) <= set(s.replicas):
            return AlterPartitionResponse(error(Errors.INELIGIBLE_REPLICA))
        s.isr = req.isr_ids
        s.partition_epoch += 1
        return AlterPartitionResponse(OK, s.leader, s.leader_epoch, s.partition_epoch, tuple(s.isr))

    def values(self, broker: int) -> list[bytes]:
        """The payloads in a replica's log, in offset order."""
        return [b.payload for b in self.logs[broker].batches()]
