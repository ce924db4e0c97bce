"""Property: random interleavings never lose a committed offset and keep I4, I10, I16.

A little in-test world: three replicas, a minimal controller (C6 fencing with a clean election from the ISR,
C5 unfencing, C13/C14-style AlterPartition judging), a lossy reordering network for fetches and
AlterPartition messages, and metadata delivered to each replica at its own pace (so replicas act on stale
metadata, and skipped intermediate states model batching). Faults are process-alive isolations only (no
lossy crashes), so no committed offset may ever be lost under either variant:

- every offset below the highest HWM any leader reached keeps its record on every replica that takes
  leadership through a clean election (ISR member, or K966 ELR member: K2/K3 with a minimal ELR model) (checked when it takes it, and on its log afterwards);
- I4 (logs agree below both HWMs), I16 (same offset and epoch => same record), I10 (``check_invariants``);
- after healing, the replicas converge on the leader's log and the HWM reaches the LEO (liveness).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.protocol.errors import OK, Errors, error
from reference_impl.protocol.log import InMemoryLog
from reference_impl.protocol.records import NO_LEADER, PartitionState
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import AlterPartitionResponse, ProduceBatch, ReplicaConfig

BROKERS = (1, 2, 3)


class World:
    """The replicas, the controller's state and the network of one example."""

    def __init__(self, variant: str, min_isr: int) -> None:
        self.config = ReplicaConfig(variant=variant, min_insync_replicas=min_isr, replica_lag_time_max_ms=300,
                                    fetch_backoff_ms=50)
        self.logs = {b: InMemoryLog() for b in BROKERS}
        self.reps = {b: PartitionReplica(b, "t", 0, self.logs[b], self.config, broker_epoch=100 + b)
                     for b in BROKERS}
        self.ctl = PartitionState(list(BROKERS), list(BROKERS), 1, 1, 1)
        self.fenced: set[int] = set()
        self.net: list[tuple] = []
        self.now = 0
        self.next_value = 0
        self.committed: dict[int, bytes] = {}  # offset -> record, for offsets below the highest HWM
        self.seen_epochs: dict[int, int] = {b: -1 for b in BROKERS}
        for b in BROKERS:
            self.deliver_metadata(b)

    # ---------------------------------------------------------------- controller
    def commit(self, **fields) -> None:
        old_leader = self.ctl.leader
        for k, v in fields.items():
            setattr(self.ctl, k, v)
        if self.ctl.leader != old_leader:
            self.ctl.leader_epoch += 1  # C2
        self.ctl.partition_epoch += 1

    def fence(self, b: int) -> None:
        """C6 for an isolated broker (it keeps running and replicating)."""
        if b in self.fenced:
            return
        self.fenced.add(b)
        isr, elr = list(self.ctl.isr), list(self.ctl.elr)
        if self.config.variant == "kip966":
            isr = [r for r in isr if r != b]
            if b in self.ctl.isr and len(isr) < self.config.min_insync_replicas:
                elr.append(b)  # K2: it left the ISR complete (L4 froze the HWM), so it stays electable
        elif len(isr) > 1:
            isr = [r for r in isr if r != b]  # C6 v3.5: the ISR is never emptied
        leader = self.ctl.leader
        if leader == b or leader == NO_LEADER:
            leader, isr, elr = self.elect(isr, elr)
        if isr != self.ctl.isr or leader != self.ctl.leader or elr != self.ctl.elr:
            self.commit(isr=isr, leader=leader, elr=elr)

    def elect(self, isr: list[int], elr: list[int]) -> tuple[int, list[int], list[int]]:
        """C11/K3: an unfenced ISR member, else (K966) an unfenced ELR member moved into the ISR."""
        for r in isr:
            if r not in self.fenced:
                return r, isr, elr
        for r in elr:
            if r not in self.fenced:
                return r, isr + [r], [e for e in elr if e != r]
        return NO_LEADER, isr, elr

    def unfence(self, b: int) -> None:
        """C5: no ISR change; a leaderless partition gets a leader if a clean candidate exists."""
        self.fenced.discard(b)
        if self.ctl.leader == NO_LEADER:
            leader, isr, elr = self.elect(list(self.ctl.isr), list(self.ctl.elr))
            if leader != NO_LEADER:
                self.commit(leader=leader, isr=isr, elr=elr)

    def judge_ap(self, req) -> AlterPartitionResponse:
        s = self.ctl
        if req.broker_id != s.leader or req.leader_epoch != s.leader_epoch or req.broker_id in self.fenced:
            return AlterPartitionResponse(error(Errors.FENCED_LEADER_EPOCH))
        if req.partition_epoch != s.partition_epoch:
            return AlterPartitionResponse(error(Errors.INVALID_UPDATE_VERSION))
        if any(m not in s.replicas or m in self.fenced for m in req.isr_ids):
            return AlterPartitionResponse(error(Errors.INELIGIBLE_REPLICA))
        isr = list(req.isr_ids)
        # K2: an ISR back at MinISR empties the ELR; ELR members re-added by the AP leave it (K12)
        elr = [] if len(isr) >= self.config.min_insync_replicas else [e for e in s.elr if e not in isr]
        self.commit(isr=isr, elr=elr)
        return AlterPartitionResponse(OK, s.leader, s.leader_epoch, s.partition_epoch, tuple(s.isr))

    # ---------------------------------------------------------------- replicas and network
    def deliver_metadata(self, b: int) -> None:
        rep = self.reps[b]
        was_leader_epoch = rep.leader_epoch if rep.role == LEADER else None
        rep.apply_metadata(self.ctl.copy(), self.now)
        if rep.role == LEADER and rep.leader_epoch != was_leader_epoch:
            # a clean election: the new leader holds every committed record
            values = {o: batch.payload for batch in self.logs[b].batches() for o in [batch.base_offset]}
            for offset, value in self.committed.items():
                assert values.get(offset) == value, f"leader {b} lacks committed offset {offset}"
        self.after(b)

    def after(self, b: int) -> None:
        """Record committed offsets when a leader's HWM advances; drop acks."""
        rep = self.reps[b]
        rep.drain_completed_acks()
        for event in rep.drain_events():
            if event["kind"] == "hwm" and event["role"] == LEADER:
                for batch in self.logs[b].batches():
                    if batch.base_offset < event["hwm"]:
                        prior = self.committed.setdefault(batch.base_offset, batch.payload)
                        assert prior == batch.payload, f"committed offset {batch.base_offset} changed (I7)"

    def produce(self, b: int, acks: int) -> None:
        self.next_value += 1
        self.reps[b].append_as_leader(ProduceBatch(1, b"v%d" % self.next_value), acks, self.now)
        self.after(b)

    def send_fetch(self, b: int) -> None:
        req = self.reps[b].build_fetch(self.now)
        if req is not None:
            self.net.append(("fetch", req))

    def isr_tick(self, b: int) -> None:
        rep = self.reps[b]
        req = rep.maybe_change_isr(self.now, ineligible=self.fenced) or rep.pending_alter_partition
        if req is not None:
            self.net.append(("ap", req))
        self.after(b)

    def drop(self, i: int) -> None:
        """Lose a message; a lost fetch or fetch reply is noticed by the follower (timeout)."""
        kind, req, *_ = self.net.pop(i)
        if kind in ("fetch", "fetch_reply"):
            self.reps[req.replica_id].abandon_fetch(req, self.now)

    def deliver(self, i: int) -> None:
        kind, *msg = self.net.pop(i)
        if kind == "fetch":
            req = msg[0]
            resp = self.reps[req.leader_id].handle_follower_fetch(
                req.replica_id, req.broker_epoch, req.leader_epoch, req.fetch_offset, req.last_fetched_epoch,
                req.max_bytes, self.now)
            self.after(req.leader_id)
            self.net.append(("fetch_reply", req, resp))
        elif kind == "fetch_reply":
            req, resp = msg
            self.reps[req.replica_id].handle_fetch_response(req, resp, self.now)
            self.after(req.replica_id)
        elif kind == "ap":
            req = msg[0]
            self.net.append(("ap_reply", req, self.judge_ap(req)))
        elif kind == "ap_reply":
            req, resp = msg
            self.reps[req.broker_id].handle_alter_partition_response(req, resp, self.now)
            self.after(req.broker_id)

    # ---------------------------------------------------------------- invariants
    def check(self) -> None:
        for rep in self.reps.values():
            rep.check_invariants()  # I10
        by_epoch: dict[tuple[int, int], bytes] = {}
        for log in self.logs.values():
            for batch in log.batches():
                prior = by_epoch.setdefault((batch.base_offset, batch.epoch), batch.payload)
                assert prior == batch.payload, f"I16 broken at {batch.base_offset} epoch {batch.epoch}"
        for b1 in BROKERS:
            for b2 in BROKERS:
                if b1 < b2:
                    limit = min(self.reps[b1].high_watermark, self.reps[b2].high_watermark,
                                self.logs[b1].log_end_offset, self.logs[b2].log_end_offset)
                    p1 = [x.payload for x in self.logs[b1].batches()][:limit]
                    p2 = [x.payload for x in self.logs[b2].batches()][:limit]
                    assert p1 == p2, f"I4 broken between {b1} and {b2} below {limit}"
        leader = self.ctl.leader
        if leader != NO_LEADER and self.reps[leader].role == LEADER \
                and self.reps[leader].leader_epoch == self.ctl.leader_epoch:
            values = [x.payload for x in self.logs[leader].batches()]
            for offset, value in self.committed.items():
                assert offset < len(values) and values[offset] == value, f"leader lost committed {offset}"

    def heal_and_converge(self) -> None:
        """Final phase: heal everything, deliver all metadata, run the protocol synchronously."""
        while self.net:
            self.drop(0)
        for b in BROKERS:
            self.unfence(b)
        for _ in range(30):
            self.now += 100
            for b in BROKERS:
                self.deliver_metadata(b)
            for b in BROKERS:
                self.send_fetch(b)
                self.isr_tick(b)
            while self.net:
                self.deliver(0)
            self.check()
        leader = self.reps[self.ctl.leader]
        assert sorted(self.ctl.isr) == list(BROKERS), self.ctl
        assert leader.high_watermark == leader.log_end_offset
        assert len({tuple(x.payload for x in log.batches()) for log in self.logs.values()}) == 1


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["v3.5", "kip966"]), st.integers(1, 2), st.data())
def test_random_interleavings_keep_committed_offsets(variant, min_isr, data):
    world = World(variant, min_isr)
    steps = data.draw(st.integers(10, 120), label="steps")
    for _ in range(steps):
        op = data.draw(st.sampled_from(["produce", "fetch", "deliver", "deliver", "deliver", "drop", "isr",
                                        "time", "fence", "unfence", "metadata", "metadata"]), label="op")
        b = data.draw(st.sampled_from(BROKERS), label="broker")
        if op == "produce":
            world.produce(b, data.draw(st.sampled_from([-1, 1]), label="acks"))
        elif op == "fetch":
            world.send_fetch(b)
        elif op in ("deliver", "drop") and world.net:
            i = data.draw(st.integers(0, len(world.net) - 1), label="message")
            if op == "deliver":
                world.deliver(i)
            else:
                world.drop(i)
        elif op == "isr":
            world.isr_tick(b)
        elif op == "time":
            world.now += data.draw(st.integers(1, 400), label="ms")
        elif op == "fence":
            world.fence(b)
        elif op == "unfence":
            world.unfence(b)
        elif op == "metadata":
            world.deliver_metadata(b)
        world.check()
    world.heal_and_converge()
