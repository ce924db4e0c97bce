"""What every host backend shares: the node list, node directories under the run's store, node logs, and
the signal-based abilities (``Pausable``, the ``process_state`` of ``Killable``).

Both backends keep a node's directory at ``<base_dir>/node-dirs/<node>`` on the harness's file system (the
docker backend bind-mounts it at the same path), record each new directory in the run's state record so
``kraftcheck clean`` can find it after a crash, and send the node's output to ``<node_dir>/node.log``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path

from harness.hosts import state


class NodeDirsMixin:
    """Node bookkeeping shared by ``LocalHost`` and ``DockerHost``.

    The host sets ``run_id``, ``base_dir`` (resolved), ``_nodes`` (names in first-use order) and ``_lock``
    (an ``RLock``) in its ``__init__``; addressing (``_index``, ``ip``) stays with each backend.
    """

    run_id: str
    base_dir: Path
    _nodes: list[str]
    _lock: threading.RLock

    def nodes(self) -> list[str]:
        """Every node named so far, in order."""
        with self._lock:
            return list(self._nodes)

    def node_dir(self, node: str) -> str:
        """``<base_dir>/node-dirs/<node>``, created on first use (recorded for ``clean``)."""
        path = self.base_dir / "node-dirs" / node
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            state.update_run_record(self.run_id, append_node_dirs=[str(path)])
        return str(path)

    def node_path(self, node: str, host_path: str) -> str:
        """Identity: node processes see node directories at their host paths (the local backend shares the
        file system; the docker backend bind-mounts the node directory at the same path)."""
        return str(host_path)

    def share_readonly(self, host_dir: str) -> str:
        """Where node processes see a host directory of programs (a system under test's build): the same
        path here, since nodes share this file system; the docker backend bind-mounts it instead."""
        return str(host_dir)

    def log_path(self, node: str) -> Path:
        """Where the node's stdout and stderr go."""
        return Path(self.node_dir(node)) / "node.log"

    def logs(self, node: str) -> str:
        """Everything the node's processes wrote to stdout/stderr (all starts, in order)."""
        try:
            return self.log_path(node).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


class SignalsMixin:
    """``process_state``, ``pause`` and ``resume`` for a host whose ``pid`` is the node's pid on this machine
    (true of both backends: root sees container processes in the host's pid namespace), and the signal that
    asks each node to stop gracefully (``stop`` sends it, then SIGKILL after the timeout)."""

    kill: Callable[[str, int], None]

    def set_stop_signal(self, node: str, sig: int) -> None:
        """Ask ``node`` to stop with ``sig`` rather than SIGTERM: the cluster adapter knows what each program
        takes as a prompt, clean stop (PostgreSQL's SIGTERM waits for every client to disconnect; SIGINT
        disconnects them and shuts down at once)."""
        self.__dict__.setdefault("_stop_signals", {})[node] = int(sig)

    def stop_signal(self, node: str) -> int:
        """The signal ``stop`` sends ``node`` first (SIGTERM unless ``set_stop_signal`` said otherwise)."""
        return self.__dict__.get("_stop_signals", {}).get(node, int(signal.SIGTERM))

    def process_state(self, node: str, pid: int) -> str | None:
        """The kernel's one-letter state of ``pid`` (``T`` stopped, ``Z`` zombie), None when it is gone."""
        return state.proc_state(pid)

    def pause(self, node: str) -> None:
        """SIGSTOP to the node's process."""
        self.kill(node, signal.SIGSTOP)

    def resume(self, node: str) -> None:
        """SIGCONT to the node's process."""
        self.kill(node, signal.SIGCONT)
