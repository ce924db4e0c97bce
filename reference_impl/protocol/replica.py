"""One partition replica on one broker: leader and follower logic (docs/protocol-rules.md 1.4-1.6, L, F, T).

A ``PartitionReplica`` owns a ``Log`` and the replica's view of the partition. It is sans-IO: the server
calls one method per event (metadata applied, produce, follower fetch received, fetch reply received, ISR
timer, AlterPartition reply) and passes ``now_ms``; every method returns values (replies, requests,
actions) and never blocks, sleeps or sends.

Calling conventions for the server:

- ``apply_metadata(state, now_ms)`` on every materialized change of the partition (T1-T7, L17); it returns
  fetcher actions (``StartFetching`` / ``StopFetching`` / ``DeleteLog``).
- Leader side: ``append_as_leader`` per produced batch (L1, L2, idempotence, L5),
  ``handle_follower_fetch`` per follower fetch (L8-L10), ``maybe_change_isr(now_ms)`` periodically and
  after fetches (L12-L15) which may return an ``AlterPartitionRequest`` to send; its reply goes to
  ``handle_alter_partition_response`` (L16). ``pending_alter_partition`` is the request still in flight
  (resend it unchanged if the reply was lost). Consumers use ``read_committed`` and ``list_offsets`` (L18).
- Follower side: ``build_fetch(now_ms)`` yields at most one outstanding fetch (F1); its reply goes to
  ``handle_fetch_response`` (F2-F4); a fetch that fails without a reply (timeout, broken connection)
  must be reported with ``abandon_fetch``, otherwise F1 keeps the partition waiting for it.
- After every call: ``drain_completed_acks()`` gives acks=all verdicts to answer producers (L5), and
  ``drain_events()`` gives trace events (plain dicts without time or node; the server stamps both).
- ``checkpoint_high_watermark()`` periodically and on shutdown; ``shutdown()`` on a clean stop (B4).

The variant switch (``ReplicaConfig.variant``) changes one thing here: with ``kip966`` the HWM advances only
while the committed ISR has at least MinISR members (L4).

``ReplicaConfig.historical_bug`` (off by default) runs one design Kafka replaced instead of the current one
(``historical_bugs``); each is a branch testing ``self._bug`` against its name: ``truncate-to-hwm`` in
``_become_follower_truncation`` and ``_last_fetched_epoch``, ``fetch-without-leader-epoch`` in ``_epoch_error``
and ``_last_fetched_epoch``, ``kip279-fast-failover-divergence`` in ``handle_follower_fetch``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.divergence import NO_EPOCH, diverging_epoch, truncation_offset
from reference_impl.protocol.errors import OK, Errors, InvariantViolation, KafkaError, error
from reference_impl.protocol.historical_bugs import (
    FETCH_WITHOUT_LEADER_EPOCH,
    KIP279_FAST_FAILOVER_DIVERGENCE,
    TRUNCATE_TO_HWM,
)
from reference_impl.protocol.log import Log, LogBatch
from reference_impl.protocol.log_summary import log_summary
from reference_impl.protocol.producer_state import ProducerStateManager
from reference_impl.protocol.records import NO_LEADER, PartitionState
from reference_impl.protocol.replica_messages import (
    ACKS_ALL,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Action,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AppendResult,
    CompletedAck,
    DeleteLog,
    FetchPartitionResult,
    FetchRequest,
    IsrMember,
    ListOffsetsResult,
    ProduceBatch,
    ReplicaConfig,
    StartFetching,
    StopFetching,
)

LEADER = "leader"
FOLLOWER = "follower"
NO_ROLE = "none"
DELETED = "deleted"

# L16: AlterPartition errors by what they say about the change (Kafka's Partition.handleAlterPartitionError).
# These come from checks the controller makes before it commits anything: the change was certainly not
# applied, so the Maximal ISR goes back to the ISR.
AP_NOT_APPLIED = frozenset({
    Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED, Errors.STALE_BROKER_EPOCH,
    Errors.UNKNOWN_TOPIC_ID, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.INVALID_REQUEST,
})
# The local metadata is behind the controller's (an earlier send of this very request may have been
# committed): the request stays pending until newer metadata answers it (L17).
AP_AWAIT_METADATA = frozenset({Errors.FENCED_LEADER_EPOCH, Errors.INVALID_UPDATE_VERSION,
                               Errors.NEW_LEADER_ELECTED})


@dataclass
class FollowerState:
    """What the leader knows of one follower (1.5); reset by T3."""

    leo: int | None = None  # None until a fetch is accepted in the current LE (L15a, L3 "NONE blocks")
    broker_epoch: int = -1
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None
    last_fetch_leader_leo: int = 0

    def record_fetch(self, fetch_offset: int, broker_epoch: int, leader_leo: int, now_ms: int) -> None:
        """L10: accept a fetch; track caught-up time as Kafka's ``Replica.updateFetchState`` does."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = now_ms
        elif fetch_offset >= self.last_fetch_leader_leo and self.last_fetch_ms is not None:
            # caught up with what the leader had at the previous fetch: caught up as of that time
            self.last_caught_up_ms = max(self.last_caught_up_ms or 0, self.last_fetch_ms)
        self.leo = fetch_offset
        self.broker_epoch = broker_epoch
        self.last_fetch_leader_leo = leader_leo
        self.last_fetch_ms = now_ms


