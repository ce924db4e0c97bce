"""Generators: plain, seeded descriptions of which operations to run and when.

A generator answers one question, ``op(ctx)``: given the current phase time and the asking process, what
should that process do next? It returns an invocation dict (``{"f": ..., "value": ...}``), ``PENDING``
(nothing right now, ask again soon) or ``None`` (exhausted: this process is done). Generators hold no
threads, sockets or clocks: time comes in through ``ctx.time_s`` and randomness through ``ctx.rng``, so
they are unit-testable without a cluster and a seed reproduces the same op sequence. The interpreter
calls them under one lock, so they need no locking of their own.

Scheduling: a generator may stamp an op with ``"_at"`` (seconds since the phase start): the interpreter
waits until then before invoking it. ``Stagger`` uses this to hold a global rate; ``TimeLimit`` refuses
ops whose time lies beyond the limit. Keys starting with ``_`` are scheduling hints and never reach the
history.

Combinators (small, composable, Jepsen-like): ``Mix`` (weighted random choice), ``Stagger`` (rate),
``TimeLimit``, ``Limit`` (count), ``Once``, ``Seq`` (phases: the next generator starts when the previous is
exhausted), ``FnGen`` (a function as a generator). Workload-specific generators live with their workload
(``workloads.queue_ops``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class _Pending:
    """The sentinel meaning "no op for you right now; ask again later"."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = _Pending()


@dataclass
class GenContext:
    """What a generator may look at: phase time in seconds, the asking process, the seeded rng."""

    time_s: float
    process: int | str
    rng: random.Random = field(default_factory=lambda: random.Random(0))


class Generator(Protocol):
    """Anything with ``op(ctx) -> dict | PENDING | None``."""

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """The next invocation for ``ctx.process``, ``PENDING`` or ``None`` when exhausted."""


class FnGen:
    """A function ``ctx -> op | PENDING | None`` used as a generator."""

    def __init__(self, fn: Callable[[GenContext], dict | _Pending | None]):
        self.fn = fn

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Call the function."""
        return self.fn(ctx)


class Once:
    """Emit one copy of ``op`` (to whichever process asks first), then be exhausted."""

    def __init__(self, op: dict):
        self._op: dict | None = dict(op)

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """The op the first time, ``None`` afterwards."""
        op, self._op = self._op, None
        return op


class Limit:
    """At most ``n`` ops from ``gen``."""

    def __init__(self, gen: Generator, n: int):
        self.gen, self.remaining = gen, n

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Forward until ``n`` ops were emitted."""
        if self.remaining <= 0:
            return None
        op = self.gen.op(ctx)
        if isinstance(op, dict):
            self.remaining -= 1
        return op


class TimeLimit:
    """``gen`` until ``seconds`` of phase time have passed; ops scheduled (``_at``) past the limit are dropped."""

    def __init__(self, gen: Generator, seconds: float):
        self.gen, self.seconds = gen, seconds

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Forward while within the limit."""
        if ctx.time_s >= self.seconds:
            return None
        op = self.gen.op(ctx)
        if isinstance(op, dict) and op.get("_at", 0.0) >= self.seconds:
            return None
        return op


class Stagger:
    """Space ops out so that together they arrive at about ``rate`` per second.

    Like Jepsen's stagger, the gap between consecutive ops is uniform in [0, 2/rate), so the mean rate is
    ``rate`` while arrivals stay irregular (which shakes out timing-dependent bugs better than a metronome).
    The schedule is global across processes: a slow process does not slow the others.
    """

    def __init__(self, gen: Generator, rate: float):
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.gen, self.interval = gen, 1.0 / rate
        self.next_at: float | None = None

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Forward ``gen``'s op, stamped with its scheduled time ``_at``."""
        op = self.gen.op(ctx)
        if not isinstance(op, dict):
            return op
        if self.next_at is None or self.next_at < ctx.time_s - 1.0:
            # Don't let a backlog build up behind slow ops: at most one second of catch-up burst.
            self.next_at = max(ctx.time_s - 1.0, 0.0) if self.next_at is not None else ctx.time_s
        op = dict(op)
        op["_at"] = max(self.next_at, op.get("_at", 0.0))
        self.next_at += ctx.rng.uniform(0.0, 2.0 * self.interval)
        return op


class Mix:
    """A weighted random choice among generators on each call; exhausted ones drop out."""

    def __init__(self, gens: list[Generator], weights: list[float] | None = None):
        if weights is not None and len(weights) != len(gens):
            raise ValueError("one weight per generator")
        self.gens = list(gens)
        self.weights = list(weights) if weights is not None else [1.0] * len(gens)

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Pick a generator by weight and ask it; ``PENDING`` if the chosen one is pending."""
        while self.gens:
            i = ctx.rng.choices(range(len(self.gens)), weights=self.weights)[0]
            op = self.gens[i].op(ctx)
            if op is None:
                del self.gens[i], self.weights[i]
                continue
            return op
        return None


class Seq:
    """Phases within one generator: ``gens[0]`` until exhausted, then ``gens[1]``, and so on."""

    def __init__(self, gens: list[Generator]):
        self.gens = list(gens)

    def op(self, ctx: GenContext) -> dict | _Pending | None:
        """Ask the current phase; move to the next when it is exhausted."""
        while self.gens:
            op = self.gens[0].op(ctx)
            if op is None:
                self.gens.pop(0)
                continue
            return op
        return None


def strip_hints(op: dict) -> dict:
    """The op without scheduling hints (keys starting with ``_``), as it goes into the history."""
    return {k: v for k, v in op.items() if not k.startswith("_")}


def take(gen: Generator, n: int, time_s: float = 0.0, process: int | str = 0,
         rng: random.Random | None = None) -> list[Any]:
    """Ask ``gen`` up to ``n`` times (for tests and previews); stops early at exhaustion."""
    rng = rng or random.Random(0)
    out: list[Any] = []
    for _ in range(n):
        op = gen.op(GenContext(time_s, process, rng))
        if op is None:
            break
        out.append(op)
    return out
