"""Per-partition timelines from a run's ``trace.jsonl``: leader, ISR, ELR, leader epoch and high watermark.

The controller's ``metadata_applied`` events (``source: "controller"``) carry each committed partition
state (replicas, ISR, ELR, last-known ELR, leader, leader and partition epochs); a replica's ``hwm``
events with ``role: "leader"`` carry the high watermark as the leader advanced it, and its
``leader_epoch_start`` the one a new leader starts from (a regression after Last Replica Standing shows
there) (docs/history-schema.md, the trace events the nodes write). Times in ``trace.jsonl`` are already on the history's clock (ns since
the run started), so the timeline lines up with the ops and the fault bands.

What it cannot show: a follower's view (its own metadata may lag the controller's; the invariant
checker reads those events) and states the controller never committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATE_FIELDS = ("leader", "leader_epoch", "partition_epoch", "isr", "elr", "last_known_elr", "replicas")


@dataclass
class PartitionTimeline:
    """The committed states and the leader's high watermarks of one partition, in time order."""

    topic: str
    partition: int
    states: list[dict[str, Any]] = field(default_factory=list)
    hwm: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def brokers(self) -> list[int]:
        """Every broker that was a replica, leader, ISR or ELR member at some point."""
        seen: set[int] = set()
        for s in self.states:
            for key in ("replicas", "isr", "elr", "last_known_elr"):
                seen.update(int(b) for b in s.get(key) or [])
            if isinstance(s.get("leader"), int) and s["leader"] >= 0:
                seen.add(s["leader"])
        return sorted(seen)


def partition_timelines(events: list[dict[str, Any]], topic: str | None = None) -> list[PartitionTimeline]:
    """One timeline per (topic, partition) the controller committed a state for (only ``topic`` if given),
    sorted by topic and partition."""
    timelines: dict[tuple[str, int], PartitionTimeline] = {}

    def timeline(ev: dict[str, Any]) -> PartitionTimeline | None:
        t, p = ev.get("topic"), ev.get("partition")
        if not isinstance(t, str) or not isinstance(p, int) or (topic is not None and t != topic):
            return None
        return timelines.setdefault((t, p), PartitionTimeline(t, p))

    for ev in sorted(events, key=lambda e: e.get("time", 0)):
        kind = ev.get("kind")
        if kind == "metadata_applied" and ev.get("source") == "controller":
            tl = timeline(ev)
            if tl is not None:
                state = {k: ev.get(k) for k in STATE_FIELDS}
                for key in ("isr", "elr", "last_known_elr", "replicas"):
                    state[key] = sorted(int(b) for b in state[key] or [])
                tl.states.append({"time": int(ev["time"]), **state})
        elif (kind == "hwm" and ev.get("role") == "leader" or kind == "leader_epoch_start") and isinstance(
                ev.get("hwm"), int):
            tl = timeline(ev)
            if tl is not None:
                tl.hwm.append((int(ev["time"]), int(ev.get("replica", -1)), int(ev["hwm"])))
    return [timelines[k] for k in sorted(timelines) if timelines[k].states]


def changes(tl: PartitionTimeline) -> list[dict[str, Any]]:
    """The timeline as rows: each committed state with the leader's HWM at that moment."""
    rows = []
    hwm_at = 0
    hwm_index = 0
    for state in tl.states:
        while hwm_index < len(tl.hwm) and tl.hwm[hwm_index][0] <= state["time"]:
            hwm_at = tl.hwm[hwm_index][2]
            hwm_index += 1
        rows.append({**state, "hwm": hwm_at})
    return rows
