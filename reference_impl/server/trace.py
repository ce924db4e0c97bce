"""Trace emitter: one JSON object per protocol-relevant change, appended to ``trace.file``.

Each line is ``{"time": time.monotonic_ns(), "node": NAME, "kind": KIND, ...attrs}`` (docs/history-schema.md).
The time is the raw CLOCK_MONOTONIC reading: nodes may run under libfaketime with
``FAKETIME_DONT_FAKE_MONOTONIC=1``, so the wall clock may be skewed but this one is not, and the harness
rebases it to the run start. Every line is flushed as it is written so a ``kill -9`` loses at most the
event being written; a torn last line is something the harness's reader already reports as malformed.

Also here: ``log``, the one-line-per-event stderr logger every node process uses.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, TextIO


class Tracer:
    """Appends trace events for one node; safe to call from several threads."""

    def __init__(self, path: str | os.PathLike[str] | None, node: str) -> None:
        self.node = str(node)
        self._lock = threading.Lock()
        self._file: TextIO | None = None
        if path is not None:
            parent = os.path.dirname(os.fspath(path))
            if parent:
                os.makedirs(parent, exist_ok=True)
            # Line buffering plus an explicit flush: each event reaches the OS as soon as it happens.
            self._file = open(path, "a", encoding="utf-8", buffering=1)

    def emit(self, kind: str, **attrs: Any) -> dict[str, Any]:
        """Write one event stamped now; returns the event (also handy in tests)."""
        event = {"time": time.monotonic_ns(), "node": self.node, "kind": kind, **attrs}
        self.write(event)
        return event

    def write(self, event: dict[str, Any]) -> None:
        """Write a prepared event; fills in ``time`` (monotonic) and ``node`` when missing."""
        event.setdefault("time", time.monotonic_ns())
        event.setdefault("node", self.node)
        line = json.dumps(event, separators=(",", ":"), default=_jsonable)
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()

    def drain(self, events: list[dict[str, Any]], **extra: Any) -> None:
        """Write events drained from the protocol core (plain dicts without a time), adding ``extra``."""
        for ev in events:
            self.write({**extra, **ev})

    def close(self) -> None:
        """Close the file; later events are dropped."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _jsonable(value: Any) -> Any:
    """Fallback encoder: tuples/sets as lists, enums by name, anything else via str."""
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return str(value)


_last_logged: dict[str, float] = {}


def log_throttled(node: str, key: str, message: str, every_s: float = 5.0) -> None:
    """``log`` at most once per ``every_s`` seconds per ``key`` (for retry loops that fail repeatedly)."""
    now = time.monotonic()
    if now - _last_logged.get(key, -1e9) >= every_s:
        _last_logged[key] = now
        log(node, message)


def log(node: str, message: str, stream: TextIO | None = None) -> None:
    """One log line on stderr: wall-clock time (may be faked, for humans), node, message."""
    out = stream or sys.stderr
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    out.write(f"{stamp} [{node}] {message}\n")
    out.flush()


def fail_stop(node: str):
    """A done-callback for background tasks: an exception there is a broken invariant (e.g. a metadata
    record the image cannot apply). Carrying on would leave a broker that silently stopped following the
    protocol, so the process halts (exit 3) with the traceback on stderr, as Kafka halts on fatal errors."""
    def callback(task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        log(node, f"FATAL: background task {task.get_name()} failed: {exc!r}")
        traceback.print_exception(exc, file=sys.stderr)
        sys.stderr.flush()
        os._exit(3)
    return callback
