"""A small launcher for a loopback reference cluster (a controller or a quorum of them + N brokers as real
processes).

Used by the server's integration tests and ``bench/bench_produce.py``; the harness has its own, richer
``Cluster`` adapter. Each node gets a config file per the node-process contract, a data directory, a free
port on 127.0.0.1 and a stderr log file; ``stop()`` sends SIGTERM then SIGKILL after a grace period, and
``close()`` stops everything this object started (tests call it in ``finally``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it if the process that started it dies (Linux prctl
    PR_SET_PDEATHSIG), so a killed test run never leaves nodes behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


# Listening ports are drawn below the kernel's ephemeral range (32768-60999 by default): a port the kernel
# handed out (bind to port 0) is free only until the node binds it, and in between any outgoing connection of
# any process may take it as its source port (seen as "address already in use" while other runs were going).
_LISTEN_PORTS = (20000, 32000)
_port_rng = random.Random()


def free_port(host: str = "127.0.0.1") -> int:
    """A currently unused TCP port on ``host``, outside the range the kernel gives outgoing connections."""
    for _ in range(200):
        port = _port_rng.randrange(*_LISTEN_PORTS)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the whole range busy: let the kernel choose
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Node:
    """One node process: id, role, port, paths, and the process while running."""

    node_id: int
    role: str
    port: int
    data_dir: str
    config_path: str
    log_path: str
    proc: subprocess.Popen | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """``127.0.0.1:port``."""
        return f"127.0.0.1:{self.port}"


class LocalCluster:
    """One controller (node id 0 unless told otherwise), or a quorum of ``controller_ids``, and brokers with
    the given ids. ``controller`` is the first controller."""

    def __init__(self, base_dir: str, broker_ids: list[int] | tuple[int, ...] = (1, 2, 3),
                 controller_props: dict[str, str] | None = None, broker_props: dict[str, str] | None = None,
                 controller_id: int = 0, controller_ids: list[int] | tuple[int, ...] | None = None) -> None:
        self.base_dir = base_dir
        os.makedirs(base_dir, exist_ok=True)
        ids = list(controller_ids) if controller_ids else [controller_id]
        self.controllers = {c: self._make_node(c, "controller", controller_props or {}) for c in ids}
        self.controller = self.controllers[ids[0]]
        self.brokers = {b: self._make_node(b, "broker", broker_props or {}) for b in broker_ids}

    def _make_node(self, node_id: int, role: str, props: dict[str, str]) -> Node:
        d = os.path.join(self.base_dir, f"{role}-{node_id}")
        os.makedirs(d, exist_ok=True)
        return Node(node_id, role, free_port(), os.path.join(d, "data"), os.path.join(d, "node.properties"),
                    os.path.join(d, "stderr.log"), extra=dict(props))

    def _write_config(self, node: Node) -> None:
        props = {"node.id": str(node.node_id), "process.roles": node.role, "listeners": node.address,
                 "log.dirs": node.data_dir, "trace.file": self.trace_path(node)}
        if node.role == "broker":
            props["controller.quorum.bootstrap.servers"] = self.controller.address
        if len(self.controllers) > 1:
            props["controller.quorum.voters"] = ",".join(f"{c}@{n.address}" for c, n in sorted(self.controllers.items()))
        props.update(node.extra)
        with open(node.config_path, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in props.items()))

    def trace_path(self, node: Node) -> str:
        """Where the node's trace goes (beside its data dir, so a wiped data dir keeps the trace)."""
        return os.path.join(os.path.dirname(node.data_dir), "trace.jsonl")

    @property
    def bootstrap(self) -> str:
        """Comma-separated broker addresses for clients."""
        return ",".join(n.address for n in self.brokers.values())

    def nodes(self) -> list[Node]:
        """Controllers first, then brokers by id."""
        return [self.controllers[c] for c in sorted(self.controllers)] + [self.brokers[b] for b in sorted(self.brokers)]

    def add_broker(self, broker_id: int, props: dict[str, str] | None = None) -> Node:
        """Define (not start) another broker."""
        node = self._make_node(broker_id, "broker", props or next(iter(self.brokers.values())).extra)
        self.brokers[broker_id] = node
        return node

    # ------------------------------------------------------------------ processes
    def start_node(self, node: Node) -> None:
        """Start the node's process (config rewritten first)."""
        if node.proc is not None and node.proc.poll() is None:
            return
        self._write_config(node)
        module = f"reference_impl.server.{node.role}"
        log = open(node.log_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        node.proc = subprocess.Popen([sys.executable, "-m", module, "--config", node.config_path],
                                     stdout=log, stderr=log, env=env, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        log.close()

    def start(self, wait_s: float = 30.0) -> None:
        """Start the controllers and every broker; wait until all brokers are unfenced."""
        for c in sorted(self.controllers):
            self.start_node(self.controllers[c])
        for b in sorted(self.brokers):
            self.start_node(self.brokers[b])
        self.wait_unfenced(list(self.brokers), wait_s)

    def stop_node(self, node: Node, grace_s: float = 35.0) -> int | None:
        """SIGTERM (graceful), SIGKILL after ``grace_s``; returns the exit code."""
        if node.proc is None:
            return None
        if node.proc.poll() is None:
            node.proc.send_signal(signal.SIGTERM)
            try:
                node.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait(10)
        code = node.proc.returncode
        node.proc = None
        return code

    def kill_node(self, node: Node) -> None:
        """SIGKILL (a crash)."""
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait(10)
        node.proc = None

    def close(self) -> None:
        """Stop every process this cluster started: brokers first (SIGTERM, controlled shutdown needs the
        controller), then the controller; SIGKILL whatever is still running after a short grace."""
        for group in ([self.brokers[b] for b in sorted(self.brokers)], list(self.controllers.values())):
            for node in group:
                if node.proc is not None and node.proc.poll() is None:
                    node.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 15
            for node in group:
                if node.proc is None:
                    continue
                try:
                    node.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait(10)
                node.proc = None

    # ------------------------------------------------------------------ observation
    def trace(self, node: Node) -> list[dict]:
        """The node's trace events so far (a torn last line is skipped)."""
        out = []
        try:
            with open(self.trace_path(node), encoding="utf-8") as fh:
                for line in fh:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
        except FileNotFoundError:
            pass
        return out

    def committed(self) -> list[dict]:
        """The controller records the quorum committed, as traced: one copy each (every voter traces what it
        applies), in offset order."""
        seen: dict[tuple, dict] = {}
        for node in self.controllers.values():
            for ev in self.trace(node):
                if ev.get("source") == "controller" and isinstance(ev.get("offset"), int):
                    seen.setdefault((ev["offset"], ev["kind"], ev.get("partition")), ev)
        return [seen[k] for k in sorted(seen, key=lambda k: (k[0], str(k[1]), str(k[2])))]

    def active_controller(self) -> Node | None:
        """The controller whose trace last says it became active (newest quorum epoch), if running."""
        best: tuple[int, Node] | None = None
        for node in self.controllers.values():
            if node.proc is None or node.proc.poll() is not None:
                continue
            for ev in self.trace(node):
                if ev.get("kind") == "controller_active" and (best is None or ev["epoch"] > best[0]):
                    best = (ev["epoch"], node)
        return best[1] if best else None

    def wait_unfenced(self, broker_ids: list[int], timeout_s: float = 30.0) -> None:
        """Wait until the committed records show each broker's latest registration unfenced."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state: dict[int, tuple[int, bool]] = {}
            for ev in self.committed():
                if ev["kind"] == "registered":
                    state[ev["broker"]] = (ev["broker_epoch"], False)
                elif ev["kind"] in ("unfenced", "fenced") and ev.get("broker") in state:
                    epoch, _ = state[ev["broker"]]
                    if ev["broker_epoch"] == epoch:
                        state[ev["broker"]] = (epoch, ev["kind"] == "unfenced")
            if all(state.get(b, (0, False))[1] for b in broker_ids):
                return
            for node in self.nodes():
                if node.proc is not None and node.proc.poll() is not None:
                    raise RuntimeError(f"{node.role} {node.node_id} exited with {node.proc.returncode}; "
                                       f"see {node.log_path}")
            time.sleep(0.1)
        raise TimeoutError(f"brokers {broker_ids} not all unfenced after {timeout_s}s")
