"""Reassignment rules that need no controller state: validation, merging, revert, KIP-860, KIP-435.

- ``validate_target`` (C16 + Kafka's ``validateManualPartitionAssignment``) and ``check_rf_change``
  (KIP-860, seed 003) return Kafka errors as values.
- ``merged_assignment`` computes the grow phase (C18): replicas = target ∪ current, adding, removing.
- ``revert_assignment`` computes a cancel (C21).
- ``plan_next_step`` / ``plan_steps`` are KIP-435's incremental planner (seed 002) and ``collect_batch``
  its batch collector across partitions.

Replica order during a reassignment is Apache Kafka's (``PartitionReassignmentReplicas``): ``replicas`` is
the target in the order requested, followed by the replicas being removed in ascending order; ``adding``
and ``removing`` are ascending. The first replica is the preferred leader, so while a move is in progress
a preferred election already favours the operator's new first replica, and the completion (replicas
minus removing) is exactly the requested target in its order (seed 002: "requested order is matched").
Seed 000's examples print the merged list in another order ([1, 2, 3] -> [1, 2, 4] grows to
[1, 2, 3, 4] there, [1, 2, 4, 3] here); the seeds say nothing about order, so their lists are read as
sets (docs/kafka-differences.md).

Re-targeting a reassignment in progress (Kafka allows it; C16's "one at a time" holds because the new
one replaces the old in one change) starts from the merged replica set, as Kafka does, so a replica the
old reassignment was adding and the new target drops becomes ``removing``. A replica the old one was
adding and the new target keeps stays in ``adding``: it is still not one of the original replicas and
may still be catching up, and C17 completes only once every ``adding`` replica is in the ISR. (Kafka
recomputes ``adding`` from the merged set and drops it, which is safe there only because Kafka 3.8+
completes once *every* target replica is in the ISR; under the seeds' rule it would let the move
complete without that replica.) The state keeps no memory of where a ``removing`` replica came from, so a
replica one re-target dropped and a later one takes back counts as a replica the partition had, not as
an added one (as in Kafka's ``originalReplicas()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import OK, Errors, KafkaError, error
from .records import PartitionState

# -- C16 / Kafka validation ---------------------------------------------------------------------------------


def validate_target(target: Sequence[int], registered: Iterable[int], min_isr: int | None = None) -> KafkaError:
    """Check a requested target replica list (Kafka's order: empty, negative, duplicate, unregistered; then
    C16's [T] rule target RF >= MinISR when ``min_isr`` is given)."""
    known = set(registered)
    if not target:
        return error(Errors.INVALID_REPLICA_ASSIGNMENT, "the target replica list is empty")
    if any(not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in target):
        return error(Errors.INVALID_REPLICA_ASSIGNMENT, f"invalid broker id in {list(target)}")
    if len(set(target)) != len(target):
        return error(Errors.INVALID_REPLICA_ASSIGNMENT, f"duplicate broker in {list(target)}")
    unknown = [r for r in target if r not in known]
    if unknown:
        return error(Errors.INVALID_REPLICA_ASSIGNMENT, f"brokers {unknown} are not registered")
    if min_isr is not None and len(target) < min_isr:
        # C16 [T]: a target smaller than MinISR could never satisfy C17.
        return error(Errors.INVALID_REPLICATION_FACTOR,
                     f"target replication factor {len(target)} is below min.insync.replicas {min_isr}")
    return OK


def current_target_size(partition: PartitionState, final_target: Sequence[int] | None = None) -> int:
    """The replication factor the partition is heading to: the final target of an incremental (KIP-435)
    reassignment if one is given, else replicas minus removing (the target of the reassignment in
    progress), else the replica count."""
    if final_target is not None:
        return len(final_target)
    return len(partition.replicas) - len(partition.removing)


def check_rf_change(partition: PartitionState, target: Sequence[int], allow_rf_change: bool,
                    final_target: Sequence[int] | None = None) -> KafkaError:
    """KIP-860 (seed 003): with ``allow_rf_change`` False, any change of the replication factor is refused
    with INVALID_REPLICATION_FACTOR. While a reassignment is in progress the comparison is against that
    reassignment's target size, not the (larger) merged replica set. Cancels never call this (seed 003:
    "the option will have no effect" on cancellation)."""
    if allow_rf_change:
        return OK
    current = current_target_size(partition, final_target)
    if len(target) != current:
        return error(Errors.INVALID_REPLICATION_FACTOR,
                     f"replication factor change {current} -> {len(target)} not allowed "
                     "(AllowReplicationFactorChange=false)")
    return OK


# -- C18 grow / C21 revert ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MergedAssignment:
    """The grow phase of a reassignment (C18): the union of current and target, and the two deltas."""

    replicas: list[int]
    adding: list[int]
    removing: list[int]


def merged_assignment(current: Sequence[int], target: Sequence[int],
                      in_progress_adding: Iterable[int] = ()) -> MergedAssignment:
    """C18 grow in Kafka's order (module docstring): replicas = target + (current ∖ target) ascending,
    adding = (target ∖ current) ∪ (``in_progress_adding`` ∩ target) ascending, removing = current ∖ target
    ascending. ``in_progress_adding`` is the ``adding`` set of a reassignment being re-targeted."""
    target_set, current_set = set(target), set(current)
    removing = sorted(current_set - target_set)
    adding = sorted((target_set - current_set) | (set(in_progress_adding) & target_set))
    return MergedAssignment([*target, *removing], adding, removing)


@dataclass(frozen=True)
class Revert:
    """A cancel's target (C21): the original replicas and the ISR restricted to them."""

    replicas: list[int]
    isr: list[int]
    needs_unclean: bool  # too few originals in the ISR: only allowed with unclean election enabled


def revert_assignment(partition: PartitionState, min_isr: int, elr_enabled: bool) -> Revert:
    """C21: drop the ``adding`` replicas. Too few originals in the ISR means none (v3.5) or fewer than
    MinISR (K966, where MinISR also gates completion, K6)."""
    adding = set(partition.adding)
    replicas = [r for r in partition.replicas if r not in adding]
    isr = [r for r in partition.isr if r not in adding]
    needs_unclean = (len(isr) < min_isr) if elr_enabled else (not isr)
    return Revert(replicas, isr, needs_unclean)


# -- KIP-435 incremental planner (seed 002) -----------------------------------------------------------------


@dataclass(frozen=True)
class ReassignmentStep:
    """One KIP-435 step for one partition: move from ``current`` to ``target``."""

    current: tuple[int, ...]
    target: tuple[int, ...]
    dropped: tuple[int, ...]
    added: tuple[int, ...]
    leader: int
    last: bool

    @property
    def involves_leader_movement(self) -> bool:
        """The step moves leadership: the leader is dropped, or a new preferred leader is put first (the
        controller elects it once the step completes)."""
        return self.leader not in self.target or self.target[0] != self.leader


def plan_next_step(current: Sequence[int], final: Sequence[int], *, leader: int, isr: Sequence[int],
                   parallel_replica_count: int, min_isr: int) -> ReassignmentStep | None:
    """The next KIP-435 step from ``current`` towards ``final`` (None when they are equal).

    Seed 002's rules, as read here (the seed's text and example disagree in places; the example wins):

    1. **First step** (the new preferred leader ``final[0]`` is not yet a replica, or the ISR is below
       min.insync.replicas): add the new preferred leader *in front* (so a preferred election can move the
       leadership to it after the step) plus enough further new replicas to cover the MinISR deficit, even
       beyond ``parallel_replica_count``; drop nothing.
    2. **Regular step**: drop the first ``R`` excess replicas (current replicas not in ``final``); add new
       replicas (in ``final`` order) up to ``R`` but only as many as keep the replica count at ``len(final)``
       (seed example: (5,0,1,2,3,4) -> (5,6,2,3,4) drops two and adds one). New replicas take the dropped
       replicas' positions; extra drops close up, extra adds go to the end.
    3. **Last step**: when the result holds exactly ``final``'s replicas, it is ``final`` in its order.
    """
    current, final = list(current), list(final)
    if current == final:
        return None
    r_count = max(1, parallel_replica_count)
    final_set, current_set = set(final), set(current)
    missing = [r for r in final if r not in current_set]
    excess = [r for r in current if r not in final_set]
    in_sync = len([r for r in isr if r in current_set])
    deficit = max(0, min(min_isr, len(final)) - in_sync)
    if missing and (final[0] not in current_set or deficit > 0):
        added = [final[0]] if final[0] not in current_set else []
        for r in missing:
            if len(added) >= deficit:
                break
            if r not in added:
                added.append(r)
        target = ([added[0]] if added and added[0] == final[0] else []) + current + \
            [r for r in added if r != final[0]]
        dropped: list[int] = []
    else:
        dropped = excess[:r_count]
        keep = len(current) - len(dropped)
        room = max(0, len(final) - keep)
        added = missing[:min(r_count, room)] if missing else []
        if not dropped and not added:
            added = missing[:r_count]
        target, queue = [], list(added)
        for r in current:
            if r in dropped:
                if queue:
                    target.append(queue.pop(0))
            else:
                target.append(r)
        target.extend(queue)
    last = set(target) == final_set
    if last:
        target = final
    return ReassignmentStep(tuple(current), tuple(target), tuple(dropped), tuple(added), leader, last)


def plan_steps(current: Sequence[int], final: Sequence[int], *, leader: int, parallel_replica_count: int,
               min_isr: int, isr: Sequence[int] | None = None, max_steps: int = 1000) -> list[ReassignmentStep]:
    """All steps, assuming each completes with every replica in sync and the preferred leader elected."""
    steps: list[ReassignmentStep] = []
    cur, cur_isr = list(current), list(current if isr is None else isr)
    for _ in range(max_steps):
        step = plan_next_step(cur, final, leader=leader, isr=cur_isr,
                              parallel_replica_count=parallel_replica_count, min_isr=min_isr)
        if step is None:
            return steps
        steps.append(step)
        cur = list(step.target)
        cur_isr = list(cur)
        leader = cur[0] if step.involves_leader_movement else leader
    raise RuntimeError(f"KIP-435 planner did not converge from {list(current)} to {list(final)}")


def collect_batch(candidates: Mapping[object, ReassignmentStep], *, parallel_partition_count: int,
                  parallel_leader_movements: int, running: int = 0,
                  running_leader_movements: int = 0) -> list[object]:
    """Seed 002's batch collector: which partitions start their next step now.

    At most ``parallel_partition_count`` steps run at once (``running`` already do); of those at most
    ``parallel_leader_movements`` move a leader. Leader movements fill the batch first (up to their limit),
    the rest is filled with steps that move no leader. Keys keep the caller's order (deterministic).
    """
    slots = max(0, parallel_partition_count - running)
    leader_slots = max(0, parallel_leader_movements - running_leader_movements)
    movers = [k for k, s in candidates.items() if s.involves_leader_movement][:min(slots, leader_slots)]
    others = [k for k, s in candidates.items() if not s.involves_leader_movement]
    return movers + others[:slots - len(movers)]
