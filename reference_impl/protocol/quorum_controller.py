"""A controller voter: the Raft node of the metadata quorum and the controller state machine on top of it.

Kafka's QuorumController runs on every controller; the one whose Raft node leads is the **active
controller**. Here (Q14, docs/protocol-rules.md):

- **committed records only**: every voter replays a record into its ``Controller`` only once the quorum's
  high watermark passed it (``apply_committed``), so a deposed leader's uncommitted records, which its
  successor truncates, are never applied anywhere. Kafka's active controller applies its own records as it
  appends them and reverts to a snapshot when it loses leadership; applying only committed records is the
  simpler discipline C1 states ("a change takes effect only once committed");
- **active only once caught up**: a leader acts as the controller only after its epoch-start record (Q5)
  committed and every record before it was applied (Kafka fires ``handleLeaderChange`` to the controller
  only then), so a new active controller continues exactly from the committed log: registrations, broker
  epochs, fencing, reassignments in progress, ELR and LKELR. Soft state (heartbeat times) starts afresh
  (``ClusterControl.activate``);
- **one change at a time, answered after commit** (C1): ``submit`` computes a change against the committed
  state, appends its records as one batch and returns a ``Ticket``; its answer is given once the batch is
  committed and applied (``outcome``: COMMITTED), or NOT_CONTROLLER when the node stopped leading that
  epoch first (LOST; the change may still commit under the next leader if it has the records, as any
  request without an answer might have taken effect). No other change is computed meanwhile, so every
  change is computed from a state that includes all earlier ones and a broker epoch is the offset its
  registration record gets (C4);
- **zombies change nothing**: a leader cut off from the quorum can append but never commit; its pending
  change ends LOST when check-quorum makes it resign (Q11) or a newer epoch reaches it;
- **brokers read committed metadata only** (Q15): ``serve_metadata`` answers a pull from the committed log
  of the active controller, whole batches, and NOT_CONTROLLER (with the leader it knows) elsewhere.

The driver (controller process, simulator) owns IO: it feeds the Raft node (``raft``), calls
``apply_committed`` after every interaction, and answers requests through ``submit`` / ``outcome``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.controller import Controller, ControllerConfig, ControllerResult
from reference_impl.protocol.controller_loop import PeriodicChange, periodic_changes, replay_committed
from reference_impl.protocol.errors import Errors, InvariantViolation, KafkaError, error
from reference_impl.protocol.raft.election_state import ElectionStateStore
from reference_impl.protocol.raft.log import RaftLog
from reference_impl.protocol.raft.node import RaftConfig, RaftNode
from reference_impl.protocol.records import LeaderChangeRecord

if TYPE_CHECKING:
    import random

PENDING = "pending"
COMMITTED = "committed"
LOST = "lost"


def leader_change_record(leader: int, epoch: int, voters: tuple[int, ...], granting: tuple[int, ...]) -> Any:
    """The epoch-start record the metadata quorum writes (Q5)."""
    return LeaderChangeRecord(leader, epoch, tuple(voters), tuple(granting))


@dataclass(frozen=True)
class Ticket:
    """A change submitted by the active controller: its batch ``[base, end)`` in ``epoch``, and the answer to
    give once it is committed."""

    epoch: int
    base: int
    end: int
    response: Any


def not_controller(leader: int | None) -> KafkaError:
    """The refusal of a voter that is not the active controller, naming the leader it knows."""
    return error(Errors.NOT_CONTROLLER, f"the active controller is {leader if leader is not None else 'unknown'}")


class QuorumController:
    """One controller voter (see the module docstring)."""

    def __init__(self, node_id: int, voters: Sequence[int], log: RaftLog, store: ElectionStateStore,
                 raft_config: RaftConfig, config: ControllerConfig, rng: random.Random, now_ms: int) -> None:
        self.id = node_id
        self.raft = RaftNode(node_id, voters, log, store, raft_config, rng, now_ms, leader_change_record)
        self.controller = Controller(config)
        self.applied = 0  # records below this offset are replayed into ``controller``
        self.pending: Ticket | None = None
        self.active_epoch: int | None = None
        self._events: list[dict[str, Any]] = []
        self.apply_committed(now_ms)

    # =========================================================================== state
    @property
    def active(self) -> bool:
        """Q14: this voter leads, its epoch-start record is committed and everything committed is applied."""
        return self.raft.is_leader and self.raft.leader_ready and self.applied >= self.raft.high_watermark

    @property
    def leader_id(self) -> int | None:
        """The quorum leader this voter knows (a hint for requesters)."""
        return self.raft.leader_id

    @property
    def epoch(self) -> int:
        """The quorum epoch."""
        return self.raft.epoch

    def drain_events(self) -> list[dict[str, Any]]:
        """Trace events (the Raft node's and the replayed records') since the last call."""
        out = self.raft.drain_events() + self._events
        self._events = []
        return out

    # =========================================================================== commits
    def apply_committed(self, now_ms: int) -> bool:
        """Replay every committed batch not yet applied (Q14); returns whether anything was applied. Also
        notices this voter becoming or ceasing to be the active controller."""
        raft, log = self.raft, self.raft.log
        if log.end_offset < self.applied:
            raise InvariantViolation(f"controller {self.id}: log truncated to {log.end_offset} below the "
                                     f"applied offset {self.applied}")
        applied_any = False
        while self.applied < raft.high_watermark:
            batches = log.read(self.applied, 10_000)
            if not batches or batches[0].base_offset != self.applied:
                raise InvariantViolation(f"controller {self.id}: no batch starts at the applied offset {self.applied}")
            progressed = False
            for batch in batches:
                if batch.next_offset > raft.high_watermark:
                    break  # never a record above the HWM (a batch straddling it waits whole)
                offsets = range(batch.base_offset, batch.next_offset)
                events = replay_committed(self.controller, batch.records, offsets)
                self._events += [{"quorum_epoch": batch.epoch, **ev, "voter": self.id} for ev in events]
                self.applied = batch.next_offset
                progressed = applied_any = True
            if not progressed:
                break
        self._track_activity(now_ms)
        return applied_any

    def _track_activity(self, now_ms: int) -> None:
        if self.active and self.active_epoch != self.raft.epoch:
            self.active_epoch = self.raft.epoch
            self.controller.cluster.activate()
            self._events.append({"kind": "controller_active", "voter": self.id, "epoch": self.raft.epoch,
                                 "offset": self.applied})
        elif not self.raft.is_leader and self.active_epoch is not None:
            self._events.append({"kind": "controller_inactive", "voter": self.id, "epoch": self.active_epoch})
            self.active_epoch = None

    # =========================================================================== changes (C1, Q14)
    def submit(self, compute: Callable[[Controller], ControllerResult], now_ms: int) -> Ticket | KafkaError:
        """Compute one change on the committed state and append it; NOT_CONTROLLER unless active with no
        change in flight (the driver queues requests meanwhile). A change without records gets a ticket that
        is committed already."""
        if self.pending is not None:
            self.outcome(self.pending)  # settled already (its requester may have given up): let it go
        if not self.active or self.pending is not None:
            return not_controller(self.leader_id if not self.active else self.id)
        if self.controller.next_offset != self.raft.log.end_offset:
            raise InvariantViolation(f"controller {self.id}: state ends at {self.controller.next_offset}, the "
                                     f"log at {self.raft.log.end_offset}")
        result = compute(self.controller)
        if not result.records:
            return Ticket(self.raft.epoch, self.applied, self.applied, result.response)
        span = self.raft.append(list(result.records), now_ms)
        if span is None:
            return not_controller(self.leader_id)
        ticket = Ticket(self.raft.epoch, span[0], span[1], result.response)
        self.pending = ticket
        self.apply_committed(now_ms)  # a quorum of one commits at once
        return ticket

    def outcome(self, ticket: Ticket) -> tuple[str, Any]:
        """COMMITTED with the answer, LOST with NOT_CONTROLLER, or PENDING."""
        if ticket.base == ticket.end or (self.applied >= ticket.end and self._batch_epoch(ticket.base) == ticket.epoch):
            self._release(ticket)
            return COMMITTED, ticket.response
        if not self.raft.is_leader or self.raft.epoch != ticket.epoch or self.applied >= ticket.end:
            self._release(ticket)
            return LOST, not_controller(self.leader_id)
        return PENDING, None

    def _release(self, ticket: Ticket) -> None:
        if self.pending is ticket:
            self.pending = None

    def _batch_epoch(self, base: int) -> int | None:
        if base >= self.raft.log.end_offset:
            return None
        batches = self.raft.log.read(base, 1)
        return batches[0].epoch if batches and batches[0].base_offset == base else None

    def periodic(self, now_ms: int) -> Iterator[PeriodicChange]:
        """The timer round's changes (C6 session timeouts, KIP-435 steps, C12), only while active; commit
        each (``submit`` it) before taking the next."""
        if not self.active or self.pending is not None:
            return iter(())
        return periodic_changes(self.controller, now_ms)

    # =========================================================================== brokers' metadata (Q15)
    def serve_metadata(self, offset: int, max_records: int) -> tuple[KafkaError, list[tuple[int, list[Any]]]]:
        """Committed batches from ``offset`` (a batch boundary), as ``(base offset, records)``; empty when
        nothing new is committed; NOT_CONTROLLER unless active; OFFSET_OUT_OF_RANGE for an offset that is
        not a committed batch boundary (a broker whose log is not a prefix of the committed one, I5)."""
        if not self.active:
            return not_controller(self.leader_id), []
        if offset == self.applied:
            return error(Errors.NONE), []
        if offset > self.applied:
            return error(Errors.OFFSET_OUT_OF_RANGE, f"offset {offset} beyond the committed end {self.applied}"), []
        batches = self.raft.log.read(offset, max_records)
        if not batches or batches[0].base_offset != offset:
            return error(Errors.OFFSET_OUT_OF_RANGE, f"offset {offset} is not a batch boundary"), []
        out, count = [], 0
        for batch in batches:
            if batch.next_offset > self.applied or (out and count + len(batch.records) > max_records):
                break
            out.append((batch.base_offset, list(batch.records)))
            count += len(batch.records)
        return error(Errors.NONE), out
