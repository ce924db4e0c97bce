"""Reassignment control (the reassignment part of Kafka's ReplicationControlManager): C16-C21, KIP-435,
KIP-860.

- ``alter_partition_reassignments``: start, re-target or cancel, per partition; all-at-once (``_reassign``:
  C16 validation, the KIP-860 guard, then the grow phase or a direct completion) or, in ``reassignment.mode
  = incremental``, a KIP-435 final target (``IncrementalReassignmentRecord``) that
  ``advance_incremental_reassignments`` turns into steps;
- ``_cancel`` (C21): the revert, unclean only where allowed;
- ``list_partition_reassignments``: the ongoing ones, with a KIP-435 final target where there is one.

The state-free rules (validation, merge and revert sets, the KIP-435 planner and batch collector) are in
``protocol.reassignment``; each partition change is made by ``PartitionChangeBuilder``, whose completion
step finishes a reassignment once C17 holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import OK, Errors, KafkaError, error
from ..partition_change import Election
from ..reassignment import (
    ReassignmentStep,
    check_rf_change,
    collect_batch,
    merged_assignment,
    plan_next_step,
    revert_assignment,
    validate_target,
)
from ..records import NO_LEADER, IncrementalReassignmentRecord
from .configuration import INT_MAX, PARALLEL_LEADERS, PARALLEL_PARTITIONS, PARALLEL_REPLICAS
from .result import ControllerResult, TopicPartition

if TYPE_CHECKING:
    from ..controller import Controller


@dataclass(frozen=True)
class OngoingReassignment:
    """A ListPartitionReassignments entry (KIP-435 adds the final target of an incremental one)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    final_target: tuple[int, ...] | None = None


