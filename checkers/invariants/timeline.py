"""Classify trace events and keep the state a time-ordered sweep needs (see the package docstring)."""

from __future__ import annotations

from typing import Any

CTL = "controller"


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


def brief(ev: dict) -> dict[str, Any]:
    """A short copy of an event for violation reports (line number, time, node, kind, key attributes)."""
    keep = ("time", "node", "kind", "topic", "partition", "replica", "broker", "broker_epoch", "leader",
            "leader_epoch", "partition_epoch", "isr", "elr", "hwm", "leo", "leso", "to_offset", "role",
            "maximal_isr", "proposed", "clean")
    out = {k: ev[k] for k in keep if k in ev}
    if "_line" in ev:
        out["line"] = ev["_line"]
    return out


class PartitionView:
    """What the sweep knows about one partition at the current moment."""

    def __init__(self) -> None:
        self.ctl: dict | None = None          # last controller metadata_applied event
        self.th = 0                           # True HWM
        self.th_event: dict | None = None     # the hwm event that set it
        self.leo: dict[Any, tuple[int, dict]] = {}        # replica -> (leo, event)
        self.role: dict[Any, tuple[str, int | None]] = {}  # replica -> (role, leader_epoch)
        self.local_isr: dict[Any, list] = {}              # replica -> last local (maximal) ISR
        self.leader_hwm: dict[Any, tuple[int, int, dict]] = {}  # replica -> (leader_epoch, hwm, event)
        self.hwm_series: list[tuple[int, int]] = []       # (time, TH) after each TH increase
