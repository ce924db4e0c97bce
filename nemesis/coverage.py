"""Fault coverage: for each requested fault family, how often it was requested, attempted and proven.

A green verdict for a fault that never happened is the worst outcome a harness can produce, so every
nemesis completion carries ``value.effective`` (true only with evidence: the pid gone, the rule in
place and a connection across it refused, the offset measured inside the node, the bytes dropped, ...).
``coverage_table`` reads a history and counts, per family (the families and their ops are
``harness.faults``):

- ``requested``: whether the run asked for the family (``spec.nemesis``, read by the one parser of
  ``--nemesis``, ``harness.faults.requested_families``);
- ``attempted``: fault invocations of the family in the history;
- ``effective``: ``ok`` completions of those invocations with ``value.effective`` true;
- ``failed``: completions that were ``fail``/``info`` or lacked evidence;
- ``in_place_s``: seconds during which a fault of the family may have been in place (the union of its
  ``harness.faults`` intervals, the same ones the report shades and Spark's statistics use).

``harness.verdict`` turns the table into a cap on the run's verdict: a requested family with zero
effective faults makes the run ``unknown`` (never ``valid``), with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.faults import F_FAMILY, end_of, fault_timeline, nemesis_ops, requested_families


def coverage_table(ops: Iterable[dict], requested: Any,
                   end_of_history: int | None = None) -> dict[str, dict[str, Any]]:
    """Per-family coverage counts from a history's ops (see the module docstring).

    ``ops`` may be the whole history or only its nemesis ops; ``end_of_history`` (default: the last op's
    time) is where a fault never healed stops counting as in place.
    """
    ops = list(ops)
    families = requested_families(requested)
    table: dict[str, dict[str, Any]] = {fam: _row(True) for fam in families}
    for op in nemesis_ops(ops):
        family = F_FAMILY.get(op.get("f", ""))
        if family is None:
            continue
        row = table.setdefault(family, _row(False))
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
    end = end_of(ops) if end_of_history is None else end_of_history
    spans: dict[str, list[tuple[int, int]]] = {}
    for interval in fault_timeline(nemesis_ops(ops), end).intervals:
        spans.setdefault(F_FAMILY[interval.f], []).append((interval.start, interval.end))
    for family, row in table.items():
        row["in_place_s"] = round(union_length(spans.get(family, [])) / 1e9, 3)
    return table


def _row(requested: bool) -> dict[str, Any]:
    return {"requested": requested, "attempted": 0, "effective": 0, "failed": 0, "by_f": {}}


def union_length(spans: list[tuple[int, int]]) -> int:
    """The total length covered by ``(start, end)`` spans, overlaps counted once."""
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total
