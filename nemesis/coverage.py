"""Fault coverage: for each requested fault family, how often it was requested, attempted and proven.

A green verdict for a fault that never happened is the worst outcome a harness can produce, so every
nemesis completion carries ``value.effective`` (true only with evidence: the pid gone, the rule in
place and a connection across it refused, the offset measured inside the node, the bytes dropped, ...).
``coverage_table`` reads a history and counts, per family:

- ``requested``: whether the run asked for the family (``spec["nemesis"]``);
- ``attempted``: fault invocations of the family in the history;
- ``effective``: ``ok`` completions of those invocations with ``value.effective`` true;
- ``failed``: completions that were ``fail``/``info`` or lacked evidence.

``verdict_cap`` turns the table into the cap for the run's verdict: a requested family with zero
effective faults makes the run ``unknown`` (never ``valid``), with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Fault ops per family. Heal ops (start, resume, stop-partition, reset-clock, heal) are not faults.
FAMILY_FS: dict[str, set[str]] = {
    "kill": {"kill"},
    "stop": {"stop"},
    "pause": {"pause"},
    "partition": {"start-partition"},
    "clock": {"bump-clock", "strobe-clock", "skew-clock"},
    "disk": {"power-loss", "lose-unsynced"},
    "admin": {
        "reassign",
        "cancel-reassignment",
        "elect-preferred",
        "elect-unclean",
        "set-reassignment-mode",
    },
}

F_FAMILY: dict[str, str] = {f: family for family, fs in FAMILY_FS.items() for f in fs}


def requested_families(nemesis: Any) -> list[str]:
    """Families named by a spec's ``nemesis`` field (a list or a comma-separated string; ``all``)."""
    if nemesis is None:
        return []
    names = nemesis.split(",") if isinstance(nemesis, str) else list(nemesis)
    out: list[str] = []
    for name in (n.strip() for n in names):
        if not name or name == "none":
            continue
        expanded = list(FAMILY_FS) if name == "all" else [name]
        for family in expanded:
            if family not in out:
                out.append(family)
    return out


def coverage_table(ops: Iterable[dict], requested: Any) -> dict[str, dict[str, Any]]:
    """Per-family coverage counts from a history's ops (see the module docstring)."""
    families = requested_families(requested)
    table: dict[str, dict[str, Any]] = {
        fam: {"requested": True, "attempted": 0, "effective": 0, "failed": 0, "by_f": {}} for fam in families
    }
    for op in ops:
        if op.get("process") != "nemesis":
            continue
        family = F_FAMILY.get(op.get("f", ""))
        if family is None:
            continue
        row = table.setdefault(
            family, {"requested": False, "attempted": 0, "effective": 0, "failed": 0, "by_f": {}}
        )
        by_f = row["by_f"].setdefault(op["f"], {"attempted": 0, "effective": 0})
        if op.get("type") == "invoke":
            row["attempted"] += 1
            by_f["attempted"] += 1
            continue
        value = op.get("value")
        effective = op.get("type") == "ok" and isinstance(value, dict) and value.get("effective") is True
        if effective:
            row["effective"] += 1
            by_f["effective"] += 1
        else:
            row["failed"] += 1
    return table


def verdict_cap(table: dict[str, dict[str, Any]]) -> tuple[str | bool, list[str]]:
    """``(True, [])`` when every requested family took effect at least once, else ``("unknown", why)``."""
    reasons = []
    for family, row in table.items():
        if not row.get("requested"):
            continue
        if row["attempted"] == 0:
            reasons.append(f"nemesis {family!r} was requested but never attempted")
        elif row["effective"] == 0:
            reasons.append(
                f"nemesis {family!r} was attempted {row['attempted']} times but never proven effective"
            )
    return (True, []) if not reasons else ("unknown", reasons)
