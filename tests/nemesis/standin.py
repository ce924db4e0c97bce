"""A stand-in cluster for testing the nemesis itself: real processes (TCP echo servers) on a real Host.

Not a model of Kafka: it only offers what the process and network faults touch (start, kill, restart,
addresses), so the nemesis's own evidence can be checked against processes that really run.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

ECHO = Path(__file__).with_name("echo_server.py")


class StandInCluster:
    """N echo-server "brokers" b1..bN and one "controller" c1, started through a Host."""

    def __init__(self, host, brokers: int = 3, port: int = 19092, python: str | None = None):
        self.host = host
        self.port = port
        self.python = python or sys.executable
        self.names = [f"b{i}" for i in range(1, brokers + 1)]
        self.controller = "c1"
        self.node_env: dict[str, dict[str, str]] = {}

    def argv(self, node: str) -> list[str]:
        """The command line of a node."""
        script = self.host.node_path(node, str(self.script_path(node)))
        return [self.python, script, self.host.ip(node), str(self.port)]

    def script_path(self, node: str) -> Path:
        """Where the echo server script is for ``node`` (copied into its node dir)."""
        path = Path(self.host.node_dir(node)) / "echo_server.py"
        if not path.exists():
            path.write_text(ECHO.read_text())
        return path

    def setup(self, spec=None) -> None:
        """Start every node and wait until each accepts connections."""
        for node in [self.controller, *self.names]:
            self.host.start(node, self.argv(node), self.node_env.get(node))
        for node in [self.controller, *self.names]:
            self.wait_ready(node)

    def wait_ready(self, node: str, timeout_s: float = 20.0) -> None:
        """Block until ``node`` accepts a TCP connection."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host.ip(node), self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"{node} not ready: {self.host.logs(node)[-2000:]}")

    def teardown(self) -> None:
        """Stop everything."""
        self.host.teardown()

    def nodes(self) -> list[str]:
        """Every node, controller first."""
        return [self.controller, *self.names]

    def brokers(self) -> list[str]:
        """Broker node names."""
        return list(self.names)

    def bootstrap_servers(self) -> list[str]:
        """host:port of each broker."""
        return [f"{self.host.ip(n)}:{self.port}" for n in self.names]

    def active_controller(self) -> str:
        """The controller's node name."""
        return self.controller

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition 0 is "led" by broker 1 (a fixed answer; enough to test leader targeting)."""
        return {0: 1}

    def kill_node(self, node: str) -> int | None:
        """kill -9."""
        pid = self.host.pid(node)
        self.host.kill(node, 9)
        return pid

    def start_node(self, node: str) -> None:
        """Start a node."""
        self.restart_node(node)

    def restart_node(self, node: str) -> int:
        """Start ``node`` again and wait until it accepts connections."""
        pid = self.host.start(node, self.argv(node), self.node_env.get(node))
        self.wait_ready(node)
        return pid
