"""What the trace says the cluster is, at the current event: the state the invariant rules read.

``TraceState.apply`` takes one event (a ``events.Step``) and moves the state as that event says; it judges
nothing (the rules do, ``rules.py``). The trace is a time-ordered stream of local reports, not snapshots,
so the state is each reporter's latest word:

* per partition (``PartitionView``): the controller's last committed state, its states by partition
  epoch, and the True HWM (TH: the highest HWM any leader ever reported) with the event that set it and
  its history over time;
* per replica of a partition: its last reported LEO (and the event), role and leader epoch, local
  (maximal) ISR, HWM as leader by leader epoch, last log summary, the partition and leader epochs it
  applied, and the partition states it applied whose controller record the trace has not shown yet;
* per broker: fenced or not, starting up (between its log recovery and the controller accepting its
  registration), and the broker epochs the controller handed out;
* the controller's log end (the highest record offset it reported) and the metadata offsets brokers
  reported applying;
* the controller quorum (``quorum.QuorumView``): each controller record's first copy (every voter applies
  and traces every committed record; the later copies leave the state as it is), each voter's quorum epoch
  and HWM, the leader of each quorum epoch, the vote of each voter in each epoch (from its own state or a
  candidate's answer), the committed end (the largest HWM any voter reported), and each broker's applied
  metadata offset since it started;
* the coordinators (``consumer_groups.GroupView``, ``transactions.TxnView``): each group generation with its
  members and where its record is in the offsets partition, the topic-partitions handed out per generation;
  each transaction decided (Prepare*) and not yet completed with the markers appended for it since; per
  partition leadership, the highest producer epoch each producer id appended.

A broker that registers again after a restart replays its metadata from scratch, so its applied epochs
are forgotten then. Unknown kinds and missing attributes leave the state as it is.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from checkers.invariants.consumer_groups import GroupView
from checkers.invariants.events import (
    BROKER_APPLIED,
    CONTROLLER_COPY,
    CONTROLLER_FENCED,
    CONTROLLER_REGISTERED,
    CONTROLLER_STATE,
    CONTROLLER_UNFENCED,
    GROUP_KINDS,
    TXN_KINDS,
    Step,
)
from checkers.invariants.quorum import QuorumView
from checkers.invariants.transactions import TxnView
from harness.checked_spec import CheckedSpec

_ISR_REPORTS = ("isr_proposed", "isr_updated", "isr_rollback")


class PartitionView:
    """What the trace has said about one partition and its replicas so far."""

    def __init__(self) -> None:
        self.ctl: dict | None = None          # last controller metadata_applied event
        self.ctl_by_pe: dict[int, dict] = {}  # partition epoch -> the controller's state at it
        self.th = 0                           # True HWM
        self.th_event: dict | None = None     # the hwm event that set it
        self.hwm_series: list[tuple[int, int]] = []       # (time, TH) after each TH increase
        self.leo: dict[Any, tuple[int, dict]] = {}        # replica -> (leo, event)
        self.role: dict[Any, tuple[str, int | None]] = {}  # replica -> (role, leader_epoch)
        self.local_isr: dict[Any, list] = {}              # replica -> last local (maximal) ISR
        self.leader_hwm: dict[Any, tuple[int, int, dict]] = {}  # replica -> (leader_epoch, hwm, event)
        self.summaries: dict[Any, dict] = {}              # replica -> its last log_summary event
        self.unmatched: dict[int, list[dict]] = {}        # PE -> replica states applied before the
        #                                                   controller's state at that PE was seen


class TraceState:
    """The cluster as the events fed so far describe it (see the module docstring)."""

    def __init__(self, spec: CheckedSpec) -> None:
        self.variant = spec.variant
        self.min_isr = spec.min_isr
        self.parts: dict[tuple, PartitionView] = defaultdict(PartitionView)
        self.fenced: set = set()
        self.down: set = set()  # brokers between their startup (log recovery) and their next registration
        self.last_registration: tuple[int, dict] | None = None  # (broker epoch, event) of the latest one
        self.epoch_owner: dict[Any, tuple[Any, dict]] = {}      # broker epoch -> (broker, event)
        self.applied_epochs: dict[tuple, tuple[int, int, dict]] = {}  # (replica, pk) -> (LE, PE, event)
        self.ctl_offset = -1                  # the controller's log reaches at least this offset
        self.broker_offsets: list[dict] = []  # metadata_offset events of the brokers, in trace order
        self.quorum = QuorumView()
        self.groups = GroupView()
        self.txns = TxnView()

    def members(self, ctl: dict) -> list:
        """The replicas a committed partition state (``ctl``) trusts with the data: its ISR, and under
        KIP-966 its ELR too."""
        out = list(ctl.get("isr") or [])
        if self.variant != "v3.5":
            out += list(ctl.get("elr") or [])
        return out

    def apply(self, step: Step) -> None:
        """Move the state as ``step``'s event says."""
        ev, ctl = step.ev, step.ctl
        kind = ev.get("kind")
        if step.kind == CONTROLLER_COPY:
            return  # the record's first copy moved the state already
        if step.kind in GROUP_KINDS:
            self.groups.apply(step)
            return
        if step.kind in TXN_KINDS:
            self.txns.apply(step)
            return
        if self.quorum.apply(step):
            return
        if step.kind == BROKER_APPLIED and kind != "metadata_offset":
            return
        if ctl:
            offset = ev.get("offset")
            if offset is not None:
                self.ctl_offset = max(self.ctl_offset, offset)
        elif kind == "metadata_offset":
            self.broker_offsets.append(ev)
            return
        if step.kind in (CONTROLLER_FENCED, CONTROLLER_UNFENCED, CONTROLLER_REGISTERED):
            self._controller_broker_event(step)
            return
        # Log recovery at startup (per partition; the broker's lifecycle "recovered" comes after its
        # registration and is not this) marks the broker as starting up.
        if (kind == "recovered" and ev.get("partition") is not None) or (
                kind == "leo" and ev.get("reason") == "recovery"):
            b = ev.get("replica", ev.get("broker"))
            if b is None and str(ev.get("node", "")).isdigit():
                b = int(ev["node"])
            if b is not None:
                self.down.add(b)  # starting up: not RUNNING until the controller accepts its registration
        pk = step.pk
        if pk is None:
            if not ctl and kind in ("registered", "recovered") and ev.get("broker") is not None:
                for key in [k for k in self.applied_epochs if k[0] == ev["broker"]]:
                    del self.applied_epochs[key]  # a restarted broker replays metadata from scratch
            return
        view = self.parts[pk]
        if step.kind == CONTROLLER_STATE:
            pe = ev.get("partition_epoch")
            if pe is not None:
                view.ctl_by_pe[pe] = ev
                view.unmatched.pop(pe, None)  # compared with this state now (I5)
            view.ctl = ev
            return
        replica = step.replica
        if replica is None:
            return
        if kind == "log_summary":
            view.summaries[replica] = ev
        elif kind == "metadata_applied":
            self._replica_state(view, pk, replica, ev)
        elif kind == "role":
            view.role[replica] = (ev.get("role"), ev.get("leader_epoch"))
        elif kind == "leader_epoch_start":
            view.role[replica] = ("leader", ev.get("leader_epoch"))
            leo = ev.get("leo")
            if leo is None and replica in view.leo:
                leo = view.leo[replica][0]
            if leo is not None:
                view.leo[replica] = (leo, ev)
        elif kind in ("leo", "truncate"):
            leo = ev.get("leo") if kind == "leo" else ev.get("to_offset")
            if leo is not None:
                view.leo[replica] = (leo, ev)
        elif kind == "hwm":
            hwm = ev.get("hwm")
            if hwm is not None and ev.get("role", "leader") == "leader":
                view.leader_hwm[replica] = (ev.get("leader_epoch"), hwm, ev)
                if hwm > view.th:
                    view.th = hwm
                    view.th_event = ev
                    view.hwm_series.append((ev["time"], hwm))
        elif kind in _ISR_REPORTS:
            isr = ev.get("maximal_isr") if kind == "isr_proposed" else ev.get("isr")
            if isr is not None:
                view.local_isr[replica] = list(isr)

    def _controller_broker_event(self, step: Step) -> None:
        ev = step.ev
        b = ev["broker"]
        if step.kind == CONTROLLER_UNFENCED:
            self.fenced.discard(b)
            return
        self.fenced.add(b)  # C4: a new registration stays fenced until unfenced
        if step.kind == CONTROLLER_REGISTERED:
            epoch = ev.get("broker_epoch")
            if epoch is not None:
                self.last_registration = (epoch, ev)
                self.epoch_owner[epoch] = (b, ev)
            self.down.discard(b)

    def _replica_state(self, view: PartitionView, pk: tuple, replica: Any, ev: dict) -> None:
        pe = ev.get("partition_epoch")
        if pe is not None and pe not in view.ctl_by_pe:
            view.unmatched.setdefault(pe, []).append(ev)  # the controller's record may come later
        le = ev.get("leader_epoch")
        if le is not None and pe is not None:
            self.applied_epochs[(replica, pk)] = (le, pe, ev)
        if ev.get("isr") is not None:
            view.local_isr[replica] = list(ev["isr"])
