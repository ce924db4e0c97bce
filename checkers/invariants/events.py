"""Trace events as the invariant rules see them: which side reported them, which partition and replica they
are about, and the kind the rules are keyed by (see the package docstring).

The trace's own ``kind`` does not say everything a rule needs: ``metadata_applied`` is the controller's
committed state when the controller reports it and a replica's view when a broker does, and a broker's
``registered``/``shutdown`` (its own lifecycle) is another fact than the controller's ``registered`` (the
registration it accepted). ``classify`` names these apart; an event no rule is evaluated at gets the kind
None, and the state still takes what it says (``state.TraceState.apply``).
"""

from __future__ import annotations

from typing import Any

CTL = "controller"

# The kinds rules are keyed by, besides the trace's own kinds of replica events (``leo``, ``hwm``, ...).
CONTROLLER_STATE = "controller.metadata_applied"    # a partition state the controller committed
CONTROLLER_REGISTERED = "controller.registered"     # a broker registration the controller accepted
CONTROLLER_FENCED = "controller.fenced"
CONTROLLER_UNFENCED = "controller.unfenced"
BROKER_REGISTERED = "broker.registered"             # a broker's own report of its registration
BROKER_SHUTDOWN = "broker.shutdown"                 # a broker's own report of a stop (clean or not)
END = "end"                                         # the end of the trace (rules that judge it whole)
CONTROLLER_COPY = "controller.copy"                 # another voter's copy of a controller record (I20)
CONTROLLER_RECORD = "controller.record"             # any other committed record (e.g. leader_change)
BROKER_APPLIED = "broker.applied"                   # a broker's applied metadata offset (I21)
QUORUM_STATE, QUORUM_HWM, QUORUM_TRUNCATE = "quorum_state", "quorum_hwm", "quorum_truncate"  # a voter's own
QUORUM_VOTE = "quorum_vote"                         # an answer a candidate got to its Vote request (I22)
_QUORUM_KINDS = frozenset({QUORUM_STATE, QUORUM_HWM, QUORUM_TRUNCATE, QUORUM_VOTE})
# A coordinator's report about one of its groups or transactional ids (I23-I25): about no partition of its
# own (they name the internal topic's partition as ``offsets_partition`` / ``state_partition``).
GROUP_GENERATION, GROUP_ASSIGNMENT, GROUP_COMMIT = "group_generation", "group_assignment", "group_commit"
TXN_TRANSITION = "txn_transition"
_COORDINATOR_KINDS = frozenset({GROUP_GENERATION, GROUP_ASSIGNMENT, GROUP_COMMIT, TXN_TRANSITION})
# A partition leader's report of a producer's batch or a marker it appended (I25, I26): replica events.
TXN_MARKER, PRODUCER_BATCH = "txn_marker", "producer_batch"
GROUP_KINDS = frozenset({GROUP_GENERATION, GROUP_ASSIGNMENT, GROUP_COMMIT})  # what consumer_groups reads
TXN_KINDS = frozenset({TXN_TRANSITION, TXN_MARKER, PRODUCER_BATCH})  # what transactions reads
_CONTROLLER_BROKER_KINDS = {"fenced": CONTROLLER_FENCED, "unfenced": CONTROLLER_UNFENCED,
                            "registered": CONTROLLER_REGISTERED}


def is_controller_event(ev: dict) -> bool:
    """Controller-side events carry ``source: "controller"`` (or no ``replica``, for partition states)."""
    if ev.get("source") == CTL:
        return True
    return ev.get("kind") == "metadata_applied" and "replica" not in ev and "isr" in ev


def part_key(ev: dict) -> tuple | None:
    """(topic, partition) of a partition event, or None."""
    p = ev.get("partition")
    if p is None:
        return None
    return (ev.get("topic") or ev.get("topic_id"), p)


def broker_of(ev: dict) -> Any:
    """The broker a lifecycle event is about: its ``broker``, else the number in its node name (``b2``)."""
    b = ev.get("broker")
    if b is None and str(ev.get("node", "")).lstrip("b").isdigit():
        b = int(str(ev["node"]).lstrip("b"))
    return b


