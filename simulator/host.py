"""What a simulated node may ask of the world it runs in (``world.World`` implements it).

The nodes are written against this interface rather than the world itself, so the world can build nodes
without the nodes knowing the world: time, timers, RPCs, tracing, the run's settings and random streams.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

from simulator.network import Message
from simulator.options import SimOptions


class Host(Protocol):
    """The world as a node sees it."""

    now: int
    steps: int
    options: SimOptions
    topic: str
    seed: int
    rng_ids: random.Random
    rng_client: random.Random
    broker_ids: list[int]
    controller_ids: list[int]
    nodes: dict[Any, Any]
    clients: Any

    def at(self, when: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` as a step at simulated time ``when``."""

    def timer(self, node: Any, delay: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` after ``delay`` ms unless ``node`` has died by then."""

    def call(self, src: Any, dst: Any, kind: str, body: Any, on_reply: Callable[[Any], Any],
             on_fail: Callable[[], Any], timeout_ms: int | None = None,
             on_refused: Callable[[], Any] | None = None) -> None:
        """Send a request; exactly one callback runs later."""

    def reply(self, request: Message, body: Any) -> None:
        """Answer a request."""

    def emit(self, node: str, events: list[dict[str, Any]]) -> None:
        """Trace events of ``node``."""

    def touched(self, broker: Any, replica: Any) -> None:
        """A replica of ``broker`` changed in this step."""

    def active_controller(self) -> Any:
        """The live active controller, or None."""

    def check_controller(self, core: Any) -> None:
        """The controller core's own consistency check after a commit."""

    def stamp(self) -> int:
        """A trace/history time in ns."""
