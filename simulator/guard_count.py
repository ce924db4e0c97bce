"""Counting guard firings while schedules run (``kraftcheck simulate --coverage``).

A guard fired when the first line of its body ran. Python 3.11 has no ``sys.monitoring``, so this uses
``sys.settrace``: the global hook sees every new frame and, by a per-code-object cache, hands a line tracer
only to frames of the core functions that hold guards (their file and qualified name match a guard's); every
other frame runs untraced. The line tracer counts a line only when it is one of that function's guard body
lines. The cost is a Python call per function call in the process plus one per line of a guarded function,
a few times the plain speed, which is why counting is on only when asked for (the default search never
installs the hook).

The message the world is delivering when a guard fires is noted too (``note_delivery`` is called by the
world for every delivery; a global assignment, so free when nobody counts): the kinds of messages under
which a guard fired are what ``steer`` aims at.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

from simulator.guards import Guard

# the kind of the message being delivered in the current step ("timer" between deliveries)
_current_kind = "timer"


def note_delivery(kind: str) -> None:
    """The world is about to hand a message of ``kind`` to a node (or its reply to the sender)."""
    global _current_kind
    _current_kind = kind


def current_kind() -> str:
    """The kind noted last."""
    return _current_kind


class GuardCounter:
    """Per-guard firing counts of the schedules run while ``counting`` is active, and the message kinds
    they fired under: ``fired[i]`` for guard ``i`` of the table given, ``kinds[i]`` a set of kinds."""

    def __init__(self, guards: tuple[Guard, ...] | list[Guard]) -> None:
        self.guards = tuple(guards)
        self.fired = [0] * len(self.guards)
        self.kinds: list[set[str]] = [set() for _ in self.guards]
        # the kinds of message under which each guarded function ran ("path:qualname" -> kinds), fired or not
        self.calls: dict[str, set[str]] = {}
        self._by_function: dict[tuple[str, str], dict[int, int]] = {}
        for i, guard in enumerate(self.guards):
            self._by_function.setdefault((guard.module_file, guard.function), {})[guard.body_line] = i

    def snapshot(self) -> list[int]:
        """A copy of the counts (to take the difference one schedule made)."""
        return list(self.fired)


@contextmanager
def counting(counter: GuardCounter) -> Iterator[GuardCounter]:
    """Count guard firings into ``counter`` while the body runs (this thread only)."""
    plan: dict[CodeType, dict[int, int] | None] = {}
    by_function = counter._by_function
    fired, kinds, calls = counter.fired, counter.kinds, counter.calls
    names = {(g.module_file, g.function): f"{g.path}:{g.function}" for g in counter.guards}

    def hook(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        code = frame.f_code
        lines = plan.get(code, False)
        if lines is False:
            lines = plan[code] = by_function.get((code.co_filename, code.co_qualname))
        if lines is None:
            return None
        name = names[(code.co_filename, code.co_qualname)]
        if name in calls:
            calls[name].add(_current_kind)
        else:
            calls[name] = {_current_kind}

        def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
            if event == "line":
                index = lines.get(frame.f_lineno)  # type: ignore[union-attr]
                if index is not None:
                    fired[index] += 1
                    kinds[index].add(_current_kind)
            return local
        return local

    previous = sys.gettrace()
    sys.settrace(hook)
    try:
        yield counter
    finally:
        sys.settrace(previous)
