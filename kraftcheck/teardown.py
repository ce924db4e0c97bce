"""Teardown on every exit path: an idempotent stack of release actions, and SIGTERM/SIGHUP as Ctrl-C.

A run acquires things in order (host, nemesis mounts, history, cluster, clients) and registers the release
of each on a ``TeardownStack``; the stack runs them newest first, once, from whichever comes first: the
run's ``finally``, an ``atexit`` hook or a signal (SIGTERM and SIGHUP raise ``KeyboardInterrupt`` in the
main thread, so they take the same path as Ctrl-C). A failing action is logged and the rest still run, so
one stuck release cannot leave a partition or a container behind.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any


class TeardownStack:
    """Idempotent teardown actions, run from ``finally``, ``atexit`` or a signal (whichever comes first)."""

    def __init__(self) -> None:
        self._actions: list[tuple[str, Any]] = []
        self._lock = threading.Lock()
        self._done = False

    def add(self, name: str, action: Any) -> None:
        """Register ``action`` under ``name``; actions run in reverse order of registration."""
        with self._lock:
            self._actions.append((name, action))

    def run(self, log: Any = None) -> None:
        """Run the actions newest first, on the first call only; a failing action is logged, the rest still run."""
        with self._lock:
            if self._done:
                return
            self._done = True
            actions = list(reversed(self._actions))
        for name, action in actions:
            started = time.monotonic()
            try:
                action()
            except BaseException as exc:  # keep going (even on a second Ctrl-C): release everything
                if log is not None:
                    log(f"teardown step {name} failed: {type(exc).__name__}: {exc}")
            took = time.monotonic() - started
            if log is not None and took > 1.0:
                log(f"teardown step {name} took {took:.1f} s")


def install_signal_handlers() -> dict[int, Any]:
    """SIGTERM behaves like Ctrl-C (KeyboardInterrupt in the main thread), so ``finally`` runs."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, interrupt)
        except (ValueError, OSError):
            pass
    return previous


def restore_signal_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError, TypeError):
            pass
