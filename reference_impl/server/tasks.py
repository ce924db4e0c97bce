"""Stopping a node's background tasks without trusting each cancellation to land.

On Python 3.11 ``asyncio.wait_for`` can lose a cancellation that arrives just as the awaited future
completes (the result is returned instead of ``CancelledError``), so a ``while True`` loop around it
keeps running after ``cancel()``; awaiting such a task on shutdown waits forever and the SIGTERMed node
never exits. ``cancel_all`` cancels again until every task has ended, and gives up after a grace period
rather than hang: a stopping node must stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

RECANCEL_S = 0.2
DEFAULT_GRACE_S = 5.0


async def cancel_all(tasks: Iterable[asyncio.Task], grace_s: float = DEFAULT_GRACE_S) -> list[asyncio.Task]:
    """Cancel ``tasks`` and wait for them to end, cancelling the stragglers again every 0.2 s; return the
    tasks still running after ``grace_s`` (none, unless one ignores cancellation for good). The tasks'
    results and exceptions are consumed."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while pending:
        for task in pending:
            task.cancel()
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL_S, remaining))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as never retrieved
    return list(pending)