@dataclass
class _PendingAck:
    ack_id: int
    base_offset: int
    last_offset: int


class PartitionReplica:
    """The state machine of one replica of one partition (see the module docstring for the conventions)."""

    def __init__(self, broker_id: int, topic_id: str, partition_id: int, log: Log,
                 config: ReplicaConfig | None = None, broker_epoch: int = -1) -> None:
        self.broker_id = broker_id
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.log = log
        self.config = config or ReplicaConfig()
        self.broker_epoch = broker_epoch  # set by the server once registered; carried in fetches and APs
        self.role = NO_ROLE
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.maximal_isr: list[int] = []
        self.adding: list[int] = []
        self.removing: list[int] = []
        # B5: no truncation at boot; a restarted replica starts from its (possibly stale) HWM checkpoint.
        self._hwm = min(log.checkpointed_high_watermark(), log.log_end_offset)
        self._leso: int | None = None
        self._leader_since_ms = 0
        self.followers: dict[int, FollowerState] = {}
        self._pending_ap: AlterPartitionRequest | None = None
        self._ap_resend_at_ms: int | None = None  # L16: when to resend a pending AP with no known outcome
        self._pending_acks: list[_PendingAck] = []
        self._next_ack_id = 0
        self._completed: list[CompletedAck] = []
        self._events: list[dict[str, Any]] = []
        self._fetch_in_flight: FetchRequest | None = None
        self._backoff_until_ms = 0
        self._bug = self.config.historical_bug
        self._log_checked_since_follower = False  # fetch-without-leader-epoch: the transition's one check
        self.producer_state = ProducerStateManager()
        self.producer_state.rebuild(log.batches())

    # ------------------------------------------------------------------ views
    @property
    def high_watermark(self) -> int:
        """The local HWM (a follower's may be stale or go down, F4)."""
        return self._hwm

    @property
    def log_end_offset(self) -> int:
        """The local LEO."""
        return self.log.log_end_offset

    @property
    def leso(self) -> int | None:
        """Leader epoch start offset: the LEO when this replica became leader in the current LE; else None."""
        return self._leso

    @property
    def pending_alter_partition(self) -> AlterPartitionRequest | None:
        """The AlterPartition request in flight (L12), to resend if its reply was lost."""
        return self._pending_ap

    @property
    def fetch_in_flight(self) -> FetchRequest | None:
        """The follower's outstanding fetch (F1), if any."""
        return self._fetch_in_flight

    def drain_events(self) -> list[dict[str, Any]]:
        """Trace events since the last drain (docs/history-schema.md; the server adds time and node)."""
        out, self._events = self._events, []
        return out

    def drain_completed_acks(self) -> list[CompletedAck]:
        """acks=all verdicts reached since the last drain (L5)."""
        out, self._completed = self._completed, []
        return out

    def _emit(self, kind: str, **attrs: Any) -> None:
        self._events.append({"kind": kind, "topic_id": self.topic_id, "partition": self.partition_id,
                             "replica": self.broker_id, **attrs})

    # ------------------------------------------------------------------ metadata (T1-T7, L17)
    def apply_metadata(self, state: PartitionState, now_ms: int) -> list[Action]:
        """Apply the materialized state of the partition; return the fetcher/log actions it implies."""
        if self.role == DELETED:
            return []
        # L17: only newer partition epochs are applied (a batch may already have carried this change).
        if state.partition_epoch <= self.partition_epoch:
            return []
        previous_role, previous_leader, previous_le = self.role, self.leader_id, self.leader_epoch
        self.replicas, self.isr = list(state.replicas), list(state.isr)
        self.adding, self.removing = list(state.adding), list(state.removing)
        self.leader_id, self.leader_epoch = state.leader, state.leader_epoch
        self.partition_epoch = state.partition_epoch
        # L17: a PE at or past the pending AP's expected PE answers it; the Maximal ISR follows the record.
        self._pending_ap = None
        self._ap_resend_at_ms = None
        self.maximal_isr = list(self.isr)
        self._emit("metadata_applied", **state.as_dict())
        actions: list[Action] = []
        new_epoch = state.leader_epoch != previous_le

        if self.broker_id not in state.replicas:  # T1
            self._renounce_leadership()
            self.role = DELETED
            self._fetch_in_flight = None
            self._emit("role", role=DELETED, leader_epoch=self.leader_epoch)
            return [StopFetching(), DeleteLog()]

        if state.leader == self.broker_id:
            if previous_role != LEADER or new_epoch:  # T3
                if previous_role == FOLLOWER:
                    actions.append(StopFetching())
                self._fetch_in_flight = None
                self._become_leader(re_elected=previous_role == LEADER, now_ms=now_ms)
            else:
                self._sync_followers()
                for r in self.isr:
                    follower = self.followers.get(r)
                    if follower is not None and follower.last_fetch_ms is None:
                        # joined the ISR by a controller change (not our AP): one lag window to fetch (L14)
                        follower.last_fetch_ms = follower.last_caught_up_ms = now_ms
            # T2 (and the tail of T3): recompute the HWM and the acks it completes.
            self._maybe_advance_hwm()
            return actions

        if state.leader == NO_LEADER:  # T6
            self._renounce_leadership()
            if previous_role == FOLLOWER:
                actions.append(StopFetching())
            self._fetch_in_flight = None
            self._set_role(NO_ROLE)
            return actions

        # a follower of another broker
        if previous_role == FOLLOWER and not new_epoch and previous_leader == state.leader:
            return actions  # T4: no-op
        self._renounce_leadership()  # T5
        self._leso = None
        self._fetch_in_flight = None  # a reply to the old fetch will be dropped (F2)
        self._backoff_until_ms = 0
        self._set_role(FOLLOWER)
        self._log_checked_since_follower = False
        if self._bug == TRUNCATE_TO_HWM:
            self._become_follower_truncation()
        actions.append(StartFetching(state.leader, state.leader_epoch))
        return actions

    def _set_role(self, role: str) -> None:
        self.role = role
        self._emit("role", role=role, leader=self.leader_id, leader_epoch=self.leader_epoch)

    def _sync_followers(self) -> None:
        """Keep one follower entry per other replica (a reassignment adds and removes replicas in an LE)."""
        for r in self.replicas:
            if r != self.broker_id and r not in self.followers:
                self.followers[r] = FollowerState()
        for r in [r for r in self.followers if r not in self.replicas]:
            del self.followers[r]

    def _become_leader(self, re_elected: bool, now_ms: int) -> None:
        """T3: LESO <- LEO, reset follower state (all of it for a new leader, non-ISR ones if re-elected)."""
        self._leso = self.log.log_end_offset
        self._leader_since_ms = now_ms
        old = self.followers if re_elected else {}
        self.followers = {}
        for r in self.replicas:
            if r == self.broker_id:
                continue
            if r in old and r in self.isr:
                self.followers[r] = old[r]  # T3: a re-elected leader keeps its ISR followers' state
            elif r in self.isr:
                # an ISR member gets one lag window from now to fetch in the new LE (L14)
                self.followers[r] = FollowerState(last_fetch_ms=now_ms, last_caught_up_ms=now_ms)
            else:
                self.followers[r] = FollowerState()
        self._set_role(LEADER)
        self._emit("leader_epoch_start", leader_epoch=self.leader_epoch, leso=self._leso,
                   hwm=self._hwm, leo=self.log.log_end_offset)

    def _renounce_leadership(self) -> None:
        """Leaving leadership nacks every pending write (L5) and forgets followers and the pending AP."""
        if self.role != LEADER:
            return
        for p in self._pending_acks:
            self._completed.append(CompletedAck(p.ack_id, error(Errors.NOT_LEADER_OR_FOLLOWER,
                                                                "leadership lost"), p.base_offset, p.last_offset))
        self._pending_acks = []
        self.followers = {}
        self._pending_ap = None
        self._ap_resend_at_ms = None
        self._leso = None

    # ------------------------------------------------------------------ HWM and acks (L3-L5)
    def _maybe_advance_hwm(self) -> None:
        if self.role != LEADER:
            return
        if self.config.variant == "kip966" and len(self.isr) < self.config.min_insync_replicas:
            return  # L4: frozen while the committed ISR is below MinISR
        candidate = self.log.log_end_offset
        for r in self.maximal_isr:  # L3: over the Maximal ISR (1.6), so L13 protects in-flight additions
            if r == self.broker_id:
                continue
            follower = self.followers.get(r)
            if follower is None or follower.leo is None:
                return  # L3: a member without a fetch in this LE blocks the HWM
            candidate = min(candidate, follower.leo)
        if candidate > self._hwm:  # L3: a leader never lowers its HWM
            self._set_hwm(candidate)
            self._complete_acks()

    def _set_hwm(self, hwm: int) -> None:
        self._hwm = hwm
        self.producer_state.on_high_watermark(hwm)
        self._emit("hwm", hwm=hwm, role=self.role, leader_epoch=self.leader_epoch)

    def _verdict(self) -> KafkaError:
        # L5: positive only if the committed ISR still has MinISR members when the HWM passes the write.
        if len(self.isr) >= self.config.min_insync_replicas:
            return OK
        return error(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                     f"ISR {self.isr} smaller than min.insync.replicas {self.config.min_insync_replicas}")

    def _complete_acks(self) -> None:
        still = []
        for p in self._pending_acks:
            if self._hwm > p.last_offset:
                self._completed.append(CompletedAck(p.ack_id, self._verdict(), p.base_offset, p.last_offset))
            else:
                still.append(p)
        self._pending_acks = still

    # ------------------------------------------------------------------ produce (L1, L2, L5, idempotence)
    def append_as_leader(self, batch: ProduceBatch, acks: int, now_ms: int,
                         stamp: Callable[[bytes, int, int], bytes] | None = None) -> AppendResult:
        """Append a client batch as leader; see ``AppendResult`` for how the verdict is delivered.

        ``stamp(payload, base_offset, leader_epoch) -> payload`` is called once the batch is certain to be
        appended, so the server can rewrite the v2 batch header (base offset, partition leader epoch, CRC)
        with the values the log assigns; it must be a pure function of its arguments.
        """
        if self.role != LEADER:
            return AppendResult(error(Errors.NOT_LEADER_OR_FOLLOWER, f"{self.broker_id} is not the leader"))
        if acks not in (ACKS_ALL, 0, 1):
            return AppendResult(error(Errors.INVALID_REQUIRED_ACKS, f"acks={acks}"))
        if batch.record_count < 1:
            return AppendResult(error(Errors.INVALID_RECORD, "empty batch"))
        # L1: acks=all is refused up front when the committed ISR is below MinISR (Kafka checks the
        # committed ISR here; the TLA+ uses the Maximal ISR size).
        if acks == ACKS_ALL and len(self.isr) < self.config.min_insync_replicas:
            return AppendResult(error(Errors.NOT_ENOUGH_REPLICAS,
                                      f"ISR {self.isr} < min.insync.replicas {self.config.min_insync_replicas}"))
        if (self.config.transaction_verification
                and self.producer_state.needs_verification(batch.producer_id, batch.attributes)
                and not self.producer_state.verified(batch.producer_id, batch.producer_epoch,
                                                     batch.verification_guard)):
            # KIP-890: it would open a transaction the coordinator has not confirmed (or a marker overtook
            # the confirmation): it may be a late batch of a transaction that already ended
            return AppendResult(error(Errors.INVALID_TXN_STATE,
                                      f"producer {batch.producer_id}: transaction not verified on this partition"))
        check = self.producer_state.check(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                          batch.record_count, batch.attributes)
        if not check.error.ok:
            return AppendResult(check.error)
        if check.duplicate_of is not None:
            # a retry of a cached batch: answer the original offsets, append nothing (acks=all still waits
            # for the HWM to pass the original batch, as Kafka's delayed produce does)
            base, last, duplicate = check.duplicate_of.first_offset, check.duplicate_of.last_offset, True
        else:
            base_offset = self.log.log_end_offset
            payload = batch.payload if stamp is None else stamp(batch.payload, base_offset, self.leader_epoch)
            appended = LogBatch(base_offset=base_offset, record_count=batch.record_count,
                                epoch=self.leader_epoch,  # L2
                                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                base_sequence=batch.base_sequence, max_timestamp=batch.max_timestamp,
                                payload=payload, attributes=batch.attributes, control_type=batch.control_type)
            self.log.append(appended)
            self.producer_state.update(appended)
            self._emit("leo", leo=self.log.log_end_offset, role=LEADER, leader_epoch=self.leader_epoch)
            base, last, duplicate = appended.base_offset, appended.last_offset, False
            self._maybe_advance_hwm()  # L3: with ISR={leader} a produce moves the HWM
        if acks != ACKS_ALL:
            return AppendResult(OK, base, last, duplicate=duplicate)  # L7: acked after the local append
        if self._hwm > last:
            return AppendResult(self._verdict(), base, last, duplicate=duplicate)
        self._next_ack_id += 1
        self._pending_acks.append(_PendingAck(self._next_ack_id, base, last))
        return AppendResult(OK, base, last, ack_id=self._next_ack_id, duplicate=duplicate)

    def cancel_ack(self, ack_id: int) -> bool:
        """Forget a pending acks=all write whose produce request timed out (the server answered it
        REQUEST_TIMED_OUT); returns whether it was still pending. The write itself stays in the log (L6)."""
        before = len(self._pending_acks)
        self._pending_acks = [p for p in self._pending_acks if p.ack_id != ack_id]
        return len(self._pending_acks) != before

    # ------------------------------------------------------------------ leader: follower fetch (L8-L10)
    def _epoch_error(self, request_epoch: int) -> KafkaError | None:
        """L8: the fetch validation shared by followers and consumers (None when it passes)."""
        if self._bug == FETCH_WITHOUT_LEADER_EPOCH:
            # before KIP-320 a fetch carried no current leader epoch: any broker that thinks it leads serves
            request_epoch = self.leader_epoch
        if request_epoch > self.leader_epoch:
            return error(Errors.UNKNOWN_LEADER_EPOCH, f"request LE {request_epoch} > local {self.leader_epoch}")
        if request_epoch < self.leader_epoch:
            return error(Errors.FENCED_LEADER_EPOCH, f"request LE {request_epoch} < local {self.leader_epoch}")
        if self.role != LEADER:
            return error(Errors.NOT_LEADER_OR_FOLLOWER, f"{self.broker_id} is not the leader")
        return None

    def handle_follower_fetch(self, replica_id: int, broker_epoch: int, leader_epoch: int, fetch_offset: int,
                              last_fetched_epoch: int, max_bytes: int, now_ms: int) -> FetchPartitionResult:
        """Answer a follower's fetch as leader (L8-L10); may advance the HWM and complete acks."""
        err = self._epoch_error(leader_epoch)
        if err is None and replica_id not in self.followers:
            err = error(Errors.NOT_LEADER_OR_FOLLOWER, f"{replica_id} is not a replica")
        if err is not None:
            return FetchPartitionResult(err, self.leader_epoch, fetch_offset, -1)
        leo = self.log.log_end_offset
        diverging = diverging_epoch(self.log.epoch_start_offsets(), leo, self.leader_epoch, fetch_offset,
                                    last_fetched_epoch,
                                    answer_requested_epoch=self._bug == KIP279_FAST_FAILOVER_DIVERGENCE)
        if diverging is not None:  # L9: no records and no follower-state update
            return FetchPartitionResult(OK, self.leader_epoch, fetch_offset, self._hwm, self.log.log_start_offset,
                                        self._hwm, diverging)
        if fetch_offset > leo or fetch_offset < self.log.log_start_offset:
            return FetchPartitionResult(error(Errors.OFFSET_OUT_OF_RANGE, f"{fetch_offset} not in log"),
                                        self.leader_epoch, fetch_offset, self._hwm, self.log.log_start_offset)
        self.followers[replica_id].record_fetch(fetch_offset, broker_epoch, leo, now_ms)  # L10
        self._maybe_advance_hwm()
        batches = tuple(self.log.read(fetch_offset, max_bytes))
        return FetchPartitionResult(OK, self.leader_epoch, fetch_offset, self._hwm, self.log.log_start_offset,
                                    self._hwm, None, batches)

    # ------------------------------------------------------------------ leader: ISR changes (L12-L16)
    def _lagging(self, follower: FollowerState, now_ms: int) -> bool:
        """L14: no fetch, or not caught up with the leader, within the lag window."""
        lag = self.config.replica_lag_time_max_ms
        if follower.last_fetch_ms is None or now_ms - follower.last_fetch_ms > lag:
            return True
        if follower.leo is not None and follower.leo >= self.log.log_end_offset:
            return False
        return follower.last_caught_up_ms is None or now_ms - follower.last_caught_up_ms > lag

    def _may_join_isr(self, replica_id: int, now_ms: int) -> bool:
        """L15 (a)-(d) for a non-member."""
        follower = self.followers.get(replica_id)
        if follower is None or follower.leo is None:
            return False  # (a) no fetch accepted in the current LE
        if follower.leo < self._hwm:
            return False  # (b)
        if self._leso is None or follower.leo < self._leso:
            return False  # (c): a new leader's stale HWM alone would admit an incomplete follower
        # (d) the latency rule: the fetch that brought it up to date is recent
        return follower.last_fetch_ms is not None and \
            now_ms - follower.last_fetch_ms <= self.config.replica_lag_time_max_ms

    def maybe_change_isr(self, now_ms: int, ineligible: Collection[int] = (),
                         broker_epochs: Mapping[int, int] | None = None) -> AlterPartitionRequest | None:
        """Propose an ISR change if one is due (L12-L15); the caller sends the returned request.

        ``ineligible``: brokers the local metadata shows fenced or shutting down (the server passes
        ``MetadataImage.ineligible_brokers()``). ``broker_epochs``: the registered epoch of each broker
        (``MetadataImage.broker_epochs()``); a follower whose accepted fetch carried another epoch (an older
        incarnation, scenario 10) is not proposed. Both mirror Kafka's leader-side eligibility check
        (KIP-841, KIP-903); without them the controller refuses such proposals anyway (C14).
        """
        if self.role != LEADER:
            return None
        if self._pending_ap is not None:
            # L12: one AP in flight at most; one whose outcome is unknown is sent again, unchanged (L16)
            if self._ap_resend_at_ms is not None and now_ms >= self._ap_resend_at_ms:
                self._ap_resend_at_ms = None
                self._emit("isr_resent", proposed=self._pending_ap.isr_ids,
                           partition_epoch=self._pending_ap.partition_epoch, leader_epoch=self.leader_epoch)
                return self._pending_ap
            return None
        shrink = {r for r in self.isr if r != self.broker_id and r in self.followers
                  and self._lagging(self.followers[r], now_ms)}
        grow = [r for r in self.replicas if r not in self.isr and r not in ineligible
                and self._may_join_isr(r, now_ms)
                and (broker_epochs is None or broker_epochs.get(r) == self.followers[r].broker_epoch)]
        proposed = [r for r in self.isr if r not in shrink] + grow
        if set(proposed) == set(self.isr):
            return None  # L12: only a real change is proposed
        members = tuple(IsrMember(r, self.followers[r].broker_epoch if r in grow else -1) for r in proposed)
        request = AlterPartitionRequest(self.topic_id, self.partition_id, self.broker_id, self.broker_epoch,
                                        self.leader_epoch, self.partition_epoch, members)
        self._pending_ap = request
        # L13: the Maximal ISR grows at once, so the HWM already waits for a member being added.
        self.maximal_isr = self.isr + [r for r in proposed if r not in self.isr]
        self._emit("isr_proposed", isr=list(self.isr), proposed=proposed, maximal_isr=list(self.maximal_isr),
                   partition_epoch=self.partition_epoch, leader_epoch=self.leader_epoch)
        return request

    def handle_alter_partition_response(self, request: AlterPartitionRequest, response: AlterPartitionResponse,
                                        now_ms: int) -> None:
        """L16: apply a successful AP reply if it is newer; ignore stale replies. An error rolls the Maximal
        ISR back only when it says the change was not applied (``AP_NOT_APPLIED``); with newer metadata on
        its way (``AP_AWAIT_METADATA``) the request stays pending until that metadata answers it (L17); any
        other error leaves the outcome unknown (the controller may have committed it), so the request stays
        pending and ``maybe_change_isr`` sends it again after ``alter_partition_retry_ms``. Rolling back on
        an unknown outcome would let the HWM advance over fewer replicas than the committed ISR."""
        if self._pending_ap is None or request != self._pending_ap:
            return
        if not response.error.ok:
            code = response.error.code
            if code in AP_NOT_APPLIED:
                self._pending_ap = None
                self._ap_resend_at_ms = None
                self.maximal_isr = list(self.isr)  # L16: rollback
                self._emit("isr_rollback", isr=list(self.isr), error=response.error.name,
                           partition_epoch=self.partition_epoch)
            elif code not in AP_AWAIT_METADATA:
                self._ap_resend_at_ms = now_ms + self.config.alter_partition_retry_ms
            return
        if response.leader_epoch != self.leader_epoch:
            return  # Kafka keeps the change in flight until the metadata with the new LE arrives (L17)
        self._pending_ap = None
        self._ap_resend_at_ms = None
        if response.partition_epoch > self.partition_epoch:
            self.isr = list(response.isr)
            self.partition_epoch = response.partition_epoch
            self._emit("isr_updated", isr=list(self.isr), partition_epoch=self.partition_epoch,
                       leader_epoch=self.leader_epoch)
        self.maximal_isr = list(self.isr)
        self._maybe_advance_hwm()  # L16: a shrink may let the HWM move (and complete acks)

    # ------------------------------------------------------------------ follower (F1-F5)
    def build_fetch(self, now_ms: int, max_bytes: int | None = None) -> FetchRequest | None:
        """F1: the next fetch for this partition, or None (not a follower, one in flight, backing off)."""
        if self.role != FOLLOWER or self._fetch_in_flight is not None or now_ms < self._backoff_until_ms:
            return None
        request = FetchRequest(self.broker_id, self.broker_epoch, self.leader_id, self.leader_epoch,
                               self.log.log_end_offset, self._last_fetched_epoch(),
                               max_bytes if max_bytes is not None else self.config.fetch_max_bytes)
        self._fetch_in_flight = request
        return request

    def _last_fetched_epoch(self) -> int:
        """The epoch a fetch carries for the leader's divergence check (L9): the log's last epoch, or none
        in the designs where fetches carried none."""
        if self._bug == TRUNCATE_TO_HWM:
            return NO_EPOCH  # before KIP-101 logs had no leader epochs: a follower fetched by offset alone
        if self._bug == FETCH_WITHOUT_LEADER_EPOCH and self._log_checked_since_follower:
            # before KIP-320 the follower checked its log once, on becoming a follower (OffsetsForLeaderEpoch),
            # then fetched by offset alone until the next transition it was told about
            return NO_EPOCH
        return self.log.last_epoch

    def _become_follower_truncation(self) -> None:
        """truncate-to-hwm (before KIP-101): a new follower cuts its log at its own high watermark."""
        before = self.log.log_end_offset
        if self._hwm >= before:
            return
        after = self.log.truncate_to(self._hwm)
        self.producer_state.rebuild(self.log.batches())
        self._emit("truncate", from_leo=before, to_offset=after, diverging_epoch=None, diverging_end_offset=None,
                   leader_epoch=self.leader_epoch, reason="high watermark")
        self.emit_log_summary("truncate")

    def abandon_fetch(self, request: FetchRequest, now_ms: int) -> None:
        """The outstanding fetch failed without a reply (connection lost, request timed out): forget it and
        back off (F2), so ``build_fetch`` can send the next one. Ignored for any other request."""
        if request == self._fetch_in_flight:
            self._fetch_in_flight = None
            self._backoff_until_ms = now_ms + self.config.fetch_backoff_ms

    def handle_fetch_response(self, request: FetchRequest, response: FetchPartitionResult, now_ms: int) -> None:
        """F2-F4: apply the leader's reply to the outstanding fetch (dropping stale ones)."""
        if request != self._fetch_in_flight:
            return  # F2: not our outstanding fetch (the partition left that fetcher, or a duplicate)
        self._fetch_in_flight = None
        if (self.role != FOLLOWER or request.leader_id != self.leader_id
                or request.leader_epoch != self.leader_epoch or response.fetch_offset != self.log.log_end_offset):
            return  # F2
        if not response.error.ok:
            self._backoff_until_ms = now_ms + self.config.fetch_backoff_ms  # F2: back off, wait for metadata
            return
        if response.diverging_epoch is not None:
            self._truncate_diverged(response)
            return
        self._log_checked_since_follower = True
        appended = False
        for batch in response.batches:
            if batch.next_offset <= self.log.log_end_offset:
                continue  # already present (a leader reads from the batch containing the offset)
            self.log.append(batch)  # raises InvariantViolation on a gap or an epoch regression (I10, I11)
            self.producer_state.update(batch)
            appended = True
        if appended:
            self._emit("leo", leo=self.log.log_end_offset, role=FOLLOWER, leader_epoch=self.leader_epoch)
        new_hwm = min(response.high_watermark, self.log.log_end_offset)  # F4 (Kafka's min); may go down
        if new_hwm != self._hwm and new_hwm >= 0:
            self._set_hwm(new_hwm)

    def _truncate_diverged(self, response: FetchPartitionResult) -> None:
        """F3: cut the log where it stops matching the leader's, then refetch from the new LEO."""
        assert response.diverging_epoch is not None
        before = self.log.log_end_offset
        cut = truncation_offset(self.log.epoch_start_offsets(), before, response.diverging_epoch)
        after = self.log.truncate_to(cut)
        self.producer_state.rebuild(self.log.batches())
        self._emit("truncate", from_leo=before, to_offset=after, diverging_epoch=response.diverging_epoch.epoch,
                   diverging_end_offset=response.diverging_epoch.end_offset, leader_epoch=self.leader_epoch)
        # Kafka lowers the HWM with the log (the TLA+ leaves it; it is never served from a follower anyway).
        # Only after an unclean election (C12, K7) can a follower cut below its HWM; the trace says so.
        if self._hwm > after:
            self._set_hwm(after)
        self.emit_log_summary("truncate")

    # ------------------------------------------------------------------ consumers (L18, I15)
    def read_committed(self, fetch_offset: int, max_bytes: int,
                       current_leader_epoch: int = -1, isolation_level: int = READ_UNCOMMITTED) -> FetchPartitionResult:
        """A consumer fetch: only whole batches below the HWM, from the leader (I15); at READ_COMMITTED only
        below the last stable offset, with the aborted transactions of the range (KIP-98)."""
        err = self._epoch_error(current_leader_epoch) if current_leader_epoch >= 0 else None
        if err is None and self.role != LEADER:
            err = error(Errors.NOT_LEADER_OR_FOLLOWER, f"{self.broker_id} is not the leader")
        if err is not None:
            return FetchPartitionResult(err, self.leader_epoch, fetch_offset)
        if fetch_offset > self.log.log_end_offset or fetch_offset < self.log.log_start_offset:
            return FetchPartitionResult(error(Errors.OFFSET_OUT_OF_RANGE, f"{fetch_offset} not in log"),
                                        self.leader_epoch, fetch_offset, self._hwm, self.log.log_start_offset,
                                        self._hwm)
        lso = self.last_stable_offset
        limit = lso if isolation_level == READ_COMMITTED else self._hwm
        visible = tuple(b for b in self.log.read(fetch_offset, max_bytes) if b.last_offset < limit)
        aborted: tuple[tuple[int, int], ...] = ()
        if isolation_level == READ_COMMITTED and visible:
            aborted = tuple(self.producer_state.aborted_transactions(visible[0].base_offset,
                                                                     visible[-1].next_offset))
        return FetchPartitionResult(OK, self.leader_epoch, fetch_offset, self._hwm, self.log.log_start_offset,
                                    lso, None, visible, aborted)

    @property
    def last_stable_offset(self) -> int:
        """KIP-98's LSO: the first offset of the earliest open transaction, never above the HWM."""
        return self.producer_state.last_stable_offset(self._hwm)

    def list_offsets(self, timestamp: int, current_leader_epoch: int = -1,
                     isolation_level: int = READ_UNCOMMITTED) -> ListOffsetsResult:
        """ListOffsets as leader: LATEST = HWM, EARLIEST = log start, MAX_TIMESTAMP, or by timestamp.

        L18: until the HWM reaches the LESO the answer is OFFSET_NOT_AVAILABLE (the HWM of a new leader may
        be stale). Lookups by timestamp resolve to a batch's base offset (the core does not parse records).
        """
        err = self._epoch_error(current_leader_epoch) if current_leader_epoch >= 0 else None
        if err is None and self.role != LEADER:
            err = error(Errors.NOT_LEADER_OR_FOLLOWER, f"{self.broker_id} is not the leader")
        if err is not None:
            return ListOffsetsResult(err)
        if self._leso is None or self._hwm < self._leso:
            return ListOffsetsResult(error(Errors.OFFSET_NOT_AVAILABLE,
                                           f"HWM {self._hwm} below leader epoch start {self._leso}"))
        if timestamp == LATEST_TIMESTAMP:
            latest = self.last_stable_offset if isolation_level == READ_COMMITTED else self._hwm
            return ListOffsetsResult(OK, latest, -1, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return ListOffsetsResult(OK, self.log.log_start_offset, -1, self.leader_epoch)
        committed = [b for b in self.log.batches() if b.last_offset < self._hwm]
        if timestamp == MAX_TIMESTAMP:
            if not committed:
                return ListOffsetsResult(OK, -1, -1, self.leader_epoch)
            best = max(committed, key=lambda b: (b.max_timestamp, -b.base_offset))
            return ListOffsetsResult(OK, best.base_offset, best.max_timestamp, best.epoch)
        for b in committed:
            if b.max_timestamp >= timestamp:
                return ListOffsetsResult(OK, b.base_offset, b.max_timestamp, b.epoch)
        return ListOffsetsResult(OK, -1, -1, self.leader_epoch)

    # ------------------------------------------------------------------ lifecycle
    def checkpoint_high_watermark(self) -> None:
        """Write the HWM checkpoint (periodically and on shutdown)."""
        self.log.checkpoint_high_watermark(self._hwm)

    def shutdown(self) -> None:
        """Clean stop (B4): nack pending writes, flush the log, checkpoint the HWM."""
        self._renounce_leadership()
        self._fetch_in_flight = None
        if self.role != DELETED:
            self._set_role(NO_ROLE)  # a stopped replica serves nothing; a restart builds a new one (B5)
        self.log.flush()
        self.checkpoint_high_watermark()
        self.emit_log_summary("shutdown")
        self._emit("shutdown", clean=True)

    def emit_log_summary(self, reason: str) -> None:
        """Trace the log's contents (``log_summary``: epoch ranges and digests, for I4 and I16), unless
        ``ReplicaConfig.trace_log_summaries`` is off. Emitted after every truncation and on a clean stop;
        the server and the simulator also emit one for each log recovered at start."""
        if self.config.trace_log_summaries:
            self._emit("log_summary", reason=reason,
                       **log_summary(self.log.batches(), self.log.log_start_offset, self._hwm))

    def check_invariants(self) -> None:
        """I10 and the local half of I3; raises ``InvariantViolation`` (for tests and the simulator)."""
        if self.role == LEADER:
            if self.leader_id != self.broker_id:
                raise InvariantViolation(f"leader role but leader is {self.leader_id}")
            if self._fetch_in_flight is not None:
                raise InvariantViolation("a leader is fetching")
            if self._hwm > self.log.log_end_offset:
                raise InvariantViolation(f"leader HWM {self._hwm} > LEO {self.log.log_end_offset}")
            if not set(self.isr) <= set(self.maximal_isr):
                raise InvariantViolation(f"ISR {self.isr} not within Maximal ISR {self.maximal_isr}")
            if self._pending_ap is None and set(self.isr) != set(self.maximal_isr):
                raise InvariantViolation(f"Maximal ISR {self.maximal_isr} != ISR {self.isr} with no AP")
        if self.role == FOLLOWER and self.leader_id in (NO_LEADER, self.broker_id):
            raise InvariantViolation(f"follower of {self.leader_id}")
        if self.role != FOLLOWER and self._fetch_in_flight is not None:
            raise InvariantViolation(f"{self.role} with a fetch in flight")
        batches = self.log.batches()
        expected = self.log.log_start_offset
        for b in batches:
            if b.base_offset != expected:
                raise InvariantViolation(f"gap or overlap at {b.base_offset}, expected {expected}")
            expected = b.next_offset
        if expected != self.log.log_end_offset:
            raise InvariantViolation(f"LEO {self.log.log_end_offset} != end of batches {expected}")
        epochs = [b.epoch for b in batches]
        if epochs != sorted(epochs):
            raise InvariantViolation(f"record epochs decrease along the log: {epochs}")
