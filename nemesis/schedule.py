"""Seeded nemesis schedules: which fault, when, against whom, and when it is healed.

A schedule is plain data derived from a seed: an iterator of ``(delay_s, op)`` pairs, where ``op`` is a
nemesis invocation (``{"process": "nemesis", "type": "invoke", "f": ..., "value": ...}``). The families
(rows of the family table, ``harness.faults``, with their start drawers from ``nemesis.registry``) take
turns in rounds:

- the **first round** gives every family exactly one turn, in a seeded order (``first_round``), so a run
  attempts every fault it asked for as early as it can, which the coverage table demands. Its waits are
  jittered like all others but stratified, so together they take exactly ``interval_s`` per op; with
  the time the ops themselves take, that is what ``harness.fault_time`` counts, and the spec refuses a
  time limit the round does not fit in;
- every **later round** is a random non-empty subset of the families, in random order (Jepsen's habit of
  rotating which faults are combined): its size is drawn uniformly, its members by weight (a family of
  weight 2 is twice as likely to be drawn as one of weight 1 at each pick).

A turn emits the family's start op, waits, and emits its heal op (families without a heal op, such as power
loss or an admin reassignment, are over when their op completes). Each op is preceded by a wait of
``interval_s`` times a draw from ``[1 - jitter, 1 + jitter]``. At most one fault is active at a time, which
is also what keeps power loss to one node at a time.

Random choices made at invoke time (which broker is "one", which halves) come from ``value["pick"]``, a
number drawn here: a seed reproduces the same faults against the same nodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.fault_time import DEFAULT_INTERVAL_S, JITTER
from harness.faults import FAULT_FAMILIES


@dataclass
class Family:
    """A kind of fault: how to draw its start op and which op (if any) ends it."""

    name: str
    start: Callable[[random.Random], tuple[str, dict]]
    stop: tuple[str, dict] | None = None
    weight: float = 1.0
    fs: set[str] = field(default_factory=set)


def _op(f: str, value: dict) -> dict:
    return {"type": "invoke", "process": "nemesis", "f": f, "value": value}


def _ops_s(name: str) -> float:
    row = FAULT_FAMILIES.get(name)
    return row.ops_s if row is not None else 0.0


@dataclass
class Schedule:
    """An endless seeded stream of nemesis ops over ``families`` with a mean ``interval_s``."""

    families: list[Family]
    seed: int
    interval_s: float = DEFAULT_INTERVAL_S
    jitter: float = JITTER

    def __iter__(self) -> Iterator[tuple[float, dict]]:
        rng = random.Random(self.seed)
        if not self.families:
            return
        first = self._first_round(rng)
        waits = self._first_round_waits(rng, sum(1 if family.stop is None else 2 for family in first))
        for family in first:
            yield from self._steps(rng, family, waits)
        while True:
            for family in self._later_round(rng):
                yield from self._steps(rng, family)

    def first_round(self) -> list[str]:
        """The families in the order of their first turns (the order ``__iter__`` gives them)."""
        return [family.name for family in self._first_round(random.Random(self.seed))]

    def first_round_owed(self) -> list[float]:
        """For each step of the first round, the time the ops still to come typically take from that
        step on (the family table's ``ops_s``): a start step owes its own turn's ops and those of the
        turns after it, a heal step only the latter. ``NemesisPackage.run`` keeps that much time free."""
        owed: list[float] = []
        order = [family for name in self.first_round() for family in self.families if family.name == name]
        for j, family in enumerate(order):
            later = sum(_ops_s(f.name) for f in order[j + 1:])
            owed.append(_ops_s(family.name) + later)
            if family.stop is not None:
                owed.append(later)
        return owed

    def _first_round(self, rng: random.Random) -> list[Family]:
        order = list(self.families)
        rng.shuffle(order)
        return order

    def _first_round_waits(self, rng: random.Random, steps: int) -> list[float]:
        """The first round's waits, one per step: jittered as every wait is, but stratified (one from each of
        ``steps`` equal slices of the jitter band, in random order), so that together they take exactly
        ``steps * interval_s``, the time ``harness.fault_time`` counts on."""
        waits = [self.interval_s * (1.0 + self.jitter * (-1.0 + (2 * k + 1) / steps)) for k in range(steps)]
        rng.shuffle(waits)
        return waits

    def _later_round(self, rng: random.Random) -> list[Family]:
        size = rng.randint(1, len(self.families))
        # Weighted sampling without replacement (Efraimidis and Spirakis): each family's key is u ** (1 / w)
        # for a uniform u, and the largest keys win.
        keys = [(rng.random() ** (1.0 / family.weight), i) for i, family in enumerate(self.families)]
        chosen = [self.families[i] for _, i in sorted(keys, reverse=True)[:size]]
        rng.shuffle(chosen)
        return chosen

    def _steps(self, rng: random.Random, family: Family,
               waits: list[float] | None = None) -> Iterator[tuple[float, dict]]:
        """One turn of ``family``; its waits are taken from ``waits`` when given, else drawn."""
        f, value = family.start(rng)
        value = {**value, "pick": rng.randrange(2**31)}
        yield waits.pop() if waits else self._delay(rng), _op(f, value)
        if family.stop is not None:
            f, value = family.stop
            yield waits.pop() if waits else self._delay(rng), _op(f, dict(value))

    def _delay(self, rng: random.Random) -> float:
        low, high = 1.0 - self.jitter, 1.0 + self.jitter
        return self.interval_s * rng.uniform(low, high)

    def take(self, n: int) -> list[tuple[float, dict]]:
        """The first ``n`` steps (for tests and for printing a plan)."""
        out: list[tuple[float, dict]] = []
        for step in self:
            out.append(step)
            if len(out) >= n:
                break
        return out


def choice_start(
    f: str, key: str, options: list[Any], **fixed: Any
) -> Callable[[random.Random], tuple[str, dict]]:
    """A start-op drawer that picks ``value[key]`` from ``options``."""

    def draw(rng: random.Random) -> tuple[str, dict]:
        return f, {key: rng.choice(options), **fixed}

    return draw


def multi_start(
    drawers: list[Callable[[random.Random], tuple[str, dict]]],
) -> Callable[[random.Random], tuple[str, dict]]:
    """A start-op drawer that first picks one of several drawers."""

    def draw(rng: random.Random) -> tuple[str, dict]:
        return rng.choice(drawers)(rng)

    return draw
