"""A live progress display for runs: elapsed time against the time limit, ops/s, errors, nemesis ops.

``RunProgress`` is fed completions by the interpreter (``on_complete``) from many threads; it keeps
thread-safe counters and renders them with rich when stderr is a terminal, or as a plain status line every
few seconds otherwise (CI logs stay readable). Display problems never disturb a run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


class OpCounters:
    """Thread-safe counters of completions: by type, client ops, nemesis ops, ops/s over a window."""

    def __init__(self, window_s: float = 5.0):
        self._lock = threading.Lock()
        self.by_type: Counter = Counter()
        self.nemesis = 0
        self.window_s = window_s
        self._recent: list[float] = []
        # Nemesis packages record their ops themselves; they can report a count through this hook.
        self.nemesis_source: Any = None

    def record(self, invoke: dict, completion: dict, now: float | None = None) -> None:
        """Count one completion."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if completion.get("process") == "nemesis":
                self.nemesis += 1
                return
            self.by_type[completion.get("type")] += 1
            self._recent.append(now)
            cutoff = now - self.window_s
            if self._recent and self._recent[0] < cutoff:
                self._recent = [t for t in self._recent if t >= cutoff]

    def rate(self, now: float | None = None) -> float:
        """Client completions per second over the last window."""
        now = time.monotonic() if now is None else now
        with self._lock:
            recent = [t for t in self._recent if t >= now - self.window_s]
        return len(recent) / self.window_s

    def summary(self) -> str:
        """``ok 120 fail 3 info 2 nemesis 4``."""
        with self._lock:
            parts = [f"{t} {self.by_type.get(t, 0)}" for t in ("ok", "fail", "info")]
            nemesis = self.nemesis
        if self.nemesis_source is not None:
            try:
                nemesis += int(self.nemesis_source())
            except Exception:
                pass
        with self._lock:
            parts.append(f"nemesis {nemesis}")
        return "  ".join(parts)


class RunProgress:
    """The progress bar of a phase (rich on a terminal, periodic plain lines otherwise)."""

    def __init__(self, total_s: float, description: str = "run", enabled: bool = True, stream: Any = None):
        self.total_s = total_s
        self.description = description
        self.counters = OpCounters()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self._start = time.monotonic()
        self._ticker: threading.Thread | None = None
        self._done = threading.Event()

    def on_complete(self, invoke: dict, completion: dict) -> None:
        """Interpreter callback."""
        self.counters.record(invoke, completion)

    def _status(self) -> str:
        return f"{self.counters.rate():6.1f} ops/s  {self.counters.summary()}"

    def __enter__(self) -> RunProgress:
        self._start = time.monotonic()
        if not self.enabled:
            return self
        try:
            interactive = self.stream.isatty()
        except (AttributeError, ValueError):
            interactive = False
        if interactive:
            self._progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
                                      console=Console(file=self.stream), transient=False)
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=self.total_s, status="")
        self._ticker = threading.Thread(target=self._tick, name="kraftcheck-progress", daemon=True)
        self._ticker.start()
        return self

    def _tick(self) -> None:
        last_line = 0.0
        while not self._done.wait(0.5):
            elapsed = time.monotonic() - self._start
            try:
                if self._progress is not None:
                    self._progress.update(self._task, completed=min(elapsed, self.total_s),
                                          status=self._status())
                elif elapsed - last_line >= 5.0:
                    last_line = elapsed
                    print(f"[kraftcheck] {self.description} {elapsed:5.0f}/{self.total_s:.0f} s  "
                          f"{self._status()}", file=self.stream, flush=True)
            except Exception:
                pass

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join(2)
        if self._progress is not None:
            try:
                self._progress.update(self._task, completed=self.total_s, status=self._status())
                self._progress.stop()
            except Exception:
                pass
