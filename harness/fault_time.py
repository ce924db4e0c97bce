"""How long the nemesis schedule needs to give every requested fault family its turn.

The schedule (``nemesis.schedule``) gives each requested family exactly one turn in its first round, then
draws at random. A run whose main phase ends before that first round does not test what it was asked to
(coverage then caps the verdict at ``unknown``), so the time a first round may take decides two things
before anything starts:

- whether ``--time-limit`` is long enough for the families at the given ``--nemesis-interval``: if not,
  the spec is refused, naming the minimum (``minimum_time_s``);
- the interval itself when the user did not give one: the default, shortened until the first round fits
  (``fitted_interval_s``), but never below ``SHORTEST_FITTED_INTERVAL_S``.

One turn of a family (``turn_s``) is its ops (the start, and the heal for a lasting family), each after a
wait of ``interval_s`` on average, plus the time its ops typically take to complete (``FaultFamily.ops_s``
in the family table, ``harness.faults``: the median measured). The first round is the sum of the turns;
its waits are jittered, but stratified so that they add up to exactly their mean (``nemesis.schedule``).
Ops that take longer than usual (a strike that waits out its moment, a slow strand) do not cost a later
family its turn: the first round's remaining waits shrink to make room (``NemesisPackage.run``), so
with ``interval_s`` of waiting per op in hand, the round fits unless the ops alone overrun that as well.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from harness.faults import FAULT_FAMILIES

DEFAULT_INTERVAL_S = 5.0
"""The mean wait before each nemesis op when the user gives no ``--nemesis-interval`` and there is time."""

SHORTEST_FITTED_INTERVAL_S = 1.0
"""The shortest interval chosen for the user: shorter waits leave the cluster hardly a moment between a heal
and the next fault. The user may still ask for less with ``--nemesis-interval``."""

JITTER = 0.5
"""Each wait is ``interval_s`` times a factor from ``[1 - JITTER, 1 + JITTER]``."""


def turn_s(family: str, interval_s: float) -> float:
    """The time one turn of ``family`` typically takes in the first round at a mean interval of
    ``interval_s`` (its waits, and its ops' typical time)."""
    row = FAULT_FAMILIES[family]
    return row.steps * interval_s + row.ops_s


def minimum_time_s(families: Iterable[str], interval_s: float) -> float:
    """The shortest main phase (seconds) in which one turn of each of ``families`` fits."""
    return sum(turn_s(name, interval_s) for name in families)


def longest_interval_s(families: Iterable[str], time_limit_s: float) -> float | None:
    """The longest interval (to a tenth of a second) at which one turn of each of ``families`` fits in
    ``time_limit_s``; None when none of at least a tenth of a second does (or there is no step)."""
    rows = [FAULT_FAMILIES[name] for name in families]
    steps = sum(row.steps for row in rows)
    if not steps:
        return None
    longest = math.floor(10 * (time_limit_s - sum(row.ops_s for row in rows)) / steps + 1e-9) / 10
    return longest if longest >= 0.1 else None


def fitted_interval_s(families: Iterable[str], time_limit_s: float) -> float | None:
    """The default interval, shortened so that one turn of each of ``families`` fits in ``time_limit_s``;
    None when even ``SHORTEST_FITTED_INTERVAL_S`` is too long (the default when there is no step)."""
    families = list(families)
    if not any(FAULT_FAMILIES[name].steps for name in families):
        return DEFAULT_INTERVAL_S
    longest = longest_interval_s(families, time_limit_s)
    if longest is None or longest < SHORTEST_FITTED_INTERVAL_S:
        return None
    return min(DEFAULT_INTERVAL_S, longest)


def too_short(families: list[str], time_limit_s: float, interval_s: float | None) -> str | None:
    """Why ``time_limit_s`` cannot give one turn of each of ``families`` (None when it can). ``interval_s``
    None means the user gave none and the interval is fitted."""
    if not families:
        return None
    at = SHORTEST_FITTED_INTERVAL_S if interval_s is None else interval_s
    need = minimum_time_s(families, at)
    if need <= time_limit_s + 1e-9:
        return None
    how = "at the shortest interval chosen automatically" if interval_s is None else "at --nemesis-interval"
    longest = longest_interval_s(families, time_limit_s)
    shorter = "" if longest is None else f", or a shorter interval (--nemesis-interval {longest:g} fits)"
    return (f"{time_limit_s:g} s is too short for one turn of each fault family asked for "
            f"({', '.join(families)}): {how} {at:g} s it needs at least {math.ceil(need - 1e-9)} s; give "
            f"--time-limit {math.ceil(need - 1e-9)} or more{shorter}")