def reported_leo(ev: dict) -> Any:
    """The LEO a ``leo`` or ``truncate`` event reports (None when it reports none)."""
    return ev.get("leo") if ev.get("kind") == "leo" else ev.get("to_offset")


def brief(ev: dict) -> dict[str, Any]:
    """A short copy of an event for violation reports (line number, time, node, kind, key attributes)."""
    keep = ("time", "node", "kind", "topic", "partition", "replica", "broker", "broker_epoch", "leader",
            "leader_epoch", "partition_epoch", "isr", "elr", "hwm", "leo", "leso", "to_offset", "role",
            "maximal_isr", "proposed", "clean", "voter", "epoch", "state", "reason", "voted_for", "from_voter",
            "granted", "pre_vote", "group", "generation", "member", "members", "group_generation", "group_state",
            "assigned", "offsets", "txn", "log_offset", "offsets_partition", "transactional_id", "producer_id",
            "producer_epoch", "from", "to", "partitions", "marker", "offset", "base_offset")
    out = {k: ev[k] for k in keep if k in ev}
    if "_line" in ev:
        out["line"] = ev["_line"]
    return out


class Step:
    """One event as the rules and the state read it: the event, its rule kind (None: no rule reads it),
    whether the controller reported it, its partition key and replica (None when it has none)."""

    __slots__ = ("ev", "kind", "ctl", "pk", "replica")

    def __init__(self, ev: dict, kind: str | None, ctl: bool, pk: tuple | None, replica: Any):
        self.ev, self.kind, self.ctl, self.pk, self.replica = ev, kind, ctl, pk, replica


# Kinds that matter even without a partition: broker lifecycle and the brokers' metadata offsets, and the
# reports that mark a broker as starting up (a partition's log recovery), and a controller partition
# state however malformed (it still says how far the controller's log reaches).
_BROKER_KINDS = frozenset({"registered", "shutdown", "metadata_offset", "recovered", "leo",
                           "metadata_applied", "broker_metadata", "broker_state"})


def classify(ev: dict) -> Step | None:
    """The ``Step`` of a trace event, or None for one that neither moves the state nor is read by any rule
    (a broker's report about no partition that is not about its lifecycle: most of a trace). Unknown kinds
    and missing attributes are not errors: such an event gets the kind None (or its own kind, which no
    rule reads)."""
    get = ev.get
    kind, partition = get("kind"), get("partition")
    said_controller = get("source") == CTL
    if kind in _QUORUM_KINDS:
        return Step(ev, kind, False, None, None)  # a voter's report about itself (I17-I19, I22)
    if kind in _COORDINATOR_KINDS:
        return Step(ev, kind, False, None, None)  # a coordinator's decision (I23-I25)
    if partition is None and kind not in _BROKER_KINDS and not said_controller:
        return None
    # is_controller_event and part_key, inlined: this runs for every event of every simulated step
    ctl = said_controller or (kind == "metadata_applied" and "replica" not in ev and "isr" in ev)
    pk = None if partition is None else (get("topic") or get("topic_id"), partition)
    replica = get("replica")
    if not ctl:
        if kind == "registered":
            return Step(ev, BROKER_REGISTERED, ctl, pk, replica)
        if kind == "shutdown":
            return Step(ev, BROKER_SHUTDOWN, ctl, pk, replica)
        if kind in ("metadata_offset", "broker_metadata"):
            return Step(ev, BROKER_APPLIED, ctl, pk, replica)  # I21 now; metadata_offset at the end too (I5)
        if kind == "broker_state":
            return Step(ev, kind, ctl, pk, replica)  # a broker starting applies its metadata afresh (I21)
    elif kind in _CONTROLLER_BROKER_KINDS and ev.get("broker") is not None:
        return Step(ev, _CONTROLLER_BROKER_KINDS[kind], ctl, pk, replica)
    if pk is None:
        record = ctl and isinstance(get("offset"), int)
        return Step(ev, CONTROLLER_RECORD if record else None, ctl, pk, replica)
    if ctl and kind == "metadata_applied":
        return Step(ev, CONTROLLER_STATE, ctl, pk, replica)
    if replica is None:
        return Step(ev, None, ctl, pk, replica)
    return Step(ev, kind, ctl, pk, replica)  # a replica's report about one of its partitions
