"""The ``ClockSkew`` ability through libfaketime, shared by the local and the docker host.

A node whose processes start with ``clock_env(node)`` in their environment run with:

- ``LD_PRELOAD`` = libfaketime (the multi-threaded build when present; the docker image installs the
  same Debian package at the same path);
- ``FAKETIME_TIMESTAMP_FILE`` = ``<node_dir>/faketime.rc``, which holds the offset in seconds
  (``+12.500``, ``-300.000``); ``set_clock_offset`` rewrites it atomically and libfaketime re-reads it at
  most every ``FAKETIME_CACHE_DURATION`` = 1 s, so running processes follow within a second;
- ``FAKETIME_DONT_FAKE_MONOTONIC=1``: only the wall clock moves. ``time.monotonic_ns()`` stays the host's,
  so node trace times remain comparable with the history and monotonic timeouts are unaffected.

Both hosts keep node directories on this machine's file system (docker bind-mounts them at the same
path), so the offset file is written here and read by the node at ``node_path``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]
LIB_NAMES = ["libfaketimeMT.so.1", "libfaketime.so.1"]
RC_NAME = "faketime.rc"


def find_libfaketime() -> str | None:
    """Path of libfaketime on this machine, or None."""
    for directory in LIB_DIRS:
        for name in LIB_NAMES:
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return path
    return None


def format_offset(seconds: float) -> str:
    """libfaketime's relative offset syntax: ``+1.250`` / ``-30.000``."""
    return f"{seconds:+.3f}"


class FaketimeClockMixin:
    """``clock_skew_problem`` / ``clock_env`` / ``set_clock_offset`` for a host with ``node_dir`` and
    ``node_path`` (see the module docstring)."""

    node_dir: Callable[[str], str]
    node_path: Callable[[str, str], str]

    def clock_skew_problem(self) -> str | None:
        """A hint when libfaketime is missing, else None."""
        if find_libfaketime() is None:
            return "libfaketime is not installed (apt-get install libfaketime)"
        return None

    def _offset_file(self, node: str) -> Path:
        return Path(self.node_dir(node)) / RC_NAME

    def clock_env(self, node: str) -> dict[str, str]:
        """The libfaketime environment of ``node`` (its offset file created at zero on first use)."""
        path = self._offset_file(node)
        if not path.exists():
            self.set_clock_offset(node, 0.0)
        return {
            "LD_PRELOAD": find_libfaketime() or "",
            "FAKETIME_TIMESTAMP_FILE": self.node_path(node, str(path)),
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def set_clock_offset(self, node: str, seconds: float) -> None:
        """Write the node's offset file (atomically: libfaketime never reads a half-written offset)."""
        path = self._offset_file(node)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(format_offset(seconds) + "\n")
        os.replace(tmp, path)
