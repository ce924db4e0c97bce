"""Seeded nemesis schedules: which fault, when, against whom, and when it is healed.

A schedule is plain data derived from a seed: an iterator of ``(delay_s, op)`` pairs, where ``op`` is a
nemesis invocation (``{"process": "nemesis", "type": "invoke", "f": ..., "value": ...}``). The families
come in rounds: each round is a seeded shuffle of every family (a family of weight w appears
round(w) times, at least once), so even a short run attempts every requested fault early, which the
coverage table demands. Each step emits the family's start op, waits, and emits its stop op (families
without a stop op, such as power loss or an admin reassignment, are instantaneous). At most one fault
is active at a time, which is also what keeps power loss to one node at a time.

Random choices made at invoke time (which broker is "one", which halves) come from ``value["pick"]``, a
number drawn here: a seed reproduces the same faults against the same nodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class Schedule:
    """An endless seeded stream of nemesis ops over ``families`` with a mean ``interval_s``."""

    families: list[Family]
    seed: int
    interval_s: float = 10.0
    jitter: float = 0.5

    def __iter__(self) -> Iterator[tuple[float, dict]]:
        rng = random.Random(self.seed)
        if not self.families:
            return
        while True:
            rounds = [fam for fam in self.families for _ in range(max(1, round(fam.weight)))]
            rng.shuffle(rounds)
            for family in rounds:
                yield from self._steps(rng, family)

    def _steps(self, rng: random.Random, family: Family) -> Iterator[tuple[float, dict]]:
        f, value = family.start(rng)
        value = {**value, "pick": rng.randrange(2**31)}
        yield self._delay(rng), _op(f, value)
        if family.stop is not None:
            f, value = family.stop
            yield self._delay(rng), _op(f, dict(value))

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
