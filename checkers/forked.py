"""Run part of a computation in a forked child, so a large check uses both cores of the machine.

The checkers' big structures (a 1 M-op analysis is a few GB of Python objects) cannot be shipped to a
worker process cheaply, but a ``fork`` shares them copy-on-write: the child computes over the very same
objects and sends back only its (small, picklable) result through a pipe. The parent meanwhile computes
the rest. This is an optimisation only, never a change of result:

* if ``fork`` is unavailable, the child cannot be started, dies, or its function raises, the parent runs
  the function itself (so a genuine exception is raised in the parent, with its own traceback);
* the child never returns into the caller's code: it leaves with ``os._exit`` whatever happens;
* the child is killed and reaped when the parent stops waiting for it (an exception or Ctrl-C in the
  parent), so nothing is left running.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from typing import Any

_OK, _FAILED = b"K", b"E"


class Forked:
    """``fn()`` computing in a forked child; ``result()`` collects it (or computes it here on failure)."""

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.pid: int | None = None
        self._read_fd: int | None = None
        if hasattr(os, "fork"):
            self._start()

    def _start(self) -> None:
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # the child: compute, send, leave without running any of the parent's cleanup
            status = 1
            try:
                os.close(read_fd)
                try:
                    payload = _OK + pickle.dumps(self.fn(), protocol=pickle.HIGHEST_PROTOCOL)
                except BaseException:  # the parent recomputes and raises it properly
                    payload = _FAILED
                view = memoryview(payload)
                while view:
                    view = view[os.write(write_fd, view):]
                status = 0
            finally:
                os._exit(status)
        os.close(write_fd)
        self.pid, self._read_fd = pid, read_fd

    def result(self) -> Any:
        """The function's result: the child's when it delivered one, else computed in this process."""
        if self.pid is None:
            return self.fn()
        try:
            chunks = []
            while True:
                chunk = os.read(self._read_fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            data = b"".join(chunks)
        finally:
            self._reap()
        if data[:1] == _OK:
            try:
                return pickle.loads(data[1:])
            except Exception:  # a truncated payload (the child was killed mid-write): recompute
                pass
        return self.fn()

    def _reap(self) -> None:
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None
        if self.pid is not None:
            pid, self.pid = self.pid, None
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def cancel(self) -> None:
        """Stop the child (if any) without collecting its result."""
        self._reap()

    def __del__(self) -> None:  # a forgotten handle must not leave a child behind
        try:
            self._reap()
        except Exception:
            pass
