"""The partition-change builder: one place that turns "what should change" into one record (or none).

Modelled on Apache Kafka's ``PartitionChangeBuilder``: every target field starts as the partition's current
value, callers set only what they want changed, and ``build()`` returns a ``PartitionChangeRecord`` holding
only the fields that really differ, or ``None`` when nothing changed (so no-op detection is exact). The
builder never mutates the partition; the controller's ``replay`` applies the record.

``build()`` runs a fixed pipeline:

1. **completion** (C17, C18, C19): if a reassignment is in progress and the (requested) ISR satisfies the
   completion predicate, the final replica set and final ISR replace the merged ones;
2. **ELR pool** (K2, K4, K12) computed against the target ISR (``elr.next_elr``);
3. **election** (C10, C11, C12, K3, K7): keep a still-valid leader, else the first valid replica in
   target-replica order (ISR members; K966 then ELR members, who move into the ISR; with an UNCLEAN
   election then any acceptable replica, or the one ``set_unclean_leader`` names (K7's unclean recovery
   picks it from the replicas' logs), which resets the ISR to the leader, clears ELR/LKELR and marks it
   RECOVERING);
4. **v3.5 non-empty ISR** (C6): without ELR, a change that would empty the ISR keeps the old ISR;
5. **epochs** (C2): the record asks for LE+1 when the leader changes, a reassignment completes (seed 000
   section 4.2 step 3: "whether the leader is changed or not"), or replicas leave the replica set (a
   cancel's revert, as Kafka does). Replay sets PE+1 for every record.

``trace`` keeps the named intermediate states of the last ``build()``. A completion is traced in the
order the ZooKeeper-era controller made it visible (seed 001: phase B, B3 leader, B4 ISR shrink, B6 replica
set), although KRaft commits all of it in one record.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence

from .elr import next_elr
from .records import NO_LEADER, NO_LEADER_CHANGE, RECOVERED, RECOVERING, PartitionChangeRecord, PartitionState


class Election(enum.Enum):
    """Which leaders the builder may elect (Kafka's ``PartitionChangeBuilder.Election``)."""

    ONLINE = "ONLINE"        # C11: keep a valid leader, else a clean candidate
    PREFERRED = "PREFERRED"  # C10: the first replica if it is a clean candidate
    UNCLEAN = "UNCLEAN"      # C12: as ONLINE, then any acceptable replica outside the ISR


class CompletionRule(enum.Enum):
    """C17's size condition on the final ISR (docs/protocol-rules.md 5.8(i)); docs/kafka-differences.md
    compares both with Apache Kafka's rules, which changed across releases."""

    MIN_ISR = "min_isr"      # seed 000 4.2, v3.5 TLA+ and K966: final ISR >= MinISR (the default)
    NON_EMPTY = "non_empty"  # v3.5 prose, and Kafka 3.0-3.7's PartitionReassignmentReplicas: final ISR != []


def reassignment_completion(
    replicas: Sequence[int], isr: Sequence[int], adding: Sequence[int], removing: Sequence[int],
    min_isr: int, rule: CompletionRule = CompletionRule.MIN_ISR,
) -> tuple[list[int], list[int]] | None:
    """C17: the ``(final replicas, final ISR)`` if a reassignment in progress may complete with ``isr``.

    Returns ``None`` when no reassignment is in progress or when the predicate does not hold: some
    ``adding`` replica is missing from the final ISR (= ISR without ``removing``), the final ISR is too
    small for ``rule``, or the final replica set would be empty.
    """
    if not adding and not removing:
        return None
    removing_set = set(removing)
    final_isr = [r for r in isr if r not in removing_set]
    final_replicas = [r for r in replicas if r not in removing_set]
    if not final_replicas:
        return None
    if not set(adding) <= set(final_isr):
        return None
    needed = min_isr if rule is CompletionRule.MIN_ISR else 1
    if len(final_isr) < max(needed, 1):
        return None
    return final_replicas, final_isr


class PartitionChangeBuilder:
    """Compute the one ``PartitionChangeRecord`` that moves a partition to the requested targets."""

    def __init__(
        self,
        partition: PartitionState,
        topic_id: str,
        partition_id: int,
        is_acceptable_leader: Callable[[int], bool],
        *,
        min_isr: int,
        elr_enabled: bool = False,
        completion_rule: CompletionRule = CompletionRule.MIN_ISR,
    ) -> None:
        """``is_acceptable_leader(b)``: b is registered, unfenced and not shutting down (after this change)."""
        self.partition = partition
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.is_acceptable_leader = is_acceptable_leader
        self.min_isr = min_isr
        self.elr_enabled = elr_enabled
        self.completion_rule = completion_rule
        self.target_isr = list(partition.isr)
        self.target_replicas = list(partition.replicas)
        self.target_adding = list(partition.adding)
        self.target_removing = list(partition.removing)
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.election = Election.ONLINE
        self.unclean_leader: int | None = None
        self.unclean_shutdown: list[int] = []
        self.clear_elr = False
        self.trace: list[tuple[str, PartitionState]] = []
        self.completed_reassignment = False
        self.unclean_election = False

    # -- setters (return self so calls chain) ------------------------------------------------------------
    def set_target_isr(self, isr: Iterable[int]) -> PartitionChangeBuilder:
        """The ISR the caller wants (an AlterPartition's proposal, the ISR minus a fenced broker...)."""
        self.target_isr = list(isr)
        return self

    def set_target_replicas(self, replicas: Iterable[int]) -> PartitionChangeBuilder:
        """The replica set the caller wants (a reassignment's merged set or revert)."""
        self.target_replicas = list(replicas)
        return self

    def set_target_adding(self, adding: Iterable[int]) -> PartitionChangeBuilder:
        """The reassignment's adding set."""
        self.target_adding = list(adding)
        return self

    def set_target_removing(self, removing: Iterable[int]) -> PartitionChangeBuilder:
        """The reassignment's removing set."""
        self.target_removing = list(removing)
        return self

    def set_target_leader_recovery_state(self, state: str) -> PartitionChangeBuilder:
        """RECOVERED / RECOVERING (an AlterPartition from a recovered unclean leader)."""
        self.target_leader_recovery_state = state
        return self

    def set_election(self, election: Election) -> PartitionChangeBuilder:
        """Which kind of election ``build`` may run (ONLINE by default)."""
        self.election = election
        return self

    def set_unclean_leader(self, broker_id: int) -> PartitionChangeBuilder:
        """K7: the replica an UNCLEAN election takes, chosen by an unclean recovery from the replicas' log
        ends, instead of the first acceptable one in replica order. Clean candidates still come first, and
        the named replica must be acceptable, else nobody is elected."""
        self.unclean_leader = broker_id
        return self

    def set_unclean_shutdown_replicas(self, brokers: Iterable[int]) -> PartitionChangeBuilder:
        """K4: brokers that registered without a clean-shutdown marker: purge them from ISR/ELR/leader."""
        self.unclean_shutdown = list(brokers)
        return self

    def set_clear_elr(self, clear: bool = True) -> PartitionChangeBuilder:
        """Empty ELR and LKELR (Kafka's ClearElrRecord, used when the ELR feature is turned off)."""
        self.clear_elr = clear
        return self

    # -- the pipeline ------------------------------------------------------------------------------------
    def _snapshot(self, label: str, leader: int, isr: Sequence[int], replicas: Sequence[int],
                  adding: Sequence[int], removing: Sequence[int], elr: Sequence[int] | None = None,
                  lkelr: Sequence[int] | None = None) -> None:
        # Intermediate states are not committed, so they keep the current epochs (seed 000 example 1).
        state = self.partition.copy()
        state.leader, state.isr, state.replicas = leader, list(isr), list(replicas)
        state.adding, state.removing = list(adding), list(removing)
        if elr is not None:
            state.elr = list(elr)
        if lkelr is not None:
            state.last_known_elr = list(lkelr)
        self.trace.append((label, state))

    def _elect(self, isr: Sequence[int], elr: Sequence[int]) -> tuple[int, str]:
        """Return ``(leader, how)``; how is 'keep', 'isr', 'elr', 'unclean' or 'none' (C11, C12, K3)."""
        isr_set, elr_set = set(isr), set(elr)

        def clean(r: int) -> bool:
            return r in isr_set and self.is_acceptable_leader(r)

        current = self.partition.leader
        if self.election is Election.PREFERRED and self.target_replicas:
            preferred = self.target_replicas[0]
            if clean(preferred):
                return preferred, "isr"
        if current != NO_LEADER and clean(current):
            return current, "keep"  # C11 [T]: a still-valid leader is kept
        for r in self.target_replicas:
            if clean(r):
                return r, "isr"
        if self.elr_enabled:
            # K3: no ISR candidate, so an unfenced ELR member (it is complete because L4 froze the HWM).
            for r in self.target_replicas:
                if r in elr_set and self.is_acceptable_leader(r):
                    return r, "elr"
        if self.election is Election.UNCLEAN:
            if self.unclean_leader is not None:
                # K7: the recovery chose this replica (the most complete log among those that answered).
                if self.unclean_leader in self.target_replicas and self.is_acceptable_leader(self.unclean_leader):
                    return self.unclean_leader, "unclean"
                return NO_LEADER, "none"
            # C12: any live replica, possibly missing committed records (declared unsafe).
            for r in self.target_replicas:
                if self.is_acceptable_leader(r):
                    return r, "unclean"
        return NO_LEADER, "none"

    def build(self) -> PartitionChangeRecord | None:
        """Run the pipeline (module docstring) and return the record, or None when nothing changes."""
        p = self.partition
        self.trace = []
        isr = [r for r in self.target_isr if r not in set(self.unclean_shutdown)]  # K4: purge from the ISR
        replicas, adding, removing = self.target_replicas, self.target_adding, self.target_removing
        completion = reassignment_completion(replicas, isr, adding, removing, self.min_isr,
                                             self.completion_rule)
        merged_replicas, merged_adding, merged_removing, merged_isr = replicas, adding, removing, isr
        if completion is not None:
            # C19: the catch-up ISR and the completion are one atomic change.
            self.completed_reassignment = True
            replicas, isr = completion
            adding, removing = [], []
        self.target_replicas = list(replicas)

        # K2/K4/K12: the ELR pool for this ISR (empty without ELR).
        if self.elr_enabled and not self.clear_elr:
            elr, lkelr = next_elr(p.isr, p.elr, p.last_known_elr, isr, replicas, self.min_isr,
                                  self.unclean_shutdown)
        else:
            elr, lkelr = [], []

        leader, how = self._elect(isr, elr)
        recovery = self.target_leader_recovery_state
        if how == "elr":
            # K3: the elected ELR member joins the ISR; it leaves the ELR (K12) and, while the ISR stays
            # below MinISR, K5 would record it as last-known, but it is in the ISR now (see elr.next_elr).
            isr = [*isr, leader]
            elr, lkelr = next_elr(p.isr, p.elr, p.last_known_elr, isr, replicas, self.min_isr,
                                  self.unclean_shutdown)
        elif how == "unclean":
            # C12: the new leader may lack committed records: it alone is the ISR, and it must recover
            # (RECOVERING until its first AlterPartition), as Kafka does. The old ELR/LKELR guarantees are
            # void relative to the new leader's log, so they are dropped.
            self.unclean_election = True
            isr, elr, lkelr = [leader], [], []
            recovery = RECOVERING
        if not self.elr_enabled and not isr:
            # C6 (v3.5): the ISR is never empty; the last member stays even when fenced.
            isr = list(p.isr) if set(p.isr) <= set(replicas) else [r for r in p.isr if r in replicas]

        leader_changed = leader != p.leader
        replicas_lost = bool(set(p.replicas) - set(replicas))
        bump = leader_changed or self.completed_reassignment or replicas_lost

        if self.completed_reassignment:
            # Seed 001's order of visible steps, all inside this one change.
            self._snapshot("phase B: catch-up ISR", p.leader, merged_isr, merged_replicas, merged_adding,
                           merged_removing)
            self._snapshot("B3: leader from the target ISR", leader, merged_isr, merged_replicas,
                           merged_adding, merged_removing)
            self._snapshot("B4: ISR without removing", leader, isr, merged_replicas, merged_adding,
                           merged_removing)

        record = PartitionChangeRecord(
            topic_id=self.topic_id,
            partition_id=self.partition_id,
            leader=leader if leader_changed else NO_LEADER_CHANGE,
            isr=tuple(isr) if list(isr) != list(p.isr) else None,
            replicas=tuple(replicas) if list(replicas) != list(p.replicas) else None,
            adding=tuple(adding) if list(adding) != list(p.adding) else None,
            removing=tuple(removing) if list(removing) != list(p.removing) else None,
            elr=tuple(elr) if list(elr) != list(p.elr) else None,
            last_known_elr=tuple(lkelr) if list(lkelr) != list(p.last_known_elr) else None,
            leader_recovery_state=recovery if recovery != p.leader_recovery_state else None,
            leader_epoch_bump=bump,
        )
        if record == PartitionChangeRecord(self.topic_id, self.partition_id):
            self.trace = []
            return None
        self.trace.append(("final", preview(p, record)))
        return record


def preview(partition: PartitionState, record: PartitionChangeRecord | None) -> PartitionState:
    """The state ``record`` would produce (a copy; ``partition`` is untouched)."""
    state = partition.copy()
    if record is not None:
        state.apply_change(record)
    return state


__all__ = [
    "RECOVERED",
    "RECOVERING",
    "CompletionRule",
    "Election",
    "PartitionChangeBuilder",
    "preview",
    "reassignment_completion",
]