class ReassignmentControl:
    """Partition reassignments, all-at-once and KIP-435 incremental (module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self._ctl = controller

    def alter_partition_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None], *,
                                      allow_rf_change: bool = True) -> ControllerResult:
        """Start, replace (Kafka allows re-targeting a partition in progress) or cancel (target None)
        reassignments; response: ``{(topic, partition): KafkaError}``. Per partition, in Kafka's order:
        UNKNOWN_TOPIC_OR_PARTITION; for a cancel NO_REASSIGNMENT_IN_PROGRESS or (C21) INVALID_REPLICA_ASSIGNMENT
        when the revert would need a disabled unclean election; otherwise INVALID_REPLICA_ASSIGNMENT (empty,
        duplicate, unregistered), INVALID_REPLICATION_FACTOR (KIP-860 guard, then C16's RF >= MinISR)."""
        records: list[Any] = []
        response: dict[TopicPartition, KafkaError] = {}
        for (topic, pid), target in targets.items():
            info = self._ctl.find_topic(topic)
            if info is None or pid not in info.partitions:
                response[(topic, pid)] = error(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            tp = (info.name, pid)
            if target is None:
                err, recs = self._cancel(tp)
            elif self._ctl.incremental_mode():
                err, recs = self._start_incremental(tp, list(target), allow_rf_change)
            else:
                err, recs = self._reassign(tp, list(target), allow_rf_change)
            response[(topic, pid)] = err
            records += recs
        return ControllerResult(records, response)

    def _validate(self, tp: TopicPartition, target: list[int], allow_rf_change: bool) -> KafkaError:
        """C16 (+ Kafka's manual-assignment checks), then KIP-860, then C16's [T] rule RF >= MinISR."""
        brokers = self._ctl.brokers
        p = self._ctl.topics[tp[0]].partitions[tp[1]]
        problem = validate_target(target, brokers)
        if not problem.ok:
            return problem
        problem = check_rf_change(p, target, allow_rf_change, self._ctl.incremental.get(tp))
        if not problem.ok:
            return problem
        if self._ctl.config.reject_target_below_min_isr:
            return validate_target(target, brokers, self._ctl.min_isr(tp[0]))
        return OK

    def _reassign(self, tp: TopicPartition, target: list[int], allow_rf_change: bool,
                  validate: bool = True) -> tuple[KafkaError, list[Any]]:
        """C16 validation, then C18: a single change if C17 already holds, else the grow phase. Re-targeting
        a reassignment in progress merges against the current (merged) replicas and keeps the replicas it was
        adding that the new target keeps in ``adding`` (``protocol.reassignment`` module docstring)."""
        if validate:
            problem = self._validate(tp, target, allow_rf_change)
            if not problem.ok:
                return problem, []
        p = self._ctl.topics[tp[0]].partitions[tp[1]]
        merged = merged_assignment(p.replicas, target, p.adding)
        builder = (self._ctl.replication.builder(tp).set_target_replicas(merged.replicas)
                   .set_target_adding(merged.adding).set_target_removing(merged.removing))
        record = builder.build()
        return OK, [] if record is None else [record]

    def _cancel(self, tp: TopicPartition) -> tuple[KafkaError, list[Any]]:
        """C21: revert to the original replicas (cancels ignore KIP-860's flag)."""
        info = self._ctl.topics[tp[0]]
        p = info.partitions[tp[1]]
        records: list[Any] = []
        had_incremental = tp in self._ctl.incremental
        if had_incremental:
            records.append(IncrementalReassignmentRecord(info.topic_id, tp[1], None))
        if not p.reassigning:
            if had_incremental:
                return OK, records
            return error(Errors.NO_REASSIGNMENT_IN_PROGRESS), []
        revert = revert_assignment(p, self._ctl.min_isr(tp[0]), self._ctl.config.elr_enabled)
        if revert.needs_unclean:
            if not self._ctl.unclean_enabled(tp[0]):
                return error(Errors.INVALID_REPLICA_ASSIGNMENT,
                             "reverting would need an unclean leader election (C21)"), []
            acceptable = self._ctl.replication.acceptor()
            if not revert.isr and not any(acceptable(r) for r in revert.replicas):
                return error(Errors.INVALID_REPLICA_ASSIGNMENT, "no live original replica to revert to"), []
        builder = (self._ctl.replication.builder(tp).set_target_replicas(revert.replicas)
                   .set_target_isr(revert.isr).set_target_adding([]).set_target_removing([]))
        if revert.needs_unclean and not revert.isr:
            builder.set_election(Election.UNCLEAN)  # C21: unclean when the ISR would be empty
        record = builder.build()
        return OK, records + ([] if record is None else [record])

    def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None
                                     ) -> dict[TopicPartition, OngoingReassignment]:
        """Ongoing reassignments (adding or removing non-empty, or a KIP-435 final target pending)."""
        find = self._ctl.find_topic
        wanted = None if partitions is None else {(find(t).name if find(t) else t, p) for t, p in partitions}
        out = {}
        for tp, p in self._ctl.partitions():
            if wanted is not None and tp not in wanted:
                continue
            final = self._ctl.incremental.get(tp)
            if p.reassigning or final is not None:
                out[tp] = OngoingReassignment(tuple(p.replicas), tuple(p.adding), tuple(p.removing),
                                              None if final is None else tuple(final))
        return out

    # -- KIP-435 (seed 002) --------------------------------------------------------------------------------
    def _start_incremental(self, tp: TopicPartition, target: list[int],
                           allow_rf_change: bool) -> tuple[KafkaError, list[Any]]:
        problem = self._validate(tp, target, allow_rf_change)
        if not problem.ok:
            return problem, []
        info = self._ctl.topics[tp[0]]
        p = info.partitions[tp[1]]
        if p.replicas == target and not p.reassigning:
            # Already there: nothing to plan (and a pending plan towards another target is dropped).
            return OK, ([IncrementalReassignmentRecord(info.topic_id, tp[1], None)]
                        if tp in self._ctl.incremental else [])
        return OK, [IncrementalReassignmentRecord(info.topic_id, tp[1], tuple(target))]

    def advance_incremental_reassignments(self) -> ControllerResult:
        """KIP-435 driver, called periodically and after each replay: for partitions with a final target
        and no step running, finish (target reached), elect the new preferred leader after a leader step,
        or plan the next step; the seed's batch collector picks which steps start now, honouring the
        parallel partition / leader-movement limits as configured *now* (dynamic changes affect only the
        next step). Each step is an ordinary reassignment (C16-C21). Response: the steps started."""
        configuration = self._ctl.configuration
        r_count = configuration.cluster_int(PARALLEL_REPLICAS, self._ctl.config.parallel_replica_count)
        p_count = configuration.cluster_int(PARALLEL_PARTITIONS, self._ctl.config.parallel_partition_count)
        l_count = configuration.cluster_int(PARALLEL_LEADERS, self._ctl.config.parallel_leader_movements)
        if not self._ctl.incremental_mode():
            # Switched to all-at-once while incremental plans were pending: their next step is the rest of
            # the move, unthrottled (the step already running is left as it is, seed 002).
            r_count = p_count = l_count = INT_MAX
        acceptable = self._ctl.replication.acceptor()
        records: list[Any] = []
        running = running_leaders = 0
        candidates: dict[TopicPartition, ReassignmentStep] = {}
        for tp, final in sorted(self._ctl.incremental.items()):
            info = self._ctl.topics[tp[0]]
            p = info.partitions[tp[1]]
            if p.reassigning:
                running += 1
                step_target = [r for r in p.replicas if r not in p.removing]
                running_leaders += p.leader not in step_target or step_target[0] != p.leader
                continue
            if p.leader == NO_LEADER:
                continue  # seed 002: an offline partition is not reassigned
            if p.replicas[0] != p.leader and p.replicas[0] in p.isr and acceptable(p.replicas[0]):
                # Seed 002: "in the first step we'll elect the new preferred leader".
                record = self._ctl.replication.builder(tp).set_election(Election.PREFERRED).build()
                if record is not None:
                    records.append(record)
                    continue
            if p.replicas == final:
                records.append(IncrementalReassignmentRecord(info.topic_id, tp[1], None))
                continue
            step = plan_next_step(p.replicas, final, leader=p.leader, isr=p.isr,
                                  parallel_replica_count=r_count, min_isr=self._ctl.min_isr(tp[0]))
            if step is not None:
                candidates[tp] = step
        started = []
        for tp in collect_batch(candidates, parallel_partition_count=p_count, parallel_leader_movements=l_count,
                                running=running, running_leader_movements=running_leaders):
            err, recs = self._reassign(tp, list(candidates[tp].target), True, validate=False)
            if err.ok and recs:
                records += recs
                started.append((tp, candidates[tp]))
        return ControllerResult(records, started)
