"""The small protocols the harness is built from (DESIGN.md section 3).

Jepsen's habit: one small protocol per responsibility, optional abilities as separate runtime-checkable
protocols that callers test for with ``isinstance``. The harness never imports the reference
implementation: it reaches a system under test only through ``Cluster`` and the Kafka wire protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Host(Protocol):
    """Where nodes run: processes on 127.0.0.x (``local``) or Docker containers (``docker``)."""

    name: str

    def start(self, node: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """Start ``argv`` as node ``node`` and return its pid (as seen from the host)."""

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        """Stop node gracefully (SIGTERM, then SIGKILL after ``timeout_s``)."""

    def kill(self, node: str, signal: int) -> None:
        """Send ``signal`` to the node's main process (SIGKILL for kill -9, SIGSTOP/SIGCONT to pause)."""

    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run ``argv`` in the node's environment (its network namespace); return (exit code, output)."""

    def ip(self, node: str) -> str:
        """The node's address on the cluster network."""

    def node_dir(self, node: str) -> str:
        """Host-side directory of the node (config, data dir, trace, logs); created on first use."""

    def node_path(self, node: str, host_path: str) -> str:
        """``host_path`` (inside ``node_dir``) as the node's own processes see it (identity when local)."""

    def pid(self, node: str) -> int | None:
        """The node's main process id on the host, or None when it is not running."""

    def is_running(self, node: str) -> bool:
        """Whether the node's main process is alive (a paused process is alive)."""

    def logs(self, node: str) -> str:
        """Everything the node's process wrote to stdout and stderr so far."""

    def teardown(self) -> None:
        """Stop every node and remove everything this host created (idempotent)."""


@runtime_checkable
class Cluster(Protocol):
    """The system-under-test adapter: one controller and N brokers reachable over the Kafka protocol."""

    def setup(self, spec: dict[str, Any]) -> None:
        """Start every node and wait until all brokers are registered and unfenced."""

    def teardown(self) -> None:
        """Stop every node and release everything (idempotent, safe after a partial setup)."""

    def bootstrap_servers(self) -> list[str]:
        """``host:port`` of every broker, as clients should use them."""

    def brokers(self) -> list[str]:
        """Node names of the brokers."""

    def start_node(self, node: str) -> None:
        """Start a stopped node."""

    def kill_node(self, node: str) -> int | None:
        """kill -9 the node; return the pid that was killed (None if it was not running)."""

    def restart_node(self, node: str) -> int:
        """Start a killed or stopped node again; return its new pid."""

    def create_topic(self, topic: str, partitions: int, replication_factor: int) -> None:
        """Create a topic through the Kafka admin API and wait until every partition has a leader."""

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader broker id, from Metadata."""

    def active_controller(self) -> str:
        """Node name of the active controller."""

    def collect_logs(self, dest_dir: str) -> None:
        """Copy each node's logs and a listing of its data directory to ``dest_dir/<node>/``."""

    def collect_traces(self) -> list[dict]:
        """All trace events the nodes emitted so far (DESIGN.md section 2), times in monotonic ns."""


@runtime_checkable
class Client(Protocol):
    """A workload client; one per logical process."""

    def open(self, run: Any, node: str) -> None:
        """Connect to the cluster (``node`` is the preferred bootstrap node)."""

    def invoke(self, run: Any, op: dict) -> dict:
        """Execute the invocation ``op`` and return its completion (type ok / fail / info)."""

    def close(self) -> None:
        """Release connections (must not raise)."""
