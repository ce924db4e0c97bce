"""Which lines of the protocol core the unmutated simulator runs execute (``sys.settrace``, no dependency).

A mutant on a line no baseline run executes cannot change any run's outcome; the self-test reports it as
"not exercised" instead of spending budget on it. Only frames of files under the given directory are traced
line by line, which keeps the slowdown to a few times.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


@contextmanager
def line_coverage(directory: str) -> Iterator[dict[str, set[int]]]:
    """Record the lines executed under ``directory`` while the body runs: {absolute file: {line, ...}}."""
    prefix = os.path.abspath(directory) + os.sep
    hits: dict[str, set[int]] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        if event == "line":
            hits[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        filename = frame.f_code.co_filename
        if not filename.startswith(prefix):
            return None
        hits.setdefault(filename, set()).add(frame.f_lineno)
        return local

    previous = sys.gettrace()
    sys.settrace(call)
    threading.settrace(call)
    try:
        yield hits
    finally:
        sys.settrace(previous)
        threading.settrace(previous)  # type: ignore[arg-type]
