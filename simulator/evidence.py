"""Does the trace tell the truth? The last traced state of every node against the node's actual state.

Every invariant reads the trace, so a node that traces a state it is not in (or stops tracing a change)
blinds the checkers without breaking any rule they can see. A real run cannot look inside its nodes; the
simulator can. Every ``CHECK_EVERY_MS`` of simulated time (between steps, when every change a step made
has been traced) and at the end of a run, it compares the newest event of each kind that describes a
piece of state with that state, on every node that runs:

- each ``election`` event of the controller against the partition changes traced just before it (the
  leaders, the previous ISR, and the type: clean from the ISR, elr from the ELR, unclean otherwise): one
  for every change that gave a partition a new leader, and none for any other change;
- the controller's ``registered`` / ``fenced`` / ``unfenced`` / ``broker_registration_change`` events
  against its registrations (epoch, fenced); with a quorum, against the live voter that applied the most,
  once it has applied every record traced (each record is fed once, by the first voter to apply it: the
  others must agree, I20);
- its ``metadata_applied`` events against each partition's state (every field the event carries);
- each broker's own lifecycle events (``broker_state``, ``registered``, ``fenced``, ``unfenced``) against its
  lifecycle's state, fencing and epoch;
- at the end, each replica's ``log_summary`` (log end, high watermark) against its log;
- each replica's ``role``, ``hwm`` and ``leo`` events against its role, leader epoch, high watermark and
  log end (a restart starts over from the log and HWM checkpoint it traces at recovery).

A mismatch is a finding of rule ``trace``, naming the event and the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.broker import STARTING

if TYPE_CHECKING:
    from simulator.host import Host

RULE = "trace"
LIFECYCLE_KINDS = ("broker_state", "registered", "fenced", "unfenced")
CHECK_EVERY_MS = 100
BROKER_STATE_KINDS = ("registered", "fenced", "unfenced", "broker_registration_change")


class LastEvents:
    """The newest trace event per piece of state it describes (fed every event, in order)."""

    def __init__(self) -> None:
        self.registration: dict[int, dict[str, Any]] = {}     # broker -> newest controller registration event
        self.epoch: dict[int, int] = {}                       # broker -> epoch of its newest ``registered``
        self.controller_partition: dict[int, dict[str, Any]] = {}
        self.before_change: dict[int, dict[str, Any]] = {}  # the state before the newest change
        self.awaiting_election: set[int] = set()  # partitions whose newest change elected a leader
        self.contradictions: list[str] = []  # events that contradict the events before them
        self.end_summaries: dict[tuple[int, int], dict[str, Any]] = {}  # (broker, partition) -> its last summary
        self.replica: dict[tuple[str, int, int], dict[str, Any]] = {}  # (kind, broker, partition) -> event
        self.lifecycle: dict[int, dict[str, Any]] = {}  # broker -> state, fenced, epoch as its own events say
        self.controller_offset = -1  # the highest metadata offset a controller event was traced for

    def feed(self, event: dict[str, Any]) -> None:
        """One trace event."""
        kind = event.get("kind")
        if event.get("source") == "controller":
            offset = event.get("offset")
            if isinstance(offset, int) and offset > self.controller_offset:
                self.controller_offset = offset
            if kind in BROKER_STATE_KINDS and event.get("broker") is not None:
                self.registration[event["broker"]] = event
                if kind == "registered":
                    self.epoch[event["broker"]] = event.get("broker_epoch")
            elif kind == "metadata_applied":
                self._partition_state(event)
            elif kind == "election":
                self._election(event)
            return
        if kind in LIFECYCLE_KINDS and event.get("partition") is None and event.get("broker") is not None:
            self._lifecycle(kind, event)
            return
        if kind == "log_summary" and event.get("reason") == "end":
            self.end_summaries[(int(event["replica"]), event["partition"])] = event
            return
        if kind in ("role", "hwm", "leo", "log_deleted", "truncate") and event.get("partition") is not None:
            at = (int(event["replica"]), event["partition"])
            if kind == "truncate":
                self.replica[("leo", *at)] = {"leo": event.get("to_offset")}
                return
            if kind == "log_deleted":  # a replica added back later starts from an empty log
                for k in ("role", "hwm", "leo"):
                    self.replica.pop((k, *at), None)
                return
            if kind == "leo" and event.get("reason") == "recovery":
                # a new incarnation: its log and HWM checkpoint as found at start, no role yet
                self.replica[("leo", *at)] = event
                self.replica[("hwm", *at)] = event
                self.replica.pop(("role", *at), None)
                return
            self.replica[(kind, *at)] = event


    def _partition_state(self, event: dict[str, Any]) -> None:
        p = event.get("partition")
        if p in self.awaiting_election:
            self.contradictions.append(f"controller: partition {p}'s leader changed to "
                                       f"{self.controller_partition[p].get('leader')} without an election event")
            self.awaiting_election.discard(p)
        before = self.controller_partition.get(p)
        if before is not None:
            self.before_change[p] = before
            leader = event.get("leader")
            if leader != before.get("leader") and leader is not None and leader >= 0:
                self.awaiting_election.add(p)
        self.controller_partition[p] = event

    def _election(self, event: dict[str, Any]) -> None:
        """An election event must describe the change just traced: its leaders and previous ISR, and its
        type by where the new leader was before (ISR: clean, ELR: elr, neither: unclean)."""
        p = event.get("partition")
        before, after = self.before_change.get(p), self.controller_partition.get(p)
        self.awaiting_election.discard(p)
        if before is None or after is None:
            self.contradictions.append(f"controller: election event for partition {p} without a change before it")
            return
        leader = after.get("leader")
        if leader is None or leader < 0 or leader == before.get("leader"):
            self.contradictions.append(f"controller: election event for partition {p} whose leader went from "
                                       f"{before.get('leader')} to {leader}")
            return
        kind = "clean" if leader in before.get("isr", []) else "elr" if leader in before.get("elr", []) else "unclean"
        claimed = (event.get("leader"), event.get("previous_leader"), event.get("previous_isr"), event.get("type"))
        actual = (leader, before.get("leader"), before.get("isr"), kind)
        if claimed != actual:
            self.contradictions.append(f"controller: partition {p}'s election event says (leader, previous leader, "
                                       f"previous ISR, type) {claimed}, the changes traced say {actual}")

    def _lifecycle(self, kind: str, event: dict[str, Any]) -> None:
        seen = self.lifecycle.setdefault(event["broker"], {})
        if kind == "broker_state":
            seen["state"] = event.get("state")
            if event.get("state") == STARTING:  # a new incarnation: fenced, no epoch until registered
                seen.update(fenced=True, epoch=-1)
        elif kind == "registered":
            seen.update(fenced=True, epoch=event.get("broker_epoch"))
        else:
            seen["fenced"] = kind == "fenced"


def _traced_controller(world: Host, last: LastEvents) -> Any:
    """The live controller whose state the newest controller events describe: the one that applied the most,
    provided it applied every record traced so far (a voter still catching up, or all of them behind a
    crashed leader's last commits, are not compared)."""
    live = [world.nodes[c] for c in world.controller_ids if not world.nodes[c].dead]
    if not live:
        return None
    best = max(live, key=lambda n: n.qc.applied)
    return best if best.qc.applied > last.controller_offset else None


def mismatches(world: Host, last: LastEvents) -> list[str]:
    """What the newest events say that the nodes' state contradicts (empty: the trace tells the truth)."""
    controller = _traced_controller(world, last)
    if controller is None:
        return list(last.contradictions)
    core = controller.core
    out: list[str] = list(last.contradictions)
    for b, reg in sorted(core.brokers.items()):
        ev = last.registration.get(b)
        fenced = None if ev is None else _fenced(ev)
        if ev is None or last.epoch.get(b) != reg.epoch or (fenced is not None and fenced != reg.fenced):
            out.append(f"controller: broker {b} registered at epoch {reg.epoch} (fenced {reg.fenced}), the trace "
                       f"last says epoch {last.epoch.get(b)} (fenced {fenced})")
    topic = core.topics.get(world.topic)
    for partition, state in sorted((topic.partitions if topic else {}).items()):
        ev = last.controller_partition.get(partition)
        actual = state.as_dict()
        if ev is None or any(ev.get(k) != v for k, v in actual.items()):
            out.append(f"controller: partition {partition} is {actual}, the trace last says "
                       f"{ev and {k: ev.get(k) for k in actual}}")
    for b in world.broker_ids:
        broker = world.nodes[b]
        if not broker.dead:
            out += _broker_mismatches(world, b, broker, last)
    return out


def summary_mismatches(world: Host, last: LastEvents) -> list[str]:
    """At the end of a run, with log summaries on: every running replica traced one (``reason: end``) whose
    log end and high watermark are its own (I4 and I16 judge the logs by these summaries)."""
    if not world.options.trace_log_summaries:
        return []
    out = []
    for b in world.broker_ids:
        broker = world.nodes[b]
        if broker.dead:
            continue
        for (_topic, partition), replica in sorted(broker.replicas.items()):
            ev = last.end_summaries.get((b, partition))
            actual = (replica.log_end_offset, min(replica.high_watermark, replica.log_end_offset))
            if ev is None or (ev.get("leo"), ev.get("hwm")) != actual:
                out.append(f"broker {b}: partition {partition}'s log (LEO, HWM) is {actual}, its end-of-run "
                           f"summary says {ev and (ev.get('leo'), ev.get('hwm'))}")
    return out


def _fenced(event: dict[str, Any]) -> bool | None:
    kind = event["kind"]
    if kind == "fenced":
        return True
    if kind == "unfenced":
        return False
    if kind == "registered":
        return True  # a broker registers fenced (C4)
    return event.get("fenced")  # a registration change may leave fencing as it was (None)


def _broker_mismatches(world: Host, b: int, broker: Any, last: LastEvents) -> list[str]:
    out = []
    seen = last.lifecycle.get(b, {})
    life = broker.lifecycle
    actual = {"state": life.state, "fenced": life.fenced, "epoch": life.broker_epoch}
    if any(k in seen and seen[k] != v for k, v in actual.items()):
        out.append(f"broker {b}: its lifecycle is {actual}, its trace last says {seen}")
    for partition in range(world.options.partitions):
        replica = broker.replicas.get((world.topic, partition))
        if replica is None:
            continue  # not hosted here (any more): what it last traced is history, not state
        role = last.replica.get(("role", b, partition))
        if role is not None and (role.get("role"), role.get("leader_epoch")) != (replica.role, replica.leader_epoch):
            out.append(f"broker {b}: partition {partition} replica is {replica.role} in epoch "
                       f"{replica.leader_epoch}, the trace last says {role.get('role')} in {role.get('leader_epoch')}")
        hwm = last.replica.get(("hwm", b, partition))
        if hwm is not None and hwm.get("hwm") != replica.high_watermark:
            out.append(f"broker {b}: partition {partition} HWM is {replica.high_watermark}, the trace last "
                       f"says {hwm.get('hwm')}")
        leo = last.replica.get(("leo", b, partition))
        if leo is not None and leo.get("leo") != replica.log_end_offset:
            out.append(f"broker {b}: partition {partition} log ends at {replica.log_end_offset}, the trace "
                       f"last says {leo.get('leo')}")
    return out
