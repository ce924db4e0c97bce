"""Liveness after healing: once every fault is gone, the cluster must converge and accept writes.

The safety invariants say what must never happen; a mutant (or a real bug) that makes a follower never
count as caught up, never sends an AlterPartition, drops a metadata batch or never answers an acks=all
write breaks none of them: the cluster just stops making progress. Jepsen checks that with a final phase
that heals the faults and then demands progress; the simulator does the same. In its final phase (all links
healed, every node running again) the world waits, up to ``SimOptions.converge_ms``, for a state in which

- every controller runs, one of them is the active controller (Q14) and every voter has applied the whole
  committed log; every broker is registered with it, unfenced and RUNNING;
- every broker has applied the active controller's whole metadata log;
- every partition has a leader and has finished its reassignment, with the replicas of the last accepted
  one (unless cancelled later), unless it is legitimately leaderless:
  KIP-966 with an empty ISR, ELR and last-known ELR (K10: nobody may lead it, and its reassignment can
  neither finish nor be reverted; with a last-known ELR, K7's balanced recovery must give it a leader);
- exactly its assigned brokers host it (a replica removed by a reassignment has deleted its log, T1);
- every broker's image names the controller's leader and leader epoch for it, the leader's replica leads in
  that epoch, its ISR holds every assigned replica, every replica's log ends where the leader's does and
  the leader's high watermark is its log end.

Each of these follows from the protocol's rules once nothing is faulty any more (fenced brokers come back
by heartbeats, C5; caught-up followers rejoin the ISR, I-rules of the leader's ISR loop; the HWM is the
minimum LEO of the ISR, L3). Then one acks=all write per led partition must be acknowledged, and the
final read of each partition written to must succeed. What is not
reached in time is reported as a violation of rule ``liveness``, with the conditions still unmet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker import RUNNING
from reference_impl.protocol.records import NO_LEADER
from reference_impl.protocol.replica import LEADER

if TYPE_CHECKING:
    from simulator.host import Host

RULE = "liveness"
POLL_MS = 50


def legitimately_leaderless(variant: str, state: Any) -> bool:
    """True when no replica may lead the partition: KIP-966 with an empty ISR, an empty ELR and an empty
    last-known ELR. With a last-known ELR, K7's balanced recovery (the controller's default strategy) elects
    its most complete member once every member answered, which every member does once all are back; under
    v3.5 the last ISR member stays in the ISR, so a leader is always eligible once every broker is back."""
    return variant == "kip966" and not state.isr and not state.elr and not state.last_known_elr


def unmet(world: Host) -> list[str]:
    """The convergence conditions (see the module docstring) the world does not meet now; empty once
    converged."""
    down = [c for c in world.controller_ids if world.nodes[c].dead]
    if down:
        return [f"controller {c} is down" for c in down]
    controller = world.active_controller()
    if controller is None:
        return ["no active controller"]
    core = controller.core
    problems: list[str] = [f"controller {c} applied the log to {world.nodes[c].qc.applied}, the active one to "
                           f"{controller.qc.applied}" for c in world.controller_ids
                           if world.nodes[c].qc.applied != controller.qc.applied]
    brokers = {b: world.nodes[b] for b in world.broker_ids}
    for b, broker in brokers.items():
        reg = core.brokers.get(b)
        if broker.dead:
            problems.append(f"broker {b} is down")
        elif reg is None or reg.fenced:
            problems.append(f"broker {b} is {'fenced' if reg else 'not registered'}")
        elif broker.lifecycle.state != RUNNING:
            problems.append(f"broker {b} is {broker.lifecycle.state}")
        elif broker.image.offset < core.last_offset:
            problems.append(f"broker {b} applied metadata to offset {broker.image.offset} of {core.last_offset}")
    if problems:
        return problems
    topic = core.topics.get(world.topic)
    if topic is None:
        return [f"the controller has no topic {world.topic!r}"]
    for partition, state in sorted(topic.partitions.items()):
        problems += _partition_unmet(world, brokers, topic.topic_id, partition, state)
    return problems


def _partition_unmet(world: Host, brokers: dict[int, Any], topic_id: str, partition: int,
                     state: Any) -> list[str]:
    name = f"partition {partition}"
    if state.leader == NO_LEADER:
        # a reassignment of such a partition cannot finish nor be cancelled (a revert to an empty ISR
        # would be an unclean election), so it stays in progress too
        if legitimately_leaderless(world.options.variant, state):
            return []
        return [f"{name}: no leader although ISR {state.isr} / ELR {state.elr} could lead"]
    if state.reassigning:
        return [f"{name}: reassignment still in progress (adding {state.adding}, removing {state.removing})"]
    target = world.clients.reassigned.get(partition)
    if target is not None and list(state.replicas) != target:
        return [f"{name}: replicas {state.replicas} after its reassignment to {target} was accepted"]
    problems = []
    for b, broker in brokers.items():
        seen = broker.image.partition(topic_id, partition)
        if seen is None or (seen.leader, seen.leader_epoch) != (state.leader, state.leader_epoch):
            problems.append(f"{name}: broker {b} sees leader {seen and seen.leader} epoch "
                            f"{seen and seen.leader_epoch}, the controller {state.leader} epoch {state.leader_epoch}")
    if problems:
        return problems
    key = (world.topic, partition)
    hosting = sorted(b for b, broker in brokers.items() if key in broker.replicas or key in broker.disk.logs)
    if hosting != sorted(state.replicas):
        return [f"{name}: hosted (replica or log) on brokers {hosting}, assigned to {sorted(state.replicas)}"]
    leader = brokers[state.leader].replicas.get(key)
    if leader is None or leader.role != LEADER or leader.leader_epoch != state.leader_epoch:
        return [f"{name}: broker {state.leader} does not lead it in epoch {state.leader_epoch}"]
    if set(state.isr) != set(state.replicas):
        return [f"{name}: ISR {state.isr} of replicas {state.replicas}"]
    leo = leader.log_end_offset
    for r in state.replicas:
        replica = brokers[r].replicas.get(key)
        if replica is None or replica.log_end_offset != leo:
            problems.append(f"{name}: replica {r} ends at {replica and replica.log_end_offset}, the leader at {leo}")
    if leader.high_watermark != leo:
        problems.append(f"{name}: the leader's high watermark {leader.high_watermark} is below its log end {leo}")
    return problems


def led_partitions(world: Host) -> list[int]:
    """The partitions the controller gives a leader (the ones the final phase writes to)."""
    controller = world.active_controller()
    if controller is None:
        return []
    topic = controller.core.topics[world.topic]
    return [p for p, state in sorted(topic.partitions.items()) if state.leader != NO_LEADER]
